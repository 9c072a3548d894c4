//! `nvbare` on the backends where it boots GSP-RM itself, run as a user runs it (the binary,
//! its output read back): `demo`, `info`, `run` and `bench` on `--backend sim` (GH100 and
//! GB202; GB100's demo and `run`) and on `--backend remote` against a simulator served in this test; the
//! firmware-missing error; argument and open errors by code. Ctrl-C and recovery after a
//! killed process are in `cli_recovery.rs`.
//!
//! The firmware comes from `$NVBARE_FIRMWARE_DIR` or `~/.cache/nvbare/firmware` (as
//! `nvbare firmware fetch --chip all` lays it out); without it each test that boots says it
//! skipped (`NVBARE_REQUIRE_FIRMWARE=1` makes that a failure). The three full demos copy
//! 256 MiB through the simulator, which takes 20-60 s in a debug build: they run in release
//! builds only (`cargo test --release -p nvbare-host --test cli_gsp`); everything else takes
//! a few seconds in debug.

mod common;

use common::{cubin, firmware, nvbare, run, server, wpr2_up};
use nvbare_sim::SimChip;

// ---- nvbare demo ----

fn demo_on(chip: &str) {
    let Some(fw) = firmware(chip) else { return };
    let r = run(nvbare(Some(&fw), &["demo", "--chip", chip]));
    r.succeeded();
    eprintln!("{}", r.stdout);
    let name = chip.to_ascii_uppercase();
    // Plainly simulated, first thing.
    assert!(
        r.stdout.lines().next().is_some_and(
            |l| l.contains(&format!("a simulated {name}")) && l.contains("no hardware")
        ),
        "{}",
        r.both()
    );
    // The boot timeline, ms per stage, host work and waited.
    r.says(&[
        "stage (ms)",
        "host work",
        "waited",
        "FSP chain of trust",
        "lockdown release",
        "GSP init",
        "static info",
    ]);
    r.line_with(&["total"]);
    r.line_with(&["gpu", "SIMULATED", "SMs", "MiB of VRAM"]);
    r.line_with(&["classes:", "compute"]);
    r.line_with(&["firmware:", "GSP-RM 570.144"]);
    let copy = r.line_with(&["256 MiB copy", "random data"]);
    assert!(copy.contains("checked byte for byte: ok"), "{copy}");
    let add = r.line_with(&["vector add"]);
    assert!(
        add.contains("checked element by element: ok")
            && add.contains("run by the simulator's native model"),
        "{add}"
    );
    let down = r.line_with(&["teardown"]);
    assert!(
        down.contains("UNLOADING_GUEST_DRIVER acknowledged")
            && down.contains("GSP core halted")
            && down.contains("(none left)")
            && down.ends_with("ok"),
        "{down}"
    );
    r.line_with(&["every check passed on the SIMULATED GPU"]);
    assert!(!r.stderr.contains("error"), "{}", r.both());
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "the full demo copies 256 MiB through the simulator (20-60 s in debug): cargo test \
              --release -p nvbare-host --test cli_gsp"
)]
fn demo_on_the_simulated_gh100() {
    demo_on("gh100");
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "the full demo copies 256 MiB through the simulator (20-60 s in debug): cargo test \
              --release -p nvbare-host --test cli_gsp"
)]
fn demo_on_the_simulated_gb202() {
    demo_on("gb202");
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "the full demo copies 256 MiB through the simulator (20-60 s in debug): cargo test \
              --release -p nvbare-host --test cli_gsp"
)]
fn demo_on_the_simulated_gb100() {
    demo_on("gb100");
}

#[test]
fn missing_firmware_with_offline_is_one_error_naming_the_command() {
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path().to_str().unwrap().to_owned();
    for (chip, args) in [
        ("gh100", vec!["demo", "--offline"]),
        (
            "gb202",
            vec!["info", "--backend", "sim", "--chip", "gb202", "--offline"],
        ),
    ] {
        let mut args = args.clone();
        args.extend(["--firmware-dir", &dir]);
        let r = run(nvbare(None, &args));
        assert_eq!(r.status.code(), Some(1), "{}", r.both());
        let errors: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| l.starts_with("nvbare: error"))
            .collect();
        assert_eq!(
            errors,
            [format!(
                "nvbare: error[NVB-E601]: the GSP-RM 570.144 firmware for {chip} is not in {dir} \
                 and --offline forbids fetching it; run `nvbare firmware fetch --chip {chip} \
                 --cache {dir}` (where there is network, or with --from DIR|FILE.deb), or drop \
                 --offline"
            )],
            "{}",
            r.both()
        );
        // Nothing was fetched into it.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    }
}

