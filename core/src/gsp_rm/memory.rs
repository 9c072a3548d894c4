//! The memory manager of the VFIO path: nobody but nvbare places memory on a GPU it booted
//! itself. VRAM comes from our buddy allocator below what the firmware reserved
//! (`Gsp::usable_vram_end`), host memory from the platform's DMA allocator; both are mapped
//! at GPU virtual addresses from our VA allocator, in one address space whose page tables
//! (`nvbare_mmu`, ver3 on Hopper and Blackwell) live at the bottom of VRAM and are written
//! through BAR1 or PRAMIN ([`super::vram`]), one TLB invalidate per map or unmap. CPU views
//! of VRAM are BAR1 slices (at the VRAM address, not at the GPU VA); host memory's CPU view is
//! the DMA mapping.
//!
//! VRAM layout, inside the FB region GSP-RM reports for clients ([`usable_vram`]):
//! `[base, base + TABLES)` page tables; the rest everything else, the part BAR1 reaches kept
//! for memory the CPU must see when BAR1 is smaller than VRAM.

use alloc::vec::Vec;

use nvbare_gsp::rm::ctrl::channel::ReservedPdeLevel;
use nvbare_mmu::{
    AddressSpace, Aperture, MmuError, MmuVersion, PhysAllocator, PhysRange, PteAttributes,
    TableAperture, VaAllocator,
};

use super::error::MemoryError;
use super::vram::{TableMirror, TlbDue, VramWindow, invalidate_tlb};
use crate::boot::static_info::FbRegion;
use crate::gpu::{Buffer, MemoryRequest, Placement};
use crate::hal::{Bar0, DMA_PAGE, DmaMemory, Platform};

/// Bytes of VRAM for page tables, at the bottom of the usable range. 8192 tables of 4 KiB: with 2 MiB
/// pages that maps far more than any GPU's VRAM and host memory together.
pub const TABLES: u64 = 32 << 20;
/// The GPU VA range buffers are placed in: above 64 GiB (a null or small pointer faults),
/// below the shared and local memory windows `GpuConfig` places at 0x7293_0000_0000.
pub const VA_RANGE: (u64, u64) = (0x10_0000_0000, 0x7000_0000_0000);
/// GSP-RM's server-reserved range: 512 MiB, alone under its PD2 entry (256 GiB), outside
/// [`VA_RANGE`], so whatever GSP-RM writes below the levels it is handed touches nothing of
/// ours (tinygrad reserves the same size).
pub const SERVER_RESERVED: (u64, u64) = (0x7100_0000_0000, 512 << 20);
/// Directory levels handed to GSP-RM for the server-reserved range (tinygrad's 3).
pub const SERVER_RESERVED_LEVELS: usize = 3;

/// Where a buffer's pages are.
#[derive(Debug)]
pub enum Backing {
    /// VRAM from `pa` on (contiguous).
    Vram {
        /// Physical address.
        pa: u64,
    },
    /// Host memory from the platform.
    Host(DmaMemory),
}

/// The RM emulation's record of one buffer: its pages and its GPU VA range.
#[derive(Debug)]
pub struct GspMemory {
    /// The pages. Private: host memory's `DmaMemory` holds the CPU mapping, and a clone of
    /// it taken from here could outlive the free.
    backing: Backing,
    /// Bytes mapped (the request rounded up to the page size used).
    pub size: u64,
    /// The GPU VA it is mapped at.
    pub va: u64,
    cpu_view: bool,
}

impl GspMemory {
    /// The VRAM address of byte `offset`, for VRAM.
    pub fn vram_addr(&self, offset: u64) -> Option<u64> {
        match self.backing {
            Backing::Vram { pa } if offset < self.size => Some(pa + offset),
            _ => None,
        }
    }

