//! The RM API: the parameter blocks, class ids, control commands and status codes of
//! NVIDIA's resource manager, as plain `#[repr(C)]` data (headers under
//! `src/common/sdk/nvidia/inc` of open-gpu-kernel-modules).
//!
//! Two header branches matter, and for a few structs they disagree:
//! - **570.144**: the GSP-RM firmware nvbare boots on the VFIO path speaks these layouts
//!   ([`VFIO_GSP_BRANCH`]);
//! - **580.142**: the kernel driver on the H200 machine (580.159.04) speaks these layouts
//!   ([`KERNEL_DRIVER_BRANCH`]).
//!
//! Types that differ come in pairs named `…V570` / `…V580`; the kernel-driver backend
//! (`nvbare-host`) names the `…V580` types directly. [`r570`] and [`r580`] also alias each
//! pair to one branch-neutral name, for code that wants to choose its branch with one `use`.
//! Everything else is the same in both branches and has one type.

pub mod alloc;
pub mod alloc_flags;
pub mod classes;
pub mod ctrl;
pub mod field;
#[cfg(test)]
mod header_check;
pub mod nvos;
mod sizes;
pub mod status;

pub use field::BitField;
pub use nvos::{NvHandle, NvP64};
pub use status::NvStatus;

/// A release branch of NVIDIA's RM API headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderBranch {
    /// open-gpu-kernel-modules 570.144.
    R570,
    /// open-gpu-kernel-modules 580.142.
    R580,
}

/// The branch the GSP-RM firmware of the VFIO path (570.144) uses: [`r570`].
pub const VFIO_GSP_BRANCH: HeaderBranch = HeaderBranch::R570;

/// The branch the kernel-driver backend uses for NVIDIA's 580.x driver (the H200 machine
/// runs 580.159.04): [`r580`].
pub const KERNEL_DRIVER_BRANCH: HeaderBranch = HeaderBranch::R580;

/// The 570.144 layouts of the structs that differ between branches (GSP-RM, VFIO path).
pub mod r570 {
    /// `NVOS46_PARAMETERS` of 570.144.
    pub type MapMemoryDmaParams = super::nvos::MapMemoryDmaParamsV570;
    /// `NV_VASPACE_ALLOCATION_PARAMETERS` of 570.144.
    pub type VaSpaceAllocParams = super::alloc::VaSpaceAllocParamsV570;
    /// `NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS` of 570.144.
    pub type GpfifoScheduleParams = super::ctrl::channel::GpfifoScheduleParamsV570;
    /// `NV2080_CTRL_FB_GET_INFO_V2_PARAMS` of 570.144.
    pub type FbGetInfoV2Params = super::ctrl::fb::FbGetInfoV2ParamsV570;
    /// `NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS` of 570.144.
    pub type ClassListV2Params = super::ctrl::root::ClassListV2ParamsV570;
}

/// The 580.142 layouts of the structs that differ between branches (kernel driver 580.x).
pub mod r580 {
    /// `NVOS46_PARAMETERS` of 580.142.
    pub type MapMemoryDmaParams = super::nvos::MapMemoryDmaParamsV580;
    /// `NV_VASPACE_ALLOCATION_PARAMETERS` of 580.142.
    pub type VaSpaceAllocParams = super::alloc::VaSpaceAllocParamsV580;
    /// `NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS` of 580.142.
    pub type GpfifoScheduleParams = super::ctrl::channel::GpfifoScheduleParamsV580;
    /// `NV2080_CTRL_FB_GET_INFO_V2_PARAMS` of 580.142.
    pub type FbGetInfoV2Params = super::ctrl::fb::FbGetInfoV2ParamsV580;
    /// `NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS` of 580.142.
    pub type ClassListV2Params = super::ctrl::root::ClassListV2ParamsV580;
}
