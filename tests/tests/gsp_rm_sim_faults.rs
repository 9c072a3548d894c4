//! Every fault the simulator injects (`nvbare_sim::FaultPlan`, and unplugging) into the VFIO
//! path with NVIDIA's real firmware ends in one clear error within its bound, the platform
//! back and its DMA memory freed: a silent GSP, corrupt, failed, lost and short RPC replies,
//! FSP errors, WPR2 left up, MMU faults, stalled channels, a GSP-RM that falls silent before
//! the close, a vanished device.
//!
//! The firmware comes from `$NVBARE_FIRMWARE_DIR` or `~/.cache/nvbare/firmware`; without it
//! each test says it skipped (`NVBARE_REQUIRE_FIRMWARE=1` makes that a failure).

mod gsp_rm_sim_common;

use std::time::{Duration, Instant};

use gsp_rm_sim_common::*;
use nvbare_core::boot::Stage;
use nvbare_core::gpu::{GpuError, Placement};
use nvbare_core::gsp_rm::{CloseError, GspRm, GspRmError, OpenError, OpenFailure};
use nvbare_core::gsp_rpc::RpcErrorKind;
use nvbare_core::rm::Engine;
use nvbare_gsp::abi::RpcFunction;
use nvbare_gsp::rm::NvStatus;
use nvbare_sim::{FaultPlan, SimChip, SimPlatform};
use nvbare_tests::gsp_suite::quick_options;
use nvbare_tests::gsp_suite::scenarios;

/// The committed test kernels for GH100 and GB202.
const SM90: &[u8] = nvbare_test_kernels::for_sm(90).expect("committed").cubin;
const SM120: &[u8] = nvbare_test_kernels::for_sm(120).expect("committed").cubin;

/// The longest any single wait of [`quick_options`] lasts, and what a failure may take
/// beyond it (boot, teardown waits, a debug build on a shared machine).
const BOUND: Duration = Duration::from_secs(20);

/// Opens with `faults` expecting failure; checks the bound and that the platform came back
/// with all its DMA memory freed.
fn open_fails(chip: SimChip, faults: FaultPlan) -> Option<OpenError> {
    let files = files(chip)?;
    let g = sim(chip, faults);
    let start = Instant::now();
    let f = match GspRm::open(
        SimPlatform::new(g.clone()),
        &files.firmware(),
        &quick_options(),
    ) {
        Ok(_) => panic!("the open succeeded despite the injected fault"),
        Err(f) => f,
    };
    let took = start.elapsed();
    let OpenFailure {
        error, platform, ..
    } = *f;
    assert!(took < BOUND, "took {took:?}: {error}");
    assert_eq!(platform.dma_outstanding(), 0, "DMA leaked: {error}");
    assert_eq!(
        g.bus().sysmem.mapped(),
        (0, 0),
        "DMA mappings left: {error}"
    );
    eprintln!("{error}");
    Some(error)
}

fn says(e: &impl std::fmt::Display, words: &[&str]) {
    let text = e.to_string();
    for w in words {
        assert!(text.contains(w), "{w:?} missing from: {text}");
    }
}

#[test]
fn a_silent_gsp_fails_the_boot_clearly() {
    let faults = FaultPlan {
        gsp_silent: true,
        ..FaultPlan::default()
    };
    let Some(e) = open_fails(SimChip::Gh100, faults) else {
        return;
    };
    assert!(
        matches!(&e, OpenError::Boot(b) if b.stage == Stage::GspInit),
        "{e}"
    );
    says(&e, &["GSP_INIT_DONE"]);
}

#[test]
fn a_corrupt_reply_to_an_rm_alloc_fails_clearly() {
    let faults = FaultPlan {
        corrupt_reply_to: Some(RpcFunction::GspRmAlloc.as_u32()),
        ..FaultPlan::default()
    };
    let Some(e) = open_fails(SimChip::Gb202, faults) else {
        return;
    };
    let OpenError::Setup { source, .. } = &e else {
        panic!("not a setup error: {e}")
    };
    assert!(
        matches!(source, GspRmError::Rpc { source, .. } if matches!(source.kind, RpcErrorKind::BadMessage { .. })),
        "{e}"
    );
    says(&e, &["GSP_RM_ALLOC", "NV01_ROOT_CLIENT"]);
}