    /// The bus address of byte `offset`, for host memory.
    pub fn bus_addr(&self, offset: u64) -> Option<u64> {
        match &self.backing {
            // CAST: offsets inside a DMA allocation fit usize.
            Backing::Host(d) => d.bus_addr(offset as usize),
            Backing::Vram { .. } => None,
        }
    }
}

/// What is in use now (for leak checks and `nvbare info`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryUse {
    /// Buffers mapped in the VA space.
    pub buffers: usize,
    /// VRAM bytes taken (buffers and physical-only allocations; page tables not counted).
    pub vram_bytes: u64,
    /// Host-memory bytes mapped.
    pub host_bytes: u64,
    /// DMA allocations held.
    pub dma_allocations: usize,
    /// Page tables (the root included).
    pub page_tables: usize,
    /// GPU VA bytes taken.
    pub va_bytes: u64,
}

/// VRAM for everything but page tables: the part BAR1 reaches, and the rest.
#[derive(Debug)]
struct Vram {
    /// The part BAR1 reaches (none when BAR1 ends below the page tables' end).
    visible: Option<PhysAllocator>,
    hidden: Option<PhysAllocator>,
    split: u64,
    free_at_start: u64,
}

impl Vram {
    fn free_bytes(&self) -> u64 {
        self.visible.as_ref().map_or(0, |v| v.free_bytes())
            + self.hidden.as_ref().map_or(0, |h| h.free_bytes())
    }

    /// The largest block BAR1 reaches.
    fn largest_visible_block(&self) -> u64 {
        self.visible.as_ref().map_or(0, |v| v.largest_free_block())
    }

    fn alloc(&mut self, size: u64, align: u64, cpu: bool) -> Result<u64, MmuError> {
        let none_visible = MmuError::OutOfMemory {
            allocator: "physical (BAR1-visible)",
            requested: size,
            align,
            free: 0,
        };
        let visible = |v: &mut Option<PhysAllocator>| match v {
            Some(v) => v.alloc(size, align),
            None => Err(none_visible),
        };
        match &mut self.hidden {
            Some(h) if !cpu => h.alloc(size, align).or_else(|_| visible(&mut self.visible)),
            _ => visible(&mut self.visible),
        }
    }

    fn free(&mut self, pa: u64, size: u64) -> Result<(), MmuError> {
        match (&mut self.hidden, &mut self.visible) {
            (Some(h), _) if pa >= self.split => h.free(pa, size),
            (_, Some(v)) => v.free(pa, size),
            (Some(h), None) => h.free(pa, size),
            (None, None) => Err(MmuError::OutsideAllocator { addr: pa, size }),
        }
    }
}

type Space = AddressSpace<TableMirror, PhysAllocator, TlbDue>;

/// VRAM, GPU VAs, the page tables, and the CPU's window onto VRAM.
pub struct MemoryManager {
    vram: Vram,
    va: VaAllocator,
    space: Space,
    window: VramWindow,
    buffers: usize,
    host_bytes: u64,
    dma_allocations: usize,
}

impl core::fmt::Debug for MemoryManager {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MemoryManager")
            .field("use", &self.in_use())
            .finish_non_exhaustive()
    }
}

fn exhausted(what: &'static str) -> impl FnOnce(MmuError) -> MemoryError {
    move |source| MemoryError::Exhausted { what, source }
}

/// The page size (and alignment) a buffer of `size` bytes is mapped with.
fn granule(size: u64) -> u64 {
    match size {
        s if s >= 2 << 20 => 2 << 20,
        s if s >= 64 << 10 => 64 << 10,
        _ => 4 << 10,
    }
}

