//! nvbare's own boot (`nvbare_core::boot`) against the simulated GPU, with NVIDIA's real
//! firmware files: boot a simulated GH100 and GB202, read the static info, tear down, boot
//! again; recover from WPR2 left up; and every fault the simulator can inject on its
//! FSP/GSP side ends in one clear error within its timeout, with all DMA memory given back.
//!
//! The firmware comes from `$NVBARE_FIRMWARE_DIR` or `~/.cache/nvbare/firmware`
//! (`nvidia/<chip>/gsp/*-570.144.bin`, as `nvbare firmware fetch --chip all` lays it out);
//! without it each test says it skipped.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nvbare_core::boot::{self, BootError, BootErrorKind, BootOptions, Firmware, Gsp, Stage};
use nvbare_core::gsp_rpc::RpcErrorKind;
use nvbare_sim::{FaultPlan, SimChip, SimGpu, SimPlatform};

/// The firmware files of one chip.
struct Files {
    fmc: Vec<u8>,
    gsp: Vec<u8>,
    bootloader: Vec<u8>,
}

impl Files {
    fn firmware(&self) -> Firmware<'_> {
        Firmware {
            fmc: &self.fmc,
            gsp: &self.gsp,
            bootloader: &self.bootloader,
            booter: Default::default(),
        }
    }
}

fn firmware_root() -> PathBuf {
    match std::env::var_os("NVBARE_FIRMWARE_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/nvbare/firmware"),
    }
}

/// The chip's files, or `None` (and a note) when they are not there.
fn files(chip: SimChip) -> Option<Files> {
    let dir = firmware_root()
        .join("nvidia")
        .join(chip.spec().name)
        .join("gsp");
    let read = |name: &str| std::fs::read(dir.join(format!("{name}-570.144.bin"))).ok();
    match (read("fmc"), read("gsp"), read("bootloader")) {
        (Some(fmc), Some(gsp), Some(bootloader)) => Some(Files {
            fmc,
            gsp,
            bootloader,
        }),
        _ => {
            eprintln!(
                "skipped: no 570.144 firmware for {} under {} (set NVBARE_FIRMWARE_DIR or run \
                 `nvbare firmware fetch --chip all`)",
                chip.spec().name,
                dir.display()
            );
            None
        }
    }
}

fn gpu(chip: SimChip, faults: FaultPlan) -> Arc<SimGpu> {
    Arc::new(SimGpu::with_faults(chip, faults).expect("simulated GPU"))
}

/// Bounds short enough that an injected failure ends a test quickly, long enough for the
/// simulator in a debug build on a shared machine.
fn options() -> BootOptions {
    const S: u64 = 1_000_000_000;
    let mut o = BootOptions::default();
    o.timeouts.fsp_ns = 3 * S;
    o.timeouts.lockdown_ns = 5 * S;
    o.timeouts.status_queue_ns = 5 * S;
    o.timeouts.init_done_ns = 5 * S;
    o.timeouts.rpc_reply_ns = 3 * S;
    o.timeouts.halt_ns = 3 * S;
    o
}

fn boot_ok(p: SimPlatform, files: &Files) -> Gsp<SimPlatform> {
    match boot::boot(p, &files.firmware(), &options()) {
        Ok(g) => g,
        Err(f) => {
            let log: Vec<String> = f
                .platform
                .gpu()
                .log()
                .lines()
                .iter()
                .map(|l| format!("{} {}: {}", l.at_ns, l.unit, l.text))
                .collect();
            let log = log.join("\n");
            panic!("boot failed: {}\nsimulator log:\n{log}", f.error)
        }
    }
}

fn round_trip(chip: SimChip, vram_mib: u64, sm_count: u32) {
    let Some(files) = files(chip) else { return };
    let g = gpu(chip, FaultPlan::default());
    let gsp = boot_ok(SimPlatform::new(g.clone()), &files);
    let info = gsp.info().clone();
    assert_eq!(info.vram_bytes >> 20, vram_mib, "{info}");
    assert_eq!(info.gr.sm_count, sm_count, "{info}");
    assert!(!info.classes.is_empty(), "{info}");
    let report = gsp.report().clone();
    assert_eq!(
        report.stages.iter().map(|s| s.stage).collect::<Vec<_>>(),
        Stage::BOOT
    );
    eprintln!("{report}");
    let (p, r) = gsp.shutdown();
    let t = r.expect("teardown");
    assert!(t.unloaded && t.halted, "{t:?}");
    assert!(!t.wpr2_left_up, "the next boot must find WPR2 down: {t:?}");
    assert_eq!(p.dma_outstanding(), 0, "DMA memory leaked");

    let gsp = boot_ok(p, &files);
    assert!(
        !gsp.report().reset_for_wpr2,
        "a clean teardown needs no reset"
    );
    assert_eq!(gsp.info().gr.sm_count, sm_count);
    let (p, r) = gsp.shutdown();
    r.expect("second teardown");
    assert_eq!(p.dma_outstanding(), 0);
}

