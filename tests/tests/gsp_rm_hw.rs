//! The hardware suite: the simulator's end-to-end scenarios (`nvbare_tests::gsp_suite`) on a
//! real GPU bound to vfio-pci, through `host::vfio::Vfio`. Ignored unless asked for:
//!
//! ```text
//! NVBARE_TEST_DEVICE=0000:41:00.0 cargo test --release -p nvbare-tests --test gsp_rm_hw \
//!     -- --ignored --nocapture --test-threads 1
//! ```
//! `NVBARE_TEST_NOIOMMU=1` accepts VFIO's no-IOMMU mode (unsafe: no DMA isolation).
//! `RUST_LOG=debug` shows every RM call. See `tests/HARDWARE.md` for the machine's set-up
//! and what to send back.

use std::time::Instant;

use nvbare_core::chip::Chip;
use nvbare_core::gsp_rm::GspRm;
use nvbare_core::regs::pmc::PmcBoot42;
use nvbare_host::pci::parse_address;
use nvbare_host::vfio::{Vfio, VfioOptions};
use nvbare_tests::gsp_suite::scenarios::{self, GspGpu};
use nvbare_tests::gsp_suite::{self, Files, firmware, quick_options, roomy_options};

/// The device under test and its firmware, or `None` after saying why not.
fn device() -> Option<(Vfio, Files)> {
    let bdf = match std::env::var("NVBARE_TEST_DEVICE") {
        Ok(b) if !b.trim().is_empty() => b,
        _ => {
            eprintln!("skipped: NVBARE_TEST_DEVICE is not set");
            return None;
        }
    };
    let _ = env_logger::builder().is_test(true).try_init();
    let addr = parse_address(&bdf).unwrap_or_else(|e| panic!("NVBARE_TEST_DEVICE: {e}"));
    let opts = VfioOptions {
        allow_noiommu_unsafe: std::env::var("NVBARE_TEST_NOIOMMU").as_deref() == Ok("1"),
        ..VfioOptions::default()
    };
    let vfio = Vfio::open(addr, &opts).unwrap_or_else(|e| panic!("opening {addr}: {e}"));
    let chip = Chip::identify(PmcBoot42::read(&vfio))
        .unwrap_or_else(|e| panic!("{addr} is not a chip nvbare knows: {e}"));
    eprintln!("device {addr}: {chip} ({:?})", chip.arch());
    let files = firmware::load(chip.firmware_dir())?;
    Some((vfio, files))
}

fn open(vfio: Vfio, files: &Files) -> GspGpu<Vfio> {
    let gpu = gsp_suite::open(vfio, files, &roomy_options(), |_| String::new());
    eprintln!("{}", gpu.backend().gsp().report());
    eprintln!("{:?}", gpu.info());
    gpu
}

fn close(gpu: GspGpu<Vfio>) -> Vfio {
    let (p, r) = GspRm::close(gpu);
    let r = r.unwrap_or_else(|e| panic!("close: {e}"));
    eprintln!("close: {r:?}");
    assert!(r.teardown.unloaded && r.teardown.halted, "{r:?}");
    assert!(!r.teardown.wpr2_left_up, "{r:?}");
    assert_eq!(r.left.buffers, 0, "{r:?}");
    assert_eq!(p.dma_outstanding(), 0, "DMA memory still mapped");
    p
}

#[test]
#[ignore = "needs NVBARE_TEST_DEVICE=BDF: a GPU bound to vfio-pci (tests/HARDWARE.md)"]
fn hw_boot_alloc_copy_launch_close_reopen() {
    let Some((vfio, files)) = device() else {
        return;
    };
    let mut gpu = open(vfio, &files);
    scenarios::allocations(&mut gpu);
    let t = scenarios::copy_round_trip(&mut gpu, 256 << 20);
    eprintln!(
        "copy round trip {t:?}: {:.2} / {:.2} GB/s",
        t.bytes as f64 / t.to_vram.as_secs_f64() / 1e9,
        t.bytes as f64 / t.to_host.as_secs_f64() / 1e9
    );
    scenarios::vector_add(&mut gpu, 1 << 24);
    let vfio = close(gpu);
    let mut gpu = open(vfio, &files);
    assert!(
        !gpu.backend().gsp().report().reset_for_wpr2,
        "a clean close needs no reset"
    );
    scenarios::vector_add(&mut gpu, 1 << 20);
    close(gpu);
}

