//! DMA memory for the VFIO platform: 2 MiB hugepages (locked, not inherited by children)
//! carved into allocations of 4 KiB pages, each allocation mapped in the IOMMU at IOVAs from
//! our own allocator exactly while it is in use. In no-IOMMU mode the bus addresses are the
//! physical addresses `/proc/self/pagemap` gives.
//!
//! An allocation the IOMMU refuses to unmap is never reused (the device may still reach it):
//! its pages and IOVAs stay reserved and the failure is logged.

use std::collections::HashMap;
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
/// IOVAs handed out: [4 GiB, 512 GiB). Above the 32-bit holes (the x86 MSI window at
/// 0xfee00000 among them), inside the 39 bits every IOMMU translates.
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
    /// Free pages, as offsets into the chunk.
    pages: VaAllocator,
    live: usize,
}

#[derive(Debug)]
struct Alloc {
    chunk: u64,
    offset: usize,
    len: usize,
    iova: Option<u64>,
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
    chunks: HashMap<u64, Chunk>,
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

impl<S: VfioSys> DmaPool<S> {
    /// An empty pool.
    pub fn new(sys: Arc<S>, iommu: Iommu<S::Fd>, counts: HugepageCounts) -> Self {
        DmaPool {
            sys,
            iommu,
            counts,
            chunks: HashMap::new(),
            next_chunk: 1,
            // PANIC: constant, aligned, non-empty window.
            iova: VaAllocator::new(IOVA_BASE, IOVA_END - IOVA_BASE).expect("IOVA window"),
            allocs: HashMap::new(),
            next_id: 1,
        }
    }

    /// Allocations in use.
    pub fn outstanding(&self) -> usize {
        self.allocs.len()
    }

    /// Hugepage chunks held.
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

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
        let id = self.next_chunk;
        self.next_chunk += 1;
        self.chunks.insert(
            id,
            Chunk {
                ptr,
                len,
                // PANIC: `len` is a non-zero multiple of 2 MiB.
                pages: VaAllocator::new(0, len as u64).expect("chunk"),
                live: 0,
            },
        );
        Ok(id)
    }

