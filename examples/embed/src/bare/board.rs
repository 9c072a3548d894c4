//! The board: one NVIDIA GPU found on the PCI bus, identity mapped, and a region of RAM set
//! aside for DMA. This is everything nvbare needs of the machine: its `Platform`.
//!
//! | what | where |
//! |---|---|
//! | BAR0 (registers), BAR1 (VRAM aperture), BAR3 | as the firmware assigned them ([`Bars`]), mapped uncached ([`super::paging`]) |
//! | PCI config | ECAM from ACPI's MCFG ([`Ecam`]) |
//! | DMA memory | the region [`super::memory::layout`] chose: bus address = physical = virtual (no IOMMU: the GPU's DMA reaches guest RAM directly) |

use alloc::vec::Vec;

use nvbare_core::hal::{Bar0, BarInfo, DMA_PAGE, DmaMemory, PciAddress, Platform, PlatformError};
use nvbare_core::shared::SharedMem;

use super::clock::Tsc;
use super::pci::{self, Ecam, Function};

/// PCI config registers (PCI Local Bus 6.1, PCI Express 7.5.3).
const PCI_CAP_PTR: u16 = 0x34;
const PCI_CAP_ID_EXP: u32 = 0x10;
const PCI_EXP_DEVCTL: u16 = 0x08;
const PCI_EXP_DEVCTL_BCR_FLR: u32 = 1 << 15;
/// The BAR registers (0x10..0x28) an FLR may clear and the reset puts back.
const BAR_REGS: core::ops::Range<u16> = 0x10..0x28;

/// The GPU's BARs: (address, size).
#[derive(Clone, Copy, Debug)]
pub struct Bars {
    /// BAR0, the registers.
    pub bar0: (u64, u64),
    /// BAR1, the VRAM aperture.
    pub bar1: (u64, u64),
    /// BAR3 (only its address is reported to GSP-RM).
    pub bar3: Option<(u64, u64)>,
}

/// The GPU and the machine around it.
pub struct Board {
    clock: Tsc,
    ecam: Ecam,
    gpu: Function,
    bars: Bars,
    /// Free DMA ranges (start, length), sorted, merged.
    free: Vec<(u64, u64)>,
}

impl Board {
    /// The GPU at `gpu` with its `bars` mapped, and `dma` (start, length) of RAM for DMA.
    pub fn new(clock: Tsc, ecam: Ecam, gpu: Function, bars: Bars, dma: (u64, u64)) -> Self {
        Self {
            clock,
            ecam,
            gpu,
            bars,
            free: alloc::vec![dma],
        }
    }

    /// Bytes of DMA memory free now.
    pub fn dma_free_bytes(&self) -> u64 {
        self.free.iter().map(|r| r.1).sum()
    }

    fn bar0_addr(&self, offset: u32) -> Option<u64> {
        let (base, size) = self.bars.bar0;
        (u64::from(offset) + 4 <= size && offset.is_multiple_of(4))
            .then(|| base + u64::from(offset))
    }
}

impl Bar0 for Board {
    fn read32(&self, offset: u32) -> u32 {
        let Some(a) = self.bar0_addr(offset) else {
            return u32::MAX;
        };
        // SAFETY: BAR0 is mapped uncached for its whole size (`paging::map_bars`), the
        // address is inside it and aligned; MMIO needs a volatile access.
        unsafe { (a as *const u32).read_volatile() }
    }

    fn write32(&self, offset: u32, value: u32) {
        let Some(a) = self.bar0_addr(offset) else {
            return;
        };
        // SAFETY: as in `read32`.
        unsafe { (a as *mut u32).write_volatile(value) }
    }
}

impl Platform for Board {
    type Clock = Tsc;

    fn clock(&self) -> &Tsc {
        &self.clock
    }

    fn pci_address(&self) -> PciAddress {
        PciAddress {
            domain: 0,
            bus: self.gpu.bus,
            device: self.gpu.device,
            function: self.gpu.function,
        }
    }

    fn bar_info(&self, index: u32) -> Option<BarInfo> {
        let (bus_addr, size) = match index {
            0 => self.bars.bar0,
            1 => self.bars.bar1,
            3 => self.bars.bar3?,
            _ => return None,
        };
        Some(BarInfo { bus_addr, size })
    }

    fn bar1(&self) -> Option<SharedMem> {
        let (base, size) = self.bars.bar1;
        // SAFETY: BAR1 is mapped for its whole size for as long as the program runs
        // (`paging::map_bars`), and nothing else reaches it through references.
        // CAST: identity mapped: the address is the pointer; a BAR size fits usize on x86_64.
        Some(unsafe { SharedMem::from_raw(base as *mut u8, size as usize, base) })
    }