#[test]
#[ignore = "needs NVBARE_TEST_DEVICE=BDF: a GPU bound to vfio-pci (tests/HARDWARE.md)"]
fn hw_mmu_fault_names_the_address() {
    let Some((vfio, files)) = device() else {
        return;
    };
    let mut gpu = open(vfio, &files);
    let start = Instant::now();
    let r = scenarios::unmapped_store_faults(&mut gpu);
    eprintln!("fault reported after {:?}: {r}", start.elapsed());
    scenarios::copy_round_trip(&mut gpu, 1 << 20);
    close(gpu);
}

#[test]
#[ignore = "needs NVBARE_TEST_DEVICE=BDF: a GPU bound to vfio-pci (tests/HARDWARE.md)"]
fn hw_crash_then_recover() {
    if std::env::var("NVBARE_TEST_CRASH_CHILD").is_ok() {
        // The child: open, run a kernel, die without a teardown.
        let Some((vfio, files)) = device() else {
            return;
        };
        let mut gpu = open(vfio, &files);
        scenarios::vector_add(&mut gpu, 4096);
        std::process::abort();
    }
    if std::env::var("NVBARE_TEST_DEVICE").is_ok_and(|b| b.trim().is_empty())
        || std::env::var("NVBARE_TEST_DEVICE").is_err()
    {
        eprintln!("skipped: NVBARE_TEST_DEVICE is not set");
        return;
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "hw_crash_then_recover",
            "--nocapture",
        ])
        .env("NVBARE_TEST_CRASH_CHILD", "1")
        .status()
        .expect("run the crashing child");
    assert!(!status.success(), "the child was meant to abort");
    let Some((vfio, files)) = device() else {
        return;
    };
    let mut gpu = open(vfio, &files);
    assert!(
        gpu.backend().gsp().report().reset_for_wpr2,
        "the crashed process left WPR2 up"
    );
    scenarios::vector_add(&mut gpu, 4096);
    close(gpu);
}

#[test]
#[ignore = "needs NVBARE_TEST_DEVICE=BDF: a GPU bound to vfio-pci (tests/HARDWARE.md)"]
fn hw_short_soak_leaks_nothing() {
    let Some((vfio, files)) = device() else {
        return;
    };
    let mut gpu = gsp_suite::open(vfio, &files, &quick_options(), |_| String::new());
    let cubin = gsp_suite::kernels_for(gpu.sm()).expect("kernels for this SM");
    let k = gpu.load(cubin, "empty_kernel").unwrap();
    let objects = gpu.backend().live_objects();
    let memory = gpu.backend().memory_use();
    let dma = gpu.backend().platform().dma_outstanding();
    for i in 0..1000u64 {
        let placement = if i % 2 == 0 {
            nvbare_core::gpu::Placement::Vram
        } else {
            nvbare_core::gpu::Placement::Host
        };
        let b = gpu.alloc(4096 << (i % 10), placement, true).unwrap();
        gpu.free(b);
    }
    let t = Instant::now();
    let n = 100_000;
    for _ in 0..n {
        gpu.launch(&k, [1, 1, 1], [32, 1, 1], &[]).unwrap();
    }
    gpu.sync().unwrap();
    eprintln!("{n} launches: {:?} each", t.elapsed() / n);
    assert_eq!(gpu.backend().live_objects(), objects);
    assert_eq!(gpu.backend().memory_use(), memory);
    assert_eq!(gpu.backend().platform().dma_outstanding(), dma);
    gpu.unload(k).unwrap();
    close(gpu);
}
