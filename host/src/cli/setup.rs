//! The set-up commands: `nvbare list`, `bind`, `unbind` (over `crate::pci` and
//! `crate::setup`), and `nvbare sim serve` (the simulator behind tinygrad's remote protocol).

use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand};
use nvbare_core::hal::{Wait, poll_until};
use nvbare_sim::chip::SimChip;
use nvbare_sim::remote::{ServeConfig, ServeStats, serve};
use nvbare_sim::trace::Trace;
use nvbare_sim::trace::names::RegisterNames;

use super::error::CliError;
use crate::clock::HostClock;
use crate::pci::{self, Sysfs};

/// `nvbare list` options.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// Print a JSON array instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `nvbare list [--json]` on the tree `sysfs`.
pub fn list(sysfs: &Sysfs, a: &ListArgs) -> Result<String, CliError> {
    let funcs = pci::scan(sysfs).map_err(|source| pci::ListError {
        path: sysfs.devices_dir(),
        source,
    })?;
    Ok(pci::render_list(&funcs, a.json))
}

/// `nvbare sim ...`
#[derive(Subcommand, Debug)]
pub enum SimCommand {
    /// Serve simulated GPUs over tinygrad's remote PCI protocol until Ctrl-C, then print what
    /// was asked (tinygrad: REMOTE=127.0.0.1:6667 DEV=PCI+NV python3 ...).
    Serve(ServeArgs),
}

/// `nvbare sim serve` options.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The chip every GPU simulates: gh100 (an H200), gb100 (a B200), gb202 (an RTX 5090), or
    /// on the booter path ga102 (an RTX 3090), ad102 (an RTX 4090) or tu102 (an RTX 2080 Ti).
    #[arg(long, value_parser = parse_chip)]
    pub chip: SimChip,
    /// Address to listen on (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:6667")]
    pub listen: SocketAddr,
    /// Number of GPUs, sharing one host memory.
    #[arg(long, default_value_t = 1)]
    pub gpus: u32,
    /// Listen on an address that is not loopback. The protocol has no authentication: anyone
    /// who reaches the port reads and writes the simulated GPUs' memory.
    #[arg(long)]
    pub allow_remote: bool,
    /// Record every BAR0 and config access, reset and DMA range into FILE (written when the
    /// server stops; repeated polls collapsed).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// NVIDIA's published hwref headers (a `swref/published` directory) to name the trace's
    /// registers from; default `$NVBARE_REFERENCE/open-gpu-kernel-modules-570.144/src/common/
    /// inc/swref/published`. Without them the trace has offsets only.
    #[arg(long, value_name = "DIR", requires = "trace")]
    pub hwref: Option<PathBuf>,
    /// Serve one GPU as a vfio-user PCI device on the Unix socket SOCKET instead (QEMU >= 10.1:
    /// `-device vfio-user-pci,socket=SOCKET`; the guest binds it to vfio-pci). BAR1 is cut to
    /// 256 MiB, which a guest's PCI hole places. SIGUSR1 unplugs the GPU (it falls off the bus).
    #[arg(long, value_name = "SOCKET", conflicts_with_all = ["gpus", "allow_remote", "trace", "listen"])]
    pub vfio_user: Option<PathBuf>,
}

/// Where `--hwref` defaults to, under `$NVBARE_REFERENCE`.
const PUBLISHED: &str = "open-gpu-kernel-modules-570.144/src/common/inc/swref/published";

/// `--chip` of the simulator: `gh100`, `gb100`, `gb202`, `ga102`, `ad102` or `tu102`.
pub(super) fn parse_chip(s: &str) -> Result<SimChip, String> {
    SimChip::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = SimChip::ALL.iter().map(|c| c.spec().name).collect();
        let list = match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.join(""),
        };
        format!("{s:?}: the simulator has {list}")
    })
}

