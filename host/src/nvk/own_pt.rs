//! "Own page tables" on the kernel-driver path (opt-in, [`super::NvkOptions`]): the VA space
//! is allocated in `SHARED_MANAGEMENT` mode, nvbare builds a ver3 page-table tree with
//! `nvbare_mmu` in VRAM it allocated from RM, and hands RM the top-level directory with
//! `NV0080_CTRL_CMD_DMA_SET_PAGE_DIRECTORY`, as UVM does (`uvm_gpu.c`, 580.x: the
//! `nvUvmInterfaceSetPageDirectory` call after `uvm_page_tree_init`).
//!
//! The split, from `nvos.h` (`NV_VASPACE_ALLOCATION_FLAGS_SHARED_MANAGEMENT`): RM manages
//! `[vaBase, vaBase + vaSize)` (its channels' context buffers) and keeps the root entries
//! covering it; everything else is ours. A ver3 root (PD4) has two entries of 2^56 bytes
//! each. UVM on Hopper gives RM entry 0 (`uvm_hopper.c`: `rm_va_base = 0`, `rm_va_size =
//! 64 PB`) and maps its own tables above 2^56; nvbare cannot: a GPFIFO entry carries 40
//! address bits (`NVC86F_GP_ENTRY1_GET_HI` 7:0, clc86f.h), so pushbuffers must sit below
//! 1 TiB. nvbare gives RM entry 1 (`vaBase` = `vaSize` = 2^56; `gvaspaceReserveSplitVaSpace`
//! then puts GSP-RM's server range at `vasStart + 4 GiB`, gpu_vaspace.c) and maps everything
//! of its own in entry 0, at the VAs the VFIO path uses ([`OWN_VA`]).
//!
//! Physical addresses come from RM (`NV0041_CTRL_CMD_GET_SURFACE_PHYS_ATTR`, `AT_GPU`: the
//! address the GPU uses, an IOVA for system memory). Tables are written through a BAR1 CPU
//! mapping of their VRAM, and every map or unmap ends with `NV0080_CTRL_CMD_DMA_INVALIDATE_TLB`.

use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{Ordering, fence};

use nvbare_core::gpu::{Buffer, MemoryRequest, Placement};
use nvbare_core::shared::SharedMem;
use nvbare_gsp::rm::alloc::{MemoryAllocParams, MemoryVirtualAllocParams};
use nvbare_gsp::rm::alloc_flags::nvos32_type;
use nvbare_gsp::rm::classes as cls;
use nvbare_mmu::{
    AccessError, AddressSpace, Aperture, MapStats, MmuVersion, PageSize, PageSizes,
    PhysAllocator, PhysRange, PteAttributes, TableAddr, TableAperture, TableMemory,
    TlbInvalidate, VaAllocator,
};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::backend::{Nvk, open_gpu_file};
use super::memory::munmap;
use super::rm::{Handle, RmClient};
use super::{NvkError, NvkMemory, flags};

/// `NV0080_CTRL_CMD_DMA_SET_PAGE_DIRECTORY` (ctrl0080dma.h, 580.142).
pub const NV0080_DMA_SET_PAGE_DIRECTORY: u32 = 0x0080_1813;
/// `NV0080_CTRL_CMD_DMA_UNSET_PAGE_DIRECTORY` (ctrl0080dma.h).
pub const NV0080_DMA_UNSET_PAGE_DIRECTORY: u32 = 0x0080_1814;
/// `NV0080_CTRL_CMD_DMA_INVALIDATE_TLB` (ctrl0080dma.h).
pub const NV0080_DMA_INVALIDATE_TLB: u32 = 0x0080_180c;
/// `NV0041_CTRL_CMD_GET_SURFACE_PHYS_ATTR` (ctrl0041.h).
pub const NV0041_GET_SURFACE_PHYS_ATTR: u32 = 0x0041_0103;

