//! [`Vfio`]: a GPU bound to vfio-pci as a [`Platform`]. Opening it walks these steps: the
//! sysfs checks (the device exists and is bound to vfio-pci, the IOMMU is on unless VFIO's
//! no-IOMMU mode was asked for, as it is unsafe, the group is viable); a lock so two
//! processes never drive one GPU; the device reached through an IOMMU interface
//! (`attach.rs`: iommufd where the kernel offers it, by default with the `iommufd` feature,
//! a type1 container otherwise, or the no-IOMMU container when asked); the BARs mapped as the
//! kernel allows (`region.rs`); the DMA pool over the usable IOVA window (`iova.rs`,
//! `dma.rs`: memory sub-allocated from locked 2 MiB hugepages, each chunk of them mapped in
//! the IOMMU once while the pool holds it); then memory decoding on and bus mastering off
//! until the boot turns it on (`core::boot::identify`). BAR0's 32-bit access goes through the
//! mapping, reset through VFIO_DEVICE_RESET; closing turns bus mastering off before any DMA
//! memory is unmapped.
//!
//! Every system call goes through [`sys::VfioSys`]; the tests drive the same code through a
//! twin of it (`twin.rs`), with a fake sysfs tree.

mod attach;
pub mod dma;
pub mod error;
pub mod iova;
pub mod region;
pub mod sys;

use std::path::PathBuf;
use std::sync::Arc;

use nvbare_core::hal::{Bar0, BarInfo, DmaMemory, PciAddress, Platform, PlatformError};
use nvbare_core::shared::SharedMem;
use vfio_bindings::bindings::vfio as b;

use crate::clock::HostClock;
use crate::lock::{DeviceLock, vfio_lock_path};
use crate::pci::{Sysfs, VFIO_PCI, join_members};
use attach::Attachment;
pub use attach::IommuBackend;
use dma::{DmaPool, HugepageCounts};
pub use error::VfioError;
use region::{Region, RegionIo, mmap_plan, parse_region_info};
use sys::{LinuxSys, VfioSys};

/// `VFIO_PCI_CONFIG_REGION_INDEX`.
const CONFIG_REGION: u32 = 7;
/// PCI config COMMAND register and its memory-space and bus-master bits.
const PCI_COMMAND: u16 = 0x4;
const COMMAND_MEMORY: u32 = 1 << 1;
const COMMAND_BUS_MASTER: u32 = 1 << 2;

/// How to open a GPU.
#[derive(Clone, Debug)]
pub struct VfioOptions {
    /// Where sysfs, `/dev` and `/proc` are (the system's; a fake tree in tests).
    pub sysfs: Sysfs,
    /// Where the per-GPU lock files go ([`default_lock_dir`](crate::lock::default_lock_dir)
    /// by default: `nvbare unbind` looks there).
    pub lock_dir: PathBuf,
    /// The IOMMU interface.
    pub backend: IommuBackend,
    /// Accept VFIO's no-IOMMU mode. UNSAFE: without an IOMMU the GPU can read and write all
    /// of memory (no DMA isolation); a bug or a hostile firmware can corrupt the host.
    pub allow_noiommu_unsafe: bool,
}

impl Default for VfioOptions {
    fn default() -> Self {
        VfioOptions {
            sysfs: Sysfs::system(),
            lock_dir: crate::lock::default_lock_dir(),
            backend: IommuBackend::default(),
            allow_noiommu_unsafe: false,
        }
    }
}

/// A GPU driven through VFIO.
#[derive(Debug)]
pub struct Vfio<S: VfioSys = LinuxSys> {
    addr: PciAddress,
    clock: HostClock,
    /// BARs 0-5 (index = BAR number; the upper half of a 64-bit BAR is `None`).
    bars: [Option<Arc<Region<S>>>; 6],
    bus_addrs: [u64; 6],
    config_offset: u64,
    device_flags: u32,
    noiommu: bool,
    /// This process runs in a virtual machine the GPU is passed through to.
    in_vm: bool,
    dma: DmaPool<S>,
    sys: Arc<S>,
    device: Arc<S::Fd>,
    _attachment: Attachment<S::Fd>,
    _lock: DeviceLock,
}

/// Whether the CPU says a hypervisor runs this machine (the `hypervisor` flag of
/// /proc/cpuinfo: CPUID leaf 1 ECX bit 31 on x86), as OpenRM's hypervisor detection decides
/// `bIsPassthru` (`gpuSetupVirtualGuestOwnedHW`).
pub fn hypervisor_present() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| {
        c.lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == "hypervisor"))
    })
}

