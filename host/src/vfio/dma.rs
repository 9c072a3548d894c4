//! DMA memory for the VFIO platform: 2 MiB hugepages (locked, not inherited by children),
//! taken from the system in chunks. Each chunk is mapped in the IOMMU once, when it is taken,
//! at an IOVA fixed for its life, and unmapped once, when it goes back; allocations are runs
//! of 4 KiB pages inside a chunk, at bus address = chunk IOVA + offset. So the IOMMU holds one
//! mapping per chunk, not per allocation: type1's `dma_entry_limit` (65535 by default) bounds
//! the chunks, which the hugepages run out long before, not the allocations. An allocation of
//! less than 2 MiB shares a one-hugepage chunk; a larger one has a chunk of its own. An empty
//! one-hugepage chunk is kept as a spare (one at most) so that a program allocating and freeing
//! in a loop does not map and unmap each time; other empty chunks go back. In no-IOMMU mode
//! the bus addresses are the physical addresses `/proc/self/pagemap` gives.
//!
//! A chunk the IOMMU refuses to unmap is never reused (the device may still reach it): its
//! pages and IOVAs stay reserved and the failure is logged.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::Arc;

use nvbare_core::hal::{DMA_PAGE, DmaMemory};
use nvbare_core::shared::SharedMem;
use nvbare_mmu::VaAllocator;

use super::error::VfioError;
use super::sys::VfioSys;

/// A hugepage: the unit memory is taken from the system in.
pub const HUGEPAGE: usize = 2 << 20;
/// IOVAs preferred: [4 GiB, 512 GiB). Above the 32-bit holes (the x86 MSI window at
/// 0xfee00000 among them), inside the 39 bits every IOMMU translates; cut to the ranges the
/// IOMMU reports usable (`iova.rs`).
pub const IOVA_BASE: u64 = 1 << 32;
/// End of the IOVA window.
pub const IOVA_END: u64 = 1 << 39;

/// How the device reaches memory.
#[derive(Debug)]
pub enum Iommu<F> {
    /// A type1 container.
    Type1 {
        /// The container.
        container: Arc<F>,
    },
    /// An iommufd I/O address space.
    #[cfg(feature = "iommufd")]
    Iommufd {
        /// `/dev/iommu`.
        iommufd: Arc<F>,
        /// The IOAS the device is attached to.
        ioas: u32,
    },
    /// No IOMMU (UNSAFE): bus addresses are physical addresses.
    NoIommuUnsafe,
}

#[derive(Debug)]
struct Chunk {
    ptr: NonNull<u8>,
    len: usize,
    /// The IOVA the whole chunk is mapped at (`None` without an IOMMU).
    iova: Option<u64>,
    /// Free pages, as offsets into the chunk.
    pages: VaAllocator,
    /// Allocations living in the chunk.
    live: usize,
}

#[derive(Debug)]
struct Alloc {
    chunk: u64,
    offset: usize,
    len: usize,
}

/// Hugepage counts from sysfs, for the message when there are too few.
#[derive(Clone, Debug)]
pub struct HugepageCounts {
    /// `.../hugepages-2048kB` under the sysfs root.
    pub dir: PathBuf,
}

impl HugepageCounts {
    fn read(&self, name: &str) -> u64 {
        std::fs::read_to_string(self.dir.join(name))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }
}

/// The DMA allocations of one open device.
#[derive(Debug)]
pub struct DmaPool<S: VfioSys> {
    sys: Arc<S>,
    iommu: Iommu<S::Fd>,
    counts: HugepageCounts,
    /// Chunks by id, in the order they were taken (small allocations fill the oldest first).
    chunks: BTreeMap<u64, Chunk>,
    /// Chunks whose IOMMU unmap failed: kept, never reused, never given back to the system.
    stuck: Vec<Chunk>,
    next_chunk: u64,
    iova: VaAllocator,
    allocs: HashMap<u64, Alloc>,
    next_id: u64,
}

