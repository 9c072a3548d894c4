//! tinygrad 0.14.0, unmodified, boots simulated GB202s over its remote PCI protocol and moves
//! data through them (issue 12, item 8): NVDevice init completes; `Tensor(data,
//! device="NV").numpy()` returns the data for a few bytes and for 64 MiB of random bytes; with
//! two GPUs a tensor copied from one to the other arrives intact. And the test can fail: with
//! the copy engine switched off, or the FSP's reply corrupted, tinygrad fails.
//!
//! The same on the booter path (issue 19, item 6): tinygrad boots a simulated AD102 and GA102
//! its own way (VBIOS read through the PROM window and parsed by its parser, FWSEC-FRTS on the
//! GSP falcon, booter_load on SEC2, the CPU sequencer GSP-RM sends, GSP_INIT_DONE) and moves
//! data; the test checks each of those stages happened in the simulator's log.
//!
//! Each run prints the boot log summary (commands by type, bytes each way, seconds).
//! Needs PyPI once (tinygrad and numpy go into the git-ignored `sim/.venv-tinygrad`) and the
//! verified firmware (`nvbare firmware fetch --chip all`); skips saying why without them,
//! unless `NVBARE_REQUIRE_TINYGRAD=1`.

mod tinygrad_support;

use std::time::Duration;

use nvbare_sim::SimChip;
use nvbare_sim::faults::FaultPlan;
use nvbare_sim::remote::ServeConfig;
use tinygrad_support::{Run, tinygrad};

fn config(gpus: u32, faults: FaultPlan) -> ServeConfig {
    config_of(SimChip::Gb202, gpus, faults)
}

fn config_of(chip: SimChip, gpus: u32, faults: FaultPlan) -> ServeConfig {
    let mut c = ServeConfig::new(chip, "127.0.0.1:0".parse().unwrap(), gpus);
    c.faults = faults;
    c
}

/// Bound on a run that should succeed (a boot over TCP from Python, then 64 MiB each way).
const RUN: Duration = Duration::from_secs(600);
/// Bound on a run that should fail: tinygrad's own waits end it first (`HCQDEV_WAIT_TIMEOUT_MS`
/// below; 10 s for its boot waits).
const FAILING_RUN: Duration = Duration::from_secs(180);
/// tinygrad's signal-wait timeout in the runs that must fail, in ms (30 s by default).
const WAIT_MS: &str = "5000";

/// A run that succeeded, and left nothing behind in the engines' logs: every doorbell,
/// method, copy and fault check tinygrad's traffic met was accepted.
fn assert_clean(run: &Run) {
    assert!(
        run.ok && run.stdout.contains("ROUNDTRIP ok"),
        "{}",
        run.dump()
    );
    let engines: Vec<_> = run
        .warnings
        .iter()
        .filter(|w| {
            ["fifo:", "mmu:", "ce:", "compute:"]
                .iter()
                .any(|u| w.contains(u))
        })
        .collect();
    assert!(engines.is_empty(), "engine warnings: {engines:#?}");
}

#[test]
fn tinygrad_boots_a_gb202_and_round_trips_bytes() {
    let Some(tg) = tinygrad("tinygrad_boots_a_gb202_and_round_trips_bytes") else {
        return;
    };
    let run = tg.run(
        "one",
        config(1, FaultPlan::default()),
        "roundtrip.py",
        &["one"],
        &[],
        RUN,
    );
    println!("{}\n  {}", run.summary(), run.stdout.trim());
    assert_clean(&run);
}

#[test]
fn tinygrad_copies_a_tensor_between_two_gb202s() {
    let Some(tg) = tinygrad("tinygrad_copies_a_tensor_between_two_gb202s") else {
        return;
    };
    let run = tg.run(
        "two",
        config(2, FaultPlan::default()),
        "roundtrip.py",
        &["two"],
        &[],
        RUN,
    );
    println!("{}\n  {}", run.summary(), run.stdout.trim());
    assert_clean(&run);
}

#[test]
fn tinygrad_fails_when_the_copy_engine_is_off() {
    let Some(tg) = tinygrad("tinygrad_fails_when_the_copy_engine_is_off") else {
        return;
    };
    let faults = FaultPlan {
        copy_engine_off: true,
        ..Default::default()
    };
    let run = tg.run(
        "ce_off",
        config(1, faults),
        "roundtrip.py",
        &["one"],
        &[("HCQDEV_WAIT_TIMEOUT_MS", WAIT_MS)],
        FAILING_RUN,
    );
    println!("{}", run.summary());
    assert!(
        !run.ok,
        "tinygrad must fail without a copy engine\n{}",
        run.dump()
    );
    // It failed for that reason: its copy channel waited on the switched-off engine.
    assert!(
        run.warnings
            .iter()
            .any(|w| w.contains("injected fault: the copy engine is off")),
        "{}",
        run.dump()
    );
}