// ---- info, run, bench on the simulator ----

#[test]
fn info_on_the_simulator_shows_the_boot_timeline_and_says_it_is_simulated() {
    let Some(fw) = firmware("gh100") else { return };
    let r = run(nvbare(Some(&fw), &["info", "--backend", "sim"]));
    r.succeeded();
    r.says(&[
        "backend       sim (GSP-RM 570.144, booted by nvbare)",
        "simulated     yes",
        "sm_90 (Hopper), 132 SMs",
        "boot          GSP-RM booted by nvbare on GH100:",
        "FSP chain of trust",
    ]);
    assert!(!r.stdout.contains("WPR2 was up"), "{}", r.both());
    let Some(fw) = firmware("gb202") else { return };
    let r = run(nvbare(
        Some(&fw),
        &["info", "--backend", "sim", "--chip", "gb202", "--json"],
    ));
    r.succeeded();
    let v: serde_json::Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.both()));
    assert_eq!(v["sm"], 120);
    assert_eq!(v["simulated"], true);
    assert_eq!(v["boot"]["chip"], "GB202");
    assert_eq!(v["boot"]["reset_for_wpr2"], false);
    let stages: Vec<&str> = v["boot"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages.first(), Some(&"identify"));
    assert_eq!(stages.last(), Some(&"static info"));
    assert!(v["boot"]["waited_ms"].as_f64().unwrap() > 0.0);
    // The simulator's warnings about calls nvbare handles stay out of the way.
    assert!(!r.stderr.contains("WARN"), "{}", r.both());
}

#[test]
fn run_on_the_simulator_adds_vectors() {
    for (chip, sm) in [("gh100", 90), ("gb202", 120), ("gb100", 100)] {
        let Some(fw) = firmware(chip) else { return };
        let file = cubin(sm);
        let r = run(nvbare(
            Some(&fw),
            &[
                "run",
                &file,
                "--backend",
                "sim",
                "--chip",
                chip,
                "--kernel",
                "vector_add",
                "--grid",
                "4",
                "--block",
                "256",
                "--arg",
                "a=buf:4K:f32:fill=1",
                "--arg",
                "b=buf:4K:f32:fill=2.5:vram",
                "--arg",
                "c=buf:4K:f32:vram",
                "--arg",
                "n=i32:1024",
                "--dump",
                "c",
            ],
        ));
        r.succeeded();
        r.line_with(&[
            "vector_add grid [4, 1, 1] block [256, 1, 1]",
            "done in",
            "on the GPU",
        ]);
        r.line_with(&["c (buf:4K:f32:vram) [f32]: 3.5 3.5 3.5", "(1008 more)"]);
    }
}

#[test]
fn bench_quick_on_the_simulator() {
    let Some(fw) = firmware("gh100") else { return };
    let r = run(nvbare(
        Some(&fw),
        &["bench", "--backend", "sim", "--quick", "--launch-only"],
    ));
    r.succeeded();
    r.line_with(&["empty kernel launch + completion round trip", "us"]);
    r.line_with(&["empty kernel, 100 in one submission, each", "us"]);
    r.line_with(&["100 kernels replayed, one arg patched, each", "us"]);
    r.line_with(&["the same, unordered (no chain), each", "us"]);
    assert!(
        !r.stdout.contains("GB/s"),
        "launch figures only:\n{}",
        r.both()
    );
    // Programmatic dependent launch with host/data/pdl_kernels.cu's kernels: the sequence's
    // grids are still in order (the simulator runs each to completion; the QMD fields are
    // shown on the H200, BENCHMARKS.md runs 53-55).
    let r = run(nvbare(
        Some(&fw),
        &[
            "bench",
            "--backend",
            "sim",
            "--quick",
            "--launch-only",
            "--json",
            "--programmatic",
        ],
    ));
    r.succeeded();
    let v: serde_json::Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.both()));
    assert!(v["replay_us"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["replay_order_errors"].as_u64(), Some(0), "{v}");
    let Some(fw) = firmware("gb202") else { return };
    let r = run(nvbare(
        Some(&fw),
        &[
            "bench",
            "--backend",
            "sim",
            "--chip",
            "gb202",
            "--quick",
            "--launch-only",
            "--json",
        ],
    ));
    r.succeeded();
    let v: serde_json::Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.both()));
    assert!(v["launch_roundtrip_us"].as_f64().unwrap() > 0.0, "{v}");
    // The recorded sequence replays on sm_120 too (its store_value's value checked).
    assert!(v["replay_us"].as_f64().unwrap() > 0.0, "{v}");
    // The copy kernels are built for sm_90: GB202 is told so, by code.
    let r = run(nvbare(
        Some(&fw),
        &["bench", "--backend", "sim", "--chip", "gb202", "--quick"],
    ));
    assert_eq!(r.status.code(), Some(1), "{}", r.both());
    r.says(&["nvbare: error[NVB-E103]: cubin is for sm_90 but this GPU is sm_120"]);
}

