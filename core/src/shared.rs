//! Memory shared between the CPU and the GPU.
//!
//! A [`SharedMem`] is a CPU mapping of memory that the GPU also reaches at a GPU virtual
//! address: cached system memory, a BAR1 write-combined window, or an mmap of memory that
//! NVIDIA's kernel driver allocated. The GPU writes such memory at any time, so every access
//! here is a volatile raw-pointer access; no Rust reference into the memory is ever formed.

use core::fmt;
use core::ptr;

/// An access to shared memory fell outside it, or was misaligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharedMemError {
    /// `offset + len` runs past the end of the region.
    OutOfBounds {
        /// Byte offset of the access.
        offset: u64,
        /// Length of the access in bytes.
        len: u64,
        /// Size of the region in bytes.
        size: u64,
    },
    /// A 32- or 64-bit access at an offset that is not a multiple of its size.
    Misaligned {
        /// Byte offset of the access.
        offset: u64,
        /// Required alignment in bytes.
        align: u64,
    },
}

impl fmt::Display for SharedMemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::OutOfBounds { offset, len, size } => write!(
                f,
                "access of {len} bytes at offset {offset:#x} runs past the end of a {size:#x}-byte \
                 shared buffer; allocate a larger buffer or shorten the access"
            ),
            Self::Misaligned { offset, align } => write!(
                f,
                "access at offset {offset:#x} is not {align}-byte aligned; align the offset"
            ),
        }
    }
}

/// CPU view of a buffer the GPU also sees at [`SharedMem::gpu_va`].
///
/// Cloning gives a second handle to the same memory (like a raw pointer).
#[derive(Clone, Debug)]
pub struct SharedMem {
    ptr: *mut u8,
    len: usize,
    gpu_va: u64,
}

// SAFETY: a `SharedMem` is a raw window on memory that the `from_raw` contract keeps valid for
// the value's whole life; every access is a volatile read or write, which is as sound from one
// thread as from another (the memory is already shared with a concurrently running GPU).
unsafe impl Send for SharedMem {}
// SAFETY: as for `Send`; no method hands out references into the memory.
unsafe impl Sync for SharedMem {}

impl SharedMem {
    /// Wraps `len` bytes at `ptr`, which the GPU reaches at `gpu_va`.
    ///
    /// # Safety
    /// `ptr` must be valid for volatile reads and writes of `len` bytes and stay
    /// so (mapped, not freed, not reused for anything else) for as long as this value or any
    /// clone or [`SharedMem::slice`] of it lives. The memory must not be accessed through Rust
    /// references elsewhere while this value lives.
    pub unsafe fn from_raw(ptr: *mut u8, len: usize, gpu_va: u64) -> Self {
        Self { ptr, len, gpu_va }
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The GPU virtual address of byte 0.
    pub fn gpu_va(&self) -> u64 {
        self.gpu_va
    }

    /// The CPU pointer of byte 0 (for platform code that must hand it on).
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// A sub-window `[offset, offset + len)` of this region.
    pub fn slice(&self, offset: usize, len: usize) -> Result<SharedMem, SharedMemError> {
        self.check(offset, len, 1)?;
        Ok(SharedMem {
            // SAFETY: `check` proved offset + len <= self.len, so the result stays inside the
            // allocation that `from_raw`'s contract covers.
            ptr: unsafe { self.ptr.add(offset) },
            len,
            gpu_va: self.gpu_va + offset as u64,
        })
    }

    fn check(&self, offset: usize, len: usize, align: usize) -> Result<(), SharedMemError> {
        let end = offset.checked_add(len);
        if end.is_none_or(|e| e > self.len) {
            return Err(SharedMemError::OutOfBounds {
                offset: offset as u64,
                len: len as u64,
                size: self.len as u64,
            });
        }
        // Alignment of the real address: a `slice` may start anywhere.
        if !(self.ptr as usize)
            .wrapping_add(offset)
            .is_multiple_of(align)
        {
            return Err(SharedMemError::Misaligned {
                offset: offset as u64,
                align: align as u64,
            });
        }
        Ok(())
    }

    /// Volatile 32-bit read at `offset` (4-byte aligned).
    pub fn read_u32(&self, offset: usize) -> Result<u32, SharedMemError> {
        self.check(offset, 4, 4)?;
        // SAFETY: in bounds and aligned (both checked above on the real address).
        Ok(unsafe { ptr::read_volatile(self.ptr.add(offset) as *const u32) })
    }

    /// Volatile 32-bit write at `offset` (4-byte aligned).
    pub fn write_u32(&self, offset: usize, value: u32) -> Result<(), SharedMemError> {
        self.check(offset, 4, 4)?;
        // SAFETY: in bounds and aligned (checked above).
        unsafe { ptr::write_volatile(self.ptr.add(offset) as *mut u32, value) };
        Ok(())
    }

    /// 64-bit read at `offset` (8-byte aligned), as one volatile 64-bit access.
    pub fn read_u64(&self, offset: usize) -> Result<u64, SharedMemError> {
        self.check(offset, 8, 8)?;
        // SAFETY: in bounds and aligned (checked above).
        Ok(unsafe { ptr::read_volatile(self.ptr.add(offset) as *const u64) })
    }

    /// 64-bit write at `offset` (8-byte aligned), as one volatile 64-bit access.
    pub fn write_u64(&self, offset: usize, value: u64) -> Result<(), SharedMemError> {
        self.check(offset, 8, 8)?;
        // SAFETY: in bounds and aligned (checked above).
        unsafe { ptr::write_volatile(self.ptr.add(offset) as *mut u64, value) };
        Ok(())
    }

    /// Copies `data` to `offset`, byte by byte through volatile writes (32-bit writes where
    /// aligned, so write-combined BAR mappings see full words).
    pub fn write_bytes(&self, offset: usize, data: &[u8]) -> Result<(), SharedMemError> {
        self.check(offset, data.len(), 1)?;
        let mut i = 0;
        while i < data.len() {
            let at = offset + i;
            if (self.ptr as usize).wrapping_add(at).is_multiple_of(4) && data.len() - i >= 4 {
                let w = u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
                // SAFETY: at..at+4 is inside the checked range and 4-byte aligned.
                unsafe { ptr::write_volatile(self.ptr.add(at) as *mut u32, w) };
                i += 4;
            } else {
                // SAFETY: `at` is inside the checked range.
                unsafe { ptr::write_volatile(self.ptr.add(at), data[i]) };
                i += 1;
            }
        }
        Ok(())
    }

    /// Copies 32-bit words to `offset` (4-byte aligned) with volatile writes.
    pub fn write_words(&self, offset: usize, words: &[u32]) -> Result<(), SharedMemError> {
        let len = words
            .len()
            .checked_mul(4)
            .ok_or(SharedMemError::OutOfBounds {
                offset: offset as u64,
                len: u64::MAX,
                size: self.len as u64,
            })?;
        self.check(offset, len, 4)?;
        for (i, w) in words.iter().enumerate() {
            // SAFETY: inside the checked, aligned range.
            unsafe { ptr::write_volatile(self.ptr.add(offset + 4 * i) as *mut u32, *w) };
        }
        Ok(())
    }

    /// Copies `data` (a whole number of 8-byte words, little-endian) to `offset` (8-byte
    /// aligned) with 64-bit volatile writes: one check for the whole range.
    pub fn write_bytes_u64(&self, offset: usize, data: &[u8]) -> Result<(), SharedMemError> {
        if !data.len().is_multiple_of(8) {
            return Err(SharedMemError::Misaligned {
                offset: (offset + data.len()) as u64,
                align: 8,
            });
        }
        self.check(offset, data.len(), 8)?;
        for (i, w) in data.chunks_exact(8).enumerate() {
            let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
            // SAFETY: inside the checked, aligned range.
            unsafe { ptr::write_volatile(self.ptr.add(offset + 8 * i) as *mut u64, w) };
        }
        Ok(())
    }

    /// Copies `out.len()` bytes from `offset` with volatile reads.
    pub fn read_bytes(&self, offset: usize, out: &mut [u8]) -> Result<(), SharedMemError> {
        self.check(offset, out.len(), 1)?;
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: inside the checked range.
            *b = unsafe { ptr::read_volatile(self.ptr.add(offset + i)) };
        }
        Ok(())
    }

