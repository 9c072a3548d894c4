//! [`VfioError`]: one variant per step of opening and using a GPU through VFIO, each naming
//! the remedy.

use std::io;
use std::path::PathBuf;

use nvbare_core::hal::PciAddress;

use crate::lock::LockError;

/// What the VFIO platform could not do.
#[derive(Debug, thiserror::Error)]
pub enum VfioError {
    /// No such PCI device.
    #[error("no PCI device {addr}; `nvbare list` shows the NVIDIA GPUs here")]
    NoSuchDevice {
        /// The device.
        addr: PciAddress,
    },
    /// The device is bound to another driver.
    #[error("{addr} is bound to {driver}, not vfio-pci; run `nvbare bind {addr}` first")]
    NotBoundToVfio {
        /// The device.
        addr: PciAddress,
        /// Its driver ("no driver").
        driver: String,
    },
    /// No IOMMU, and no-IOMMU mode not in use.
    #[error(
        "{addr} has no IOMMU group: the IOMMU is off. Turn it on in the firmware (VT-d or \
         AMD-Vi) and on the kernel command line (intel_iommu=on iommu=pt, or amd_iommu=on), then \
         reboot. (VFIO's no-IOMMU mode, `modprobe vfio enable_unsafe_noiommu_mode=1`, works \
         without it but is UNSAFE: no DMA isolation.)"
    )]
    IommuOff {
        /// The device.
        addr: PciAddress,
    },
    /// The device sits in VFIO's no-IOMMU mode and the caller did not ask for it.
    #[error(
        "{addr} is in VFIO's no-IOMMU mode (group {group}): refused, because it is UNSAFE (the \
         GPU can write anywhere in memory: no DMA isolation). Turn the IOMMU on, or accept the \
         risk explicitly (the unsafe no-IOMMU option)"
    )]
    NoIommuRefused {
        /// The device.
        addr: PciAddress,
        /// The no-IOMMU group.
        group: u32,
    },
    /// The IOMMU group has devices bound to host drivers.
    #[error(
        "IOMMU group {group} is not viable: it also holds {others}; bind them to vfio-pci \
         (`nvbare bind BDF`) or unbind them, or move the GPU to a slot with its own group"
    )]
    GroupNotViable {
        /// The group.
        group: u32,
        /// The devices in the way, with their drivers.
        others: String,
    },
    /// A VFIO node could not be opened.
    #[error("cannot open {}: {source}; {remedy}", path.display())]
    Open {
        /// The node.
        path: PathBuf,
        /// What to do.
        remedy: &'static str,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The kernel's VFIO API is not the one this code speaks.
    #[error("VFIO API version {0}, this code speaks version 0; update the kernel or nvbare")]
    ApiVersion(i32),
    /// The container lacks the IOMMU type wanted.
    #[error("the VFIO container does not offer {what}; {remedy}")]
    NoExtension {
        /// The IOMMU type.
        what: &'static str,
        /// What to do.
        remedy: &'static str,
    },
    /// A VFIO ioctl failed.
    #[error("{step} failed for {addr}: {source}; {remedy}")]
    Ioctl {
        /// The ioctl.
        step: &'static str,
        /// The device.
        addr: PciAddress,
        /// What to do.
        remedy: &'static str,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The region information makes no sense.
    #[error("region {index} of {addr}: {what}")]
    BadRegion {
        /// The device.
        addr: PciAddress,
        /// The region.
        index: u32,
        /// What was wrong.
        what: String,
    },
    /// Mapping a BAR failed.
    #[error("mapping BAR{index} of {addr} ({len:#x} bytes at region offset {offset:#x}) failed")]
    MapBar {
        /// The device.
        addr: PciAddress,
        /// The BAR.
        index: u32,
        /// The area's offset in the region.
        offset: u64,
        /// The area's length.
        len: usize,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Config space access failed.
    #[error("config space {op} of {size} bytes at {offset:#x} on {addr} failed")]
    Config {
        /// The device.
        addr: PciAddress,
        /// "read" or "write".
        op: &'static str,
        /// The offset.
        offset: u16,
        /// The size.
        size: u8,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The device cannot be reset by VFIO.
    #[error(
        "{addr} offers VFIO no reset (no FLR or other reset method); reset it another way (a \
         secondary bus reset of its bridge, or a power cycle) and open it again"
    )]
    ResetUnsupported {
        /// The device.
        addr: PciAddress,
    },
    /// No hugepages for DMA memory.
    #[error(
        "no 2 MiB hugepages for {bytes} bytes of DMA memory ({free} of {total} reserved are \
         free, {needed} more needed); reserve them: `echo {suggest} > \
         /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages`"
    )]
    NoHugepages {
        /// Bytes asked for.
        bytes: usize,
        /// Free hugepages.
        free: u64,
        /// Reserved hugepages.
        total: u64,
        /// Hugepages this allocation needs.
        needed: u64,
        /// The `nr_hugepages` value to set.
        suggest: u64,
    },
    /// Hugepage memory could not be had for another reason.
    #[error(
        "allocating {bytes} bytes of locked hugepage memory failed; if the cause is a lock \
         limit, raise it (`ulimit -l unlimited`, or LimitMEMLOCK=infinity for a service)"
    )]
    Hugepages {
        /// Bytes asked for.
        bytes: usize,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The IOMMU refused a mapping.
    #[error(
        "mapping {len:#x} bytes at IOVA {iova:#x} in the IOMMU failed; with ENOMEM raise the \
         locked-memory limit (`ulimit -l unlimited`), with ENOSPC the IOMMU's mapping limit is \
         reached (one mapping per 2 MiB hugepage chunk): raise it (`modprobe vfio_iommu_type1 \
         dma_entry_limit=N`)"
    )]
    DmaMap {
        /// The IOVA.
        iova: u64,
        /// The length.
        len: usize,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// No IOVA space left.
    #[error("no IOVA space left for {bytes} bytes; free DMA memory first")]
    NoIova {
        /// Bytes asked for.
        bytes: usize,
    },
    /// No-IOMMU mode cannot see physical addresses.
    #[error(
        "UNSAFE no-IOMMU mode needs physical addresses, but /proc/self/pagemap shows none: run \
         as root (CAP_SYS_ADMIN)"
    )]
    NoPhysicalAddress,
    /// Reading the pagemap failed.
    #[error("reading /proc/self/pagemap failed (UNSAFE no-IOMMU mode needs it)")]
    Pagemap(#[source] io::Error),
    /// Contiguous memory asked for in no-IOMMU mode, not found.
    #[error(
        "{bytes} bytes of physically contiguous DMA memory asked for in UNSAFE no-IOMMU mode, \
         but the hugepages given are not contiguous; only allocations up to 2 MiB are sure to \
         be (with an IOMMU every allocation is contiguous on the bus)"
    )]
    NotContiguous {
        /// Bytes asked for.
        bytes: usize,
    },
    /// Another process drives the GPU.
    #[error(transparent)]
    Locked(#[from] LockError),
}