#[test]
fn a_failed_rm_alloc_names_the_class_and_status() {
    let faults = FaultPlan {
        rpc_failure: Some((RpcFunction::GspRmAlloc.as_u32(), NvStatus::ERR_NO_MEMORY.0)),
        ..FaultPlan::default()
    };
    let Some(e) = open_fails(SimChip::Gh100, faults) else {
        return;
    };
    assert_eq!(
        e.refused_with().map(|s| s.0),
        Some(NvStatus::ERR_NO_MEMORY.0)
    );
    says(&e, &["refused", "GSP_RM_ALLOC", "NV_ERR_NO_MEMORY"]);
}

#[test]
fn a_failed_set_page_directory_fails_binding_the_va_space() {
    let faults = FaultPlan {
        rpc_failure: Some((
            RpcFunction::SetPageDirectory.as_u32(),
            NvStatus::ERR_INVALID_STATE.0,
        )),
        ..FaultPlan::default()
    };
    let Some(e) = open_fails(SimChip::Gb202, faults) else {
        return;
    };
    let OpenError::Gpu(g) = &e else {
        panic!("not a GPU-layer error: {e}")
    };
    assert!(
        matches!(
            **g,
            GpuError::Backend {
                step: nvbare_core::rm::Step::BindVaSpace,
                ..
            }
        ),
        "{e}"
    );
    says(&e, &["SET_PAGE_DIRECTORY", "NV_ERR_INVALID_STATE"]);
}

#[test]
fn a_device_info_table_without_end_is_an_error() {
    let faults = FaultPlan {
        endless_device_info: true,
        ..FaultPlan::default()
    };
    let Some(e) = open_fails(SimChip::Gh100, faults) else {
        return;
    };
    let OpenError::Gpu(g) = &e else {
        panic!("not a GPU-layer error: {e}")
    };
    assert!(
        matches!(
            &**g,
            GpuError::Backend {
                source: GspRmError::DeviceInfoTableTooLong { entries: 256 },
                ..
            }
        ),
        "{e}"
    );
    says(&e, &["MAX_DEVICES = 256"]);
}

#[test]
fn an_fsp_error_fails_the_boot_clearly() {
    let faults = FaultPlan {
        fsp_error: Some(0x9f),
        ..FaultPlan::default()
    };
    let Some(e) = open_fails(SimChip::Gh100, faults) else {
        return;
    };
    assert!(
        matches!(&e, OpenError::Boot(b) if b.stage == Stage::Fsp),
        "{e}"
    );
    says(&e, &["chain of trust"]);
}

#[test]
fn a_corrupted_fsp_reply_fails_the_boot_clearly() {
    let faults = FaultPlan {
        fsp_corrupt_reply: true,
        ..FaultPlan::default()
    };
    let Some(e) = open_fails(SimChip::Gb202, faults) else {
        return;
    };
    assert!(
        matches!(&e, OpenError::Boot(b) if b.stage == Stage::Fsp),
        "{e}"
    );
}

#[test]
fn wpr2_left_up_is_recovered_by_reset() {
    let Some(files) = files(SimChip::Gh100) else {
        return;
    };
    let g = sim(
        SimChip::Gh100,
        FaultPlan {
            wpr2_left_up: true,
            ..FaultPlan::default()
        },
    );
    let mut gpu = open(&g, &files, &quick_options());
    assert!(gpu.backend().gsp().report().reset_for_wpr2);
    scenarios::vector_add(&mut gpu, 1024);
    close_clean(gpu, &g);
}

#[test]
fn an_injected_mmu_fault_on_a_mapped_buffer_is_reported_by_address() {
    let Some(files) = files(SimChip::Gh100) else {
        return;
    };
    let g = sim(SimChip::Gh100, FaultPlan::default());
    let mut gpu = open(&g, &files, &quick_options());
    let src = gpu.alloc(1 << 20, Placement::Host, true).unwrap();
    let dst = gpu.alloc(1 << 20, Placement::Vram, false).unwrap();
    let at = dst.gpu_va() + 0x4_0000;
    g.inject(|f| f.mmu_fault_at = Some(at));
    let start = Instant::now();
    let f = gpu.copy(dst.gpu_va(), src.gpu_va(), 1 << 20).unwrap();
    let e = gpu.wait(f).expect_err("the copy faulted");
    assert!(start.elapsed() < BOUND, "{e}");
    let r = e.fault().unwrap_or_else(|| panic!("not a fault: {e}"));
    assert!(r.mmu.iter().any(|m| m.address == at), "{r}");
    eprintln!("{e}");
    gpu.free(src);
    gpu.free(dst);
    let (p, r) = GspRm::close(gpu);
    r.expect("close after a fault");
    assert_eq!(p.dma_outstanding(), 0);
}