// SAFETY: the chunk pointers are hugepage mappings this pool owns; memory in them is reached
// through `SharedMem` (volatile) only, and the pool's own bookkeeping is plain data.
unsafe impl<S: VfioSys> Send for DmaPool<S> {}

fn round_up(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

/// Zeroes `[ptr, ptr + len)` (`len` a multiple of 8) with volatile stores: the memory lies in
/// a chunk the IOMMU maps, so it is memory the device can reach.
///
/// # Safety
/// The range lies inside one chunk and belongs to no allocation.
unsafe fn zero_volatile(ptr: NonNull<u8>, len: usize) {
    let words = ptr.as_ptr().cast::<u64>();
    for i in 0..len / 8 {
        // SAFETY: inside the range (the caller's contract), 8-byte aligned (pages are).
        unsafe { words.add(i).write_volatile(0) };
    }
}

impl<S: VfioSys> DmaPool<S> {
    /// An empty pool whose chunks take their IOVAs from `iova` (see `iova::window`).
    pub fn new(
        sys: Arc<S>,
        iommu: Iommu<S::Fd>,
        counts: HugepageCounts,
        iova: VaAllocator,
    ) -> Self {
        DmaPool {
            sys,
            iommu,
            counts,
            chunks: BTreeMap::new(),
            stuck: Vec::new(),
            next_chunk: 1,
            iova,
            allocs: HashMap::new(),
            next_id: 1,
        }
    }

    /// Allocations in use.
    pub fn outstanding(&self) -> usize {
        self.allocs.len()
    }

    /// Hugepage chunks held (those kept after a failed unmap included).
    pub fn chunks(&self) -> usize {
        self.chunks.len() + self.stuck.len()
    }

    /// A new chunk of `len` bytes (a multiple of 2 MiB) for an allocation of `bytes`, mapped
    /// in the IOMMU as a whole.
    fn new_chunk(&mut self, len: usize, bytes: usize) -> Result<u64, VfioError> {
        let ptr = self.sys.alloc_hugepages(len).map_err(|source| {
            if source.raw_os_error() == Some(libc::ENOMEM) {
                let free = self.counts.read("free_hugepages");
                let total = self.counts.read("nr_hugepages");
                let needed = (len / HUGEPAGE) as u64;
                VfioError::NoHugepages {
                    bytes,
                    free,
                    total,
                    needed,
                    suggest: total + needed.saturating_sub(free).max(needed),
                }
            } else {
                VfioError::Hugepages { bytes, source }
            }
        })?;
        let iova = match self.map_chunk(ptr, len) {
            Ok(iova) => iova,
            Err(e) => {
                // SAFETY: the mapping just made; nothing uses it and the IOMMU holds none of it.
                if let Err(m) = unsafe { self.sys.munmap(ptr, len) } {
                    log::error!("munmap of a DMA hugepage failed: {m}");
                }
                return Err(e);
            }
        };
        let id = self.next_chunk;
        self.next_chunk += 1;
        self.chunks.insert(
            id,
            Chunk {
                ptr,
                len,
                iova,
                // PANIC: `len` is a non-zero multiple of 2 MiB.
                pages: VaAllocator::new(0, len as u64).expect("chunk"),
                live: 0,
            },
        );
        Ok(id)
    }

    /// Maps the chunk `[ptr, ptr + len)` in the IOMMU at a new IOVA (2 MiB aligned), or
    /// nothing without an IOMMU.
    fn map_chunk(&mut self, ptr: NonNull<u8>, len: usize) -> Result<Option<u64>, VfioError> {
        if matches!(self.iommu, Iommu::NoIommuUnsafe) {
            return Ok(None);
        }
        let iova = self
            .iova
            .alloc(len as u64, HUGEPAGE as u64)
            .map_err(|_| VfioError::NoIova { bytes: len })?;
        // SAFETY: the chunk stays mapped in this process until `release_chunk` has unmapped it
        // from the IOMMU (or for the process's life if that fails); memory in it is reached
        // through `SharedMem` and `zero_volatile` (volatile) only.
        let mapped = unsafe {
            match &self.iommu {
                Iommu::Type1 { container } => self.sys.dma_map(container, ptr, iova, len),
                #[cfg(feature = "iommufd")]
                Iommu::Iommufd { iommufd, ioas } => {
                    self.sys.ioas_map(iommufd, *ioas, ptr, iova, len)
                }
                Iommu::NoIommuUnsafe => Ok(()),
            }
        };
        if let Err(source) = mapped {
            let _ = self.iova.free(iova, len as u64);
            return Err(VfioError::DmaMap { iova, len, source });
        }
        Ok(Some(iova))
    }

    fn unmap(&self, iova: u64, len: usize) -> std::io::Result<u64> {
        match &self.iommu {
            Iommu::Type1 { container } => self.sys.dma_unmap(container, iova, len),
            #[cfg(feature = "iommufd")]
            Iommu::Iommufd { iommufd, ioas } => self.sys.ioas_unmap(iommufd, *ioas, iova, len),
            Iommu::NoIommuUnsafe => Ok(len as u64),
        }
    }

    /// Gives chunk `id` (holding no allocation) back: unmapped from the IOMMU, then from the
    /// process. If the unmap fails the chunk is kept, never reused.
    fn release_chunk(&mut self, id: u64) {
        let Some(c) = self.chunks.remove(&id) else {
            return;
        };
        if let Some(iova) = c.iova {
            match self.unmap(iova, c.len) {
                Ok(n) if n == c.len as u64 => {
                    if let Err(e) = self.iova.free(iova, c.len as u64) {
                        log::error!("IOVA bookkeeping: {e}");
                    }
                }
                r => {
                    // The device may still reach these pages: never reuse them.
                    log::error!(
                        "IOMMU unmap of {:#x} bytes at IOVA {iova:#x} failed ({r:?}); the \
                         pages stay reserved",
                        c.len
                    );
                    self.stuck.push(c);
                    return;
                }
            }
        }
        // SAFETY: no allocation lives in the chunk any more, and the IOMMU maps none of it.
        if let Err(e) = unsafe { self.sys.munmap(c.ptr, c.len) } {
            log::error!("munmap of a DMA hugepage failed: {e}");
        }
    }

    /// Pages for `len` bytes: from a one-hugepage chunk with room for small allocations, from
    /// a new chunk otherwise.
    fn take_pages(&mut self, len: usize, bytes: usize) -> Result<(u64, usize), VfioError> {
        if len < HUGEPAGE {
            for (&id, c) in &mut self.chunks {
                if c.len == HUGEPAGE
                    && let Ok(off) = c.pages.alloc(len as u64, DMA_PAGE as u64)
                {
                    c.live += 1;
                    // CAST: below the chunk's length.
                    return Ok((id, off as usize));
                }
            }
        }
        let id = self.new_chunk(round_up(len, HUGEPAGE), bytes)?;
        // PANIC: the chunk was just made at least `len` long.
        let c = self.chunks.get_mut(&id).expect("new chunk");
        let off = c
            .pages
            .alloc(len as u64, DMA_PAGE as u64)
            .expect("fresh chunk");
        c.live += 1;
        // CAST: below the chunk's length.
        Ok((id, off as usize))
    }

    /// Returns pages to their chunk; an emptied chunk goes back unless it is the one spare.
    fn give_pages(&mut self, chunk: u64, offset: usize, len: usize) {
        let Some(c) = self.chunks.get_mut(&chunk) else {
            return;
        };
        if let Err(e) = c.pages.free(offset as u64, len as u64) {
            log::error!("DMA page bookkeeping: {e}");
        }
        c.live -= 1;
        if c.live > 0 {
            return;
        }
        let small = c.len == HUGEPAGE;
        let spare_exists = self
            .chunks
            .iter()
            .any(|(&id, o)| id != chunk && o.len == HUGEPAGE && o.live == 0);
        if !small || spare_exists {
            self.release_chunk(chunk);
        }
    }

    /// The bus address of every page of `[offset, offset + len)` in `chunk`.
    fn bus_pages(&self, chunk: &Chunk, offset: usize, len: usize) -> Result<Vec<u64>, VfioError> {
        let pages = len / DMA_PAGE;
        if let Some(iova) = chunk.iova {
            return Ok((0..pages)
                .map(|i| iova + (offset + i * DMA_PAGE) as u64)
                .collect());
        }
        let mut bus = Vec::with_capacity(pages);
        for i in 0..pages {
            let va = chunk.ptr.as_ptr() as usize + offset + i * DMA_PAGE;
            let e = self.sys.pagemap_entry(va).map_err(VfioError::Pagemap)?;
            let pfn = e & ((1 << 55) - 1);
            if e >> 63 == 0 || pfn == 0 {
                return Err(VfioError::NoPhysicalAddress);
            }
            bus.push(pfn * DMA_PAGE as u64);
        }
        Ok(bus)
    }

    /// `bytes` of zeroed memory the device can reach (see `Platform::dma_alloc`).
    pub fn alloc(&mut self, bytes: usize, contiguous: bool) -> Result<DmaMemory, VfioError> {
        let len = round_up(bytes.max(1), DMA_PAGE);
        let (chunk, offset) = self.take_pages(len, bytes)?;
        // PANIC: `take_pages` returned a live chunk.
        let c = &self.chunks[&chunk];
        // SAFETY: `offset + len` lies inside the chunk (its page allocator says so).
        let ptr = unsafe { NonNull::new_unchecked(c.ptr.as_ptr().add(offset)) };
        let bus = self.bus_pages(c, offset, len).and_then(|bus| {
            if contiguous && !bus.windows(2).all(|w| w[1] == w[0] + DMA_PAGE as u64) {
                Err(VfioError::NotContiguous { bytes })
            } else {
                Ok(bus)
            }
        });
        let bus_pages = match bus {
            Ok(b) => b,
            Err(e) => {
                self.give_pages(chunk, offset, len);
                return Err(e);
            }
        };
        // SAFETY: these pages lie in the chunk and belong to no allocation; the device does
        // not use them (a freed allocation's last device use came before its free).
        unsafe { zero_volatile(ptr, len) };
        let id = self.next_id;
        self.next_id += 1;
        // SAFETY: the pages stay mapped until `free(id)` (or the pool's drop), which the
        // Platform contract puts after the last use of this memory.
        let cpu = unsafe { SharedMem::from_raw(ptr.as_ptr(), len, bus_pages[0]) };
        self.allocs.insert(id, Alloc { chunk, offset, len });
        Ok(DmaMemory { cpu, bus_pages, id })
    }

    /// Frees allocation `id`: its pages go back to its chunk, which stays mapped.
    pub fn free(&mut self, id: u64) {
        let Some(a) = self.allocs.remove(&id) else {
            log::error!("dma_free of an unknown allocation {id}");
            return;
        };
        self.give_pages(a.chunk, a.offset, a.len);
    }

    /// Frees every allocation and gives every chunk back (the device is stopped).
    pub fn free_all(&mut self) {
        let ids: Vec<u64> = self.allocs.keys().copied().collect();
        for id in ids {
            self.free(id);
        }
        let chunks: Vec<u64> = self.chunks.keys().copied().collect();
        for id in chunks {
            self.release_chunk(id);
        }
    }
}

impl<S: VfioSys> Drop for DmaPool<S> {
    fn drop(&mut self) {
        self.free_all();
        // Chunks still held are pages an unmap failed for: released with the process, not
        // here, while the IOMMU may still point at them.
        if !self.stuck.is_empty() {
            log::error!(
                "{} DMA hugepage chunk(s) kept after failed unmaps",
                self.stuck.len()
            );
        }
    }
}
