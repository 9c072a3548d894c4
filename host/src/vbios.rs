//! Reading the VBIOS: through BAR0's PROM window (the VFIO path, the simulator, any
//! [`Bar0`]), from sysfs's `rom` attribute, or from a file; parsed by
//! [`nvbare_gsp::vbios`].
//!
//! The PROM window: `NV_PROM_DATA(i)` is BAR0 0x300000 + i, 1 MiB (OpenRM
//! `published/turing/tu102/dev_ext_devices.h`, read with 32-bit reads in
//! `kgspExtractVbiosFromRom_TU102`; nova-core `vbios.rs` `ROM_OFFSET`, `BIOS_MAX_SCAN_LEN`).
//! Only as much is read as the image chain spans.

use std::io;
use std::path::Path;

use nvbare_core::hal::{Bar0, PciAddress};
use nvbare_gsp::vbios::{self, VbiosError};

use crate::pci::Sysfs;

/// BAR0 offset of the PROM window (`NV_PROM_DATA`).
pub const PROM_BASE: u32 = 0x30_0000;
/// Bytes of the PROM window.
pub const PROM_SIZE: usize = vbios::MAX_SIZE;
/// The first read, and the step reads grow by.
const CHUNK: usize = 0x1000;

/// Reads the ROM through BAR0's PROM window: the first 4 KiB, then on as far as the image
/// chain says, at most [`PROM_SIZE`]. The bytes end where the chain does.
pub fn read_prom<B: Bar0 + ?Sized>(bar0: &B) -> Result<Vec<u8>, VbiosError> {
    let mut buf: Vec<u8> = Vec::new();
    let mut want = CHUNK;
    // Bounded: `want` grows by at least CHUNK each pass and stops at PROM_SIZE.
    loop {
        while buf.len() < want {
            // CAST: buf.len() < PROM_SIZE (1 MiB): fits u32.
            let w = bar0.read32(PROM_BASE + buf.len() as u32);
            buf.extend_from_slice(&w.to_le_bytes());
        }
        let next = match vbios::rom_extent(&buf) {
            Ok(end) => {
                buf.truncate(end);
                return Ok(buf);
            }
            Err(VbiosError::Truncated { offset, need, .. }) => offset.saturating_add(need),
            // No PC-AT image yet (or no image at all): it may start further in.
            Err(
                VbiosError::NoRom { .. }
                | VbiosError::NoPcAtImage { .. }
                | VbiosError::Zeroed { .. },
            ) => want * 2,
            Err(e) => return Err(e),
        };
        if want >= PROM_SIZE {
            return vbios::rom_extent(&buf).map(|_| buf);
        }
        want = next
            .max(want + CHUNK)
            .next_multiple_of(CHUNK)
            .min(PROM_SIZE);
    }
}

/// Reads the ROM through sysfs: writes 1 to the device's `rom` attribute (which enables
/// the expansion ROM BAR), reads it, writes 0 again. Needs root.
pub fn read_sysfs_rom(sysfs: &Sysfs, addr: PciAddress) -> io::Result<Vec<u8>> {
    let rom = sysfs.device_dir(addr).join("rom");
    std::fs::write(&rom, "1")?;
    let data = std::fs::read(&rom);
    let off = std::fs::write(&rom, "0");
    let data = data?;
    off?;
    Ok(data)
}

/// Reads a VBIOS file (a dump from `nvbare vbios`, nvflash, GPU-Z, sysfs).
pub fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    std::fs::read(path)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use nvbare_gsp::vbios::build::{self, Spec};

    use super::*;

    /// A BAR0 with `rom` in its PROM window (0xffffffff past it, as an absent ROM reads),
    /// counting reads.
    struct Prom {
        rom: Vec<u8>,
        reads: Cell<usize>,
    }

    impl Bar0 for Prom {
        fn read32(&self, offset: u32) -> u32 {
            self.reads.set(self.reads.get() + 1);
            let i = (offset - PROM_BASE) as usize;
            let mut w = [0xFF; 4];
            for (k, b) in w.iter_mut().enumerate() {
                if let Some(v) = self.rom.get(i + k) {
                    *b = *v;
                }
            }
            u32::from_le_bytes(w)
        }
        fn write32(&self, _: u32, _: u32) {}
    }

    #[test]
    fn reads_as_far_as_the_chain_goes() {
        let b = build::build(&Spec::default());
        let mut rom = b.bytes.clone();
        rom.resize(0x40000, 0xEE);
        let prom = Prom {
            rom,
            reads: Cell::new(0),
        };
        let got = read_prom(&prom).unwrap();
        assert_eq!(got, b.bytes);
        assert!(prom.reads.get() * 4 <= b.bytes.len().next_multiple_of(CHUNK) + CHUNK);
        vbios::parse(&got).unwrap();
    }

    #[test]
    fn a_rom_after_an_ifr_section_is_found() {
        let b = build::build(&Spec {
            prefix: 0x3000,
            ..Spec::default()
        });
        let prom = Prom {
            rom: b.bytes.clone(),
            reads: Cell::new(0),
        };
        assert_eq!(read_prom(&prom).unwrap(), b.bytes);
    }

    #[test]
    fn an_absent_rom_is_an_error_after_one_window() {
        let prom = Prom {
            rom: Vec::new(),
            reads: Cell::new(0),
        };
        assert_eq!(
            read_prom(&prom),
            Err(VbiosError::NoRom { scanned: PROM_SIZE })
        );
        assert_eq!(prom.reads.get(), PROM_SIZE / 4);
    }
}
