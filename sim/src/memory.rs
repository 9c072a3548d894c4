//! The simulated GPU's memories and the bus that resolves device addresses.
//!
//! - [`Vram`]: the GPU's video memory, sparse (one `MAP_NORESERVE` anonymous mapping the size
//!   of the chip's VRAM; only pages touched become resident, so 141 GiB costs nothing).
//! - [`SysMem`]: host memory the device may reach: allocations registered with a bus address
//!   range each (what an IOMMU would map). One `SysMem` may serve several simulated GPUs
//!   (tinygrad treats devices behind one server as peers sharing system memory).
//! - [`Bus`]: a device's view: VRAM by physical address, system memory by bus address, and the
//!   BAR1 window (a bus address inside BAR1 reaches VRAM, as peer-to-peer BAR access does).
//!   Any other address is a simulated IOMMU fault ([`BusFault`]), which the caller reports.
//!
//! Both memories are shared with the driver, which writes them from its own thread at any
//! time, as a real device's memory is. Every access here is a volatile copy through a raw
//! pointer into a mapping this module owns; no Rust reference into the memory is ever formed.

use std::collections::BTreeMap;
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use nvbare_mmu::VaAllocator;

use crate::device::BAR1_BUS;

/// A device access that reached no memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BusFault {
    /// A system-memory access to a bus address no DMA mapping covers: an IOMMU fault.
    #[error(
        "IOMMU fault: device {access} of {len} bytes at bus address {addr:#x}, which no DMA \
         mapping covers"
    )]
    Iommu {
        /// Bus address.
        addr: u64,
        /// Length in bytes.
        len: u64,
        /// Read or write.
        access: Access,
    },
    /// A device access to a bus address (host memory, a BAR1) while bus mastering is off in
    /// `PCI_COMMAND`: a device that may not master the bus performs no DMA.
    #[error(
        "device {access} of {len} bytes at bus address {addr:#x} while bus mastering is off \
         (PCI_COMMAND bit 2): the device performs no DMA until the driver turns it on"
    )]
    NoBusMaster {
        /// Bus address.
        addr: u64,
        /// Length in bytes.
        len: u64,
        /// Read or write.
        access: Access,
    },
    /// A VRAM access past the end of VRAM.
    #[error("VRAM {access} of {len} bytes at {addr:#x} runs past the end of VRAM ({size:#x})")]
    VramRange {
        /// Physical VRAM address.
        addr: u64,
        /// Length in bytes.
        len: u64,
        /// VRAM size.
        size: u64,
        /// Read or write.
        access: Access,
    },
}

/// Direction of an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A read.
    Read,
    /// A write.
    Write,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Access::Read => "read",
            Access::Write => "write",
        })
    }
}

