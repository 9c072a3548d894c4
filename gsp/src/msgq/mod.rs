//! The shared-memory message queues between the CPU and GSP-RM.
//!
//! One block of DMA memory holds, page aligned ([`layout`]):
//! 1. a page table: the bus address of every 4 KiB page of the block (its own pages too);
//! 2. the command queue (CPU writes, GSP reads): a `msgqTxHeader` page, then 4 KiB elements;
//! 3. the status queue (GSP writes, CPU reads): the same shape.
//!
//! Both queues use `MSGQ_FLAGS_SWAP_RX`: each side's *read* pointer lives in the other
//! queue's header page, at `rxHdrOff`. A message is a `GSP_MSG_QUEUE_ELEMENT` header
//! (checksum, sequence number, element count) followed by the RPC header and payload; it
//! spans up to 16 consecutive elements and may wrap at the ring's end.
//!
//! [`RpcQueue`] writes messages into the command ring ([`writer`]); [`MsgQueue`] reads and
//! validates messages from the status ring ([`reader`]). Both work on plain byte slices of
//! the ring's entry area, so the core decides how the shared memory is reached (volatile
//! copies) and the simulator can play the GSP side with the same code.
//!
//! Mirrors `message_queue_cpu.c` (`GspMsgQueueSendCommand`, `GspMsgQueueReceiveStatus`,
//! `_getMsgQueueParams`) and `msgq.c`'s ring arithmetic (`msgqTxGetFreeSpace`,
//! `msgqRxGetReadAvailable`).

pub mod layout;
pub mod reader;
pub mod writer;

use core::fmt;
use core::mem::offset_of;

pub use layout::SharedQueueLayout;
pub use reader::{MsgQueue, ReceivedMessage};
pub use writer::{RpcQueue, max_record_payload};

use crate::abi::{self, GspMsgQueueElement, MsgqTxHeader};

/// Size of one queue element (`GSP_MSG_QUEUE_ELEMENT_SIZE_MIN`, `RM_PAGE_SIZE`).
pub const ELEMENT_SIZE: usize = abi::GSP_MSG_QUEUE_ELEMENT_SIZE_MIN;
/// Most elements one message may span (`GSP_MSG_QUEUE_ELEMENT_SIZE_MAX / _MIN`).
pub const MAX_ELEMENTS_PER_MESSAGE: u32 =
    (abi::GSP_MSG_QUEUE_ELEMENT_SIZE_MAX / abi::GSP_MSG_QUEUE_ELEMENT_SIZE_MIN) as u32;
/// Bytes before the RPC header in an element (`GSP_MSG_QUEUE_ELEMENT_HDR_SIZE`).
pub const ELEMENT_HEADER_SIZE: usize = abi::GSP_MSG_QUEUE_ELEMENT_HDR_SIZE;
/// `sizeof(GSP_MSG_QUEUE_ELEMENT)`: element header plus RPC header.
pub const ELEMENT_AND_RPC_HEADER_SIZE: usize = size_of::<GspMsgQueueElement>();
/// `NV_VGPU_MSG_FUNCTION_CONTINUATION_RECORD`.
pub(crate) const CONTINUATION_RECORD: u32 = abi::RpcFunction::ContinuationRecord.as_u32();
/// Offset of `checkSum` in `GSP_MSG_QUEUE_ELEMENT`.
pub(crate) const CHECKSUM_OFFSET: usize = offset_of!(GspMsgQueueElement, check_sum);
/// Offset of `seqNum` in `GSP_MSG_QUEUE_ELEMENT`.
pub(crate) const SEQ_NUM_OFFSET: usize = offset_of!(GspMsgQueueElement, seq_num);
/// Offset of `elemCount` in `GSP_MSG_QUEUE_ELEMENT`.
pub(crate) const ELEM_COUNT_OFFSET: usize = offset_of!(GspMsgQueueElement, elem_count);

/// XOR of all 64-bit little-endian words of `data` (zero-padded to 8 bytes), folded to 32
/// bits; mirrors `_checkSum32` (`message_queue_priv.h`). A message whose `checkSum` field
/// holds the checksum of the rest sums to zero.
pub fn checksum32(data: &[u8]) -> u32 {
    fold(xor_words(0, data))
}

pub(crate) fn xor_words(mut acc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        acc ^= u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        acc ^= u64::from_le_bytes(w);
    }
    acc
}

