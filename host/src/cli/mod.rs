//! The command line of `nvbare`: its definition ([`Cli`], also the source of the shell
//! completions and the man page), the commands, and how errors are printed (each with its
//! stable code, [`codes`]).
//!
//! - [`gpu`]: backend and device options, the one place a GPU is opened; [`gsp`]: the
//!   backends on which nvbare boots GSP-RM itself (vfio, sim, remote), with the firmware
//!   from [`firmware`].
//! - [`info`]: `nvbare info`; [`demo`]: `nvbare demo`.
//! - [`run`] (with [`args`], [`values`] and [`transfer`]): `nvbare run`.
//! - [`setup`]: `list`, `bind`, `unbind`, `sim serve`.
//! - [`vbios`]: `nvbare vbios`.
//! - [`error`], [`codes`]: the error type and its codes.
//! - [`interrupt`]: what Ctrl-C does.
//! - [`help`]: the version text, the environment variables, completions and the man page.

pub mod args;
pub mod codes;
pub mod demo;
pub mod error;
pub mod firmware;
pub mod gpu;
pub mod gsp;
pub mod help;
pub mod info;
pub mod interrupt;
pub mod run;
pub mod setup;
pub mod transfer;
pub mod values;
pub mod vbios;

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use nvbare_core::gpu::{Backend, Gpu};

use crate::bench::{self, BenchError};
use error::{BackendError, CliError, GpuResultExt};
use gpu::{GpuArgs, GpuTask, Opened};

/// nvbare: a Rust driver for NVIDIA GPUs that needs no NVIDIA kernel module.
#[derive(Parser, Debug)]
#[command(
    name = "nvbare",
    version = help::version(),
    about,
    after_help = help::ENVIRONMENT
)]
pub struct Cli {
    /// More log output on stderr: -v for info, -vv for debug, -vvv for trace (RUST_LOG, when
    /// set, takes precedence: RUST_LOG=nvbare_core=trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// `nvbare`'s commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// List NVIDIA GPUs: address, device id, chip, bound driver, IOMMU group, VFIO readiness.
    List(setup::ListArgs),
    /// Hand a GPU to vfio-pci (driver_override), after checking the IOMMU, its group and that
    /// nothing holds it through NVIDIA's driver (needs root).
    Bind {
        /// The GPU's PCI address (0000:41:00.0 or 41:00.0, as `nvbare list` prints it).
        bdf: String,
    },
    /// Give a GPU back from vfio-pci to the driver that claims it (needs root).
    Unbind {
        /// The GPU's PCI address.
        bdf: String,
    },
    /// Firmware: fetch, verify and cache GSP-RM 570.144 (`nvbare firmware fetch --chip gh100`).
    Firmware {
        #[command(subcommand)]
        command: nvbare_firmware_fetch::FirmwareCommand,
    },
    /// nvbare end to end: boot GSP-RM on a simulated GH100 and run checked work on it.
    ///
    /// By default a simulated GH100 in this process (said plainly); --chip NAME for another
    /// simulated chip (--chip lists them all); a real GPU with --backend vfio --device BDF; one behind tinygrad's
    /// remote protocol with --backend remote --device HOST:PORT. Prints the boot timeline
    /// (ms per stage), the GPU's details, runs a 256 MiB copy round trip (host -> VRAM ->
    /// host, random data, checked byte for byte) and a vector add (checked element by
    /// element), then tears the GPU down (UNLOADING_GUEST_DRIVER, DMA memory freed).
    Demo(demo::DemoArgs),
    /// Attach to a GPU and print chip, SMs, VRAM, classes and driver version (and, where
    /// nvbare boots GSP-RM itself, the boot timeline).
    Info(InfoArgs),
    /// Load a cubin and run one kernel with buffers and scalars; read the buffers back.
    Run(run::RunArgs),
    /// Launch latency, launch throughput, copy bandwidth, alloc+map cost.
    Bench(BenchArgs),
    /// What a VBIOS holds (a file, or a GPU's through BAR0's PROM window or sysfs): its
    /// images, BIT tokens, falcon ucode table, FWSEC's descriptor, signatures and DMEM mapper.
    Vbios(vbios::VbiosArgs),
    /// The simulated GPU.
    Sim {
        #[command(subcommand)]
        command: setup::SimCommand,
    },
    /// What an error code means and what to do (`nvbare explain NVB-E104`); every code
    /// without one.
    Explain {
        /// The code (NVB-E104, E104 or 104).
        code: Option<String>,
    },
    /// Print shell completions for SHELL (`nvbare completions bash > /etc/bash_completion.d/nvbare`).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), generated from this command line (`nvbare man | man -l -`).
    Man {
        /// Write nvbare.1 and a page per subcommand (nvbare-run.1, ...) into DIR instead.
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}

/// `nvbare info` options.
#[derive(Args, Debug)]
pub struct InfoArgs {
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// Print one JSON object instead of the text.
    #[arg(long)]
    pub json: bool,
}

/// `nvbare bench` options.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Only the launch figures (on sm_120, GB20x, only these: the benchmark's copy kernels
    /// are built for sm_90 and sm_100).
    #[arg(long)]
    pub launch_only: bool,
    /// Few, small repetitions (200 launches per figure, 64 MiB copies): a smoke test of the
    /// benchmark, not figures to compare.
    #[arg(long, conflicts_with = "study")]
    pub quick: bool,
    /// Instead of the figures: where a launch round trip's time goes, and
    /// launch choices compared in one process.
    #[arg(long, conflicts_with_all = ["json", "launch_only"])]
    pub study: bool,
    /// Instead of the figures: N chunks copied in, through an SM kernel and out again,
    /// overlapped, with the queues waiting for each other on the GPU (8 x 64 MiB; 4 x 4 MiB
    /// with --quick); compare with host/bench-results/cuda_pipeline.cu.
    #[arg(long, conflicts_with_all = ["study", "launch_only"])]
    pub pipeline: bool,
    /// Instead of the figures: the copy engines RM reports (caps, physical units), which
    /// one the copy channel runs on, and 1 GiB device-to-device copies through it in
    /// several launch shapes (64 MiB with --quick).
    #[arg(long, conflicts_with_all = ["study", "launch_only", "pipeline", "json"])]
    pub ce_study: bool,
    /// The cubin whose `empty_kernel`, `store_value` and `vector_add` the launch, replay and
    /// ordering figures launch, instead of the committed test kernels for the GPU's SM (to
    /// measure other builds of the same kernels).
    #[arg(long, env = "NVBARE_BENCH_KERNELS", value_name = "CUBIN")]
    pub kernels: Option<std::path::PathBuf>,
    /// Record the replay and ordering figures' launches as programmatic dependent launches,
    /// with kernels that wait for their predecessors themselves (`griddepcontrol.wait`):
    /// host/data/pdl_kernels.cu's, unless --kernels gives others (which must wait too, or the
    /// ordering check fails); sm_90 and sm_100.
    #[arg(long, env = "NVBARE_BENCH_PROGRAMMATIC")]
    pub programmatic: bool,
    /// The SM kernel of the device-to-device copy (a kernel of host/data/bench_kernels.cu).
    #[arg(long, env = "NVBARE_D2D_KERNEL", default_value = "copy_flat")]
    pub d2d_kernel: String,
    /// The SM copy's shape, A,THREADS: elements per thread (copy_flat*) or blocks per SM
    /// (grid-stride kernels), and threads per block [default: 1,256 flat, 8,512 grid-stride].
    #[arg(long, env = "NVBARE_D2D", value_parser = parse_pair)]
    pub d2d_shape: Option<(u32, u32)>,
}

