//! Proof on silicon: the kernel-driver backend running our own pushbuffers,
//! QMDs and GPFIFOs on a real GPU. Ignored by default (CI has no GPU); run on
//! the H200 through the `device` tool:
//!   cargo test --release -p nvbare-host --test nvk_h200 --no-run   # here
//!   ./nvk_h200-<hash> --ignored --test-threads=1 --nocapture        # there
//!
//! Buffers are read and written through their safe views (volatile, bounds-checked).

use nvbare_core::gpu::{GpuConfig, Placement};
use nvbare_core::rm::Engine;
use nvbare_host::bench::BENCH_CUBIN;
use nvbare_host::nvk::{self, Buffer, Gpu};

fn open() -> Gpu {
    nvk::open(0, GpuConfig::default()).expect("open GPU")
}

/// `n` 8-byte words of a deterministic pseudo-random sequence (xorshift64*), so failures
/// reproduce.
fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(n * 8);
    for _ in 0..n {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out
}

/// Fills `buf` with the pseudo-random sequence of `seed`.
fn fill_random(buf: &Buffer, seed: u64) {
    let data = random_bytes((buf.size() / 8) as usize, seed);
    nvk::view(buf).unwrap().write_u64s(0, &data).unwrap();
}

fn read_f32(buf: &Buffer, i: usize) -> f32 {
    f32::from_bits(nvk::view(buf).unwrap().read_u32(4 * i).unwrap())
}

#[test]
#[ignore = "needs an NVIDIA GPU with its kernel driver; run through the device tool"]
fn vector_add_one_million() {
    let mut gpu = open();
    let k = gpu.load(BENCH_CUBIN, "vector_add").expect("load");
    let n: u32 = 1 << 20;
    let bytes = u64::from(n) * 4;
    let (ha, hb, hc) = (
        gpu.alloc(bytes, Placement::Host, true).unwrap(),
        gpu.alloc(bytes, Placement::Host, true).unwrap(),
        gpu.alloc(bytes, Placement::Host, true).unwrap(),
    );
    let (da, db, dc) = (
        gpu.alloc(bytes, Placement::Vram, false).unwrap(),
        gpu.alloc(bytes, Placement::Vram, false).unwrap(),
        gpu.alloc(bytes, Placement::Vram, false).unwrap(),
    );
    for (b, scale) in [(&ha, 1.0f32), (&hb, 0.5)] {
        let data: Vec<u8> = (0..n as usize)
            .flat_map(|i| (i as f32 * scale + 0.25).to_le_bytes())
            .collect();
        nvk::view(b).unwrap().write(0, &data).unwrap();
    }
    fill_random(&hc, 7); // poison the output
    gpu.copy(da.gpu_va(), ha.gpu_va(), bytes).unwrap();
    let v = gpu.copy(db.gpu_va(), hb.gpu_va(), bytes).unwrap();
    gpu.wait(v).unwrap();
    let mut params = Vec::new();
    for va in [da.gpu_va(), db.gpu_va(), dc.gpu_va()] {
        params.extend_from_slice(&va.to_le_bytes());
    }
    params.extend_from_slice(&n.to_le_bytes());
    params.resize(k.info.param_size as usize, 0);
    let v = gpu
        .launch(&k, [n / 256, 1, 1], [256, 1, 1], &params)
        .unwrap();
    gpu.wait(v).unwrap();
    let v = gpu.copy(hc.gpu_va(), dc.gpu_va(), bytes).unwrap();
    gpu.wait(v).unwrap();
    let mut wrong = 0;
    for i in 0..n as usize {
        let want = (i as f32 + 0.25) + (i as f32 * 0.5 + 0.25);
        if read_f32(&hc, i) != want {
            wrong += 1;
        }
    }
    println!(
        "vector_add: {n} elements, {wrong} wrong; c[12345] = {}",
        read_f32(&hc, 12345)
    );
    assert_eq!(wrong, 0);
    // The kernel's code memory goes back once its launches are done.
    gpu.unload(k).unwrap();
}

#[test]
#[ignore = "needs an NVIDIA GPU with its kernel driver; run through the device tool"]
fn one_gib_round_trip_is_byte_exact() {
    let mut gpu = open();
    let size = 1u64 << 30;
    let src = gpu.alloc(size, Placement::Host, true).unwrap();
    let dst = gpu.alloc(size, Placement::Host, true).unwrap();
    let vram = gpu.alloc(size, Placement::Vram, false).unwrap();
    fill_random(&src, 0x1234_5678);
    fill_random(&dst, 99);
    let v = gpu.copy(vram.gpu_va(), src.gpu_va(), size).unwrap();
    gpu.wait(v).unwrap();
    let v = gpu.copy(dst.gpu_va(), vram.gpu_va(), size).unwrap();
    gpu.wait(v).unwrap();
    let same =
        nvk::view(&src).unwrap().to_vec().unwrap() == nvk::view(&dst).unwrap().to_vec().unwrap();
    println!("1 GiB host -> VRAM -> host: byte-exact = {same}");
    assert!(same);
}

