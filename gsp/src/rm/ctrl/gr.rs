//! Graphics/compute engine controls on the subdevice: `NV2080_CTRL_CMD_GR_GET_INFO`
//! (`ctrl2080gr.h`, info indices from `ctrl0080gr.h`), and the GSP-RM-internal
//! `NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_*` and `NV2080_CTRL_CMD_GPU_PROMOTE_CTX` a kernel
//! RM uses to set up a channel's context buffers (`ctrl2080internal.h`, `ctrl2080gpu.h`).
//! All the same in 570.144 and 580.142.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::{InfoEntry, zeroed_default};
use crate::rm::nvos::{NvHandle, NvP64};

/// `NV0080_CTRL_GR_INFO_MAX_SIZE` (`ctrl0080gr.h`): one past the last info index.
pub const GR_INFO_MAX_SIZE: usize = 0x3a;
/// `NV2080_CTRL_INTERNAL_GR_MAX_ENGINES` (`ctrl2080internal.h`).
pub const INTERNAL_GR_MAX_ENGINES: usize = 8;
/// `NV2080_CTRL_INTERNAL_ENGINE_CONTEXT_PROPERTIES_ENGINE_ID_COUNT` (`ctrl2080internal.h`).
pub const CONTEXT_BUFFER_ID_COUNT: usize = 0x1a;
/// `NV2080_CTRL_GPU_PROMOTE_CONTEXT_MAX_ENTRIES` (`ctrl2080gpu.h`).
pub const PROMOTE_CONTEXT_MAX_ENTRIES: usize = 16;

/// `NV2080_CTRL_GR_ROUTE_INFO` = `NV0080_CTRL_GR_ROUTE_INFO` (`ctrl0080gr.h`): which GR
/// engine (MIG) a request goes to; all zero for the default.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GrRouteInfo {
    /// `flags`.
    pub flags: u32,
    /// Padding before `route`.
    pub _pad0: u32,
    /// `route`.
    pub route: u64,
}

/// `NV2080_CTRL_GR_GET_INFO_PARAMS` (`ctrl2080gr.h`): read the [`InfoEntry`] list at
/// `gr_info_list`, whose `index`es are [`gr_info_index`] values.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GrGetInfoParams {
    /// `grInfoListSize`: entries in the list.
    pub gr_info_list_size: u32,
    /// Padding before `grInfoList`.
    pub _pad0: u32,
    /// `grInfoList`: address of an [`InfoEntry`] array.
    pub gr_info_list: NvP64,
    /// `grRouteInfo`.
    pub gr_route_info: GrRouteInfo,
}

/// `NV0080_CTRL_GR_INFO_INDEX_*` (`ctrl0080gr.h`; `NV2080_CTRL_GR_INFO_INDEX_*` alias them).
pub mod gr_info_index {
    /// `..._SM_VERSION`: e.g. 0x900 for sm_90.
    pub const SM_VERSION: u32 = 0x0c;
    /// `..._MAX_WARPS_PER_SM`.
    pub const MAX_WARPS_PER_SM: u32 = 0x0d;
    /// `..._MAX_THREADS_PER_WARP`.
    pub const MAX_THREADS_PER_WARP: u32 = 0x0e;
    /// `..._MAX_SP_PER_SM`.
    pub const MAX_SP_PER_SM: u32 = 0x13;
    /// `..._LITTER_NUM_GPCS`.
    pub const LITTER_NUM_GPCS: u32 = 0x14;
    /// `..._LITTER_NUM_FBPS`.
    pub const LITTER_NUM_FBPS: u32 = 0x15;
    /// `..._LITTER_NUM_TPC_PER_GPC`.
    pub const LITTER_NUM_TPC_PER_GPC: u32 = 0x17;
    /// `..._GPU_CORE_COUNT`.
    pub const GPU_CORE_COUNT: u32 = 0x1d;
    /// `..._LITTER_NUM_SM_PER_TPC`.
    pub const LITTER_NUM_SM_PER_TPC: u32 = 0x20;
    /// `..._LITTER_NUM_LTCS`.
    pub const LITTER_NUM_LTCS: u32 = 0x25;
    /// `..._MAX_SUBCONTEXT_COUNT`.
    pub const MAX_SUBCONTEXT_COUNT: u32 = 0x2c;
    /// `..._MAX_INDEX` (`NV0080_CTRL_GR_INFO_INDEX_MAX`).
    pub const MAX: u32 = 0x39;
}