/// The VA space's RM-managed part: root entry 1, `[2^56, 2^57)`.
pub const RM_VA: (u64, u64) = (1 << 56, 1 << 56);
/// nvbare's VAs (root entry 0): from 64 GiB (a null or small pointer faults) to
/// 0x7000_0000_0000, below the shared and local memory windows `GpuConfig` places at
/// 0x7293_0000_0000 (the VFIO path's `VA_RANGE`). Allocated lowest first, so pushbuffers stay
/// below 1 TiB.
pub const OWN_VA: (u64, u64) = (0x10_0000_0000, 0x7000_0000_0000 - 0x10_0000_0000);
/// With `NvkOptions::rm_keeps_low`: RM's part is root entry 0 and nvbare's VAs are 128 TiB
/// from 2^56 + 1 TiB (root entry 1).
pub const RM_VA_LOW: (u64, u64) = (0, 1 << 56);
/// nvbare's VAs when RM keeps root entry 0.
pub const OWN_VA_HIGH: (u64, u64) = ((1 << 56) + (1 << 40), 1 << 47);
/// VRAM for page tables: 32 MiB of 4 KiB tables (as the VFIO path's `TABLES`).
pub const TABLES_BYTES: u64 = 32 << 20;

/// `NV0080_CTRL_DMA_SET_PAGE_DIRECTORY_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct SetPageDirectoryParams {
    pub phys_address: u64,
    pub num_entries: u32,
    pub flags: u32,
    pub h_va_space: Handle,
    pub ch_id: u32,
    /// ID + 1, 0 for broadcast.
    pub sub_device_id: u32,
    pub pasid: u32,
}

/// `NV0080_CTRL_DMA_UNSET_PAGE_DIRECTORY_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct UnsetPageDirectoryParams {
    pub h_va_space: Handle,
    pub sub_device_id: u32,
}

/// `NV0080_CTRL_DMA_INVALIDATE_TLB_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct InvalidateTlbParams {
    pub h_va_space: Handle,
    /// `NV0080_CTRL_DMA_INVALIDATE_TLB_ALL` 0:0.
    pub flags: u32,
}

/// `NV0041_CTRL_GET_SURFACE_PHYS_ATTR_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct SurfacePhysAttrParams {
    /// In: offset into the surface; out: its physical address.
    pub mem_offset: u64,
    pub mem_format: u32,
    pub compr_offset: u32,
    pub compr_format: u32,
    /// `NV0041_CTRL_CMD_GET_SURFACE_PHYS_ATTR_APERTURE_{VIDMEM=0,SYSMEM=1}`.
    pub mem_aperture: u32,
    pub gpu_cache_attr: u32,
    pub gpu_p2p_cache_attr: u32,
    /// In: 0 (the GPU's view).
    pub mmu_context: u32,
    pub _pad0: u32,
    /// Bytes physically contiguous from `mem_offset` on.
    pub contig_segment_size: u64,
}

/// `NV0041_CTRL_CMD_GET_SURFACE_PHYS_ATTR_APERTURE_VIDMEM`.
pub const PHYS_APERTURE_VIDMEM: u32 = 0;

/// `SET_PAGE_DIRECTORY` flags: APERTURE_VIDMEM (1:0 = 0), ALL_CHANNELS_TRUE (3:3).
pub const SPD_FLAGS_VIDMEM_ALL_CHANNELS: u32 = 1 << 3;
/// The PASID passed where ATS is off (RM ignores it then; tinygrad's and the VFIO path's value).
pub const NO_PASID: u32 = u32::MAX;

/// Page tables in VRAM, written through a BAR1 CPU mapping of that VRAM.
pub struct Bar1Tables {
    base: u64,
    len: u64,
    cpu: NonNull<u8>,
}

impl Bar1Tables {
    /// `len` bytes of VRAM at physical `base`, CPU-mapped at `cpu`.
    ///
    /// # Safety
    /// `cpu` maps `len` bytes for as long as this value lives, and nothing else writes them.
    pub unsafe fn new(base: u64, len: u64, cpu: NonNull<u8>) -> Self {
        Self { base, len, cpu }
    }

