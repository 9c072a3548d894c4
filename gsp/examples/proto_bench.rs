//! Benchmark of the GSP message path, in ns per operation:
//! - encode + checksum + enqueue of an RPC with a 64 B payload and with a 64 KiB payload
//!   (the latter is two records: 16 elements + a continuation record);
//! - draining 1000 events from the status queue: validate (element count, length,
//!   checksum, sequence), copy out and decode each (`MsgQueue::receive` + `decode_message`).
//!
//! Run: `cargo run --release -p nvbare-gsp --example proto_bench`
//! Each figure is the median of 15 timed batches after a warm-up batch.

use std::hint::black_box;
use std::time::Instant;

use nvbare_gsp::abi::{MsgqTxHeader, RpcEvent};
use nvbare_gsp::msgq::{MsgQueue, QueueGeometry, RpcQueue, SharedQueueLayout};
use nvbare_gsp::rpc::commands::Command;
use nvbare_gsp::rpc::events::decode_message;

fn median_ns_per_op(batches: usize, ops_per_batch: u64, mut batch: impl FnMut()) -> f64 {
    batch(); // warm-up
    let mut v: Vec<f64> = (0..batches)
        .map(|_| {
            let t = Instant::now();
            batch();
            t.elapsed().as_nanos() as f64 / ops_per_batch as f64
        })
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn bench_enqueue(payload_len: usize) -> f64 {
    let layout = SharedQueueLayout::default_sizes();
    let g = QueueGeometry::from_tx_header(
        &layout.command_queue_header(),
        layout.cmd_queue_size as usize,
    )
    .unwrap();
    let mut q = RpcQueue::new(g, 0).unwrap();
    let mut ring = vec![0u8; g.ring_len()];
    let params: Vec<u8> = (0..payload_len - 24).map(|i| i as u8).collect();
    let iters = if payload_len > 4096 { 200 } else { 20_000 };
    median_ns_per_op(15, iters, || {
        for _ in 0..iters {
            // Encode (typed command -> payload), then checksum + copy into the ring. GSP is
            // assumed to keep up: its read pointer equals our write pointer.
            let c = Command::rm_control(0xc1e0_0004, 0xcf00_0002, 0x2080_0110, black_box(&params))
                .unwrap();
            let rp = q.write_ptr();
            q.enqueue_rpc(&mut ring, rp, c.function.as_u32(), &c.payload)
                .unwrap();
        }
        black_box(&ring);
    })
}

fn bench_drain(events: u32) -> f64 {
    // A status queue big enough to hold all events at once.
    let hdr = MsgqTxHeader {
        version: 0,
        size: (events + 25) * 4096,
        msg_size: 4096,
        msg_count: events + 24,
        write_ptr: 0,
        flags: 1,
        rx_hdr_off: 32,
        entry_off: 4096,
    };
    let g = QueueGeometry::from_tx_header(&hdr, hdr.size as usize).unwrap();
    let mut gsp = RpcQueue::new(g, 0).unwrap();
    let mut ring = vec![0u8; g.ring_len()];
    // A realistic mix: POST_EVENT (notifications), RC_TRIGGERED, OS_ERROR_LOG, INIT_DONE.
    let mut post = [0u8; 29 + 16];
    post[24] = 16;
    let mut rc = [0u8; 48 + 64];
    rc[44] = 64;
    let mut log = [0u8; 272];
    log[12..40].copy_from_slice(b"NVRM: Xid 13: graphics exc.\0");
    for i in 0..events {
        let (f, p) = match i % 4 {
            0 => (RpcEvent::PostEvent, &post[..]),
            1 => (RpcEvent::RcTriggered, &rc[..]),
            2 => (RpcEvent::OsErrorLog, &log[..]),
            _ => (RpcEvent::GspInitDone, &[][..]),
        };
        gsp.enqueue_record(&mut ring, 0, f.as_u32(), p).unwrap();
    }
    let write_ptr = gsp.write_ptr();
    median_ns_per_op(15, u64::from(events), || {
        let mut q = MsgQueue::new(g, 0).unwrap();
        let mut n = 0;
        while let Some(m) = q.receive(&ring, write_ptr).unwrap() {
            black_box(decode_message(&m.header, &m.payload).unwrap());
            n += 1;
        }
        assert_eq!(n, events);
    })
}

fn main() {
    println!("| operation | ns/op |");
    println!("|---|---|");
    println!(
        "| encode + checksum + enqueue, 64 B RPC | {:.0} |",
        bench_enqueue(64)
    );
    println!(
        "| encode + checksum + enqueue, 64 KiB RPC (2 records) | {:.0} |",
        bench_enqueue(64 << 10)
    );
    println!(
        "| drain 1000 events (receive + validate + decode), per event | {:.0} |",
        bench_drain(1000)
    );
}
