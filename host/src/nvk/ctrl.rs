//! The RM controls the kernel-driver backend issues, over the layout-checked
//! parameter blocks of `nvbare_gsp::rm::ctrl` (580.142 layouts where the
//! branches differ: the kernel driver on our machines is 580.x).

use nvbare_gsp::rm::ctrl::fb::{FbGetInfoV2ParamsV580, fb_info_index};
use nvbare_gsp::rm::ctrl::gr::GrGetInfoParams;
use nvbare_gsp::rm::ctrl::root::BuildVersionV2Params;
use nvbare_gsp::rm::ctrl::subdevice::GpuNameStringParams;
use nvbare_gsp::rm::ctrl::{InfoEntry, cmd};

pub use nvbare_gsp::rm::ctrl::channel::{
    GpfifoScheduleParamsV580 as GpfifoSchedule, WorkSubmitTokenParams,
};
pub use nvbare_gsp::rm::ctrl::gr::gr_info_index;
pub use nvbare_gsp::rm::ctrl::root::{ClassListV2ParamsV580 as ClassListV2, GpuIdInfoV2Params};
pub use nvbare_gsp::rm::ctrl::subdevice::GidInfoParams;

use super::NvkError;
use super::rm::{Handle, RmClient};

/// Reads GR info values by index (`NV2080_CTRL_CMD_GR_GET_INFO`).
pub fn gr_info(rm: &RmClient, subdevice: Handle, indices: &[u32]) -> Result<Vec<u32>, NvkError> {
    let mut list: Vec<InfoEntry> = indices
        .iter()
        .map(|&index| InfoEntry { index, data: 0 })
        .collect();
    let mut p = GrGetInfoParams {
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

/// The GPU's marketing name ("NVIDIA H200").
pub fn gpu_name(rm: &RmClient, subdevice: Handle) -> Result<String, NvkError> {
    let mut p = GpuNameStringParams::default();
    rm.control(subdevice, cmd::NV2080_GPU_GET_NAME_STRING, &mut p)?;
    p.ascii()
        .map(str::to_owned)
        .ok_or_else(|| NvkError::Submit("GPU name from RM is not text".into()))
}

/// The kernel driver's version string ("580.159.04").
pub fn driver_version(rm: &RmClient) -> Result<String, NvkError> {
    let mut p = BuildVersionV2Params::default();
    rm.control(rm.root(), cmd::NV0000_SYSTEM_GET_BUILD_VERSION_V2, &mut p)?;
    p.driver_version()
        .map(str::to_owned)
        .ok_or_else(|| NvkError::Submit("driver version from RM is not text".into()))
}
