//! RPC message header and the fixed parts of the RPC payloads nvbare sends.
//!
//! Headers: `src/nvidia/generated/g_rpc-message-header.h`,
//! `src/nvidia/generated/g_rpc-structures.h`, `src/nvidia/generated/g_sdk-structures.h`,
//! `src/nvidia/inc/kernel/vgpu/sdk-structures.h`, `src/nvidia/inc/kernel/vgpu/rpc_headers.h`.
//! Variable-length trailing arrays (`params[]`, `commandBuffer[]`, `pte_pde[]`) are not
//! part of the Rust types: the payload follows the fixed part in the message buffer.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `NV_VGPU_MSG_SIGNATURE_VALID` ("VRPC" little-endian), `rpc_headers.h`.
pub const NV_VGPU_MSG_SIGNATURE_VALID: u32 = 0x4350_5256;
/// `NV_VGPU_MSG_HEADER_VERSION_MAJOR_TOT`, `rpc_headers.h`.
pub const NV_VGPU_MSG_HEADER_VERSION_MAJOR_TOT: u32 = 0x3;
/// `NV_VGPU_MSG_HEADER_VERSION_MINOR_TOT`, `rpc_headers.h`.
pub const NV_VGPU_MSG_HEADER_VERSION_MINOR_TOT: u32 = 0x0;
/// The `header_version` value GSP-RM 570.144 expects: major in 31:24, minor in 23:16.
pub const RPC_HEADER_VERSION: u32 =
    (NV_VGPU_MSG_HEADER_VERSION_MAJOR_TOT << 24) | (NV_VGPU_MSG_HEADER_VERSION_MINOR_TOT << 16);

/// Mirrors `rpc_message_header_v03_00` (`rpc_message_header_v`),
/// `src/nvidia/generated/g_rpc-message-header.h`. The union `u` (`spare`/`cpuRmGfid`)
/// is a single `u32`. The RPC payload (`rpc_message_data[]`) follows it. Aligned to 8
/// like the C type, whose trailing `rpc_generic_union[]` holds `NvU64`s.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C, align(8))]
pub struct RpcMessageHeader {
    /// `header_version`: see [`RPC_HEADER_VERSION`].
    pub header_version: u32,
    /// `signature`: [`NV_VGPU_MSG_SIGNATURE_VALID`].
    pub signature: u32,
    /// `length`: header plus payload, in bytes.
    pub length: u32,
    /// `function`: an `NV_VGPU_MSG_FUNCTION_*` or `NV_VGPU_MSG_EVENT_*` number.
    pub function: u32,
    /// `rpc_result`: `NV_VGPU_MSG_RESULT_*` / `NV_STATUS` set by the receiver.
    pub rpc_result: u32,
    /// `rpc_result_private`.
    pub rpc_result_private: u32,
    /// `sequence`.
    pub sequence: u32,
    /// `u.spare` / `u.cpuRmGfid`.
    pub spare: u32,
}

/// Mirrors `rpc_gsp_rm_alloc_v03_00`, `src/nvidia/generated/g_rpc-structures.h`:
/// the payload of `NV_VGPU_MSG_FUNCTION_GSP_RM_ALLOC`; `params[paramsSize]` follows.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct RpcGspRmAlloc {
    /// `hClient`.
    pub h_client: u32,
    /// `hParent`.
    pub h_parent: u32,
    /// `hObject`.
    pub h_object: u32,
    /// `hClass`.
    pub h_class: u32,
    /// `status`: the `NV_STATUS` of the allocation, set by GSP-RM.
    pub status: u32,
    /// `paramsSize`.
    pub params_size: u32,
    /// `flags`.
    pub flags: u32,
    /// `reserved[4]`.
    pub reserved: [u8; 4],
}

/// Mirrors `rpc_gsp_rm_control_v03_00`, `src/nvidia/generated/g_rpc-structures.h`:
/// the payload of `NV_VGPU_MSG_FUNCTION_GSP_RM_CONTROL`; `params[paramsSize]` follows.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct RpcGspRmControl {
    /// `hClient`.
    pub h_client: u32,
    /// `hObject`.
    pub h_object: u32,
    /// `cmd`: the `NVxxxx_CTRL_CMD_*` number.
    pub cmd: u32,
    /// `status`: the `NV_STATUS` of the control, set by GSP-RM.
    pub status: u32,
    /// `paramsSize`.
    pub params_size: u32,
    /// `flags`.
    pub flags: u32,
}

