//! nvbare's booter path (`nvbare_core::boot::booter`) against the simulated TU102, GA102 and
//! AD102 (TU102's FWSEC, descriptor v2, through the generic bootloader),
//! with NVIDIA's real GSP-RM, bootloader and booter files and the simulator's VBIOS (read
//! through the PROM window): boot (GFW wait, FWSEC-FRTS, booter_load, the CPU sequencer,
//! GSP_INIT_DONE, static info), tear down (UNLOADING_GUEST_DRIVER, FWSEC-SB, booter_unload),
//! and boot again without a reset.
//!
//! The firmware comes from `$NVBARE_FIRMWARE_DIR` or `~/.cache/nvbare/firmware`; without it
//! each test says it skipped.

use std::path::PathBuf;
use std::sync::Arc;

use nvbare_core::boot::booter::BooterFirmware;
use nvbare_core::boot::{self, BootOptions, Firmware, Gsp, Stage};
use nvbare_sim::{FaultPlan, SimChip, SimGpu, SimPlatform};

struct Files {
    gsp: Vec<u8>,
    bootloader: Vec<u8>,
    load: Vec<u8>,
    unload: Vec<u8>,
    /// `gen_bootloader-570.144.bin` (Turing, GA100; empty where the chip has none).
    generic_bootloader: Vec<u8>,
}

impl Files {
    fn firmware(&self) -> Firmware<'_> {
        Firmware {
            fmc: &[],
            gsp: &self.gsp,
            bootloader: &self.bootloader,
            booter: BooterFirmware {
                booter_load: &self.load,
                booter_unload: &self.unload,
                vbios: None,
                generic_bootloader: &self.generic_bootloader,
            },
        }
    }
}

fn files(chip: SimChip) -> Option<Files> {
    let root = match std::env::var_os("NVBARE_FIRMWARE_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/nvbare/firmware"),
    };
    let dir = root.join("nvidia").join(chip.spec().name).join("gsp");
    let read = |name: &str| std::fs::read(dir.join(format!("{name}-570.144.bin"))).ok();
    match (
        read("gsp"),
        read("bootloader"),
        read("booter_load"),
        read("booter_unload"),
    ) {
        (Some(gsp), Some(bootloader), Some(load), Some(unload)) => Some(Files {
            gsp,
            bootloader,
            load,
            unload,
            generic_bootloader: read("gen_bootloader").unwrap_or_default(),
        }),
        _ => {
            eprintln!(
                "skipped: no 570.144 booter firmware under {}",
                dir.display()
            );
            None
        }
    }
}

fn options() -> BootOptions {
    const S: u64 = 1_000_000_000;
    let mut o = BootOptions::default();
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
            panic!(
                "boot failed: {}\nsimulator log:\n{}",
                f.error,
                log.join("\n")
            )
        }
    }
}

fn boot_twice(chip: SimChip) {
    boot_twice_with(chip, FaultPlan::default());
}

fn boot_twice_with(chip: SimChip, faults: FaultPlan) {
    let Some(files) = files(chip) else { return };
    let g = Arc::new(SimGpu::with_faults(chip, faults).expect("simulated GPU"));
    let gsp = boot_ok(SimPlatform::new(g.clone()), &files);
    let report = gsp.report().clone();
    assert_eq!(
        report.stages.iter().map(|s| s.stage).collect::<Vec<_>>(),
        Stage::BOOTER
    );
    eprintln!("{report}");
    let info = gsp.info().clone();
    assert!(!info.classes.is_empty(), "{info}");
    assert!(!gsp.wpr2().is_empty(), "WPR2 up while GSP-RM runs");
    let (p, r) = gsp.shutdown();
    let t = r.expect("teardown");
    assert!(t.unloaded && t.halted, "{t:?}");
    assert!(t.booter.booter_unloaded, "{t:?}");
    assert!(!t.wpr2_left_up, "the next boot must find WPR2 down: {t:?}");
    assert_eq!(p.dma_outstanding(), 0, "DMA memory leaked");

    let gsp = boot_ok(p, &files);
    assert!(
        !gsp.report().reset_for_wpr2,
        "a clean teardown needs no reset"
    );
    let (p, r) = gsp.shutdown();
    r.expect("second teardown");
    assert_eq!(p.dma_outstanding(), 0);
    // Both boots and teardowns touched only registers the simulated chip decodes.
    assert_eq!(g.unclaimed_registers(), vec![]);
}

#[test]
fn ad102_boots_tears_down_and_boots_again_without_reset() {
    boot_twice(SimChip::Ad102);
}

#[test]
fn tu102_boots_tears_down_and_boots_again_without_reset() {
    boot_twice(SimChip::Tu102);
}

#[test]
fn ga102_boots_tears_down_and_boots_again_without_reset() {
    boot_twice(SimChip::Ga102);
}

/// A board fused for FWSEC's older signature: the fuse is read
/// (`kgspReadUcodeFuseVersion_GA100`) and the signature it names copied, where tinygrad (the
/// last signature always) leaves WPR2 down.
#[test]
fn ad102_fused_for_the_older_fwsec_signature_boots() {
    boot_twice_with(
        SimChip::Ad102,
        FaultPlan {
            older_fwsec_fuse: true,
            ..FaultPlan::default()
        },
    );
}
