//! Flag and attribute words of the allocation parameters in [`super::alloc`]: the
//! `NVOS32_*`, `NVOS04_FLAGS_*`, `NV_VASPACE_ALLOCATION_*`, `NV_CTXSHARE_ALLOCATION_*`,
//! `NV_DEVICE_ALLOCATION_*` and `NV2080_ENGINE_TYPE_*` macros of `nvos.h`,
//! `alloc/alloc_channel.h` and `class/cl2080_notification.h`.
//!
//! A multi-bit field is a [`BitField`]; its values are plain `u32`s to `encode` into it.

use super::field::BitField;

/// `NV_DEVICE_ALLOCATION_VAMODE_*`: [`super::alloc::DeviceAllocParams::va_mode`].
pub mod device_va_mode {
    /// `NV_DEVICE_ALLOCATION_VAMODE_OPTIONAL_MULTIPLE_VASPACES`.
    pub const OPTIONAL_MULTIPLE_VASPACES: u32 = 0;
    /// `NV_DEVICE_ALLOCATION_VAMODE_SINGLE_VASPACE`.
    pub const SINGLE_VASPACE: u32 = 1;
    /// `NV_DEVICE_ALLOCATION_VAMODE_MULTIPLE_VASPACES`.
    pub const MULTIPLE_VASPACES: u32 = 2;
}

/// `NV_VASPACE_ALLOCATION_FLAGS_*` and `_INDEX_*`: the VA space parameters' `flags` and
/// `index`.
pub mod vaspace_flags {
    /// `NV_VASPACE_ALLOCATION_FLAGS_NONE`.
    pub const NONE: u32 = 0;
    /// `NV_VASPACE_ALLOCATION_FLAGS_MINIMIZE_PTETABLE_SIZE`.
    pub const MINIMIZE_PTETABLE_SIZE: u32 = 1 << 0;
    /// `NV_VASPACE_ALLOCATION_FLAGS_RETRY_PTE_ALLOC_IN_SYS`.
    pub const RETRY_PTE_ALLOC_IN_SYS: u32 = 1 << 1;
    /// `NV_VASPACE_ALLOCATION_FLAGS_SHARED_MANAGEMENT`.
    pub const SHARED_MANAGEMENT: u32 = 1 << 2;
    /// `NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED`: page tables managed outside RM
    /// (by UVM on the kernel-driver path).
    pub const IS_EXTERNALLY_OWNED: u32 = 1 << 3;
    /// `NV_VASPACE_ALLOCATION_FLAGS_ENABLE_NVLINK_ATS`.
    pub const ENABLE_NVLINK_ATS: u32 = 1 << 4;
    /// `NV_VASPACE_ALLOCATION_FLAGS_IS_MIRRORED`.
    pub const IS_MIRRORED: u32 = 1 << 5;
    /// `NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING`.
    pub const ENABLE_PAGE_FAULTING: u32 = 1 << 6;
    /// `NV_VASPACE_ALLOCATION_FLAGS_VA_INTERNAL_LIMIT`.
    pub const VA_INTERNAL_LIMIT: u32 = 1 << 7;
    /// `NV_VASPACE_ALLOCATION_FLAGS_ALLOW_ZERO_ADDRESS`.
    pub const ALLOW_ZERO_ADDRESS: u32 = 1 << 8;
    /// `NV_VASPACE_ALLOCATION_FLAGS_IS_FLA`.
    pub const IS_FLA: u32 = 1 << 9;
    /// `NV_VASPACE_ALLOCATION_FLAGS_SKIP_SCRUB_MEMPOOL`.
    pub const SKIP_SCRUB_MEMPOOL: u32 = 1 << 10;
    /// `NV_VASPACE_ALLOCATION_FLAGS_OPTIMIZE_PTETABLE_MEMPOOL_USAGE`.
    pub const OPTIMIZE_PTETABLE_MEMPOOL_USAGE: u32 = 1 << 11;
    /// `NV_VASPACE_ALLOCATION_FLAGS_REQUIRE_FIXED_OFFSET`.
    pub const REQUIRE_FIXED_OFFSET: u32 = 1 << 12;
    /// `NV_VASPACE_ALLOCATION_FLAGS_PTETABLE_HEAP_MANAGED`.
    pub const PTETABLE_HEAP_MANAGED: u32 = 1 << 13;
    /// `NV_VASPACE_ALLOCATION_INDEX_GPU_NEW`: a new VA space (the default).
    pub const INDEX_GPU_NEW: u32 = 0;
    /// `NV_VASPACE_ALLOCATION_INDEX_GPU_HOST`: the BAR1 VA space.
    pub const INDEX_GPU_HOST: u32 = 1;
    /// `NV_VASPACE_BIG_PAGE_SIZE_64K`.
    pub const BIG_PAGE_SIZE_64K: u32 = 64 * 1024;
    /// `NV_VASPACE_BIG_PAGE_SIZE_128K`.
    pub const BIG_PAGE_SIZE_128K: u32 = 128 * 1024;
}

