//! Property tests of the message queues: what the writer puts in, the reader gets back, at
//! any ring position, size and sequence; and a reader facing arbitrary ring contents and
//! pointers returns errors, never panics, and never stalls (every step makes progress).

use nvbare_gsp::abi::MsgqTxHeader;
use nvbare_gsp::msgq::reader::ContinuationAssembler;
use nvbare_gsp::msgq::{
    MsgQueue, MsgqError, QueueGeometry, RpcQueue, checksum32, max_record_payload,
};
use proptest::prelude::*;

fn geometry(msg_count: u32) -> QueueGeometry {
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
    QueueGeometry::from_tx_header(&hdr, hdr.size as usize).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn writer_and_reader_round_trip(
        start in 0u32..40,
        seq in any::<u32>(),
        sizes in prop::collection::vec(0usize..20_000, 1..6),
        function in 0u32..0x1100,
    ) {
        let g = geometry(40);
        let mut w = RpcQueue::resume(g, start, seq).unwrap();
        let mut r = MsgQueue::new(g, start).unwrap();
        r.resync_sequence(seq);
        let mut ring = vec![0x5au8; g.ring_len()];
        for (k, &n) in sizes.iter().enumerate() {
            let payload: Vec<u8> = (0..n).map(|i| (i * 31 + k) as u8).collect();
            match w.enqueue_record(&mut ring, r.read_ptr(), function, &payload) {
                Ok(elems) => {
                    let m = r.receive(&ring, w.write_ptr()).unwrap().unwrap();
                    prop_assert_eq!(m.elem_count, elems);
                    prop_assert_eq!(m.header.function, function);
                    prop_assert_eq!(m.payload, payload);
                    prop_assert_eq!(r.read_ptr(), w.write_ptr());
                }
                Err(MsgqError::QueueFull { .. }) => prop_assert!(n > 0),
                Err(e) => prop_assert!(false, "unexpected {:?}", e),
            }
        }
        prop_assert_eq!(r.receive(&ring, w.write_ptr()).unwrap(), None);
    }

    #[test]
    fn large_rpcs_reassemble(start in 0u32..60, len in 0usize..(3 * 0xFFB0 + 17)) {
        let g = geometry(63);
        let mut w = RpcQueue::new(g, start).unwrap();
        let mut r = MsgQueue::new(g, start).unwrap();
        let mut ring = vec![0u8; g.ring_len()];
        let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let records = w.enqueue_rpc(&mut ring, start, 65, &payload).unwrap();
        prop_assert_eq!(records as usize, 1 + len.saturating_sub(1) / max_record_payload());
        let mut a = ContinuationAssembler::new(65, len);
        let mut done = None;
        while let Some(m) = r.receive(&ring, w.write_ptr()).unwrap() {
            done = a.feed(m).unwrap();
        }
        prop_assert_eq!(done.unwrap().payload, payload);
    }

    #[test]
    fn arbitrary_rings_never_panic_or_stall(
        bytes in prop::collection::vec(any::<u8>(), 0..8192),
        read_ptr in 0u32..8,
        write_ptr in any::<u32>(),
    ) {
        let g = geometry(8);
        let mut ring = vec![0u8; g.ring_len()];
        for (i, b) in ring.iter_mut().enumerate() {
            if !bytes.is_empty() { *b = bytes[i % bytes.len()]; }
        }
        let mut r = MsgQueue::new(g, read_ptr).unwrap();
        for _ in 0..16 {
            let before = r.read_ptr();
            match r.receive(&ring, write_ptr) {
                Ok(None) => break,
                Ok(Some(_)) => prop_assert_ne!(r.read_ptr(), before),
                Err(MsgqError::PointerOutOfRange { .. }) => { prop_assert!(write_ptr >= 8); break }
                Err(_) => prop_assert!(r.skip(&ring, write_ptr).unwrap() >= 1),
            }
        }
    }

    #[test]
    fn a_written_message_checksums_to_zero(len in 0usize..9000) {
        let g = geometry(4);
        let mut w = RpcQueue::new(g, 0).unwrap();
        let mut ring = vec![0u8; g.ring_len()];
        let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        w.enqueue_record(&mut ring, 0, 76, &payload).unwrap();
        prop_assert_eq!(checksum32(&ring[..0x50 + len]), 0);
    }
}