/// Mirrors `struct pte_desc`, `src/nvidia/inc/kernel/vgpu/sdk-structures.h`, without its
/// trailing `pte_pde[]` array of `NvU64`s (which follows, 8-byte aligned).
///
/// The C bitfield word holds `idr:2`, `reserved1:14`, `length:16` from the low bit up.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C, align(8))]
pub struct PteDesc {
    /// The bitfield word `idr:2 | reserved1:14 | length:16`.
    pub bits: u32,
    /// Padding before `pte_pde[]` (8-byte aligned in C).
    pub _pad0: u32,
}

impl PteDesc {
    /// Packs `idr` (2 bits) and `length` (16 bits, the number of `pte_pde` entries).
    pub const fn new(idr: u32, length: u16) -> Self {
        Self {
            bits: (idr & 0x3) | ((length as u32) << 16),
            _pad0: 0,
        }
    }
    /// The `idr` bitfield: 0 means `pte_pde[]` holds PTEs, more means PDE levels.
    pub const fn idr(&self) -> u32 {
        self.bits & 0x3
    }
    /// The `length` bitfield: the number of `pte_pde[]` entries.
    pub const fn length(&self) -> u16 {
        (self.bits >> 16) as u16
    }
}

/// Mirrors `rpc_alloc_memory_v13_01`, `src/nvidia/generated/g_rpc-structures.h`: the
/// payload of `NV_VGPU_MSG_FUNCTION_ALLOC_MEMORY`; `pteDesc.pte_pde[]` follows.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct RpcAllocMemory {
    /// `hClient`.
    pub h_client: u32,
    /// `hDevice`.
    pub h_device: u32,
    /// `hMemory`.
    pub h_memory: u32,
    /// `hClass`.
    pub h_class: u32,
    /// `flags`.
    pub flags: u32,
    /// `pteAdjust`.
    pub pte_adjust: u32,
    /// `format`.
    pub format: u32,
    /// Padding before the 8-byte aligned `length`.
    pub _pad0: u32,
    /// `length`.
    pub length: u64,
    /// `pageCount`.
    pub page_count: u32,
    /// Padding before the 8-byte aligned `pteDesc`.
    pub _pad1: u32,
    /// `pteDesc`.
    pub pte_desc: PteDesc,
}

/// Mirrors `NV0080_CTRL_DMA_SET_PAGE_DIRECTORY_PARAMS_v1E_05`,
/// `src/nvidia/generated/g_sdk-structures.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct Nv0080CtrlDmaSetPageDirectoryParams {
    /// `physAddress`.
    pub phys_address: u64,
    /// `numEntries`.
    pub num_entries: u32,
    /// `flags`: `NV0080_CTRL_DMA_SET_PAGE_DIRECTORY_FLAGS_*`.
    pub flags: u32,
    /// `hVASpace`.
    pub h_va_space: u32,
    /// `chId`.
    pub ch_id: u32,
    /// `subDeviceId`: ID+1, 0 for broadcast.
    pub sub_device_id: u32,
    /// `pasid`.
    pub pasid: u32,
}

/// Mirrors `rpc_set_page_directory_v1E_05` (the current `rpc_set_page_directory_v` in
/// 570.144), `src/nvidia/generated/g_rpc-structures.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct RpcSetPageDirectory {
    /// `hClient`.
    pub h_client: u32,
    /// `hDevice`.
    pub h_device: u32,
    /// `pasid`.
    pub pasid: u32,
    /// Padding before the 8-byte aligned `params`.
    pub _pad0: u32,
    /// `params`.
    pub params: Nv0080CtrlDmaSetPageDirectoryParams,
}

/// Mirrors `rpc_unloading_guest_driver_v1F_07` (the current `rpc_unloading_guest_driver_v`),
/// `src/nvidia/generated/g_rpc-structures.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct RpcUnloadingGuestDriver {
    /// `bInPMTransition` (`NvBool`).
    pub b_in_pm_transition: u8,
    /// `bGc6Entering` (`NvBool`).
    pub b_gc6_entering: u8,
    /// Padding before `newLevel`.
    pub _pad0: [u8; 2],
    /// `newLevel`.
    pub new_level: u32,
}

/// Mirrors `rpc_run_cpu_sequencer_v17_00`, `src/nvidia/generated/g_rpc-structures.h`:
/// the payload of `NV_VGPU_MSG_EVENT_GSP_RUN_CPU_SEQUENCER`; `commandBuffer[]` (dwords)
/// follows.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct RpcRunCpuSequencer {
    /// `bufferSizeDWord`.
    pub buffer_size_dword: u32,
    /// `cmdIndex`: the number of dwords of `commandBuffer` in use.
    pub cmd_index: u32,
    /// `regSaveArea[8]` (`GSP_SEQ_BUF_REG_SAVE_SIZE`).
    pub reg_save_area: [u32; 8],
}