    fn ptr(&self, at: TableAddr, bytes: u64) -> Result<*mut u64, AccessError> {
        let err = AccessError { at, len: bytes };
        if at.aperture != TableAperture::Video || !at.addr.is_multiple_of(8) || at.addr < self.base
        {
            return Err(err);
        }
        let off = at.addr - self.base;
        if off.checked_add(bytes).is_none_or(|end| end > self.len) {
            return Err(err);
        }
        // SAFETY: `off + bytes <= len`, inside the mapping `new` was given.
        // CAST: off < len, a mapping size.
        Ok(unsafe { self.cpu.as_ptr().add(off as usize).cast::<u64>() })
    }

    /// Makes the CPU's write-combined table writes reach VRAM before the GPU is told to walk
    /// them: a full fence drains the write-combining buffers, the read-back flushes the posted
    /// writes on the way.
    pub fn flush(&self) {
        fence(Ordering::SeqCst);
        // SAFETY: the first word of the live mapping; MMIO needs volatile access.
        let _ = unsafe { self.cpu.as_ptr().cast::<u64>().read_volatile() };
    }
}

impl TableMemory for Bar1Tables {
    fn read_u64(&self, at: TableAddr) -> Result<u64, AccessError> {
        let p = self.ptr(at, 8)?;
        // SAFETY: checked in `ptr`; BAR1 is MMIO, so volatile.
        Ok(unsafe { p.read_volatile() })
    }

    fn write_u64s(&mut self, at: TableAddr, values: &[u64]) -> Result<(), AccessError> {
        let p = self.ptr(at, 8 * values.len() as u64)?;
        for (i, v) in values.iter().enumerate() {
            // SAFETY: `ptr` checked the whole run is inside the mapping.
            unsafe { p.add(i).write_volatile(*v) };
        }
        Ok(())
    }
}

/// Records that the TLBs need an invalidate; [`OwnTables::commit`] issues it through RM.
#[derive(Debug, Default)]
pub struct TlbDue(bool);

impl TlbInvalidate for TlbDue {
    fn invalidate(&mut self, _root: TableAddr, _va: u64, _size: u64) {
        self.0 = true;
    }
}

/// nvbare's half of a `SHARED_MANAGEMENT` VA space: the tables, their VRAM, our VA window.
pub struct OwnTables {
    pub vaspace: Handle,
    /// The RM memory object holding the tables.
    pub tables: Handle,
    pub(crate) space: AddressSpace<Bar1Tables, PhysAllocator, TlbDue>,
    pub(crate) va: VaAllocator,
    /// Whether `SET_PAGE_DIRECTORY` took (and `UNSET` is owed).
    pub(crate) set: bool,
    /// With `rm_keeps_low`: the `NV01_MEMORY_VIRTUAL` object RM maps the GPU layer's own
    /// buffers through, in its half of this VA space (0: not used).
    pub(crate) rm_virtual: Handle,
    /// With `rm_keeps_low`: the VAs (in RM's half) the GPU layer's buffers are mapped at.
    pub(crate) rm_va: VaAllocator,
    /// TLB invalidates issued.
    pub invalidates: u64,
    /// The last map's page counts.
    pub last_map: MapStats,
}

impl OwnTables {
    /// An empty ver3 tree in `tables` (VRAM at `pa`, `len` bytes, CPU-mapped at `cpu`).
    ///
    /// # Safety
    /// As [`Bar1Tables::new`].
    pub unsafe fn new(
        vaspace: Handle,
        tables: Handle,
        pa: u64,
        len: u64,
        cpu: NonNull<u8>,
        window: (u64, u64),
    ) -> Result<Self, NvkError> {
        // SAFETY: passed on from the caller.
        let memory = unsafe { Bar1Tables::new(pa, len, cpu) };
        let alloc = PhysAllocator::new(pa, len).map_err(NvkError::Va)?;
        let space = AddressSpace::new(
            MmuVersion::Ver3,
            TableAperture::Video,
            memory,
            alloc,
            TlbDue::default(),
        )
        .map_err(NvkError::Va)?;
        let va = VaAllocator::new(window.0, window.1).map_err(NvkError::Va)?;
        Ok(Self {
            vaspace,
            tables,
            space,
            va,
            set: false,
            rm_virtual: 0,
            rm_va: VaAllocator::new(OWN_VA.0, OWN_VA.1).map_err(NvkError::Va)?,
            invalidates: 0,
            last_map: MapStats::default(),
        })
    }