/// An anonymous, zero-filled, lazily backed mapping that this module owns.
#[derive(Debug)]
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; all access is volatile through
// raw pointers (see the module doc), which is as sound from any thread.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of zeroed memory, reserving no swap (`MAP_NORESERVE`): pages are
    /// backed when first touched.
    fn new(len: usize) -> std::io::Result<Mapping> {
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

    /// Gives the pages back to the kernel (they read as zero afterwards).
    /// `len` bytes of the file `fd` from byte `offset`, shared with whoever else maps it (a
    /// vfio-user client's guest memory).
    fn from_fd(
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

    fn discard(&self) {
        // SAFETY: our own mapping; MADV_DONTNEED on private anonymous memory zero-fills.
        unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_DONTNEED) };
    }

    /// Copies `out.len()` bytes at `offset` out of the mapping.
    ///
    /// # Panics
    /// If the range is not inside the mapping (callers check it: a panic here is a bug in
    /// this module, not a device access that faulted).
    fn read(&self, offset: usize, out: &mut [u8]) {
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
    fn write(&self, offset: usize, data: &[u8]) {
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

/// One registered stretch of host memory: all of an allocation that is contiguous on the
/// bus, or one page of a scattered one.
#[derive(Debug)]
struct Region {
    /// Bus address of byte 0.
    bus: u64,
    /// The allocation's memory (shared by the pages of a scattered allocation).
    map: Arc<Mapping>,
    /// Where the region starts in `map`, and its length.
    offset: usize,
    len: usize,
    /// The allocation's id (what `free` takes).
    id: u64,
    /// The bus space taken for the whole allocation (guard included), on the region at
    /// offset 0.
    bus_space: Option<(u64, u64)>,
    /// Whether the device may write it (a vfio-user client may map memory read-only).
    writable: bool,
    /// Mapped from a client's file by [`SysMem::map_fd`] (not an allocation of ours).
    from_fd: bool,
}

/// First bus address handed out for host memory: 4 GiB, clear of the 32-bit BARs.
pub const SYSMEM_BUS_BASE: u64 = 0x1_0000_0000;
/// End (exclusive) of the host-memory bus window: the first GPU's BAR1, so a host-memory bus
/// address can never be one that reaches VRAM.
pub const SYSMEM_BUS_END: u64 = BAR1_BUS;
/// Guard between two allocations' bus ranges, so an access that runs off the end of one
/// faults instead of landing in the next.
const BUS_GUARD: u64 = 0x10_0000;

/// Host memory the device may reach, by bus address.
#[derive(Debug)]
pub struct SysMem {
    /// Regions by bus address of byte 0.
    regions: RwLock<BTreeMap<u64, Arc<Region>>>,
    /// Free bus space of the window `[SYSMEM_BUS_BASE, SYSMEM_BUS_END)`; freed ranges are
    /// reused.
    bus_space: Mutex<VaAllocator>,
    /// The window `bus_space` covers.
    window: (u64, u64),
    next_id: AtomicU64,
    /// The BAR1 windows of the devices on this bus: a bus address inside one reaches that
    /// device's VRAM (peer-to-peer through BAR1, as tinygrad maps another GPU's memory).
    bars: RwLock<Vec<BarWindow>>,
}

/// One device's BAR1 on the bus.
#[derive(Debug)]
struct BarWindow {
    base: u64,
    size: u64,
    vram: Arc<Vram>,
}

impl Default for SysMem {
    fn default() -> Self {
        Self::new()
    }
}

/// A host-memory allocation as its owner sees it.
#[derive(Clone, Debug)]
pub struct SysAlloc {
    /// Allocation id.
    pub id: u64,
    /// Bus address of byte 0 (allocations are contiguous on the simulated bus).
    pub bus: u64,
    /// Size in bytes.
    pub len: usize,
    /// The CPU pointer of byte 0 (valid until [`SysMem::free`]).
    pub ptr: *mut u8,
    /// The bus address of each 4 KiB page (consecutive unless [`SysMem::alloc_scattered`]
    /// made it).
    pub pages: Vec<u64>,
}

impl SysMem {
    /// Empty: no DMA mappings; host memory gets bus addresses in
    /// `[SYSMEM_BUS_BASE, SYSMEM_BUS_END)`.
    pub fn new() -> SysMem {
        Self::with_window(SYSMEM_BUS_BASE, SYSMEM_BUS_END)
    }

    /// Empty, handing out bus addresses in `[base, end)` (both 4 KiB aligned, `base < end`).
    fn with_window(base: u64, end: u64) -> SysMem {
        // PANIC: callers pass constants (or test windows) that are aligned and non-empty.
        let bus_space = VaAllocator::new(base, end - base).expect("a valid host-memory window");
        SysMem {
            regions: RwLock::new(BTreeMap::new()),
            bus_space: Mutex::new(bus_space),
            window: (base, end),
            next_id: AtomicU64::new(1),
            bars: RwLock::new(Vec::new()),
        }
    }

    /// Puts a device's BAR1 (`size` bytes at bus address `base`, VRAM 1:1) on the bus
    /// (replacing one at the same base).
    ///
    /// # Panics
    /// If the window overlaps the host-memory window or another device's BAR1: a bus address
    /// must reach one memory only.
    pub fn attach_bar(&self, base: u64, size: u64, vram: Arc<Vram>) {
        let end = base.checked_add(size).expect("BAR1 window wraps the bus");
        let overlaps = |b: u64, e: u64| base < e && b < end;
        let (wb, we) = self.window;
        assert!(
            !overlaps(wb, we),
            "BAR1 [{base:#x}, {end:#x}) overlaps the host-memory bus window [{wb:#x}, {we:#x})"
        );
        let mut b = self.bars.write().unwrap_or_else(|p| p.into_inner());
        b.retain(|w| w.base != base);
        if let Some(w) = b.iter().find(|w| overlaps(w.base, w.base + w.size)) {
            panic!(
                "BAR1 [{base:#x}, {end:#x}) overlaps another device's BAR1 at {:#x}",
                w.base
            );
        }
        b.push(BarWindow { base, size, vram });
    }

    /// Puts `vram`'s BAR1 at `base` instead of wherever it sits now (a guest that places BAR1
    /// itself), or refuses when that range overlaps the host-memory window or another
    /// device's BAR1: a bus address must reach one memory only.
    pub fn move_bar(&self, base: u64, size: u64, vram: &Arc<Vram>) -> Result<(), String> {
        let end = base
            .checked_add(size)
            .ok_or_else(|| format!("BAR1 {base:#x}+{size:#x} wraps the bus"))?;
        let overlaps = |b: u64, e: u64| base < e && b < end;
        let (wb, we) = self.window;
        if overlaps(wb, we) {
            return Err(format!(
                "BAR1 [{base:#x}, {end:#x}) overlaps the host-memory bus window [{wb:#x}, {we:#x})"
            ));
        }
        let mut b = self.bars.write().unwrap_or_else(|p| p.into_inner());
        if let Some(w) = b
            .iter()
            .find(|w| !Arc::ptr_eq(&w.vram, vram) && overlaps(w.base, w.base + w.size))
        {
            return Err(format!(
                "BAR1 [{base:#x}, {end:#x}) overlaps another device's BAR1 at {:#x}",
                w.base
            ));
        }
        b.retain(|w| !Arc::ptr_eq(&w.vram, vram));
        b.push(BarWindow {
            base,
            size,
            vram: vram.clone(),
        });
        Ok(())
    }

    /// Takes the BAR1 at bus address `base` off the bus.
    pub fn detach_bar(&self, base: u64) {
        let mut b = self.bars.write().unwrap_or_else(|p| p.into_inner());
        b.retain(|w| w.base != base);
    }

    /// The VRAM and offset a bus access of `len` bytes at `addr` reaches through a BAR1.
    fn through_bar(&self, addr: u64, len: usize) -> Option<(Arc<Vram>, u64)> {
        let b = self.bars.read().unwrap_or_else(|p| p.into_inner());
        b.iter().find_map(|w| {
            let off = addr.checked_sub(w.base)?;
            (off.checked_add(len as u64)? <= w.size).then(|| (w.vram.clone(), off))
        })
    }

    /// Allocates `len` bytes (rounded up to 4 KiB) of zeroed host memory and maps it for DMA
    /// at a free bus address range of the host-memory window (an error when it is full).
    pub fn alloc(&self, len: usize) -> std::io::Result<SysAlloc> {
        self.alloc_pages(len, true)
    }

    /// [`Self::alloc`], with each 4 KiB page at its own bus address: not consecutive (in
    /// reverse order, a page apart), as an IOMMU may map memory that is not contiguous.
    pub fn alloc_scattered(&self, len: usize) -> std::io::Result<SysAlloc> {
        self.alloc_pages(len, false)
    }

    fn alloc_pages(&self, len: usize, contiguous: bool) -> std::io::Result<SysAlloc> {
        const PAGE: usize = 4096;
        let len = len.max(1).next_multiple_of(PAGE);
        let too_large =
            || std::io::Error::new(std::io::ErrorKind::OutOfMemory, "allocation too large");
        // CAST: usize is 64 bits on the hosts the simulator runs on.
        let span = if contiguous {
            len as u64
        } else {
            (len as u64).checked_mul(2).ok_or_else(too_large)?
        };
        let bus_len = span.checked_add(BUS_GUARD).ok_or_else(too_large)?;
        let base = self
            .bus_space
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .alloc(bus_len, 4096)
            .map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    format!(
                        "the simulated bus has no room for {len} bytes of host memory in \
                         [{:#x}, {:#x}): {e}",
                        self.window.0, self.window.1
                    ),
                )
            })?;
        let map = match Mapping::new(len) {
            Ok(m) => Arc::new(m),
            Err(e) => {
                self.free_bus(base, bus_len);
                return Err(e);
            }
        };
        let ptr = map.ptr.as_ptr();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let n = len / PAGE;
        // CAST: page indices and sizes fit u64.
        let pages: Vec<u64> = if contiguous {
            (0..n).map(|i| base + (i * PAGE) as u64).collect()
        } else {
            (0..n)
                .map(|i| base + (2 * (n - 1 - i) * PAGE) as u64)
                .collect()
        };
        let mut regions = self.regions.write().unwrap_or_else(|p| p.into_inner());
        let region = |bus, offset, len| {
            Arc::new(Region {
                bus,
                map: map.clone(),
                offset,
                len,
                id,
                bus_space: (offset == 0).then_some((base, bus_len)),
                writable: true,
                from_fd: false,
            })
        };
        if contiguous {
            regions.insert(base, region(base, 0, len));
        } else {
            for (i, &bus) in pages.iter().enumerate() {
                regions.insert(bus, region(bus, i * PAGE, PAGE));
            }
        }
        Ok(SysAlloc {
            id,
            bus: pages[0],
            len,
            ptr,
            pages,
        })
    }

    /// Unmaps allocation `id` from the bus and frees it (its bus range may be handed out
    /// again); false if there is none.
    pub fn free(&self, id: u64) -> bool {
        let mut r = self.regions.write().unwrap_or_else(|p| p.into_inner());
        let mut space = None;
        let mut found = false;
        r.retain(|_, reg| {
            if reg.id != id {
                return true;
            }
            found = true;
            space = space.or(reg.bus_space);
            false
        });
        drop(r);
        if let Some((bus, len)) = space {
            self.free_bus(bus, len);
        }
        found
    }

    fn free_bus(&self, bus: u64, len: u64) {
        let freed = self
            .bus_space
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .free(bus, len);
        // Only ranges this allocator handed out come back, each once: a region leaves the map
        // (under its lock) before its range is freed.
        debug_assert!(freed.is_ok(), "bus range {bus:#x}+{len:#x}: {freed:?}");
    }

    /// Maps `len` bytes of the file `fd` from byte `offset` for DMA at bus address `bus` (a
    /// vfio-user client's DMA_MAP: the guest's memory at the IOVA its IOMMU gave it). All of
    /// `bus`, `len` and `offset` must be 4 KiB aligned, the range must not overlap another
    /// mapping, and the file must be at least `offset + len` long. Returns the mapping's id.
    pub fn map_fd(
        &self,
        bus: u64,
        len: u64,
        fd: std::os::fd::BorrowedFd<'_>,
        offset: u64,
        writable: bool,
    ) -> std::io::Result<u64> {
        use std::io::{Error, ErrorKind};
        const PAGE: u64 = 4096;
        let bad = |m: String| Error::new(ErrorKind::InvalidInput, m);
        if len == 0 || !bus.is_multiple_of(PAGE) || !len.is_multiple_of(PAGE) {
            return Err(bad(format!(
                "DMA mapping {bus:#x}+{len:#x} is empty or not 4 KiB aligned"
            )));
        }
        if !offset.is_multiple_of(PAGE) {
            return Err(bad(format!("file offset {offset:#x} is not 4 KiB aligned")));
        }
        let end = bus
            .checked_add(len)
            .ok_or_else(|| bad(format!("DMA mapping {bus:#x}+{len:#x} wraps")))?;
        let file_end = offset
            .checked_add(len)
            .ok_or_else(|| bad(format!("file range {offset:#x}+{len:#x} wraps")))?;
        let ulen = usize::try_from(len).map_err(|_| bad("mapping too large".into()))?;
        // SAFETY: fstat on a descriptor the caller holds open, into a zeroed struct.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::fstat(std::os::fd::AsRawFd::as_raw_fd(&fd), &mut st) } != 0 {
            return Err(Error::last_os_error());
        }
        // CAST: st_size of a regular file is non-negative.
        if (st.st_mode & libc::S_IFMT) == libc::S_IFREG && (st.st_size as u64) < file_end {
            return Err(bad(format!(
                "the file is {:#x} bytes, the mapping needs {file_end:#x}",
                st.st_size
            )));
        }
        let mut r = self.regions.write().unwrap_or_else(|p| p.into_inner());
        if let Some((_, o)) = r.range(..end).next_back()
            && o.bus + o.len as u64 > bus
        {
            return Err(bad(format!(
                "DMA mapping {bus:#x}+{len:#x} overlaps the mapping at {:#x}+{:#x}",
                o.bus, o.len
            )));
        }
        let map = Arc::new(Mapping::from_fd(fd, offset, ulen, writable)?);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        r.insert(
            bus,
            Arc::new(Region {
                bus,
                map,
                offset: 0,
                len: ulen,
                id,
                bus_space: None,
                writable,
                from_fd: true,
            }),
        );
        Ok(id)
    }

    /// Removes every mapping [`Self::map_fd`] made that lies inside `[bus, bus + len)`
    /// (`len` 0: all of them); returns how many. The memory is unmapped once no access is
    /// still using it.
    pub fn unmap_fd(&self, bus: u64, len: u64) -> usize {
        let end = bus.saturating_add(len);
        let mut r = self.regions.write().unwrap_or_else(|p| p.into_inner());
        let before = r.len();
        r.retain(|_, reg| {
            // CAST: region lengths fit u64.
            let inside = len == 0 || (reg.bus >= bus && reg.bus + reg.len as u64 <= end);
            !(reg.from_fd && inside)
        });
        before - r.len()
    }

    /// Bytes currently mapped, and the number of allocations (for leak checks).
    pub fn mapped(&self) -> (u64, usize) {
        let r = self.regions.read().unwrap_or_else(|p| p.into_inner());
        (
            r.values().map(|x| x.len as u64).sum(),
            r.values().filter(|x| x.offset == 0).count(),
        )
    }

    fn region(
        &self,
        addr: u64,
        len: usize,
        access: Access,
    ) -> Result<(Arc<Region>, usize), BusFault> {
        let fault = BusFault::Iommu {
            addr,
            len: len as u64,
            access,
        };
        let r = self.regions.read().unwrap_or_else(|p| p.into_inner());
        let (_, reg) = r.range(..=addr).next_back().ok_or(fault)?;
        let off = addr - reg.bus;
        if off
            .checked_add(len as u64)
            .is_none_or(|end| end > reg.len as u64)
            || (access == Access::Write && !reg.writable)
        {
            return Err(fault);
        }
        // CAST: below the region's length, a usize.
        Ok((reg.clone(), reg.offset + off as usize))
    }

    /// Reads `out.len()` bytes at bus address `addr` (one mapping, or one device's BAR1,
    /// must cover all of it).
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), BusFault> {
        match self.region(addr, out.len(), Access::Read) {
            Ok((reg, off)) => {
                reg.map.read(off, out);
                Ok(())
            }
            Err(fault) => match self.through_bar(addr, out.len()) {
                Some((vram, off)) => vram.read(off, out),
                None => Err(fault),
            },
        }
    }

    /// Writes `data` at bus address `addr`.
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), BusFault> {
        match self.region(addr, data.len(), Access::Write) {
            Ok((reg, off)) => {
                reg.map.write(off, data);
                Ok(())
            }
            Err(fault) => match self.through_bar(addr, data.len()) {
                Some((vram, off)) => vram.write(off, data),
                None => Err(fault),
            },
        }
    }

    /// Reads `out.len()` bytes at byte `offset` of allocation `id` (the remote protocol's
    /// SYSMEM_READ).
    pub fn read_alloc(&self, id: u64, offset: u64, out: &mut [u8]) -> Result<(), BusFault> {
        let bus = self.bus_at(id, offset).ok_or(BusFault::Iommu {
            addr: offset,
            len: out.len() as u64,
            access: Access::Read,
        })?;
        self.read(bus, out)
    }

    /// Writes `data` at byte `offset` of allocation `id` (the remote protocol's SYSMEM_WRITE).
    pub fn write_alloc(&self, id: u64, offset: u64, data: &[u8]) -> Result<(), BusFault> {
        let bus = self.bus_at(id, offset).ok_or(BusFault::Iommu {
            addr: offset,
            len: data.len() as u64,
            access: Access::Write,
        })?;
        self.write(bus, data)
    }

    /// The bus address of byte `offset` of allocation `id` (in the page that holds it).
    fn bus_at(&self, id: u64, offset: u64) -> Option<u64> {
        let r = self.regions.read().unwrap_or_else(|p| p.into_inner());
        r.values().find_map(|reg| {
            // CAST: region offsets and lengths fit u64.
            let rel = offset.checked_sub(reg.offset as u64)?;
            (reg.id == id && rel < reg.len as u64).then_some(reg.bus + rel)
        })
    }
}

