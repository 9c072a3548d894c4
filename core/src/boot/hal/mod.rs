//! What differs by chip on the FSP boot path, nova-core's way: one small trait per block
//! that differs ([`FspHal`]: the FSP boot-status register and the chain-of-trust payload;
//! [`FbHal`]: the WPR2 sizes requested from GSP-FMC and where FRTS goes; [`FirmwareHal`]:
//! which signature the GSP-RM image carries for the chip and which files are the chip's),
//! one file per chip family ([`gh100`], [`gb100`], [`gb202`]; GB10x calls GH100's functions
//! where it behaves the same), and one `match chip.arch()` ([`for_chip`]).

pub mod gb100;
pub mod gb202;
pub mod gh100;

use nvbare_gsp::boot::wpr_meta::FmcWprSizes;
use nvbare_gsp::firmware::{FmcSignatureScheme, GspSignatureTarget};
use nvbare_gsp::fsp::CotParams;

use crate::chip::{Arch, Chip};

/// The FSP block: how to tell the FSP finished its own boot, and what the COT payload says.
pub trait FspHal: Sync {
    /// BAR0 address of `NV_THERM_I2CS_SCRATCH`, which reads 0xff once the FSP booted.
    fn boot_status_register(&self) -> u32;
    /// How long the FSP may take to report its boot complete after a reset, in ns.
    fn boot_timeout_ns(&self) -> u64;
    /// The COT payload's numbers for a boot with GSP-FMC at `fmc_addr` and
    /// `GSP_FMC_BOOT_PARAMS` at `boot_args_addr` (bus addresses).
    fn cot_params(&self, fmc_addr: u64, boot_args_addr: u64) -> CotParams;
}

/// The framebuffer block: the sizes the WPR metadata asks GSP-FMC to reserve, and the
/// FRTS region FSP carves out.
pub trait FbHal: Sync {
    /// `GspFwWprMeta`'s size fields for a GPU with `fb_size` bytes of usable VRAM
    /// (`kgspCalculateFbLayout_GH100`).
    fn wpr_sizes(&self, fb_size: u64) -> FmcWprSizes;
    /// Distance of FRTS from the end of FB (`frtsVidmemOffset` of the COT payload).
    fn frts_offset_from_end(&self) -> u64;
}

/// The firmware block: which files are this chip's.
pub trait FirmwareHal: Sync {
    /// The signature section of `gsp-570.144.bin` the chip's boot ROM checks.
    fn signature_target(&self) -> GspSignatureTarget;
    /// The signature scheme FSP checks the FMC with (fixes the COT key and signature sizes).
    fn fmc_scheme(&self) -> FmcSignatureScheme;
    /// SHA-256 of the chip's `bootloader-570.144.bin` and `fmc-570.144.bin` as NVIDIA ships
    /// them (`shared/firmware/570.144.sha256`).
    fn pinned_digests(&self) -> PinnedDigests;
}

/// SHA-256 digests of the 570.144 files of one chip family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinnedDigests {
    /// `bootloader-570.144.bin`.
    pub bootloader: [u8; 32],
    /// `fmc-570.144.bin`.
    pub fmc: [u8; 32],
}

/// The blocks of one chip.
#[derive(Clone, Copy)]
pub struct ChipHal {
    /// The chip.
    pub chip: Chip,
    /// FSP.
    pub fsp: &'static dyn FspHal,
    /// Framebuffer layout.
    pub fb: &'static dyn FbHal,
    /// Firmware files.
    pub firmware: &'static dyn FirmwareHal,
}

impl core::fmt::Debug for ChipHal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ChipHal({})", self.chip)
    }
}

/// The boot HAL of `chip`, or `None` for a chip whose boot path nvbare does not implement
/// (Turing, Ampere and Ada boot through the SEC2 booter).
pub fn for_chip(chip: Chip) -> Option<ChipHal> {
    let (fsp, fb, firmware): (
        &'static dyn FspHal,
        &'static dyn FbHal,
        &'static dyn FirmwareHal,
    ) = match chip.arch() {
        Arch::Hopper => (&gh100::Gh100, &gh100::Gh100, &gh100::Gh100),
        Arch::BlackwellGb10x => (&gb100::Gb10x, &gb100::Gb10x, &gb100::Gb10x),
        Arch::BlackwellGb20x => (&gb202::Gb20x, &gb202::Gb20x, &gb202::Gb20x),
        Arch::Turing | Arch::Ampere | Arch::Ada => return None,
    };
    Some(ChipHal {
        chip,
        fsp,
        fb,
        firmware,
    })
}

