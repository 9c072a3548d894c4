//! GPU memory on the kernel-driver path: video memory and host memory made
//! visible to the GPU at virtual addresses we choose, plus the VA allocator that
//! chooses them.
//!
//! Where a buffer has a CPU mapping, its CPU address equals its GPU address
//! (mapped with `MAP_FIXED_NOREPLACE`), as CUDA's unified addressing does: one
//! number names the buffer on both sides.

use std::ptr::NonNull;

use super::NvkError;
use super::rm::Handle;

/// Where a buffer's pages live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Video memory (HBM on the H200).
    Vram,
    /// Pinned host memory the GPU reaches over PCIe.
    Host,
}

/// One GPU-visible allocation.
#[derive(Debug)]
pub struct Buffer {
    /// GPU virtual address (and CPU address, when `cpu` is set).
    pub gpu_va: u64,
    /// Size in bytes (rounded up to the page size used).
    pub size: u64,
    /// Where its pages live.
    pub placement: Placement,
    /// The CPU mapping, when one was asked for.
    pub cpu: Option<NonNull<u8>>,
    /// The RM memory object.
    pub(crate) handle: Handle,
}

impl Buffer {
    /// The buffer's CPU mapping as GPU-shared memory (volatile, bounds-checked
    /// access). Crate-internal: the caller keeps the result no longer than the buffer.
    pub(crate) fn mem(&self) -> Result<nvbare_core::shared::SharedMem, NvkError> {
        let p = self.cpu_ptr()?;
        // SAFETY: the mapping covers `size` bytes and stays until the buffer is
        // freed (which consumes it); callers in this crate drop the view first.
        // Only volatile accesses reach it through SharedMem.
        Ok(unsafe { nvbare_core::shared::SharedMem::from_raw(p, self.size as usize, self.gpu_va) })
    }

    /// The CPU pointer, or an error naming the buffer when it has no CPU mapping.
    pub fn cpu_ptr(&self) -> Result<*mut u8, NvkError> {
        self.cpu.map(NonNull::as_ptr).ok_or_else(|| {
            NvkError::Submit(format!("buffer at {:#x} has no CPU mapping", self.gpu_va))
        })
    }
}

// SAFETY: a Buffer is a description of memory (addresses and a handle); the memory
// itself is reached only through volatile accesses by whoever holds the device.
unsafe impl Send for Buffer {}

/// `mmap`s `len` bytes of `fd` at exactly `addr`, refusing to replace anything.
pub(crate) fn mmap_fixed(
    addr: u64,
    len: u64,
    fd: i32,
    what: &'static str,
) -> Result<NonNull<u8>, NvkError> {
    let flags =
        libc::MAP_SHARED | libc::MAP_FIXED_NOREPLACE | if fd < 0 { libc::MAP_ANONYMOUS } else { 0 };
    // SAFETY: a new mapping at an address we reserved for it; MAP_FIXED_NOREPLACE
    // makes the kernel fail rather than replace an existing mapping.
    let p = unsafe {
        libc::mmap(
            addr as *mut libc::c_void,
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(NvkError::Mmap {
            what,
            source: std::io::Error::last_os_error(),
        });
    }
    if p as u64 != addr {
        // An old kernel that ignores MAP_FIXED_NOREPLACE placed it elsewhere.
        // SAFETY: unmapping exactly what this call mapped.
        unsafe { libc::munmap(p, len as usize) };
        return Err(NvkError::Mmap {
            what,
            source: std::io::Error::other(format!("wanted {addr:#x}, kernel chose {p:p}")),
        });
    }
    NonNull::new(p.cast()).ok_or(NvkError::Mmap {
        what,
        source: std::io::Error::other("null"),
    })
}

/// Unmaps a mapping made by [`mmap_fixed`] or by the device's usermode mapping.
pub(crate) fn munmap(p: NonNull<u8>, len: u64) {
    // SAFETY: the caller passes a mapping this module created, once.
    unsafe { libc::munmap(p.as_ptr().cast(), len as usize) };
}