    /// The root directory's VRAM address and entry count (2 for ver3).
    pub fn root(&self) -> (u64, u32) {
        let entries = self.space.format().directories[0].entries();
        // CAST: a root directory has at most 512 entries.
        (self.space.root().addr, entries as u32)
    }

    /// Root directory entry `i` as it is in VRAM now (entry 1 is RM's once
    /// `SET_PAGE_DIRECTORY` copied it in).
    pub fn root_entry(&self, i: u64) -> Option<u64> {
        self.space.memory().read_u64(self.space.root().offset(8 * i)).ok()
    }

    /// Makes table writes visible and, when a map or unmap wrote any, invalidates the VA
    /// space's TLB entries through RM.
    pub fn commit(&mut self, rm: &RmClient, device: Handle) -> Result<(), NvkError> {
        if !std::mem::take(&mut self.space.tlb_mut().0) {
            return Ok(());
        }
        self.space.memory().flush();
        let mut p = InvalidateTlbParams {
            h_va_space: self.vaspace,
            flags: 0,
        };
        rm.control(device, NV0080_DMA_INVALIDATE_TLB, &mut p)?;
        self.invalidates += 1;
        Ok(())
    }
}

/// The physical ranges of RM memory `handle` (`size` bytes), coalesced, and whether they are
/// in VRAM, from `GET_SURFACE_PHYS_ATTR` per contiguous segment.
pub fn phys_ranges(
    rm: &RmClient,
    handle: Handle,
    size: u64,
) -> Result<(Vec<PhysRange>, bool), NvkError> {
    const PAGE: u64 = 4096;
    let mut out: Vec<PhysRange> = Vec::new();
    let mut vidmem = None;
    let mut off = 0;
    while off < size {
        let mut p = SurfacePhysAttrParams {
            mem_offset: off,
            ..Default::default()
        };
        rm.control(handle, NV0041_GET_SURFACE_PHYS_ATTR, &mut p)?;
        let here = p.mem_aperture == PHYS_APERTURE_VIDMEM;
        if *vidmem.get_or_insert(here) != here {
            return Err(NvkError::OwnTables(
                "RM reported one surface in both VRAM and system memory",
            ));
        }
        // A segment size below a page (or 0: not reported) still covers this page.
        let seg = (p.contig_segment_size & !(PAGE - 1))
            .max(PAGE)
            .min(size - off);
        let pa = p.mem_offset;
        match out.last_mut() {
            Some(last) if last.addr + last.size == pa => last.size += seg,
            _ => out.push(PhysRange::new(pa, seg)),
        }
        off += seg;
    }
    Ok((out, vidmem.unwrap_or(true)))
}

/// Maps `len` bytes of RM memory `handle` anywhere in the CPU's space, through a fresh file
/// (the kernel driver ties one mapping to one file): a GPU file for video memory, a control
/// file for system memory (RM refuses system memory through a GPU file with
/// NV_ERR_INVALID_ARGUMENT, seen on the H200; tinygrad's `_gpu_map_to_cpu(system=True)` does
/// the same).
fn map_to_cpu_any(
    nvk: &Nvk,
    handle: Handle,
    len: u64,
    flags: u32,
    system: bool,
) -> Result<NonNull<u8>, NvkError> {
    let file = if system {
        super::open_dev("/dev/nvidiactl")?
    } else {
        open_gpu_file(&nvk.rm, nvk.card.minor_number)?
    };
    nvk.rm
        .map_memory(file.as_raw_fd(), nvk.device, handle, len, flags)?;
    // SAFETY: a fresh shared mapping of the GPU file that RM just prepared.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            // CAST: buffer sizes fit the address space.
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(NvkError::Mmap {
            what: "RM memory (own page tables)",
            source: std::io::Error::last_os_error(),
        });
    }
    NonNull::new(p.cast()).ok_or(NvkError::Mmap {
        what: "RM memory (own page tables)",
        source: std::io::Error::other("null"),
    })
}

