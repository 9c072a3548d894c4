//! What nvbare prints: fault reports and stalls, `--version`, the error-code table (unique,
//! listed in README.md), `list --json` over a fake sysfs, the environment variables under
//! `--help`, completions and the man page, `info`'s report, `sim serve`.

use std::collections::BTreeSet;
use std::path::Path;

use clap::CommandFactory;
use nvbare_core::chip::Arch;
use nvbare_core::gpfifo::ChannelState;
use nvbare_core::gpu::GpuError;
use nvbare_core::rm::{FaultReport, MmuFault, SmError};
use nvbare_core::sem::{SemaphoreError, WaitTimeout};

use super::super::codes::{self, ALL};
use super::super::error::{CliError, FaultKernel};
use super::super::help::{self, ENVIRONMENT, GIT_REVISION};
use super::super::info::{ClassEntry, CopyChannel, EngineClasses, GpuReport};
use super::super::setup::{self, ListArgs, ServeArgs};
use super::super::{Cli, error_text};
use crate::pci::fake::{FakeDevice, FakeSysfs};

fn timeout(waited_ns: u64) -> SemaphoreError {
    SemaphoreError::Timeout(WaitTimeout {
        channel: ChannelState {
            channel: "compute",
            token: 0x1_0005,
            gp_get: 3,
            gp_put: 4,
            entries: 0x4000,
        },
        semaphore_va: 0x7000_0000,
        value: 3,
        target: 4,
        waited_ns,
    })
}

fn sm(sm: u32, warp: u32, error: u32, global: u32, pc: u64) -> SmError {
    SmError {
        sm,
        global_esr: global,
        warp_esr: (warp << 16) | error,
        pc,
        address: 0,
    }
}

#[test]
fn a_fault_prints_its_code_and_each_fault_by_name() {
    let mut report = FaultReport::default();
    report
        .mmu
        .push(MmuFault {
            address: 0x7f12_3400_0000,
            fault_type: 0x2,
            access_type: 0x1,
        })
        .unwrap();
    report.sm.push(sm(4, 2, 0x17, 0, 0x7ffe_0000_0070));
    let kernel = FaultKernel {
        name: "store_value".into(),
        start: 0x7ffe_0000_0000,
        len: 0x100,
    };
    // As the GPU layer reports it, then named at the run site.
    let e = CliError::Gpu(GpuError::Fault {
        report: Box::new(report),
        then: timeout(50_000_000),
    })
    .name_faults(Some(Arch::Hopper), Some(kernel));
    assert_eq!(
        error_text(&e),
        "nvbare: error[NVB-E105]: kernel store_value faulted:\n  \
         MMU fault at 0x7f1234000000: PTE (no valid page table entry: address not mapped) on \
         VIRT_WRITE (virtual write)\n  \
         SM 4, warp 2, pc 0x7ffe00000070 (store_value+0x70): MMU_FAULT (memory access faulted \
         in the MMU)"
    );
    // SM errors alone: an SM exception, the SMs with the same error folded.
    let mut report = FaultReport::default();
    for i in 0..3 {
        report.sm.push(sm(i, 0, 0, 0x10, 0x500));
    }
    let e = CliError::Gpu(GpuError::Fault {
        report: Box::new(report),
        then: timeout(50_000_000),
    })
    .name_faults(Some(Arch::Hopper), None);
    assert_eq!(
        error_text(&e),
        "nvbare: error[NVB-E106]: the GPU reported a fault:\n  \
         SM 0, warp 0, pc 0x500: no warp error; global: BPT_INT (breakpoint (trap \
         instruction)) (the same on 2 other SMs: 1, 2)"
    );
}

#[test]
fn a_stall_and_an_interruption_say_how_long_they_waited() {
    let e = CliError::Gpu(GpuError::Wait(timeout(14_000_000_000)));
    let text = error_text(&e);
    assert!(text.starts_with("nvbare: error[NVB-E104]: "), "{text}");
    assert!(text.contains("for 14.0 s"), "{text}");
    assert!(!text.contains("14000000000"), "{text}");
    let e = CliError::Interrupted {
        during: "waiting for kernel spin".into(),
        waited_ns: 1_500_000_000,
    };
    assert_eq!(
        error_text(&e),
        "nvbare: error[NVB-E015]: interrupted after 1.5 s waiting for kernel spin; the GPU was \
         released"
    );
    let e = CliError::Interrupted {
        during: "while preparing the buffers".into(),
        waited_ns: 0,
    };
    assert_eq!(
        e.to_string(),
        "interrupted while preparing the buffers; the GPU was released"
    );
}