pub(crate) fn fold(x: u64) -> u32 {
    (x >> 32) as u32 ^ x as u32
}

/// The shape of one queue ring, validated: element size, element count, where the entries
/// start in the queue's backing store and where the *peer's* read pointer header lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueGeometry {
    /// `msgCount`.
    pub msg_count: u32,
    /// `entryOff`: offset of element 0 from the start of the queue.
    pub entry_off: u32,
    /// `rxHdrOff`: offset of this queue's `msgqRxHeader`.
    pub rx_hdr_off: u32,
}

impl QueueGeometry {
    /// Validates a `msgqTxHeader` read from shared memory against the size of the queue's
    /// backing store: GSP's header is untrusted, so every field must keep the entries and the
    /// read-pointer header inside `queue_len`.
    pub fn from_tx_header(h: &MsgqTxHeader, queue_len: usize) -> Result<Self, MsgqError> {
        let bad = |why| Err(MsgqError::BadTxHeader { why });
        if h.version != crate::abi::MSGQ_VERSION {
            return bad("version is not 0");
        }
        if h.msg_size as usize != ELEMENT_SIZE {
            return bad("msgSize is not 4096");
        }
        if h.msg_count < 2 {
            return bad("msgCount below 2");
        }
        let entries_end = u64::from(h.entry_off) + u64::from(h.msg_count) * ELEMENT_SIZE as u64;
        if h.entry_off as usize & (ELEMENT_SIZE - 1) != 0 || entries_end > queue_len as u64 {
            return bad("entries outside the queue");
        }
        if h.size as usize > queue_len || entries_end > u64::from(h.size) {
            return bad("size inconsistent with the entries");
        }
        if u64::from(h.rx_hdr_off) + 4 > u64::from(h.entry_off) {
            return bad("rxHdrOff not inside the header page");
        }
        if h.write_ptr >= h.msg_count {
            return bad("writePtr beyond msgCount");
        }
        Ok(Self {
            msg_count: h.msg_count,
            entry_off: h.entry_off,
            rx_hdr_off: h.rx_hdr_off,
        })
    }

    /// Bytes of the entry area (`msgCount * msgSize`).
    pub fn ring_len(&self) -> usize {
        self.msg_count as usize * ELEMENT_SIZE
    }

    /// Checks that `ring` is this queue's whole entry area.
    pub fn check_ring(&self, ring: &[u8]) -> Result<(), MsgqError> {
        if ring.len() != self.ring_len() {
            return Err(MsgqError::RingSizeMismatch {
                expected: self.ring_len(),
                got: ring.len(),
            });
        }
        Ok(())
    }

    /// Checks that a read or write pointer (ours, or the peer's from shared memory) names an
    /// element of the ring.
    pub fn check_pointer(&self, pointer: u32) -> Result<(), MsgqError> {
        if pointer >= self.msg_count {
            return Err(MsgqError::PointerOutOfRange {
                pointer,
                msg_count: self.msg_count,
            });
        }
        Ok(())
    }

    /// [`QueueGeometry::check_ring`] and [`QueueGeometry::check_pointer`] together: what
    /// every ring access checks before it reads the peer's pointer.
    pub fn check_access(&self, ring: &[u8], peer_pointer: u32) -> Result<(), MsgqError> {
        self.check_ring(ring)?;
        self.check_pointer(peer_pointer)
    }

    /// Elements the writer may still fill: `msgqTxGetFreeSpace`, one slot always kept empty.
    pub fn free_elements(&self, read_ptr: u32, write_ptr: u32) -> u32 {
        (read_ptr + self.msg_count - write_ptr - 1) % self.msg_count
    }

    /// Elements written and not yet read: `msgqRxGetReadAvailable`.
    pub fn available_elements(&self, read_ptr: u32, write_ptr: u32) -> u32 {
        (write_ptr + self.msg_count - read_ptr) % self.msg_count
    }
}

