//! The status-queue reader: messages GSP-RM wrote (replies and events), validated.
//!
//! Mirrors `GspMsgQueueReceiveStatus` (`message_queue_cpu.c`): `elemCount` from the first
//! element, the checksum over `0x30 + rpc.length` bytes, the sequence number, and the
//! length bounds `sizeof(GSP_MSG_QUEUE_ELEMENT) <= 0x30 + length <= elemCount * 4096`
//! (OpenRM allows up to 16 elements regardless of `elemCount`; we also refuse a length
//! reaching past the message's own elements). Every offset comes from GSP memory and is
//! checked against the ring before use; a bad message is an error and is not consumed.

use alloc::vec::Vec;

use super::{
    CONTINUATION_RECORD, ELEM_COUNT_OFFSET, ELEMENT_AND_RPC_HEADER_SIZE, ELEMENT_HEADER_SIZE,
    ELEMENT_SIZE, MAX_ELEMENTS_PER_MESSAGE, MsgqError, QueueGeometry, SEQ_NUM_OFFSET, checksum32,
};
use crate::abi::{NV_VGPU_MSG_SIGNATURE_VALID, RpcMessageHeader};
use crate::rpc::RPC_HEADER_SIZE;
use zerocopy::FromBytes;

/// One message taken from the status queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceivedMessage {
    /// The RPC header (function, result, length...).
    pub header: RpcMessageHeader,
    /// `seqNum` of the queue element.
    pub seq: u32,
    /// Elements the message occupied.
    pub elem_count: u32,
    /// The RPC payload: `length - 32` bytes after the RPC header.
    pub payload: Vec<u8>,
}

/// The CPU side of the status queue: our read pointer and the next sequence number.
///
/// After [`MsgQueue::receive`] returns a message, the caller publishes
/// [`MsgQueue::read_ptr`] to our `msgqRxHeader.readPtr` (in the command queue's header page).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MsgQueue {
    geometry: QueueGeometry,
    read_ptr: u32,
    expected_seq: u32,
}

impl MsgQueue {
    /// A reader for a ring of this geometry, at `read_ptr`, expecting sequence 0 next.
    pub fn new(geometry: QueueGeometry, read_ptr: u32) -> Result<Self, MsgqError> {
        geometry.check_pointer(read_ptr)?;
        Ok(Self {
            geometry,
            read_ptr,
            expected_seq: 0,
        })
    }

    /// The element index of the next unread message: the value for `readPtr`.
    pub fn read_ptr(&self) -> u32 {
        self.read_ptr
    }

    /// The sequence number expected next.
    pub fn expected_seq(&self) -> u32 {
        self.expected_seq
    }

    /// The ring's geometry.
    pub fn geometry(&self) -> QueueGeometry {
        self.geometry
    }

    /// Reads, validates and consumes the next message. `ring` is the entry area of the status
    /// queue (a copy or the mapping), `write_ptr` GSP's published `writePtr`. `Ok(None)` when
    /// the queue is empty. On error nothing is consumed; see [`MsgQueue::skip`].
    pub fn receive(
        &mut self,
        ring: &[u8],
        write_ptr: u32,
    ) -> Result<Option<ReceivedMessage>, MsgqError> {
        let Some(msg) = self.peek(ring, write_ptr)? else {
            return Ok(None);
        };
        self.read_ptr = (self.read_ptr + msg.elem_count) % self.geometry.msg_count;
        self.expected_seq = self.expected_seq.wrapping_add(1);
        Ok(Some(msg))
    }