#[test]
#[ignore = "needs an NVIDIA GPU with its kernel driver; run through the device tool"]
fn hundred_thousand_launches_reach_the_timeline_value() {
    let mut gpu = open();
    let k = gpu.load(BENCH_CUBIN, "empty_kernel").expect("load");
    let start = gpu.submitted(Engine::Compute).value;
    let t = std::time::Instant::now();
    let mut last = gpu.submitted(Engine::Compute);
    for _ in 0..100_000 {
        last = gpu.launch(&k, [1, 1, 1], [32, 1, 1], &[]).unwrap();
    }
    gpu.wait(last).unwrap();
    println!(
        "100000 launches: timeline {} (expected {}), {:.3} us per launch",
        gpu.completed(Engine::Compute),
        start + 100_000,
        t.elapsed().as_secs_f64() * 1e6 / 1e5
    );
    assert_eq!(gpu.completed(Engine::Compute), start + 100_000);
}

#[test]
#[ignore = "needs an NVIDIA GPU with its kernel driver; run through the device tool"]
fn store_to_unmapped_address_is_reported() {
    let mut gpu = open();
    let k = gpu.load(BENCH_CUBIN, "store_value").expect("load");
    let bad: u64 = 0x7f00_dead_0000;
    let mut params = Vec::new();
    params.extend_from_slice(&bad.to_le_bytes());
    params.extend_from_slice(&42u64.to_le_bytes());
    let v = gpu.launch(&k, [1, 1, 1], [1, 1, 1], &params).unwrap();
    let err = gpu
        .wait_for(v, 3_000_000_000)
        .expect_err("the store must fault");
    let msg = err.to_string();
    println!("fault report: {msg}");
    assert!(msg.contains("fault"), "report names the fault: {msg}");
    let report = err.fault().expect("a typed fault report");
    assert!(
        report.mmu.iter().any(|f| f.address == bad) || !report.sm.is_empty(),
        "the report names the store: {report:?}"
    );
}

/// The completion release carries no front-end membar of its own (see
/// `Qmd::set_release`): each CTA's CWD membar must make the grid's stores visible
/// before the timeline moves. A kernel stores a fresh value, the CPU waits for the
/// timeline and reads at once, 20 000 times, into host memory and into video
/// memory (read back through BAR1).
#[test]
#[ignore = "needs an NVIDIA GPU with its kernel driver; run through the device tool"]
fn kernel_stores_are_visible_when_the_timeline_moves() {
    let mut gpu = open();
    let k = gpu.load(BENCH_CUBIN, "store_value").expect("load");
    let host = gpu.alloc(0x8000, Placement::Host, true).unwrap();
    let vram = gpu.alloc(0x8000, Placement::Vram, true).unwrap();
    const N: u64 = 20_000;
    let mut stale = [0u32; 2];
    for i in 0..N {
        let buf = if i % 2 == 0 { &host } else { &vram };
        let slot = (i / 2 % 4096) as usize;
        let value = 0x5eed_0000_0000 | i;
        let mut params = (buf.gpu_va() + 8 * slot as u64).to_le_bytes().to_vec();
        params.extend_from_slice(&value.to_le_bytes());
        let v = gpu.launch(&k, [1, 1, 1], [32, 1, 1], &params).unwrap();
        gpu.wait(v).unwrap();
        // `slot` < 4096 indexes the 0x8000-byte buffer; the kernel that wrote it has completed.
        let seen = nvk::view(buf).unwrap().read_u64(8 * slot).unwrap();
        if seen != value {
            stale[(i % 2) as usize] += 1;
        }
    }
    println!(
        "{N} store-then-wait launches: stale reads {} of host memory, {} of video memory",
        stale[0], stale[1]
    );
    assert_eq!(stale, [0, 0]);
}

/// The copy channel has a channel group of its own on an asynchronous copy
/// engine: a copy finishes while a kernel that spins for a few tenths of a second
/// (400 M SM clocks) is still running.
#[test]
#[ignore = "needs an NVIDIA GPU with its kernel driver; run through the device tool"]
fn copies_run_beside_a_running_kernel() {
    let mut gpu = open();
    assert!(
        gpu.channels().copy_engine.is_some(),
        "copy channel shares the graphics group: {:?}",
        gpu.channels().copy_refusals
    );
    let k = gpu.load(BENCH_CUBIN, "spin_cycles").expect("load");
    let bytes = 64u64 << 20;
    let host = gpu.alloc(bytes, Placement::Host, true).unwrap();
    let vram = gpu.alloc(bytes, Placement::Vram, false).unwrap();
    let t = std::time::Instant::now();
    let spin = gpu
        .launch(&k, [1, 1, 1], [1, 1, 1], &400_000_000u64.to_le_bytes())
        .unwrap();
    let c = gpu.copy(vram.gpu_va(), host.gpu_va(), bytes).unwrap();
    gpu.wait(c).unwrap();
    let copied = t.elapsed();
    let kernel_running = gpu.completed(Engine::Compute) < spin.value;
    gpu.wait(spin).unwrap();
    println!(
        "64 MiB copy done after {:.1} ms with the kernel {}; kernel done after {:.1} ms",
        copied.as_secs_f64() * 1e3,
        if kernel_running {
            "still running"
        } else {
            "finished"
        },
        t.elapsed().as_secs_f64() * 1e3
    );
    assert!(kernel_running);
}