/// `NV_CTXSHARE_ALLOCATION_FLAGS_*`: [`super::alloc::CtxShareAllocParams::flags`].
pub mod ctxshare_flags {
    use super::BitField;

    /// `NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT` 1:0.
    pub const SUBCONTEXT: BitField = BitField::word32(1, 0);
    /// `NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SYNC`.
    pub const SUBCONTEXT_SYNC: u32 = 0;
    /// `NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC`.
    pub const SUBCONTEXT_ASYNC: u32 = 1;
    /// `NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SPECIFIED`.
    pub const SUBCONTEXT_SPECIFIED: u32 = 2;
    /// `NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC_PREFER_LOWER`.
    pub const SUBCONTEXT_ASYNC_PREFER_LOWER: u32 = 3;
}

/// `NV2080_ENGINE_TYPE_*` (`class/cl2080_notification.h`): the RM engine numbering used in
/// `engineType` fields.
pub mod engine_type {
    /// `NV2080_ENGINE_TYPE_NULL`.
    pub const NULL: u32 = 0x00;
    /// `NV2080_ENGINE_TYPE_GRAPHICS` (= `GR0`).
    pub const GRAPHICS: u32 = 0x01;
    /// `NV2080_ENGINE_TYPE_COPY0`.
    pub const COPY0: u32 = 0x09;
    /// `NV2080_ENGINE_TYPE_COPY10`.
    pub const COPY10: u32 = 0x34;
    /// `NV2080_ENGINE_TYPE_BSP` (= `NVDEC0`).
    pub const NVDEC0: u32 = 0x13;
    /// `NV2080_ENGINE_TYPE_MSENC` (= `NVENC0`).
    pub const NVENC0: u32 = 0x1b;
    /// `NV2080_ENGINE_TYPE_SW`.
    pub const SW: u32 = 0x22;
    /// `NV2080_ENGINE_TYPE_SEC2`.
    pub const SEC2: u32 = 0x26;
    /// `NV2080_ENGINE_TYPE_HOST`.
    pub const HOST: u32 = 0x27;
    /// `NV2080_ENGINE_TYPE_NVJPG` (= `NVJPEG0`).
    pub const NVJPEG0: u32 = 0x2b;
    /// `NV2080_ENGINE_TYPE_OFA` (= `OFA0`).
    pub const OFA0: u32 = 0x33;
    /// `NV2080_ENGINE_TYPE_LAST`.
    pub const LAST: u32 = 0x54;

    /// `NV2080_ENGINE_TYPE_GR(i)`: graphics engine `i`, or `None` past `GR7`.
    pub const fn gr(i: u32) -> Option<u32> {
        if i < 8 { Some(GRAPHICS + i) } else { None }
    }

    /// `NV2080_ENGINE_TYPE_COPY(i)`: copy engine `i`, or `None` past `COPY19`; the
    /// numbering jumps after `COPY9`.
    pub const fn copy(i: u32) -> Option<u32> {
        match i {
            0..10 => Some(COPY0 + i),
            10..20 => Some(COPY10 + i - 10),
            _ => None,
        }
    }
}

/// `NVOS04_FLAGS_*` (`alloc/alloc_channel.h`): [`super::alloc::ChannelAllocParams::flags`].
pub mod channel_flags {
    use super::BitField;

