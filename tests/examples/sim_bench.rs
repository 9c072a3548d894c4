//! Numbers of the VFIO path on the simulator, for spotting regressions (not a hardware
//! claim: the simulated engines run on the host's CPU):
//!
//! - the boot's host-side work per stage (everything but waiting on the simulated
//!   firmware), and the RM setup and GPU-layer open after it;
//! - a launch round trip (launch `empty_kernel`, wait) and launch throughput;
//! - copy bandwidth host → VRAM, VRAM → host, VRAM → VRAM.
//!
//! ```text
//! cargo run --release -p nvbare-tests --example sim_bench [-- gh100|gb202 ...]
//! ```
//! Needs the real firmware (`NVBARE_FIRMWARE_DIR` or `~/.cache/nvbare/firmware`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use nvbare_core::boot;
use nvbare_core::gpu::{Gpu, Placement};
use nvbare_core::gsp_rm::GspRm;
use nvbare_core::hal::Nanos;
use nvbare_sim::{FaultPlan, SimChip, SimGpu, SimPlatform};
use nvbare_tests::gsp_suite::{firmware, kernels_for, roomy_options};

fn ns(d: Duration) -> Nanos {
    Nanos(d.as_nanos() as u64)
}

fn gib_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / f64::from(1u32 << 30)
}

fn bench(chip: SimChip) {
    let Some(files) = firmware::load(chip.spec().name) else {
        return;
    };
    let g = Arc::new(SimGpu::with_faults(chip, FaultPlan::default()).expect("simulated GPU"));
    let o = roomy_options();
    let t0 = Instant::now();
    let gsp = match boot::boot(SimPlatform::new(g.clone()), &files.firmware(), &o.boot) {
        Ok(gsp) => gsp,
        Err(f) => panic!("boot: {}", f.error),
    };
    let booted = t0.elapsed();
    let report = gsp.report().clone();
    let t1 = Instant::now();
    let rm = match GspRm::over(gsp, o.vram_access) {
        Ok(rm) => rm,
        Err(f) => panic!("RM setup: {}", f.error),
    };
    let rm_setup = t1.elapsed();
    let t2 = Instant::now();
    let mut gpu = match Gpu::open_or_give_back(rm, o.gpu) {
        Ok(gpu) => gpu,
        Err((e, _)) => panic!("GPU layer: {e}"),
    };
    let layer = t2.elapsed();
    println!("== {} (simulated) ==", chip.spec().name);
    println!("{report}");
    println!(
        "open: boot {} (host work {}), RM setup with the golden context {}, GPU layer \
         (object tree, channels, engines) {}",
        ns(booted),
        Nanos(report.host_ns()),
        ns(rm_setup),
        ns(layer)
    );

    let cubin = kernels_for(gpu.sm()).expect("kernels for this SM");
    let k = gpu.load(cubin, "empty_kernel").expect("load");
    for _ in 0..100 {
        let f = gpu.launch(&k, [1, 1, 1], [32, 1, 1], &[]).unwrap();
        gpu.wait(f).unwrap();
    }
    let n = 20_000;
    let t = Instant::now();
    for _ in 0..n {
        let f = gpu.launch(&k, [1, 1, 1], [32, 1, 1], &[]).unwrap();
        gpu.wait(f).unwrap();
    }
    let rt = t.elapsed() / n;
    let n = 200_000;
    let t = Instant::now();
    for _ in 0..n {
        gpu.launch(&k, [1, 1, 1], [32, 1, 1], &[]).unwrap();
    }
    gpu.sync().unwrap();
    let per = t.elapsed() / n;
    println!(
        "launch round trip (launch + wait): {}; back-to-back launches: {} each",
        ns(rt),
        ns(per)
    );

    let bytes: u64 = 256 << 20;
    let host = gpu.alloc(bytes, Placement::Host, true).unwrap();
    let vram = gpu.alloc(bytes, Placement::Vram, false).unwrap();
    let vram2 = gpu.alloc(bytes, Placement::Vram, false).unwrap();
    for (what, dst, src) in [
        ("host -> VRAM", vram.gpu_va(), host.gpu_va()),
        ("VRAM -> host", host.gpu_va(), vram.gpu_va()),
        ("VRAM -> VRAM", vram2.gpu_va(), vram.gpu_va()),
    ] {
        let f = gpu.copy(dst, src, bytes).unwrap();
        gpu.wait(f).unwrap();
        let t = Instant::now();
        let reps = 4;
        for _ in 0..reps {
            gpu.copy(dst, src, bytes).unwrap();
        }
        gpu.sync().unwrap();
        println!(
            "copy {what}: {:.2} GiB/s ({} MiB x {reps})",
            gib_per_s(bytes * reps, t.elapsed()),
            bytes >> 20
        );
    }
    for b in [host, vram, vram2] {
        gpu.free(b);
    }
    gpu.unload(k).unwrap();
    let t = Instant::now();
    let (_p, r) = GspRm::close(gpu);
    let r = r.expect("close");
    println!(
        "close: {} (RM objects freed {}, unloaded {}, halted {})",
        ns(t.elapsed()),
        r.objects_freed,
        r.teardown.unloaded,
        r.teardown.halted
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let chips: Vec<SimChip> = if args.is_empty() {
        vec![SimChip::Gh100, SimChip::Gb202]
    } else {
        args.iter()
            .map(|a| SimChip::from_name(a).unwrap_or_else(|| panic!("unknown chip {a}")))
            .collect()
    };
    for c in chips {
        bench(c);
    }
}
