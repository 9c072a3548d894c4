//! [`SimPlatform`]: the simulated GPU as an in-process `nvbare_core::hal::Platform`, the way
//! nvbare's VFIO path would see a real one: BAR0 through the device's register decode, BAR1 as
//! a CPU window onto its VRAM, DMA memory from its host memory at bus addresses it chose, PCI
//! config space and reset.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use nvbare_core::hal::{
    Bar0, BarInfo, Clock, DMA_PAGE, DmaMemory, PciAddress, Platform, PlatformError,
};
use nvbare_core::shared::SharedMem;

use crate::device::SimGpu;

/// `std::time::Instant` as a clock.
#[derive(Clone, Copy, Debug)]
pub struct SimClock(Instant);

impl Default for SimClock {
    fn default() -> Self {
        Self(Instant::now())
    }
}

impl Clock for SimClock {
    fn now_ns(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
    fn delay_ns(&self, ns: u64) {
        // Waits of more than 50 µs sleep (the simulator's thread needs the core); shorter ones
        // spin, as polling a real device does.
        if ns >= 50_000 {
            std::thread::sleep(std::time::Duration::from_nanos(ns));
        } else {
            let end = self.now_ns() + ns;
            while self.now_ns() < end {
                std::hint::spin_loop();
            }
        }
    }
}

/// A simulated GPU driven in this process.
#[derive(Debug)]
pub struct SimPlatform {
    gpu: Arc<SimGpu>,
    clock: SimClock,
    /// DMA allocations made through this platform, by id.
    dma: HashMap<u64, usize>,
}

impl SimPlatform {
    /// The platform over `gpu`.
    pub fn new(gpu: Arc<SimGpu>) -> SimPlatform {
        SimPlatform {
            gpu,
            clock: SimClock::default(),
            dma: HashMap::new(),
        }
    }

    /// The simulated GPU.
    pub fn gpu(&self) -> &Arc<SimGpu> {
        &self.gpu
    }

    /// DMA allocations still mapped through this platform (for leak checks).
    pub fn dma_outstanding(&self) -> usize {
        self.dma.len()
    }
}

impl Bar0 for SimPlatform {
    fn read32(&self, offset: u32) -> u32 {
        self.gpu.bar0_read(offset)
    }
    fn write32(&self, offset: u32, value: u32) {
        self.gpu.bar0_write(offset, value)
    }
}

impl Platform for SimPlatform {
    type Clock = SimClock;

    fn clock(&self) -> &SimClock {
        &self.clock
    }

    fn pci_address(&self) -> PciAddress {
        PciAddress {
            domain: 0,
            bus: 0x41,
            device: 0,
            function: 0,
        }
    }

    fn bar_info(&self, index: u32) -> Option<BarInfo> {
        self.gpu
            .bar(index)
            .map(|(bus_addr, size)| BarInfo { bus_addr, size })
    }

    fn bar1(&self) -> Option<SharedMem> {
        let vram = &self.gpu.bus().vram;
        let (bus, _) = self.gpu.bar(1)?;
        // CAST: VRAM sizes fit usize on the 64-bit hosts the simulator runs on.
        let len = vram.size() as usize;
        // SAFETY: the VRAM mapping lives as long as the SimGpu, which this platform (and so
        // every SharedMem it hands out, by the Platform contract) does not outlive; the
        // mapping is only ever accessed with volatile copies.
        Some(unsafe { SharedMem::from_raw(vram.as_ptr(), len, bus) })
    }

    fn dma_alloc(&mut self, bytes: usize, contiguous: bool) -> Result<DmaMemory, PlatformError> {
        if self.gpu.is_gone() {
            return Err(PlatformError::DeviceGone);
        }
        if bytes == 0 || !bytes.is_multiple_of(DMA_PAGE) {
            return Err(PlatformError::Unsupported(
                "DMA allocations that are not a non-zero multiple of 4 KiB",
            ));
        }
        let sysmem = &self.gpu.bus().sysmem;
        // Scattered pages unless one range is asked for, as an IOMMU may hand them out: code
        // that assumes contiguity it did not ask for breaks here, not on a real machine.
        let a = if contiguous {
            sysmem.alloc(bytes)
        } else {
            sysmem.alloc_scattered(bytes)
        }
        .map_err(|e| PlatformError::Failed {
            step: "simulated DMA allocation",
            source: Box::new(e),
        })?;
        self.dma.insert(a.id, a.len);
        Ok(DmaMemory {
            // SAFETY: the allocation stays mapped until `dma_free` gives this id back, and is
            // only accessed with volatile copies by the device.
            cpu: unsafe { SharedMem::from_raw(a.ptr, a.len, a.bus) },
            bus_pages: a.pages,
            id: a.id,
        })
    }

