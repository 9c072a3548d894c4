//! Framebuffer controls on the subdevice (`ctrl2080fb.h`): memory facts
//! (`NV2080_CTRL_CMD_FB_GET_INFO_V2`) and L2 flushes (`NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE`).
//!
//! `NV2080_CTRL_FB_GET_INFO_V2_PARAMS` differs between branches: its list holds
//! `NV2080_CTRL_FB_INFO_MAX_LIST_SIZE` entries, 0x39 in 570.144 and 0x80 in 580.142
//! (three indices were added). Hence [`FbGetInfoV2ParamsV570`] and [`FbGetInfoV2ParamsV580`].

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::{InfoEntry, zeroed_default};
use crate::rm::field::BitField;

/// `NV2080_CTRL_FB_INFO_MAX_LIST_SIZE` of 570.144.
pub const FB_INFO_MAX_LIST_SIZE_V570: usize = 0x39;
/// `NV2080_CTRL_FB_INFO_MAX_LIST_SIZE` of 580.142.
pub const FB_INFO_MAX_LIST_SIZE_V580: usize = 0x80;
/// `NV2080_CTRL_FB_FLUSH_GPU_CACHE_MAX_ADDRESSES`.
pub const FLUSH_GPU_CACHE_MAX_ADDRESSES: usize = 500;

/// `NV2080_CTRL_FB_INFO_INDEX_*`: the `index` of an FB [`InfoEntry`]. Sizes are in KiB.
pub mod fb_info_index {
    /// `NV2080_CTRL_FB_INFO_INDEX_BAR1_SIZE`.
    pub const BAR1_SIZE: u32 = 0x05;
    /// `NV2080_CTRL_FB_INFO_INDEX_RAM_SIZE`.
    pub const RAM_SIZE: u32 = 0x07;
    /// `NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE`.
    pub const TOTAL_RAM_SIZE: u32 = 0x08;
    /// `NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE`.
    pub const HEAP_SIZE: u32 = 0x09;
    /// `NV2080_CTRL_FB_INFO_INDEX_BUS_WIDTH`.
    pub const BUS_WIDTH: u32 = 0x0b;
    /// `NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE`.
    pub const HEAP_FREE: u32 = 0x16;
    /// `NV2080_CTRL_FB_INFO_INDEX_L2CACHE_SIZE` (bytes).
    pub const L2CACHE_SIZE: u32 = 0x1b;
    /// `NV2080_CTRL_FB_INFO_INDEX_BAR1_AVAIL_SIZE`.
    pub const BAR1_AVAIL_SIZE: u32 = 0x1d;
    /// `NV2080_CTRL_FB_INFO_INDEX_USABLE_RAM_SIZE`.
    pub const USABLE_RAM_SIZE: u32 = 0x20;
    /// `NV2080_CTRL_FB_INFO_INDEX_LTC_COUNT`.
    pub const LTC_COUNT: u32 = 0x22;
}

/// `NV2080_CTRL_FB_GET_INFO_V2_PARAMS` (`ctrl2080fb.h`) of **570.144** (GSP-RM).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct FbGetInfoV2ParamsV570 {
    /// `fbInfoListSize`: entries used.
    pub fb_info_list_size: u32,
    /// `fbInfoList`.
    pub fb_info_list: [InfoEntry; FB_INFO_MAX_LIST_SIZE_V570],
}

/// `NV2080_CTRL_FB_GET_INFO_V2_PARAMS` (`ctrl2080fb.h`) of **580.142** (kernel driver).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct FbGetInfoV2ParamsV580 {
    /// `fbInfoListSize`: entries used.
    pub fb_info_list_size: u32,
    /// `fbInfoList`.
    pub fb_info_list: [InfoEntry; FB_INFO_MAX_LIST_SIZE_V580],
}