impl MemoryManager {
    /// VRAM `usable` (page tables at the bottom), one address space of `version`, the CPU
    /// reaching VRAM through `window`.
    pub fn new(
        usable: core::ops::Range<u64>,
        version: MmuVersion,
        window: VramWindow,
    ) -> Result<Self, MemoryError> {
        let base = usable.start.next_multiple_of(2 << 20);
        let end = usable.end & !((2 << 20) - 1);
        let too_small = MemoryError::Exhausted {
            what: "VRAM",
            source: MmuError::OutOfMemory {
                allocator: "physical",
                requested: 2 * TABLES,
                align: 0,
                free: end,
            },
        };
        if end < base + 2 * TABLES {
            return Err(too_small);
        }
        let tables_end = base + TABLES;
        // BAR1 reaches [0, bar1): VRAM above the page tables and below it is CPU-visible. A
        // BAR1 that ends below the tables' end (or none, PRAMIN) leaves none visible.
        let bar1 = window.mapped_len() & !((2 << 20) - 1);
        let split = bar1.clamp(tables_end, end);
        let visible = if split > tables_end {
            Some(PhysAllocator::new(tables_end, split - tables_end).map_err(exhausted("VRAM"))?)
        } else {
            None
        };
        let hidden = if split < end {
            Some(PhysAllocator::new(split, end - split).map_err(exhausted("VRAM"))?)
        } else {
            None
        };
        let tables = PhysAllocator::new(base, TABLES).map_err(exhausted("a page table"))?;
        let space = AddressSpace::new(
            version,
            TableAperture::Video,
            TableMirror::new(base, tables_end),
            tables,
            TlbDue::default(),
        )
        .map_err(MemoryError::PageTables)?;
        let va = VaAllocator::new(VA_RANGE.0, VA_RANGE.1 - VA_RANGE.0)
            .map_err(exhausted("GPU virtual addresses"))?;
        let mut vram = Vram {
            visible,
            hidden,
            split,
            free_at_start: 0,
        };
        vram.free_at_start = vram.free_bytes();
        Ok(Self {
            vram,
            va,
            space,
            window,
            buffers: 0,
            host_bytes: 0,
            dma_allocations: 0,
        })
    }

    /// What is in use.
    pub fn in_use(&self) -> MemoryUse {
        MemoryUse {
            buffers: self.buffers,
            vram_bytes: self.vram.free_at_start - self.vram.free_bytes(),
            host_bytes: self.host_bytes,
            dma_allocations: self.dma_allocations,
            page_tables: self.space.table_count(),
            va_bytes: (VA_RANGE.1 - VA_RANGE.0) - self.va.free_bytes(),
        }
    }

    /// The CPU's window onto VRAM.
    pub fn window(&self) -> &VramWindow {
        &self.window
    }

    /// The root page directory's VRAM address and entry count (for `SET_PAGE_DIRECTORY`).
    pub fn root(&self) -> (u64, u32) {
        let root = self.space.format().directories[0];
        // CAST: a root directory has at most 512 entries.
        (self.space.root().addr, root.entries() as u32)
    }

    /// The directory tables above GSP-RM's server-reserved range, created and pinned, as
    /// `NV90F1_CTRL_VASPACE_COPY_SERVER_RESERVED_PDES` describes them (aperture 1: video
    /// memory; `pageShift`: the VA one entry of the level covers).
    pub fn server_reserved_levels<P: Platform>(
        &mut self,
        bar0: &P,
    ) -> Result<Vec<ReservedPdeLevel>, MemoryError> {
        let levels = self
            .space
            .pin_directories(SERVER_RESERVED.0, SERVER_RESERVED_LEVELS)
            .map_err(MemoryError::PageTables)?;
        self.commit(bar0)?;
        Ok(levels
            .iter()
            .map(|(level, at)| ReservedPdeLevel {
                phys_address: at.addr,
                size: level.table_bytes(),
                aperture: 1,
                // CAST: VA shifts are below 64.
                page_shift: level.va_shift as u8,
                _pad0: [0; 3],
            })
            .collect())
    }

    /// Writes the page tables changed since the last commit to VRAM and invalidates the
    /// TLBs once.
    pub fn commit<P: Platform>(&mut self, bar0: &P) -> Result<(), MemoryError> {
        let due = core::mem::take(&mut self.space.tlb_mut().0);
        if !self.space.memory().is_dirty() && !due {
            return Ok(());
        }
        self.flush_tables(bar0)?;
        invalidate_tlb(bar0)
    }