/// Where a device address points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// VRAM by physical address.
    Vram(u64),
    /// System memory (or a BAR1 window) by bus address.
    Bus(u64),
}

/// A device's view of memory: its VRAM, the shared host memory, and its BAR1 window.
#[derive(Clone, Debug)]
pub struct Bus {
    /// This device's VRAM.
    pub vram: Arc<Vram>,
    /// The host memory the device reaches.
    pub sysmem: Arc<SysMem>,
    /// BAR1's bus address and size: bus addresses inside it reach VRAM at the same offset.
    pub bar1: (u64, u64),
    /// Bus mastering (`PCI_COMMAND` bit 2), as the device's config space has it: every
    /// access to a bus address checks it here, whichever unit makes it.
    master: Arc<AtomicBool>,
    /// Where accesses to bus addresses are recorded, when a trace is attached.
    trace: crate::trace::Tap,
}

impl Bus {
    /// A device's view of `vram`, `sysmem` and its BAR1 at `bar1`, bus mastering off.
    pub fn new(vram: Arc<Vram>, sysmem: Arc<SysMem>, bar1: (u64, u64)) -> Bus {
        Bus {
            vram,
            sysmem,
            bar1,
            master: Arc::new(AtomicBool::new(false)),
            trace: crate::trace::Tap::default(),
        }
    }

