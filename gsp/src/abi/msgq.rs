//! The shared-memory message queues between the CPU and GSP-RM.
//!
//! Headers: `src/common/shared/msgq/inc/msgq/msgq_priv.h` (queue headers) and
//! `src/nvidia/inc/kernel/gpu/gsp/message_queue_priv.h` (queue elements).

use crate::abi::rpc::RpcMessageHeader;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `MSGQ_VERSION`, `msgq_priv.h`: the value of [`MsgqTxHeader::version`].
pub const MSGQ_VERSION: u32 = 0;
/// `GSP_MSG_QUEUE_ELEMENT_SIZE_MIN` (`RM_PAGE_SIZE`), `message_queue_priv.h`.
pub const GSP_MSG_QUEUE_ELEMENT_SIZE_MIN: usize = 0x1000;
/// `GSP_MSG_QUEUE_ELEMENT_SIZE_MAX`, `message_queue_priv.h`.
pub const GSP_MSG_QUEUE_ELEMENT_SIZE_MAX: usize = GSP_MSG_QUEUE_ELEMENT_SIZE_MIN * 16;
/// `GSP_MSG_QUEUE_ELEMENT_HDR_SIZE` = `offsetof(GSP_MSG_QUEUE_ELEMENT, rpc)`.
pub const GSP_MSG_QUEUE_ELEMENT_HDR_SIZE: usize = core::mem::offset_of!(GspMsgQueueElement, rpc);
/// `GSP_MSG_QUEUE_HEADER_SIZE` (`RM_PAGE_SIZE`): bytes reserved for a queue's headers.
pub const GSP_MSG_QUEUE_HEADER_SIZE: usize = 0x1000;

/// Mirrors `msgqTxHeader`, `msgq_priv.h`: the header a queue's writer owns, at the start
/// of the queue's backing store.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct MsgqTxHeader {
    /// `version`: [`MSGQ_VERSION`].
    pub version: u32,
    /// `size`: bytes, page aligned.
    pub size: u32,
    /// `msgSize`: entry size in bytes, a power of two, at least 16.
    pub msg_size: u32,
    /// `msgCount`: number of entries in the queue.
    pub msg_count: u32,
    /// `writePtr`: message index of the next slot to write.
    pub write_ptr: u32,
    /// `flags`: bit 0 set means "swap RX".
    pub flags: u32,
    /// `rxHdrOff`: offset of [`MsgqRxHeader`] from the start of the backing store.
    pub rx_hdr_off: u32,
    /// `entryOff`: offset of the entries from the start of the backing store.
    pub entry_off: u32,
}

/// Mirrors `msgqRxHeader`, `msgq_priv.h`: the header a queue's reader owns.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct MsgqRxHeader {
    /// `readPtr`: message index of the last message read.
    pub read_ptr: u32,
}

/// Mirrors `GSP_MSG_QUEUE_ELEMENT`, `message_queue_priv.h`: one queue element header,
/// followed by the RPC header and payload; a message spans `elemCount` 4 KiB elements.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspMsgQueueElement {
    /// `authTagBuffer[16]`: authentication tag (confidential computing only).
    pub auth_tag_buffer: [u8; 16],
    /// `aadBuffer[16]`: additional authenticated data (confidential computing only).
    pub aad_buffer: [u8; 16],
    /// `checkSum`: set so that the XOR checksum of the whole message is zero.
    pub check_sum: u32,
    /// `seqNum`: sequence number maintained by the queue.
    pub seq_num: u32,
    /// `elemCount`: number of queue elements this message spans.
    pub elem_count: u32,
    /// Padding before the 8-byte aligned `rpc`.
    pub _pad0: u32,
    /// `rpc`.
    pub rpc: RpcMessageHeader,
}
