//! The RM controls the kernel-driver backend issues, with the command number
//! each belongs to. Parameter blocks mirror `ctrl/ctrl*.h` of the 580.142 SDK.

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use super::NvkError;
use super::rm::{Handle, RmClient};

/// `NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS` (`NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct GpuGetIdInfoV2 {
    pub gpu_id: u32,
    pub gpu_flags: u32,
    pub device_instance: u32,
    pub sub_device_instance: u32,
    pub sli_status: u32,
    pub board_id: u32,
    pub gpu_instance: u32,
    pub numa_id: i32,
}
impl GpuGetIdInfoV2 {
    pub const CMD: u32 = 0x205;
}

/// `NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS` (`NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2`).
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct ClassListV2 {
    pub num_classes: u32,
    /// `NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE` = 200.
    pub class_list: [u32; 200],
}
impl ClassListV2 {
    pub const CMD: u32 = 0x0080_0292;
}

/// `NV2080_CTRL_GPU_GET_GID_INFO_PARAMS` (`NV2080_CTRL_CMD_GPU_GET_GID_INFO`).
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct GidInfo {
    pub index: u32,
    pub flags: u32,
    pub length: u32,
    /// `NV2080_GPU_MAX_GID_LENGTH` = 256.
    pub data: [u8; 256],
}
impl GidInfo {
    pub const CMD: u32 = 0x2080_014a;
    /// `NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY` in bits 1:0.
    pub const FORMAT_BINARY: u32 = 2;
}

/// `NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct WorkSubmitToken {
    pub work_submit_token: u32,
}
impl WorkSubmitToken {
    pub const CMD: u32 = 0xc36f_0108;
}

/// `NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS` (= `NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct GpfifoSchedule {
    pub b_enable: u8,
    pub b_skip_submit: u8,
    pub b_skip_enable: u8,
}
impl GpfifoSchedule {
    pub const CMD: u32 = 0xa06c_0101;
}

/// `NV2080_CTRL_GR_INFO`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct GrInfoEntry {
    pub index: u32,
    pub data: u32,
}

/// `NV2080_CTRL_GR_GET_INFO_PARAMS` (`NV2080_CTRL_CMD_GR_GET_INFO`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct GrGetInfo {
    pub gr_info_list_size: u32,
    pub _pad0: u32,
    /// `NvP64 grInfoList`: user pointer to `GrInfoEntry[gr_info_list_size]`.
    pub gr_info_list: u64,
    /// `NV2080_CTRL_GR_ROUTE_INFO { NvU32 flags; NvU64 route; }`.
    pub route_flags: u32,
    pub _pad1: u32,
    pub route: u64,
}
impl GrGetInfo {
    pub const CMD: u32 = 0x2080_1201;
}

/// `NV2080_CTRL_GR_INFO_INDEX_*` (= `NV0080_CTRL_GR_INFO_INDEX_*`).
pub mod gr_index {
    pub const SM_VERSION: u32 = 0x0c;
    pub const MAX_WARPS_PER_SM: u32 = 0x0d;
    pub const LITTER_NUM_GPCS: u32 = 0x14;
    pub const LITTER_NUM_TPC_PER_GPC: u32 = 0x17;
    pub const LITTER_NUM_SM_PER_TPC: u32 = 0x20;
    /// `NV2080_CTRL_GR_INFO_INDEX_GPU_CORE_COUNT`: FP32 cores of all enabled SMs.
    pub const GPU_CORE_COUNT: u32 = 0x1d;
}

/// Reads GR info values by index.
pub fn gr_info(rm: &RmClient, subdevice: Handle, indices: &[u32]) -> Result<Vec<u32>, NvkError> {
    let mut list: Vec<GrInfoEntry> = indices
        .iter()
        .map(|&index| GrInfoEntry { index, data: 0 })
        .collect();
    let mut p = GrGetInfo {
        gr_info_list_size: list.len() as u32,
        gr_info_list: list.as_mut_ptr() as u64,
        ..Default::default()
    };
    rm.control(subdevice, GrGetInfo::CMD, &mut p)?;
    Ok(list.iter().map(|e| e.data).collect())
}

/// `NV2080_CTRL_FB_GET_INFO_V2_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct FbGetInfoV2 {
    pub fb_info_list_size: u32,
    /// `NV2080_CTRL_FB_INFO fbInfoList[NV2080_CTRL_FB_INFO_MAX_LIST_SIZE = 128]`.
    pub fb_info_list: [GrInfoEntry; 128],
}
impl FbGetInfoV2 {
    pub const CMD: u32 = 0x2080_1303;
    /// `NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE` (KiB).
    pub const TOTAL_RAM_SIZE: u32 = 8;
}

/// Total video memory in bytes.
pub fn fb_total_ram(rm: &RmClient, subdevice: Handle) -> Result<u64, NvkError> {
    let mut p = FbGetInfoV2::new_zeroed();
    p.fb_info_list_size = 1;
    p.fb_info_list[0].index = FbGetInfoV2::TOTAL_RAM_SIZE;
    rm.control(subdevice, FbGetInfoV2::CMD, &mut p)?;
    Ok(u64::from(p.fb_info_list[0].data) << 10)
}

/// `NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct GpuNameString {
    pub flags: u32,
    /// The union's larger member, `NvU16 unicode[0x40]`, as bytes.
    pub name: [u8; 128],
}
impl GpuNameString {
    pub const CMD: u32 = 0x2080_0110;
}

fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// The GPU's marketing name ("NVIDIA H200").
pub fn gpu_name(rm: &RmClient, subdevice: Handle) -> Result<String, NvkError> {
    let mut p = GpuNameString::new_zeroed();
    rm.control(subdevice, GpuNameString::CMD, &mut p)?;
    Ok(c_string(&p.name[..64]))
}

/// `NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct BuildVersionV2 {
    pub driver_version: [u8; 256],
    pub version: [u8; 256],
    pub driver_branch: [u8; 256],
    pub title: [u8; 256],
    pub changelist_number: u32,
    pub official_changelist_number: u32,
}
impl BuildVersionV2 {
    pub const CMD: u32 = 0x13e;
}

/// The kernel driver's version string ("580.159.04").
pub fn driver_version(rm: &RmClient) -> Result<String, NvkError> {
    let mut p = BuildVersionV2::new_zeroed();
    rm.control(rm.root(), BuildVersionV2::CMD, &mut p)?;
    Ok(c_string(&p.driver_version))
}