    /// Validates the next message without consuming it (its
    /// [`ReceivedMessage::elem_count`] is how far [`MsgQueue::receive`] would advance).
    pub fn peek(&self, ring: &[u8], write_ptr: u32) -> Result<Option<ReceivedMessage>, MsgqError> {
        let g = &self.geometry;
        g.check_access(ring, write_ptr)?;
        if write_ptr == self.read_ptr {
            return Ok(None);
        }
        let available = g.available_elements(self.read_ptr, write_ptr);
        let start = self.read_ptr as usize * ELEMENT_SIZE;
        // The first element never wraps: elements are 4 KiB and the ring is whole elements.
        let first = &ring[start..start + ELEMENT_SIZE];
        let elem_count = le32(first, ELEM_COUNT_OFFSET);
        if elem_count == 0 || elem_count > MAX_ELEMENTS_PER_MESSAGE || elem_count > available {
            return Err(MsgqError::BadElementCount {
                elem_count,
                available,
            });
        }
        let (header, _) = match RpcMessageHeader::read_from_prefix(&first[ELEMENT_HEADER_SIZE..]) {
            Ok(h) => h,
            Err(_) => unreachable!("an element is larger than the headers"),
        };
        let msg_len = ELEMENT_HEADER_SIZE as u64 + u64::from(header.length);
        let span = u64::from(elem_count) * ELEMENT_SIZE as u64;
        if msg_len < ELEMENT_AND_RPC_HEADER_SIZE as u64 || msg_len > span {
            return Err(MsgqError::BadLength {
                length: header.length,
                elem_count,
            });
        }
        let msg_len = msg_len as usize;
        // Gather the message (it may wrap) including the zero padding to 8 bytes that the
        // checksum covers; that padding lies inside the message's elements.
        let padded = msg_len.next_multiple_of(8);
        let bytes = gather(ring, start, padded);
        let residue = checksum32(&bytes);
        if residue != 0 {
            return Err(MsgqError::BadChecksum { residue });
        }
        let seq = le32(&bytes, SEQ_NUM_OFFSET);
        if seq != self.expected_seq {
            return Err(MsgqError::SequenceMismatch {
                expected: self.expected_seq,
                got: seq,
            });
        }
        if header.signature != NV_VGPU_MSG_SIGNATURE_VALID {
            return Err(MsgqError::BadSignature {
                signature: header.signature,
            });
        }
        let payload = bytes[ELEMENT_AND_RPC_HEADER_SIZE..msg_len].to_vec();
        Ok(Some(ReceivedMessage {
            header,
            seq,
            elem_count,
            payload,
        }))
    }

    /// Drops the message at the read pointer after an error, as OpenRM's recovery does for
    /// stale messages: by its `elemCount` when that is sane, else one element; the sequence
    /// number then follows the skipped message's when it is readable. Never loops: each call
    /// advances by at least one element while anything is published.
    pub fn skip(&mut self, ring: &[u8], write_ptr: u32) -> Result<u32, MsgqError> {
        let g = self.geometry;
        g.check_access(ring, write_ptr)?;
        let available = g.available_elements(self.read_ptr, write_ptr);
        if available == 0 {
            return Ok(0);
        }
        let start = self.read_ptr as usize * ELEMENT_SIZE;
        let n = le32(&ring[start..start + ELEMENT_SIZE], ELEM_COUNT_OFFSET);
        let n = if (1..=MAX_ELEMENTS_PER_MESSAGE).contains(&n) && n <= available {
            n
        } else {
            1
        };
        let seq = le32(&ring[start..start + ELEMENT_SIZE], SEQ_NUM_OFFSET);
        if seq == self.expected_seq {
            self.expected_seq = seq.wrapping_add(1);
        }
        self.read_ptr = (self.read_ptr + n) % g.msg_count;
        Ok(n)
    }

    /// Accepts whatever sequence number comes next (after a reset of the peer).
    pub fn resync_sequence(&mut self, seq: u32) {
        self.expected_seq = seq;
    }
}

fn le32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn gather(ring: &[u8], start: usize, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let first = len.min(ring.len() - start);
    out.extend_from_slice(&ring[start..start + first]);
    out.extend_from_slice(&ring[..len - first]);
    out
}

/// Reassembles a reply that GSP-RM split into continuation records (`_issueRpcLarge`'s
/// receive half in `rpc.c`): feed it the first record of the expected function and then
/// every `CONTINUATION_RECORD` until `total_payload` bytes are in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContinuationAssembler {
    function: u32,
    header: Option<RpcMessageHeader>,
    total_payload: usize,
    payload: Vec<u8>,
}

/// Why a record did not fit the reply being reassembled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssembleError {
    /// A record of another function arrived.
    UnexpectedFunction { expected: u32, got: u32 },
    /// More payload than announced.
    Overflow { total: usize, got: usize },
}

impl ContinuationAssembler {
    /// Expects `function` with `total_payload` bytes of payload in all.
    pub fn new(function: u32, total_payload: usize) -> Self {
        Self {
            function,
            header: None,
            total_payload,
            payload: Vec::new(),
        }
    }