    /// `NVOS04_FLAGS_CHANNEL_TYPE` 1:0.
    pub const CHANNEL_TYPE: BitField = BitField::word32(1, 0);
    /// `NVOS04_FLAGS_CC_SECURE` 2:2 (shares the bit with `NVOS04_FLAGS_VPR`).
    pub const CC_SECURE: BitField = BitField::word32(2, 2);
    /// `NVOS04_FLAGS_GROUP_CHANNEL_RUNQUEUE` 4:4.
    pub const GROUP_CHANNEL_RUNQUEUE: BitField = BitField::word32(4, 4);
    /// `NVOS04_FLAGS_PRIVILEGED_CHANNEL` 5:5.
    pub const PRIVILEGED_CHANNEL: BitField = BitField::word32(5, 5);
    /// `NVOS04_FLAGS_DELAY_CHANNEL_SCHEDULING` 6:6.
    pub const DELAY_CHANNEL_SCHEDULING: BitField = BitField::word32(6, 6);
    /// `NVOS04_FLAGS_CHANNEL_USERD_INDEX_VALUE` 10:8.
    pub const USERD_INDEX_VALUE: BitField = BitField::word32(10, 8);
    /// `NVOS04_FLAGS_CHANNEL_USERD_INDEX_FIXED` 11:11.
    pub const USERD_INDEX_FIXED: BitField = BitField::word32(11, 11);
    /// `NVOS04_FLAGS_CHANNEL_USERD_INDEX_PAGE_VALUE` 20:12.
    pub const USERD_INDEX_PAGE_VALUE: BitField = BitField::word32(20, 12);
    /// `NVOS04_FLAGS_CHANNEL_USERD_INDEX_PAGE_FIXED` 21:21.
    pub const USERD_INDEX_PAGE_FIXED: BitField = BitField::word32(21, 21);
    /// `NVOS04_FLAGS_CHANNEL_SKIP_SCRUBBER` 23:23.
    pub const SKIP_SCRUBBER: BitField = BitField::word32(23, 23);
    /// `NVOS04_FLAGS_CHANNEL_CLIENT_MAP_FIFO` 24:24.
    pub const CLIENT_MAP_FIFO: BitField = BitField::word32(24, 24);
    /// `NVOS04_FLAGS_MAP_CHANNEL` 30:30.
    pub const MAP_CHANNEL: BitField = BitField::word32(30, 30);
    /// `NVOS04_FLAGS_SKIP_CTXBUFFER_ALLOC` 31:31.
    pub const SKIP_CTXBUFFER_ALLOC: BitField = BitField::word32(31, 31);
}

/// `NVOS32_TYPE_*`: the surface type of memory allocations.
pub mod nvos32_type {
    /// `NVOS32_TYPE_IMAGE`: ordinary memory.
    pub const IMAGE: u32 = 0;
    /// `NVOS32_TYPE_DMA`.
    pub const DMA: u32 = 6;
    /// `NVOS32_TYPE_INSTANCE`.
    pub const INSTANCE: u32 = 7;
    /// `NVOS32_TYPE_SHADER_PROGRAM`.
    pub const SHADER_PROGRAM: u32 = 11;
    /// `NVOS32_TYPE_OWNER_RM`.
    pub const OWNER_RM: u32 = 12;
    /// `NVOS32_TYPE_NOTIFIER`.
    pub const NOTIFIER: u32 = 13;
}

/// `NVOS32_DESCRIPTOR_TYPE_*`: [`super::alloc::OsDescMemoryAllocParams::descriptor_type`].
pub mod nvos32_descriptor_type {
    /// `NVOS32_DESCRIPTOR_TYPE_VIRTUAL_ADDRESS`: a user CPU address.
    pub const VIRTUAL_ADDRESS: u32 = 0;
    /// `NVOS32_DESCRIPTOR_TYPE_OS_PAGE_ARRAY`.
    pub const OS_PAGE_ARRAY: u32 = 1;
    /// `NVOS32_DESCRIPTOR_TYPE_OS_IO_MEMORY`.
    pub const OS_IO_MEMORY: u32 = 2;
    /// `NVOS32_DESCRIPTOR_TYPE_OS_PHYS_ADDR`.
    pub const OS_PHYS_ADDR: u32 = 3;
}