#[test]
fn version_names_nvbare_the_firmware_and_the_git_revision() {
    let v = Cli::command().render_version();
    assert_eq!(
        v,
        format!(
            "nvbare {} (git {GIT_REVISION}), boots GSP-RM 570.144\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_eq!(
        nvbare_gsp::firmware::FIRMWARE_VERSION,
        nvbare_firmware_fetch::FIRMWARE_VERSION
    );
    // A 12-digit revision in a checkout, "unknown" outside one.
    assert!(
        GIT_REVISION == "unknown"
            || (GIT_REVISION.len() == 12 && GIT_REVISION.bytes().all(|b| b.is_ascii_hexdigit())),
        "{GIT_REVISION}"
    );
    let e = <Cli as clap::Parser>::try_parse_from(["nvbare", "--version"]).unwrap_err();
    assert_eq!(e.kind(), clap::error::ErrorKind::DisplayVersion);
    assert_eq!(e.to_string(), v);
}

#[test]
fn the_command_line_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn error_codes_are_unique_well_formed_and_explained() {
    let mut seen = BTreeSet::new();
    for e in ALL {
        assert!(seen.insert(e.code), "{} twice", e.code);
        let digits = e.code.strip_prefix("NVB-E").expect(e.code);
        assert!(
            digits.len() == 3 && digits.bytes().all(|b| b.is_ascii_digit()),
            "{}",
            e.code
        );
        assert!(!e.title.is_empty() && !e.remedy.is_empty(), "{}", e.code);
        assert_eq!(codes::find(e.code), Some(e));
        assert_eq!(codes::find(&e.code[4..].to_lowercase()), Some(e));
        assert!(codes::explain(Some(e.code)).unwrap().contains(e.remedy));
    }
    assert_eq!(codes::find("104"), Some(&codes::STALL));
    assert_eq!(codes::find("7"), Some(&codes::PARAMS));
    assert_eq!(codes::find("e07"), Some(&codes::PARAMS));
    for bad in ["E1044", "NVB-E999", "", "NVB-", "E", "x7", "-7"] {
        assert!(codes::find(bad).is_none(), "{bad}");
    }
    let e = codes::explain(Some("E999")).unwrap_err();
    assert_eq!(e.code(), codes::UNKNOWN_CODE);
    assert_eq!(codes::explain(None).unwrap().lines().count(), 2 * ALL.len());
}

/// README.md's Troubleshooting section.
fn troubleshooting() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .expect("README.md");
    let start = readme
        .find("\n## Troubleshooting\n")
        .expect("README.md has a '## Troubleshooting' section");
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 4);
    rest[..end].to_owned()
}

