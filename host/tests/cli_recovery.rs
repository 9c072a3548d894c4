//! Teardown and recovery from the command line, on the simulator: Ctrl-C during `demo`,
//! `run` and `bench` ends in the normal teardown (`UNLOADING_GUEST_DRIVER`, the GSP core
//! halted, DMA memory freed); a process killed without its teardown leaves WPR2 up, and the
//! next `nvbare` run on that GPU resets it and says so. The "crashed process" is an `nvbare`
//! killed with SIGKILL while it drives a simulator served in this test over tinygrad's remote
//! protocol (the GPU outlives the process, as hardware does).
//!
//! Firmware as in `cli_gsp.rs`.

mod common;

use common::{Ran, Stream, cubin, firmware, nvbare, run, run_watched, server, wpr2_up};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use nvbare_sim::SimChip;

fn signal(pid: u32, s: Signal) {
    // CAST: pids fit i32.
    kill(Pid::from_raw(pid as i32), s).expect("signal nvbare");
}

#[test]
fn a_killed_process_leaves_wpr2_up_and_the_next_run_resets_the_gpu() {
    let Some(fw) = firmware("gb202") else { return };
    let s = server(SimChip::Gb202, &fw);
    let addr = s.addr().to_string();
    // Killed (SIGKILL: no teardown runs) once GSP-RM is up.
    let r = run_watched(
        nvbare(
            Some(&fw),
            &["demo", "--backend", "remote", "--device", &addr],
        ),
        Some((Stream::Out, "booted and RM set up")),
        |pid| signal(pid, Signal::SIGKILL),
    );
    assert_eq!(r.status.code(), None, "killed: {}", r.both());
    assert!(!r.stdout.contains("teardown"), "{}", r.both());
    assert!(
        wpr2_up(&s),
        "a process killed without its teardown leaves WPR2 up"
    );
    // The next run on that GPU finds it so, resets it, and says so.
    let r = run(nvbare(
        Some(&fw),
        &["info", "--backend", "remote", "--device", &addr],
    ));
    r.succeeded();
    r.says(&[
        "nvbare: WPR2 was up: reset the GPU",
        "(WPR2 was up: reset the GPU first)",
    ]);
    assert!(!wpr2_up(&s), "the clean close brought WPR2 down");
    // And the one after it needs no reset.
    let r = run(nvbare(
        Some(&fw),
        &["info", "--backend", "remote", "--device", &addr],
    ));
    r.succeeded();
    assert!(!r.both().contains("WPR2 was up"), "{}", r.both());
    s.stop();
}

// ---- Ctrl-C ----

/// What an interrupted command must show: exit 130, the interruption by code.
fn interrupted(r: &Ran) {
    assert_eq!(r.status.code(), Some(130), "{}", r.both());
    r.says(&[
        "nvbare: error[NVB-E015]: interrupted",
        "the GPU was released",
    ]);
}

#[test]
fn ctrl_c_during_the_demo_ends_in_the_normal_teardown() {
    let Some(fw) = firmware("gh100") else { return };
    // During the boot, which takes effect when it returns: deterministic at any speed.
    let r = run_watched(
        nvbare(Some(&fw), &["demo"]),
        Some((Stream::Out, "booting GSP-RM 570.144")),
        |pid| signal(pid, Signal::SIGINT),
    );
    interrupted(&r);
    let down = r.line_with(&["teardown"]);
    assert!(
        down.contains("UNLOADING_GUEST_DRIVER acknowledged")
            && down.contains("GSP core halted")
            && down.contains("(none left)"),
        "{down}"
    );
    assert!(!r.stdout.contains("every check passed"), "{}", r.both());
}

#[test]
fn ctrl_c_during_run_and_bench_ends_in_the_normal_teardown() {
    let Some(fw) = firmware("gh100") else { return };
    let file = cubin(90);
    for args in [
        vec![
            "run",
            &file,
            "--backend",
            "sim",
            "--kernel",
            "vector_add",
            "--arg",
            "a=buf:1K:f32",
            "--arg",
            "b=buf:1K:f32",
            "--arg",
            "c=buf:1K:f32",
            "--arg",
            "n=i32:256",
            "-v",
        ],
        vec!["bench", "--backend", "sim", "--quick", "-v"],
    ] {
        let r = run_watched(
            nvbare(Some(&fw), &args),
            Some((Stream::Err, "booting GSP-RM on")),
            |pid| signal(pid, Signal::SIGINT),
        );
        interrupted(&r);
        // The teardown, as the log (-v) tells it.
        r.says(&[
            "UNLOADING_GUEST_DRIVER acknowledged, GSP core halted",
            "(none left)",
        ]);
    }
}

#[test]
fn ctrl_c_in_the_middle_of_the_copy_tears_the_remote_gpu_down_cleanly() {
    let Some(fw) = firmware("gh100") else { return };
    let s = server(SimChip::Gh100, &fw);
    let addr = s.addr().to_string();
    // The 256 MiB copy over TCP takes seconds: the signal lands in it.
    let r = run_watched(
        nvbare(
            Some(&fw),
            &["demo", "--backend", "remote", "--device", &addr],
        ),
        Some((Stream::Out, "firmware: GSP-RM")),
        |pid| signal(pid, Signal::SIGINT),
    );
    interrupted(&r);
    r.line_with(&["teardown", "UNLOADING_GUEST_DRIVER acknowledged", "ok"]);
    assert!(
        !r.stdout.contains("256 MiB copy"),
        "stopped before the copy ended"
    );
    assert!(!wpr2_up(&s), "the teardown brought WPR2 down");
    assert_eq!(s.gpus()[0].rm_objects().objects, 0, "GSP-RM's objects gone");
    // The next run needs no reset.
    let r = run(nvbare(
        Some(&fw),
        &["info", "--backend", "remote", "--device", &addr],
    ));
    r.succeeded();
    assert!(!r.both().contains("WPR2 was up"), "{}", r.both());
    s.stop();
}
