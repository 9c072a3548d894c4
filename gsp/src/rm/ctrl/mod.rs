//! RM control commands (the `cmd` of [`super::nvos::ControlParams`]) and their parameter
//! blocks, from `ctrl/**` of `src/common/sdk/nvidia/inc`.
//!
//! A command number is `(class interface id << 8) | message id`, as NVIDIA's FINN tool
//! generates them; [`cmd`] lists the ones nvbare uses with their C names.
//! Parameter blocks are grouped by the object they are addressed to:
//! [`root`] (client and device: `NV0000_*`, `NV0080_*`), [`subdevice`], [`gr`], [`fb`] and
//! [`ce`] (`NV2080_*`),
//! [`channel`] (TSG, channel and VA space: `NVA06C_*`, `NVA06F_*`, `NVC36F_*`, `NV90F1_*`)
//! and [`debugger`] (`NV83DE_*`).
//!
//! Three blocks differ between 570.144 and 580.142: [`channel::GpfifoScheduleParamsV570`] /
//! [`channel::GpfifoScheduleParamsV580`] and [`fb::FbGetInfoV2ParamsV570`] /
//! [`fb::FbGetInfoV2ParamsV580`], and [`root::ClassListV2ParamsV570`] /
//! [`root::ClassListV2ParamsV580`]. All command numbers are the same in both.

pub mod ce;
pub mod channel;
pub mod debugger;
pub mod fb;
pub mod gr;
pub mod root;
pub mod subdevice;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// One `index`/`data` pair of the generic info lists (`NVXXXX_CTRL_XXX_INFO`,
/// `ctrl/ctrlxxxx.h`), which `NV2080_CTRL_GR_INFO`, `NV2080_CTRL_FB_INFO` and
/// `NV2080_CTRL_INTERNAL_GR_INFO` are typedefs of.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct InfoEntry {
    /// `index`: what to read (an `*_INFO_INDEX_*`).
    pub index: u32,
    /// `data`: the value read.
    pub data: u32,
}

/// Implements `Default` as all-zero bytes, for blocks whose arrays are too long for
/// `#[derive(Default)]`.
macro_rules! zeroed_default {
    ($($ty:ty),* $(,)?) => {
        $(impl Default for $ty {
            fn default() -> Self {
                <Self as zerocopy::FromZeros>::new_zeroed()
            }
        })*
    };
}
pub(crate) use zeroed_default;

