use clap::{Parser, Subcommand};
use nvbare_host::cli;

/// nvbare: a Rust driver for NVIDIA GPUs that needs no NVIDIA kernel module.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// More log output on stderr: -v for info, -vv for debug, -vvv for trace (RUST_LOG, when
    /// set, takes precedence: RUST_LOG=nvbare_core=trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List NVIDIA PCI functions: address, device id, bound driver, IOMMU group.
    List,
    /// Firmware: fetch, verify and cache GSP-RM 570.144 (`nvbare firmware fetch --chip gh100`).
    Firmware {
        #[command(subcommand)]
        command: nvbare_firmware_fetch::FirmwareCommand,
    },
    /// Attach to a GPU and print chip, SMs, VRAM, classes and driver version.
    Info(cli::GpuArgs),
    /// Load a cubin and run one kernel.
    Run(cli::RunArgs),
    /// Launch latency, launch throughput, copy bandwidth, alloc+map cost.
    Bench(cli::BenchArgs),
}

fn main() {
    let cli = Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format_timestamp_micros()
        .init();
    let result = match cli.command {
        Command::List => nvbare_host::pci::list(false).map_err(|e| e.to_string()),
        Command::Firmware { command } => {
            nvbare_firmware_fetch::run(command).map_err(|e| e.to_string())
        }
        Command::Info(a) => cli::info(&a).map_err(|e| e.to_string()),
        Command::Run(a) => cli::run(&a).map_err(|e| e.to_string()),
        Command::Bench(a) => cli::bench(&a).map_err(|e| e.to_string()),
    };
    if let Err(e) = result {
        eprintln!("nvbare: {e}");
        std::process::exit(1);
    }
}
