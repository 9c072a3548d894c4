//! The board: one NVIDIA GPU at addresses the loader (or the hypervisor) fixed, identity
//! mapped, and a region of physical memory set aside for DMA. This is everything nvbare
//! needs of the machine: its `Platform`.
//!
//! | what | where |
//! |---|---|
//! | BAR0 (registers) | [`BAR0`], 16 MiB, uncached |
//! | BAR1 (VRAM aperture) | [`BAR1`], [`BAR1_SIZE`], write-combined or uncached |
//! | BAR3 | [`BAR3`] (only its address is reported to GSP-RM) |
//! | PCI config | ECAM at [`ECAM`], the GPU at [`PCI`] |
//! | DMA memory | [`DMA_BASE`], [`DMA_SIZE`]: bus address = physical = virtual (no IOMMU) |

use alloc::vec::Vec;

use nvbare_core::hal::{Bar0, BarInfo, DMA_PAGE, DmaMemory, PciAddress, Platform, PlatformError};
use nvbare_core::shared::SharedMem;

use super::clock::Tsc;

/// BAR0's address.
pub const BAR0: u64 = 0xf000_0000;
/// BAR0's size.
pub const BAR0_SIZE: u64 = 16 << 20;
/// BAR1's address.
pub const BAR1: u64 = 0x40_0000_0000;
/// BAR1's size (as large as VRAM with resizable BAR).
pub const BAR1_SIZE: u64 = 32 << 30;
/// BAR3's address.
pub const BAR3: u64 = 0xf200_0000;
/// BAR3's size.
pub const BAR3_SIZE: u64 = 32 << 20;
/// The PCI Express enhanced configuration space (ECAM) of segment 0.
pub const ECAM: u64 = 0xe000_0000;
/// The GPU's PCI address.
pub const PCI: PciAddress = PciAddress {
    domain: 0,
    bus: 0x41,
    device: 0,
    function: 0,
};
/// Physical memory for DMA.
pub const DMA_BASE: u64 = 0x1_0000_0000;
/// Its size: GSP-RM's boot takes ~100 MiB, the program's buffers a few MiB.
pub const DMA_SIZE: u64 = 1 << 30;

/// PCI config registers (PCI Local Bus 6.1, PCI Express 7.5.3).
const PCI_CAP_PTR: u16 = 0x34;
const PCI_CAP_ID_EXP: u32 = 0x10;
const PCI_EXP_DEVCTL: u16 = 0x08;
const PCI_EXP_DEVCTL_BCR_FLR: u32 = 1 << 15;

/// The GPU and the machine around it.
pub struct Board {
    clock: Tsc,
    /// Free DMA ranges (start, length), sorted, merged.
    free: Vec<(u64, u64)>,
}

impl Board {
    /// The board as the loader left it.
    pub fn new() -> Self {
        Self {
            clock: Tsc::new(),
            free: alloc::vec![(DMA_BASE, DMA_SIZE)],
        }
    }

    /// The ECAM address of config register `offset` of the GPU.
    fn config_addr(&self, offset: u16, size: u8) -> Result<u64, PlatformError> {
        if offset >= 4096 || !matches!(size, 1 | 2 | 4) || !offset.is_multiple_of(u16::from(size)) {
            return Err(PlatformError::Unsupported("an unaligned config access"));
        }
        let bdf =
            u64::from(PCI.bus) << 20 | u64::from(PCI.device) << 15 | u64::from(PCI.function) << 12;
        Ok(ECAM + bdf + u64::from(offset))
    }
}

impl Bar0 for Board {
    fn read32(&self, offset: u32) -> u32 {
        if u64::from(offset) + 4 > BAR0_SIZE || !offset.is_multiple_of(4) {
            return u32::MAX;
        }
        // SAFETY: BAR0 is mapped uncached at BAR0 for its whole size (the board's contract)
        // and the offset is inside it and aligned; MMIO needs a volatile access.
        unsafe { ((BAR0 + u64::from(offset)) as *const u32).read_volatile() }
    }

    fn write32(&self, offset: u32, value: u32) {
        if u64::from(offset) + 4 > BAR0_SIZE || !offset.is_multiple_of(4) {
            return;
        }
        // SAFETY: as in `read32`.
        unsafe { ((BAR0 + u64::from(offset)) as *mut u32).write_volatile(value) }
    }
}

impl Platform for Board {
    type Clock = Tsc;

    fn clock(&self) -> &Tsc {
        &self.clock
    }

    fn pci_address(&self) -> PciAddress {
        PCI
    }

    fn bar_info(&self, index: u32) -> Option<BarInfo> {
        let (bus_addr, size) = match index {
            0 => (BAR0, BAR0_SIZE),
            1 => (BAR1, BAR1_SIZE),
            3 => (BAR3, BAR3_SIZE),
            _ => return None,
        };
        Some(BarInfo { bus_addr, size })
    }

    fn bar1(&self) -> Option<SharedMem> {
        // SAFETY: BAR1 is mapped at BAR1 for BAR1_SIZE bytes for as long as the program
        // runs, and nothing else reaches it through references.
        Some(unsafe { SharedMem::from_raw(BAR1 as *mut u8, BAR1_SIZE as usize, BAR1) })
    }

    fn dma_alloc(&mut self, bytes: usize, _contiguous: bool) -> Result<DmaMemory, PlatformError> {
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
                remedy: "give the board a larger DMA region (DMA_SIZE)",
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
        // SAFETY: the range is inside the DMA region, identity mapped, and handed out once
        // until `dma_free` takes it back.
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
        let a = self.config_addr(offset, size)?;
        // SAFETY: ECAM is mapped uncached; the address is the GPU's config space, aligned
        // to the access size (checked).
        Ok(unsafe {
            match size {
                1 => u32::from((a as *const u8).read_volatile()),
                2 => u32::from((a as *const u16).read_volatile()),
                _ => (a as *const u32).read_volatile(),
            }
        })
    }

    fn config_write(&self, offset: u16, size: u8, value: u32) -> Result<(), PlatformError> {
        let a = self.config_addr(offset, size)?;
        // SAFETY: as in `config_read`.
        unsafe {
            match size {
                // CAST: the access size drops the high bits, as the hardware does.
                1 => (a as *mut u8).write_volatile(value as u8),
                2 => (a as *mut u16).write_volatile(value as u16),
                _ => (a as *mut u32).write_volatile(value),
            }
        }
        Ok(())
    }

    /// A function-level reset through the PCI Express capability (Initiate FLR), then the
    /// 100 ms the specification gives the function to come back.
    fn reset(&mut self) -> Result<(), PlatformError> {
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