    /// Fills `len` bytes at `offset` with `value`.
    pub fn fill(&self, offset: usize, len: usize, value: u8) -> Result<(), SharedMemError> {
        self.check(offset, len, 1)?;
        for i in 0..len {
            // SAFETY: inside the checked range.
            unsafe { ptr::write_volatile(self.ptr.add(offset + i), value) };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn backing(words: usize) -> alloc::vec::Vec<u64> {
        vec![0u64; words]
    }

    #[test]
    fn bounds_and_alignment_are_errors() {
        let mut buf = backing(4);
        // SAFETY: buf outlives mem and is only touched through mem.
        let mem = unsafe { SharedMem::from_raw(buf.as_mut_ptr() as *mut u8, 32, 0x1000) };
        assert!(mem.write_u32(28, 7).is_ok());
        assert_eq!(mem.read_u32(28), Ok(7));
        assert!(matches!(
            mem.write_u32(30, 1),
            Err(SharedMemError::OutOfBounds { .. })
        ));
        assert!(matches!(
            mem.read_u64(4),
            Err(SharedMemError::Misaligned { align: 8, .. })
        ));
        assert!(matches!(
            mem.write_bytes(usize::MAX, &[1]),
            Err(SharedMemError::OutOfBounds { .. })
        ));
        // A window starting off alignment checks its accesses against the real address.
        let odd = mem.slice(2, 8).unwrap();
        assert!(matches!(
            odd.read_u32(0),
            Err(SharedMemError::Misaligned { .. })
        ));
        assert_eq!(odd.read_u32(2), Ok(0));
        let s = mem.slice(8, 8).unwrap();
        assert_eq!(s.gpu_va(), 0x1008);
        s.write_u64(0, 0x1122_3344_5566_7788).unwrap();
        assert_eq!(mem.read_u64(8), Ok(0x1122_3344_5566_7788));
        assert!(mem.slice(30, 4).is_err());
        mem.write_bytes(1, &[1, 2, 3, 4, 5, 6, 7]).unwrap();
        let mut out = [0u8; 8];
        mem.read_bytes(0, &mut out).unwrap();
        assert_eq!(out, [0, 1, 2, 3, 4, 5, 6, 7]);
        let _ = &mut buf;
    }
}
