//! `nvbare bench --study`: where one launch round trip's time goes, and launch
//! choices compared inside one process, interleaved round by round so the
//! machine's drift (a shared, virtualised host) hits every variant alike.
//!
//! The breakdown puts CPU and GPU times on one axis: the GPU timer is read
//! through the usermode page between two CPU clock reads, and the tightest of
//! many such brackets gives the offset (its uncertainty is printed). A stamped
//! launch makes the front end write its GPU time when it reaches the launch;
//! the grid's completion release carries a second timestamp.

use std::fmt::Write;
use std::time::Instant;

use nvbare_core::gpu::{Backend, Gpu, GpuError, Kernel, LaunchProfile, LaunchTuning, Placement};

use crate::bench::{BENCH_CUBIN, BenchError, check, view};

const ONE: [u32; 3] = [1, 1, 1];

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the study and returns its report; `stop` is asked between its parts (Ctrl-C).
pub fn run<B: Backend>(
    gpu: &mut Gpu<B>,
    stop: fn() -> bool,
) -> Result<String, BenchError<B::Error>> {
    let started = Instant::now();
    let empty = gpu.load(BENCH_CUBIN, "empty_kernel")?;
    let warm = Instant::now();
    while warm.elapsed().as_millis() < 500 {
        check(stop, started)?;
        for _ in 0..1000 {
            gpu.launch(&empty, ONE, ONE, &[])?;
        }
        gpu.sync()?;
    }
    let mut out = String::new();
    let base = Instant::now();
    let cpu_ns = || base.elapsed().as_nanos() as i64;

    // What the primitives cost on this machine.
    let t = Instant::now();
    for _ in 0..100_000 {
        std::hint::black_box(Instant::now());
    }
    let clock_ns = t.elapsed().as_nanos() as f64 / 100_000.0;
    let t = Instant::now();
    for _ in 0..1000 {
        std::hint::black_box(gpu.gpu_time_ns());
    }
    let timer_ns = t.elapsed().as_nanos() as f64 / 1000.0;
    let _ = writeln!(
        out,
        "CPU clock read {clock_ns:.0} ns; GPU timer read through usermode {timer_ns:.0} ns"
    );

    io_costs(gpu, &mut out)?;
    check(stop, started)?;

    // The CPU-GPU clock offset from the tightest bracket.
    let mut best = (i64::MAX, 0i64);
    for _ in 0..2000 {
        let t0 = cpu_ns();
        let g = gpu.gpu_time_ns() as i64;
        let t1 = cpu_ns();
        if t1 - t0 < best.0 {
            best = (t1 - t0, g - (t0 + t1) / 2);
        }
    }
    let (bracket, offset) = best;

    // The breakdown of stamped round trips.
    const N: usize = 5000;
    let mut parts: [Vec<f64>; 5] = Default::default();
    for i in 0..N {
        if i % 500 == 0 {
            check(stop, started)?;
        }
        let t0 = cpu_ns();
        let v = gpu.launch_stamped(&empty, ONE, ONE, &[])?;
        let t1 = cpu_ns();
        gpu.wait(v)?;
        let t2 = cpu_ns();
        let (fetch, done) = gpu.last_stamps();
        let fetch = fetch as i64 - offset;
        let done = done as i64 - offset;
        for (p, ns) in parts
            .iter_mut()
            .zip([t1 - t0, fetch - t1, done - fetch, t2 - done, t2 - t0])
        {
            p.push(ns as f64 / 1000.0);
        }
    }
    let names = [
        "CPU: build + write launch, ring doorbell",
        "doorbell -> front end reaches the launch",
        "front end -> grid completion released",
        "release -> CPU sees it",
        "whole round trip",
    ];
    // The CPU part by step, over plain round trips.
    gpu.profile = Some(LaunchProfile::default());
    round_trips(gpu, &empty, N as u32)?;
    let p = gpu.profile.take().unwrap_or_default();
    let per = |ns: u64| ns as f64 / p.launches.max(1) as f64 / 1000.0;
    let _ = writeln!(
        out,
        "CPU per launch in round trips: prepare {:.3} us, write arena {:.3} us, submit {:.3} us",
        per(p.prepare_ns),
        per(p.write_ns),
        per(p.submit_ns)
    );
    let _ = writeln!(
        out,
        "round trip, median of {N} stamped launches (GPU/CPU offset known to +-{:.2} us):",
        bracket as f64 / 2000.0
    );
    for (name, p) in names.iter().zip(parts.iter_mut()) {
        let _ = writeln!(out, "  {name:<42} {:7.3} us", median(p));
    }

    // Interleaved A/B of launch choices.
    let variants: [(&str, LaunchTuning); 5] = [
        ("default", LaunchTuning::default()),
        (
            "mirror=0 (store every byte)",
            LaunchTuning {
                mirror: false,
                ..LaunchTuning::default()
            },
        ),
        (
            "relmembar=1 (release after FE sysmembar)",
            LaunchTuning {
                release_membar: true,
                ..LaunchTuning::default()
            },
        ),
        (
            "membar=0,relmembar=1 (FE membar only)",
            LaunchTuning {
                membar: 0,
                release_membar: true,
                ..LaunchTuning::default()
            },
        ),
        (
            "inval=0 (no cache invalidation)",
            LaunchTuning {
                invalidate: false,
                ..LaunchTuning::default()
            },
        ),
    ];
    const ROUNDS: usize = 9;
    const PER: u32 = 3000;
    let mut results = vec![Vec::new(); variants.len()];
    for _ in 0..ROUNDS {
        check(stop, started)?;
        for (i, (_, t)) in variants.iter().enumerate() {
            gpu.tuning = *t;
            results[i].push(round_trips(gpu, &empty, PER)?);
        }
    }
    gpu.tuning = LaunchTuning::default();
    let _ = writeln!(
        out,
        "round trip by variant, {ROUNDS} interleaved rounds of {PER} (median [min, max]):"
    );
    for ((name, _), r) in variants.iter().zip(results.iter_mut()) {
        let m = median(r);
        let _ = writeln!(
            out,
            "  {name:<34} {m:7.3} us [{:.3}, {:.3}]",
            r[0],
            r[r.len() - 1]
        );
    }
    Ok(out)
}

