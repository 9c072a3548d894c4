//! What every GPU subcommand shares: which backend and device (`--backend`, `--device`,
//! `--chip`, ...), read into a [`Target`] before anything is opened, and the one place a GPU
//! is opened by backend ([`with_gpu`]).
//!
//! A subcommand is a [`GpuTask`], generic over the backend, so `Gpu<Nvk>`,
//! `Gpu<GspRm<Vfio>>`, `Gpu<GspRm<SimPlatform>>` and `Gpu<GspRm<Remote>>` run the same code:
//! adding a backend is a variant of [`BackendKind`], its [`Target`], and one arm in
//! [`with_gpu`]. The backends on which nvbare boots GSP-RM itself open through
//! [`super::gsp`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use nvbare_core::boot::BootReport;
use nvbare_core::chip::{Arch, Chip};
use nvbare_core::gpu::{Backend, Gpu, GpuConfig, LaunchTuning};
use nvbare_core::gsp_rm::CloseReport;
use nvbare_core::hal::PciAddress;
use nvbare_sim::{SimChip, SimGpu};

use super::error::{BackendError, CliError, GpuResultExt};
use super::firmware::FirmwareSource;
use crate::nvk;

/// Which way nvbare reaches the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    /// Through NVIDIA's kernel driver (RM ioctls on /dev/nvidiactl, /dev/nvidia-uvm).
    #[default]
    Nvk,
    /// A GPU bound to vfio-pci (--device BDF): nvbare boots GSP-RM 570.144 on it itself.
    Vfio,
    /// The simulated GPU, in this process (which chip: --chip): nvbare boots GSP-RM on it.
    Sim,
    /// A GPU behind tinygrad's remote PCI protocol (--device HOST:PORT), such as
    /// `nvbare sim serve`: nvbare boots GSP-RM on it over TCP.
    Remote,
}

impl BackendKind {
    /// The name `--backend` takes.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Nvk => "nvk",
            BackendKind::Vfio => "vfio",
            BackendKind::Sim => "sim",
            BackendKind::Remote => "remote",
        }
    }
}

/// Options every GPU subcommand takes.
#[derive(Args, Debug, Clone, Default)]
pub struct GpuArgs {
    /// How to reach the GPU [default: nvk; for demo: sim].
    #[arg(long, value_enum)]
    pub backend: Option<BackendKind>,
    /// Which GPU: with --backend nvk its index in the kernel driver's order [default: 0];
    /// with vfio its PCI address (0000:41:00.0, as `nvbare list` prints it); with remote the
    /// server's HOST:PORT.
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
    // The help lists the simulator's chip table (chip_help), so it cannot go stale.
    #[arg(
        long,
        value_parser = super::setup::parse_chip,
        help = super::setup::chip_help("With --backend sim: the chip simulated [default: gh100]")
    )]
    pub chip: Option<SimChip>,
    /// With --backend vfio: accept a GPU in VFIO's no-IOMMU mode. UNSAFE: without an IOMMU
    /// the GPU can read and write all of the machine's memory (no DMA isolation), so a bug
    /// or a hostile firmware can corrupt the host.
    #[arg(long)]
    pub allow_noiommu_unsafe: bool,
    /// With vfio, sim or remote: never fetch the firmware; fail if it is not in the cache.
    #[arg(long)]
    pub offline: bool,
    /// With vfio, sim or remote: the firmware cache [default: $NVBARE_FIRMWARE_DIR, else the
    /// one `nvbare firmware fetch` fills: $XDG_CACHE_HOME/nvbare/firmware or
    /// ~/.cache/nvbare/firmware]; missing files are fetched into it.
    #[arg(long, value_name = "DIR")]
    pub firmware_dir: Option<PathBuf>,
    /// Launch tunings for measuring: membar=N,inval=0|1,mirror=0|1,relmembar=0|1,chainmembar=N,cbpre=0|1,latchcycle=N,bHI_LO=V (raw QMD bits).
    #[arg(long, env = "NVBARE_TUNE", default_value = "")]
    pub tune: String,
    /// The asynchronous copy engine (COPYn) tried first for the copy channel (a measuring
    /// knob: each engine has its own physical copy units) [default: COPY2, then 1, 3, 4].
    #[arg(long, env = "NVBARE_COPY_ENGINE", value_name = "N")]
    pub copy_engine: Option<u32>,
}

