//! The kernel-driver backend (`--backend nvk`): where NVIDIA's kernel driver owns
//! the GPU, nvbare drives it through RM ioctls on `/dev/nvidiactl`,
//! `/dev/nvidiaN` and `/dev/nvidia-uvm`, with its own pushbuffers, QMDs and
//! GPFIFOs from `nvbare-core`.

pub mod ctrl;
pub mod device;
pub mod fault;
pub mod flags;
pub mod gpu;
pub mod mem;
pub mod pool;
pub mod rm;
pub mod sys;
pub mod uvm;

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;

use nvbare_gsp::rm::status::NvStatus;

/// Everything that can go wrong on the kernel-driver path, each naming the step.
#[derive(Debug, thiserror::Error)]
pub enum NvkError {
    #[error(
        "{path}: {source}; the nvk backend drives GPUs owned by NVIDIA's kernel driver: \
         load nvidia.ko and nvidia-uvm.ko (or run where they are loaded)"
    )]
    NoDriver {
        path: Cow<'static, str>,
        source: std::io::Error,
    },
    #[error("{op}: ioctl failed: {source}")]
    Ioctl {
        op: &'static str,
        source: std::io::Error,
    },
    #[error("{op}: RM returned {status}")]
    Rm { op: &'static str, status: NvStatus },
    #[error("RM alloc of class {class:#06x} failed: {status}")]
    RmAlloc { class: u32, status: NvStatus },
    #[error("RM control {cmd:#010x} failed: {status}")]
    RmControl { cmd: u32, status: NvStatus },
    #[error("no GPU at index {index}: the kernel driver lists {count}")]
    NoSuchGpu { index: usize, count: usize },
    #[error("mmap of {what} failed: {source}")]
    Mmap {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("GPU virtual address space: {0}")]
    Va(String),
    #[error("the GPU offers none of the {what} classes nvbare knows ({known}); chip not supported")]
    NoClass { what: &'static str, known: String },
    #[error("{0}")]
    Submit(String),
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
        let err = gpu::Gpu::open(0).err().expect("no driver, no GPU");
        let msg = err.to_string();
        assert!(
            matches!(&err, NvkError::NoDriver { path, .. } if path == "/dev/nvidiactl"),
            "{msg}"
        );
        assert!(msg.contains("nvidia.ko") && !msg.contains('\n'), "{msg}");
    }
}
