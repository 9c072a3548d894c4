//! The VFIO path end to end on the simulator, with NVIDIA's real firmware: nvbare boots
//! GSP-RM 570.144 on a simulated GH100, GB202 and (end to end only) GB100, emulates RM over it (`GspRm`) and runs the
//! GPU layer unchanged: allocations, a 256 MiB copy round trip, a vector add, a typed MMU
//! fault, teardown, re-open, recovery after a crash, page tables through PRAMIN, and the same
//! scenarios over the remote platform. Every fault the simulator injects
//! (`nvbare_sim::FaultPlan`, and unplugging) is `gsp_rm_sim_faults.rs`'s.
//!
//! The firmware comes from `$NVBARE_FIRMWARE_DIR` or `~/.cache/nvbare/firmware`; without it
//! each test says it skipped (`NVBARE_REQUIRE_FIRMWARE=1` makes that a failure).

mod gsp_rm_sim_common;

use std::time::{Duration, Instant};

use gsp_rm_sim_common::*;
use nvbare_core::gpu::Placement;
use nvbare_core::gsp_rm::{GspRm, GspRmOptions, VramAccess};
use nvbare_sim::{FaultPlan, SimChip};
use nvbare_tests::gsp_suite::scenarios;
use nvbare_tests::gsp_suite::{self, quick_options, roomy_options};

fn end_to_end(chip: SimChip) {
    let Some(files) = files(chip) else { return };
    let g = sim(chip, FaultPlan::default());
    let mut gpu = open(&g, &files, &roomy_options());
    eprintln!("{}", gpu.backend().gsp().report());
    let rm = gpu.backend();
    assert_eq!(rm.gsp().chip().name().to_lowercase(), chip.spec().name);
    assert!(
        gpu.channels().copy_engine.is_some(),
        "a copy engine of its own"
    );
    scenarios::allocations(&mut gpu);
    let t = scenarios::copy_round_trip(&mut gpu, 256 << 20);
    eprintln!("{t:?}");
    scenarios::vector_add(&mut gpu, 1 << 20);
    let times = scenarios::pipelined_vector_add(&mut gpu, 1 << 16);
    eprintln!("copy in, kernel, copy out on the GPU: {times:?}");
    scenarios::recorded_sequence(&mut gpu, 1 << 12);
    let objects = gpu.backend().live_objects();
    assert!(objects > 10, "{objects} RM objects");
    close_clean(gpu, &g);
}

/// The booter-path chips end to end: the boot through FWSEC and the SEC2 booter, RM over
/// GSP-RM (MMU ver2 page tables, BAR1 through `NV_PBUS_BAR1_BLOCK`), allocations, a 256 MiB
/// copy round trip, a vector add with a QMD v3, close (FWSEC-SB, `booter_unload`), and a
/// second open without a reset.
fn booter_end_to_end(chip: SimChip) {
    let Some(files) = files(chip) else { return };
    let g = sim(chip, FaultPlan::default());
    let mut gpu = open(&g, &files, &roomy_options());
    eprintln!("{}", gpu.backend().gsp().report());
    assert_eq!(
        gpu.backend().gsp().chip().name().to_lowercase(),
        chip.spec().name
    );
    scenarios::allocations(&mut gpu);
    let t = scenarios::copy_round_trip(&mut gpu, 256 << 20);
    eprintln!("{t:?}");
    scenarios::vector_add(&mut gpu, 1 << 20);
    let p = close_clean(gpu, &g);
    let gpu = gsp_suite::open(p, &files, &roomy_options(), sim_log);
    assert!(
        !gpu.backend().gsp().report().reset_for_wpr2,
        "no reset needed"
    );
    close_clean(gpu, &g);
}

#[test]
fn ad102_boot_alloc_copy_launch_close_reopen() {
    booter_end_to_end(SimChip::Ad102);
}

/// TU102: QMD V02_03 (32-bit releases) and TURING_DMA_COPY_A (32-bit copy releases), also
/// timed copies (32-bit stamps) and a recorded sequence (whose replay patches one payload word
/// of each copy release).
#[test]
fn tu102_boot_alloc_copy_launch_close_reopen() {
    booter_end_to_end(SimChip::Tu102);
    let Some(files) = files(SimChip::Tu102) else {
        return;
    };
    let g = sim(SimChip::Tu102, FaultPlan::default());
    let mut gpu = open(&g, &files, &roomy_options());
    let times = scenarios::pipelined_vector_add(&mut gpu, 1 << 16);
    eprintln!("copy in, kernel, copy out on the GPU: {times:?}");
    scenarios::recorded_sequence(&mut gpu, 1 << 12);
    close_clean(gpu, &g);
}

#[test]
fn ga102_boot_alloc_copy_launch_close_reopen() {
    booter_end_to_end(SimChip::Ga102);
}

#[test]
fn ga100_boot_alloc_copy_launch_close_reopen() {
    booter_end_to_end(SimChip::Ga100);
}

#[test]
fn gh100_boot_alloc_copy_launch_close() {
    end_to_end(SimChip::Gh100);
}