#[test]
fn readme_troubleshooting_lists_every_code_as_the_table_says() {
    let section = troubleshooting();
    let rows: String = section
        .lines()
        .filter(|l| l.starts_with("| `NVB-E"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        rows,
        codes::markdown_rows(),
        "README.md's troubleshooting table differs from cli::codes; its rows must read:\n{}",
        codes::markdown_rows()
    );
    // And no code is mentioned anywhere in the README that the table does not have.
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    for (i, _) in readme.match_indices("NVB-E") {
        let code = &readme[i..(i + 8).min(readme.len())];
        assert!(codes::find(code).is_some(), "README.md mentions {code}");
    }
}

#[test]
fn list_json_reports_each_gpu_over_a_fake_sysfs() {
    let t = FakeSysfs::new();
    t.add_device(FakeDevice {
        driver: Some("vfio-pci"),
        ..FakeDevice::gpu("0000:41:00.0")
    });
    t.add_vfio_node(12);
    t.add_device(FakeDevice {
        driver: Some("nvidia"),
        group: Some(13),
        ..FakeDevice::gpu("0000:c1:00.0")
    });
    // An audio function of the board is not a GPU.
    t.add_device(FakeDevice {
        class: 0x040300,
        device: 0x22e8,
        ..FakeDevice::gpu("0000:41:00.1")
    });
    let json = setup::list(&t.sysfs(), &ListArgs { json: true }).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let gpus = v.as_array().unwrap();
    assert_eq!(gpus.len(), 2);
    assert_eq!(gpus[0]["address"], "0000:41:00.0");
    assert_eq!(gpus[0]["device_id"], 0x2335);
    assert_eq!(gpus[0]["chip"], "GH100");
    assert_eq!(gpus[0]["board"], "H200 SXM");
    assert_eq!(gpus[0]["driver"], "vfio-pci");
    assert_eq!(gpus[0]["iommu_group"], 12);
    assert_eq!(gpus[0]["vfio"]["state"], "ready");
    assert_eq!(gpus[1]["driver"], "nvidia");
    assert_eq!(gpus[1]["vfio"]["state"], "not_ready");
    assert!(
        gpus[1]["vfio"]["reason"]
            .as_str()
            .unwrap()
            .contains("nvbare bind 0000:c1:00.0")
    );
    let text = setup::list(&t.sysfs(), &ListArgs { json: false }).unwrap();
    assert!(text.starts_with("address"), "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");
    // No sysfs at all: NVB-E301.
    let gone = crate::pci::Sysfs::at("/nonexistent-root");
    let e = setup::list(&gone, &ListArgs { json: true }).unwrap_err();
    assert_eq!(e.code(), codes::LIST_SYSFS);
}

/// Every `NVBARE_*` variable the workspace's Rust sources read (`var("…")`, `var_os("…")`,
/// clap's `env = "…"`).
fn variables_read() -> BTreeSet<String> {
    fn walk(dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.filter_map(Result::ok) {
            let p = e.path();
            let name = e.file_name();
            if p.is_dir() {
                if name != "target" && name != ".git" && name != "fuzz" {
                    walk(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                for opener in ["var(\"", "var_os(\"", "env = \""] {
                    for (i, _) in text.match_indices(opener) {
                        let rest = &text[i + opener.len()..];
                        if let Some(end) = rest.find('"')
                            && rest[..end].starts_with("NVBARE_")
                        {
                            out.insert(rest[..end].to_owned());
                        }
                    }
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".."), &mut out);
    out
}

#[test]
fn help_lists_every_environment_variable_nvbare_or_its_tests_read() {
    let read = variables_read();
    assert!(
        read.contains("NVBARE_TUNE") && read.contains("NVBARE_FIRMWARE_DIR"),
        "{read:?}"
    );
    let help = Cli::command().render_help().to_string();
    for v in &read {
        assert!(
            ENVIRONMENT.contains(&format!("{v} ")) || ENVIRONMENT.contains(&format!("{v}=")),
            "{v} is read but not listed in cli::help::ENVIRONMENT"
        );
        assert!(help.contains(v.as_str()), "{v} not in --help");
    }
    // Nothing listed that nothing reads.
    for word in ENVIRONMENT.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if word.starts_with("NVBARE_") {
            assert!(read.contains(word), "{word} is listed but nothing reads it");
        }
    }
}

#[test]
fn completions_and_man_pages_come_from_the_definition() {
    for shell in [
        clap_complete::Shell::Bash,
        clap_complete::Shell::Zsh,
        clap_complete::Shell::Fish,
    ] {
        let mut out = Vec::new();
        help::completions(shell, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for word in ["nvbare", "run", "dump", "shared", "serve", "explain"] {
            assert!(text.contains(word), "{shell}: no {word}");
        }
    }
    let mut out = Vec::new();
    help::man(None, &mut out).unwrap();
    let page = String::from_utf8(out).unwrap();
    assert!(
        page.starts_with(".ie") || page.contains(".TH nvbare 1"),
        "{}",
        &page[..200]
    );
    assert!(
        page.contains("NVBARE_TUNE"),
        "the man page lists the environment"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    help::man(Some(dir.path()), &mut out).unwrap();
    let listed = String::from_utf8(out).unwrap();
    assert!(listed.contains("nvbare-run.1"), "{listed}");
    let run = std::fs::read_to_string(dir.path().join("nvbare-run.1")).unwrap();
    assert!(run.contains("shared") && run.contains("dump"), "{run}");
}

fn report() -> GpuReport {
    GpuReport {
        name: "NVIDIA H200".into(),
        pci: Some("0000:41:00.0".into()),
        device_id: 0x2335,
        backend: "nvk",
        rm: "NVIDIA kernel driver 580.159.04".into(),
        sm: 90,
        arch: Some("Hopper".into()),
        sm_count: 132,
        gpcs: 8,
        tpcs_per_gpc: 9,
        sms_per_tpc: 2,
        max_warps_per_sm: 64,
        vram_bytes: 143_771 << 20,
        classes: EngineClasses {
            gpfifo: 0xc86f,
            compute: 0xcbc0,
            copy: 0xc8b5,
            usermode: 0xc661,
        },
        copy_channel: CopyChannel {
            engine: Some(2),
            pces: 0,
            refusals: vec![],
        },
        class_list: vec![
            ClassEntry {
                id: 0xcbc0,
                name: Some("HOPPER_COMPUTE_A"),
            },
            ClassEntry {
                id: 0x1234,
                name: None,
            },
        ],
        simulated: false,
        noiommu_unsafe: false,
        boot: None,
    }
}

#[test]
fn info_reads_as_text_and_as_json() {
    let r = report();
    let text = r.to_text();
    assert!(text.starts_with("gpu           NVIDIA H200 (0000:41:00.0, device id 0x2335)\n"));
    assert!(text.contains("sm            sm_90 (Hopper), 132 SMs enabled (8 GPCs x 9 TPCs"));
    assert!(text.contains("vram          143771 MiB"));
    assert!(text.contains("own channel group on COPY2"));
    assert!(
        text.ends_with("class list    HOPPER_COMPUTE_A 0xcbc0, 0x1234\n"),
        "{text}"
    );
    let v: serde_json::Value = serde_json::to_value(&r).unwrap();
    assert_eq!(v["sm_count"], 132);
    assert_eq!(v["classes"]["compute"], 0xcbc0);
    assert_eq!(v["class_list"][1]["name"], serde_json::Value::Null);
    assert_eq!(v["copy_channel"]["engine"], 2);
}

#[test]
fn sim_serve_starts_on_loopback_stops_and_reports() {
    let a = ServeArgs {
        chip: nvbare_sim::SimChip::Gb202,
        listen: "127.0.0.1:0".parse().unwrap(),
        gpus: 1,
        allow_remote: false,
        trace: None,
        hwref: None,
        vfio_user: None,
    };
    let mut out = Vec::new();
    let stats = setup::sim_serve(&a, || true, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("serving 1 simulated gb202 GPU(s) on 127.0.0.1:"),
        "{text}"
    );
    assert!(text.contains("stopped: 0 commands"), "{text}");
    assert_eq!(stats.connections, 0);
    let refused = |listen: &str, gpus: u32| {
        let a = ServeArgs {
            listen: listen.parse().unwrap(),
            gpus,
            ..ServeArgs {
                chip: nvbare_sim::SimChip::Gh100,
                listen: "127.0.0.1:0".parse().unwrap(),
                gpus: 1,
                allow_remote: false,
                trace: None,
                hwref: None,
                vfio_user: None,
            }
        };
        setup::sim_serve(&a, || true, &mut Vec::new())
            .unwrap_err()
            .code()
    };
    assert_eq!(refused("0.0.0.0:0", 1), codes::SERVE_NOT_LOOPBACK);
    assert_eq!(refused("127.0.0.1:0", 0), codes::SERVE_GPU_COUNT);
}

#[test]
fn sim_serve_vfio_user_says_where_and_what_the_guest_gets_and_refuses_a_taken_path() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("gpu.sock");
    let a = ServeArgs {
        chip: nvbare_sim::SimChip::Gh100,
        listen: "127.0.0.1:6667".parse().unwrap(),
        gpus: 1,
        allow_remote: false,
        trace: None,
        hwref: None,
        vfio_user: Some(socket.clone()),
    };
    let mut out = Vec::new();
    setup::sim_serve_vfio_user(&a, &socket, || true, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("serving a simulated gh100 (10de:2335) as a vfio-user device on"),
        "{text}"
    );
    assert!(
        text.contains("BAR1 256 MiB of the chip's 256 GiB"),
        "{text}"
    );
    assert!(text.contains("stopped: RegionRead 0"), "{text}");
    assert!(
        !socket.exists(),
        "the socket is removed when the server stops"
    );
    std::fs::write(&socket, b"").unwrap();
    let e = setup::sim_serve_vfio_user(&a, &socket, || true, &mut Vec::new()).unwrap_err();
    assert_eq!(e.code(), codes::SERVE_SOCKET);
}

#[test]
fn sim_serve_vfio_user_unplugs_the_gpu_on_sigusr1() {
    // tests/vm/run makes the GPU vanish under a guest this way (killing the server would
    // abort QEMU 11.1.3 with it).
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("gpu.sock");
    let a = ServeArgs {
        chip: nvbare_sim::SimChip::Gb202,
        listen: "127.0.0.1:6667".parse().unwrap(),
        gpus: 1,
        allow_remote: false,
        trace: None,
        hwref: None,
        vfio_user: Some(socket.clone()),
    };
    let polls = std::cell::Cell::new(0);
    let mut out = Vec::new();
    setup::sim_serve_vfio_user(
        &a,
        &socket,
        || {
            let n = polls.get();
            polls.set(n + 1);
            if n == 0 {
                signal_hook::low_level::raise(signal_hook::consts::SIGUSR1).unwrap();
            }
            n >= 1
        },
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("SIGUSR1: the GPU was unplugged while served"),
        "{text}"
    );
}

#[test]
fn sim_serve_writes_its_trace_when_it_stops_and_refuses_an_unwritable_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("boot.trace");
    let a = ServeArgs {
        chip: nvbare_sim::SimChip::Gb202,
        listen: "127.0.0.1:0".parse().unwrap(),
        gpus: 1,
        allow_remote: false,
        trace: Some(file.clone()),
        hwref: Some(dir.path().join("no-headers-here")),
        vfio_user: None,
    };
    let mut out = Vec::new();
    setup::sim_serve(&a, || true, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains(&format!(
            "trace: 0 events, 0 DMA ranges, 0 register names -> {}",
            file.display()
        )),
        "{text}"
    );
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.starts_with("# nvbare sim trace"), "{written}");
    // A trace that cannot be written is refused before anything is served.
    let a = ServeArgs {
        trace: Some(dir.path().join("missing/dir/boot.trace")),
        ..a
    };
    let mut out = Vec::new();
    let e = setup::sim_serve(&a, || true, &mut out).unwrap_err();
    assert_eq!(e.code(), codes::SERVE_TRACE);
    assert!(
        out.is_empty(),
        "nothing served: {}",
        String::from_utf8_lossy(&out)
    );
}

#[test]
fn a_missing_kernel_driver_is_nvb_e201() {
    if Path::new("/dev/nvidiactl").exists() {
        eprintln!("skipped: this machine has NVIDIA's kernel driver");
        return;
    }
    let args = super::super::gpu::GpuArgs::default();
    let e = super::super::gpu::with_gpu(&args, &mut super::super::info::Info { json: true })
        .unwrap_err();
    assert_eq!(e.code(), codes::NO_DRIVER, "{e}");
    let bad = super::super::gpu::GpuArgs {
        device: Some("0000:41:00.0".into()),
        ..args.clone()
    };
    assert_eq!(bad.target().unwrap_err().code(), codes::DEVICE);
    let bad = super::super::gpu::GpuArgs {
        tune: "chain=1".into(),
        ..args
    };
    assert_eq!(bad.config().unwrap_err().code(), codes::TUNE);
}

#[test]
fn the_first_ctrl_c_sets_the_flag_the_waits_check_and_does_not_end_the_process() {
    use super::super::interrupt;
    interrupt::install();
    assert!(!interrupt::requested());
    // SIGINT to this test process, as a terminal's Ctrl-C sends it (once: a second one would
    // end the process, as it should).
    let sent = std::process::Command::new("kill")
        .args(["-INT", &std::process::id().to_string()])
        .status();
    if !sent.is_ok_and(|s| s.success()) {
        eprintln!("skipped: no kill(1) to send the signal with");
        return;
    }
    // TIMEOUT: signal delivery to this process takes microseconds; 5 s is a broken handler.
    let wait = nvbare_core::hal::Wait::pausing("the SIGINT flag", 5_000_000_000, 1_000_000);
    let clock = crate::clock::HostClock::new();
    assert!(
        nvbare_core::hal::poll_until(&clock, wait, || interrupt::requested().then_some(())).is_ok(),
        "the handler did not set the flag"
    );
}
