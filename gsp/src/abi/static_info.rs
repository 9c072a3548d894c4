//! `GspStaticConfigInfo`: the static GPU configuration GSP-RM reports after boot
//! (`NV_VGPU_MSG_FUNCTION_GET_GSP_STATIC_INFO`), and the member types nvbare reads.
//!
//! Header: `src/nvidia/inc/kernel/gpu/gsp/gsp_static_config.h`; member types from
//! `src/common/sdk/nvidia/inc/ctrl/ctrl2080/ctrl2080{gpu,fb,bios}.h`,
//! `ctrl/ctrl0080/ctrl0080gpu.h` and `src/nvidia/inc/kernel/vgpu/rpc_headers.h`.
//! Every member is mirrored, down to the last field.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `NV0080_CTRL_GR_CAPS_TBL_SIZE`, `ctrl/ctrl0080/ctrl0080gr.h`.
pub const NV0080_CTRL_GR_CAPS_TBL_SIZE: usize = 23;
/// `NV2080_GPU_MAX_GID_LENGTH`, `ctrl/ctrl2080/ctrl2080gpu.h`.
pub const NV2080_GPU_MAX_GID_LENGTH: usize = 0x100;
/// `NV2080_GPU_MAX_NAME_STRING_LENGTH`, `ctrl/ctrl2080/ctrl2080gpu.h`.
pub const NV2080_GPU_MAX_NAME_STRING_LENGTH: usize = 0x40;
/// `NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MAX_ENTRIES`, `ctrl/ctrl2080/ctrl2080fb.h`.
pub const NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MAX_ENTRIES: usize = 16;
/// `NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MEM_TYPES`, `ctrl/ctrl2080/ctrl2080fb.h`.
pub const NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MEM_TYPES: usize = 17;
/// `NVGPU_ENGINE_CAPS_MASK_ARRAY_MAX` for 570.144: `(RM_ENGINE_TYPE_LAST - 1) / 32 + 1`
/// with `RM_ENGINE_TYPE_LAST` = `NV2080_ENGINE_TYPE_LAST` = 0x54.
pub const NVGPU_ENGINE_CAPS_MASK_ARRAY_MAX: usize = (0x54 - 1) / 32 + 1;
/// `MAX_GROUP_COUNT` (`gpu/gpu.h`): entries of `ecidInfo`.
pub const MAX_GROUP_COUNT: usize = 2;

/// Mirrors `NV2080_CTRL_GPU_GET_GID_INFO_PARAMS`, `ctrl/ctrl2080/ctrl2080gpu.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Nv2080CtrlGpuGetGidInfoParams {
    /// `index`.
    pub index: u32,
    /// `flags`: `NV2080_GPU_CMD_GPU_GET_GID_FLAGS_*`.
    pub flags: u32,
    /// `length`: bytes of `data` in use.
    pub length: u32,
    /// `data[NV2080_GPU_MAX_GID_LENGTH]`.
    pub data: [u8; NV2080_GPU_MAX_GID_LENGTH],
}

/// Mirrors `NV2080_CTRL_CMD_FB_GET_FB_REGION_FB_REGION_INFO`, `ctrl/ctrl2080/ctrl2080fb.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct Nv2080CtrlFbRegionInfo {
    /// `base`.
    pub base: u64,
    /// `limit`: inclusive.
    pub limit: u64,
    /// `reserved`.
    pub reserved: u64,
    /// `performance`.
    pub performance: u32,
    /// `supportCompressed` (`NvBool`).
    pub support_compressed: u8,
    /// `supportISO` (`NvBool`).
    pub support_iso: u8,
    /// `bProtected` (`NvBool`).
    pub b_protected: u8,
    /// `blackList[NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MEM_TYPES]` (`NvBool`s).
    pub black_list: [u8; NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MEM_TYPES],
}

/// Mirrors `NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_PARAMS`, `ctrl/ctrl2080/ctrl2080fb.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Nv2080CtrlFbGetFbRegionInfoParams {
    /// `numFBRegions`.
    pub num_fb_regions: u32,
    /// Padding before the 8-byte aligned `fbRegion`.
    pub _pad0: u32,
    /// `fbRegion[NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MAX_ENTRIES]`.
    pub fb_region: [Nv2080CtrlFbRegionInfo; NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MAX_ENTRIES],
}

/// Mirrors `NV2080_CTRL_BIOS_GET_SKU_INFO_PARAMS`, `ctrl/ctrl2080/ctrl2080bios.h`. The
/// `char` arrays are not NUL-terminated when full.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct Nv2080CtrlBiosGetSkuInfoParams {
    /// `BoardID`.
    pub board_id: u32,
    /// `chipSKU[9]`.
    pub chip_sku: [u8; 9],
    /// `chipSKUMod[5]`.
    pub chip_sku_mod: [u8; 5],
    /// Padding before `skuConfigVersion`.
    pub _pad0: [u8; 2],
    /// `skuConfigVersion`.
    pub sku_config_version: u32,
    /// `project[5]`.
    pub project: [u8; 5],
    /// `projectSKU[5]`.
    pub project_sku: [u8; 5],
    /// `CDP[6]`.
    pub cdp: [u8; 6],
    /// `projectSKUMod[2]`.
    pub project_sku_mod: [u8; 2],
    /// Padding before `businessCycle`.
    pub _pad1: [u8; 2],
    /// `businessCycle`.
    pub business_cycle: u32,
}

