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

use std::ptr::NonNull;
use std::sync::atomic::{Ordering, fence};

use nvbare_mmu::{
    AccessError, AddressSpace, MapStats, MmuVersion, PhysAllocator, PhysRange, TableAddr,
    TableAperture, TableMemory, TlbInvalidate, VaAllocator,
};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::NvkError;
use super::rm::{Handle, RmClient};

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
        self.space
            .memory()
            .read_u64(self.space.root().offset(8 * i))
            .ok()
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

#[cfg(test)]
mod tests {
    use nvbare_mmu::{Aperture, Pde, PteAttributes};

    use super::*;

    /// `words` as a pointer and length for [`Bar1Tables`].
    fn tables(words: &mut [u64]) -> (NonNull<u8>, u64) {
        let len = (words.len() * 8) as u64;
        (NonNull::new(words.as_mut_ptr().cast::<u8>()).unwrap(), len)
    }

    #[test]
    fn bar1_tables_stay_inside_their_window() {
        let mut words = vec![0u64; 512];
        let (p, len) = tables(&mut words);
        {
            // SAFETY: `words` outlives `t` and is not touched while `t` lives.
            let mut t = unsafe { Bar1Tables::new(0x20_0000, len, p) };
            let at = TableAddr::video(0x20_0000 + 8 * 3);
            t.write_u64s(at, &[7, 8]).unwrap();
            assert_eq!(t.read_u64(at.offset(8)).unwrap(), 8);
            // Below, past the end, unaligned, another aperture: all refused.
            assert!(t.read_u64(TableAddr::video(0x1f_fff8)).is_err());
            assert!(
                t.write_u64s(TableAddr::video(0x20_0000 + 4088), &[1, 2])
                    .is_err()
            );
            assert!(t.read_u64(TableAddr::video(0x20_0004)).is_err());
            let sys = TableAddr {
                aperture: TableAperture::SystemCoherent,
                addr: 0x20_0000,
            };
            assert!(t.read_u64(sys).is_err());
        }
        assert_eq!(words[3..5], [7, 8]);
    }

    /// The tree RM is handed: a two-entry ver3 root whose entry 0 (nvbare's half) points at
    /// a PD3 once a buffer is mapped below 2^56, entry 1 (RM's half) untouched; and the TLB
    /// invalidate is owed once per map.
    #[test]
    fn own_tables_map_below_2_56_and_leave_rms_entry_alone() {
        let mut words = vec![0u64; (1 << 20) / 8];
        let base = 0x20_0000;
        let (p, len) = tables(&mut words);
        // SAFETY: `words` outlives `own` and is touched only through it.
        let mut own = unsafe { OwnTables::new(1, 2, base, len, p, OWN_VA) }.unwrap();
        let (root, entries) = own.root();
        assert_eq!((root, entries), (base, 2));
        let va = own.va.alloc(2 << 20, 2 << 20).unwrap();
        assert_eq!(va, OWN_VA.0);
        let stats = own
            .space
            .map(
                va,
                &[PhysRange::new(0x4000_0000, 2 << 20)],
                PteAttributes::new(Aperture::Video),
            )
            .unwrap();
        assert_eq!(stats.pages_by_size, [0, 0, 1, 0]);
        let e0 = own.root_entry(0).unwrap();
        let pd3 = Pde::decode(own.space.format(), e0).expect("entry 0 points at a PD3");
        assert_eq!(pd3.table.aperture, TableAperture::Video);
        assert!((base..base + len).contains(&pd3.table.addr));
        assert_eq!(
            own.root_entry(1),
            Some(0),
            "RM's root entry is RM's to fill"
        );
        assert!(
            std::mem::take(&mut own.space.tlb_mut().0),
            "an invalidate is owed"
        );
    }

    #[test]
    fn rm_halves_are_one_root_entry_each() {
        assert_eq!(RM_VA.0 + RM_VA.1, 1 << 57);
        assert_eq!(RM_VA_LOW, (0, 1 << 56));
        assert!(OWN_VA.0 + OWN_VA.1 <= RM_VA.0);
        assert!(OWN_VA_HIGH.0 >= RM_VA_LOW.1 && OWN_VA_HIGH.0 + OWN_VA_HIGH.1 <= 1 << 57);
    }
}
