//! The kernel-driver backend (`--backend nvk`): where NVIDIA's kernel driver owns the GPU,
//! nvbare reaches RM through ioctls on `/dev/nvidiactl`, `/dev/nvidiaN` and
//! `/dev/nvidia-uvm`. [`Nvk`] implements `nvbare_core`'s `RmApi` and `Backend`; everything
//! above it (object tree, channels, launches, waits) is `nvbare_core::gpu`, the same code the
//! VFIO path runs.
//!
//! - [`sys`]: the kernel driver's ioctl framing and UVM ioctls.
//! - [`rm`]: the RM client (alloc, free, control, CPU and GPU mapping of RM memory).
//! - [`uvm`]: UVM registration and external ranges.
//! - [`memory`]: buffers as RM memory objects at VAs nvk picks, CPU-mapped at the same VA.
//! - [`backend`]: [`Nvk`] and its `Backend` steps (device identity, UVM, notifier, GR info).
//! - [`flags`], [`ctrl`]: the RM flag words and control wrappers the backend uses.
//! - [`own_pt`], [`own_mem`]: the opt-in own-page-tables mode ([`NvkOptions`]): nvbare's ver3
//!   tables under a `SHARED_MANAGEMENT` VA space.

pub mod backend;
pub mod ctrl;
pub mod flags;
pub mod memory;
pub mod own_mem;
pub mod own_pt;
pub mod rm;
pub mod sys;
pub mod uvm;

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;

use nvbare_gsp::rm::status::NvStatus;

pub use backend::Nvk;
pub use memory::NvkMemory;

/// The GPU layer over the kernel driver.
pub type Gpu = nvbare_core::gpu::Gpu<Nvk>;
/// A buffer of [`Gpu`].
pub type Buffer = nvbare_core::gpu::Buffer<NvkMemory>;
/// A loaded kernel of [`Gpu`].
pub type Kernel = nvbare_core::gpu::Kernel<NvkMemory>;
/// What [`Gpu`] reports: core's errors, wrapping [`NvkError`] where a backend step failed.
pub type Error = nvbare_core::gpu::GpuError<NvkError>;

/// `buf`'s CPU view, or the error naming the buffer when it was allocated without one.
pub fn view(buf: &Buffer) -> Result<nvbare_core::gpu::BufferView<'_>, Error> {
    buf.view().ok_or(Error::NoCpuView(buf.gpu_va()))
}

/// Opens GPU `index` of those the kernel driver lists, with `config`'s sizes and tunings.
pub fn open(index: usize, config: nvbare_core::gpu::GpuConfig) -> Result<Gpu, Error> {
    let nvk = Nvk::open(index).map_err(|source| Error::Backend {
        step: nvbare_core::rm::Step::Open,
        source,
    })?;
    Gpu::open(nvk, config)
}

/// How [`Nvk`] sets the GPU up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NvkOptions {
    /// nvbare's own ver3 page tables (`own_pt`): a `SHARED_MANAGEMENT` VA space whose top-level
    /// directory nvbare builds and hands to RM, buffers mapped by nvbare's PTEs (RM keeps VAs
    /// from 2^56 up for its context buffers), no UVM. Off: UVM owns the VA space (the path nvbare uses by default).
    pub own_page_tables: bool,
    /// With `own_page_tables`: RM keeps root entry 0 (`[0, 2^56)`, UVM's split on Hopper)
    /// instead of entry 1. Then the GPU layer's own buffers (pushbuffers need VAs below
    /// 1 TiB) are mapped by RM in its half, and only [`Nvk::alloc_paged`] buffers by nvbare's
    /// PTEs, above 2^56.
    pub rm_keeps_low: bool,
    /// With `own_page_tables`: map the GPU layer's own buffers with 4 KiB pages only (by
    /// default VRAM of 64 KiB and more gets 64 KiB or 2 MiB pages).
    pub default_pages_4k: bool,
}

/// [`open`] with `options`.
pub fn open_with(
    index: usize,
    config: nvbare_core::gpu::GpuConfig,
    options: NvkOptions,
) -> Result<Gpu, Error> {
    let nvk = Nvk::open_with(index, options).map_err(|source| Error::Backend {
        step: nvbare_core::rm::Step::Open,
        source,
    })?;
    Gpu::open(nvk, config)
}

/// Everything that can go wrong on the kernel-driver path, each naming the step.
#[derive(Debug, thiserror::Error)]
pub enum NvkError {
    /// A device node could not be opened.
    #[error(
        "{path}: {source}; the nvk backend drives GPUs owned by NVIDIA's kernel driver: \
         load nvidia.ko and nvidia-uvm.ko (or run where they are loaded)"
    )]
    NoDriver {
        /// The node.
        path: Cow<'static, str>,
        /// The OS error.
        source: std::io::Error,
    },
    /// An ioctl failed in the kernel.
    #[error("{op}: ioctl failed: {source}")]
    Ioctl {
        /// Which.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// RM (or UVM) returned a status.
    #[error("{op}: RM returned {status}")]
    Rm {
        /// Which call.
        op: &'static str,
        /// The status.
        status: NvStatus,
    },
    /// RM refused an allocation.
    #[error("RM alloc of class {class:#06x} failed: {status}")]
    RmAlloc {
        /// The class.
        class: u32,
        /// The status.
        status: NvStatus,
    },
    /// RM refused a control.
    #[error("RM control {cmd:#010x} failed: {status}")]
    RmControl {
        /// The command.
        cmd: u32,
        /// The status.
        status: NvStatus,
    },
    /// No GPU at that index.
    #[error("no GPU at index {index}: the kernel driver lists {count}")]
    NoSuchGpu {
        /// Asked for.
        index: usize,
        /// Listed.
        count: usize,
    },
    /// An mmap failed.
    #[error("mmap of {what} failed: {source}")]
    Mmap {
        /// What was mapped.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// The process's GPU VA windows have no room (or were handed a bad range).
    #[error("GPU virtual address space: {0}")]
    Va(#[source] nvbare_mmu::MmuError),
    /// RM mapped a buffer somewhere other than the VA asked for.
    #[error("RM mapped a buffer at {got:#x}, wanted {wanted:#x}")]
    MappedElsewhere {
        /// Asked for.
        wanted: u64,
        /// Got.
        got: u64,
    },
    /// The own-page-tables mode met something it cannot map.
    #[error("own page tables: {0}")]
    OwnTables(&'static str),
    /// RM's GPU UUID was not the 16 bytes UVM wants.
    #[error("GPU UUID: RM returned {len} bytes of binary GID, expected 16")]
    GpuUuid {
        /// Bytes returned.
        len: u32,
    },
}

/// Opens an NVIDIA device node read-write, close-on-exec.
pub(crate) fn open_dev(path: impl Into<Cow<'static, str>>) -> Result<File, NvkError> {
    let path = path.into();
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(&*path)
        .map_err(|source| NvkError::NoDriver { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_driver_is_one_clear_error() {
        if std::path::Path::new("/dev/nvidiactl").exists() {
            eprintln!("skipped: this machine has NVIDIA's kernel driver");
            return;
        }
        let err = open(0, Default::default())
            .err()
            .expect("no driver, no GPU");
        let msg = err.to_string();
        assert!(
            matches!(&err, Error::Backend { source: NvkError::NoDriver { path, .. }, .. } if path == "/dev/nvidiactl"),
            "{msg}"
        );
        assert!(msg.contains("nvidia.ko") && !msg.contains('\n'), "{msg}");
    }
}