/// Mirrors `NV0080_CTRL_GPU_GET_SRIOV_CAPS_PARAMS`, `ctrl/ctrl0080/ctrl0080gpu.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct Nv0080CtrlGpuGetSriovCapsParams {
    /// `totalVFs`.
    pub total_vfs: u32,
    /// `firstVfOffset`.
    pub first_vf_offset: u32,
    /// `vfFeatureMask`.
    pub vf_feature_mask: u32,
    /// Padding before the 8-byte `FirstVFBar0Address`.
    pub _pad0: u32,
    /// `FirstVFBar0Address`.
    pub first_vf_bar0_address: u64,
    /// `FirstVFBar1Address`.
    pub first_vf_bar1_address: u64,
    /// `FirstVFBar2Address`.
    pub first_vf_bar2_address: u64,
    /// `bar0Size`.
    pub bar0_size: u64,
    /// `bar1Size`.
    pub bar1_size: u64,
    /// `bar2Size`.
    pub bar2_size: u64,
    /// `b64bitBar0` (`NvBool`).
    pub b64bit_bar0: u8,
    /// `b64bitBar1`.
    pub b64bit_bar1: u8,
    /// `b64bitBar2`.
    pub b64bit_bar2: u8,
    /// `bSriovEnabled`.
    pub b_sriov_enabled: u8,
    /// `bSriovHeavyEnabled`.
    pub b_sriov_heavy_enabled: u8,
    /// `bEmulateVFBar0TlbInvalidationRegister`.
    pub b_emulate_vf_bar0_tlb_invalidation_register: u8,
    /// `bClientRmAllocatedCtxBuffer`.
    pub b_client_rm_allocated_ctx_buffer: u8,
    /// `bNonPowerOf2ChannelCountSupported`.
    pub b_non_power_of2_channel_count_supported: u8,
    /// `bVfResizableBAR1Supported`.
    pub b_vf_resizable_bar1_supported: u8,
    /// Tail padding.
    pub _pad1: [u8; 7],
}

/// Mirrors `VIRTUAL_DISPLAY_GET_NUM_HEADS_PARAMS`, `vgpu/rpc_headers.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct VirtualDisplayGetNumHeadsParams {
    /// `numHeads`.
    pub num_heads: u32,
    /// `maxNumHeads`.
    pub max_num_heads: u32,
}

/// Mirrors `VIRTUAL_DISPLAY_GET_MAX_RESOLUTION_PARAMS`, `vgpu/rpc_headers.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct VirtualDisplayGetMaxResolutionParams {
    /// `headIndex`.
    pub head_index: u32,
    /// `maxHResolution`.
    pub max_h_resolution: u32,
    /// `maxVResolution`.
    pub max_v_resolution: u32,
}

/// Mirrors `EcidManufacturingInfo`, `gsp_static_config.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct EcidManufacturingInfo {
    /// `ecidLow`.
    pub ecid_low: u32,
    /// `ecidHigh`.
    pub ecid_high: u32,
    /// `ecidExtended`.
    pub ecid_extended: u32,
}

/// Mirrors `FW_WPR_LAYOUT_OFFSET`, `gsp_static_config.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct FwWprLayoutOffset {
    /// `nonWprHeapOffset`.
    pub non_wpr_heap_offset: u64,
    /// `frtsOffset`.
    pub frts_offset: u64,
}