    fn dma_alloc(&mut self, bytes: usize, _contiguous: bool) -> Result<DmaMemory, PlatformError> {
        // CAST: usize and u64 are both 64 bits here.
        let len = (bytes as u64).next_multiple_of(DMA_PAGE as u64);
        let align: u64 = if len >= 2 << 20 {
            2 << 20
        } else {
            DMA_PAGE as u64
        };
        // First fit; every allocation is contiguous.
        let found = self.free.iter().enumerate().find_map(|(i, &(s, l))| {
            let at = s.next_multiple_of(align);
            (at + len <= s + l).then_some((i, at))
        });
        let Some((i, at)) = found else {
            return Err(PlatformError::OutOfDmaMemory {
                bytes,
                remedy: "give the machine more RAM (QEMU: -m)",
            });
        };
        let (s, l) = self.free[i];
        self.free.remove(i);
        if at + len < s + l {
            self.free.insert(i, (at + len, s + l - at - len));
        }
        if at > s {
            self.free.insert(i, (s, at - s));
        }
        // SAFETY: the range is inside the DMA region, identity mapped RAM, and handed out
        // once until `dma_free` takes it back.
        // CAST: identity mapped; `len` came from a usize.
        let cpu = unsafe { SharedMem::from_raw(at as *mut u8, len as usize, at) };
        cpu.fill(0, len as usize, 0)
            .map_err(|_| PlatformError::Unsupported("zeroing DMA memory"))?;
        let pages = len / DMA_PAGE as u64;
        Ok(DmaMemory {
            cpu,
            bus_pages: (0..pages).map(|p| at + p * DMA_PAGE as u64).collect(),
            id: at,
        })
    }

    unsafe fn dma_free(&mut self, mem: DmaMemory) {
        // CAST: usize and u64 are both 64 bits here.
        let (start, len) = (mem.id, mem.len() as u64);
        let i = self.free.partition_point(|&(s, _)| s < start);
        self.free.insert(i, (start, len));
        // Merge with the neighbours.
        if i + 1 < self.free.len() && self.free[i].0 + self.free[i].1 == self.free[i + 1].0 {
            self.free[i].1 += self.free[i + 1].1;
            self.free.remove(i + 1);
        }
        if i > 0 && self.free[i - 1].0 + self.free[i - 1].1 == self.free[i].0 {
            self.free[i - 1].1 += self.free[i].1;
            self.free.remove(i);
        }
    }

    fn config_read(&self, offset: u16, size: u8) -> Result<u32, PlatformError> {
        self.ecam
            .read(self.gpu, offset, size)
            .ok_or(PlatformError::Unsupported(
                "a config access outside 4 KiB or unaligned",
            ))
    }

    fn config_write(&self, offset: u16, size: u8, value: u32) -> Result<(), PlatformError> {
        self.ecam
            .write(self.gpu, offset, size, value)
            .ok_or(PlatformError::Unsupported(
                "a config access outside 4 KiB or unaligned",
            ))
    }

    /// A function-level reset through the PCI Express capability (Initiate FLR), the 100 ms
    /// the specification gives the function to come back, then the BARs put back (as Linux's
    /// `pci_reset_function` restores them) with bus mastering left off: the boot turns it on
    /// when it is ready for the GPU's DMA.
    fn reset(&mut self) -> Result<(), PlatformError> {
        let mut saved = [0u32; 6];
        for (v, reg) in saved.iter_mut().zip(BAR_REGS.step_by(4)) {
            *v = self.config_read(reg, 4)?;
        }
        let cmd = self.config_read(pci::COMMAND, 2)?;
        // CAST: a 1-byte config read.
        let mut cap = self.config_read(PCI_CAP_PTR, 1)? as u16;
        for _ in 0..48 {
            if cap < 0x40 {
                break;
            }
            let header = self.config_read(cap, 2)?;
            if header & 0xff == PCI_CAP_ID_EXP {
                let ctl = cap + PCI_EXP_DEVCTL;
                let v = self.config_read(ctl, 2)?;
                self.config_write(ctl, 2, v | PCI_EXP_DEVCTL_BCR_FLR)?;
                // TIMEOUT: PCIe 6.6.2: a function must complete an FLR within 100 ms.
                nvbare_core::hal::Clock::delay_ns(&self.clock, 100_000_000);
                for (v, reg) in saved.iter().zip(BAR_REGS.step_by(4)) {
                    self.config_write(reg, 4, *v)?;
                }
                self.config_write(pci::COMMAND, 2, cmd & !pci::COMMAND_MASTER)?;
                return Ok(());
            }
            // CAST: the next-capability pointer is config bits 15:8.
            cap = (header >> 8) as u16 & 0xfc;
        }
        Err(PlatformError::Unsupported(
            "a reset (no PCI Express capability)",
        ))
    }
}