fn parse_pair(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("{s:?}: give A,THREADS"))?;
    let n = |p: &str| p.trim().parse::<u32>().map_err(|e| format!("{p:?}: {e}"));
    Ok((n(a)?, n(b)?))
}

/// `nvbare bench` on an open GPU.
struct Bench<'a>(&'a BenchArgs);

impl GpuTask for Bench<'_> {
    type Output = String;

    fn run<B: Backend>(&mut self, gpu: &mut Gpu<B>, _opened: &Opened) -> Result<String, CliError>
    where
        BackendError: From<B::Error>,
    {
        let a = self.0;
        let stopped = |e: BenchError<B::Error>| match e {
            BenchError::Gpu(e) => Err::<String, _>(e).cli(),
            BenchError::Stopped { waited_ns } => Err(CliError::Interrupted {
                during: "benchmarking".into(),
                waited_ns,
            }),
            BenchError::WrongData { what, byte } => Err(CliError::WrongResult {
                what: what.into(),
                detail: format!("first differing byte at {byte}"),
            }),
        };
        if a.study {
            return crate::study::run(gpu, interrupt::requested).or_else(stopped);
        }
        if a.ce_study {
            return crate::ce_study::run(gpu, a.quick, interrupt::requested).or_else(stopped);
        }
        if a.pipeline {
            return crate::pipeline::run(gpu, a.quick, interrupt::requested)
                .map(|f| {
                    if a.json {
                        f.to_json() + "\n"
                    } else {
                        f.to_table()
                    }
                })
                .or_else(stopped);
        }
        let kernels = match &a.kernels {
            Some(path) => Some(run::read("benchmark kernels", path)?),
            None => None,
        };
        let opts = bench::Options {
            kernels,
            programmatic: a.programmatic,
            launch_only: a.launch_only,
            quick: a.quick,
            d2d_kernel: a.d2d_kernel.clone(),
            d2d_shape: a.d2d_shape,
            stop: interrupt::requested,
        };
        bench::run(gpu, &opts)
            .map(|f| {
                if a.json {
                    f.to_json() + "\n"
                } else {
                    f.to_table() + "\n"
                }
            })
            .or_else(stopped)
    }
}