    fn flush_tables<P: Bar0>(&mut self, bar0: &P) -> Result<(), MemoryError> {
        let window = self.window.clone();
        self.space.memory_mut().flush(bar0, &window)
    }

    /// VRAM for GSP-RM only (instance blocks, method buffers, context buffers GSP-RM reaches
    /// physically): `size` bytes aligned to `align`, not mapped.
    pub fn alloc_phys(&mut self, size: u64, align: u64) -> Result<u64, MemoryError> {
        self.vram
            .alloc(size, align.max(4096), false)
            .map_err(exhausted("VRAM"))
    }

    /// Gives back [`Self::alloc_phys`] memory.
    pub fn free_phys(&mut self, pa: u64, size: u64) {
        if let Err(e) = self.vram.free(pa, size) {
            log::warn!("VRAM {pa:#x}+{size:#x} could not be freed: {e}");
        }
    }

    /// Zeroes VRAM `[pa, pa + len)` through the window.
    pub fn zero<P: Bar0>(&self, bar0: &P, pa: u64, len: u64) -> Result<(), MemoryError> {
        self.window.zero(bar0, pa, len.next_multiple_of(8))
    }

    /// A buffer as `req` asks: VRAM or host memory, mapped at a fresh VA, with a CPU view
    /// when asked (host memory always has one).
    pub fn alloc<P: Platform>(
        &mut self,
        p: &mut P,
        req: &MemoryRequest,
    ) -> Result<Buffer<GspMemory>, MemoryError> {
        let page = granule(req.size);
        let align = page.max(req.align.next_power_of_two());
        let size = req.size.max(1).next_multiple_of(page);
        let va = self
            .va
            .alloc(size, align)
            .map_err(exhausted("GPU virtual addresses"))?;
        // VRAM the CPU must see where BAR1 does not reach it (no BAR1, PRAMIN only, a
        // small BAR1 that is full) comes from host memory, as tinygrad's small-BAR path
        // does; the buffer's placement says so.
        let placement = match req.placement {
            Placement::Vram if req.cpu_access && !self.cpu_visible_vram(size, align) => {
                log::debug!("{size:#x} bytes of CPU-visible VRAM asked for: host memory instead");
                Placement::Host
            }
            other => other,
        };
        let made = match placement {
            Placement::Vram => self.map_vram(p, va, size, align, req.cpu_access),
            Placement::Host => self.map_host(p, va, size, req.contiguous),
        };
        let (backing, cpu) = match made {
            Ok(m) => m,
            Err(e) => {
                let _ = self.va.free(va, size);
                return Err(e);
            }
        };
        self.buffers += 1;
        let cpu_view = cpu.is_some();
        Ok(Buffer::new(
            va,
            size,
            placement,
            cpu,
            GspMemory {
                backing,
                size,
                va,
                cpu_view,
            },
        ))
    }

    /// Whether `size` bytes of VRAM with a CPU view can be had now: BAR1 maps VRAM and its
    /// part of VRAM has a block that large.
    fn cpu_visible_vram(&self, size: u64, align: u64) -> bool {
        matches!(self.window, VramWindow::Bar1(_))
            && self.vram.largest_visible_block() >= size.max(align).next_power_of_two()
    }

    fn map_vram<P: Platform>(
        &mut self,
        p: &P,
        va: u64,
        size: u64,
        align: u64,
        cpu: bool,
    ) -> Result<(Backing, Option<crate::shared::SharedMem>), MemoryError> {
        let pa = self
            .vram
            .alloc(size, align, cpu)
            .map_err(exhausted("VRAM"))?;
        let view = if cpu {
            match self.window.view(pa, size, va) {
                Ok(v) => Some(v),
                Err(e) => {
                    self.free_phys(pa, size);
                    return Err(e);
                }
            }
        } else {
            None
        };
        let attrs = PteAttributes::new(Aperture::Video);
        if let Err(e) = self.map(p, va, &[PhysRange::new(pa, size)], attrs) {
            self.free_phys(pa, size);
            return Err(e);
        }
        Ok((Backing::Vram { pa }, view))
    }