/// `NV2080_CTRL_INTERNAL_STATIC_GR_INFO` (`ctrl2080internal.h`): every GR info value of
/// one engine, indexed by [`gr_info_index`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct InternalStaticGrInfo {
    /// `infoList`.
    pub info_list: [InfoEntry; GR_INFO_MAX_SIZE],
}

/// `NV2080_CTRL_INTERNAL_STATIC_GR_GET_INFO_PARAMS` (`ctrl2080internal.h`), the block of
/// `NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_INFO` (GSP-RM only).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct InternalStaticGrGetInfoParams {
    /// `engineInfo`: per GR engine.
    pub engine_info: [InternalStaticGrInfo; INTERNAL_GR_MAX_ENGINES],
}

/// `NV2080_CTRL_INTERNAL_ENGINE_CONTEXT_BUFFER_INFO` (`ctrl2080internal.h`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct EngineContextBufferInfo {
    /// `size`: bytes.
    pub size: u32,
    /// `alignment`: bytes.
    pub alignment: u32,
}

/// `NV2080_CTRL_INTERNAL_STATIC_GR_CONTEXT_BUFFERS_INFO` (`ctrl2080internal.h`): size and
/// alignment of each context buffer, indexed by [`context_buffer_id`].
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GrContextBuffersInfo {
    /// `engine`.
    pub engine: [EngineContextBufferInfo; CONTEXT_BUFFER_ID_COUNT],
}

/// `NV2080_CTRL_INTERNAL_STATIC_GR_GET_CONTEXT_BUFFERS_INFO_PARAMS`
/// (`ctrl2080internal.h`), the block of
/// `NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_CONTEXT_BUFFERS_INFO` (GSP-RM only).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GrGetContextBuffersInfoParams {
    /// `engineContextBuffersInfo`: per GR engine.
    pub engine_context_buffers_info: [GrContextBuffersInfo; INTERNAL_GR_MAX_ENGINES],
}

/// `NV0080_CTRL_FIFO_GET_ENGINE_CONTEXT_PROPERTIES_ENGINE_ID_*` (`ctrl0080fifo.h`): the
/// context buffer kinds, as indices of [`GrContextBuffersInfo::engine`] and
/// [`PromoteCtxBufferEntry::buffer_id`].
pub mod context_buffer_id {
    /// `..._GRAPHICS`: the main GR context.
    pub const GRAPHICS: u16 = 0x00;
    /// `..._GRAPHICS_ZCULL`.
    pub const GRAPHICS_ZCULL: u16 = 0x08;
    /// `..._GRAPHICS_PM`.
    pub const GRAPHICS_PM: u16 = 0x09;
    /// `..._COMPUTE_PREEMPT`.
    pub const COMPUTE_PREEMPT: u16 = 0x0a;
    /// `..._GRAPHICS_PREEMPT`.
    pub const GRAPHICS_PREEMPT: u16 = 0x0b;
    /// `..._GRAPHICS_SPILL`.
    pub const GRAPHICS_SPILL: u16 = 0x0c;
    /// `..._GRAPHICS_PAGEPOOL`.
    pub const GRAPHICS_PAGEPOOL: u16 = 0x0d;
    /// `..._GRAPHICS_BETACB`.
    pub const GRAPHICS_BETACB: u16 = 0x0e;
    /// `..._GRAPHICS_RTV`.
    pub const GRAPHICS_RTV: u16 = 0x0f;
    /// `..._GRAPHICS_PATCH`.
    pub const GRAPHICS_PATCH: u16 = 0x10;
    /// `..._GRAPHICS_BUNDLE_CB`.
    pub const GRAPHICS_BUNDLE_CB: u16 = 0x11;
    /// `..._GRAPHICS_PAGEPOOL_GLOBAL`.
    pub const GRAPHICS_PAGEPOOL_GLOBAL: u16 = 0x12;
    /// `..._GRAPHICS_ATTRIBUTE_CB`.
    pub const GRAPHICS_ATTRIBUTE_CB: u16 = 0x13;
    /// `..._GRAPHICS_RTV_CB_GLOBAL`.
    pub const GRAPHICS_RTV_CB_GLOBAL: u16 = 0x14;
    /// `..._GRAPHICS_GFXP_POOL`.
    pub const GRAPHICS_GFXP_POOL: u16 = 0x15;
    /// `..._GRAPHICS_GFXP_CTRL_BLK`.
    pub const GRAPHICS_GFXP_CTRL_BLK: u16 = 0x16;
    /// `..._GRAPHICS_FECS_EVENT`.
    pub const GRAPHICS_FECS_EVENT: u16 = 0x17;
    /// `..._GRAPHICS_PRIV_ACCESS_MAP`.
    pub const GRAPHICS_PRIV_ACCESS_MAP: u16 = 0x18;
    /// `..._GRAPHICS_SETUP`.
    pub const GRAPHICS_SETUP: u16 = 0x19;
}

