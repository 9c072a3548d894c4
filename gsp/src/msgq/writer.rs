//! The command-queue writer: RPC messages into the ring GSP-RM reads.
//!
//! Mirrors `GspMsgQueueSendCommand` (`message_queue_cpu.c`): element header with `seqNum`,
//! `elemCount = ceil((0x30 + rpc.length) / 4096)` and `checkSum` chosen so the XOR checksum
//! of the message (zero-padded to 8 bytes) is zero; and `_issueRpcLarge` (`rpc.c`) for
//! payloads beyond one message, which go out as follow-up `CONTINUATION_RECORD` messages of
//! at most `GSP_MSG_QUEUE_RPC_SIZE_MAX - sizeof(rpc_message_header_v)` payload bytes each.

use super::{
    CHECKSUM_OFFSET, CONTINUATION_RECORD, ELEM_COUNT_OFFSET, ELEMENT_HEADER_SIZE, ELEMENT_SIZE,
    MAX_ELEMENTS_PER_MESSAGE, MsgqError, QueueGeometry, SEQ_NUM_OFFSET, fold, xor_words,
};
use crate::abi::RpcMessageHeader;
use crate::rpc::{RPC_HEADER_SIZE, request_header};
use zerocopy::IntoBytes;

/// Most payload bytes one message carries: 16 elements minus the element and RPC headers
/// (0xFFB0, `GSP_MSG_QUEUE_RPC_SIZE_MAX - sizeof(rpc_message_header_v)`).
pub const fn max_record_payload() -> usize {
    MAX_ELEMENTS_PER_MESSAGE as usize * ELEMENT_SIZE - ELEMENT_HEADER_SIZE - RPC_HEADER_SIZE
}

/// Elements a message with `payload_len` payload bytes occupies
/// (`GSP_MSG_QUEUE_BYTES_TO_ELEMENTS`).
pub fn elements_for_payload(payload_len: usize) -> u32 {
    (ELEMENT_HEADER_SIZE + RPC_HEADER_SIZE + payload_len).div_ceil(ELEMENT_SIZE) as u32
}

/// The CPU side of the command queue: the sequence number and write pointer it owns.
///
/// The caller copies the ring in or writes through it, then publishes
/// [`RpcQueue::write_ptr`] to the command queue's `writePtr` (after a store fence) and rings
/// the GSP doorbell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcQueue {
    geometry: QueueGeometry,
    write_ptr: u32,
    seq: u32,
}

impl RpcQueue {
    /// A writer for a ring of this geometry, starting at element `write_ptr` and sequence 0.
    pub fn new(geometry: QueueGeometry, write_ptr: u32) -> Result<Self, MsgqError> {
        Self::resume(geometry, write_ptr, 0)
    }

    /// A writer continuing at element `write_ptr` with sequence number `seq` (after a
    /// re-attach, or for the simulator playing GSP on the status queue).
    pub fn resume(geometry: QueueGeometry, write_ptr: u32, seq: u32) -> Result<Self, MsgqError> {
        geometry.check_pointer(write_ptr)?;
        Ok(Self {
            geometry,
            write_ptr,
            seq,
        })
    }

    /// The element index the next message goes to: the value for `msgqTxHeader.writePtr`.
    pub fn write_ptr(&self) -> u32 {
        self.write_ptr
    }

    /// The sequence number the next message gets.
    pub fn next_seq(&self) -> u32 {
        self.seq
    }

    /// The ring's geometry.
    pub fn geometry(&self) -> QueueGeometry {
        self.geometry
    }

    /// Elements needed to send `payload_len` bytes as one RPC plus its continuation records.
    pub fn elements_needed(payload_len: usize) -> u32 {
        let max = max_record_payload();
        let first = payload_len.min(max);
        let mut n = elements_for_payload(first);
        let mut rest = payload_len - first;
        while rest > 0 {
            let chunk = rest.min(max);
            n += elements_for_payload(chunk);
            rest -= chunk;
        }
        n
    }

    /// Writes one message (`function` with `payload`, at most [`max_record_payload`] bytes)
    /// into `ring` at the write pointer, wrapping at the ring's end, and advances the write
    /// pointer and sequence number. `read_ptr` is GSP's read pointer for this queue (from the
    /// status queue's rx header); an out-of-range value is an error. Nothing is written when
    /// an error is returned.
    pub fn enqueue_record(
        &mut self,
        ring: &mut [u8],
        read_ptr: u32,
        function: u32,
        payload: &[u8],
    ) -> Result<u32, MsgqError> {
        self.enqueue_with_header(
            ring,
            read_ptr,
            request_header(function, payload.len()),
            payload,
        )
    }