/// Control command numbers (`NVxxxx_CTRL_CMD_*`), the same in 570.144 and 580.142.
pub mod cmd {
    /// `NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION` (`ctrl0000system.h`), on the client.
    pub const NV0000_SYSTEM_GET_BUILD_VERSION: u32 = 0x0000_0101;
    /// `NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2` (`ctrl0000system.h`), on the client.
    pub const NV0000_SYSTEM_GET_BUILD_VERSION_V2: u32 = 0x0000_013e;
    /// `NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2` (`ctrl0000gpu.h`), on the client.
    pub const NV0000_GPU_GET_ID_INFO_V2: u32 = 0x0000_0205;
    /// `NV0080_CTRL_CMD_GPU_GET_CLASSLIST` (`ctrl0080gpu.h`), on the device.
    pub const NV0080_GPU_GET_CLASSLIST: u32 = 0x0080_0201;
    /// `NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2` (`ctrl0080gpu.h`), on the device.
    pub const NV0080_GPU_GET_CLASSLIST_V2: u32 = 0x0080_0292;
    /// `NV2080_CTRL_CMD_GPU_GET_NAME_STRING` (`ctrl2080gpu.h`), on the subdevice.
    pub const NV2080_GPU_GET_NAME_STRING: u32 = 0x2080_0110;
    /// `NV2080_CTRL_CMD_GPU_PROMOTE_CTX` (`ctrl2080gpu.h`), on the subdevice.
    pub const NV2080_GPU_PROMOTE_CTX: u32 = 0x2080_012b;
    /// `NV2080_CTRL_CMD_GPU_GET_GID_INFO` (`ctrl2080gpu.h`), on the subdevice.
    pub const NV2080_GPU_GET_GID_INFO: u32 = 0x2080_014a;
    /// `NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_INFO` (`ctrl2080internal.h`): GSP-RM only.
    pub const NV2080_INTERNAL_STATIC_KGR_GET_INFO: u32 = 0x2080_0a2a;
    /// `NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_CONTEXT_BUFFERS_INFO`
    /// (`ctrl2080internal.h`): GSP-RM only.
    pub const NV2080_INTERNAL_STATIC_KGR_GET_CONTEXT_BUFFERS_INFO: u32 = 0x2080_0a32;
    /// `NV2080_CTRL_CMD_INTERNAL_BUS_FLUSH_WITH_SYSMEMBAR` (`ctrl2080internal.h`): no
    /// parameters; there is no non-internal bus flush command.
    pub const NV2080_INTERNAL_BUS_FLUSH_WITH_SYSMEMBAR: u32 = 0x2080_0a70;
    /// `NV2080_CTRL_CMD_FIFO_GET_DEVICE_INFO_TABLE` (`ctrl2080fifo.h`), on the subdevice.
    pub const NV2080_FIFO_GET_DEVICE_INFO_TABLE: u32 = 0x2080_1112;
    /// `NV2080_CTRL_CMD_GR_GET_INFO` (`ctrl2080gr.h`), on the subdevice.
    pub const NV2080_GR_GET_INFO: u32 = 0x2080_1201;
    /// `NV2080_CTRL_CMD_FB_GET_INFO_V2` (`ctrl2080fb.h`), on the subdevice.
    pub const NV2080_FB_GET_INFO_V2: u32 = 0x2080_1303;
    /// `NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE` (`ctrl2080fb.h`), on the subdevice.
    pub const NV2080_FB_FLUSH_GPU_CACHE: u32 = 0x2080_130e;
    /// `NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK` (`ctrl2080ce.h`), on the subdevice.
    pub const NV2080_CE_GET_CE_PCE_MASK: u32 = 0x2080_2a02;
    /// `NV2080_CTRL_CMD_CE_GET_ALL_CAPS` (`ctrl2080ce.h`), on the subdevice.
    pub const NV2080_CE_GET_ALL_CAPS: u32 = 0x2080_2a0a;
    /// `NV2080_CTRL_CMD_BUS_GET_PCI_INFO` (`ctrl2080bus.h`), on the subdevice.
    pub const NV2080_BUS_GET_PCI_INFO: u32 = 0x2080_1801;
    /// `NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES` (`ctrl83dedebug.h`), on the debugger.
    pub const NV83DE_DEBUG_READ_ALL_SM_ERROR_STATES: u32 = 0x83de_030c;
    /// `NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO` (`ctrl83dedebug.h`), on the debugger.
    pub const NV83DE_DEBUG_READ_MMU_FAULT_INFO: u32 = 0x83de_0328;
    /// `NV90F1_CTRL_CMD_VASPACE_COPY_SERVER_RESERVED_PDES` (`ctrl90f1.h`), on the VA space.
    pub const NV90F1_VASPACE_COPY_SERVER_RESERVED_PDES: u32 = 0x90f1_0106;
    /// `NVA06C_CTRL_CMD_GPFIFO_SCHEDULE` (`ctrla06c.h`), on the TSG.
    pub const NVA06C_GPFIFO_SCHEDULE: u32 = 0xa06c_0101;
    /// `NVA06C_CTRL_CMD_BIND` (`ctrla06c.h`), on the TSG.
    pub const NVA06C_BIND: u32 = 0xa06c_0102;
    /// `NVA06F_CTRL_CMD_GPFIFO_SCHEDULE` (`ctrla06fgpfifo.h`), on a channel.
    pub const NVA06F_GPFIFO_SCHEDULE: u32 = 0xa06f_0103;
    /// `NVA06F_CTRL_CMD_BIND` (`ctrla06fgpfifo.h`), on a channel.
    pub const NVA06F_BIND: u32 = 0xa06f_0104;
    /// `NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN` (`ctrlc36f.h`), on a Volta+ channel.
    pub const NVC36F_GPFIFO_GET_WORK_SUBMIT_TOKEN: u32 = 0xc36f_0108;

