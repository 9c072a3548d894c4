//! The status-queue reader against arbitrary shared memory: hostile ring contents, element
//! counts, lengths, sequence numbers and pointers. Must never panic, never read out of
//! bounds, never loop: every iteration either consumes a message, skips at least one
//! element, or stops. The `msgqTxHeader` validation is fuzzed on the side.
//!
//! Input: [0] ring size selector, [1] read pointer + flags, [2..6] write pointer,
//! [6..38] a raw tx header, rest: ring bytes (repeated to fill). When flag 0x80 is set the
//! checksum of each message at the read pointer is patched to be valid, so that the
//! fuzzer gets past it to the length, element-count and sequence checks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvbare_gsp::abi::MsgqTxHeader;
use nvbare_gsp::msgq::{MsgQueue, QueueGeometry, checksum32};
use nvbare_gsp::rpc::events::decode_message;
use zerocopy::FromBytes;

fuzz_target!(|data: &[u8]| {
    if data.len() < 38 {
        return;
    }
    if let Ok((raw, _)) = MsgqTxHeader::read_from_prefix(&data[6..]) {
        if let Ok(g) = QueueGeometry::from_tx_header(&raw, 64 * 4096) {
            assert!(g.ring_len() + g.entry_off as usize <= 64 * 4096);
        }
    }
    let msg_count = 2 + u32::from(data[0] % 7);
    let hdr = MsgqTxHeader {
        version: 0,
        size: (msg_count + 1) * 4096,
        msg_size: 4096,
        msg_count,
        write_ptr: 0,
        flags: 1,
        rx_hdr_off: 32,
        entry_off: 4096,
    };
    let g = QueueGeometry::from_tx_header(&hdr, hdr.size as usize).unwrap();
    let fix_checksum = data[1] & 0x80 != 0;
    let read_ptr = u32::from(data[1] & 0x7f) % msg_count;
    let write_ptr = u32::from_le_bytes(data[2..6].try_into().unwrap());
    let body = &data[38..];
    let mut ring = vec![0u8; g.ring_len()];
    if !body.is_empty() {
        for chunk in ring.chunks_mut(body.len()) {
            chunk.copy_from_slice(&body[..chunk.len()]);
        }
    }
    let mut q = MsgQueue::new(g, read_ptr).unwrap();
    let start = read_ptr as usize * 4096;
    q.resync_sequence(u32::from_le_bytes(ring[start + 0x24..start + 0x28].try_into().unwrap()));
    for _ in 0..2 * msg_count {
        let at = q.read_ptr() as usize * 4096;
        if fix_checksum {
            // Make the message at the read pointer checksum to zero if its length is sane.
            let len = 0x30 + u32::from_le_bytes(ring[at + 0x38..at + 0x3c].try_into().unwrap()) as usize;
            if len <= 4096 - at % 4096 && at + len.next_multiple_of(8) <= ring.len() {
                ring[at + 0x20..at + 0x24].fill(0);
                let c = checksum32(&ring[at..at + len.next_multiple_of(8)]);
                ring[at + 0x20..at + 0x24].copy_from_slice(&c.to_le_bytes());
            }
        }
        let before = q.read_ptr();
        match q.receive(&ring, write_ptr) {
            Ok(None) => break,
            Ok(Some(m)) => {
                assert_ne!(q.read_ptr(), before);
                let _ = decode_message(&m.header, &m.payload);
            }
            Err(_) => {
                if q.skip(&ring, write_ptr).unwrap_or(0) == 0 {
                    break;
                }
            }
        }
        assert!(q.read_ptr() < g.msg_count);
    }
});