/// The GPU a command will open, read from the options before anything is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// GPU `index` of those NVIDIA's kernel driver lists.
    Nvk(usize),
    /// The GPU at `addr`, bound to vfio-pci.
    Vfio {
        /// Its PCI address.
        addr: PciAddress,
        /// `--allow-noiommu-unsafe`.
        allow_noiommu_unsafe: bool,
    },
    /// A simulated GPU of this chip, in this process.
    Sim(SimChip),
    /// The first NVIDIA GPU of the remote PCI server at this `HOST:PORT`.
    Remote(String),
}

impl Target {
    /// Whether nvbare boots GSP-RM on this GPU itself (so it needs the firmware).
    pub fn boots_gsp(&self) -> bool {
        !matches!(self, Target::Nvk(_))
    }
}

/// Why an option does not apply to a backend, for [`CliError::NotForBackend`].
fn not_for(option: &'static str, backend: BackendKind, why: &'static str) -> CliError {
    CliError::NotForBackend {
        option,
        backend: backend.name(),
        why,
    }
}

const BDF_EXPECTED: &str = "a PCI address (0000:41:00.0 or 41:00.0) of a GPU bound to vfio-pci, \
                            as `nvbare list` prints it";
const REMOTE_EXPECTED: &str = "HOST:PORT of a remote PCI server (127.0.0.1:6667; \
                               `nvbare sim serve` starts one)";

impl GpuArgs {
    /// `--backend`, or its default.
    pub fn kind(&self) -> BackendKind {
        self.backend.unwrap_or_default()
    }

    /// The GPU these options name; an option that does not belong to the backend is an
    /// error here, before anything is opened.
    pub fn target(&self) -> Result<Target, CliError> {
        let kind = self.kind();
        let device_err = |given: &str, expected| CliError::Device {
            backend: kind.name(),
            given: given.to_owned(),
            expected,
        };
        if self.chip.is_some() && kind != BackendKind::Sim {
            return Err(not_for(
                "--chip",
                kind,
                "it picks the chip of --backend sim; other backends read the chip from the GPU",
            ));
        }
        if self.allow_noiommu_unsafe && kind != BackendKind::Vfio {
            return Err(not_for(
                "--allow-noiommu-unsafe",
                kind,
                "only --backend vfio reaches a GPU through VFIO",
            ));
        }
        if kind == BackendKind::Nvk {
            let why = "NVIDIA's kernel driver loads GSP-RM itself";
            if self.offline {
                return Err(not_for("--offline", kind, why));
            }
            if self.firmware_dir.is_some() {
                return Err(not_for("--firmware-dir", kind, why));
            }
        }
        match kind {
            BackendKind::Nvk => match self.device.as_deref() {
                None => Ok(Target::Nvk(0)),
                Some(d) => d.parse().map(Target::Nvk).map_err(|_| {
                    device_err(d, "a GPU index (0, 1, ...) in the kernel driver's order")
                }),
            },
            BackendKind::Vfio => {
                let d = self.device.as_deref().ok_or(CliError::NoDevice {
                    backend: kind.name(),
                    expected: BDF_EXPECTED,
                })?;
                let addr = crate::pci::parse_address(d).map_err(|_| device_err(d, BDF_EXPECTED))?;
                Ok(Target::Vfio {
                    addr,
                    allow_noiommu_unsafe: self.allow_noiommu_unsafe,
                })
            }
            BackendKind::Sim => match &self.device {
                Some(_) => Err(not_for(
                    "--device",
                    kind,
                    "the simulator is one GPU in this process; --chip picks which",
                )),
                None => Ok(Target::Sim(self.chip.unwrap_or(SimChip::Gh100))),
            },
            BackendKind::Remote => {
                let d = self.device.as_deref().ok_or(CliError::NoDevice {
                    backend: kind.name(),
                    expected: REMOTE_EXPECTED,
                })?;
                let well_formed = match d.rsplit_once(':') {
                    Some((host, port)) => !host.is_empty() && port.parse::<u16>().is_ok(),
                    None => false,
                };
                if !well_formed {
                    return Err(device_err(d, REMOTE_EXPECTED));
                }
                Ok(Target::Remote(d.to_owned()))
            }
        }
    }