    /// Adds a record; returns the whole message once complete.
    pub fn feed(&mut self, msg: ReceivedMessage) -> Result<Option<ReceivedMessage>, AssembleError> {
        let want = if self.header.is_none() {
            self.function
        } else {
            CONTINUATION_RECORD
        };
        if msg.header.function != want {
            return Err(AssembleError::UnexpectedFunction {
                expected: want,
                got: msg.header.function,
            });
        }
        let got = self.payload.len() + msg.payload.len();
        if got > self.total_payload && self.header.is_some() {
            return Err(AssembleError::Overflow {
                total: self.total_payload,
                got,
            });
        }
        self.payload.extend_from_slice(&msg.payload);
        let header = *self.header.get_or_insert(msg.header);
        if self.payload.len() >= self.total_payload {
            let mut header = header;
            header.length = (RPC_HEADER_SIZE + self.payload.len()) as u32;
            return Ok(Some(ReceivedMessage {
                header,
                seq: msg.seq,
                elem_count: msg.elem_count,
                payload: core::mem::take(&mut self.payload),
            }));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msgq::{RpcQueue, SharedQueueLayout};
    use alloc::vec;

    fn pair() -> (RpcQueue, MsgQueue, Vec<u8>) {
        let l = SharedQueueLayout::default_sizes();
        let g = QueueGeometry::from_tx_header(&l.status_queue_header(), 0x40000).unwrap();
        (
            RpcQueue::new(g, 0).unwrap(),
            MsgQueue::new(g, 0).unwrap(),
            vec![0; g.ring_len()],
        )
    }

    #[test]
    fn reads_what_the_writer_wrote_across_the_wrap() {
        let (w, _, mut ring) = pair();
        let mut w = RpcQueue::resume(w.geometry(), 61, 0).unwrap();
        let mut r = MsgQueue::new(w.geometry(), 61).unwrap();
        let big: Vec<u8> = (0..9000u32).map(|i| (i * 7) as u8).collect();
        w.enqueue_record(&mut ring, 61, 0x1006, &big).unwrap();
        w.enqueue_record(&mut ring, 61, 0x1001, &[]).unwrap();
        let m = r.receive(&ring, w.write_ptr()).unwrap().unwrap();
        assert_eq!(
            (m.header.function, m.elem_count, m.payload),
            (0x1006, 3, big)
        );
        let m = r.receive(&ring, w.write_ptr()).unwrap().unwrap();
        assert_eq!((m.header.function, m.seq), (0x1001, 1));
        assert_eq!(r.receive(&ring, w.write_ptr()).unwrap(), None);
        assert_eq!(r.read_ptr(), 2);
    }

    #[test]
    fn garbage_is_an_error_not_consumed_and_skippable() {
        let (mut w, mut r, mut ring) = pair();
        w.enqueue_record(&mut ring, 0, 0x1001, &[1, 2, 3]).unwrap();
        ring[0x50] ^= 1;
        assert!(matches!(
            r.receive(&ring, 1),
            Err(MsgqError::BadChecksum { .. })
        ));
        assert_eq!(r.read_ptr(), 0);
        ring[0x50] ^= 1;
        ring[0x28] = 17; // elemCount
        assert!(matches!(
            r.receive(&ring, 1),
            Err(MsgqError::BadElementCount { .. })
        ));
        ring[0x28] = 1;
        ring[0x38] = 0xff; // rpc.length = 0xff -> fine; 0xffff -> too long for one element
        ring[0x39] = 0xff;
        assert!(matches!(
            r.receive(&ring, 1),
            Err(MsgqError::BadLength { .. })
        ));
        assert!(matches!(
            r.receive(&ring, 63),
            Err(MsgqError::PointerOutOfRange { .. })
        ));
        assert_eq!(r.skip(&ring, 1).unwrap(), 1);
        assert_eq!(r.read_ptr(), 1);
    }

    #[test]
    fn sequence_numbers_are_checked() {
        let (w, mut r, mut ring) = pair();
        let mut w = RpcQueue::resume(w.geometry(), 0, 5).unwrap();
        w.enqueue_record(&mut ring, 0, 0x1001, &[]).unwrap();
        assert_eq!(
            r.receive(&ring, 1),
            Err(MsgqError::SequenceMismatch {
                expected: 0,
                got: 5
            })
        );
        r.resync_sequence(5);
        assert!(r.receive(&ring, 1).unwrap().is_some());
    }

    #[test]
    fn continuation_records_reassemble() {
        let (mut w, mut r, mut ring) = pair();
        let payload: Vec<u8> = (0..0x18000u32).map(|i| i as u8).collect();
        assert_eq!(w.enqueue_rpc(&mut ring, 0, 65, &payload).unwrap(), 2);
        let mut a = ContinuationAssembler::new(65, payload.len());
        assert_eq!(
            a.feed(r.receive(&ring, w.write_ptr()).unwrap().unwrap()),
            Ok(None)
        );
        let m = a
            .feed(r.receive(&ring, w.write_ptr()).unwrap().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(m.header.function, 65);
        assert_eq!(m.payload, payload);
    }
}