#[test]
fn gb202_boot_alloc_copy_launch_close() {
    end_to_end(SimChip::Gb202);
}

#[test]
fn gb100_boot_alloc_copy_launch_close() {
    end_to_end(SimChip::Gb100);
}

fn faults_by_address(chip: SimChip) {
    let Some(files) = files(chip) else { return };
    let g = sim(chip, FaultPlan::default());
    let mut gpu = open(&g, &files, &quick_options());
    let start = Instant::now();
    let r = scenarios::unmapped_store_faults(&mut gpu);
    let c = r.channel.expect("the stopped channel is named");
    assert_eq!(c.xid, 31, "{r}");
    assert_eq!(c.chid, gpu.channels().compute.token & 0xffff, "{r}");
    assert!(
        r.mmu
            .iter()
            .any(|m| m.address == scenarios::UNMAPPED && m.fault_type == 2),
        "{r}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "reported within the fault poll, not at the timeout"
    );
    eprintln!("{r}");
    // The GPU is still usable for copies and closes cleanly.
    let t = scenarios::copy_round_trip(&mut gpu, 1 << 20);
    assert_eq!(t.bytes, 1 << 20);
    let (p, r) = GspRm::close(gpu);
    r.expect("close after a fault");
    assert_eq!(p.dma_outstanding(), 0);
}

#[test]
fn gh100_mmu_fault_names_the_address_and_channel() {
    faults_by_address(SimChip::Gh100);
}

#[test]
fn gb202_mmu_fault_names_the_address_and_channel() {
    faults_by_address(SimChip::Gb202);
}

#[test]
fn close_then_reopen_needs_no_reset() {
    let Some(files) = files(SimChip::Gh100) else {
        return;
    };
    let g = sim(SimChip::Gh100, FaultPlan::default());
    let mut gpu = open(&g, &files, &quick_options());
    scenarios::vector_add(&mut gpu, 4096);
    let p = close_clean(gpu, &g);
    let mut gpu = gsp_suite::open(p, &files, &quick_options(), sim_log);
    assert!(!gpu.backend().gsp().report().reset_for_wpr2);
    scenarios::vector_add(&mut gpu, 4096);
    close_clean(gpu, &g);
}

#[test]
fn a_crash_leaves_wpr2_up_and_the_next_open_recovers_by_reset() {
    let Some(files) = files(SimChip::Gb202) else {
        return;
    };
    let g = sim(SimChip::Gb202, FaultPlan::default());
    let gpu = open(&g, &files, &quick_options());
    // The process "dies": no teardown runs, GSP-RM keeps running, WPR2 stays up, and its
    // DMA memory stays mapped (the kernel would unmap it at exit).
    std::mem::forget(gpu);
    let dead = g.bus().sysmem.mapped();
    let mut gpu = open(&g, &files, &quick_options());
    assert!(gpu.backend().gsp().report().reset_for_wpr2, "WPR2 was up");
    scenarios::vector_add(&mut gpu, 4096);
    close_leaving(gpu, &g, dead);
}

#[test]
fn page_tables_through_pramin_when_bar1_is_not_used() {
    let Some(files) = files(SimChip::Gh100) else {
        return;
    };
    let g = sim(SimChip::Gh100, FaultPlan::default());
    let o = GspRmOptions {
        vram_access: VramAccess::Pramin,
        ..quick_options()
    };
    let mut gpu = open(&g, &files, &o);
    // CPU-visible "VRAM" comes from host memory; the rest is VRAM reached only by the GPU.
    let b = gpu.alloc(4096, Placement::Vram, true).unwrap();
    assert_eq!(b.placement(), Placement::Host);
    gpu.free(b);
    scenarios::copy_round_trip(&mut gpu, 4 << 20);
    scenarios::vector_add(&mut gpu, 4096);
    close_clean(gpu, &g);
}

/// The same scenarios over another platform: `host::remote::Remote`, tinygrad's remote PCI
/// protocol, to the simulator served in this process (every register access and VRAM
/// write a TCP round trip).
#[test]
fn the_scenarios_run_over_the_remote_platform_too() {
    use nvbare_host::remote::Remote;
    use nvbare_sim::remote::{ServeConfig, serve};
    let Some(files) = files(SimChip::Gb202) else {
        return;
    };
    let server = serve(ServeConfig::new(
        SimChip::Gb202,
        "127.0.0.1:0".parse().unwrap(),
        1,
    ))
    .expect("serve the simulated GB202");
    let remote = Remote::connect(&server.addr().to_string()).expect("connect");
    let mut gpu = gsp_suite::open(remote, &files, &roomy_options(), |_| String::new());
    scenarios::allocations(&mut gpu);
    scenarios::copy_round_trip(&mut gpu, 8 << 20);
    scenarios::vector_add(&mut gpu, 4096);
    let (p, r) = GspRm::close(gpu);
    let r = r.expect("close");
    assert!(r.teardown.unloaded && r.teardown.halted, "{r:?}");
    drop(p);
    server.stop();
}