#[test]
fn gh100_boots_reports_tears_down_and_boots_again() {
    round_trip(SimChip::Gh100, 143_771, 132);
}

#[test]
fn gb202_boots_reports_tears_down_and_boots_again() {
    round_trip(SimChip::Gb202, 32 * 1024, 170);
}

#[test]
fn wpr2_left_up_by_a_crash_is_recovered_by_reset() {
    let Some(files) = files(SimChip::Gh100) else {
        return;
    };
    let g = gpu(
        SimChip::Gh100,
        FaultPlan {
            wpr2_left_up: true,
            ..FaultPlan::default()
        },
    );
    let gsp = boot_ok(SimPlatform::new(g), &files);
    assert!(gsp.report().reset_for_wpr2);
    drop(gsp);
}

/// Boots with `faults` and expects one error within its bound, all memory given back.
fn fails(chip: SimChip, faults: FaultPlan) -> Option<BootError> {
    let files = files(chip)?;
    let g = gpu(chip, faults);
    let start = Instant::now();
    let f = match boot::boot(SimPlatform::new(g.clone()), &files.firmware(), &options()) {
        Ok(_) => panic!("the boot succeeded despite the injected fault"),
        Err(f) => f,
    };
    let took = start.elapsed();
    // The longest single bound is 5 s; a failure never waits much past one.
    assert!(took < Duration::from_secs(12), "took {took:?}: {}", f.error);
    assert_eq!(f.platform.dma_outstanding(), 0, "DMA leaked: {}", f.error);
    let text = f.error.to_string();
    assert!(!text.is_empty());
    eprintln!("{text}");
    Some(f.error)
}

fn mentions(e: &BootError, words: &[&str]) {
    let text = e.to_string();
    for w in words {
        assert!(text.contains(w), "{w:?} missing from: {text}");
    }
}

#[test]
fn a_silent_gsp_is_a_clear_error() {
    let Some(e) = fails(
        SimChip::Gh100,
        FaultPlan {
            gsp_silent: true,
            ..FaultPlan::default()
        },
    ) else {
        return;
    };
    assert_eq!(e.stage, Stage::GspInit, "{e}");
    mentions(&e, &["GSP_INIT_DONE", "libos logs"]);
}

#[test]
fn a_corrupt_reply_is_a_clear_error() {
    let Some(e) = fails(
        SimChip::Gh100,
        FaultPlan {
            corrupt_reply_to: Some(65),
            ..FaultPlan::default()
        },
    ) else {
        return;
    };
    assert_eq!(e.stage, Stage::StaticInfo, "{e}");
    assert!(
        matches!(&e.kind, BootErrorKind::Rpc(r) if matches!(r.kind, RpcErrorKind::BadMessage { .. })),
        "{e}"
    );
    mentions(&e, &["GET_GSP_STATIC_INFO"]);
}

#[test]
fn a_failed_rpc_is_a_clear_error() {
    // NV_ERR_INVALID_STATE (0x40) for GET_GSP_STATIC_INFO.
    let Some(e) = fails(
        SimChip::Gb202,
        FaultPlan {
            rpc_failure: Some((65, 0x40)),
            ..FaultPlan::default()
        },
    ) else {
        return;
    };
    assert_eq!(e.stage, Stage::StaticInfo, "{e}");
    mentions(&e, &["GET_GSP_STATIC_INFO", "NV_ERR_INVALID_STATE"]);
}

#[test]
fn an_fsp_error_code_is_a_clear_error() {
    let Some(e) = fails(
        SimChip::Gh100,
        FaultPlan {
            fsp_error: Some(0x9f),
            ..FaultPlan::default()
        },
    ) else {
        return;
    };
    assert_eq!(e.stage, Stage::Fsp, "{e}");
    mentions(
        &e,
        &["rejected the chain of trust", "FSP_ERR_IFR_FILE_NOT_FOUND"],
    );
}

#[test]
fn a_corrupted_fsp_reply_is_a_clear_error() {
    let Some(e) = fails(
        SimChip::Gb202,
        FaultPlan {
            fsp_corrupt_reply: true,
            ..FaultPlan::default()
        },
    ) else {
        return;
    };
    assert_eq!(e.stage, Stage::Fsp, "{e}");
    assert!(matches!(e.kind, BootErrorKind::FspReplyMalformed(_)), "{e}");
}