    /// The tap DMA is recorded through (shared with the device that owns this bus).
    pub fn trace_tap(&self) -> &crate::trace::Tap {
        &self.trace
    }

    fn traced(&self, addr: u64, len: usize, access: Access) {
        if let Some((t, gpu)) = self.trace.get() {
            t.record_dma(gpu, access, addr, len as u64);
        }
    }

    /// Follows `PCI_COMMAND`'s bus-master bit (on every config write and reset).
    pub fn set_bus_master(&self, on: bool) {
        self.master.store(on, Ordering::Release);
    }

    /// Whether bus addresses may be reached.
    pub fn bus_master(&self) -> bool {
        self.master.load(Ordering::Acquire)
    }

    fn check_master(&self, addr: u64, len: usize, access: Access) -> Result<(), BusFault> {
        if self.bus_master() {
            return Ok(());
        }
        Err(BusFault::NoBusMaster {
            addr,
            len: len as u64,
            access,
        })
    }

    /// Resolves a bus address inside BAR1 to VRAM.
    fn bar1_vram(&self, addr: u64, len: usize) -> Option<u64> {
        let (base, size) = self.bar1;
        let off = addr.checked_sub(base)?;
        (off.checked_add(len as u64)? <= size).then_some(off)
    }

    /// Reads from `at`.
    pub fn read(&self, at: Target, out: &mut [u8]) -> Result<(), BusFault> {
        match at {
            Target::Vram(pa) => self.vram.read(pa, out),
            Target::Bus(addr) => match self
                .check_master(addr, out.len(), Access::Read)
                .map(|()| self.traced(addr, out.len(), Access::Read))
                .map(|()| self.bar1_vram(addr, out.len()))?
            {
                Some(pa) => self.vram.read(pa, out),
                None => self.sysmem.read(addr, out),
            },
        }
    }