#[test]
fn bench_pipeline_on_the_simulator_checks_its_data_and_times_each_step() {
    let Some(fw) = firmware("gh100") else { return };
    let r = run(nvbare(
        Some(&fw),
        &[
            "bench",
            "--backend",
            "sim",
            "--pipeline",
            "--quick",
            "--json",
        ],
    ));
    r.succeeded();
    let v: serde_json::Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.both()));
    assert_eq!(
        (v["chunks"].as_u64(), v["chunk_MiB"].as_u64()),
        (Some(4), Some(4)),
        "{v}"
    );
    for k in ["pipeline_ms", "serial_ms", "gpu_span_ms", "alternating_ms"] {
        assert!(v[k].as_f64().unwrap() > 0.0, "{k}: {v}");
    }
}

// ---- the remote backend, against a server in this test ----

#[test]
fn info_run_and_bench_over_the_remote_protocol() {
    let Some(fw) = firmware("gh100") else { return };
    let s = server(SimChip::Gh100, &fw);
    let addr = s.addr().to_string();
    let r = run(nvbare(
        Some(&fw),
        &["info", "--backend", "remote", "--device", &addr],
    ));
    r.succeeded();
    r.says(&[
        "backend       remote (GSP-RM 570.144, booted by nvbare)",
        "sm_90",
        "GSP init",
    ]);
    // Not in this process: nvbare cannot tell a remote simulator from hardware.
    assert!(!r.stdout.contains("simulated     yes"), "{}", r.both());
    let file = cubin(90);
    let r = run(nvbare(
        Some(&fw),
        &[
            "run",
            &file,
            "--backend",
            "remote",
            "--device",
            &addr,
            "--kernel",
            "vector_add",
            "--grid",
            "1",
            "--block",
            "256",
            "--arg",
            "a=buf:1K:f32:fill=1",
            "--arg",
            "b=buf:1K:f32:fill=2",
            "--arg",
            "c=buf:1K:f32",
            "--arg",
            "n=i32:256",
            "--dump",
            "c",
        ],
    ));
    r.succeeded();
    r.line_with(&["c (buf:1K:f32) [f32]: 3.0 3.0"]);
    let r = run(nvbare(
        Some(&fw),
        &[
            "bench",
            "--backend",
            "remote",
            "--device",
            &addr,
            "--quick",
            "--launch-only",
        ],
    ));
    r.succeeded();
    r.line_with(&["empty kernel launch + completion round trip"]);
    // Each closed cleanly: GSP-RM halted, its objects gone, WPR2 down.
    assert!(!wpr2_up(&s));
    assert_eq!(s.gpus()[0].rm_objects().objects, 0);
    s.stop();
}

// ---- errors the binary prints ----

#[test]
fn open_errors_name_the_step_by_code() {
    let cases: [(&[&str], &str); 5] = [
        (&["demo", "--backend", "vfio"], "NVB-E018"),
        (&["demo", "--backend", "sim", "--device", "0"], "NVB-E019"),
        (
            &["info", "--backend", "remote", "--device", "localhost"],
            "NVB-E014",
        ),
        // Nothing listens on port 1; nothing is at this PCI address.
        (
            &["info", "--backend", "remote", "--device", "127.0.0.1:1"],
            "NVB-E610",
        ),
        (
            &["info", "--backend", "vfio", "--device", "0000:ff:1f.7"],
            "NVB-E303",
        ),
    ];
    for (args, code) in cases {
        let r = run(nvbare(None, args));
        assert_eq!(r.status.code(), Some(1), "{args:?}: {}", r.both());
        r.says(&[&format!("nvbare: error[{code}]: ")]);
    }
    // No-IOMMU mode asked for is called unsafe before anything else.
    let r = run(nvbare(
        None,
        &[
            "demo",
            "--backend",
            "vfio",
            "--device",
            "0000:ff:1f.7",
            "--allow-noiommu-unsafe",
        ],
    ));
    assert!(
        r.stdout
            .lines()
            .next()
            .is_some_and(|l| l.contains("UNSAFE")),
        "{}",
        r.both()
    );
}