/// GPU-side ordering both ways, with no CPU wait between the steps, and GPU timestamps:
/// a copy that waits (`wait_on`) for a kernel spinning a few hundredths of a second does not
/// finish before it; then 64 MiB copied in, a `copy16` grid that waits for that copy, and a
/// copy out that waits for the grid, checked byte for byte; every op's GPU times ordered.
#[test]
#[ignore = "needs an NVIDIA GPU with its kernel driver; run through the device tool"]
fn queues_wait_for_each_other_on_the_gpu_with_ordered_timestamps() {
    let mut gpu = open();
    let spin = gpu.load(BENCH_CUBIN, "spin_cycles").expect("load");
    let copy16 = gpu.load(BENCH_CUBIN, "copy16").expect("load");
    let bytes = 64u64 << 20;
    let src = gpu.alloc(bytes, Placement::Host, true).unwrap();
    let dst = gpu.alloc(bytes, Placement::Host, true).unwrap();
    let a = gpu.alloc(bytes, Placement::Vram, false).unwrap();
    let b = gpu.alloc(bytes, Placement::Vram, false).unwrap();
    fill_random(&src, 20);
    let one = |grid: u32, block: u32| nvbare_core::gpu::LaunchConfig {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        dynamic_shared: 0,
    };

    // A copy behind a spinning kernel (60 M SM clocks, tens of ms).
    let k = gpu
        .launch_timed(&spin, &one(1, 1), &60_000_000u64.to_le_bytes())
        .unwrap();
    gpu.wait_on(Engine::Copy, k.fence).unwrap();
    let c = gpu.copy_timed(a.gpu_va(), src.gpu_va(), bytes).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let copy_waited = !gpu.is_done(c.fence) && !gpu.is_done(k.fence);
    let (kt, ct) = (gpu.times(&k).unwrap(), gpu.times(&c).unwrap());
    println!(
        "spin {:.3} ms on the GPU, copy waiting for it: {copy_waited}; copy started {:.1} us \
         after the grid ended, took {:.3} ms",
        kt.duration_ns() as f64 / 1e6,
        ct.start_ns.saturating_sub(kt.end_ns) as f64 / 1e3,
        ct.duration_ns() as f64 / 1e6
    );
    assert!(
        copy_waited,
        "the copy finished before the kernel it waits for"
    );
    assert!(kt.start_ns <= kt.end_ns && ct.start_ns <= ct.end_ns);
    assert!(kt.end_ns <= ct.start_ns, "{kt:?} {ct:?}");

    // Copy in -> kernel -> copy out, the CPU waiting once, at the end.
    fill_random(&src, 21);
    let cin = gpu.copy_timed(a.gpu_va(), src.gpu_va(), bytes).unwrap();
    gpu.wait_on(Engine::Compute, cin.fence).unwrap();
    let mut params = Vec::new();
    params.extend_from_slice(&a.gpu_va().to_le_bytes());
    params.extend_from_slice(&b.gpu_va().to_le_bytes());
    params.extend_from_slice(&(bytes / 16).to_le_bytes());
    let kern = gpu.launch_timed(&copy16, &one(1056, 256), &params).unwrap();
    gpu.wait_on(Engine::Copy, kern.fence).unwrap();
    let cout = gpu.copy_timed(dst.gpu_va(), b.gpu_va(), bytes).unwrap();
    let t = [cin, kern, cout].map(|x| gpu.times(&x).unwrap());
    for (name, x) in ["copy in", "kernel", "copy out"].iter().zip(&t) {
        println!(
            "{name:8} start +{:9.1} us, {:8.1} us on the GPU",
            x.start_ns.saturating_sub(t[0].start_ns) as f64 / 1e3,
            x.duration_ns() as f64 / 1e3
        );
        assert!(x.start_ns <= x.end_ns);
    }
    assert!(
        t[0].end_ns <= t[1].start_ns && t[1].end_ns <= t[2].start_ns,
        "{t:?}"
    );
    let want = random_bytes((bytes / 8) as usize, 21);
    let mut got = vec![0u8; bytes as usize];
    nvk::view(&dst).unwrap().read(0, &mut got).unwrap();
    assert!(
        got == want,
        "the data did not pass through copy, kernel and copy intact"
    );
    for buf in [src, dst, a, b] {
        gpu.free(buf);
    }
}
