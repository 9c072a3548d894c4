//! Controls on the client (`NV0000_CTRL_*`, `ctrl/ctrl0000/`) and on the device
//! (`NV0080_CTRL_*`, `ctrl/ctrl0080/`). All the same in 570.144 and 580.142 except
//! `NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS`, whose list doubled to 200 entries in 580:
//! [`ClassListV2ParamsV570`] / [`ClassListV2ParamsV580`].

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::zeroed_default;
use crate::rm::nvos::NvP64;

/// `NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_MAX_STRING_SIZE` (`ctrl0000system.h`).
pub const BUILD_VERSION_V2_MAX_STRING_SIZE: usize = 256;
/// `NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE` (`ctrl0080gpu.h`) of 570.144.
pub const CLASSLIST_V2_MAX_SIZE_V570: usize = 100;
/// `NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE` (`ctrl0080gpu.h`) of 580.142: doubled, so
/// `NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS` differs between the branches.
pub const CLASSLIST_V2_MAX_SIZE_V580: usize = 200;

/// `NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_PARAMS` (`ctrl0000system.h`): the driver's
/// version strings, copied into caller buffers.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct BuildVersionParams {
    /// `sizeOfStrings`: size of each buffer (0 to ask for the size needed).
    pub size_of_strings: u32,
    /// Padding before `pDriverVersionBuffer`.
    pub _pad0: u32,
    /// `pDriverVersionBuffer`.
    pub p_driver_version_buffer: NvP64,
    /// `pVersionBuffer`.
    pub p_version_buffer: NvP64,
    /// `pTitleBuffer`.
    pub p_title_buffer: NvP64,
    /// `changelistNumber`.
    pub changelist_number: u32,
    /// `officialChangelistNumber`.
    pub official_changelist_number: u32,
}

/// `NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS` (`ctrl0000system.h`): the driver's
/// version strings inline (e.g. `driver_version_buffer` = "580.159.04").
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct BuildVersionV2Params {
    /// `driverVersionBuffer`: NUL-terminated.
    pub driver_version_buffer: [u8; BUILD_VERSION_V2_MAX_STRING_SIZE],
    /// `versionBuffer`: NUL-terminated.
    pub version_buffer: [u8; BUILD_VERSION_V2_MAX_STRING_SIZE],
    /// `driverBranch`: NUL-terminated.
    pub driver_branch: [u8; BUILD_VERSION_V2_MAX_STRING_SIZE],
    /// `titleBuffer`: NUL-terminated.
    pub title_buffer: [u8; BUILD_VERSION_V2_MAX_STRING_SIZE],
    /// `changelistNumber`.
    pub changelist_number: u32,
    /// `officialChangelistNumber`.
    pub official_changelist_number: u32,
}

impl BuildVersionV2Params {
    /// `driverVersionBuffer` up to its NUL, if it is UTF-8.
    pub fn driver_version(&self) -> Option<&str> {
        core::str::from_utf8(crate::until_nul(&self.driver_version_buffer)).ok()
    }
}

/// `NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS` (`ctrl0000gpu.h`): where a GPU id (from
/// `nv_ioctl_card_info` or the attached-ids list) sits among devices and instances.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GpuIdInfoV2Params {
    /// `gpuId`: in.
    pub gpu_id: u32,
    /// `gpuFlags`.
    pub gpu_flags: u32,
    /// `deviceInstance`: the `device_id` to allocate `NV01_DEVICE_0` with.
    pub device_instance: u32,
    /// `subDeviceInstance`.
    pub sub_device_instance: u32,
    /// `sliStatus`.
    pub sli_status: u32,
    /// `boardId`.
    pub board_id: u32,
    /// `gpuInstance`.
    pub gpu_instance: u32,
    /// `numaId`.
    pub numa_id: i32,
}

/// `NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS` (`ctrl0080gpu.h`): first call with
/// `class_list` 0 to learn `num_classes`, then with a buffer of that many `u32`s.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ClassListParams {
    /// `numClasses`.
    pub num_classes: u32,
    /// Padding before `classList`.
    pub _pad0: u32,
    /// `classList`: address of a `u32` array.
    pub class_list: NvP64,
}

macro_rules! class_list_v2 {
    ($name:ident, $max:ident, $branch:literal) => {
        #[doc = concat!("`NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS` (`ctrl0080gpu.h`) of **", $branch, "**:")]
        /// the class list inline, one call (the form GSP-RM takes, having no pointers).
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
        pub struct $name {
            /// `numClasses`: out.
            pub num_classes: u32,
            /// `classList`: out.
            pub class_list: [u32; $max],
        }

        impl $name {
            /// The classes returned; a `num_classes` beyond the array is clamped to it.
            pub fn classes(&self) -> &[u32] {
                let n = (self.num_classes as usize).min($max);
                &self.class_list[..n]
            }
        }
    };
}

class_list_v2!(ClassListV2ParamsV570, CLASSLIST_V2_MAX_SIZE_V570, "570.144");
class_list_v2!(ClassListV2ParamsV580, CLASSLIST_V2_MAX_SIZE_V580, "580.142");

zeroed_default!(
    BuildVersionV2Params,
    ClassListV2ParamsV570,
    ClassListV2ParamsV580
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_list_v2_clamps_a_count_beyond_the_array() {
        let mut p = ClassListV2ParamsV570::default();
        p.class_list[0] = 0xc86f;
        p.class_list[1] = 0xcbc0;
        p.num_classes = 2;
        assert_eq!(p.classes(), &[0xc86f, 0xcbc0]);
        p.num_classes = 1000;
        assert_eq!(p.classes().len(), CLASSLIST_V2_MAX_SIZE_V570);
        let mut q = ClassListV2ParamsV580 {
            num_classes: 1000,
            ..Default::default()
        };
        assert_eq!(q.classes().len(), CLASSLIST_V2_MAX_SIZE_V580);
        q.num_classes = 0;
        assert!(q.classes().is_empty());
    }

    #[test]
    fn driver_version_stops_at_nul() {
        let mut p = BuildVersionV2Params::default();
        p.driver_version_buffer[..10].copy_from_slice(b"580.159.04");
        assert_eq!(p.driver_version(), Some("580.159.04"));
        p.driver_version_buffer[0] = 0xff;
        assert_eq!(p.driver_version(), None, "not UTF-8");
    }
}