fn ioctl_err(
    step: &'static str,
    addr: PciAddress,
    remedy: &'static str,
) -> impl FnOnce(std::io::Error) -> VfioError {
    move |source| VfioError::Ioctl {
        step,
        addr,
        remedy,
        source,
    }
}

impl Vfio<LinuxSys> {
    /// Opens the GPU at `addr` on this machine.
    pub fn open(addr: PciAddress, opts: &VfioOptions) -> Result<Self, VfioError> {
        Self::open_with(Arc::new(LinuxSys), addr, opts)
    }
}

impl<S: VfioSys> Vfio<S> {
    /// Opens the GPU at `addr` through `sys`.
    pub fn open_with(sys: Arc<S>, addr: PciAddress, opts: &VfioOptions) -> Result<Self, VfioError> {
        let sysfs = &opts.sysfs;
        if !sysfs.exists(addr) {
            return Err(VfioError::NoSuchDevice { addr });
        }
        // With the IOMMU off the kernel's vfio-pci cannot take the GPU (its probe fails with
        // -EINVAL: no group, no-IOMMU mode off), so "bind it first" would be the wrong remedy.
        if !opts.allow_noiommu_unsafe && sysfs.iommu_group(addr).is_none() && !sysfs.iommu_enabled()
        {
            return Err(VfioError::IommuOff { addr });
        }
        let driver = sysfs.driver(addr);
        if driver.as_deref() != Some(VFIO_PCI) {
            return Err(VfioError::NotBoundToVfio {
                addr,
                driver: driver.unwrap_or_else(|| "no driver".into()),
            });
        }
        let group = sysfs
            .iommu_group(addr)
            .ok_or(VfioError::IommuOff { addr })?;
        let noiommu = sysfs.is_noiommu_group(group);
        if noiommu && !opts.allow_noiommu_unsafe {
            return Err(VfioError::NoIommuRefused { addr, group });
        }
        if noiommu {
            log::warn!(
                "{addr}: VFIO no-IOMMU mode: UNSAFE, the GPU can write anywhere in memory (no \
                 DMA isolation)"
            );
        }
        let blockers = sysfs.group_blockers(group, addr).unwrap_or_default();
        if !blockers.is_empty() {
            return Err(VfioError::GroupNotViable {
                group,
                others: join_members(&blockers),
            });
        }
        let lock = DeviceLock::acquire(
            &vfio_lock_path(&opts.lock_dir, &addr.to_string()),
            &format!("GPU {addr}"),
        )?;

        let attach::Attached {
            device,
            iommu,
            attachment,
        } = attach::open_device(&sys, sysfs, addr, group, noiommu, opts.backend)?;
        let device = Arc::new(device);
        let info = sys.device_info(&device).map_err(ioctl_err(
            "VFIO_DEVICE_GET_INFO",
            addr,
            "see dmesg",
        ))?;
        if info.flags & b::VFIO_DEVICE_FLAGS_PCI == 0 || info.num_regions <= CONFIG_REGION {
            return Err(VfioError::BadRegion {
                addr,
                index: CONFIG_REGION,
                what: format!(
                    "not a PCI device to VFIO (flags {:#x}, {} regions)",
                    info.flags, info.num_regions
                ),
            });
        }
        let region_info = |index| -> Result<region::RegionInfo, VfioError> {
            let raw = sys.region_info(&device, index).map_err(ioctl_err(
                "VFIO_DEVICE_GET_REGION_INFO",
                addr,
                "see dmesg",
            ))?;
            parse_region_info(&raw).map_err(|what| VfioError::BadRegion { addr, index, what })
        };
        let mut bars: [Option<Arc<Region<S>>>; 6] = Default::default();
        for (index, slot) in (0u32..).zip(bars.iter_mut()) {
            let ri = region_info(index)?;
            if ri.size == 0 {
                continue;
            }
            let plan = mmap_plan(&ri);
            let region = Region::map(sys.clone(), device.clone(), index, ri, &plan).map_err(
                |(area, source)| VfioError::MapBar {
                    addr,
                    index,
                    offset: area.offset,
                    // CAST: display only.
                    len: area.size as usize,
                    source,
                },
            )?;
            *slot = Some(Arc::new(region));
        }
        if bars[0].as_ref().is_none_or(|r| r.info.size < 4) {
            return Err(VfioError::BadRegion {
                addr,
                index: 0,
                what: "BAR0 is missing".into(),
            });
        }
        let config_offset = region_info(CONFIG_REGION)?.offset;
        let mut bus_addrs = [0u64; 6];
        if let Ok(res) = sysfs.resources(addr) {
            for (slot, r) in bus_addrs.iter_mut().zip(res) {
                *slot = r.start;
            }
        }
        let counts = HugepageCounts {
            dir: sysfs.path("sys/kernel/mm/hugepages/hugepages-2048kB"),
        };
        let iova = iova::for_iommu(&*sys, &iommu, addr)?;
        let vfio = Vfio {
            addr,
            clock: HostClock::new(),
            bars,
            bus_addrs,
            config_offset,
            device_flags: info.flags,
            noiommu,
            in_vm: hypervisor_present(),
            dma: DmaPool::new(sys.clone(), iommu, counts, iova),
            sys,
            device,
            _attachment: attachment,
            _lock: lock,
        };
        // Memory decoding on, bus mastering off until the boot knows no earlier boot's
        // firmware runs (WPR2 down, the FSP booted): core::boot::identify turns it on then.
        let cmd = vfio.config_read_raw(PCI_COMMAND, 2)?;
        vfio.config_write_raw(PCI_COMMAND, 2, (cmd | COMMAND_MEMORY) & !COMMAND_BUS_MASTER)?;
        Ok(vfio)
    }

