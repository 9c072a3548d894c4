//! Fixed parts of the event payloads GSP-RM sends unprompted.
//!
//! Header: `src/nvidia/generated/g_rpc-structures.h` (the current `rpc_*_v` versions in
//! 570.144). Trailing variable-length arrays are not part of the Rust types; where one
//! starts inside the C struct's tail padding its offset is a separate constant.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Mirrors `rpc_os_error_log_v17_00` (`rpc_os_error_log_v`): the payload of
/// `NV_VGPU_MSG_EVENT_OS_ERROR_LOG`, an Xid report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct RpcOsErrorLog {
    /// `exceptType`: the Xid number.
    pub except_type: u32,
    /// `runlistId`.
    pub runlist_id: u32,
    /// `chid`.
    pub chid: u32,
    /// `errString[0x100]`: NUL-terminated text.
    pub err_string: [u8; 0x100],
    /// `preemptiveRemovalPreviousXid`.
    pub preemptive_removal_previous_xid: u32,
}

/// Offset of `eventData[]` in `rpc_post_event_v17_00`: right after `bNotifyList`, inside
/// the C struct's tail padding (so less than `sizeof`).
pub const RPC_POST_EVENT_DATA_OFFSET: usize =
    core::mem::offset_of!(RpcPostEvent, b_notify_list) + 1;

/// Mirrors `rpc_post_event_v17_00` (`rpc_post_event_v`): the payload of
/// `NV_VGPU_MSG_EVENT_POST_EVENT`; `eventData[eventDataSize]` starts at
/// [`RPC_POST_EVENT_DATA_OFFSET`].
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct RpcPostEvent {
    /// `hClient`.
    pub h_client: u32,
    /// `hEvent`.
    pub h_event: u32,
    /// `notifyIndex`.
    pub notify_index: u32,
    /// `data`.
    pub data: u32,
    /// `info16`.
    pub info16: u16,
    /// Padding before `status`.
    pub _pad0: [u8; 2],
    /// `status`.
    pub status: u32,
    /// `eventDataSize`.
    pub event_data_size: u32,
    /// `bNotifyList` (`NvBool`).
    pub b_notify_list: u8,
    /// Tail padding (where `eventData[]` begins).
    pub _pad1: [u8; 3],
}

/// Mirrors `rpc_rc_triggered_v17_02` (`rpc_rc_triggered_v`): the payload of
/// `NV_VGPU_MSG_EVENT_RC_TRIGGERED` (a channel error, robust-channel recovery);
/// `rcJournalBuffer[rcJournalBufferSize]` follows.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct RpcRcTriggered {
    /// `nv2080EngineType`.
    pub nv2080_engine_type: u32,
    /// `chid`.
    pub chid: u32,
    /// `gfid`.
    pub gfid: u32,
    /// `exceptLevel`.
    pub except_level: u32,
    /// `exceptType`.
    pub except_type: u32,
    /// `scope`.
    pub scope: u32,
    /// `partitionAttributionId`.
    pub partition_attribution_id: u16,
    /// Padding before `mmuFaultAddrLo`.
    pub _pad0: [u8; 2],
    /// `mmuFaultAddrLo`.
    pub mmu_fault_addr_lo: u32,
    /// `mmuFaultAddrHi`.
    pub mmu_fault_addr_hi: u32,
    /// `mmuFaultType`.
    pub mmu_fault_type: u32,
    /// `bCallbackNeeded` (`NvBool`).
    pub b_callback_needed: u8,
    /// Padding before `rcJournalBufferSize`.
    pub _pad1: [u8; 3],
    /// `rcJournalBufferSize`.
    pub rc_journal_buffer_size: u32,
}

/// Mirrors `rpc_gsp_lockdown_notice_v17_00` (`rpc_gsp_lockdown_notice_v`): the payload of
/// `NV_VGPU_MSG_EVENT_GSP_LOCKDOWN_NOTICE`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct RpcGspLockdownNotice {
    /// `bLockdownEngaging` (`NvBool`).
    pub b_lockdown_engaging: u8,
}

/// Mirrors `rpc_ucode_libos_print_v1E_08` (`rpc_ucode_libos_print_v`): the payload of
/// `NV_VGPU_MSG_EVENT_UCODE_LIBOS_PRINT`; `libosPrintBuf[libosPrintBufSize]` follows.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct RpcUcodeLibosPrint {
    /// `ucodeEngDesc`.
    pub ucode_eng_desc: u32,
    /// `libosPrintBufSize`.
    pub libos_print_buf_size: u32,
}