/// `nvbare sim serve --vfio-user SOCKET`: serves until `stop` says so, then prints what the
/// client asked and what was refused.
pub fn sim_serve_vfio_user(
    a: &ServeArgs,
    socket: &Path,
    stop: impl Fn() -> bool,
    out: &mut impl Write,
) -> Result<(), CliError> {
    use nvbare_sim::vfio_user::{VfioUserConfig, protocol::Command};
    let mut server = nvbare_sim::vfio_user::serve(VfioUserConfig {
        chip: a.chip,
        socket: socket.to_path_buf(),
        // NVBARE_VFIO_USER_NO_IOMMU=1: the guest has no IOMMU, so the bus addresses a driver
        // gives the GPU are physical and address 0 is RAM (FaultPlan::no_iommu): an
        // unprogrammed sysmem flush buffer then reads RAM instead of faulting, as on such a
        // machine (tinygrad 0.14.0 never programs it; tests/vm/run's guest without an IOMMU).
        faults: nvbare_sim::faults::FaultPlan {
            no_iommu: std::env::var_os("NVBARE_VFIO_USER_NO_IOMMU").is_some_and(|v| v == "1"),
            ..Default::default()
        },
        // NVBARE_VFIO_USER_BAR1_MMAP=1: BAR1 mapped from the VRAM's memfd. Off by default:
        // under QEMU's TCG the guest's GSP-RM boot measured 6-8x slower with it (BENCHMARKS.md),
        // though BAR1-bound work (the vector add) ran 400x faster.
        bar1_mmap: std::env::var_os("NVBARE_VFIO_USER_BAR1_MMAP").is_some_and(|v| v == "1"),
    })?;
    let spec = a.chip.spec();
    writeln!(
        out,
        "serving a simulated {} (10de:{:04x}) as a vfio-user device on {} (QEMU: -device \
         vfio-user-pci,socket={}); BAR1 {} MiB of the chip's {} GiB (a guest's PCI hole){}; \
         Ctrl-C stops",
        spec.name,
        spec.device_id,
        socket.display(),
        socket.display(),
        server.guest_bar1() >> 20,
        server.gpu().bar(1).map_or(0, |(_, s)| s >> 30),
        if server.gpu().bus().vram.file().is_some() {
            ", mmapped from a memfd"
        } else {
            ", every access a message"
        },
    )
    .map_err(CliError::Output)?;
    out.flush().map_err(CliError::Output)?;
    // TIMEOUT: none: the server runs until the user stops it; the poll only looks at the
    // stop flag every 100 ms.
    let forever = Wait::pausing("Ctrl-C", u64::MAX, 100_000_000);
    // SIGUSR1: the GPU falls off the bus while a client drives it (reads all ones, writes
    // dropped, no reset), as a GPU does on surprise removal. Killing the server instead would
    // take QEMU down with it (QEMU 11.1.3 aborts when a vfio-user server's socket closes:
    // util/error.c error_setv assertion, tests/vm/run).
    super::interrupt::install_unplug();
    let mut unplugged = false;
    let _ = poll_until(&HostClock::new(), forever, || {
        if !unplugged && super::interrupt::unplug_requested() {
            server.gpu().unplug();
            unplugged = true;
        }
        stop().then_some(())
    });
    if unplugged {
        writeln!(
            out,
            "SIGUSR1: the GPU was unplugged while served (BAR and config reads all ones, writes \
             dropped)"
        )
        .map_err(CliError::Output)?;
    }
    server.stop();
    let asked: Vec<String> = [
        Command::RegionRead,
        Command::RegionWrite,
        Command::DmaMap,
        Command::DmaUnmap,
        Command::DeviceReset,
    ]
    .iter()
    .map(|&c| format!("{c:?} {}", server.requests(c)))
    .collect();
    writeln!(out, "stopped: {}", asked.join(", ")).map_err(CliError::Output)?;
    for e in server.ended() {
        writeln!(out, "  connection: {e}").map_err(CliError::Output)?;
    }
    let unreachable = server.unreachable();
    if let Some(first) = unreachable.first() {
        writeln!(
            out,
            "  {} DMA mapping(s) without a descriptor, unreachable by the GPU; first: {first}",
            unreachable.len()
        )
        .map_err(CliError::Output)?;
    }
    for r in server.refusals() {
        writeln!(out, "  refused: {r}").map_err(CliError::Output)?;
    }
    if std::env::var_os("NVBARE_SIM_LOG").is_some() {
        for l in server.gpu().log().lines() {
            writeln!(out, "  sim: {l:?}").map_err(CliError::Output)?;
        }
    }
    Ok(())
}

/// Runs the server of `a` until `stop` says so (checked every 100 ms), writing its address
/// first and its statistics last to `out`.
pub fn sim_serve(
    a: &ServeArgs,
    stop: impl Fn() -> bool,
    out: &mut impl Write,
) -> Result<ServeStats, CliError> {
    // Create the trace file first: a path that cannot be written fails before serving.
    let trace_file = match &a.trace {
        Some(p) => Some((p, File::create(p).map_err(|source| trace_error(p, source))?)),
        None => None,
    };
    let trace = trace_file.as_ref().map(|_| Arc::new(Trace::new()));
    let config = ServeConfig {
        allow_remote: a.allow_remote,
        trace: trace.clone(),
        ..ServeConfig::new(a.chip, a.listen, a.gpus)
    };
    let server = serve(config)?;
    let addr = server.addr();
    let name = a.chip.spec().name;
    writeln!(
        out,
        "serving {} simulated {name} GPU(s) on {addr} (tinygrad: REMOTE={addr} DEV=PCI+NV); \
         Ctrl-C stops",
        a.gpus
    )
    .map_err(CliError::Output)?;
    out.flush().map_err(CliError::Output)?;
    // TIMEOUT: none: the server runs until the user stops it; the poll only looks at the
    // stop flag every 100 ms.
    let forever = Wait::pausing("Ctrl-C", u64::MAX, 100_000_000);
    let _ = poll_until(&HostClock::new(), forever, || stop().then_some(()));
    let stats = server.stats();
    server.stop();
    writeln!(out, "stopped: {stats}").map_err(CliError::Output)?;
    for r in &stats.refusals {
        writeln!(out, "  refused: {r}").map_err(CliError::Output)?;
    }
    if let (Some((path, file)), Some(trace)) = (trace_file, trace) {
        let dir = a.hwref.clone().or_else(|| {
            std::env::var_os("NVBARE_REFERENCE").map(|r| PathBuf::from(r).join(PUBLISHED))
        });
        let names = dir.map_or_else(RegisterNames::none, |d| {
            RegisterNames::from_published(&d, name)
        });
        let mut w = std::io::BufWriter::new(file);
        trace
            .write_text(&mut w, &names)
            .and_then(|()| w.flush())
            .map_err(|source| trace_error(path, source))?;
        writeln!(
            out,
            "trace: {} events, {} DMA ranges, {} register names -> {}",
            trace.events().len(),
            trace.dma().len(),
            names.len(),
            path.display()
        )
        .map_err(CliError::Output)?;
    }
    Ok(stats)
}

fn trace_error(path: &Path, source: std::io::Error) -> CliError {
    CliError::Trace {
        path: path.to_path_buf(),
        source,
    }
}