    /// Whether the GPU runs in VFIO's no-IOMMU mode (UNSAFE: no DMA isolation).
    pub fn is_noiommu_unsafe(&self) -> bool {
        self.noiommu
    }

    /// DMA allocations in use.
    pub fn dma_outstanding(&self) -> usize {
        self.dma.outstanding()
    }

    /// Hugepage chunks holding DMA memory.
    pub fn dma_chunks(&self) -> usize {
        self.dma.chunks()
    }

    fn set_bus_master(&self, on: bool) -> Result<(), VfioError> {
        let cmd = self.config_read_raw(PCI_COMMAND, 2)?;
        let want = if on {
            cmd | COMMAND_MEMORY | COMMAND_BUS_MASTER
        } else {
            cmd & !COMMAND_BUS_MASTER
        };
        self.config_write_raw(PCI_COMMAND, 2, want)
    }

    fn config_err(
        &self,
        op: &'static str,
        offset: u16,
        size: u8,
    ) -> impl FnOnce(std::io::Error) -> VfioError {
        let addr = self.addr;
        move |source| VfioError::Config {
            addr,
            op,
            offset,
            size,
            source,
        }
    }

    fn config_read_raw(&self, offset: u16, size: u8) -> Result<u32, VfioError> {
        if !matches!(size, 1 | 2 | 4) || !offset.is_multiple_of(u16::from(size)) {
            return Err(self.config_err("read", offset, size)(
                std::io::ErrorKind::InvalidInput.into(),
            ));
        }
        let mut b = [0u8; 4];
        self.sys
            .pread(
                &self.device,
                &mut b[..usize::from(size)],
                self.config_offset + u64::from(offset),
            )
            .map_err(self.config_err("read", offset, size))?;
        Ok(u32::from_le_bytes(b))
    }

    fn config_write_raw(&self, offset: u16, size: u8, value: u32) -> Result<(), VfioError> {
        if !matches!(size, 1 | 2 | 4) || !offset.is_multiple_of(u16::from(size)) {
            return Err(self.config_err("write", offset, size)(
                std::io::ErrorKind::InvalidInput.into(),
            ));
        }
        self.sys
            .pwrite(
                &self.device,
                &value.to_le_bytes()[..usize::from(size)],
                self.config_offset + u64::from(offset),
            )
            .map_err(self.config_err("write", offset, size))
    }
}

fn failed(step: &'static str, e: VfioError) -> PlatformError {
    PlatformError::Failed {
        step,
        source: Box::new(e),
    }
}

impl<S: VfioSys> Drop for Vfio<S> {
    fn drop(&mut self) {
        // The GPU stops reaching memory before any of it is unmapped.
        if let Err(e) = self.set_bus_master(false) {
            log::error!("{}: bus master off at close: {e}", self.addr);
        }
        self.dma.free_all();
    }
}