/// `NVOS32_ATTR_*`: the `attr` word of memory allocations.
pub mod nvos32_attr {
    use super::BitField;

    /// `NVOS32_ATTR_NONE`.
    pub const NONE: u32 = 0;
    /// `NVOS32_ATTR_PAGE_SIZE` 24:23.
    pub const PAGE_SIZE: BitField = BitField::word32(24, 23);
    /// `NVOS32_ATTR_PAGE_SIZE_DEFAULT`.
    pub const PAGE_SIZE_DEFAULT: u32 = 0;
    /// `NVOS32_ATTR_PAGE_SIZE_4KB`.
    pub const PAGE_SIZE_4KB: u32 = 1;
    /// `NVOS32_ATTR_PAGE_SIZE_BIG`.
    pub const PAGE_SIZE_BIG: u32 = 2;
    /// `NVOS32_ATTR_PAGE_SIZE_HUGE`: size in `NVOS32_ATTR2_PAGE_SIZE_HUGE`.
    pub const PAGE_SIZE_HUGE: u32 = 3;
    /// `NVOS32_ATTR_LOCATION` 26:25.
    pub const LOCATION: BitField = BitField::word32(26, 25);
    /// `NVOS32_ATTR_LOCATION_VIDMEM`.
    pub const LOCATION_VIDMEM: u32 = 0;
    /// `NVOS32_ATTR_LOCATION_PCI`: system memory.
    pub const LOCATION_PCI: u32 = 1;
    /// `NVOS32_ATTR_LOCATION_ANY`.
    pub const LOCATION_ANY: u32 = 3;
    /// `NVOS32_ATTR_PHYSICALITY` 28:27.
    pub const PHYSICALITY: BitField = BitField::word32(28, 27);
    /// `NVOS32_ATTR_PHYSICALITY_DEFAULT`.
    pub const PHYSICALITY_DEFAULT: u32 = 0;
    /// `NVOS32_ATTR_PHYSICALITY_NONCONTIGUOUS`.
    pub const PHYSICALITY_NONCONTIGUOUS: u32 = 1;
    /// `NVOS32_ATTR_PHYSICALITY_CONTIGUOUS`.
    pub const PHYSICALITY_CONTIGUOUS: u32 = 2;
    /// `NVOS32_ATTR_PHYSICALITY_ALLOW_NONCONTIGUOUS`.
    pub const PHYSICALITY_ALLOW_NONCONTIGUOUS: u32 = 3;
    /// `NVOS32_ATTR_COHERENCY` 31:29.
    pub const COHERENCY: BitField = BitField::word32(31, 29);
    /// `NVOS32_ATTR_COHERENCY_UNCACHED`.
    pub const COHERENCY_UNCACHED: u32 = 0;
    /// `NVOS32_ATTR_COHERENCY_CACHED`.
    pub const COHERENCY_CACHED: u32 = 1;
    /// `NVOS32_ATTR_COHERENCY_WRITE_COMBINE`.
    pub const COHERENCY_WRITE_COMBINE: u32 = 2;
    /// `NVOS32_ATTR_COHERENCY_WRITE_BACK`.
    pub const COHERENCY_WRITE_BACK: u32 = 5;
}

/// `NVOS32_ATTR2_*`: the `attr2` word of memory allocations.
pub mod nvos32_attr2 {
    use super::BitField;

