//! What `nvbare` says about itself: `--version` (the crate version, the git revision it was
//! built from, the firmware version it boots), the environment variables under `--help`,
//! shell completions (`nvbare completions SHELL`) and the man page (`nvbare man`), both
//! generated from the clap definition at run time, so they can never disagree with it.

use std::io::Write;
use std::sync::LazyLock;

use clap::CommandFactory;

use super::Cli;
use super::error::CliError;

/// The git revision the binary was built from (`build.rs`), or `unknown`.
pub const GIT_REVISION: &str = env!("NVBARE_GIT_REVISION");

static VERSION: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} (git {GIT_REVISION}), boots GSP-RM {}",
        env!("CARGO_PKG_VERSION"),
        nvbare_gsp::firmware::FIRMWARE_VERSION
    )
});

/// What `--version` prints after `nvbare `.
pub fn version() -> &'static str {
    VERSION.as_str()
}

/// The environment variables, under `--help`. A test checks that every `NVBARE_*` variable
/// the workspace reads is here.
pub const ENVIRONMENT: &str = "\
Environment:
  RUST_LOG              log filter, e.g. RUST_LOG=nvbare_core=trace (overrides -v)
  NVBARE_TUNE           default of --tune (info, run, bench)
  NVBARE_D2D_KERNEL     default of bench --d2d-kernel
  NVBARE_D2D            default of bench --d2d-shape
  NVBARE_BENCH_KERNELS  default of bench --kernels
  NVBARE_BENCH_PROGRAMMATIC  bench --programmatic when set (true)
  NVBARE_COPY_ENGINE    default of --copy-engine (the copy engine tried first)
  NVBARE_ALLOC          --backend nvk: rmmap=0|1,huge2m=0|1,rmattrs=0|1, how fresh video memory is mapped
  NVBARE_CE_START_AT    bench --ce-study: start the timed copies at this Unix time (ms)
  NVBARE_DEBIAN_MIRROR  the Debian mirror `firmware fetch` takes the firmware package from
  NVBARE_FIRMWARE_DIR   the firmware cache of --backend vfio|sim|remote and `demo`
                        (default of --firmware-dir) and where `sim serve` reads it
                        [default: ~/.cache/nvbare/firmware]; also read by the tests
  XDG_CACHE_HOME, HOME  where `firmware fetch` caches (XDG_CACHE_HOME/nvbare/firmware)
  NVBARE_VFIO_USER_TRACE  `sim serve --vfio-user`: every request on stderr
  NVBARE_VFIO_USER_BAR1_MMAP=1  `sim serve --vfio-user`: BAR1 mmappable from the VRAM's memfd
  NVBARE_SIM_LOG        `sim serve --vfio-user`: the simulator's log when it stops
  NVBARE_VFIO_USER_BAR1=full  `sim serve --vfio-user`: the chip's whole BAR1, not 256 MiB
  NVBARE_VFIO_USER_NO_IOMMU=1  `sim serve --vfio-user`: the guest has no IOMMU (bus
                        addresses are physical; an unprogrammed flush buffer reads RAM)
Read by the test suites (cargo test), not by nvbare:
  NVBARE_REQUIRE_FIRMWARE=1    firmware tests fail instead of skipping
  NVBARE_FIRMWARE_DEB          a firmware-nvidia-graphics .deb for the package tests
  NVBARE_REFERENCE             the OpenRM/hwref reference tree [default: ../shared/reference]
  NVBARE_REQUIRE_REFERENCE     reference checks fail instead of skipping
  NVBARE_SHARED                the project's shared/ folder [default: ../shared]
  NVBARE_REQUIRE_TINYGRAD=1    tinygrad interop tests fail instead of skipping
  NVBARE_REMOTE_SERVER         HOST:PORT of a remote-protocol server for the client tests
  NVBARE_ABI_LAYOUT_ONLY       limit the ABI layout harness to groups (gsp,rm)
  NVBARE_TEST_DEVICE=BDF       run the hardware suite on this vfio-pci GPU (tests/HARDWARE.md)
  NVBARE_TEST_NOIOMMU=1        let the hardware suite use VFIO's no-IOMMU mode (unsafe)
  NVBARE_TEST_CRASH_CHILD      set by the hardware suite for its crashing child process
  NVBARE_VBIOS_DIR             where gsp's VBIOS tests save their images (for `nvbare vbios`)
Errors print a code (nvbare: error[NVB-E104]: ...): `nvbare explain CODE` says what to do;
README.md's Troubleshooting section lists them all.";

/// `nvbare completions SHELL`.
pub fn completions(shell: clap_complete::Shell, out: &mut impl Write) -> Result<(), CliError> {
    let mut cmd = Cli::command();
    // Into memory first: clap_complete panics when its writer fails (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "nvbare", &mut script);
    out.write_all(&script)
        .and_then(|()| out.flush())
        .map_err(CliError::Output)
}

/// `nvbare man [--dir DIR]`: the roff page of `nvbare` on `out`; with `dir`, that page and
/// one per subcommand (`nvbare-run.1`, ...) written there instead, their paths on `out`.
pub fn man(dir: Option<&std::path::Path>, out: &mut impl Write) -> Result<(), CliError> {
    let cmd = Cli::command();
    match dir {
        None => clap_mangen::Man::new(cmd)
            .render(out)
            .and_then(|()| out.flush())
            .map_err(CliError::Output),
        Some(dir) => {
            let write_err = |e: std::io::Error| CliError::Write {
                path: dir.to_owned(),
                why: e.to_string(),
                source: Some(e),
            };
            std::fs::create_dir_all(dir).map_err(write_err)?;
            clap_mangen::generate_to(cmd, dir).map_err(write_err)?;
            let mut pages: Vec<_> = std::fs::read_dir(dir)
                .map_err(write_err)?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("nvbare") && n.ends_with(".1"))
                })
                .collect();
            pages.sort();
            for p in pages {
                writeln!(out, "{}", p.display()).map_err(CliError::Output)?;
            }
            Ok(())
        }
    }
}
