//! nvbare's booter path (`nvbare_core::boot::booter`) against the simulated GA102, AD102,
//! GA100 and TU102 (whose FWSEC, descriptor v2, runs through the generic bootloader and whose
//! booter loads by PIO),
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
use nvbare_core::gsp_rpc::RpcErrorKind;
use nvbare_gsp::rpc::commands::Command;
use nvbare_sim::{FaultPlan, SimChip, SimGpu, SimPlatform};

struct Files {
    gsp: Vec<u8>,
    bootloader: Vec<u8>,
    load: Vec<u8>,
    unload: Vec<u8>,
    /// `gen_bootloader-570.144.bin` (TU10x, GA100; empty where the chip has none).
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
    boot_twice_on(chip, faults);
}

/// Boots, tears down and boots again; the simulated GPU, or `None` when the firmware is
/// missing.
fn boot_twice_on(chip: SimChip, faults: FaultPlan) -> Option<Arc<SimGpu>> {
    let files = files(chip)?;
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
    Some(g)
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

/// GA100: Turing's falcons. FWSEC (a v2 descriptor) runs through the generic bootloader at
/// the top of the GSP's IMEM, the booter is loaded by PIO, the GSP's RISC-V core runs after a
/// plain reset; twice, the second time with no reset. The simulator refuses a core-select or
/// boot-ROM register write on this chip, so none happened.
#[test]
fn ga100_boots_tears_down_and_boots_again_without_reset() {
    let Some(g) = boot_twice_on(SimChip::Ga100, FaultPlan::default()) else {
        return;
    };
    let log = g.log().lines();
    let text: Vec<String> = log
        .iter()
        .map(|l| format!("{}: {}", l.unit, l.text))
        .collect();
    let has = |s: &str| text.iter().filter(|l| l.contains(s)).count();
    assert_eq!(has("FWSEC-FRTS: FRTS at"), 2, "{text:#?}");
    assert_eq!(has("FWSEC-SB ran"), 2, "{text:#?}");
    assert_eq!(has("booter_unload: WPR2 lowered"), 2, "{text:#?}");
    assert_eq!(has("refused"), 0, "{text:#?}");
}

/// GSP-RM halting under a call fails it at once (`RpcErrorKind::GspHalted`), not after the
/// reply timeout, on TU102 and GA100 too, whose falcons have no `RISCV_CPUCTL`: the RPC
/// channel's halt watch asks the chip's falcon HAL (`CORE_SWITCH_RISCV_STATUS`,
/// `kflcnIsRiscvActive_TU102`). Teardown after the crash still frees every DMA buffer.
#[test]
fn a_gsp_rm_halt_fails_the_call_at_once_on_turing_style_falcons() {
    for chip in [SimChip::Tu102, SimChip::Ga100] {
        let Some(files) = files(chip) else {
            return;
        };
        let g = Arc::new(SimGpu::new(chip).expect("simulated GPU"));
        let mut gsp = boot_ok(SimPlatform::new(g.clone()), &files);
        // NV_PGSP_FALCON_ENGINE: the reset halts the simulated GSP-RM, as a crash would.
        g.bar0_write(0x0011_03c0, 1);
        let cmd = Command::unloading_guest_driver(false, false, 0);
        let e = gsp
            .rpc()
            .call_within(&cmd, 10_000_000_000)
            .expect_err("GSP-RM halted");
        assert!(
            matches!(e.kind, RpcErrorKind::GspHalted { .. }),
            "{}: {e}",
            chip.spec().name
        );
        let (p, _) = gsp.shutdown();
        assert_eq!(p.dma_outstanding(), 0, "DMA memory leaked");
    }
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

/// WPR2 left up by a crashed run: the boot resets the GPU and, as
/// `gpuWaitForGfwBootComplete_TU102` does, waits for devinit's FWSEC to halt on the GSP
/// falcon before it trusts GFW_BOOT and resets that falcon for FWSEC-FRTS. The simulator
/// keeps FWSEC running 3 s past the progress's COMPLETED (longer than the boot takes to
/// reach FWSEC-FRTS, so the GFW wait's budget is raised to match) and refuses the falcon's
/// writes meanwhile: a boot that went by the progress alone fails here.
#[test]
fn ga102_after_a_reset_waits_for_devinits_fwsec_to_halt() {
    let Some(files) = files(SimChip::Ga102) else {
        return;
    };
    let faults = FaultPlan {
        wpr2_left_up: true,
        reboot_ns: Some(20_000_000),
        devinit_tail_ns: Some(3_000_000_000),
        ..FaultPlan::default()
    };
    let g = Arc::new(SimGpu::with_faults(SimChip::Ga102, faults).expect("simulated GPU"));
    let mut o = options();
    o.timeouts.fsp_boot_ns = Some(10_000_000_000);
    let gsp = match boot::boot(SimPlatform::new(g), &files.firmware(), &o) {
        Ok(g) => g,
        Err(f) => panic!(
            "boot failed: {}\n{:?}",
            f.error,
            f.platform.gpu().log().warnings()
        ),
    };
    assert!(gsp.report().reset_for_wpr2, "WPR2 was left up");
    // Only the injected fault's own line.
    let warnings = gsp.platform().gpu().log().warnings();
    assert!(
        warnings.iter().all(|w| w.starts_with("fault:")),
        "{warnings:?}"
    );
    let (p, r) = gsp.shutdown();
    r.expect("teardown");
    assert_eq!(p.dma_outstanding(), 0);
}
