//! The kernel driver's ioctl framing: `nv-ioctl.h`, `nv-ioctl-numbers.h`,
//! `nv-unix-nvos-params-wrappers.h` and the UVM ioctls of `uvm_ioctl.h` /
//! `uvm_linux_ioctl.h`, as shipped with driver 580.142 (`shared/reference/
//! open-gpu-kernel-modules-580.142/kernel-open`). The layout test in
//! `tests/src/layout/nvk.rs` checks every struct here against those headers.
//!
//! These exist only in the 580 tree (the 570.144 tree we boot over VFIO has no
//! kernel-open directory), so there is one version of each.

use std::os::fd::RawFd;

use nvbare_gsp::rm::nvos::{AllocMemoryParams, MapMemoryParams};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `NV_IOCTL_MAGIC`.
pub const NV_IOCTL_MAGIC: u8 = b'F';
/// `NV_IOCTL_BASE`.
pub const NV_IOCTL_BASE: u32 = 200;
/// `NV_ESC_CARD_INFO`.
pub const NV_ESC_CARD_INFO: u32 = NV_IOCTL_BASE;
/// `NV_ESC_REGISTER_FD`.
pub const NV_ESC_REGISTER_FD: u32 = NV_IOCTL_BASE + 1;
/// `NV_ESC_CHECK_VERSION_STR`.
pub const NV_ESC_CHECK_VERSION_STR: u32 = NV_IOCTL_BASE + 10;

/// Linux `_IOWR('F', nr, size)`: how the kernel driver numbers every escape.
pub const fn iowr(nr: u32, size: usize) -> u64 {
    (3u64 << 30) | (((size as u64) & 0x3fff) << 16) | ((NV_IOCTL_MAGIC as u64) << 8) | nr as u64
}

/// `nv_pci_info_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct NvPciInfo {
    pub domain: u32,
    pub bus: u8,
    pub slot: u8,
    pub function: u8,
    pub _pad0: u8,
    pub vendor_id: u16,
    pub device_id: u16,
}

/// `nv_ioctl_card_info_t` (`NV_ESC_CARD_INFO` fills an array of these).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct NvIoctlCardInfo {
    /// `NvBool valid`.
    pub valid: u8,
    pub _pad0: [u8; 3],
    pub pci_info: NvPciInfo,
    pub gpu_id: u32,
    pub interrupt_line: u16,
    pub _pad1: [u8; 2],
    pub reg_address: u64,
    pub reg_size: u64,
    pub fb_address: u64,
    pub fb_size: u64,
    pub minor_number: u32,
    pub dev_name: [u8; 10],
    pub _pad2: [u8; 2],
}

/// How many card-info slots `NV_ESC_CARD_INFO` is handed (the driver's own limit
/// is `NV_MAX_DEVICES` = 32; tinygrad passes 64, which is also accepted).
pub const CARD_INFO_SLOTS: usize = 32;

/// `nv_ioctl_register_fd_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct NvIoctlRegisterFd {
    pub ctl_fd: i32,
}

/// `nv_ioctl_rm_api_version_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct NvIoctlRmApiVersion {
    pub cmd: u32,
    pub reply: u32,
    pub version_string: [u8; 64],
}

/// `NV_RM_API_VERSION_CMD_QUERY`.
pub const NV_RM_API_VERSION_CMD_QUERY: u32 = b'2' as u32;

/// `nv_ioctl_nvos02_parameters_with_fd`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct NvIoctlNvos02ParametersWithFd {
    pub params: AllocMemoryParams,
    pub fd: i32,
    pub _pad0: [u8; 4],
}

/// `nv_ioctl_nvos33_parameters_with_fd`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct NvIoctlNvos33ParametersWithFd {
    pub params: MapMemoryParams,
    pub fd: i32,
    pub _pad0: [u8; 4],
}

// ---------------------------------------------------------------------------
// UVM (`/dev/nvidia-uvm`). On Linux `UVM_IOCTL_BASE(i)` is `i` itself and the
// ioctl request number is the bare command.

/// `UVM_INITIALIZE` (uvm_linux_ioctl.h).
pub const UVM_INITIALIZE: u64 = 0x3000_0001;
/// `UVM_REGISTER_GPU_VASPACE`.
pub const UVM_REGISTER_GPU_VASPACE: u64 = 25;
/// `UVM_UNREGISTER_GPU_VASPACE`.
pub const UVM_UNREGISTER_GPU_VASPACE: u64 = 26;
/// `UVM_REGISTER_CHANNEL`.
pub const UVM_REGISTER_CHANNEL: u64 = 27;
/// `UVM_MAP_EXTERNAL_ALLOCATION`.
pub const UVM_MAP_EXTERNAL_ALLOCATION: u64 = 33;
/// `UVM_FREE`.
pub const UVM_FREE: u64 = 34;
/// `UVM_REGISTER_GPU`.
pub const UVM_REGISTER_GPU: u64 = 37;
/// `UVM_UNREGISTER_GPU`.
pub const UVM_UNREGISTER_GPU: u64 = 38;
/// `UVM_CREATE_EXTERNAL_RANGE`.
pub const UVM_CREATE_EXTERNAL_RANGE: u64 = 73;
/// `UVM_MM_INITIALIZE`.
pub const UVM_MM_INITIALIZE: u64 = 75;

/// `UVM_MAX_GPUS` = `NV_MAX_DEVICES` (32) × `UVM_PARENT_ID_MAX_SUB_PROCESSORS` (8).
pub const UVM_MAX_GPUS: usize = 256;

/// `NvProcessorUuid`.
pub type NvProcessorUuid = [u8; 16];

