//! Soak on silicon (issue 20, item 7): a million launches and ten thousand allocation cycles
//! in one process, with the process's RSS, the RM objects it holds and the video memory in
//! use sampled before, between and after: they must come back flat, and no wait may stall.
//! (The fault-then-bench cycles run as processes: `host/bench-results/device-run.sh soak`.)
//! Ignored by default (CI has no GPU):
//!   cargo test --release -p nvbare-host --test nvk_h200_soak --no-run   # here
//!   ./nvk_h200_soak --ignored --test-threads=1 --nocapture              # there

use std::time::Instant;

use nvbare_core::gpu::{GpuConfig, Placement};
use nvbare_core::rm::Engine;
use nvbare_host::bench::BENCH_CUBIN;
use nvbare_host::nvk::{self, Gpu};

/// The process's resident set (`VmRSS` of /proc/self/status), KiB.
fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    rss_kib: u64,
    rm_objects: i64,
    vram_used_mib: u64,
}

fn sample(gpu: &Gpu, label: &str) -> Sample {
    let (rm_objects, vram) = gpu.backend().resource_sample().expect("sample");
    let s = Sample {
        rss_kib: rss_kib(),
        rm_objects,
        vram_used_mib: vram >> 20,
    };
    println!(
        "sample {label:<28} RSS {:>7} KiB   RM objects held {:>4}   VRAM in use {:>6} MiB",
        s.rss_kib, s.rm_objects, s.vram_used_mib
    );
    s
}

/// Flat: the same RM objects, RSS within 4 MiB, VRAM in use within 64 MiB (other processes
/// may allocate meanwhile; on the device machine there are none).
fn assert_flat(before: Sample, after: Sample, what: &str) {
    assert_eq!(
        before.rm_objects, after.rm_objects,
        "{what}: RM objects leaked"
    );
    assert!(
        after.rss_kib <= before.rss_kib + 4096,
        "{what}: RSS grew from {} to {} KiB",
        before.rss_kib,
        after.rss_kib
    );
    assert!(
        after.vram_used_mib <= before.vram_used_mib + 64,
        "{what}: VRAM in use grew from {} to {} MiB",
        before.vram_used_mib,
        after.vram_used_mib
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU with its kernel driver; run through the device tool"]
fn soak_a_million_launches_and_ten_thousand_allocations_stay_flat() {
    let mut gpu = nvk::open(0, GpuConfig::default()).expect("open GPU");
    let k = gpu.load(BENCH_CUBIN, "empty_kernel").expect("load");
    // One launch first, so lazily made things (local memory, arena) exist before sampling.
    let f = gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]).unwrap();
    gpu.wait(f).unwrap();
    let s0 = sample(&gpu, "start");

    // A million launches: batches of 10 000 (every 100th waited for on its own, a round
    // trip), each batch's end waited for; the slowest batch says whether anything stalled.
    let t = Instant::now();
    let start = gpu.completed(Engine::Compute);
    let mut slowest_ms = 0.0f64;
    for batch in 0..100u32 {
        let b = Instant::now();
        let mut last = None;
        for i in 0..10_000u32 {
            let f = gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]).unwrap();
            if i % 100 == 99 {
                gpu.wait(f).unwrap();
            }
            last = Some(f);
        }
        gpu.wait(last.unwrap()).unwrap();
        slowest_ms = slowest_ms.max(b.elapsed().as_secs_f64() * 1e3);
        if batch % 25 == 24 {
            sample(&gpu, &format!("after {}k launches", (batch + 1) * 10));
        }
    }
    let done = gpu.completed(Engine::Compute) - start;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "1000000 launches: timeline advanced {done} in {secs:.2} s ({secs:.3} us each), slowest batch of 10000 {slowest_ms:.1} ms, doorbell re-rings {}",
        gpu.doorbell_rerings(Engine::Compute)
    );
    assert_eq!(done, 1_000_000, "every launch completed, in order");
    let s1 = sample(&gpu, "after 1M launches");
    assert_flat(s0, s1, "a million launches");

    // Ten thousand allocation cycles, mixed sizes and both placements, eight alive at a
    // time (the oldest freed first); every 100th buffer gets a 4 KiB copy round trip.
    let sizes: [u64; 8] = [
        4 << 10,
        64 << 10,
        1 << 20,
        2 << 20,
        6 << 20,
        16 << 20,
        64 << 20,
        3 << 20,
    ];
    let probe = gpu.alloc(8192, Placement::Host, true).unwrap();
    let pv = nvk::view(&probe).unwrap();
    let s2 = sample(&gpu, "before allocations");
    let t = Instant::now();
    let mut alive = std::collections::VecDeque::new();
    let mut slowest_us = 0.0f64;
    let mut bytes = 0u64;
    for i in 0..10_000u64 {
        // PANIC: the index is taken modulo the array's length.
        let size = sizes[(i * 7 % sizes.len() as u64) as usize];
        let host = i % 3 == 1;
        // Host buffers stay at most 2 MiB (pinning is the OS's cost, not the GPU's).
        let (size, placement, cpu) = if host {
            (size.min(2 << 20), Placement::Host, true)
        } else {
            (size, Placement::Vram, i % 5 == 0)
        };
        let a = Instant::now();
        let b = gpu.alloc(size, placement, cpu).unwrap();
        slowest_us = slowest_us.max(a.elapsed().as_secs_f64() * 1e6);
        bytes += size;
        if i % 100 == 0 {
            pv.write_u64(0, 0x5eed_0000 + i).unwrap();
            let f = gpu.copy(b.gpu_va(), probe.gpu_va(), 4096).unwrap();
            gpu.wait(f).unwrap();
            let f = gpu.copy(probe.gpu_va() + 4096, b.gpu_va(), 4096).unwrap();
            gpu.wait(f).unwrap();
            assert_eq!(pv.read_u64(4096).unwrap(), 0x5eed_0000 + i, "cycle {i}");
        }
        alive.push_back(b);
        if alive.len() > 8 {
            gpu.free(alive.pop_front().unwrap());
        }
        if i % 2500 == 2499 {
            sample(&gpu, &format!("after {} alloc cycles", i + 1));
        }
    }
    for b in alive {
        gpu.free(b);
    }
    println!(
        "10000 alloc/free cycles ({} MiB in all): {:.2} s, slowest allocation {slowest_us:.0} us",
        bytes >> 20,
        t.elapsed().as_secs_f64()
    );
    let s3 = sample(&gpu, "after allocations");
    assert_flat(s2, s3, "ten thousand allocations");
    gpu.free(probe);
    gpu.unload(k).unwrap();
    let s4 = sample(&gpu, "end");
    assert!(
        s4.rm_objects < s0.rm_objects,
        "the kernel's code memory went back"
    );
}