/// The page size nvbare's default allocations (the GPU layer's rings, pushbuffers, arena)
/// get in own-page-tables mode: VRAM by size, host memory 4 KiB.
fn default_page(req: &MemoryRequest, small_only: bool) -> PageSize {
    if small_only {
        return PageSize::Size4K;
    }
    match req.placement {
        Placement::Vram if req.size >= 2 << 20 => PageSize::Size2M,
        Placement::Vram if req.size >= 64 << 10 => PageSize::Size64K,
        _ => PageSize::Size4K,
    }
}

/// The page sizes a mapping made for `page` may use: `page` and those below.
fn sizes_up_to(page: PageSize) -> PageSizes {
    match page {
        PageSize::Size4K => PageSizes::SMALL_ONLY,
        PageSize::Size64K => PageSizes::UP_TO_64K,
        PageSize::Size2M => PageSizes::NO_512M,
        PageSize::Size512M => PageSizes::ALL,
    }
}

impl Nvk {
    /// Own-page-tables mode's VA space binding: page-table VRAM from RM, its physical address,
    /// a BAR1 mapping, an empty ver3 tree, and `SET_PAGE_DIRECTORY` pointing the VA space at
    /// its root (video memory, all channels, subdevice 0).
    pub(crate) fn bind_own(&mut self, device: Handle, vaspace: Handle) -> Result<(), NvkError> {
        let (attr, attr2, aflags) = flags::vram_alloc(true, true);
        let mut p = MemoryAllocParams {
            owner: self.rm.root(),
            type_: nvos32_type::IMAGE,
            flags: aflags,
            attr,
            attr2,
            format: 6,
            size: TABLES_BYTES,
            alignment: 2 << 20,
            limit: TABLES_BYTES - 1,
            ..Default::default()
        };
        let tables = self.rm.alloc(device, cls::NV1_MEMORY_USER, &mut p)?;
        let (ranges, vidmem) = phys_ranges(&self.rm, tables, TABLES_BYTES)?;
        let pa = match ranges.as_slice() {
            [r] if vidmem && r.size == TABLES_BYTES => r.addr,
            _ => {
                return Err(NvkError::OwnTables(
                    "RM's page-table VRAM is not one contiguous VRAM range",
                ));
            }
        };
        let cpu = map_to_cpu_any(
            self,
            tables,
            TABLES_BYTES,
            flags::cpu_map_write_combined(),
            false,
        )?;
        self.cpu_maps.insert(cpu.as_ptr() as u64, TABLES_BYTES);
        // SAFETY: `cpu` maps the TABLES_BYTES of `tables` until the Nvk drops (cpu_maps), and
        // only these tables are written through it.
        let window = if self.options.rm_keeps_low {
            OWN_VA_HIGH
        } else {
            OWN_VA
        };
        let mut own = unsafe { OwnTables::new(vaspace, tables, pa, TABLES_BYTES, cpu, window)? };
        if self.options.rm_keeps_low {
            let mut vp = MemoryVirtualAllocParams {
                limit: 0x1_ffff_ffff_ffff,
                h_va_space: vaspace,
                ..Default::default()
            };
            own.rm_virtual = self.rm.alloc(device, cls::NV01_MEMORY_VIRTUAL, &mut vp)?;
        }
        own.space.memory().flush();
        let (root, entries) = own.root();
        let mut sp = SetPageDirectoryParams {
            phys_address: root,
            num_entries: entries,
            flags: SPD_FLAGS_VIDMEM_ALL_CHANNELS,
            h_va_space: vaspace,
            ch_id: 0,
            sub_device_id: 1,
            pasid: NO_PASID,
        };
        self.rm
            .control(device, NV0080_DMA_SET_PAGE_DIRECTORY, &mut sp)?;
        own.set = true;
        log::info!(
            "own page tables: ver3 root at VRAM {root:#x} ({entries} entries), tables in \
             {pa:#x}+{TABLES_BYTES:#x}; VA space {vaspace:#x} switched"
        );
        self.own = Some(own);
        Ok(())
    }

    /// nvbare's page tables, when this GPU was opened with them.
    pub fn own_tables(&self) -> Option<&OwnTables> {
        self.own.as_ref()
    }

