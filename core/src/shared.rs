//! Memory shared between the CPU and the GPU.
//!
//! A [`SharedMem`] is a CPU mapping of memory that the GPU also reaches at a GPU virtual
//! address: cached system memory, a BAR1 write-combined window, or an mmap of memory that
//! NVIDIA's kernel driver allocated. The GPU writes such memory at any time, so every access
//! here is a volatile raw-pointer access; no Rust reference into the memory is ever formed.

use alloc::sync::Arc;
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

impl core::error::Error for SharedMemError {}

/// Access to memory that is not in this address space: the simulated GPU's memory in
/// another process, reached over tinygrad's remote protocol. Implementations order their
/// accesses as issued (the stream is the ordering).
pub trait MemIo: Send + Sync + fmt::Debug {
    /// Reads `out.len()` bytes at byte `offset` of the memory.
    fn read(&self, offset: u64, out: &mut [u8]);
    /// Writes `data` at byte `offset` of the memory.
    fn write(&self, offset: u64, data: &[u8]);
}

#[derive(Clone, Debug)]
enum Backing {
    /// Memory mapped into this address space.
    Ptr(*mut u8),
    /// Memory reached through an accessor, from this byte offset of it.
    Io(Arc<dyn MemIo>, u64),
}

/// CPU view of a buffer the GPU also sees at [`SharedMem::gpu_va`].
///
/// Cloning gives a second handle to the same memory (like a raw pointer).
#[derive(Clone, Debug)]
pub struct SharedMem {
    backing: Backing,
    len: usize,
    gpu_va: u64,
}