    unsafe fn dma_free(&mut self, mem: DmaMemory) {
        if self.dma.remove(&mem.id).is_some() {
            self.gpu.bus().sysmem.free(mem.id);
        }
    }

    fn config_read(&self, offset: u16, size: u8) -> Result<u32, PlatformError> {
        if self.gpu.is_gone() {
            return Err(PlatformError::DeviceGone);
        }
        Ok(self.gpu.config_read(offset.into(), size.into()))
    }

    fn config_write(&self, offset: u16, size: u8, value: u32) -> Result<(), PlatformError> {
        if self.gpu.config_write(offset.into(), size.into(), value) {
            Ok(())
        } else if self.gpu.is_gone() {
            Err(PlatformError::DeviceGone)
        } else {
            Err(PlatformError::Unsupported("a malformed config-space write"))
        }
    }

    fn reset(&mut self) -> Result<(), PlatformError> {
        if self.gpu.is_gone() {
            return Err(PlatformError::DeviceGone);
        }
        self.gpu.reset();
        Ok(())
    }
}

impl Drop for SimPlatform {
    fn drop(&mut self) {
        for id in self.dma.keys() {
            self.gpu.bus().sysmem.free(*id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip::SimChip;
    use crate::faults::FaultPlan;
    use crate::units::identity;

    #[test]
    fn dma_memory_is_scattered_unless_contiguous_is_asked_and_whole_pages_only() {
        let gpu = Arc::new(SimGpu::new(SimChip::Gh100).unwrap());
        let mut p = SimPlatform::new(gpu);
        let s = p.dma_alloc(4 * DMA_PAGE, false).unwrap();
        assert_eq!(s.bus_pages.len(), 4);
        assert!(!s.is_contiguous(), "{:x?}", s.bus_pages);
        let c = p.dma_alloc(4 * DMA_PAGE, true).unwrap();
        assert!(c.is_contiguous());
        assert!(matches!(
            p.dma_alloc(100, false),
            Err(PlatformError::Unsupported(_))
        ));
        assert!(matches!(
            p.dma_alloc(0, true),
            Err(PlatformError::Unsupported(_))
        ));
        // SAFETY: no view of either is used after this and no device uses them.
        unsafe {
            p.dma_free(s);
            p.dma_free(c);
        }
        assert_eq!(p.dma_outstanding(), 0);
    }

    #[test]
    fn identity_wpr2_reset_and_unplug() {
        let faults = FaultPlan {
            wpr2_left_up: true,
            reboot_ns: Some(20_000_000),
            ..Default::default()
        };
        let gpu = Arc::new(SimGpu::with_faults(SimChip::Gh100, faults).unwrap());
        let mut p = SimPlatform::new(gpu.clone());
        assert_eq!(p.read32(identity::PMC_BOOT_42) >> 24 & 0x3f, 0x18);
        assert_eq!(p.read32(identity::USABLE_FB_SIZE_IN_MB), 143_771);
        assert_ne!(p.read32(identity::WPR2_ADDR_HI), 0, "left up by a crash");
        p.reset().unwrap();
        // While the FSP reboots BAR0 reads all ones, yet the device is there: presence is
        // config space's word.
        assert_eq!(p.read32(identity::WPR2_ADDR_HI), u32::MAX, "rebooting");
        assert!(p.is_present());
        while gpu.rebooting() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(p.read32(identity::WPR2_ADDR_HI), 0, "reset lowers it");
        let t0 = p.read32(identity::PTIMER_TIME_0);
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert_ne!(p.read32(identity::PTIMER_TIME_0), t0, "the timer runs");

        // PRAMIN and BAR1 see the same VRAM.
        p.write32(identity::XAL_EP_BAR0_WINDOW, 0x10); // VRAM 0x100000
        p.write32(identity::PRAMIN + 8, 0x1234_5678);
        let bar1 = p.bar1().unwrap();
        assert_eq!(bar1.read_u32(0x10_0008), Ok(0x1234_5678));

        let d = p.dma_alloc(8192, true).unwrap();
        assert!(d.is_contiguous());
        d.cpu.write_u32(4, 7).unwrap();
        let mut b = [0; 4];
        gpu.bus().sysmem.read(d.bus_pages[0] + 4, &mut b).unwrap();
        assert_eq!(
            u32::from_le_bytes(b),
            7,
            "the device sees what the CPU wrote"
        );
        // SAFETY: no view of `d` is used after this; the simulated GPU was told nothing.
        unsafe { p.dma_free(d) };
        assert_eq!(gpu.bus().sysmem.mapped().1, 0);

        gpu.unplug();
        assert_eq!(p.read32(identity::PMC_BOOT_0), u32::MAX);
        assert!(!p.is_present());
        assert!(matches!(
            p.dma_alloc(4096, false),
            Err(PlatformError::DeviceGone)
        ));
    }
}