    fn map_host<P: Platform>(
        &mut self,
        p: &mut P,
        va: u64,
        size: u64,
        contiguous: bool,
    ) -> Result<(Backing, Option<crate::shared::SharedMem>), MemoryError> {
        // CAST: buffer sizes fit usize on the targets nvbare runs on.
        let dma = p
            .dma_alloc(size as usize, contiguous)
            .map_err(MemoryError::Dma)?;
        let ranges = match bus_ranges(&dma) {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: allocated just above; no view taken, nothing on the GPU maps it.
                unsafe { p.dma_free(dma) };
                return Err(e);
            }
        };
        let attrs = PteAttributes::new(Aperture::SystemCoherent);
        if let Err(e) = self.map(&*p, va, &ranges, attrs) {
            // SAFETY: no view taken; the failed map was rolled back and committed (`map`
            // writes the tables and invalidates the TLB whatever happened), so no PTE of
            // the GPU points at it.
            unsafe { p.dma_free(dma) };
            return Err(e);
        }
        self.dma_allocations += 1;
        self.host_bytes += size;
        let view = dma.cpu.with_gpu_va(va);
        Ok((Backing::Host(dma), Some(view)))
    }

    fn map<P: Platform>(
        &mut self,
        bar0: &P,
        va: u64,
        ranges: &[PhysRange],
        attrs: PteAttributes,
    ) -> Result<(), MemoryError> {
        let mapped = self.space.map(va, ranges, attrs);
        // Whatever the map wrote (also a rolled-back failure) goes to VRAM before the GPU
        // may look.
        self.commit(bar0)?;
        mapped.map(|_| ()).map_err(|e| match e {
            MmuError::OutOfMemory { .. } => MemoryError::Exhausted {
                what: "a page table",
                source: e,
            },
            _ => MemoryError::PageTables(e),
        })
    }

    /// Unmaps and frees a buffer (the caller guarantees the GPU no longer uses it).
    pub fn free<P: Platform>(&mut self, p: &mut P, buf: Buffer<GspMemory>) {
        let m = buf.into_memory();
        if let Err(e) = self.space.unmap(m.va, m.size) {
            log::warn!("unmapping {:#x}+{:#x}: {e}", m.va, m.size);
        }
        if let Err(e) = self.commit(&*p) {
            log::warn!("writing page tables after unmapping {:#x}: {e}", m.va);
        }
        if let Err(e) = self.va.free(m.va, m.size) {
            log::warn!("GPU VA {:#x}+{:#x} could not be freed: {e}", m.va, m.size);
        }
        self.buffers -= 1;
        match m.backing {
            Backing::Vram { pa } => self.free_phys(pa, m.size),
            Backing::Host(dma) => {
                self.dma_allocations -= 1;
                self.host_bytes -= m.size;
                // SAFETY: the buffer was consumed, and with it its CPU view; no other view
                // escapes (`GspMemory::backing` is private, `Buffer::shared` crate-private
                // and the GPU layer drops its slices before it frees the buffer). The pages
                // are unmapped and the TLB invalidated above; the caller guarantees the GPU
                // no longer uses the buffer (`Backend::free_memory`).
                unsafe { p.dma_free(dma) };
            }
        }
        let _ = m.cpu_view;
    }
}

