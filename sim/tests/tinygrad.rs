//! tinygrad 0.14.0, unmodified, boots simulated GB202s over its remote PCI protocol and moves
//! data through them (issue 12, item 8): NVDevice init completes; `Tensor(data,
//! device="NV").numpy()` returns the data for a few bytes and for 64 MiB of random bytes; with
//! two GPUs a tensor copied from one to the other arrives intact. And the test can fail: with
//! the copy engine switched off, or the FSP's reply corrupted, tinygrad fails.
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
use tinygrad_support::tinygrad;

fn config(gpus: u32, faults: FaultPlan) -> ServeConfig {
    let mut c = ServeConfig::new(SimChip::Gb202, "127.0.0.1:0".parse().unwrap(), gpus);
    c.faults = faults;
    c
}

/// Bound on a run that should succeed (a boot over TCP from Python, then 64 MiB each way).
const RUN: Duration = Duration::from_secs(600);

#[test]
#[ignore = "needs the simulated GSP-RM (sim-gsp's units/gsp) to answer tinygrad's boot"]
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
    println!("{}", run.summary());
    assert!(
        run.ok && run.stdout.contains("ROUNDTRIP ok"),
        "{}",
        run.dump()
    );
}

#[test]
#[ignore = "needs the simulated GSP-RM (sim-gsp's units/gsp) to answer tinygrad's boot"]
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
    println!("{}", run.summary());
    assert!(
        run.ok && run.stdout.contains("ROUNDTRIP ok"),
        "{}",
        run.dump()
    );
}
