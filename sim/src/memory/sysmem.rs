//! Host memory the device may reach ([`SysMem`]): allocations and a vfio-user client's
//! mappings, each registered at a bus address range (what an IOMMU would map), and the BAR1
//! windows of the devices on the same bus (peer-to-peer access reaches their VRAM).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use nvbare_mmu::VaAllocator;

use super::mapping::Mapping;
use super::vram::Vram;
use super::{Access, BusFault};
use crate::device::BAR1_BUS;

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
pub(super) const BUS_GUARD: u64 = 0x10_0000;

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
    pub(super) fn with_window(base: u64, end: u64) -> SysMem {
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