#[test]
fn tinygrad_fails_on_a_corrupted_fsp_reply() {
    let Some(tg) = tinygrad("tinygrad_fails_on_a_corrupted_fsp_reply") else {
        return;
    };
    let faults = FaultPlan {
        fsp_corrupt_reply: true,
        ..Default::default()
    };
    let run = tg.run(
        "fsp",
        config(1, faults),
        "roundtrip.py",
        &["one"],
        &[("HCQDEV_WAIT_TIMEOUT_MS", WAIT_MS)],
        FAILING_RUN,
    );
    println!("{}", run.summary());
    assert!(
        !run.ok,
        "tinygrad must fail when the FSP's reply is corrupt\n{}",
        run.dump()
    );
    assert!(
        run.warnings
            .iter()
            .any(|w| w.contains("FSP reply corrupted")),
        "{}",
        run.dump()
    );
}

/// tinygrad's own booter-path boot of `chip`, then the round trip, twice against the same
/// GPU: tinygrad leaves WPR2 up, so its second run resets the GPU first (its "WPR2 is up.
/// Issuing a full reset."), waits for devinit and boots again. Every boot stage is in the
/// simulator's log, in order, for both runs.
fn booter_boot(test: &str, chip: SimChip) {
    let Some(tg) = tinygrad(test) else {
        return;
    };
    let run = tg.run_times(
        test,
        config_of(chip, 1, FaultPlan::default()),
        "roundtrip.py",
        &["one"],
        &[("DEBUG", "3")],
        RUN,
        2,
    );
    println!(
        "{}\n  {}",
        run.summary(),
        run.stdout
            .lines()
            .filter(|l| l.starts_with("ROUNDTRIP"))
            .collect::<Vec<_>>()
            .join("\n  ")
    );
    for l in &run.log {
        println!("  sim {l}");
    }
    assert_clean(&run);
    let boot = [
        "FWSEC-FRTS: FRTS at",
        "booter_load: WPR meta at",
        "GSP_RUN_CPU_SEQUENCER sent",
        "GSP_INIT_DONE sent",
        "GSP-RM unloaded and halted",
    ];
    let stages = boot
        .iter()
        .chain(&["function-level reset"])
        .chain(boot.iter());
    let mut from = 0;
    for stage in stages {
        let at = run.log[from..].iter().position(|l| l.contains(stage));
        assert!(
            at.is_some(),
            "no '{stage}' after line {from} of the log\n{}",
            run.dump()
        );
        from += at.unwrap_or(0);
    }
    // tinygrad ran the sequencer GSP-RM sent (it prints the events it gets at DEBUG=3).
    assert!(
        run.stdout.contains("GSP_RUN_CPU_SEQUENCER"),
        "{}",
        run.dump()
    );
    // tinygrad leaves WPR2 up (no booter unload): its next run resets the GPU first.
    assert!(!run.log.iter().any(|l| l.contains("WPR2 lowered")));
    assert!(
        run.stdout.contains("WPR2 is up. Issuing a full reset."),
        "{}",
        run.dump()
    );
    assert_eq!(
        run.stdout.matches("ROUNDTRIP ok").count(),
        2,
        "{}",
        run.dump()
    );
}

#[test]
fn tinygrad_boots_an_ad102_and_round_trips_bytes() {
    booter_boot(
        "tinygrad_boots_an_ad102_and_round_trips_bytes",
        SimChip::Ad102,
    );
}

#[test]
fn tinygrad_boots_a_ga102_and_round_trips_bytes() {
    booter_boot(
        "tinygrad_boots_a_ga102_and_round_trips_bytes",
        SimChip::Ga102,
    );
}

#[test]
fn tinygrad_fails_on_a_board_fused_for_the_older_fwsec_signature() {
    let test = "tinygrad_fails_on_a_board_fused_for_the_older_fwsec_signature";
    let Some(tg) = tinygrad(test) else {
        return;
    };
    let faults = FaultPlan {
        older_fwsec_fuse: true,
        ..Default::default()
    };
    let run = tg.run(
        test,
        config_of(SimChip::Ad102, 1, faults),
        "roundtrip.py",
        &["one"],
        &[("HCQDEV_WAIT_TIMEOUT_MS", WAIT_MS)],
        FAILING_RUN,
    );
    println!("{}", run.summary());
    // tinygrad patches FWSEC's last signature whatever the fuse says: the boot ROM refuses it,
    // WPR2 stays down and tinygrad stops at its own check.
    assert!(!run.ok, "{}", run.dump());
    assert!(
        run.warnings
            .iter()
            .any(|w| w.contains("not the one for fuse version 0")),
        "{}",
        run.dump()
    );
    assert!(
        run.stderr.contains("WPR2 is not initialized"),
        "{}",
        run.dump()
    );
}