/// `NV2080_CTRL_FB_FLUSH_GPU_CACHE_PARAMS` (`ctrl2080fb.h`); `flags` from
/// [`flush_gpu_cache_flags`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct FbFlushGpuCacheParams {
    /// `addressArray`: addresses to flush in `ADDRESS_ARRAY` mode.
    pub address_array: [u64; FLUSH_GPU_CACHE_MAX_ADDRESSES],
    /// `addressArraySize`.
    pub address_array_size: u32,
    /// `addressAlign`.
    pub address_align: u32,
    /// `memBlockSizeBytes`.
    pub mem_block_size_bytes: u64,
    /// `flags`.
    pub flags: u32,
    /// Tail padding.
    pub _pad0: u32,
}

/// `NV2080_CTRL_FB_FLUSH_GPU_CACHE_FLAGS_*`.
pub mod flush_gpu_cache_flags {
    use super::BitField;

    /// `..._APERTURE` 1:0.
    pub const APERTURE: BitField = BitField::word32(1, 0);
    /// `..._APERTURE_VIDEO_MEMORY`.
    pub const APERTURE_VIDEO_MEMORY: u32 = 0;
    /// `..._APERTURE_SYSTEM_MEMORY`.
    pub const APERTURE_SYSTEM_MEMORY: u32 = 1;
    /// `..._WRITE_BACK` 2:2.
    pub const WRITE_BACK: BitField = BitField::word32(2, 2);
    /// `..._WRITE_BACK_YES`.
    pub const WRITE_BACK_YES: u32 = 1;
    /// `..._INVALIDATE` 3:3.
    pub const INVALIDATE: BitField = BitField::word32(3, 3);
    /// `..._INVALIDATE_YES`.
    pub const INVALIDATE_YES: u32 = 1;
    /// `..._FLUSH_MODE` 4:4.
    pub const FLUSH_MODE: BitField = BitField::word32(4, 4);
    /// `..._FLUSH_MODE_ADDRESS_ARRAY`.
    pub const FLUSH_MODE_ADDRESS_ARRAY: u32 = 0;
    /// `..._FLUSH_MODE_FULL_CACHE`.
    pub const FLUSH_MODE_FULL_CACHE: u32 = 1;
    /// `..._FB_FLUSH` 5:5.
    pub const FB_FLUSH: BitField = BitField::word32(5, 5);
    /// `..._FB_FLUSH_YES`.
    pub const FB_FLUSH_YES: u32 = 1;

    /// Write back and invalidate the whole L2: what a full flush before reading results
    /// from the CPU needs.
    pub const fn write_back_invalidate_all() -> u32 {
        WRITE_BACK.encode(WRITE_BACK_YES)
            | INVALIDATE.encode(INVALIDATE_YES)
            | FLUSH_MODE.encode(FLUSH_MODE_FULL_CACHE)
    }
}

/// Looks `index` up in an FB info list as RM returned it (only the first `used` entries
/// count); `None` if absent.
pub fn find_info(list: &[InfoEntry], used: u32, index: u32) -> Option<u32> {
    let used = (used as usize).min(list.len());
    list[..used]
        .iter()
        .find(|e| e.index == index)
        .map(|e| e.data)
}

zeroed_default!(
    FbGetInfoV2ParamsV570,
    FbGetInfoV2ParamsV580,
    FbFlushGpuCacheParams
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_flush_sets_write_back_invalidate_and_full_mode() {
        assert_eq!(flush_gpu_cache_flags::write_back_invalidate_all(), 0b1_1100);
    }

    #[test]
    fn find_info_ignores_entries_past_the_used_count() {
        let mut p = FbGetInfoV2ParamsV580::default();
        p.fb_info_list[0] = InfoEntry {
            index: fb_info_index::RAM_SIZE,
            data: 42,
        };
        p.fb_info_list[1] = InfoEntry {
            index: fb_info_index::HEAP_SIZE,
            data: 7,
        };
        assert_eq!(
            find_info(&p.fb_info_list, 2, fb_info_index::HEAP_SIZE),
            Some(7)
        );
        assert_eq!(
            find_info(&p.fb_info_list, 1, fb_info_index::HEAP_SIZE),
            None
        );
        assert_eq!(
            find_info(&p.fb_info_list, 9999, fb_info_index::RAM_SIZE),
            Some(42)
        );
    }
}
