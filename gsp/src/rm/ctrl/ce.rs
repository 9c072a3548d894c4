//! Copy-engine controls on the subdevice (`ctrl/ctrl2080/ctrl2080ce.h`): which logical copy
//! engines (LCEs) exist, what each can do, and which physical copy units (PCEs) feed it.
//! The same in 570.144 and 580.142.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::zeroed_default;

/// `NV2080_CTRL_MAX_CES` (ctrl2080ce.h:327).
pub const MAX_CES: usize = 64;
/// `NV2080_CTRL_CE_CAPS_TBL_SIZE` (ctrl2080ce.h:68).
pub const CAPS_TBL_SIZE: usize = 2;

/// `NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS` (ctrl2080ce.h:167): the PCEs feeding one LCE,
/// local to its CE shim.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CePceMaskParams {
    /// `ceEngineType`: an `NV2080_ENGINE_TYPE_COPYn` (`alloc_flags::engine_type::copy`).
    pub ce_engine_type: u32,
    /// `pceMask`.
    pub pce_mask: u32,
}

/// `NV2080_CTRL_CE_GET_ALL_CAPS_PARAMS` (ctrl2080ce.h:331): two caps bytes per CE, then the
/// 8-aligned `present` mask of the CEs the table describes.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CeGetAllCapsParams {
    /// `capsTbl[NV2080_CTRL_MAX_CES][NV2080_CTRL_CE_CAPS_TBL_SIZE]`.
    pub caps_tbl: [[u8; CAPS_TBL_SIZE]; MAX_CES],
    /// `present`.
    pub present: u64,
}

zeroed_default!(CeGetAllCapsParams);

/// The `NV2080_CTRL_CE_CAPS_*` bits (ctrl2080ce.h:90-101), as (byte, mask, name).
pub const CAPS: [(usize, u8, &str); 12] = [
    (0, 0x01, "GRCE"),
    (0, 0x02, "SHARED"),
    (0, 0x04, "SYSMEM_READ"),
    (0, 0x08, "SYSMEM_WRITE"),
    (0, 0x10, "NVLINK_P2P"),
    (0, 0x20, "SYSMEM"),
    (0, 0x40, "P2P"),
    (0, 0x80, "BL_SIZE_GT_64K_SUPPORTED"),
    (1, 0x01, "SUPPORTS_NONPIPELINED_BL"),
    (1, 0x02, "SUPPORTS_PIPELINED_BL"),
    (1, 0x04, "CC_SECURE"),
    (1, 0x08, "DECOMP_SUPPORTED"),
];

/// The names of the caps bits set in one CE's two caps bytes.
pub fn caps_names(tbl: [u8; CAPS_TBL_SIZE]) -> impl Iterator<Item = &'static str> {
    CAPS.iter()
        .filter(move |(byte, mask, _)| tbl[*byte] & mask != 0)
        .map(|(_, _, name)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_ctrl2080ce() {
        // Two NvU32.
        assert_eq!(size_of::<CePceMaskParams>(), 8);
        // capsTbl of 64 x 2 bytes, then NV_DECLARE_ALIGNED(NvU64 present, 8) at 128.
        assert_eq!(size_of::<CeGetAllCapsParams>(), 136);
        assert_eq!(core::mem::offset_of!(CeGetAllCapsParams, present), 128);
    }

    #[test]
    fn caps_bits_are_named_as_the_header_names_them() {
        let names: alloc::vec::Vec<_> = caps_names([0x21, 0x03]).collect();
        assert_eq!(
            names,
            [
                "GRCE",
                "SYSMEM",
                "SUPPORTS_NONPIPELINED_BL",
                "SUPPORTS_PIPELINED_BL"
            ]
        );
        assert_eq!(caps_names([0, 0]).count(), 0);
    }
}