/// The VRAM clients may use: the largest FB region GSP-RM reports that is not protected,
/// less what RM reserved inside it, and below `usable_end` (what the firmware took); all of
/// `[0, usable_end)` when GSP-RM reports no region.
pub fn usable_vram(regions: &[FbRegion], usable_end: u64) -> core::ops::Range<u64> {
    regions
        .iter()
        .filter(|r| !r.protected && r.base < usable_end)
        .map(|r| {
            let end = r.limit.saturating_add(1).saturating_sub(r.reserved);
            r.base..end.min(usable_end)
        })
        .filter(|r| r.start < r.end)
        .max_by_key(|r| r.end - r.start)
        .unwrap_or(0..usable_end)
}

/// The bus address ranges of DMA memory, adjacent pages merged.
fn bus_ranges(d: &DmaMemory) -> Result<Vec<PhysRange>, MemoryError> {
    let mut out: Vec<PhysRange> = Vec::new();
    let page = DMA_PAGE as u64;
    for &bus in &d.bus_pages {
        if !bus.is_multiple_of(page) {
            return Err(MemoryError::BadDmaPage { bus });
        }
        match out.last_mut() {
            Some(r) if r.addr + r.size == bus => r.size += page,
            _ => out.push(PhysRange::new(bus, page)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar1_ending_below_the_page_tables_makes_no_vram_cpu_visible() {
        let window = |len| {
            // SAFETY (test only): the window is never accessed: nothing here writes through it.
            VramWindow::Bar1(unsafe {
                crate::shared::SharedMem::from_raw(core::ptr::null_mut(), len, 0)
            })
        };
        // Usable VRAM from 64 MiB: the tables end at 96 MiB, past a 64 MiB BAR1.
        let usable = (64 << 20)..(4 << 30);
        let mut mm =
            MemoryManager::new(usable.clone(), MmuVersion::Ver3, window(64 << 20)).unwrap();
        assert!(
            !mm.cpu_visible_vram(2 << 20, 2 << 20),
            "BAR1 reaches none of it"
        );
        mm.alloc_phys(1 << 30, 2 << 20)
            .expect("VRAM without a CPU view");
        // A 256 MiB BAR1 reaches [96 MiB, 256 MiB) of it.
        let mm = MemoryManager::new(usable, MmuVersion::Ver3, window(256 << 20)).unwrap();
        assert!(mm.cpu_visible_vram(128 << 20, 2 << 20));
        assert!(!mm.cpu_visible_vram(256 << 20, 2 << 20));
    }

    #[test]
    fn granules_follow_the_size() {
        assert_eq!(granule(1), 4096);
        assert_eq!(granule(64 << 10), 64 << 10);
        assert_eq!(granule(3 << 20), 2 << 20);
    }

    #[test]
    fn clients_get_the_largest_unprotected_region_below_the_firmware() {
        let r = |base, limit, reserved, protected| FbRegion {
            base,
            limit,
            reserved,
            protected,
            compressible: false,
        };
        assert_eq!(usable_vram(&[], 0x1000_0000), 0..0x1000_0000);
        let regions = [
            r(0, 0x0fff_ffff, 0x10_0000, false),
            r(0x1000_0000, 0x1fff_ffff, 0, true),
            r(0x2000_0000, 0x27ff_ffff, 0, false),
        ];
        assert_eq!(usable_vram(&regions, 0x2400_0000), 0..0x0ff0_0000);
        assert_eq!(usable_vram(&regions, 0x0800_0000), 0..0x0800_0000);
    }

    #[test]
    fn adjacent_dma_pages_are_one_range() {
        // SAFETY (test only): a zero-length view is never accessed.
        let cpu = unsafe { crate::shared::SharedMem::from_raw(core::ptr::null_mut(), 0, 0) };
        let d = DmaMemory {
            cpu,
            bus_pages: alloc::vec![0x1000, 0x2000, 0x8000, 0x9000, 0xa000],
            id: 0,
        };
        assert_eq!(
            bus_ranges(&d).unwrap(),
            [
                PhysRange::new(0x1000, 0x2000),
                PhysRange::new(0x8000, 0x3000)
            ]
        );
    }
}