/// `NV2080_CTRL_GPU_PROMOTE_CTX_BUFFER_ID_*` (`ctrl2080gpu.h`): the buffers of a channel's
/// graphics context that [`PromoteCtxBufferEntry::buffer_id`] names.
pub mod promote_buffer_id {
    /// `..._MAIN`: the main context image.
    pub const MAIN: u16 = 0;
    /// `..._PM`: performance monitors.
    pub const PM: u16 = 1;
    /// `..._PATCH`: the patch buffer.
    pub const PATCH: u16 = 2;
    /// `..._BUFFER_BUNDLE_CB`.
    pub const BUFFER_BUNDLE_CB: u16 = 3;
    /// `..._PAGEPOOL`.
    pub const PAGEPOOL: u16 = 4;
    /// `..._ATTRIBUTE_CB`.
    pub const ATTRIBUTE_CB: u16 = 5;
    /// `..._RTV_CB_GLOBAL`.
    pub const RTV_CB_GLOBAL: u16 = 6;
    /// `..._GFXP_POOL`.
    pub const GFXP_POOL: u16 = 7;
    /// `..._GFXP_CTRL_BLK`.
    pub const GFXP_CTRL_BLK: u16 = 8;
    /// `..._FECS_EVENT`.
    pub const FECS_EVENT: u16 = 9;
    /// `..._PRIV_ACCESS_MAP`.
    pub const PRIV_ACCESS_MAP: u16 = 10;
    /// `..._UNRESTRICTED_PRIV_ACCESS_MAP`.
    pub const UNRESTRICTED_PRIV_ACCESS_MAP: u16 = 11;
    /// `..._GLOBAL_PRIV_ACCESS_MAP`.
    pub const GLOBAL_PRIV_ACCESS_MAP: u16 = 12;
}

/// `NV2080_CTRL_GPU_PROMOTE_CTX_BUFFER_ENTRY` (`ctrl2080gpu.h`): one context buffer handed
/// to GSP-RM.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct PromoteCtxBufferEntry {
    /// `gpuPhysAddr`.
    pub gpu_phys_addr: u64,
    /// `gpuVirtAddr`.
    pub gpu_virt_addr: u64,
    /// `size`.
    pub size: u64,
    /// `physAttr`: aperture and cache attributes of the physical memory.
    pub phys_attr: u32,
    /// `bufferId`: a [`context_buffer_id`].
    pub buffer_id: u16,
    /// `bInitialize` (`NvU8`): RM initializes the buffer.
    pub b_initialize: u8,
    /// `bNonmapped` (`NvU8`): physical only, no VA.
    pub b_nonmapped: u8,
}

/// `NV2080_CTRL_GPU_PROMOTE_CTX_PARAMS` (`ctrl2080gpu.h`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct PromoteCtxParams {
    /// `engineType`: an `NV2080_ENGINE_TYPE_*`.
    pub engine_type: u32,
    /// `hClient`.
    pub h_client: NvHandle,
    /// `ChID`.
    pub ch_id: u32,
    /// `hChanClient`: client of the channel.
    pub h_chan_client: NvHandle,
    /// `hObject`: the channel.
    pub h_object: NvHandle,
    /// `hVirtMemory`.
    pub h_virt_memory: NvHandle,
    /// `virtAddress`.
    pub virt_address: u64,
    /// `size`.
    pub size: u64,
    /// `entryCount`: valid entries of `promote_entry`.
    pub entry_count: u32,
    /// Padding before `promoteEntry`.
    pub _pad0: u32,
    /// `promoteEntry`.
    pub promote_entry: [PromoteCtxBufferEntry; PROMOTE_CONTEXT_MAX_ENTRIES],
}

zeroed_default!(InternalStaticGrInfo, InternalStaticGrGetInfoParams);