// SAFETY: a `SharedMem` is a raw window on memory that the `from_raw` contract keeps valid for
// the value's whole life (or an accessor that is itself Send + Sync); every access is a
// volatile read or write, which is as sound from one thread as from another (the memory is
// already shared with a concurrently running GPU).
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
        Self {
            backing: Backing::Ptr(ptr),
            len,
            gpu_va,
        }
    }

    /// `len` bytes reached through `io` (from its offset 0), which the GPU reaches at
    /// `gpu_va`.
    pub fn from_io(io: Arc<dyn MemIo>, len: usize, gpu_va: u64) -> Self {
        Self {
            backing: Backing::Io(io, 0),
            len,
            gpu_va,
        }
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

    /// The same memory, seen by the GPU at `gpu_va` instead (a buffer mapped at a second
    /// address, or DMA memory whose "GPU address" is a bus address).
    pub fn with_gpu_va(&self, gpu_va: u64) -> SharedMem {
        SharedMem {
            backing: self.backing.clone(),
            len: self.len,
            gpu_va,
        }
    }

    /// The CPU pointer of byte 0 (for platform code that must hand it on); `None` for memory
    /// reached through an accessor.
    pub fn as_ptr(&self) -> Option<*mut u8> {
        match self.backing {
            Backing::Ptr(p) => Some(p),
            Backing::Io(..) => None,
        }
    }

    /// A sub-window `[offset, offset + len)` of this region.
    pub fn slice(&self, offset: usize, len: usize) -> Result<SharedMem, SharedMemError> {
        self.check(offset, len, 1)?;
        let backing = match &self.backing {
            // SAFETY: `check` proved offset + len <= self.len, so the result stays inside the
            // allocation that `from_raw`'s contract covers.
            Backing::Ptr(p) => Backing::Ptr(unsafe { p.add(offset) }),
            Backing::Io(io, base) => Backing::Io(io.clone(), base + offset as u64),
        };
        Ok(SharedMem {
            backing,
            len,
            gpu_va: self.gpu_va + offset as u64,
        })
    }

    /// The address alignment is judged on: the real address for mapped memory, the offset
    /// into the accessor's memory otherwise.
    fn addr(&self) -> usize {
        match self.backing {
            Backing::Ptr(p) => p as usize,
            // CAST: only the low bits matter for alignment.
            Backing::Io(_, base) => base as usize,
        }
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
        if !self.addr().wrapping_add(offset).is_multiple_of(align) {
            return Err(SharedMemError::Misaligned {
                offset: offset as u64,
                align: align as u64,
            });
        }
        Ok(())
    }

    fn io_read<const N: usize>(io: &dyn MemIo, at: u64) -> [u8; N] {
        let mut b = [0u8; N];
        io.read(at, &mut b);
        b
    }

    /// Volatile 32-bit read at `offset` (4-byte aligned).
    pub fn read_u32(&self, offset: usize) -> Result<u32, SharedMemError> {
        self.check(offset, 4, 4)?;
        Ok(match &self.backing {
            // SAFETY: in bounds and aligned (both checked above on the real address).
            Backing::Ptr(p) => unsafe { ptr::read_volatile(p.add(offset) as *const u32) },
            Backing::Io(io, base) => u32::from_le_bytes(Self::io_read(&**io, base + offset as u64)),
        })
    }

    /// Volatile 32-bit write at `offset` (4-byte aligned).
    pub fn write_u32(&self, offset: usize, value: u32) -> Result<(), SharedMemError> {
        self.check(offset, 4, 4)?;
        match &self.backing {
            // SAFETY: in bounds and aligned (checked above).
            Backing::Ptr(p) => unsafe { ptr::write_volatile(p.add(offset) as *mut u32, value) },
            Backing::Io(io, base) => io.write(base + offset as u64, &value.to_le_bytes()),
        }
        Ok(())
    }

    /// 64-bit read at `offset` (8-byte aligned), as one volatile 64-bit access.
    pub fn read_u64(&self, offset: usize) -> Result<u64, SharedMemError> {
        self.check(offset, 8, 8)?;
        Ok(match &self.backing {
            // SAFETY: in bounds and aligned (checked above).
            Backing::Ptr(p) => unsafe { ptr::read_volatile(p.add(offset) as *const u64) },
            Backing::Io(io, base) => u64::from_le_bytes(Self::io_read(&**io, base + offset as u64)),
        })
    }

    /// 64-bit write at `offset` (8-byte aligned), as one volatile 64-bit access.
    pub fn write_u64(&self, offset: usize, value: u64) -> Result<(), SharedMemError> {
        self.check(offset, 8, 8)?;
        match &self.backing {
            // SAFETY: in bounds and aligned (checked above).
            Backing::Ptr(p) => unsafe { ptr::write_volatile(p.add(offset) as *mut u64, value) },
            Backing::Io(io, base) => io.write(base + offset as u64, &value.to_le_bytes()),
        }
        Ok(())
    }

    /// Copies `data` to `offset` through volatile writes: 64-bit writes where aligned, then
    /// 32-bit, then bytes, so write-combined BAR mappings see full words.
    pub fn write_bytes(&self, offset: usize, data: &[u8]) -> Result<(), SharedMemError> {
        self.check(offset, data.len(), 1)?;
        let p = match &self.backing {
            Backing::Ptr(p) => *p,
            Backing::Io(io, base) => {
                io.write(base + offset as u64, data);
                return Ok(());
            }
        };
        let mut i = 0;
        while i < data.len() {
            let at = offset + i;
            let left = data.len() - i;
            let addr = (p as usize).wrapping_add(at);
            if addr.is_multiple_of(8) && left >= 8 {
                let mut w = [0u8; 8];
                w.copy_from_slice(&data[i..i + 8]);
                // SAFETY: at..at+8 is inside the checked range and 8-byte aligned.
                unsafe { ptr::write_volatile(p.add(at) as *mut u64, u64::from_le_bytes(w)) };
                i += 8;
            } else if addr.is_multiple_of(4) && left >= 4 {
                let w = u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
                // SAFETY: at..at+4 is inside the checked range and 4-byte aligned.
                unsafe { ptr::write_volatile(p.add(at) as *mut u32, w) };
                i += 4;
            } else {
                // SAFETY: `at` is inside the checked range.
                unsafe { ptr::write_volatile(p.add(at), data[i]) };
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
        match &self.backing {
            Backing::Ptr(p) => {
                for (i, w) in words.iter().enumerate() {
                    // SAFETY: inside the checked, aligned range.
                    unsafe { ptr::write_volatile(p.add(offset + 4 * i) as *mut u32, *w) };
                }
            }
            Backing::Io(io, base) => {
                let mut bytes = alloc::vec::Vec::with_capacity(len);
                for w in words {
                    bytes.extend_from_slice(&w.to_le_bytes());
                }
                io.write(base + offset as u64, &bytes);
            }
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
        match &self.backing {
            Backing::Ptr(p) => {
                for (i, w) in data.chunks_exact(8).enumerate() {
                    let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
                    // SAFETY: inside the checked, aligned range.
                    unsafe { ptr::write_volatile(p.add(offset + 8 * i) as *mut u64, w) };
                }
            }
            Backing::Io(io, base) => io.write(base + offset as u64, data),
        }
        Ok(())
    }

    /// Copies `out.len()` bytes from `offset` with volatile reads (64-bit where aligned).
    pub fn read_bytes(&self, offset: usize, out: &mut [u8]) -> Result<(), SharedMemError> {
        self.check(offset, out.len(), 1)?;
        let p = match &self.backing {
            Backing::Ptr(p) => *p,
            Backing::Io(io, base) => {
                io.read(base + offset as u64, out);
                return Ok(());
            }
        };
        let mut i = 0;
        while i < out.len() {
            let at = offset + i;
            if (p as usize).wrapping_add(at).is_multiple_of(8) && out.len() - i >= 8 {
                // SAFETY: at..at+8 is inside the checked range and 8-byte aligned.
                let w = unsafe { ptr::read_volatile(p.add(at) as *const u64) };
                out[i..i + 8].copy_from_slice(&w.to_le_bytes());
                i += 8;
            } else {
                // SAFETY: inside the checked range.
                out[i] = unsafe { ptr::read_volatile(p.add(at)) };
                i += 1;
            }
        }
        Ok(())
    }

    /// Fills `len` bytes at `offset` with `value` (64-bit volatile writes where aligned).
    pub fn fill(&self, offset: usize, len: usize, value: u8) -> Result<(), SharedMemError> {
        self.check(offset, len, 1)?;
        const CHUNK: usize = 4096;
        let pattern = [value; CHUNK];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK);
            self.write_bytes(offset + done, &pattern[..n])?;
            done += n;
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

    /// Memory behind an accessor: a byte vector behind a lock.
    #[derive(Debug, Default)]
    struct VecIo(core::cell::RefCell<alloc::vec::Vec<u8>>);
    // SAFETY (test only): used from one thread.
    unsafe impl Sync for VecIo {}
    unsafe impl Send for VecIo {}
    impl MemIo for VecIo {
        fn read(&self, offset: u64, out: &mut [u8]) {
            let v = self.0.borrow();
            out.copy_from_slice(&v[offset as usize..offset as usize + out.len()]);
        }
        fn write(&self, offset: u64, data: &[u8]) {
            let mut v = self.0.borrow_mut();
            v[offset as usize..offset as usize + data.len()].copy_from_slice(data);
        }
    }

    #[test]
    fn accessor_backed_memory_behaves_as_mapped_memory() {
        let io = Arc::new(VecIo(core::cell::RefCell::new(vec![0u8; 64])));
        let mem = SharedMem::from_io(io.clone(), 64, 0x2000);
        assert_eq!(mem.as_ptr(), None);
        mem.write_u32(4, 0xdead_beef).unwrap();
        mem.write_u64(8, 0x0102_0304_0506_0708).unwrap();
        assert_eq!(mem.read_u32(4), Ok(0xdead_beef));
        let s = mem.slice(8, 16).unwrap();
        assert_eq!(s.gpu_va(), 0x2008);
        assert_eq!(s.read_u64(0), Ok(0x0102_0304_0506_0708));
        s.write_words(8, &[1, 2]).unwrap();
        assert_eq!(io.0.borrow()[16..24], [1, 0, 0, 0, 2, 0, 0, 0]);
        assert!(matches!(
            s.read_u32(2),
            Err(SharedMemError::Misaligned { .. })
        ));
        assert!(matches!(
            s.read_u32(16),
            Err(SharedMemError::OutOfBounds { .. })
        ));
        mem.fill(32, 32, 0xab).unwrap();
        let mut out = [0u8; 32];
        mem.read_bytes(32, &mut out).unwrap();
        assert_eq!(out, [0xab; 32]);
    }
}
