//! The RM flag and attribute words the kernel-driver backend passes, composed
//! from the named fields of `nvbare_gsp::rm` (`nvos.h`).

use nvbare_gsp::rm::alloc_flags::{nvos32_alloc_flags as af, nvos32_attr as a, nvos32_attr2 as a2};
use nvbare_gsp::rm::nvos::{nvos02_flags as f02, nvos33_flags as f33, nvos46_flags as f46};

/// The `NVOS32_ATTR_PHYSICALITY` bits of an attr word (28:27).
pub const PHYSICALITY_MASK: u32 = 3 << 27;

/// `NVOS32` attr/attr2/flags of a video-memory allocation (`NV01_MEMORY_LOCAL_USER`).
pub fn vram_alloc(contiguous: bool, huge: bool) -> (u32, u32, u32) {
    let physicality = if contiguous {
        a::PHYSICALITY_CONTIGUOUS
    } else {
        a::PHYSICALITY_ALLOW_NONCONTIGUOUS
    };
    let mut attr = a::PHYSICALITY.encode(physicality);
    let mut attr2 =
        a2::GPU_CACHEABLE.encode(a2::GPU_CACHEABLE_YES) | a2::ZBC.encode(a2::ZBC_PREFER_NO_ZBC);
    if huge {
        attr |= a::PAGE_SIZE.encode(a::PAGE_SIZE_HUGE);
        attr2 |= a2::PAGE_SIZE_HUGE.encode(a2::PAGE_SIZE_HUGE_2MB);
    }
    let flags = af::MAP_NOT_REQUIRED
        | af::MEMORY_HANDLE_PROVIDED
        | af::ALIGNMENT_FORCE
        | af::IGNORE_BANK_PLACEMENT
        | af::PERSISTENT_VIDMEM;
    (attr, attr2, flags)
}

/// `NVOS32` attr/attr2/flags of uncached system memory (`NV01_MEMORY_SYSTEM`, the
/// channels' error notifier).
pub fn sysmem_uncached_alloc() -> (u32, u32, u32) {
    let attr = a::PHYSICALITY.encode(a::PHYSICALITY_ALLOW_NONCONTIGUOUS)
        | a::LOCATION.encode(a::LOCATION_PCI);
    let attr2 =
        a2::GPU_CACHEABLE.encode(a2::GPU_CACHEABLE_NO) | a2::ZBC.encode(a2::ZBC_PREFER_NO_ZBC);
    let flags = af::MAP_NOT_REQUIRED
        | af::MEMORY_HANDLE_PROVIDED
        | af::ALIGNMENT_FORCE
        | af::IGNORE_BANK_PLACEMENT;
    (attr, attr2, flags)
}

/// `NVOS32` attr/attr2/flags of uncached system memory as [`sysmem_uncached_alloc`] (the
/// combination tinygrad maps to the CPU), physically contiguous when asked (own-page-tables
/// mode's host buffers).
pub fn sysmem_alloc(contiguous: bool) -> (u32, u32, u32) {
    let (attr, attr2, flags) = sysmem_uncached_alloc();
    if !contiguous {
        return (attr, attr2, flags);
    }
    let attr =
        (attr & !a::PHYSICALITY.encode(3)) | a::PHYSICALITY.encode(a::PHYSICALITY_CONTIGUOUS);
    (attr, attr2, flags)
}

/// `NVOS02` flags describing pinned host memory (OS descriptor): non-contiguous,
/// cached, not mapped by RM.
pub fn host_descriptor() -> u32 {
    f02::PHYSICALITY.encode(f02::PHYSICALITY_NONCONTIGUOUS)
        | f02::COHERENCY.encode(f02::COHERENCY_CACHED)
        | f02::MAPPING.encode(f02::MAPPING_NO_MAP)
}

/// `NVOS33` flags of a write-combined CPU mapping (video memory through BAR1).
pub fn cpu_map_write_combined() -> u32 {
    f33::CACHING_TYPE.encode(f33::CACHING_TYPE_WRITECOMBINED)
}

/// `NVOS46` flags of a GPU mapping at a fixed address, snooped, with 4 KiB or
/// (for 2 MiB-page video memory) huge pages.
pub fn gpu_map_fixed(huge: bool) -> u32 {
    f46::PAGE_SIZE.encode(if huge {
        f46::PAGE_SIZE_HUGE
    } else {
        f46::PAGE_SIZE_4KB
    }) | f46::CACHE_SNOOP.encode(f46::CACHE_SNOOP_ENABLE)
        | f46::DMA_OFFSET_FIXED.encode(f46::DMA_OFFSET_FIXED_TRUE)
}

/// `NVOS46` flags of a snooped 4 KiB GPU mapping at a VA RM picks.
pub fn gpu_map_anywhere() -> u32 {
    f46::PAGE_SIZE.encode(f46::PAGE_SIZE_4KB) | f46::CACHE_SNOOP.encode(f46::CACHE_SNOOP_ENABLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The raw words these functions produce are the ones the H200 runs of
    /// 2026-11-29 used (host/bench-results): a change here is a behaviour change.
    #[test]
    fn flag_words_are_the_ones_proven_on_the_h200() {
        assert_eq!(vram_alloc(false, false), (3 << 27, (1 << 2) | 1, 0x1c101));
        assert_eq!(
            vram_alloc(true, true),
            ((2 << 27) | (3 << 23), (1 << 2) | (1 << 20) | 1, 0x1c101)
        );
        assert_eq!(
            sysmem_uncached_alloc(),
            ((3 << 27) | (1 << 25), (2 << 2) | 1, 0xc101)
        );
        assert_eq!(host_descriptor(), (1 << 4) | (1 << 12) | (1 << 30));
        // Own-page-tables mode (2026-12-02): contiguous system memory and RM-picked VAs.
        assert_eq!(sysmem_alloc(false), sysmem_uncached_alloc());
        assert_eq!(
            sysmem_alloc(true),
            ((2 << 27) | (1 << 25), (2 << 2) | 1, 0xc101)
        );
        assert_eq!(gpu_map_anywhere(), (1 << 8) | (1 << 4));
        assert_eq!(cpu_map_write_combined(), 2 << 23);
        assert_eq!(gpu_map_fixed(false), (1 << 8) | (1 << 4) | (1 << 15));
        assert_eq!(gpu_map_fixed(true), (4 << 8) | (1 << 4) | (1 << 15));
    }
}