/// Injects `faults` into a running GPU and expects the wait for `engine`'s work to end in
/// a timeout naming its channel.
fn stalls(faults: impl FnOnce(&mut FaultPlan), engine: Engine) {
    let Some(files) = files(SimChip::Gb202) else {
        return;
    };
    let g = sim(SimChip::Gb202, FaultPlan::default());
    let mut gpu = open(&g, &files, &quick_options());
    let k = (engine == Engine::Compute).then(|| gpu.load(SM120, "empty_kernel").unwrap());
    let buf = gpu.alloc(1 << 20, Placement::Vram, false).unwrap();
    g.inject(faults);
    let start = Instant::now();
    let f = match &k {
        None => gpu
            .copy(buf.gpu_va(), buf.gpu_va() + (512 << 10), 4096)
            .unwrap(),
        Some(k) => gpu.launch(k, [1, 1, 1], [1, 1, 1], &[]).unwrap(),
    };
    let e = gpu.wait(f).expect_err("the work never completes");
    let took = start.elapsed();
    assert!(e.is_timeout(), "{e}");
    assert!(took < BOUND, "took {took:?}");
    says(&e, &[engine.label()]);
    eprintln!("{e}");
    gpu.free(buf);
    let (p, r) = GspRm::close(gpu);
    r.expect("close after a stall");
    assert_eq!(p.dma_outstanding(), 0);
}

#[test]
fn a_stalled_channel_times_out_naming_it() {
    stalls(|f| f.channel_stall = true, Engine::Compute);
}

#[test]
fn a_switched_off_copy_engine_times_out_naming_the_copy_channel() {
    stalls(|f| f.copy_engine_off = true, Engine::Copy);
}

#[test]
fn gsp_rm_falling_silent_fails_the_close_clearly_and_resets() {
    let Some(files) = files(SimChip::Gh100) else {
        return;
    };
    let g = sim(SimChip::Gh100, FaultPlan::default());
    let gpu = open(&g, &files, &quick_options());
    g.inject(|f| f.gsp_silent = true);
    let start = Instant::now();
    let (p, r) = GspRm::close(gpu);
    let took = start.elapsed();
    let e = r.expect_err("GSP-RM answers nothing");
    assert!(took < BOUND, "took {took:?}: {e}");
    assert!(
        matches!(e, CloseError::Free { .. } | CloseError::Teardown(_)),
        "{e}"
    );
    says(&e, &["did not answer"]);
    assert_eq!(p.dma_outstanding(), 0, "DMA memory freed anyway");
    eprintln!("{e}");
}

#[test]
fn a_refused_free_keeps_the_unloads_report() {
    let Some(files) = files(SimChip::Gh100) else {
        return;
    };
    let g = sim(SimChip::Gh100, FaultPlan::default());
    let gpu = open(&g, &files, &quick_options());
    g.inject(|f| f.rpc_failure = Some((RpcFunction::Free.as_u32(), NvStatus::ERR_INVALID_STATE.0)));
    let (p, r) = GspRm::close(gpu);
    let e = r.expect_err("GSP-RM refuses every FREE");
    let CloseError::Free { teardown, .. } = &e else {
        panic!("not the free's error: {e}")
    };
    // The unload after the refused frees went as usual, and the error says so.
    assert!(teardown.unloaded && teardown.halted, "{teardown:?}");
    assert!(!teardown.wpr2_left_up, "{teardown:?}");
    says(&e, &["freeing the RM objects", "NV_ERR_INVALID_STATE"]);
    assert_eq!(p.dma_outstanding(), 0, "DMA memory freed anyway");
}