    /// Hands the VA space's top-level directory back to RM (`UNSET_PAGE_DIRECTORY`), before
    /// the tables' VRAM goes with the client. Done on drop when not called.
    pub fn unset_page_directory(&mut self) -> Result<(), NvkError> {
        let Some(own) = self.own.as_mut().filter(|o| o.set) else {
            return Ok(());
        };
        let mut p = UnsetPageDirectoryParams {
            h_va_space: own.vaspace,
            sub_device_id: 1,
        };
        own.set = false;
        self.rm
            .control(self.device, NV0080_DMA_UNSET_PAGE_DIRECTORY, &mut p)
    }

    /// A default allocation in own-page-tables mode.
    pub(crate) fn alloc_own_default(
        &mut self,
        req: &MemoryRequest,
    ) -> Result<Buffer<NvkMemory>, NvkError> {
        let page = default_page(req, self.options.default_pages_4k);
        let cpu = req.cpu_access || req.placement == Placement::Host;
        // VAs aligned as the largest page the buffer could use, whatever pages map it: the
        // GPU layer places local memory, for one, at 128 KiB-aligned VAs (compute.rs).
        let va_align = req.align.max(default_page(req, false).bytes());
        let rm_virtual = self.own.as_ref().map_or(0, |o| o.rm_virtual);
        if rm_virtual == 0 {
            return self
                .alloc_paged(req.size, req.placement, page, cpu, va_align)
                .map(|(b, _)| b);
        }
        // RM keeps the low half: RM maps the GPU layer's buffers there, at VAs nvbare picks
        // (DMA_OFFSET_FIXED, as the default path maps through UVM), VRAM that must be 2 MiB
        // aligned (the channels' ring area) with 2 MiB pages.
        let huge = req.placement == Placement::Vram && req.align >= 2 << 20;
        let bytes = if huge { 2 << 20 } else { page.bytes() };
        let size = req.size.max(1).next_multiple_of(bytes);
        let va = self
            .own
            .as_mut()
            .ok_or(NvkError::OwnTables("the GPU was not opened with own page tables"))?
            .rm_va
            .alloc(size, bytes.max(va_align))
            .map_err(NvkError::Va)?;
        let (handle, premapped) = match self.alloc_backing(size, req.placement, bytes) {
            Ok(b) => b,
            Err(e) => {
                self.free_rm_va(va, size);
                return Err(e);
            }
        };
        let r = self
            .rm
            .map_dma(self.device, rm_virtual, handle, size, flags::gpu_map_fixed(huge), va)
            .and_then(|got| {
                if got == va {
                    Ok(va)
                } else {
                    Err(NvkError::MappedElsewhere { wanted: va, got })
                }
            })
            .and_then(|va| {
                let p = if premapped.is_some() {
                    premapped
                } else if cpu {
                    let c = map_to_cpu_any(
                        self,
                        handle,
                        size,
                        match req.placement {
                            Placement::Vram => flags::cpu_map_write_combined(),
                            Placement::Host => 0,
                        },
                        req.placement == Placement::Host,
                    )?;
                    self.cpu_maps.insert(c.as_ptr() as u64, size);
                    Some(c)
                } else {
                    None
                };
                Ok((va, p))
            });
        match r {
            Ok((va, p)) => {
                // SAFETY: the mapping lives until the buffer is freed; the buffer owns the view.
                let view = p.map(|c| unsafe { SharedMem::from_raw(c.as_ptr(), size as usize, va) });
                Ok(Buffer::new(va, size, req.placement, view, NvkMemory::rm_mapped(handle, p)))
            }
            Err(e) => {
                let _ = self.rm.free(self.device, handle);
                if let Some(p) = premapped {
                    munmap(p, size);
                    self.cpu_maps.remove(&(p.as_ptr() as u64));
                }
                self.free_rm_va(va, size);
                Err(e)
            }
        }
    }

    fn free_rm_va(&mut self, va: u64, size: u64) {
        if let Some(own) = self.own.as_mut() {
            let _ = own.rm_va.free(va, size);
        }
    }