    /// Writes to `at`.
    pub fn write(&self, at: Target, data: &[u8]) -> Result<(), BusFault> {
        match at {
            Target::Vram(pa) => self.vram.write(pa, data),
            Target::Bus(addr) => match self
                .check_master(addr, data.len(), Access::Write)
                .map(|()| self.traced(addr, data.len(), Access::Write))
                .map(|()| self.bar1_vram(addr, data.len()))?
            {
                Some(pa) => self.vram.write(pa, data),
                None => self.sysmem.write(addr, data),
            },
        }
    }

    /// Reads a little-endian u32 at `at`.
    pub fn read_u32(&self, at: Target) -> Result<u32, BusFault> {
        let mut b = [0; 4];
        self.read(at, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Reads a little-endian u64 at `at`.
    pub fn read_u64(&self, at: Target) -> Result<u64, BusFault> {
        let mut b = [0; 8];
        self.read(at, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Writes a little-endian u32 at `at`.
    pub fn write_u32(&self, at: Target, v: u32) -> Result<(), BusFault> {
        self.write(at, &v.to_le_bytes())
    }

    /// Writes a little-endian u64 at `at`.
    pub fn write_u64(&self, at: Target, v: u64) -> Result<(), BusFault> {
        self.write(at, &v.to_le_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "mapping read")]
    fn a_mapping_access_out_of_bounds_panics_also_in_release() {
        let m = Mapping::new(4096).unwrap();
        m.read(4090, &mut [0u8; 8]);
    }

    #[test]
    fn shareable_vram_is_one_memory_with_its_file_and_clears_for_every_mapping() {
        use std::os::fd::AsRawFd;
        let vram = Vram::shareable(141 << 30, 16 << 20).expect("141 GiB, 16 MiB of it a file");
        let fd = vram.file().expect("a file").as_raw_fd();
        let len = 1 << 20;
        // SAFETY: a new shared mapping of the VRAM file; used through raw pointers only,
        // unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let p = p.cast::<u64>();
        vram.write_u64(0x800, 0x1122_3344_5566_7788).unwrap();
        // SAFETY: inside the 1 MiB mapping.
        unsafe {
            assert_eq!(p.add(0x100).read_volatile(), 0x1122_3344_5566_7788);
            p.add(0x200).write_volatile(7);
        }
        assert_eq!(vram.read_u64(0x1000).unwrap(), 7);
        vram.clear();
        // SAFETY: as above.
        assert_eq!(
            unsafe { p.add(0x100).read_volatile() },
            0,
            "the other mapping too"
        );
        assert_eq!(vram.read_u64(0x1000).unwrap(), 0);
        // Past the window: anonymous memory, written, read and cleared as any.
        vram.write_u64(100 << 30, 9).unwrap();
        assert_eq!(vram.read_u64(100 << 30).unwrap(), 9);
        vram.clear();
        assert_eq!(vram.read_u64(100 << 30).unwrap(), 0);
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(p.cast(), len) };
        assert!(Vram::new(1 << 20).unwrap().file().is_none());
    }

    #[test]
    fn vram_is_sparse_and_bounded() {
        let vram = Vram::new(141 << 30).expect("a sparse 141 GiB mapping");
        vram.write_u64(100 << 30, 0x1122_3344_5566_7788).unwrap();
        assert_eq!(vram.read_u64(100 << 30), Ok(0x1122_3344_5566_7788));
        assert_eq!(vram.read_u32(5 << 30), Ok(0));
        assert!(matches!(
            vram.read_u32((141 << 30) - 2),
            Err(BusFault::VramRange { .. })
        ));
        vram.clear();
        assert_eq!(vram.read_u64(100 << 30), Ok(0));
    }

    #[test]
    fn host_memory_is_reached_only_through_its_mappings() {
        let sys = SysMem::new();
        let a = sys.alloc(8192).unwrap();
        let b = sys.alloc(100).unwrap();
        assert_eq!(b.len, 4096);
        sys.write(a.bus + 8188, &[1, 2, 3, 4]).unwrap();
        let mut out = [0; 4];
        sys.read_alloc(a.id, 8188, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
        // Off the end of a mapping, into the guard: a fault, not the next allocation.
        assert!(matches!(
            sys.read(a.bus + 8190, &mut out),
            Err(BusFault::Iommu {
                access: Access::Read,
                ..
            })
        ));
        assert!(sys.read(0x1000, &mut out).is_err());
        assert_eq!(sys.mapped(), (12288, 2));
        assert!(sys.free(a.id));
        assert!(sys.read(a.bus, &mut out).is_err(), "unmapped memory faults");
        assert!(!sys.free(a.id));
        assert_eq!(sys.mapped().1, 1);
    }

    #[test]
    fn host_memory_bus_ranges_are_reused_and_never_reach_bar1() {
        let sys = SysMem::new();
        let first = sys.alloc(1 << 30).unwrap();
        assert!(sys.free(first.id));
        // 600 GiB allocated and freed in turn: more than the window below BAR1 holds.
        for _ in 0..600 {
            let a = sys.alloc(1 << 30).unwrap();
            assert!(a.bus >= SYSMEM_BUS_BASE && a.bus + (1 << 30) <= SYSMEM_BUS_END);
            assert_eq!(a.bus, first.bus, "a freed bus range is handed out again");
            assert!(sys.free(a.id));
        }
        assert_eq!(sys.mapped(), (0, 0));
    }

    #[test]
    fn scattered_host_memory_has_a_bus_address_per_page_and_faults_between_them() {
        let sys = SysMem::new();
        let a = sys.alloc_scattered(3 * 4096).unwrap();
        assert_eq!(a.pages.len(), 3);
        assert_eq!(a.bus, a.pages[0]);
        assert!(
            a.pages.windows(2).all(|w| w[1] + 2 * 4096 == w[0]),
            "{:x?}",
            a.pages
        );
        sys.write(a.pages[1] + 8, &[7]).unwrap();
        let mut b = [0u8; 1];
        sys.read_alloc(a.id, 4096 + 8, &mut b).unwrap();
        assert_eq!(b, [7], "page 1 is bytes 4096.. of the allocation");
        let mut two = [0u8; 2];
        assert!(
            sys.read(a.pages[2] + 4095, &mut two).is_err(),
            "no page follows on the bus"
        );
        assert_eq!(sys.mapped(), (3 * 4096, 1));
        assert!(sys.free(a.id));
        assert_eq!(sys.mapped(), (0, 0));
        let c = sys.alloc(4096).unwrap();
        assert_eq!(c.pages, [c.bus]);
    }

    #[test]
    fn a_full_host_memory_window_is_an_error_until_something_is_freed() {
        let base = SYSMEM_BUS_BASE;
        let sys = SysMem::with_window(base, base + 2 * (0x1000 + BUS_GUARD));
        let a = sys.alloc(0x1000).unwrap();
        let b = sys.alloc(0x1000).unwrap();
        assert_eq!(
            b.bus,
            a.bus + 0x1000 + BUS_GUARD,
            "the guard lies between them"
        );
        let full = sys.alloc(0x1000).unwrap_err();
        assert_eq!(full.kind(), std::io::ErrorKind::OutOfMemory);
        assert!(full.to_string().contains("no room"), "{full}");
        assert!(sys.free(a.id));
        assert_eq!(sys.alloc(0x1000).unwrap().bus, a.bus);
    }

    #[test]
    #[should_panic(expected = "overlaps the host-memory bus window")]
    fn a_bar1_inside_the_host_memory_window_is_refused() {
        let sys = SysMem::new();
        sys.attach_bar(
            SYSMEM_BUS_END - (1 << 30),
            2 << 30,
            Arc::new(Vram::new(2 << 30).unwrap()),
        );
    }

    #[test]
    #[should_panic(expected = "overlaps another device's BAR1")]
    fn overlapping_bar1s_are_refused() {
        let sys = SysMem::new();
        let vram = Arc::new(Vram::new(1 << 30).unwrap());
        sys.attach_bar(0x80_0000_0000, 2 << 30, vram.clone());
        sys.attach_bar(0x80_4000_0000, 1 << 30, vram);
    }

    #[test]
    fn bar1_bus_addresses_reach_vram() {
        let bus = Bus::new(
            Arc::new(Vram::new(1 << 30).unwrap()),
            Arc::new(SysMem::new()),
            (0x80_0000_0000, 1 << 30),
        );
        bus.set_bus_master(true);
        bus.write_u32(Target::Bus(0x80_0000_1000), 0xabcd).unwrap();
        assert_eq!(bus.read_u32(Target::Vram(0x1000)), Ok(0xabcd));
        assert!(bus.read_u32(Target::Bus(0x80_4000_0000)).is_err());
    }

    #[test]
    fn bus_addresses_need_bus_mastering_vram_does_not() {
        let sys = Arc::new(SysMem::new());
        let a = sys.alloc(4096).unwrap();
        let bus = Bus::new(
            Arc::new(Vram::new(1 << 20).unwrap()),
            sys.clone(),
            (0x80_0000_0000, 1 << 20),
        );
        assert!(matches!(
            bus.write_u32(Target::Bus(a.bus), 1),
            Err(BusFault::NoBusMaster {
                access: Access::Write,
                ..
            })
        ));
        assert!(matches!(
            bus.read_u32(Target::Bus(0x80_0000_0000)),
            Err(BusFault::NoBusMaster { .. })
        ));
        bus.write_u32(Target::Vram(0x100), 5).unwrap();
        bus.set_bus_master(true);
        bus.write_u32(Target::Bus(a.bus), 1).unwrap();
        assert_eq!(bus.read_u32(Target::Bus(a.bus)), Ok(1));
    }

    #[test]
    fn a_peers_bar1_on_the_shared_bus_reaches_its_vram() {
        let sysmem = Arc::new(SysMem::new());
        let peer = Arc::new(Vram::new(1 << 30).unwrap());
        sysmem.attach_bar(0xc0_0000_0000, 1 << 30, peer.clone());
        let bus = Bus::new(
            Arc::new(Vram::new(1 << 30).unwrap()),
            sysmem.clone(),
            (0x80_0000_0000, 1 << 30),
        );
        bus.set_bus_master(true);
        bus.write_u32(Target::Bus(0xc0_0000_2000), 7).unwrap();
        assert_eq!(peer.read_u32(0x2000), Ok(7));
        assert!(
            bus.read_u32(Target::Bus(0xc0_3fff_fffe)).is_err(),
            "past its end"
        );
        sysmem.detach_bar(0xc0_0000_0000);
        assert!(matches!(
            bus.read_u32(Target::Bus(0xc0_0000_2000)),
            Err(BusFault::Iommu { .. })
        ));
    }
}