    /// Pages for `len` bytes: from a partly used hugepage for small allocations, from new
    /// hugepages otherwise.
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
        Ok((id, off as usize))
    }

    fn give_pages(&mut self, chunk: u64, offset: usize, len: usize) {
        let Some(c) = self.chunks.get_mut(&chunk) else {
            return;
        };
        if let Err(e) = c.pages.free(offset as u64, len as u64) {
            log::error!("DMA page bookkeeping: {e}");
        }
        c.live -= 1;
        if c.live == 0 {
            let c = self.chunks.remove(&chunk).expect("present");
            // SAFETY: no allocation lives in the chunk any more, and none is mapped in the
            // IOMMU (unmapped before its pages came back).
            if let Err(e) = unsafe { self.sys.munmap(c.ptr, c.len) } {
                log::error!("munmap of a DMA hugepage failed: {e}");
            }
        }
    }

    /// Maps `[ptr, ptr + len)` for the device; returns the bus address of every page.
    fn map(&mut self, ptr: NonNull<u8>, len: usize) -> Result<(Option<u64>, Vec<u64>), VfioError> {
        let pages = len / DMA_PAGE;
        let align = if len >= HUGEPAGE { HUGEPAGE } else { DMA_PAGE } as u64;
        let iova = match &self.iommu {
            Iommu::NoIommuUnsafe => {
                let mut bus = Vec::with_capacity(pages);
                for i in 0..pages {
                    let va = ptr.as_ptr() as usize + i * DMA_PAGE;
                    let e = self.sys.pagemap_entry(va).map_err(VfioError::Pagemap)?;
                    let pfn = e & ((1 << 55) - 1);
                    if e >> 63 == 0 || pfn == 0 {
                        return Err(VfioError::NoPhysicalAddress);
                    }
                    bus.push(pfn * DMA_PAGE as u64);
                }
                return Ok((None, bus));
            }
            _ => self
                .iova
                .alloc(len as u64, align)
                .map_err(|_| VfioError::NoIova { bytes: len })?,
        };
        // SAFETY: the pages stay mapped in this process until `free` has unmapped them from
        // the IOMMU; they are reached only through `SharedMem` (volatile) meanwhile.
        let mapped = unsafe {
            match &self.iommu {
                Iommu::Type1 { container } => self.sys.dma_map(container, ptr, iova, len),
                #[cfg(feature = "iommufd")]
                Iommu::Iommufd { iommufd, ioas } => {
                    self.sys.ioas_map(iommufd, *ioas, ptr, iova, len)
                }
                Iommu::NoIommuUnsafe => unreachable!("handled above"),
            }
        };
        if let Err(source) = mapped {
            let _ = self.iova.free(iova, len as u64);
            return Err(VfioError::DmaMap { iova, len, source });
        }
        Ok((
            Some(iova),
            (0..pages).map(|i| iova + (i * DMA_PAGE) as u64).collect(),
        ))
    }

    fn unmap(&self, iova: u64, len: usize) -> std::io::Result<u64> {
        match &self.iommu {
            Iommu::Type1 { container } => self.sys.dma_unmap(container, iova, len),
            #[cfg(feature = "iommufd")]
            Iommu::Iommufd { iommufd, ioas } => self.sys.ioas_unmap(iommufd, *ioas, iova, len),
            Iommu::NoIommuUnsafe => Ok(len as u64),
        }
    }

    /// `bytes` of zeroed memory the device can reach (see `Platform::dma_alloc`).
    pub fn alloc(&mut self, bytes: usize, contiguous: bool) -> Result<DmaMemory, VfioError> {
        let len = round_up(bytes.max(1), DMA_PAGE);
        let (chunk, offset) = self.take_pages(len, bytes)?;
        // PANIC: `take_pages` returned a live chunk.
        let base = self.chunks[&chunk].ptr;
        // SAFETY: `offset + len` lies inside the chunk (its page allocator says so).
        let ptr = unsafe { NonNull::new_unchecked(base.as_ptr().add(offset)) };
        // SAFETY: these pages belong to no allocation and are in no IOMMU mapping yet: no one
        // else reads or writes them.
        unsafe { ptr.as_ptr().write_bytes(0, len) };
        let (iova, bus_pages) = match self.map(ptr, len) {
            Ok(m) => m,
            Err(e) => {
                self.give_pages(chunk, offset, len);
                return Err(e);
            }
        };
        let id = self.next_id;
        // SAFETY: the pages stay mapped until `free(id)` (or the pool's drop), which the
        // Platform contract puts after the last use of this memory.
        let cpu = unsafe { SharedMem::from_raw(ptr.as_ptr(), len, bus_pages[0]) };
        let mem = DmaMemory { cpu, bus_pages, id };
        self.allocs.insert(
            id,
            Alloc {
                chunk,
                offset,
                len,
                iova,
            },
        );
        self.next_id += 1;
        if contiguous && !mem.is_contiguous() {
            self.free(id);
            return Err(VfioError::NotContiguous { bytes });
        }
        Ok(mem)
    }

    /// Unmaps and frees allocation `id`.
    pub fn free(&mut self, id: u64) {
        let Some(a) = self.allocs.remove(&id) else {
            log::error!("dma_free of an unknown allocation {id}");
            return;
        };
        if let Some(iova) = a.iova {
            match self.unmap(iova, a.len) {
                Ok(n) if n == a.len as u64 => {
                    let _ = self.iova.free(iova, a.len as u64);
                }
                r => {
                    // The device may still reach these pages: never reuse them.
                    log::error!(
                        "IOMMU unmap of {:#x} bytes at IOVA {iova:#x} failed ({r:?}); the \
                         pages stay reserved",
                        a.len
                    );
                    return;
                }
            }
        }
        self.give_pages(a.chunk, a.offset, a.len);
    }

    /// Frees every allocation (the device is stopped).
    pub fn free_all(&mut self) {
        let ids: Vec<u64> = self.allocs.keys().copied().collect();
        for id in ids {
            self.free(id);
        }
    }
}

impl<S: VfioSys> Drop for DmaPool<S> {
    fn drop(&mut self) {
        self.free_all();
        // Chunks still held are pages an unmap failed for: released with the process, not
        // here, while the IOMMU may still point at them.
        if !self.chunks.is_empty() {
            log::error!(
                "{} DMA hugepage chunk(s) kept after failed unmaps",
                self.chunks.len()
            );
        }
    }
}