#[test]
fn a_vanished_device_ends_waits_and_the_close_clearly() {
    let Some(files) = files(SimChip::Gh100) else {
        return;
    };
    let g = sim(SimChip::Gh100, FaultPlan::default());
    let mut gpu = open(&g, &files, &quick_options());
    let k = gpu.load(SM90, "empty_kernel").unwrap();
    g.unplug();
    let start = Instant::now();
    let f = gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]).unwrap();
    let e = gpu.wait(f).expect_err("nothing runs on a vanished GPU");
    assert!(start.elapsed() < BOUND, "{e}");
    says(&e, &["no longer answers"]);
    eprintln!("{e}");
    let start = Instant::now();
    let (p, r) = GspRm::close(gpu);
    let e = r.expect_err("nothing to unload");
    assert!(start.elapsed() < BOUND, "{e}");
    assert_eq!(p.dma_outstanding(), 0, "DMA memory freed anyway");
    eprintln!("{e}");
}

#[test]
fn an_allocation_whose_reply_is_lost_keeps_its_handle() {
    use nvbare_core::rm::RmApi;
    use nvbare_gsp::rm::classes::NV01_MEMORY_VIRTUAL;
    let Some(files) = files(SimChip::Gh100) else {
        return;
    };
    let g = sim(SimChip::Gh100, FaultPlan::default());
    let mut gpu = open(&g, &files, &quick_options());
    let device = gpu.objects().device;
    let before = gpu.backend().live_objects();
    g.inject(|f| f.lose_reply_to = Some(RpcFunction::GspRmAlloc.as_u32()));
    let e = gpu
        .backend_mut()
        .alloc_raw(device, NV01_MEMORY_VIRTUAL, &mut [])
        .expect_err("no reply");
    assert!(matches!(e, GspRmError::Rpc { .. }), "{e}");
    // GSP-RM made the object: its handle is not handed out again (GSP-RM would refuse it
    // as a duplicate), and it is counted, to be freed with the client.
    g.inject(|f| f.lose_reply_to = None);
    gpu.backend_mut()
        .alloc_raw(device, NV01_MEMORY_VIRTUAL, &mut [])
        .unwrap_or_else(|e| panic!("a fresh handle: {e}\n{}", sim_log(gpu.backend().platform())));
    assert_eq!(gpu.backend().live_objects(), before + 2);
    close_clean(gpu, &g);
}

#[test]
fn a_reply_with_a_short_parameter_block_is_an_error() {
    use nvbare_core::rm::RmApi;
    use nvbare_gsp::rm::alloc::MemoryVirtualAllocParams;
    use nvbare_gsp::rm::classes::NV01_MEMORY_VIRTUAL;
    use nvbare_gsp::rm::ctrl::cmd;
    use nvbare_gsp::rm::ctrl::subdevice::FifoDeviceInfoTableParams;
    let Some(files) = files(SimChip::Gh100) else {
        return;
    };
    let g = sim(SimChip::Gh100, FaultPlan::default());
    let mut gpu = open(&g, &files, &quick_options());
    let (device, subdevice) = (gpu.objects().device, gpu.objects().subdevice);
    let before = gpu.backend().live_objects();
    g.inject(|f| f.short_reply_to = Some(RpcFunction::GspRmAlloc.as_u32()));
    let mut p = MemoryVirtualAllocParams::default();
    let e = gpu
        .backend_mut()
        .alloc(device, NV01_MEMORY_VIRTUAL, &mut p)
        .expect_err("parameters not read back");
    assert!(
        matches!(
            e,
            GspRmError::ReplySize {
                sent: 24,
                got: 20,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        gpu.backend().live_objects(),
        before + 1,
        "the object was made"
    );
    g.inject(|f| f.short_reply_to = Some(RpcFunction::GspRmControl.as_u32()));
    let mut t = FifoDeviceInfoTableParams::default();
    let e = gpu
        .backend_mut()
        .control(subdevice, cmd::NV2080_FIFO_GET_DEVICE_INFO_TABLE, &mut t)
        .expect_err("parameters not read back");
    assert!(matches!(e, GspRmError::ReplySize { .. }), "{e}");
    says(&e, &["bytes of parameters"]);
    g.inject(|f| f.short_reply_to = None);
    close_clean(gpu, &g);
}
