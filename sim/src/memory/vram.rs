//! The GPU's video memory ([`Vram`]): one sparse mapping the size of the chip's VRAM, whose
//! start may live in a memory file another process maps (a vfio-user client's BAR1).

use super::mapping::Mapping;
use super::{Access, BusFault};

/// The GPU's video memory: sparse, zero at power-on and after reset.
#[derive(Debug)]
pub struct Vram {
    map: Mapping,
    /// The memory file behind the start of `map` when the VRAM is shareable
    /// ([`Vram::shareable`]), and its length.
    file: Option<std::os::fd::OwnedFd>,
    file_len: libc::off_t,
}

impl Vram {
    /// `bytes` of VRAM (nothing is reserved until touched).
    pub fn new(bytes: u64) -> std::io::Result<Vram> {
        let len = usize::try_from(bytes).map_err(|_| std::io::Error::other("VRAM too large"))?;
        Ok(Vram {
            map: Mapping::new(len)?,
            file: None,
            file_len: 0,
        })
    }

    /// `bytes` of VRAM whose first `window` bytes live in a memory file (`memfd_create`) that
    /// another process may map: a vfio-user client maps BAR1 (VRAM in physical mode, at most
    /// `window` bytes of it) from it, so its accesses reach this memory directly. The rest
    /// stays anonymous memory, as [`Vram::new`]'s: a shared file is backed page by page, 4 KiB
    /// at a time, and a read of a page never written allocates it (a first read of untouched
    /// memory measured 5x slower than anonymous memory's here), so only the window pays that.
    pub fn shareable(bytes: u64, window: u64) -> std::io::Result<Vram> {
        use std::os::fd::{FromRawFd, OwnedFd};
        let len = usize::try_from(bytes).map_err(|_| std::io::Error::other("VRAM too large"))?;
        let win = usize::try_from(window.min(bytes))
            .map_err(|_| std::io::Error::other("window too large"))?;
        let size =
            libc::off_t::try_from(win).map_err(|_| std::io::Error::other("window too large"))?;
        let map = Mapping::new(len)?;
        // SAFETY: a NUL-terminated name and valid flags; the call creates a new descriptor.
        let raw = unsafe { libc::memfd_create(c"nvbare-sim-vram".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new descriptor nothing else owns.
        let file = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: sizing our own new file.
        if unsafe { libc::ftruncate(raw, size) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: replaces the first `win` bytes of our own fresh mapping (nothing refers to
        // them yet) with the file; `Mapping`'s drop unmaps the whole range, this part with it.
        let p = unsafe {
            libc::mmap(
                map.ptr.as_ptr().cast(),
                win,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                raw,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Vram {
            map,
            file: Some(file),
            file_len: size,
        })
    }

    /// The memory file of a [`Vram::shareable`] VRAM (byte 0 = VRAM address 0; as long as
    /// its window).
    pub fn file(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::AsFd;
        self.file.as_ref().map(|f| f.as_fd())
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.map.len as u64
    }

    fn check(&self, addr: u64, len: usize, access: Access) -> Result<usize, BusFault> {
        let end = addr.checked_add(len as u64);
        match end {
            Some(end) if end <= self.size() => Ok(addr as usize),
            _ => Err(BusFault::VramRange {
                addr,
                len: len as u64,
                size: self.size(),
                access,
            }),
        }
    }

    /// Reads `out.len()` bytes at physical address `addr`.
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), BusFault> {
        let at = self.check(addr, out.len(), Access::Read)?;
        self.map.read(at, out);
        Ok(())
    }

    /// Writes `data` at physical address `addr`.
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), BusFault> {
        let at = self.check(addr, data.len(), Access::Write)?;
        self.map.write(at, data);
        Ok(())
    }

    /// Reads a little-endian u32.
    pub fn read_u32(&self, addr: u64) -> Result<u32, BusFault> {
        let mut b = [0; 4];
        self.read(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Reads a little-endian u64.
    pub fn read_u64(&self, addr: u64) -> Result<u64, BusFault> {
        let mut b = [0; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Writes a little-endian u32.
    pub fn write_u32(&self, addr: u64, v: u32) -> Result<(), BusFault> {
        self.write(addr, &v.to_le_bytes())
    }

    /// Writes a little-endian u64.
    pub fn write_u64(&self, addr: u64, v: u64) -> Result<(), BusFault> {
        self.write(addr, &v.to_le_bytes())
    }

    /// The CPU pointer of VRAM byte 0: the in-process BAR1 window (BAR1 in physical mode maps
    /// VRAM 1:1). Valid while this `Vram` lives.
    pub fn as_ptr(&self) -> *mut u8 {
        self.map.ptr.as_ptr()
    }

    /// Clears all of VRAM (what a cold reset leaves; pages go back to the OS).
    pub fn clear(&self) {
        use std::os::fd::AsRawFd;
        self.map.discard();
        // A shared file's pages stay while any mapping has them unless the file itself drops
        // them: punching the whole file zeroes it for every mapping, a client's too.
        if let Some(f) = &self.file {
            let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
            // SAFETY: our own file; punching a hole changes only its contents.
            if unsafe { libc::fallocate(f.as_raw_fd(), mode, 0, self.file_len) } != 0 {
                // The same through the mapping (shmem supports both; a file that did neither
                // would keep its old contents, which the tests catch).
                // SAFETY: our own mapping, whose start maps the file.
                unsafe {
                    libc::madvise(
                        self.map.ptr.as_ptr().cast(),
                        self.map.len,
                        libc::MADV_REMOVE,
                    )
                };
            }
        }
    }
}