    /// Like [`RpcQueue::enqueue_record`] with a caller-built RPC header (its `length` is set
    /// from `payload`): how the simulator, playing GSP-RM on the status queue, writes replies
    /// with a result (`rpc_result`) and events.
    pub fn enqueue_with_header(
        &mut self,
        ring: &mut [u8],
        read_ptr: u32,
        mut header: RpcMessageHeader,
        payload: &[u8],
    ) -> Result<u32, MsgqError> {
        self.geometry.check_access(ring, read_ptr)?;
        if payload.len() > max_record_payload() {
            return Err(MsgqError::MessageTooLarge { len: payload.len() });
        }
        let elems = elements_for_payload(payload.len());
        self.reserve(read_ptr, elems)?;
        header.length = (RPC_HEADER_SIZE + payload.len()) as u32;
        self.write_unchecked(ring, &header, payload, elems);
        Ok(elems)
    }

    /// Writes an RPC of any size: the first record carries `function`, the rest of the
    /// payload follows in `CONTINUATION_RECORD`s. All records must fit in the free space at
    /// once (else [`MsgqError::QueueFull`] and nothing written); for payloads larger than the
    /// ring, send record by record with [`RpcQueue::enqueue_record`] as GSP drains it.
    /// Returns the number of records written.
    pub fn enqueue_rpc(
        &mut self,
        ring: &mut [u8],
        read_ptr: u32,
        function: u32,
        payload: &[u8],
    ) -> Result<u32, MsgqError> {
        self.geometry.check_access(ring, read_ptr)?;
        self.reserve(read_ptr, Self::elements_needed(payload.len()))?;
        let mut records = 0;
        for (i, chunk) in record_chunks(payload).enumerate() {
            let f = if i == 0 {
                function
            } else {
                CONTINUATION_RECORD
            };
            let header = request_header(f, chunk.len());
            self.write_unchecked(ring, &header, chunk, elements_for_payload(chunk.len()));
            records += 1;
        }
        Ok(records)
    }

    /// Checks that `needed` elements are free between our write pointer and GSP's
    /// `read_ptr` (already range-checked).
    fn reserve(&self, read_ptr: u32, needed: u32) -> Result<(), MsgqError> {
        let free = self.geometry.free_elements(read_ptr, self.write_ptr);
        if needed > free {
            return Err(MsgqError::QueueFull { needed, free });
        }
        Ok(())
    }

    /// Serialises element header, RPC header and payload straight into the ring, computing
    /// the checksum on the way; zero-fills the rest of the last element.
    fn write_unchecked(
        &mut self,
        ring: &mut [u8],
        rpc_hdr: &RpcMessageHeader,
        payload: &[u8],
        elems: u32,
    ) {
        let mut elem_hdr = [0u8; ELEMENT_HEADER_SIZE];
        elem_hdr[SEQ_NUM_OFFSET..SEQ_NUM_OFFSET + 4].copy_from_slice(&self.seq.to_le_bytes());
        elem_hdr[ELEM_COUNT_OFFSET..ELEM_COUNT_OFFSET + 4].copy_from_slice(&elems.to_le_bytes());
        let mut acc = xor_words(0, &elem_hdr);
        acc = xor_words(acc, rpc_hdr.as_bytes());
        acc = xor_words(acc, payload);
        elem_hdr[CHECKSUM_OFFSET..CHECKSUM_OFFSET + 4].copy_from_slice(&fold(acc).to_le_bytes());

        let start = self.write_ptr as usize * ELEMENT_SIZE;
        let total = elems as usize * ELEMENT_SIZE;
        let mut w = RingCursor { ring, pos: start };
        w.put(&elem_hdr);
        w.put(rpc_hdr.as_bytes());
        w.put(payload);
        let used = ELEMENT_HEADER_SIZE + RPC_HEADER_SIZE + payload.len();
        w.zero(total - used);

        self.write_ptr = (self.write_ptr + elems) % self.geometry.msg_count;
        self.seq = self.seq.wrapping_add(1);
    }
}