/// The FSP block of an architecture, before the exact chip is known (the readiness waits
/// that come before `NV_PMC_BOOT_42` may be read); `None` for the booter architectures.
pub fn for_arch(arch: Arch) -> Option<&'static dyn FspHal> {
    match arch {
        Arch::Hopper => Some(&gh100::Gh100),
        Arch::BlackwellGb10x => Some(&gb100::Gb10x),
        Arch::BlackwellGb20x => Some(&gb202::Gb20x),
        Arch::Turing | Arch::Ampere | Arch::Ada => None,
    }
}

/// Parses a 64-digit hex string at compile time (for the pinned digests).
pub(crate) const fn sha256_hex(s: &str) -> [u8; 32] {
    const fn nibble(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            // PANIC: only reached at compile time, for a malformed literal in this crate.
            _ => panic!("not a lower-case hex digit"),
        }
    }
    let b = s.as_bytes();
    assert!(b.len() == 64, "a SHA-256 is 64 hex digits");
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = nibble(b[2 * i]) << 4 | nibble(b[2 * i + 1]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hal_per_fsp_chip_and_none_for_booter_chips() {
        for chip in Chip::ALL {
            let hal = for_chip(*chip);
            match chip.arch() {
                Arch::Turing | Arch::Ampere | Arch::Ada => assert!(hal.is_none(), "{chip}"),
                _ => assert_eq!(hal.map(|h| h.chip), Some(*chip)),
            }
        }
    }

    #[test]
    fn chips_differ_where_the_notes_say() {
        let gh = for_chip(Chip::GH100).unwrap();
        let gb = for_chip(Chip::GB202).unwrap();
        let gb1 = for_chip(Chip::GB100).unwrap();
        assert_eq!(gh.fsp.boot_status_register(), 0x200bc);
        assert_eq!(gb1.fsp.boot_status_register(), 0x200bc);
        assert_eq!(gb.fsp.boot_status_register(), 0xad00bc);
        assert_eq!(gh.fsp.cot_params(1, 2).version, 1);
        assert_eq!(gb.fsp.cot_params(1, 2).version, 2);
        assert_eq!(gh.fb.frts_offset_from_end(), 0x200000);
        assert_eq!(gb.fb.frts_offset_from_end(), 0x1C00000);
        assert_eq!(
            gh.fsp.cot_params(1, 2).frts_vidmem_offset,
            gh.fb.frts_offset_from_end()
        );
        assert_eq!(
            gb.fsp.cot_params(1, 2).frts_vidmem_offset,
            gb.fb.frts_offset_from_end()
        );
        assert_eq!(gh.firmware.fmc_scheme(), FmcSignatureScheme::Rsa3072);
        assert_eq!(gb.firmware.fmc_scheme(), FmcSignatureScheme::EcdsaP384);
        assert_eq!(
            gh.firmware.signature_target().section_name(false),
            ".fwsignature_gh100"
        );
        assert_ne!(gh.firmware.pinned_digests(), gb.firmware.pinned_digests());
    }

    #[test]
    fn gh100_wpr_sizes_are_the_notes_figures() {
        let gh = for_chip(Chip::GH100).unwrap();
        // The H200: 143771 MiB usable -> 141 GiB -> a 146 MiB heap.
        let s = gh.fb.wpr_sizes(143_771 << 20);
        assert_eq!(s.vga_workspace_size, 0x20000);
        assert_eq!(s.pmu_reserved_size, 0);
        assert_eq!(s.non_wpr_heap_size, 0x200000);
        assert_eq!(s.frts_size, 0x100000);
        assert_eq!(s.heap_size, 0x9200000);
    }

    #[test]
    fn hex_digests_parse() {
        let d = sha256_hex("00ff10a0000000000000000000000000000000000000000000000000000000fe");
        assert_eq!((d[0], d[1], d[2], d[3], d[31]), (0, 0xff, 0x10, 0xa0, 0xfe));
    }
}
