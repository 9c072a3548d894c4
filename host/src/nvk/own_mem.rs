//! Own-page-tables mode's memory (`NvkOptions::own_page_tables`, [`super::own_pt`]): binding
//! the VA space to nvbare's tables, and buffers whose physical pages come from RM and whose
//! PTEs nvbare writes (or, when RM keeps root entry 0, that RM maps for the GPU layer).

use std::os::fd::AsRawFd;
use std::ptr::NonNull;

use nvbare_core::gpu::{Buffer, MemoryRequest, Placement};
use nvbare_core::shared::SharedMem;
use nvbare_gsp::rm::alloc::{MemoryAllocParams, MemoryVirtualAllocParams};
use nvbare_gsp::rm::alloc_flags::nvos32_type;
use nvbare_gsp::rm::classes as cls;
use nvbare_mmu::{Aperture, MapStats, PageSize, PageSizes, PteAttributes};

use super::backend::{Nvk, open_gpu_file};
use super::memory::munmap;
use super::own_pt::{
    NO_PASID, NV0080_DMA_SET_PAGE_DIRECTORY, NV0080_DMA_UNSET_PAGE_DIRECTORY, OWN_VA, OWN_VA_HIGH,
    OwnTables, SPD_FLAGS_VIDMEM_ALL_CHANNELS, SetPageDirectoryParams, TABLES_BYTES,
    UnsetPageDirectoryParams, phys_ranges,
};
use super::rm::Handle;
use super::{NvkError, NvkMemory, flags};

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
    super::memory::mmap_shared(len, file.as_raw_fd(), "RM memory (own page tables)")
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
            .ok_or(NvkError::OwnTables(
                "the GPU was not opened with own page tables",
            ))?
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
            .map_dma(
                self.device,
                rm_virtual,
                handle,
                size,
                flags::gpu_map_fixed(huge),
                va,
            )
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
                Ok(Buffer::new(
                    va,
                    size,
                    req.placement,
                    view,
                    NvkMemory::rm_mapped(handle, p),
                ))
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
            return Err(NvkError::OwnTables(
                "the GPU was not opened with own page tables",
            ));
        }
        let bytes = page.bytes();
        let size = size.max(1).div_ceil(bytes) * bytes;
        let (handle, premapped) = self.alloc_backing(size, placement, bytes)?;
        let r = self.map_own(
            (handle, premapped),
            size,
            placement,
            page,
            cpu,
            align.max(bytes),
        );
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
        let p = super::memory::mmap_shared(size, -1, "host memory (own page tables)")?;
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
                    .map_dma(
                        self.device,
                        self.virtmem,
                        h,
                        size,
                        flags::gpu_map_anywhere(),
                        0,
                    )
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
            Placement::Vram => (
                flags::vram_alloc(true, align >= 2 << 20),
                cls::NV1_MEMORY_USER,
            ),
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

    /// Maps `backing` (the RM object, and the CPU mapping it came with if any) with nvbare's
    /// PTEs at a fresh VA aligned to `align`, with pages up to `page`.
    fn map_own(
        &mut self,
        backing: (Handle, Option<NonNull<u8>>),
        size: u64,
        placement: Placement,
        page: PageSize,
        cpu: bool,
        align: u64,
    ) -> Result<(Buffer<NvkMemory>, MapStats), NvkError> {
        let (handle, premapped) = backing;
        let (ranges, vidmem) = phys_ranges(&self.rm, handle, size)?;
        if vidmem != (placement == Placement::Vram) {
            return Err(NvkError::OwnTables(
                "RM placed the memory in the other aperture",
            ));
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
        let own = self.own.as_mut().ok_or(NvkError::OwnTables(
            "the GPU was not opened with own page tables",
        ))?;
        let attrs = PteAttributes::new(match placement {
            Placement::Vram => Aperture::Video,
            Placement::Host => Aperture::SystemCoherent,
        });
        let mapped = own
            .va
            .alloc(size, align)
            .map_err(NvkError::Va)
            .and_then(|va| {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_pages_follow_placement_and_size() {
        let vram = |size| MemoryRequest::new(size, Placement::Vram, true);
        assert_eq!(default_page(&vram(4 << 20), false), PageSize::Size2M);
        assert_eq!(default_page(&vram(512 << 10), false), PageSize::Size64K);
        assert_eq!(default_page(&vram(4 << 10), false), PageSize::Size4K);
        assert_eq!(default_page(&vram(4 << 20), true), PageSize::Size4K);
        let host = MemoryRequest::new(4 << 20, Placement::Host, true);
        assert_eq!(default_page(&host, false), PageSize::Size4K);
    }

    #[test]
    fn a_page_size_allows_itself_and_smaller_only() {
        for page in PageSize::ALL_DESCENDING {
            let sizes = sizes_up_to(page);
            for other in PageSize::ALL_DESCENDING {
                assert_eq!(sizes.contains(other), other <= page, "{page:?} / {other:?}");
            }
        }
    }
}