fn print(out: &mut impl Write, text: &str) -> Result<(), CliError> {
    out.write_all(text.as_bytes()).map_err(CliError::Output)
}

/// Runs `command`, its output to `out` (warnings go to stderr).
pub fn dispatch(command: Command, out: &mut impl Write) -> Result<(), CliError> {
    match command {
        Command::List(a) => print(out, &setup::list(&crate::pci::Sysfs::system(), &a)?),
        Command::Bind { bdf } => print(out, &format!("{}\n", crate::setup::bind(&bdf)?)),
        Command::Unbind { bdf } => print(out, &format!("{}\n", crate::setup::unbind(&bdf)?)),
        Command::Firmware { command } => Ok(nvbare_firmware_fetch::run(command)?),
        Command::Demo(a) => {
            interrupt::install();
            demo::run(&a, out)
        }
        Command::Info(a) => {
            interrupt::install();
            print(
                out,
                &gpu::with_gpu(&a.gpu, &mut info::Info { json: a.json })?,
            )
        }
        Command::Run(a) => {
            a.gpu.target()?;
            let mut plan = run::RunPlan::new(&a)?;
            for w in &plan.warnings {
                eprintln!("nvbare: warning: {w}");
            }
            interrupt::install();
            let lines = gpu::with_gpu(&a.gpu, &mut plan)?;
            print(out, &(lines.join("\n") + "\n"))
        }
        Command::Bench(a) => {
            interrupt::install();
            print(out, &gpu::with_gpu(&a.gpu, &mut Bench(&a))?)
        }
        Command::Sim {
            command: setup::SimCommand::Serve(a),
        } => {
            interrupt::install();
            match &a.vfio_user {
                Some(socket) => setup::sim_serve_vfio_user(&a, socket, interrupt::requested, out),
                None => setup::sim_serve(&a, interrupt::requested, out).map(|_| ()),
            }
        }
        Command::Vbios(a) => print(out, &vbios::run(&a)?),
        Command::Explain { code } => print(out, &codes::explain(code.as_deref())?),
        Command::Completions { shell } => help::completions(shell, out),
        Command::Man { dir } => help::man(dir.as_deref(), out),
    }
}

/// The line `nvbare` prints for `e` (more lines follow for a fault report).
pub fn error_text(e: &CliError) -> String {
    format!("nvbare: error[{}]: {e}", e.code().code)
}

/// Set once an error was printed before the command returned it ([`report_error_early`]).
static ERROR_PRINTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Prints `e` as [`main`] would, now, and makes [`main`] print it no second time: for an
/// error the user must see before a slow step that follows it (releasing a vanished GPU).
pub fn report_error_early(e: &CliError) {
    eprintln!("{}", error_text(e));
    ERROR_PRINTED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// `nvbare`'s `main`: parses the command line, sets up logging, runs the command and prints
/// its error, if any, with its code. Exit status: 0, 1 for an error, 2 for a command line
/// that is not understood, 130 after Ctrl-C.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            let _ = e.print();
            eprintln!(
                "nvbare: error[{}]: {}",
                codes::USAGE.code,
                codes::USAGE.title
            );
            return ExitCode::from(2);
        }
    };
    let level = match cli.verbose {
        // The simulator warns of every call its GSP-RM refuses, as RM would log it; nvbare
        // handles those (a copy engine a GB202 lacks), so they show from -v on.
        0 => "warn,nvbare_sim=error",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format_timestamp_micros()
        .init();
    match dispatch(cli.command, &mut std::io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`nvbare man | head`): nothing more to say, as other tools.
        Err(CliError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            if !ERROR_PRINTED.load(std::sync::atomic::Ordering::Relaxed) {
                eprintln!("{}", error_text(&e));
            }
            log::debug!("{e:?}");
            match e {
                // CAST: 130 fits a u8.
                CliError::Interrupted { .. } => ExitCode::from(interrupt::EXIT_INTERRUPTED as u8),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

#[cfg(test)]
mod tests;