    /// Every command of this module as (C name, header under `ctrl/`, value).
    pub const ALL: &[(&str, &str, u32)] = &[
        (
            "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION",
            "ctrl0000/ctrl0000system.h",
            NV0000_SYSTEM_GET_BUILD_VERSION,
        ),
        (
            "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2",
            "ctrl0000/ctrl0000system.h",
            NV0000_SYSTEM_GET_BUILD_VERSION_V2,
        ),
        (
            "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2",
            "ctrl0000/ctrl0000gpu.h",
            NV0000_GPU_GET_ID_INFO_V2,
        ),
        (
            "NV0080_CTRL_CMD_GPU_GET_CLASSLIST",
            "ctrl0080/ctrl0080gpu.h",
            NV0080_GPU_GET_CLASSLIST,
        ),
        (
            "NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2",
            "ctrl0080/ctrl0080gpu.h",
            NV0080_GPU_GET_CLASSLIST_V2,
        ),
        (
            "NV2080_CTRL_CMD_GPU_GET_NAME_STRING",
            "ctrl2080/ctrl2080gpu.h",
            NV2080_GPU_GET_NAME_STRING,
        ),
        (
            "NV2080_CTRL_CMD_GPU_PROMOTE_CTX",
            "ctrl2080/ctrl2080gpu.h",
            NV2080_GPU_PROMOTE_CTX,
        ),
        (
            "NV2080_CTRL_CMD_GPU_GET_GID_INFO",
            "ctrl2080/ctrl2080gpu.h",
            NV2080_GPU_GET_GID_INFO,
        ),
        (
            "NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_INFO",
            "ctrl2080/ctrl2080internal.h",
            NV2080_INTERNAL_STATIC_KGR_GET_INFO,
        ),
        (
            "NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_CONTEXT_BUFFERS_INFO",
            "ctrl2080/ctrl2080internal.h",
            NV2080_INTERNAL_STATIC_KGR_GET_CONTEXT_BUFFERS_INFO,
        ),
        (
            "NV2080_CTRL_CMD_INTERNAL_BUS_FLUSH_WITH_SYSMEMBAR",
            "ctrl2080/ctrl2080internal.h",
            NV2080_INTERNAL_BUS_FLUSH_WITH_SYSMEMBAR,
        ),
        (
            "NV2080_CTRL_CMD_FIFO_GET_DEVICE_INFO_TABLE",
            "ctrl2080/ctrl2080fifo.h",
            NV2080_FIFO_GET_DEVICE_INFO_TABLE,
        ),
        (
            "NV2080_CTRL_CMD_GR_GET_INFO",
            "ctrl2080/ctrl2080gr.h",
            NV2080_GR_GET_INFO,
        ),
        (
            "NV2080_CTRL_CMD_FB_GET_INFO_V2",
            "ctrl2080/ctrl2080fb.h",
            NV2080_FB_GET_INFO_V2,
        ),
        (
            "NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE",
            "ctrl2080/ctrl2080fb.h",
            NV2080_FB_FLUSH_GPU_CACHE,
        ),
        (
            "NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK",
            "ctrl2080/ctrl2080ce.h",
            NV2080_CE_GET_CE_PCE_MASK,
        ),
        (
            "NV2080_CTRL_CMD_CE_GET_ALL_CAPS",
            "ctrl2080/ctrl2080ce.h",
            NV2080_CE_GET_ALL_CAPS,
        ),
        (
            "NV2080_CTRL_CMD_BUS_GET_PCI_INFO",
            "ctrl2080/ctrl2080bus.h",
            NV2080_BUS_GET_PCI_INFO,
        ),
        (
            "NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES",
            "ctrl83de/ctrl83dedebug.h",
            NV83DE_DEBUG_READ_ALL_SM_ERROR_STATES,
        ),
        (
            "NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO",
            "ctrl83de/ctrl83dedebug.h",
            NV83DE_DEBUG_READ_MMU_FAULT_INFO,
        ),
        (
            "NV90F1_CTRL_CMD_VASPACE_COPY_SERVER_RESERVED_PDES",
            "ctrl90f1.h",
            NV90F1_VASPACE_COPY_SERVER_RESERVED_PDES,
        ),
        (
            "NVA06C_CTRL_CMD_GPFIFO_SCHEDULE",
            "ctrla06c.h",
            NVA06C_GPFIFO_SCHEDULE,
        ),
        ("NVA06C_CTRL_CMD_BIND", "ctrla06c.h", NVA06C_BIND),
        (
            "NVA06F_CTRL_CMD_GPFIFO_SCHEDULE",
            "ctrla06f/ctrla06fgpfifo.h",
            NVA06F_GPFIFO_SCHEDULE,
        ),
        (
            "NVA06F_CTRL_CMD_BIND",
            "ctrla06f/ctrla06fgpfifo.h",
            NVA06F_BIND,
        ),
        (
            "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN",
            "ctrlc36f.h",
            NVC36F_GPFIFO_GET_WORK_SUBMIT_TOKEN,
        ),
    ];
}