    /// `size` bytes at `placement`, aligned (physically and virtually) to `page` and mapped
    /// by nvbare's PTEs with pages no larger than `page`, at a VA in [`OWN_VA`]; a CPU view when
    /// `cpu` (BAR1 for VRAM). Returns the buffer and how many pages of each size mapped it.
    pub fn alloc_paged(
        &mut self,
        size: u64,
        placement: Placement,
        page: PageSize,
        cpu: bool,
        align: u64,
    ) -> Result<(Buffer<NvkMemory>, MapStats), NvkError> {
        if self.own.is_none() {
            return Err(NvkError::OwnTables("the GPU was not opened with own page tables"));
        }
        let bytes = page.bytes();
        let size = size.max(1).div_ceil(bytes) * bytes;
        let (handle, premapped) = self.alloc_backing(size, placement, bytes)?;
        let r = self.map_own(handle, size, placement, page, cpu, align.max(bytes), premapped);
        if r.is_err() {
            let _ = self.rm.free(self.device, handle);
            if let Some(p) = premapped {
                munmap(p, size);
                self.cpu_maps.remove(&(p.as_ptr() as u64));
            }
        }
        r
    }

    /// The memory of a buffer: for host memory in 4 KiB pages, the process's own pages
    /// described to RM (`NV01_MEMORY_SYSTEM_OS_DESCRIPTOR`, as the default path does), with
    /// their CPU mapping; otherwise an RM allocation ([`Self::alloc_rm_memory`]).
    fn alloc_backing(
        &mut self,
        size: u64,
        placement: Placement,
        align: u64,
    ) -> Result<(Handle, Option<NonNull<u8>>), NvkError> {
        if placement == Placement::Vram || align > 4096 {
            return Ok((self.alloc_rm_memory(size, placement, align)?, None));
        }
        // SAFETY: a fresh anonymous shared mapping; nothing else refers to it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                // CAST: buffer sizes fit the address space.
                size as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        let p = match NonNull::new(p.cast::<u8>()).filter(|_| p != libc::MAP_FAILED) {
            Some(p) => p,
            None => {
                return Err(NvkError::Mmap {
                    what: "host memory (own page tables)",
                    source: std::io::Error::last_os_error(),
                });
            }
        };
        self.next_host_handle += 1;
        let r = self
            .rm
            .alloc_os_descriptor(
                self.dev_file.as_raw_fd(),
                self.device,
                self.next_host_handle,
                flags::host_descriptor(),
                p.as_ptr(),
                size,
            )
            .and_then(|h| {
                // As in `alloc_rm_memory`: RM's mapping makes the pages' IOMMU mapping.
                self.rm
                    .map_dma(self.device, self.virtmem, h, size, flags::gpu_map_anywhere(), 0)
                    .map(|_| h)
                    .inspect_err(|_| {
                        let _ = self.rm.free(self.device, h);
                    })
            });
        match r {
            Ok(h) => {
                self.cpu_maps.insert(p.as_ptr() as u64, size);
                Ok((h, Some(p)))
            }
            Err(e) => {
                munmap(p, size);
                Err(e)
            }
        }
    }

    /// The RM object: contiguous VRAM (`NV1_MEMORY_USER`), or system memory
    /// (`NV01_MEMORY_SYSTEM`, contiguous for pages above 4 KiB), aligned to `align`.
    fn alloc_rm_memory(
        &mut self,
        size: u64,
        placement: Placement,
        align: u64,
    ) -> Result<Handle, NvkError> {
        let ((attr, attr2, aflags), class) = match placement {
            Placement::Vram => (flags::vram_alloc(true, align >= 2 << 20), cls::NV1_MEMORY_USER),
            Placement::Host => (flags::sysmem_alloc(align > 4096), cls::NV01_MEMORY_SYSTEM),
        };
        let mut p = MemoryAllocParams {
            owner: self.rm.root(),
            type_: match placement {
                Placement::Vram => nvos32_type::IMAGE,
                Placement::Host => nvos32_type::NOTIFIER,
            },
            flags: aflags,
            attr,
            attr2,
            format: 6,
            size,
            alignment: align,
            limit: size - 1,
            ..Default::default()
        };
        let handle = self.rm.alloc(self.device, class, &mut p)?;
        if placement == Placement::Host {
            // RM's own GPU mapping (at a VA it picks in its half of the device's default VA
            // space) makes the kernel driver create the pages' IOMMU mapping, so the address
            // GET_SURFACE_PHYS_ATTR reports is the one the GPU may use.
            if let Err(e) = self.rm.map_dma(
                self.device,
                self.virtmem,
                handle,
                size,
                flags::gpu_map_anywhere(),
                0,
            ) {
                let _ = self.rm.free(self.device, handle);
                return Err(e);
            }
        }
        Ok(handle)
    }

