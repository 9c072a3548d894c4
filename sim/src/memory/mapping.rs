//! What the simulator's memories are made of: an anonymous, lazily backed mapping (or a
//! client's file, mapped shared), and the volatile copies every access goes through.

use std::ptr::NonNull;

/// An anonymous, zero-filled, lazily backed mapping that this module owns.
#[derive(Debug)]
pub(super) struct Mapping {
    pub(super) ptr: NonNull<u8>,
    pub(super) len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; all access is volatile through
// raw pointers (see the module doc), which is as sound from any thread.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of zeroed memory, reserving no swap (`MAP_NORESERVE`): pages are
    /// backed when first touched.
    pub(super) fn new(len: usize) -> std::io::Result<Mapping> {
        // SAFETY: a fresh private anonymous mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len.max(1),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast()).ok_or_else(|| std::io::Error::other("mmap gave null"))?;
        Ok(Mapping { ptr, len })
    }

    /// `len` bytes of the file `fd` from byte `offset`, shared with whoever else maps it (a
    /// vfio-user client's guest memory).
    pub(super) fn from_fd(
        fd: std::os::fd::BorrowedFd<'_>,
        offset: u64,
        len: usize,
        writable: bool,
    ) -> std::io::Result<Mapping> {
        use std::os::fd::AsRawFd;
        let prot = libc::PROT_READ | if writable { libc::PROT_WRITE } else { 0 };
        let off = libc::off_t::try_from(offset)
            .map_err(|_| std::io::Error::other("file offset too large"))?;
        // SAFETY: a fresh shared mapping of a file the caller holds open; no existing memory
        // is affected. A client that shrinks the file afterwards makes accesses raise SIGBUS:
        // `SysMem::map_fd` checks the size at map time, as libvfio-user does.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast()).ok_or_else(|| std::io::Error::other("mmap gave null"))?;
        Ok(Mapping { ptr, len })
    }

    /// Gives the pages back to the kernel (they read as zero afterwards).
    pub(super) fn discard(&self) {
        // SAFETY: our own mapping; MADV_DONTNEED on private anonymous memory zero-fills.
        unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_DONTNEED) };
    }

    /// Copies `out.len()` bytes at `offset` out of the mapping.
    ///
    /// # Panics
    /// If the range is not inside the mapping (callers check it: a panic here is a bug in
    /// this module, not a device access that faulted).
    pub(super) fn read(&self, offset: usize, out: &mut [u8]) {
        assert!(
            offset
                .checked_add(out.len())
                .is_some_and(|end| end <= self.len),
            "mapping read {offset:#x}+{:#x} past {:#x}",
            out.len(),
            self.len
        );
        // SAFETY: the range was checked to lie inside this live mapping.
        unsafe { volatile_copy_from(self.ptr.as_ptr().add(offset), out) };
    }

    /// Copies `data` into the mapping at `offset`.
    ///
    /// # Panics
    /// As [`Self::read`].
    pub(super) fn write(&self, offset: usize, data: &[u8]) {
        assert!(
            offset
                .checked_add(data.len())
                .is_some_and(|end| end <= self.len),
            "mapping write {offset:#x}+{:#x} past {:#x}",
            data.len(),
            self.len
        );
        // SAFETY: the range was checked to lie inside this live mapping.
        unsafe { volatile_copy_to(self.ptr.as_ptr().add(offset), data) };
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `new` mapped, once.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len.max(1)) };
    }
}

/// Copies from shared memory at `src` into `out`, with volatile reads (64-bit where aligned).
///
/// # Safety
/// `src..src + out.len()` must lie inside a live mapping.
unsafe fn volatile_copy_from(src: *const u8, out: &mut [u8]) {
    let mut i = 0;
    while i < out.len() {
        // SAFETY (both arms): the caller guarantees src..src+out.len() is inside a live mapping.
        if (src as usize + i).is_multiple_of(8) && out.len() - i >= 8 {
            let w = unsafe { std::ptr::read_volatile(src.add(i) as *const u64) };
            out[i..i + 8].copy_from_slice(&w.to_le_bytes());
            i += 8;
        } else {
            out[i] = unsafe { std::ptr::read_volatile(src.add(i)) };
            i += 1;
        }
    }
}

/// Copies `data` into shared memory at `dst`, with volatile writes (64-bit where aligned).
///
/// # Safety
/// `dst..dst + data.len()` must lie inside a live mapping.
unsafe fn volatile_copy_to(dst: *mut u8, data: &[u8]) {
    let mut i = 0;
    while i < data.len() {
        // SAFETY (both arms): the caller guarantees dst..dst+data.len() is inside a live mapping.
        if (dst as usize + i).is_multiple_of(8) && data.len() - i >= 8 {
            let mut w = [0u8; 8];
            w.copy_from_slice(&data[i..i + 8]);
            unsafe { std::ptr::write_volatile(dst.add(i) as *mut u64, u64::from_le_bytes(w)) };
            i += 8;
        } else {
            unsafe { std::ptr::write_volatile(dst.add(i), data[i]) };
            i += 1;
        }
    }
}
