//! Controls on channels, TSGs and VA spaces: `NVA06C_*` (`ctrla06c.h`), `NVA06F_*`
//! (`ctrla06f/ctrla06fgpfifo.h`), `NVC36F_*` (`ctrlc36f.h`) and `NV90F1_*` (`ctrl90f1.h`).
//!
//! `NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS` (which `NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS` is a
//! typedef of) gained `bSkipEnable` in 580: [`GpfifoScheduleParamsV570`] (2 bytes) and
//! [`GpfifoScheduleParamsV580`] (3 bytes). The rest is the same in both branches.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::rm::nvos::NvHandle;

/// `NV0080_CTRL_DMA_SET_PAGE_DIRECTORY_FLAGS_*` (`ctrl0080dma.h`): the `flags` of
/// `NV0080_CTRL_DMA_SET_PAGE_DIRECTORY_PARAMS` (the `SET_PAGE_DIRECTORY` RPC).
pub mod set_page_directory_flags {
    use crate::rm::BitField;

    /// `..._APERTURE` 1:0: where the root page directory is.
    pub const APERTURE: BitField = BitField::word32(1, 0);
    /// `..._APERTURE_VIDMEM`.
    pub const APERTURE_VIDMEM: u32 = 0;
    /// `..._APERTURE_SYSMEM_COH`.
    pub const APERTURE_SYSMEM_COH: u32 = 1;
    /// `..._APERTURE_SYSMEM_NONCOH`.
    pub const APERTURE_SYSMEM_NONCOH: u32 = 2;
    /// `..._ALL_CHANNELS` 3:3: for every channel of the VA space.
    pub const ALL_CHANNELS: BitField = BitField::word32(3, 3);
    /// `..._ALL_CHANNELS_TRUE`.
    pub const ALL_CHANNELS_TRUE: u32 = 1;
}

/// `GMMU_FMT_MAX_LEVELS` (`mmu_fmt_types.h`).
pub const GMMU_FMT_MAX_LEVELS: usize = 6;

/// `NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS` of **570.144**: enable (schedule) a channel or,
/// through `NVA06C_CTRL_CMD_GPFIFO_SCHEDULE`, every channel of a TSG.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GpfifoScheduleParamsV570 {
    /// `bEnable` (`NvBool`).
    pub b_enable: u8,
    /// `bSkipSubmit` (`NvBool`).
    pub b_skip_submit: u8,
}

/// `NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS` of **580.142**: [`GpfifoScheduleParamsV570`] plus
/// `bSkipEnable`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GpfifoScheduleParamsV580 {
    /// `bEnable` (`NvBool`).
    pub b_enable: u8,
    /// `bSkipSubmit` (`NvBool`).
    pub b_skip_submit: u8,
    /// `bSkipEnable` (`NvBool`, 580 only).
    pub b_skip_enable: u8,
}

/// `NVA06F_CTRL_BIND_PARAMS` (= `NVA06C_CTRL_BIND_PARAMS`): bind a channel (or TSG) to an
/// engine before scheduling it.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct BindParams {
    /// `engineType`: an `NV2080_ENGINE_TYPE_*`.
    pub engine_type: u32,
}

/// `NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS` (`ctrlc36f.h`): the value to
/// write to the usermode doorbell to kick this channel.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct WorkSubmitTokenParams {
    /// `workSubmitToken`: out.
    pub work_submit_token: u32,
}

/// One page-directory level of [`CopyServerReservedPdesParams`] (the anonymous
/// `levels[]` element of `NV90F1_CTRL_VASPACE_COPY_SERVER_RESERVED_PDES_PARAMS`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ReservedPdeLevel {
    /// `physAddress`: of this level's table.
    pub phys_address: u64,
    /// `size`: of the table in bytes.
    pub size: u64,
    /// `aperture`: where the table lives (RM `ADDR_*` numbering).
    pub aperture: u32,
    /// `pageShift`: log2 of the VA covered by one entry.
    pub page_shift: u8,
    /// Tail padding.
    pub _pad0: [u8; 3],
}

/// `NV90F1_CTRL_VASPACE_COPY_SERVER_RESERVED_PDES_PARAMS` (`ctrl90f1.h`): hand GSP-RM the
/// top page-directory levels a client built for the RM-reserved VA range.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CopyServerReservedPdesParams {
    /// `hSubDevice`.
    pub h_sub_device: NvHandle,
    /// `subDeviceId`.
    pub sub_device_id: u32,
    /// `pageSize`.
    pub page_size: u64,
    /// `virtAddrLo`.
    pub virt_addr_lo: u64,
    /// `virtAddrHi`.
    pub virt_addr_hi: u64,
    /// `numLevelsToCopy`.
    pub num_levels_to_copy: u32,
    /// Padding before `levels`.
    pub _pad0: u32,
    /// `levels`.
    pub levels: [ReservedPdeLevel; GMMU_FMT_MAX_LEVELS],
}
