//! PCI Express configuration space through ECAM (the MCFG's window), enumeration, and the
//! GPU's BARs as the firmware (SeaBIOS) assigned them.

use super::acpi::Mcfg;

/// `PCI_VENDOR_ID` (PCI Local Bus 3.0 §6.2.1; the device id follows at 0x02).
pub const VENDOR_ID: u16 = 0x00;
/// `PCI_COMMAND`.
pub const COMMAND: u16 = 0x04;
/// `PCI_COMMAND_MEMORY`: memory space decoding.
pub const COMMAND_MEMORY: u32 = 1 << 1;
/// `PCI_COMMAND_MASTER`: bus mastering (the device's DMA).
pub const COMMAND_MASTER: u32 = 1 << 2;
/// `PCI_CLASS_REVISION` (class code in bits 31:8).
const CLASS_REVISION: u16 = 0x08;
/// `PCI_HEADER_TYPE` (bit 7: multi-function).
const HEADER_TYPE: u16 = 0x0e;
/// `PCI_BASE_ADDRESS_0`; six BAR registers follow.
const BAR0: u16 = 0x10;
/// NVIDIA's vendor id.
const NVIDIA: u32 = 0x10de;
/// PCI base class 0x03: display controller (VGA 0x0300, 3D 0x0302).
const CLASS_DISPLAY: u32 = 0x03;

/// A function's address on segment 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Function {
    /// Bus.
    pub bus: u8,
    /// Device (0..32).
    pub device: u8,
    /// Function (0..8).
    pub function: u8,
}

/// The ECAM window of segment 0.
#[derive(Clone, Copy, Debug)]
pub struct Ecam(pub Mcfg);

impl Ecam {
    /// The address of config register `offset` of `f`, if the window decodes it and the
    /// access is aligned (1, 2 or 4 bytes).
    fn addr(&self, f: Function, offset: u16, size: u8) -> Option<u64> {
        let ok = (self.0.first_bus..=self.0.last_bus).contains(&f.bus)
            && f.device < 32
            && f.function < 8
            && offset < 4096
            && matches!(size, 1 | 2 | 4)
            && offset.is_multiple_of(u16::from(size));
        ok.then(|| {
            let bdf = u64::from(f.bus - self.0.first_bus) << 20
                | u64::from(f.device) << 15
                | u64::from(f.function) << 12;
            self.0.base + bdf + u64::from(offset)
        })
    }

    /// Reads `size` bytes of `f`'s config space at `offset` (all ones outside the window, as
    /// an absent function reads).
    pub fn read(&self, f: Function, offset: u16, size: u8) -> Option<u32> {
        let a = self.addr(f, offset, size)?;
        // SAFETY: the ECAM window is identity mapped (inside the first 4 GiB), the address
        // is inside it (checked in `addr`) and aligned to the access; config space is MMIO,
        // read volatile.
        Some(unsafe {
            match size {
                1 => u32::from((a as *const u8).read_volatile()),
                2 => u32::from((a as *const u16).read_volatile()),
                _ => (a as *const u32).read_volatile(),
            }
        })
    }

    /// Writes `size` bytes of `f`'s config space at `offset`; `None` if out of the window.
    pub fn write(&self, f: Function, offset: u16, size: u8, value: u32) -> Option<()> {
        let a = self.addr(f, offset, size)?;
        // SAFETY: as in `read`.
        unsafe {
            match size {
                // CAST: the access size drops the high bits, as the hardware does.
                1 => (a as *mut u8).write_volatile(value as u8),
                2 => (a as *mut u16).write_volatile(value as u16),
                _ => (a as *mut u32).write_volatile(value),
            }
        }
        Some(())
    }

    fn read32(&self, f: Function, offset: u16) -> u32 {
        self.read(f, offset, 4).unwrap_or(u32::MAX)
    }

    /// The first NVIDIA display controller on the segment: the function, its vendor/device
    /// dword and its class code.
    pub fn find_gpu(&self) -> Option<(Function, u32, u32)> {
        for bus in self.0.first_bus..=self.0.last_bus {
            for device in 0..32 {
                for function in 0..8 {
                    let f = Function {
                        bus,
                        device,
                        function,
                    };
                    let id = self.read32(f, VENDOR_ID);
                    if id & 0xffff == 0xffff {
                        if function == 0 {
                            break;
                        }
                        continue;
                    }
                    let class = self.read32(f, CLASS_REVISION) >> 8;
                    if id & 0xffff == NVIDIA && class >> 16 == CLASS_DISPLAY {
                        return Some((f, id, class));
                    }
                    if function == 0 && self.read32(f, HEADER_TYPE & !3) >> 16 & 0x80 == 0 {
                        break;
                    }
                }
            }
        }
        None
    }

    /// BAR `index` (0..6) of `f` as assigned: its address and its size (probed by writing
    /// all ones, with memory decoding off meanwhile), `None` if unimplemented or I/O. A
    /// 64-bit BAR takes two registers; its index is the first one's.
    pub fn bar(&self, f: Function, index: u16) -> Option<(u64, u64)> {
        let reg = BAR0 + 4 * index;
        let low = self.read32(f, reg);
        if low & 1 != 0 {
            return None;
        }
        let wide = low & 0b110 == 0b100;
        let cmd = self.read(f, COMMAND, 2)?;
        self.write(f, COMMAND, 2, cmd & !COMMAND_MEMORY)?;
        let probe = |reg: u16| {
            let v = self.read32(f, reg);
            self.write(f, reg, 4, u32::MAX);
            let mask = self.read32(f, reg);
            self.write(f, reg, 4, v);
            mask
        };
        let mut mask = u64::from(probe(reg) & !0xf);
        let mut addr = u64::from(low & !0xf);
        if wide {
            mask |= u64::from(probe(reg + 4)) << 32;
            addr |= u64::from(self.read32(f, reg + 4)) << 32;
        } else {
            mask |= 0xffff_ffff_0000_0000;
        }
        self.write(f, COMMAND, 2, cmd)?;
        (mask != 0).then(|| (addr, (!mask).wrapping_add(1)))
    }
}