/// Mirrors `GspStaticConfigInfo` (`struct GspStaticConfigInfo_t`), `gsp_static_config.h`
/// (1656 bytes in 570.144).
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct GspStaticConfigInfo {
    /// `grCapsBits[NV0080_CTRL_GR_CAPS_TBL_SIZE]`.
    pub gr_caps_bits: [u8; NV0080_CTRL_GR_CAPS_TBL_SIZE],
    /// Padding before `gidInfo`.
    pub _pad0: [u8; 1],
    /// `gidInfo`: the GPU UUID.
    pub gid_info: Nv2080CtrlGpuGetGidInfoParams,
    /// `SKUInfo`.
    pub sku_info: Nv2080CtrlBiosGetSkuInfoParams,
    /// Padding before the 8-byte aligned `fbRegionInfoParams`.
    pub _pad1: [u8; 4],
    /// `fbRegionInfoParams`.
    pub fb_region_info_params: Nv2080CtrlFbGetFbRegionInfoParams,
    /// `sriovCaps`.
    pub sriov_caps: Nv0080CtrlGpuGetSriovCapsParams,
    /// `sriovMaxGfid`.
    pub sriov_max_gfid: u32,
    /// `engineCaps[NVGPU_ENGINE_CAPS_MASK_ARRAY_MAX]`: bit per `RM_ENGINE_TYPE`.
    pub engine_caps: [u32; NVGPU_ENGINE_CAPS_MASK_ARRAY_MAX],
    /// `poisonFuseEnabled` (`NvBool`).
    pub poison_fuse_enabled: u8,
    /// Padding before `fb_length`.
    pub _pad2: [u8; 7],
    /// `fb_length`: bytes of VRAM.
    pub fb_length: u64,
    /// `fbio_mask`.
    pub fbio_mask: u64,
    /// `fb_bus_width`.
    pub fb_bus_width: u32,
    /// `fb_ram_type`.
    pub fb_ram_type: u32,
    /// `fbp_mask`.
    pub fbp_mask: u64,
    /// `l2_cache_size`.
    pub l2_cache_size: u32,
    /// `gpuNameString[NV2080_GPU_MAX_NAME_STRING_LENGTH]`: NUL-terminated ASCII.
    pub gpu_name_string: [u8; NV2080_GPU_MAX_NAME_STRING_LENGTH],
    /// `gpuShortNameString[NV2080_GPU_MAX_NAME_STRING_LENGTH]`.
    pub gpu_short_name_string: [u8; NV2080_GPU_MAX_NAME_STRING_LENGTH],
    /// `gpuNameString_Unicode[NV2080_GPU_MAX_NAME_STRING_LENGTH]`: UTF-16.
    pub gpu_name_string_unicode: [u16; NV2080_GPU_MAX_NAME_STRING_LENGTH],
    /// `bGpuInternalSku`.
    pub b_gpu_internal_sku: u8,
    /// `bIsQuadroGeneric`.
    pub b_is_quadro_generic: u8,
    /// `bIsQuadroAd`.
    pub b_is_quadro_ad: u8,
    /// `bIsNvidiaNvs`.
    pub b_is_nvidia_nvs: u8,
    /// `bIsVgx`.
    pub b_is_vgx: u8,
    /// `bGeforceSmb`.
    pub b_geforce_smb: u8,
    /// `bIsTitan`.
    pub b_is_titan: u8,
    /// `bIsTesla`.
    pub b_is_tesla: u8,
    /// `bIsMobile`.
    pub b_is_mobile: u8,
    /// `bIsGc6Rtd3Allowed`.
    pub b_is_gc6_rtd3_allowed: u8,
    /// `bIsGc8Rtd3Allowed`.
    pub b_is_gc8_rtd3_allowed: u8,
    /// `bIsGcOffRtd3Allowed`.
    pub b_is_gc_off_rtd3_allowed: u8,
    /// `bIsGcoffLegacyAllowed`.
    pub b_is_gcoff_legacy_allowed: u8,
    /// `bIsMigSupported`.
    pub b_is_mig_supported: u8,
    /// `RTD3GC6TotalBoardPower`.
    pub rtd3_gc6_total_board_power: u16,
    /// `RTD3GC6PerstDelay`.
    pub rtd3_gc6_perst_delay: u16,
    /// Padding before `bar1PdeBase`.
    pub _pad3: [u8; 2],
    /// `bar1PdeBase`.
    pub bar1_pde_base: u64,
    /// `bar2PdeBase`.
    pub bar2_pde_base: u64,
    /// `bVbiosValid`.
    pub b_vbios_valid: u8,
    /// Padding before `vbiosSubVendor`.
    pub _pad4: [u8; 3],
    /// `vbiosSubVendor`.
    pub vbios_sub_vendor: u32,
    /// `vbiosSubDevice`.
    pub vbios_sub_device: u32,
    /// `bPageRetirementSupported`.
    pub b_page_retirement_supported: u8,
    /// `bSplitVasBetweenServerClientRm`.
    pub b_split_vas_between_server_client_rm: u8,
    /// `bClRootportNeedsNosnoopWAR`.
    pub b_cl_rootport_needs_nosnoop_war: u8,
    /// Padding before `displaylessMaxHeads`.
    pub _pad5: [u8; 1],
    /// `displaylessMaxHeads`.
    pub displayless_max_heads: VirtualDisplayGetNumHeadsParams,
    /// `displaylessMaxResolution`.
    pub displayless_max_resolution: VirtualDisplayGetMaxResolutionParams,
    /// Padding before `displaylessMaxPixels`.
    pub _pad6: [u8; 4],
    /// `displaylessMaxPixels`.
    pub displayless_max_pixels: u64,
    /// `hInternalClient`: client handle for internal RM API controls.
    pub h_internal_client: u32,
    /// `hInternalDevice`.
    pub h_internal_device: u32,
    /// `hInternalSubdevice`.
    pub h_internal_subdevice: u32,
    /// `bSelfHostedMode`.
    pub b_self_hosted_mode: u8,
    /// `bAtsSupported`.
    pub b_ats_supported: u8,
    /// `bIsGpuUefi`.
    pub b_is_gpu_uefi: u8,
    /// `bIsEfiInit`.
    pub b_is_efi_init: u8,
    /// `ecidInfo[MAX_GROUP_COUNT]`.
    pub ecid_info: [EcidManufacturingInfo; MAX_GROUP_COUNT],
    /// `fwWprLayoutOffset`.
    pub fw_wpr_layout_offset: FwWprLayoutOffset,
}