    /// `NVOS32_ATTR2_ZBC` 1:0.
    pub const ZBC: BitField = BitField::word32(1, 0);
    /// `NVOS32_ATTR2_ZBC_DEFAULT`.
    pub const ZBC_DEFAULT: u32 = 0;
    /// `NVOS32_ATTR2_ZBC_PREFER_NO_ZBC`.
    pub const ZBC_PREFER_NO_ZBC: u32 = 1;
    /// `NVOS32_ATTR2_GPU_CACHEABLE` 3:2.
    pub const GPU_CACHEABLE: BitField = BitField::word32(3, 2);
    /// `NVOS32_ATTR2_GPU_CACHEABLE_DEFAULT`.
    pub const GPU_CACHEABLE_DEFAULT: u32 = 0;
    /// `NVOS32_ATTR2_GPU_CACHEABLE_YES`.
    pub const GPU_CACHEABLE_YES: u32 = 1;
    /// `NVOS32_ATTR2_GPU_CACHEABLE_NO`.
    pub const GPU_CACHEABLE_NO: u32 = 2;
    /// `NVOS32_ATTR2_PAGE_OFFLINING` 19:19.
    pub const PAGE_OFFLINING: BitField = BitField::word32(19, 19);
    /// `NVOS32_ATTR2_PAGE_SIZE_HUGE` 21:20.
    pub const PAGE_SIZE_HUGE: BitField = BitField::word32(21, 20);
    /// `NVOS32_ATTR2_PAGE_SIZE_HUGE_DEFAULT`.
    pub const PAGE_SIZE_HUGE_DEFAULT: u32 = 0;
    /// `NVOS32_ATTR2_PAGE_SIZE_HUGE_2MB`.
    pub const PAGE_SIZE_HUGE_2MB: u32 = 1;
    /// `NVOS32_ATTR2_PAGE_SIZE_HUGE_512MB`.
    pub const PAGE_SIZE_HUGE_512MB: u32 = 2;
    /// `NVOS32_ATTR2_PROTECTION_USER` 22:22.
    pub const PROTECTION_USER: BitField = BitField::word32(22, 22);
    /// `NVOS32_ATTR2_PROTECTION_USER_READ_WRITE`.
    pub const PROTECTION_USER_READ_WRITE: u32 = 0;
    /// `NVOS32_ATTR2_PROTECTION_USER_READ_ONLY`.
    pub const PROTECTION_USER_READ_ONLY: u32 = 1;
    /// `NVOS32_ATTR2_MEMORY_PROTECTION` 26:25.
    pub const MEMORY_PROTECTION: BitField = BitField::word32(26, 25);
}

/// `NVOS32_ALLOC_FLAGS_*`: the `flags` word of memory allocations (single bits).
pub mod nvos32_alloc_flags {
    /// `NVOS32_ALLOC_FLAGS_IGNORE_BANK_PLACEMENT`.
    pub const IGNORE_BANK_PLACEMENT: u32 = 0x0000_0001;
    /// `NVOS32_ALLOC_FLAGS_FORCE_MEM_GROWS_UP`.
    pub const FORCE_MEM_GROWS_UP: u32 = 0x0000_0002;
    /// `NVOS32_ALLOC_FLAGS_FORCE_MEM_GROWS_DOWN`.
    pub const FORCE_MEM_GROWS_DOWN: u32 = 0x0000_0004;
    /// `NVOS32_ALLOC_FLAGS_FORCE_ALIGN_HOST_PAGE`.
    pub const FORCE_ALIGN_HOST_PAGE: u32 = 0x0000_0008;
    /// `NVOS32_ALLOC_FLAGS_FIXED_ADDRESS_ALLOCATE`.
    pub const FIXED_ADDRESS_ALLOCATE: u32 = 0x0000_0010;
    /// `NVOS32_ALLOC_FLAGS_ALIGNMENT_HINT`.
    pub const ALIGNMENT_HINT: u32 = 0x0000_0080;
    /// `NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE`.
    pub const ALIGNMENT_FORCE: u32 = 0x0000_0100;
    /// `NVOS32_ALLOC_FLAGS_NO_SCANOUT`.
    pub const NO_SCANOUT: u32 = 0x0000_1000;
    /// `NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED`.
    pub const MEMORY_HANDLE_PROVIDED: u32 = 0x0000_4000;
    /// `NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED`.
    pub const MAP_NOT_REQUIRED: u32 = 0x0000_8000;
    /// `NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM`.
    pub const PERSISTENT_VIDMEM: u32 = 0x0001_0000;
    /// `NVOS32_ALLOC_FLAGS_USE_BEGIN_END`.
    pub const USE_BEGIN_END: u32 = 0x0002_0000;
    /// `NVOS32_ALLOC_FLAGS_VIRTUAL`.
    pub const VIRTUAL: u32 = 0x0008_0000;
    /// `NVOS32_ALLOC_FLAGS_EXTERNALLY_MANAGED`.
    pub const EXTERNALLY_MANAGED: u32 = 0x0040_0000;
    /// `NVOS32_ALLOC_FLAGS_PROTECTED`.
    pub const PROTECTED: u32 = 0x0100_0000;
    /// `NVOS32_ALLOC_FLAGS_KERNEL_MAPPING_MAP`.
    pub const KERNEL_MAPPING_MAP: u32 = 0x0200_0000;
    /// `NVOS32_ALLOC_FLAGS_SPARSE`.
    pub const SPARSE: u32 = 0x0400_0000;
    /// `NVOS32_ALLOC_FLAGS_SKIP_RESOURCE_ALLOC`.
    pub const SKIP_RESOURCE_ALLOC: u32 = 0x1000_0000;
    /// `NVOS32_ALLOC_FLAGS_PREFER_PTES_IN_SYSMEMORY`.
    pub const PREFER_PTES_IN_SYSMEMORY: u32 = 0x2000_0000;
    /// `NVOS32_ALLOC_FLAGS_SKIP_ALIGN_PAD`.
    pub const SKIP_ALIGN_PAD: u32 = 0x4000_0000;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rm::nvos::{nvos02_flags, nvos33_flags, nvos46_flags};