/// The payload pieces of one RPC: first record, then continuation records.
pub fn record_chunks(payload: &[u8]) -> impl Iterator<Item = &[u8]> {
    let max = max_record_payload();
    let first = payload.len().min(max);
    core::iter::once(&payload[..first]).chain(payload[first..].chunks(max))
}

struct RingCursor<'a> {
    ring: &'a mut [u8],
    pos: usize,
}

impl RingCursor<'_> {
    fn put(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.pos == self.ring.len() {
                self.pos = 0;
            }
            let n = data.len().min(self.ring.len() - self.pos);
            self.ring[self.pos..self.pos + n].copy_from_slice(&data[..n]);
            self.pos += n;
            data = &data[n..];
        }
    }

    fn zero(&mut self, mut len: usize) {
        while len > 0 {
            if self.pos == self.ring.len() {
                self.pos = 0;
            }
            let n = len.min(self.ring.len() - self.pos);
            self.ring[self.pos..self.pos + n].fill(0);
            self.pos += n;
            len -= n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msgq::{SharedQueueLayout, checksum32};
    use alloc::vec;

    fn queue() -> (RpcQueue, alloc::vec::Vec<u8>) {
        let l = SharedQueueLayout::default_sizes();
        let g = QueueGeometry::from_tx_header(&l.command_queue_header(), 0x40000).unwrap();
        (RpcQueue::new(g, 0).unwrap(), vec![0xAA; g.ring_len()])
    }

    #[test]
    fn message_checksums_to_zero_and_is_zero_padded() {
        let (mut q, mut ring) = queue();
        assert_eq!(
            q.enqueue_record(&mut ring, 0, 73, &[1, 2, 3, 4, 5])
                .unwrap(),
            1
        );
        let msg_len = 0x30 + 0x20 + 5;
        assert_eq!(checksum32(&ring[..msg_len]), 0);
        assert!(ring[msg_len..0x1000].iter().all(|&b| b == 0));
        assert_eq!(&ring[0x24..0x2c], &[0, 0, 0, 0, 1, 0, 0, 0]); // seq 0, elemCount 1
        assert_eq!(q.write_ptr(), 1);
        assert_eq!(q.next_seq(), 1);
    }

    #[test]
    fn wraps_across_the_ring_end() {
        let (mut q, mut ring) = queue();
        q.write_ptr = 62;
        let payload: alloc::vec::Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        assert_eq!(q.enqueue_record(&mut ring, 10, 76, &payload).unwrap(), 2);
        assert_eq!(q.write_ptr(), 1);
        // Second element continues at the start of the ring.
        let first_part = 0x1000 - 0x50;
        assert_eq!(ring[0], payload[first_part]);
        let mut msg = ring[62 * 0x1000..].to_vec();
        msg.extend_from_slice(&ring[..0x1000]);
        assert_eq!(checksum32(&msg[..0x50 + 5000]), 0);
    }

    #[test]
    fn large_payloads_become_continuation_records() {
        let (mut q, mut ring) = queue();
        let payload = vec![7u8; 0x20000];
        // 0x20000 = 0xFFB0 + 0xFFB0 + 0xA0 -> 16 + 16 + 1 elements.
        assert_eq!(RpcQueue::elements_needed(payload.len()), 33);
        assert_eq!(q.enqueue_rpc(&mut ring, 0, 103, &payload).unwrap(), 3);
        assert_eq!(q.write_ptr(), 33);
        let func =
            |e: usize| u32::from_le_bytes(ring[e * 0x1000 + 0x3c..][..4].try_into().unwrap());
        assert_eq!((func(0), func(16), func(32)), (103, 71, 71));
    }

    #[test]
    fn full_queue_and_bad_pointers_write_nothing() {
        let (mut q, mut ring) = queue();
        q.write_ptr = 5;
        let before = ring.clone();
        assert_eq!(
            q.enqueue_record(&mut ring, 6, 1, &[0; 10]),
            Err(MsgqError::QueueFull { needed: 1, free: 0 })
        );
        assert!(matches!(
            q.enqueue_record(&mut ring, 63, 1, &[]),
            Err(MsgqError::PointerOutOfRange { .. })
        ));
        assert!(matches!(
            q.enqueue_rpc(&mut ring, 6, 1, &[0; 0x30000]),
            Err(MsgqError::QueueFull { .. })
        ));
        assert_eq!(ring, before);
        assert_eq!(q.write_ptr(), 5);
    }
}