    /// The GPU layer's configuration (`--tune` applied).
    pub fn config(&self) -> Result<GpuConfig, CliError> {
        let tuning = LaunchTuning::parse(&self.tune).map_err(|e| CliError::Tune {
            spec: e.0.to_owned(),
        })?;
        Ok(GpuConfig {
            tuning,
            copy_engine: self.copy_engine,
            ..GpuConfig::default()
        })
    }

    /// Where the firmware comes from, for a backend that boots GSP-RM: `--firmware-dir`,
    /// else `$NVBARE_FIRMWARE_DIR`, else the cache `nvbare firmware fetch` fills.
    pub fn firmware_source(&self) -> Result<FirmwareSource, CliError> {
        let dir = match (&self.firmware_dir, std::env::var_os("NVBARE_FIRMWARE_DIR")) {
            (Some(d), _) => d.clone(),
            (None, Some(d)) if !d.is_empty() => PathBuf::from(d),
            _ => nvbare_firmware_fetch::Cache::default_root()?,
        };
        Ok(FirmwareSource {
            dir,
            offline: self.offline,
        })
    }
}

/// What a command knows about the GPU it opened, besides the GPU itself.
#[derive(Clone, Debug)]
pub struct Opened {
    /// `--backend`.
    pub backend: BackendKind,
    /// The GPU in words: "a simulated GH100 (in this process)", "0000:41:00.0 through VFIO".
    pub description: String,
    /// How GSP-RM booted, when nvbare booted it.
    pub boot: Option<BootReport>,
    /// The simulated GPU, when it is one in this process (its counters say, among other
    /// things, whether the kernels launched were executed).
    pub simulator: Option<Arc<SimGpu>>,
    /// The GPU is reached in VFIO's no-IOMMU mode: UNSAFE.
    pub noiommu_unsafe: bool,
}

impl Opened {
    /// A GPU reached through `backend`, before anything is known of its boot.
    pub fn new(backend: BackendKind, description: String) -> Self {
        Opened {
            backend,
            description,
            boot: None,
            simulator: None,
            noiommu_unsafe: false,
        }
    }
}

/// What opening and closing a GPU over GSP-RM does, told to the task as it happens.
#[derive(Debug)]
pub enum OpenEvent<'a> {
    /// The firmware is ready: read from the cache (and verified), fetched into it first if
    /// `fetched`.
    Firmware {
        /// The chip found.
        chip: Chip,
        /// The cache.
        dir: &'a Path,
        /// Whether it was fetched now.
        fetched: bool,
    },
    /// GSP-RM is about to be booted on the GPU `on` describes.
    Booting {
        /// The GPU, in words.
        on: &'a str,
    },
    /// GSP-RM booted and RM is set up over it (`took` in all).
    Booted {
        /// The boot's timeline.
        report: &'a BootReport,
        /// From the boot's start to the GPU layer's open.
        took: Duration,
    },
    /// The GPU was torn down: RM objects freed, GSP-RM unloaded, its core halted.
    Closed {
        /// How the close went.
        report: &'a CloseReport,
        /// DMA allocations the platform still holds afterwards (`None` where it cannot
        /// tell).
        dma_outstanding: Option<usize>,
        /// How long the close took.
        took: Duration,
    },
}