/// What the stores on the submission path cost: fences, write-combined lines to
/// video memory through BAR1, and a kick (fence, USERD GPPut, fence, doorbell).
fn io_costs<B: Backend>(gpu: &mut Gpu<B>, out: &mut String) -> Result<(), GpuError<B::Error>> {
    use std::sync::atomic::{Ordering, fence};
    const N: u32 = 2000;
    let vram = gpu.alloc(0x10000, Placement::Vram, true)?;
    let host = gpu.alloc(0x10000, Placement::Host, true)?;
    let per = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..N {
            f();
        }
        t.elapsed().as_nanos() as f64 / f64::from(N)
    };
    // The stores of `n` 64-byte lines: 8-byte words 0, 1, 2, ... (built once, outside the
    // timing).
    let words = |n: usize| -> Vec<u8> { (0..n as u64 * 8).flat_map(u64::to_le_bytes).collect() };
    let (one, twenty) = (words(1), words(20));
    let lines = |view: &nvbare_core::gpu::BufferView<'_>, data: &[u8]| {
        // Cannot fail: 20 lines fit the 0x10000-byte buffers.
        let _ = view.write_u64s(0, data);
        fence(Ordering::SeqCst);
    };
    let (v, h) = (view(&vram)?, view(&host)?);
    let t = Instant::now();
    for _ in 0..N {
        gpu.rekick()?;
    }
    let kick = t.elapsed().as_nanos() as f64 / f64::from(N);
    let costs = [
        ("fence", per(&mut || fence(Ordering::SeqCst))),
        (
            "1 line to host memory + fence",
            per(&mut || lines(&h, &one)),
        ),
        (
            "1 line to VRAM (BAR1 WC) + fence",
            per(&mut || lines(&v, &one)),
        ),
        (
            "20 lines to VRAM (BAR1 WC) + fence",
            per(&mut || lines(&v, &twenty)),
        ),
        ("kick: fence, GPPut, fence, doorbell", kick),
    ];
    gpu.free(vram);
    gpu.free(host);
    for (name, ns) in costs {
        let _ = writeln!(out, "  {name:<42} {ns:7.0} ns");
    }
    Ok(())
}

fn round_trips<B: Backend>(
    gpu: &mut Gpu<B>,
    k: &Kernel<B::Memory>,
    n: u32,
) -> Result<f64, GpuError<B::Error>> {
    let t = Instant::now();
    for _ in 0..n {
        let v = gpu.launch(k, ONE, ONE, &[])?;
        gpu.wait(v)?;
    }
    Ok(t.elapsed().as_secs_f64() / f64::from(n) * 1e6)
}