impl<S: VfioSys> Bar0 for Vfio<S> {
    fn read32(&self, offset: u32) -> u32 {
        // PANIC: `open` refuses a device without BAR0.
        let bar0 = self.bars[0].as_ref().expect("BAR0");
        bar0.read32(u64::from(offset)).unwrap_or_else(|e| {
            log::error!("{}: BAR0 read at {offset:#x}: {e}", self.addr);
            u32::MAX
        })
    }

    fn write32(&self, offset: u32, value: u32) {
        // PANIC: `open` refuses a device without BAR0.
        let bar0 = self.bars[0].as_ref().expect("BAR0");
        if let Err(e) = bar0.write32(u64::from(offset), value) {
            log::error!("{}: BAR0 write at {offset:#x}: {e}", self.addr);
        }
    }
}

impl<S: VfioSys> Platform for Vfio<S> {
    fn in_virtual_machine(&self) -> bool {
        self.in_vm
    }

    type Clock = HostClock;

    fn clock(&self) -> &HostClock {
        &self.clock
    }

    fn pci_address(&self) -> PciAddress {
        self.addr
    }

    fn bar_info(&self, index: u32) -> Option<BarInfo> {
        let i = usize::try_from(index).ok()?;
        let region = self.bars.get(i)?.as_ref()?;
        Some(BarInfo {
            bus_addr: self.bus_addrs[i],
            size: region.info.size,
        })
    }

    fn bar1(&self) -> Option<SharedMem> {
        let region = self.bars[1].as_ref()?;
        let len = usize::try_from(region.info.size).ok()?;
        let bus = self.bus_addrs[1];
        Some(match region.whole_mapping() {
            // SAFETY: the mapping lives as long as this platform (the Platform contract puts
            // every use of the window before the platform's drop); it is device memory,
            // reached through SharedMem's volatile accesses only.
            Some(p) => unsafe { SharedMem::from_raw(p.as_ptr(), len, bus) },
            None => SharedMem::from_io(Arc::new(RegionIo(region.clone())), len, bus),
        })
    }

    fn dma_alloc(&mut self, bytes: usize, contiguous: bool) -> Result<DmaMemory, PlatformError> {
        self.dma
            .alloc(bytes, contiguous)
            .map_err(|e| failed("DMA memory", e))
    }

    unsafe fn dma_free(&mut self, mem: DmaMemory) {
        self.dma.free(mem.id);
    }

    fn config_read(&self, offset: u16, size: u8) -> Result<u32, PlatformError> {
        self.config_read_raw(offset, size)
            .map_err(|e| failed("PCI config read", e))
    }

    fn config_write(&self, offset: u16, size: u8, value: u32) -> Result<(), PlatformError> {
        self.config_write_raw(offset, size, value)
            .map_err(|e| failed("PCI config write", e))
    }

    /// Whether the GPU still answers. Not judged from the vendor id, as the trait's default
    /// does: vfio-pci serves the vendor and device ids from its own copy of config space
    /// (`vfio_pci_config.c`, `init_pci_cap_basic_perm`: "Virtualized for SR-IOV functions"),
    /// so they read NVIDIA's after the GPU fell off the bus (tests/vm/run: every wait then
    /// ran into its timeout, 174 s in all, instead of stopping at "gone"). The class and
    /// revision dword passes through to the device and reads all ones once it is gone.
    fn is_present(&self) -> bool {
        matches!(self.config_read(0x08, 4), Ok(v) if v != u32::MAX)
    }

    fn reset(&mut self) -> Result<(), PlatformError> {
        if self.device_flags & b::VFIO_DEVICE_FLAGS_RESET == 0 {
            return Err(failed(
                "VFIO_DEVICE_RESET",
                VfioError::ResetUnsupported { addr: self.addr },
            ));
        }
        self.set_bus_master(false)
            .map_err(|e| failed("VFIO_DEVICE_RESET", e))?;
        self.sys.device_reset(&self.device).map_err(|source| {
            failed(
                "VFIO_DEVICE_RESET",
                VfioError::Ioctl {
                    step: "VFIO_DEVICE_RESET",
                    addr: self.addr,
                    remedy: "the GPU may be wedged: a secondary bus reset or a power cycle",
                    source,
                },
            )
        })?;
        // Bus mastering stays off: the boot turns it on once it knows no earlier boot's
        // firmware runs (WPR2 down, the FSP booted), as `core::boot::identify` does.
        Ok(())
    }
}

#[cfg(test)]
mod twin;

#[cfg(test)]
mod tests;