/// UVM param structs all end in `NV_STATUS rmStatus`; this lets one wrapper
/// turn it into an error.
pub trait UvmParams: IntoBytes + FromBytes {
    /// The request number.
    const CMD: u64;
    /// The RM status the kernel wrote back.
    fn rm_status(&self) -> u32;
}

macro_rules! uvm_params {
    ($(#[$doc:meta])* $name:ident = $cmd:expr, { $($(#[$fdoc:meta])* pub $f:ident : $t:ty),* $(,)? }) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
        pub struct $name { $($(#[$fdoc])* pub $f: $t),* }
        impl UvmParams for $name {
            const CMD: u64 = $cmd;
            fn rm_status(&self) -> u32 { self.rm_status }
        }
        impl Default for $name {
            fn default() -> Self { <Self as zerocopy::FromZeros>::new_zeroed() }
        }
    };
}

uvm_params!(
    /// `UVM_INITIALIZE_PARAMS`.
    UvmInitializeParams = UVM_INITIALIZE, {
    pub flags: u64,
    pub rm_status: u32,
    pub _pad0: u32,
});

uvm_params!(
    /// `UVM_MM_INITIALIZE_PARAMS`.
    UvmMmInitializeParams = UVM_MM_INITIALIZE, {
    pub uvm_fd: i32,
    pub rm_status: u32,
});

uvm_params!(
    /// `UVM_REGISTER_GPU_PARAMS`.
    UvmRegisterGpuParams = UVM_REGISTER_GPU, {
    pub gpu_uuid: NvProcessorUuid,
    pub numa_enabled: u8,
    pub _pad0: [u8; 3],
    pub numa_node_id: i32,
    pub rm_ctrl_fd: i32,
    pub h_client: u32,
    pub h_smc_part_ref: u32,
    pub rm_status: u32,
});

uvm_params!(
    /// `UVM_UNREGISTER_GPU_PARAMS`.
    UvmUnregisterGpuParams = UVM_UNREGISTER_GPU, {
    pub gpu_uuid: NvProcessorUuid,
    pub rm_status: u32,
});

uvm_params!(
    /// `UVM_REGISTER_GPU_VASPACE_PARAMS`.
    UvmRegisterGpuVaspaceParams = UVM_REGISTER_GPU_VASPACE, {
    pub gpu_uuid: NvProcessorUuid,
    pub rm_ctrl_fd: i32,
    pub h_client: u32,
    pub h_va_space: u32,
    pub rm_status: u32,
});

uvm_params!(
    /// `UVM_UNREGISTER_GPU_VASPACE_PARAMS`.
    UvmUnregisterGpuVaspaceParams = UVM_UNREGISTER_GPU_VASPACE, {
    pub gpu_uuid: NvProcessorUuid,
    pub rm_status: u32,
});

uvm_params!(
    /// `UVM_REGISTER_CHANNEL_PARAMS`.
    UvmRegisterChannelParams = UVM_REGISTER_CHANNEL, {
    pub gpu_uuid: NvProcessorUuid,
    pub rm_ctrl_fd: i32,
    pub h_client: u32,
    pub h_channel: u32,
    pub _pad0: u32,
    pub base: u64,
    pub length: u64,
    pub rm_status: u32,
    pub _pad1: u32,
});

uvm_params!(
    /// `UVM_CREATE_EXTERNAL_RANGE_PARAMS`.
    UvmCreateExternalRangeParams = UVM_CREATE_EXTERNAL_RANGE, {
    pub base: u64,
    pub length: u64,
    pub rm_status: u32,
    pub _pad0: u32,
});

uvm_params!(
    /// `UVM_FREE_PARAMS`.
    UvmFreeParams = UVM_FREE, {
    pub base: u64,
    pub length: u64,
    pub rm_status: u32,
    pub _pad0: u32,
});

/// `UvmGpuMappingAttributes` (uvm_types.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct UvmGpuMappingAttributes {
    pub gpu_uuid: NvProcessorUuid,
    /// `UvmGpuMappingType`: 1 = read/write/atomic (`UvmGpuMappingTypeReadWriteAtomic`).
    pub gpu_mapping_type: u32,
    pub gpu_caching_type: u32,
    pub gpu_format_type: u32,
    pub gpu_element_bits: u32,
    pub gpu_compression_type: u32,
}

/// `UvmGpuMappingTypeReadWriteAtomic`.
pub const UVM_GPU_MAPPING_TYPE_READ_WRITE_ATOMIC: u32 = 1;

uvm_params!(
    /// `UVM_MAP_EXTERNAL_ALLOCATION_PARAMS`.
    UvmMapExternalAllocationParams = UVM_MAP_EXTERNAL_ALLOCATION, {
    pub base: u64,
    pub length: u64,
    pub offset: u64,
    pub per_gpu_attributes: [UvmGpuMappingAttributes; UVM_MAX_GPUS],
    pub gpu_attributes_count: u64,
    pub rm_ctrl_fd: i32,
    pub h_client: u32,
    pub h_memory: u32,
    pub rm_status: u32,
});

/// Issues `ioctl(fd, request, arg)` over a parameter block.
///
/// Returns the OS error when the ioctl itself fails; the RM status inside the
/// block is the caller's to check.
pub fn ioctl<T: IntoBytes + FromBytes>(
    fd: RawFd,
    request: u64,
    arg: &mut T,
) -> std::io::Result<()> {
    // SAFETY: `arg` is a live, exclusively borrowed plain-data block whose size is
    // the one the request encodes (or the UVM command expects); the kernel reads
    // and writes only within it for the duration of the call.
    let rc = unsafe { libc::ioctl(fd, request as _, arg as *mut T as *mut libc::c_void) };
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}