    /// tinygrad's `ops_nv.py` builds these words with literal shifts; the same words come
    /// out of the fields here.
    #[test]
    fn flag_words_match_tinygrads_hand_shifted_ones() {
        let os_desc = nvos02_flags::PHYSICALITY.encode(nvos02_flags::PHYSICALITY_NONCONTIGUOUS)
            | nvos02_flags::COHERENCY.encode(nvos02_flags::COHERENCY_CACHED)
            | nvos02_flags::MAPPING.encode(nvos02_flags::MAPPING_NO_MAP);
        assert_eq!(os_desc, (1 << 4) | (1 << 12) | (1 << 30));

        let attr = nvos32_attr::PHYSICALITY.encode(nvos32_attr::PHYSICALITY_ALLOW_NONCONTIGUOUS)
            | nvos32_attr::PAGE_SIZE.encode(nvos32_attr::PAGE_SIZE_HUGE)
            | nvos32_attr::LOCATION.encode(nvos32_attr::LOCATION_PCI);
        assert_eq!(attr, (3 << 27) | (3 << 23) | (1 << 25));

        let attr2 = nvos32_attr2::GPU_CACHEABLE.encode(nvos32_attr2::GPU_CACHEABLE_YES)
            | nvos32_attr2::PAGE_SIZE_HUGE.encode(nvos32_attr2::PAGE_SIZE_HUGE_2MB)
            | nvos32_attr2::ZBC.encode(nvos32_attr2::ZBC_PREFER_NO_ZBC)
            | nvos32_attr2::PROTECTION_USER.encode(nvos32_attr2::PROTECTION_USER_READ_ONLY);
        assert_eq!(attr2, (1 << 2) | (1 << 20) | 1 | (1 << 22));

        let map_dma = nvos46_flags::PAGE_SIZE.encode(nvos46_flags::PAGE_SIZE_4KB)
            | nvos46_flags::CACHE_SNOOP.encode(nvos46_flags::CACHE_SNOOP_ENABLE)
            | nvos46_flags::DMA_OFFSET_FIXED.encode(nvos46_flags::DMA_OFFSET_FIXED_TRUE);
        assert_eq!(map_dma, (1 << 8) | (1 << 4) | (1 << 15));

        let map_cpu = nvos33_flags::CACHING_TYPE.encode(nvos33_flags::CACHING_TYPE_WRITECOMBINED);
        assert_eq!(map_cpu, 2 << 23);

        let ctxshare = ctxshare_flags::SUBCONTEXT.encode(ctxshare_flags::SUBCONTEXT_ASYNC);
        assert_eq!(ctxshare, 1);
    }

    #[test]
    fn copy_engine_numbering_jumps_after_nine() {
        assert_eq!(engine_type::copy(0), Some(0x09));
        assert_eq!(engine_type::copy(9), Some(0x12));
        assert_eq!(engine_type::copy(10), Some(0x34));
        assert_eq!(engine_type::copy(20), None);
        assert_eq!(engine_type::gr(0), Some(engine_type::GRAPHICS));
        assert_eq!(engine_type::gr(8), None);
    }
}
