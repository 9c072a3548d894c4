//! What a command of `nvbare` can fail with: one typed error, each variant naming the failed
//! step and the remedy, causes kept as `#[source]`; its stable code is in [`super::codes`].

use std::path::PathBuf;

use nvbare_core::chip::{Arch, Chip, UnknownChip};
use nvbare_core::cubin::CubinError;
use nvbare_core::gpu::GpuError;
use nvbare_core::gsp_rm::{CloseError, GspRmError, OpenError};
use nvbare_core::hal::Nanos;
use nvbare_core::launch::LaunchError;
use nvbare_core::rm::{FaultReport, KernelCode};
use nvbare_core::sem::SemaphoreError;

use super::args::{ArgError, PackError};
use crate::nvk::NvkError;
use crate::vfio::VfioError;

/// A backend's own error, whichever backend ran: what `GpuError`'s `Backend` variant carries
/// in the CLI (see `GpuError::map_backend`).
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The kernel-driver backend.
    #[error(transparent)]
    Nvk(#[from] NvkError),
    /// RM over the GSP-RM nvbare booted (the vfio, sim and remote backends).
    #[error(transparent)]
    GspRm(#[from] GspRmError),
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// An input file (the cubin, a buffer's `@FILE`) could not be read.
    #[error("cannot read the {what} {}: {source}", path.display())]
    Read {
        /// What the file is for.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// An output file (`--out`) cannot be or could not be written.
    #[error("cannot write {}: {why}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why (checked before the run, or the OS error after it).
        why: String,
        /// The OS error, when one was returned.
        #[source]
        source: Option<std::io::Error>,
    },
    /// A `--arg`, `--out` or `--dump` is malformed.
    #[error(transparent)]
    Arg(#[from] ArgError),
    /// The arguments do not fit the kernel's parameters.
    #[error(transparent)]
    Params(#[from] PackError),
    /// The cubin cannot be used (read before the GPU is opened).
    #[error("{}: {source}", path.display())]
    Cubin {
        /// The cubin file.
        path: PathBuf,
        /// Why.
        #[source]
        source: CubinError,
    },
    /// The launch cannot run as asked (checked against the cubin's SM before the GPU is
    /// opened).
    #[error("launch of {kernel}: {source}")]
    Launch {
        /// The kernel.
        kernel: String,
        /// Why.
        #[source]
        source: LaunchError,
    },
    /// `--tune` / `NVBARE_TUNE` names an unknown override.
    #[error(
        "--tune {spec:?}: not membar=N, inval=0|1, mirror=0|1, relmembar=0|1, chainmembar=N, \
         cbpre=0|1, latchcycle=N or bHI_LO=V (NVBARE_TUNE, when set, gives --tune's default)"
    )]
    Tune {
        /// The part not understood.
        spec: String,
    },
    /// `--device` is not what the backend takes.
    #[error("--device {given:?}: --backend {backend} takes {expected}")]
    Device {
        /// The backend.
        backend: &'static str,
        /// What was given.
        given: String,
        /// What it takes.
        expected: &'static str,
    },
    /// A backend that needs `--device` was given none.
    #[error("--backend {backend} needs --device: give {expected}")]
    NoDevice {
        /// The backend.
        backend: &'static str,
        /// What it takes.
        expected: &'static str,
    },
    /// An option given does not apply to the backend.
    #[error("{option} does not apply to --backend {backend}: {why}")]
    NotForBackend {
        /// The option.
        option: &'static str,
        /// The backend.
        backend: &'static str,
        /// Why not.
        why: &'static str,
    },
    /// The firmware is not in the cache and `--offline` forbids fetching it.
    #[error(
        "the GSP-RM 570.144 firmware for {chip} is not in {} and --offline forbids fetching \
         it; run `{}` (where there is network, or with --from DIR|FILE.deb), or drop --offline",
        dir.display(),
        super::firmware::fetch_command(chip, dir)
    )]
    FirmwareNotCached {
        /// The firmware directory's chip (`gh100`).
        chip: &'static str,
        /// The cache.
        dir: PathBuf,
    },
    /// Fetching the missing firmware failed.
    #[error(
        "the GSP-RM 570.144 firmware for {chip} is not in {} and fetching it failed: {source}; \
         without network, run `{}` with --from DIR|FILE.deb, or fetch it on another machine \
         and copy the directory",
        dir.display(),
        super::firmware::fetch_command(chip, dir)
    )]
    FirmwareFetch {
        /// The firmware directory's chip.
        chip: &'static str,
        /// The cache.
        dir: PathBuf,
        /// Why the fetch failed.
        #[source]
        source: Box<nvbare_firmware_fetch::FetchError>,
    },
    /// The GPU could not be opened through VFIO.
    #[error(transparent)]
    Vfio(#[from] VfioError),
    /// The remote GPU could not be opened.
    #[error(transparent)]
    Remote(#[from] crate::remote::OpenError),
    /// The simulated GPU could not be made.
    #[error("the simulated GPU could not be made: {0}")]
    Sim(#[from] nvbare_sim::device::SimError),
    /// The device's `NV_PMC_BOOT_42` names no chip nvbare knows.
    #[error("{on} is not a GPU nvbare knows: {source}")]
    UnknownChip {
        /// The device, in words.
        on: String,
        /// What it read.
        #[source]
        source: UnknownChip,
    },
    /// A chip whose GSP-RM boot nvbare does not implement.
    #[error(
        "nvbare boots GSP-RM itself on Hopper and Blackwell GPUs (GH100, GB100, GB202 and their \
         families), not on {chip} ({:?}, booted through SEC2); drive it through NVIDIA's \
         kernel driver with --backend nvk",
        chip.arch()
    )]
    ChipNotBootable {
        /// The chip.
        chip: Chip,
    },
    /// Booting GSP-RM or setting up RM over it failed (the GPU was given back).
    #[error("{on}: {source}")]
    Open {
        /// The GPU, in words.
        on: String,
        /// What failed.
        #[source]
        source: Box<OpenError>,
    },
    /// The teardown after the command did not complete.
    #[error("tearing the GPU down: {0}; the next nvbare run on it finds WPR2 up and resets it")]
    Close(#[source] Box<CloseError>),
    /// A result read back from the GPU is not what was computed on the CPU.
    #[error("{what}: wrong result: {detail}")]
    WrongResult {
        /// What was checked.
        what: String,
        /// The first difference.
        detail: String,
    },
    /// The user pressed Ctrl-C (or sent SIGTERM) during a wait or a loop.
    #[error(
        "interrupted {}{during}; the GPU was released",
        if *waited_ns > 0 { format!("after {} ", Nanos(*waited_ns)) } else { String::new() }
    )]
    Interrupted {
        /// What was going on.
        during: String,
        /// How long the interrupted wait had lasted.
        waited_ns: u64,
    },
    /// Writing to standard output failed (a closed pipe, a full disk).
    #[error("cannot write the output: {0}")]
    Output(#[source] std::io::Error),
    /// `nvbare list` could not read sysfs.
    #[error(transparent)]
    List(#[from] crate::pci::ListError),
    /// `nvbare bind` / `unbind` did not happen.
    #[error(transparent)]
    Setup(#[from] crate::setup::SetupError),
    /// `nvbare sim serve` could not start.
    #[error(transparent)]
    Serve(#[from] nvbare_sim::remote::ServeError),
    /// `nvbare sim serve --vfio-user SOCKET` could not start.
    #[error(transparent)]
    VfioUser(#[from] nvbare_sim::vfio_user::VfioUserError),
    /// `nvbare sim serve --trace FILE` could not write FILE.
    #[error("cannot write the trace to {}: {source}", path.display())]
    Trace {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `nvbare firmware` failed.
    #[error(transparent)]
    Firmware(#[from] nvbare_firmware_fetch::FetchError),
    /// `nvbare explain` was given a code no error has.
    #[error("{0:?} is not an nvbare error code; `nvbare explain` lists them all")]
    UnknownCode(String),
    /// The GPU reported a fault while work was waited for: the report in words, one line
    /// per fault after the first.
    #[error("{}", fault_text(report, *arch, kernel.as_ref()))]
    Fault {
        /// What faulted.
        report: Box<FaultReport>,
        /// The GPU's architecture, which names the codes.
        arch: Option<Arch>,
        /// The kernel that ran, to show a PC as `kernel+offset`.
        kernel: Option<FaultKernel>,
        /// How the wait ended.
        #[source]
        then: SemaphoreError,
    },
    /// A VBIOS could not be parsed (or read through the PROM window).
    #[error("the VBIOS of {from}: {source}")]
    Vbios {
        /// Where it came from (a file, a GPU).
        from: String,
        /// The failed check.
        #[source]
        source: nvbare_gsp::vbios::VbiosError,
    },
    /// The GPU layer failed (on any backend).
    #[error(transparent)]
    Gpu(GpuError<BackendError>),
}

/// The launched kernel's name and code range ([`KernelCode`], owned).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultKernel {
    /// Its name.
    pub name: String,
    /// GPU address of its first instruction.
    pub start: u64,
    /// Bytes of code.
    pub len: u64,
}

fn fault_text(report: &FaultReport, arch: Option<Arch>, kernel: Option<&FaultKernel>) -> String {
    let mut named = report.named(arch);
    if let Some(k) = kernel {
        named = named.in_kernel(KernelCode {
            name: &k.name,
            start: k.start,
            len: k.len,
        });
    }
    let what = match kernel {
        Some(k) => format!("kernel {} faulted", k.name),
        None => "the GPU reported a fault".to_owned(),
    };
    let mut s = what + ":";
    for line in named.lines() {
        s += "\n  ";
        s += &line;
    }
    s
}

impl CliError {
    /// A GPU fault turned into [`CliError::Fault`], its codes named for `arch` and its PC
    /// placed in `kernel`; any other error as it is.
    pub fn name_faults(self, arch: Option<Arch>, kernel: Option<FaultKernel>) -> CliError {
        match self {
            CliError::Gpu(GpuError::Fault { report, then }) => CliError::Fault {
                report,
                arch,
                kernel,
                then,
            },
            CliError::Fault {
                report,
                arch: a,
                kernel: k,
                then,
            } => CliError::Fault {
                report,
                arch: a.or(arch),
                kernel: k.or(kernel),
                then,
            },
            other => other,
        }
    }
}

/// `GpuError<E>` of any backend into [`CliError::Gpu`].
pub trait GpuResultExt<T> {
    /// The result with its error turned into a [`CliError`].
    fn cli(self) -> Result<T, CliError>;
}

impl<T, E> GpuResultExt<T> for Result<T, GpuError<E>>
where
    E: std::error::Error + 'static,
    BackendError: From<E>,
{
    fn cli(self) -> Result<T, CliError> {
        self.map_err(|e| CliError::Gpu(e.map_backend(BackendError::from)))
    }
}
