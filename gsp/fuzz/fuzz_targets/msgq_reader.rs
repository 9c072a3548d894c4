//! The status-queue reader against arbitrary shared memory: a hostile `msgqTxHeader`, ring
//! contents and pointers. Must never panic, never read out of bounds, never loop: every
//! iteration either consumes a message, skips at least one element, or stops.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvbare_gsp::abi::MsgqTxHeader;
use nvbare_gsp::msgq::{MsgQueue, QueueGeometry};
use nvbare_gsp::rpc::events::decode_message;
use zerocopy::FromBytes;

fuzz_target!(|data: &[u8]| {
    // 32 bytes of tx header, 4 bytes read pointer, 4 bytes write pointer, then the ring.
    let Ok((hdr, rest)) = MsgqTxHeader::read_from_prefix(data) else { return };
    if rest.len() < 8 {
        return;
    }
    let read_ptr = u32::from_le_bytes(rest[0..4].try_into().unwrap());
    let write_ptr = u32::from_le_bytes(rest[4..8].try_into().unwrap());
    let body = &rest[8..];
    // Keep the queue small enough to build (at most 64 elements), as the core bounds it by
    // the memory it mapped.
    let queue_len = (hdr.size as usize).min(65 * 4096);
    let Ok(g) = QueueGeometry::from_tx_header(&hdr, queue_len) else { return };
    let mut ring = vec![0u8; g.ring_len()];
    for (i, b) in ring.iter_mut().enumerate() {
        if body.is_empty() {
            break;
        }
        *b = body[i % body.len()];
    }
    let Ok(mut q) = MsgQueue::new(g, read_ptr % g.msg_count) else { return };
    q.resync_sequence(u32::from_le_bytes(ring[0x24..0x28].try_into().unwrap()));
    for _ in 0..2 * g.msg_count {
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
