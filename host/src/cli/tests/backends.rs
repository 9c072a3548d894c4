//! The backend options (`--backend`, `--device`, `--chip`, `--allow-noiommu-unsafe`,
//! `--offline`, `--firmware-dir`) read into a [`Target`] before anything is opened: every
//! backend's mistakes are errors with their codes, and nothing is opened to find them.

use std::path::PathBuf;

use clap::Parser;
use nvbare_core::hal::PciAddress;
use nvbare_sim::SimChip;

use super::super::codes::{self, ErrorCode};
use super::super::gpu::{BackendKind, GpuArgs, Target};
use super::super::{Cli, Command};

/// The GPU options of `nvbare info ARGS...` as clap reads them.
fn gpu_args(args: &[&str]) -> GpuArgs {
    let mut argv = vec!["nvbare", "info"];
    argv.extend_from_slice(args);
    match Cli::try_parse_from(argv).expect("parses").command {
        Command::Info(a) => a.gpu,
        other => panic!("not info: {other:?}"),
    }
}

fn target(args: &[&str]) -> Target {
    gpu_args(args)
        .target()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// The code and message of the error `args` give.
fn refused(args: &[&str]) -> (ErrorCode, String) {
    let e = gpu_args(args).target().expect_err("an error");
    (e.code(), e.to_string())
}

#[test]
fn each_backend_reads_its_device() {
    assert_eq!(target(&[]), Target::Nvk(0));
    assert_eq!(target(&["--device", "1"]), Target::Nvk(1));
    assert_eq!(
        target(&["--backend", "vfio", "--device", "41:00.0"]),
        Target::Vfio {
            addr: PciAddress {
                domain: 0,
                bus: 0x41,
                device: 0,
                function: 0
            },
            allow_noiommu_unsafe: false,
        }
    );
    assert!(matches!(
        target(&[
            "--backend",
            "vfio",
            "--device",
            "0000:c1:00.0",
            "--allow-noiommu-unsafe"
        ]),
        Target::Vfio {
            allow_noiommu_unsafe: true,
            ..
        }
    ));
    assert_eq!(target(&["--backend", "sim"]), Target::Sim(SimChip::Gh100));
    assert_eq!(
        target(&["--backend", "sim", "--chip", "gb202", "--offline"]),
        Target::Sim(SimChip::Gb202)
    );
    assert_eq!(
        target(&["--backend", "remote", "--device", "127.0.0.1:6667"]),
        Target::Remote("127.0.0.1:6667".into())
    );
    assert!(target(&["--backend", "sim"]).boots_gsp());
    assert!(!target(&[]).boots_gsp());
}

#[test]
fn a_device_each_backend_cannot_take_is_refused_before_anything_is_opened() {
    for args in [
        &["--device", "41:00.0"][..],
        &["--backend", "vfio", "--device", "0"],
        &["--backend", "vfio", "--device", "41:00"],
        &["--backend", "remote", "--device", "localhost"],
        &["--backend", "remote", "--device", "localhost:http"],
        &["--backend", "remote", "--device", ":6667"],
    ] {
        let (code, text) = refused(args);
        assert_eq!(code, codes::DEVICE, "{args:?}: {text}");
    }
    let (code, text) = refused(&["--backend", "vfio", "--device", "41:00"]);
    assert!(text.contains("bound to vfio-pci"), "{text}");
    let (_, text) = refused(&["--backend", "remote", "--device", "localhost"]);
    assert!(text.contains("HOST:PORT"), "{text}");
    assert_eq!(code, codes::DEVICE);
}

#[test]
fn vfio_and_remote_need_a_device() {
    let (code, text) = refused(&["--backend", "vfio"]);
    assert_eq!(code, codes::NO_DEVICE);
    assert_eq!(
        text,
        "--backend vfio needs --device: give a PCI address (0000:41:00.0 or 41:00.0) of a GPU \
         bound to vfio-pci, as `nvbare list` prints it"
    );
    let (code, text) = refused(&["--backend", "remote"]);
    assert_eq!(code, codes::NO_DEVICE);
    assert!(text.contains("nvbare sim serve"), "{text}");
}

#[test]
fn options_of_another_backend_are_refused() {
    for (args, option) in [
        (&["--chip", "gh100"][..], "--chip"),
        (
            &[
                "--backend",
                "vfio",
                "--device",
                "41:00.0",
                "--chip",
                "gb202",
            ],
            "--chip",
        ),
        (
            &["--backend", "remote", "--device", "h:1", "--chip", "gh100"],
            "--chip",
        ),
        (&["--backend", "sim", "--device", "0"], "--device"),
        (
            &["--backend", "sim", "--allow-noiommu-unsafe"],
            "--allow-noiommu-unsafe",
        ),
        (
            &[
                "--backend",
                "remote",
                "--device",
                "h:1",
                "--allow-noiommu-unsafe",
            ],
            "--allow-noiommu-unsafe",
        ),
        (&["--allow-noiommu-unsafe"], "--allow-noiommu-unsafe"),
        (&["--offline"], "--offline"),
        (&["--firmware-dir", "/tmp"], "--firmware-dir"),
    ] {
        let (code, text) = refused(args);
        assert_eq!(code, codes::NOT_FOR_BACKEND, "{args:?}: {text}");
        assert!(
            text.starts_with(&format!("{option} does not apply")),
            "{text}"
        );
    }
}

#[test]
fn an_unknown_simulated_chip_is_a_usage_error() {
    let e = Cli::try_parse_from(["nvbare", "info", "--backend", "sim", "--chip", "gb300"])
        .expect_err("refused");
    assert!(
        e.to_string()
            .contains("the simulator has gh100, gb100, gb202, ga102, ad102, ga100 and tu102"),
        "{e}"
    );
}

/// `demo --help` lists every chip of the simulator's table under `--chip`, with its product.
#[test]
fn demo_help_lists_every_simulated_chip() {
    use clap::CommandFactory;
    let mut cli = Cli::command();
    let demo = cli.find_subcommand_mut("demo").expect("demo");
    let help = demo.render_help().to_string();
    for chip in nvbare_sim::SimChip::ALL {
        let s = chip.spec();
        assert!(
            help.contains(&format!("{} (", s.name)),
            "{} missing:\n{help}",
            s.name
        );
    }
    assert!(
        help.contains("ga100 (NVIDIA A100-PCIE-40GB, booter path)"),
        "{help}"
    );
    assert!(
        help.contains("tu102 (NVIDIA GeForce RTX 2080 Ti, booter path)"),
        "{help}"
    );
}

#[test]
fn the_demo_defaults_to_the_simulator_and_the_other_commands_to_nvk() {
    let a = match Cli::try_parse_from(["nvbare", "demo"]).unwrap().command {
        Command::Demo(a) => a,
        other => panic!("not demo: {other:?}"),
    };
    assert_eq!(a.gpu.backend, None);
    assert_eq!(gpu_args(&[]).kind(), BackendKind::Nvk);
}

#[test]
fn the_firmware_cache_is_the_option_then_the_environment_then_the_fetch_cache() {
    let a = gpu_args(&[
        "--backend",
        "sim",
        "--firmware-dir",
        "/some/dir",
        "--offline",
    ]);
    let s = a.firmware_source().unwrap();
    assert_eq!(s.dir, PathBuf::from("/some/dir"));
    assert!(s.offline);
}