/// What nvbare says about an [`OpenEvent`] when the task shows nothing of its own: a GPU
/// found with WPR2 up is reported on stderr, the rest goes to the log (`-v`).
pub fn note_event(event: &OpenEvent<'_>) {
    match event {
        OpenEvent::Firmware { chip, dir, fetched } => log::info!(
            "firmware for {chip}: {} ({})",
            dir.display(),
            if *fetched { "fetched now" } else { "cached" }
        ),
        OpenEvent::Booting { on } => log::info!("booting GSP-RM on {on}"),
        OpenEvent::Booted { report, took } => {
            if report.reset_for_wpr2 {
                eprintln!("nvbare: {WPR2_RESET}");
            }
            log::info!("booted in {took:?}\n{report}");
        }
        OpenEvent::Closed {
            report,
            dma_outstanding,
            ..
        } => log::info!("{}", teardown_text(report, *dma_outstanding)),
    }
}

/// What a boot that found WPR2 up says.
pub const WPR2_RESET: &str =
    "WPR2 was up: reset the GPU (a previous run on it ended without its teardown)";

/// A close in words.
pub fn teardown_text(r: &CloseReport, dma_outstanding: Option<usize>) -> String {
    let t = &r.teardown;
    let mut s = format!(
        "{} RM objects freed, UNLOADING_GUEST_DRIVER {}, GSP core {}, {} DMA allocations \
         freed",
        r.objects_freed,
        if t.unloaded {
            "acknowledged"
        } else {
            "not acknowledged"
        },
        if t.halted { "halted" } else { "not halted" },
        t.freed
    );
    match dma_outstanding {
        Some(0) => s += " (none left)",
        // Buffers of work that was interrupted or failed are not freed under a channel that
        // may still use them: they go with the device, right after the close.
        Some(n) => s += &format!(" ({n} more of the stopped work's freed with the device)"),
        None => {}
    }
    if t.reset {
        s += "; the GPU was reset";
    }
    if t.wpr2_left_up {
        s += "; WPR2 is still up (the next run resets the GPU)";
    }
    s
}

/// What a subcommand does with an open GPU, whatever the backend.
pub trait GpuTask {
    /// What it returns.
    type Output;

    /// Told what opening and closing the GPU does, as it happens (backends that boot
    /// GSP-RM). By default: [`note_event`].
    fn event(&mut self, event: &OpenEvent<'_>) {
        note_event(event);
    }

    /// Runs on `gpu`, opened as `opened` says.
    fn run<B: Backend>(
        &mut self,
        gpu: &mut Gpu<B>,
        opened: &Opened,
    ) -> Result<Self::Output, CliError>
    where
        BackendError: From<B::Error>;
}

/// Opens the GPU `args` name and runs `task` on it; the GPU is torn down when the task
/// returns, whether it succeeded, failed or was interrupted.
pub fn with_gpu<T: GpuTask>(args: &GpuArgs, task: &mut T) -> Result<T::Output, CliError> {
    let target = args.target()?;
    let config = args.config()?;
    log::debug!("opening {target:?} with {config:?}");
    match target {
        Target::Nvk(index) => {
            let mut gpu = nvk::open(index, config).cli()?;
            let arch = arch_of(&gpu);
            let opened = Opened::new(
                args.kind(),
                format!("GPU {index} of NVIDIA's kernel driver"),
            );
            // A fault anywhere in the task reads with this GPU's names for its codes.
            task.run(&mut gpu, &opened)
                .map_err(|e| e.name_faults(arch, None))
        }
        target => {
            let firmware = args.firmware_source()?;
            super::gsp::with_gsp_gpu(&target, args.kind(), &firmware, config, task)
        }
    }
}

/// The architecture of `gpu` (from its SM version: what every backend knows).
pub fn arch_of<B: Backend>(gpu: &Gpu<B>) -> Option<Arch> {
    Arch::from_sm_version(gpu.sm())
}
