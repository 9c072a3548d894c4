//! The RM controls the kernel-driver backend issues, over the layout-checked
//! parameter blocks of `nvbare_gsp::rm::ctrl` (580.142 layouts where the
//! branches differ: the kernel driver on our machines is 580.x).

use nvbare_gsp::rm::ctrl::fb::{FbGetInfoV2ParamsV580, fb_info_index};
use nvbare_gsp::rm::ctrl::gr::GrGetInfoParams;
use nvbare_gsp::rm::ctrl::root::BuildVersionV2Params;
use nvbare_gsp::rm::ctrl::subdevice::GpuNameStringParams;
use nvbare_gsp::rm::ctrl::{InfoEntry, cmd};

pub use nvbare_gsp::rm::ctrl::gr::gr_info_index;
pub use nvbare_gsp::rm::ctrl::root::GpuIdInfoV2Params;
pub use nvbare_gsp::rm::ctrl::subdevice::GidInfoParams;

use nvbare_core::rm::GrInfo;

use super::NvkError;
use super::rm::{Handle, RmClient};

/// Reads GR info values by index (`NV2080_CTRL_CMD_GR_GET_INFO`).
pub fn gr_info(rm: &RmClient, subdevice: Handle, indices: &[u32]) -> Result<Vec<u32>, NvkError> {
    let mut list: Vec<InfoEntry> = indices
        .iter()
        .map(|&index| InfoEntry { index, data: 0 })
        .collect();
    let mut p = GrGetInfoParams {
        // CAST: a handful of entries.
        gr_info_list_size: list.len() as u32,
        gr_info_list: list.as_mut_ptr() as u64,
        ..Default::default()
    };
    rm.control(subdevice, cmd::NV2080_GR_GET_INFO, &mut p)?;
    Ok(list.iter().map(|e| e.data).collect())
}

/// Total video memory in bytes (`NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE`, in KiB).
pub fn fb_total_ram(rm: &RmClient, subdevice: Handle) -> Result<u64, NvkError> {
    let mut p = FbGetInfoV2ParamsV580 {
        fb_info_list_size: 1,
        ..Default::default()
    };
    p.fb_info_list[0].index = fb_info_index::TOTAL_RAM_SIZE;
    rm.control(subdevice, cmd::NV2080_FB_GET_INFO_V2, &mut p)?;
    Ok(u64::from(p.fb_info_list[0].data) << 10)
}

/// Free video memory in RM's heap, in bytes (`NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE`, in KiB):
/// what every process together has not allocated (the soak's "VRAM in use" is total minus
/// this).
pub fn fb_heap_free(rm: &RmClient, subdevice: Handle) -> Result<u64, NvkError> {
    let mut p = FbGetInfoV2ParamsV580 {
        fb_info_list_size: 1,
        ..Default::default()
    };
    p.fb_info_list[0].index = fb_info_index::HEAP_FREE;
    rm.control(subdevice, cmd::NV2080_FB_GET_INFO_V2, &mut p)?;
    Ok(u64::from(p.fb_info_list[0].data) << 10)
}

/// The GPU's marketing name ("NVIDIA H200").
/// `None` when RM refuses or the name is not text (it is only shown).
pub fn gpu_name(rm: &RmClient, subdevice: Handle) -> Option<String> {
    let mut p = GpuNameStringParams::default();
    rm.control(subdevice, cmd::NV2080_GPU_GET_NAME_STRING, &mut p)
        .ok()?;
    p.ascii().map(str::to_owned)
}

/// The kernel driver's version string ("580.159.04").
/// `None` when RM refuses or the version is not text (it is only shown).
pub fn driver_version(rm: &RmClient) -> Option<String> {
    let mut p = BuildVersionV2Params::default();
    rm.control(rm.root(), cmd::NV0000_SYSTEM_GET_BUILD_VERSION_V2, &mut p)
        .ok()?;
    p.driver_version().map(str::to_owned)
}

/// The graphics engine's facts (`NV2080_CTRL_CMD_GR_GET_INFO`, whose block points at the
/// list it fills).
pub fn read_gr_info(rm: &RmClient, subdevice: Handle) -> Result<GrInfo, NvkError> {
    use gr_info_index as ix;
    let wanted = [
        ix::LITTER_NUM_GPCS,
        ix::LITTER_NUM_TPC_PER_GPC,
        ix::LITTER_NUM_SM_PER_TPC,
        ix::MAX_WARPS_PER_SM,
        ix::SM_VERSION,
    ];
    let v = gr_info(rm, subdevice, &wanted)?;
    let mut g = GrInfo {
        gpcs: v[0],
        tpcs_per_gpc: v[1],
        sms_per_tpc: v[2],
        max_warps_per_sm: v[3],
        sm_version: v[4],
        sm_count: 0,
    };
    // Enabled SMs = FP32 cores / FP32 cores per SM (64 on GA100's sm_80, 128 on every other
    // sm_8x..sm_12x): 16896 / 128 = 132 on the H200.
    let per_sm = if g.sm_version == 0x800 { 64 } else { 128 };
    g.sm_count = match gr_info(rm, subdevice, &[ix::GPU_CORE_COUNT]) {
        Ok(v) if v[0] > 0 => v[0] / per_sm,
        _ => g.gpcs * g.tpcs_per_gpc * g.sms_per_tpc,
    };
    Ok(g)
}