    fn map_own(
        &mut self,
        handle: Handle,
        size: u64,
        placement: Placement,
        page: PageSize,
        cpu: bool,
        align: u64,
        premapped: Option<NonNull<u8>>,
    ) -> Result<(Buffer<NvkMemory>, MapStats), NvkError> {
        let (ranges, vidmem) = phys_ranges(&self.rm, handle, size)?;
        if vidmem != (placement == Placement::Vram) {
            return Err(NvkError::OwnTables("RM placed the memory in the other aperture"));
        }
        let cpu_view = if premapped.is_some() {
            premapped
        } else if cpu {
            let caching = match placement {
                Placement::Vram => flags::cpu_map_write_combined(),
                Placement::Host => 0,
            };
            let p = map_to_cpu_any(self, handle, size, caching, placement == Placement::Host)?;
            self.cpu_maps.insert(p.as_ptr() as u64, size);
            Some(p)
        } else {
            None
        };
        let (rm, device) = (&self.rm, self.device);
        let own = self
            .own
            .as_mut()
            .ok_or(NvkError::OwnTables("the GPU was not opened with own page tables"))?;
        let attrs = PteAttributes::new(match placement {
            Placement::Vram => Aperture::Video,
            Placement::Host => Aperture::SystemCoherent,
        });
        let mapped = own.va.alloc(size, align).map_err(NvkError::Va).and_then(|va| {
            own.space.set_page_sizes(sizes_up_to(page));
            let m = own.space.map(va, &ranges, attrs);
            own.space.set_page_sizes(PageSizes::ALL);
            match m {
                Ok(stats) => Ok((va, stats)),
                Err(e) => {
                    let _ = own.va.free(va, size);
                    Err(NvkError::Va(e))
                }
            }
        });
        let (va, stats) = match mapped.and_then(|m| own.commit(rm, device).map(|()| m)) {
            Ok(m) => m,
            Err(e) => {
                // The caller unmaps a premapped view.
                if let Some(p) = cpu_view.filter(|_| premapped.is_none()) {
                    munmap(p, size);
                    self.cpu_maps.remove(&(p.as_ptr() as u64));
                }
                return Err(e);
            }
        };
        own.last_map = stats;
        log::debug!(
            "own map: {size:#x} bytes of {placement:?} at {va:#x} from {} physical ranges \
             (first {:x?}), pages by size {:?}",
            ranges.len(),
            ranges.first(),
            stats.pages_by_size
        );
        let mem = NvkMemory::own(handle, cpu_view);
        // SAFETY: the mapping lives until the buffer is freed, and the buffer owns the view.
        let view = cpu_view.map(|p| unsafe { SharedMem::from_raw(p.as_ptr(), size as usize, va) });
        Ok((Buffer::new(va, size, placement, view, mem), stats))
    }

    /// Frees an own-page-tables buffer: PTEs (and a TLB invalidate), CPU mapping, RM object,
    /// VA range.
    pub(crate) fn free_own(&mut self, va: u64, size: u64, mem: &NvkMemory) {
        if let Some(own) = self.own.as_mut().filter(|_| !mem.rm_mapped) {
            if let Err(e) = own.space.unmap(va, size) {
                log::warn!("own page tables: unmap of {va:#x}+{size:#x} failed: {e}");
            }
            if let Err(e) = own.commit(&self.rm, self.device) {
                log::warn!("own page tables: TLB invalidate failed: {e}");
            }
            let _ = own.va.free(va, size);
        }
        if mem.rm_mapped {
            self.free_rm_va(va, size);
        }
        if let Some(p) = mem.cpu {
            munmap(p, size);
            self.cpu_maps.remove(&(p.as_ptr() as u64));
        }
        let _ = self.rm.free(self.device, mem.handle);
    }
}