/// Errors of the queue writer and reader. Every value read from shared memory that is out
/// of range becomes one of these; none of them consumes anything from the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsgqError {
    /// A `msgqTxHeader` with fields that do not fit the queue.
    BadTxHeader { why: &'static str },
    /// Queue sizes or page addresses the caller passed that cannot form the shared queue
    /// block; `why` names the requirement.
    BadLayout { why: &'static str },
    /// The ring slice handed in is not `msgCount * 4096` bytes.
    RingSizeMismatch { expected: usize, got: usize },
    /// The peer's pointer (read or write) is not below `msgCount`.
    PointerOutOfRange { pointer: u32, msg_count: u32 },
    /// Not enough free elements for the message.
    QueueFull { needed: u32, free: u32 },
    /// A message larger than 16 elements (use continuation records).
    MessageTooLarge { len: usize },
    /// `elemCount` of 0, above 16, or beyond what the writer has published.
    BadElementCount { elem_count: u32, available: u32 },
    /// RPC `length` that does not fit the message's elements.
    BadLength { length: u32, elem_count: u32 },
    /// The checksum over the message is not zero.
    BadChecksum { residue: u32 },
    /// A sequence number other than the next one expected.
    SequenceMismatch { expected: u32, got: u32 },
    /// The RPC header's signature is not `VRPC`.
    BadSignature { signature: u32 },
}

impl fmt::Display for MsgqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadTxHeader { why } => write!(f, "GSP queue header invalid: {why}"),
            Self::BadLayout { why } => {
                write!(f, "GSP shared queue layout invalid: {why}")
            }
            Self::RingSizeMismatch { expected, got } => {
                write!(f, "queue ring is {got} bytes, header says {expected}")
            }
            Self::PointerOutOfRange { pointer, msg_count } => {
                write!(
                    f,
                    "GSP queue pointer {pointer} not below msgCount {msg_count}"
                )
            }
            Self::QueueFull { needed, free } => {
                write!(
                    f,
                    "GSP command queue full: need {needed} elements, {free} free"
                )
            }
            Self::MessageTooLarge { len } => {
                write!(f, "RPC message of {len} bytes exceeds 16 queue elements")
            }
            Self::BadElementCount {
                elem_count,
                available,
            } => write!(
                f,
                "GSP message elemCount {elem_count} invalid ({available} elements published)"
            ),
            Self::BadLength { length, elem_count } => {
                write!(
                    f,
                    "GSP message RPC length {length} does not fit {elem_count} elements"
                )
            }
            Self::BadChecksum { residue } => {
                write!(f, "GSP message checksum mismatch (residue {residue:#x})")
            }
            Self::SequenceMismatch { expected, got } => {
                write!(f, "GSP message sequence {got}, expected {expected}")
            }
            Self::BadSignature { signature } => {
                write!(f, "GSP message RPC signature {signature:#x} is not 'VRPC'")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_folds_xor_of_words_and_pads() {
        assert_eq!(checksum32(&[]), 0);
        let w = 0x1122_3344_5566_7788u64.to_le_bytes();
        assert_eq!(checksum32(&w), 0x1122_3344 ^ 0x5566_7788);
        // A trailing partial word is zero-padded.
        assert_eq!(checksum32(&[1, 0, 0]), 1);
        let mut two = w.to_vec();
        two.extend_from_slice(&w);
        assert_eq!(checksum32(&two), 0);
    }

    #[test]
    fn geometry_rejects_hostile_headers() {
        let good = MsgqTxHeader {
            version: 0,
            size: 0x40000,
            msg_size: 0x1000,
            msg_count: 63,
            write_ptr: 0,
            flags: 1,
            rx_hdr_off: 0x20,
            entry_off: 0x1000,
        };
        let g = QueueGeometry::from_tx_header(&good, 0x40000).unwrap();
        assert_eq!(g.ring_len(), 63 * 0x1000);
        assert_eq!(g.free_elements(0, 0), 62);
        assert_eq!(g.free_elements(5, 4), 0);
        assert_eq!(g.available_elements(60, 2), 5);
        for bad in [
            MsgqTxHeader {
                msg_count: 64,
                ..good
            },
            MsgqTxHeader {
                msg_count: u32::MAX,
                ..good
            },
            MsgqTxHeader {
                entry_off: 0x800,
                ..good
            },
            MsgqTxHeader {
                msg_size: 0x800,
                ..good
            },
            MsgqTxHeader {
                rx_hdr_off: 0xffe,
                ..good
            },
            MsgqTxHeader {
                write_ptr: 63,
                ..good
            },
            MsgqTxHeader { version: 1, ..good },
        ] {
            assert!(
                QueueGeometry::from_tx_header(&bad, 0x40000).is_err(),
                "{bad:?}"
            );
        }
    }
}
