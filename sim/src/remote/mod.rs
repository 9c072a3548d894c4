//! The simulated GPUs served over tinygrad's remote PCI protocol, so that a driver that works
//! on silicon (tinygrad 0.14.0 with `REMOTE=host:port DEV=PCI+NV`) drives them unmodified.
//!
//! [`serve`] binds a TCP listener (loopback only unless the configuration allows otherwise),
//! makes `gpus` simulated GPUs of one chip that share one host memory (tinygrad treats the
//! devices behind one address as peers that share system memory), and answers each connection
//! on its own thread. The [`Server`] handle reports what was asked ([`ServeStats`]) and stops
//! everything when dropped or [`Server::stop`]ped.
//!
//! - [`protocol`]: the wire format.
//! - `session`: one connection: commands against the GPUs and the shared host memory.
//!
//! What each command does (facts from tinygrad's `system.py` and `shared/notes/tinygrad-remote.md`):
//! PROBE lists the GPUs whose ids match (names `0`, `1`, …: the dev_id of later calls);
//! MAP_BAR gives a BAR's bus address and size; CFG_READ/WRITE reach config space; RESET is a
//! function-level reset; MMIO_READ/WRITE reach BAR0 in 32-bit registers and BAR1 (VRAM, BAR1
//! in physical mode) at any length; MAP_SYSMEM allocates host memory and answers one bus
//! address per 4 KiB page and a handle; SYSMEM_READ/WRITE reach it by handle; RESIZE_BAR
//! succeeds for BAR1, which is already at least the size of VRAM; PING answers. Errors answer
//! a non-zero status and a UTF-8 text, except for the two streamed writes, which have no
//! response: a bad one closes the connection (the only way the protocol can refuse it).

pub mod protocol;
mod session;

use std::collections::HashMap;
use std::fmt;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::chip::SimChip;
use crate::device::{SimError, SimGpu};
use crate::faults::FaultPlan;
use crate::memory::SysMem;
use crate::trace::Trace;
use protocol::Command;

/// What to serve, and where.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// The chip every GPU simulates.
    pub chip: SimChip,
    /// Address to listen on (port 0 picks a free one; [`Server::addr`] says which).
    pub listen: SocketAddr,
    /// Number of GPUs (at least 1), sharing one host memory.
    pub gpus: u32,
    /// Faults injected into every GPU from the start ([`Server::gpus`] reaches each one to
    /// change them later).
    pub faults: FaultPlan,
    /// Listen on an address that is not loopback. The protocol has no authentication: anyone
    /// who reaches the port reads and writes the simulated GPUs' memory.
    pub allow_remote: bool,
    /// Record every GPU's BAR0, config and DMA traffic here (GPU `i` as index `i`).
    pub trace: Option<Arc<Trace>>,
}

impl ServeConfig {
    /// `gpus` GPUs of `chip` on `listen`, no faults, loopback only.
    pub fn new(chip: SimChip, listen: SocketAddr, gpus: u32) -> ServeConfig {
        ServeConfig {
            chip,
            listen,
            gpus,
            faults: FaultPlan::default(),
            allow_remote: false,
            trace: None,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listen address is not loopback and the configuration does not allow that.
    #[error(
        "refusing to listen on {0}: the remote PCI protocol has no authentication, so the \
         simulator listens on loopback only; use 127.0.0.1 or allow remote listening explicitly"
    )]
    NotLoopback(SocketAddr),
    /// Zero GPUs asked for.
    #[error("asked to serve 0 GPUs; serve at least one")]
    NoGpus,
    /// More GPUs than the simulated bus has room for.
    #[error(
        "asked to serve {0} GPUs; the simulated bus places at most {MAX_GPUS} (their 32-bit BAR0s \
         must fit below 4 GiB)"
    )]
    TooManyGpus(u32),
    /// The address could not be bound.
    #[error("could not listen on {addr}: {source}; pick a free port (0 picks one)")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A simulated GPU could not be made.
    #[error("could not make simulated GPU {index}: {source}")]
    Gpu {
        /// Which.
        index: u32,
        /// Why.
        #[source]
        source: SimError,
    },
    /// The accept thread could not be started.
    #[error("could not start the server's accept thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// Most GPUs one server makes: as many 32-bit BAR0s as fit between the first one and BAR3
/// ([`crate::device::BAR0_STRIDE`] apart).
// CAST: a handful (4 with the current layout).
pub const MAX_GPUS: u32 =
    ((crate::device::BAR3_BUS - crate::device::BAR0_BUS) / crate::device::BAR0_STRIDE) as u32;

/// Host-memory grants (MAP_SYSMEM) one connection may hold: the protocol has no free, so a
/// connection's grants only grow until it closes; tinygrad and nvbare hold a few hundred.
pub const MAX_GRANTS_PER_CONNECTION: usize = 4096;
/// Host-memory grants all connections together may hold.
pub const MAX_GRANTS: usize = 16384;
/// Connections served at once (one thread each); more are closed as they arrive.
pub const MAX_CONNECTIONS: usize = 32;

/// Host memory handed out by MAP_SYSMEM, by handle.
#[derive(Clone, Copy, Debug)]
struct SysmemGrant {
    /// The [`SysMem`] allocation id.
    id: u64,
    /// Its size.
    len: u64,
    /// The connection that asked for it (its memory goes when it closes).
    conn: u64,
}

/// Counters the sessions update.
#[derive(Debug)]
struct Counters {
    commands: [AtomicU64; 13],
    bytes_from_client: AtomicU64,
    bytes_to_client: AtomicU64,
    refused: AtomicU64,
    connections: AtomicU64,
}

/// State the accept loop and every session share.
#[derive(Debug)]
struct Shared {
    gpus: Vec<Arc<SimGpu>>,
    sysmem: Arc<SysMem>,
    grants: Mutex<HashMap<u32, SysmemGrant>>,
    counters: Counters,
    /// The most recent refusals, for diagnostics (oldest dropped).
    refusals: Mutex<Vec<String>>,
    stop: AtomicBool,
    started: Instant,
    /// Open connections (a clone of each stream, to shut it down on stop) and their threads.
    conns: Mutex<Vec<(TcpStream, JoinHandle<()>)>>,
}

/// How many refusal texts [`ServeStats`] keeps.
const KEEP_REFUSALS: usize = 64;

impl Shared {
    fn lock_grants(&self) -> MutexGuard<'_, HashMap<u32, SysmemGrant>> {
        self.grants.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn count(&self, cmd: Command) {
        self.counters.commands[usize::from(cmd.wire())].fetch_add(1, Ordering::Relaxed);
    }

    fn refused(&self, text: String) {
        log::warn!(target: "nvbare_sim", "remote: {text}");
        self.counters.refused.fetch_add(1, Ordering::Relaxed);
        let mut r = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        if r.len() == KEEP_REFUSALS {
            r.remove(0);
        }
        r.push(text);
    }

    /// Frees the host memory connection `conn` asked for.
    fn release_connection(&self, conn: u64) {
        let mut g = self.lock_grants();
        g.retain(|_, grant| {
            if grant.conn == conn {
                self.sysmem.free(grant.id);
                false
            } else {
                true
            }
        });
    }
}

/// What the server was asked, so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeStats {
    /// Commands by type, in wire order, with how often each came.
    pub commands: Vec<(Command, u64)>,
    /// Data bytes the clients sent (MMIO_WRITE, SYSMEM_WRITE and PROBE payloads).
    pub bytes_from_client: u64,
    /// Data bytes sent back (MMIO_READ, SYSMEM_READ, PROBE and MAP_SYSMEM data).
    pub bytes_to_client: u64,
    /// Requests refused (error responses and closed connections).
    pub refused: u64,
    /// The latest refusals' texts.
    pub refusals: Vec<String>,
    /// Connections accepted.
    pub connections: u64,
    /// Time since the server started.
    pub uptime: Duration,
}

impl ServeStats {
    /// How often `cmd` came.
    pub fn count(&self, cmd: Command) -> u64 {
        self.commands
            .iter()
            .find(|(c, _)| *c == cmd)
            .map_or(0, |(_, n)| *n)
    }
}

impl fmt::Display for ServeStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total: u64 = self.commands.iter().map(|(_, n)| n).sum();
        write!(f, "{total} commands (")?;
        let mut first = true;
        for (c, n) in self.commands.iter().filter(|(_, n)| *n > 0) {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{c} {n}")?;
        }
        // CAST: display only.
        write!(
            f,
            "); {:.2} MB from the client, {:.2} MB to it; {} refused; {} connection(s); {:.2} s",
            self.bytes_from_client as f64 / 1e6,
            self.bytes_to_client as f64 / 1e6,
            self.refused,
            self.connections,
            self.uptime.as_secs_f64()
        )
    }
}

/// A running server. Dropping it stops it.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

/// Starts serving `config.gpus` simulated GPUs on `config.listen`.
pub fn serve(config: ServeConfig) -> Result<Server, ServeError> {
    if !config.listen.ip().is_loopback() && !config.allow_remote {
        return Err(ServeError::NotLoopback(config.listen));
    }
    if config.gpus == 0 {
        return Err(ServeError::NoGpus);
    }
    if config.gpus > MAX_GPUS {
        return Err(ServeError::TooManyGpus(config.gpus));
    }
    let sysmem = Arc::new(SysMem::new());
    let gpus = (0..config.gpus)
        .map(|index| {
            // tinygrad's remote protocol stands for its PCI driver in VFIO's no-IOMMU mode:
            // bus addresses are physical, so address 0 is host RAM (see FaultPlan::no_iommu).
            let faults = FaultPlan {
                no_iommu: true,
                ..config.faults.clone()
            };
            SimGpu::on_bus(config.chip, sysmem.clone(), index, faults)
                .map(Arc::new)
                .map_err(|source| ServeError::Gpu { index, source })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(t) = &config.trace {
        for (i, g) in (0u32..).zip(&gpus) {
            g.set_trace(t.clone(), i);
        }
    }
    let listener = TcpListener::bind(config.listen).map_err(|source| ServeError::Bind {
        addr: config.listen,
        source,
    })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: config.listen,
        source,
    })?;
    let shared = Arc::new(Shared {
        gpus,
        sysmem,
        grants: Mutex::new(HashMap::new()),
        counters: Counters {
            commands: Default::default(),
            bytes_from_client: AtomicU64::new(0),
            bytes_to_client: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            connections: AtomicU64::new(0),
        },
        refusals: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
        started: Instant::now(),
        conns: Mutex::new(Vec::new()),
    });
    let s = shared.clone();
    let accept = std::thread::Builder::new()
        .name("sim-remote-accept".into())
        .spawn(move || accept_loop(listener, s))
        .map_err(ServeError::Thread)?;
    log::info!(
        target: "nvbare_sim",
        "remote: serving {} simulated {} GPU(s) on {addr}",
        config.gpus,
        config.chip.spec().name
    );
    Ok(Server {
        addr,
        shared,
        accept: Some(accept),
    })
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut next_conn = 0u64;
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::Acquire) {
            break;
        }
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                log::warn!(target: "nvbare_sim", "remote: accept failed: {e}");
                continue;
            }
        };
        let live = {
            let mut c = shared.conns.lock().unwrap_or_else(|p| p.into_inner());
            c.retain(|(_, t)| !t.is_finished());
            c.len()
        };
        if live >= MAX_CONNECTIONS {
            shared.refused(format!(
                "connection from {:?} closed: {MAX_CONNECTIONS} connections are served already",
                stream.peer_addr().ok()
            ));
            let _ = stream.shutdown(std::net::Shutdown::Both);
            continue;
        }
        next_conn += 1;
        shared.counters.connections.fetch_add(1, Ordering::Relaxed);
        let Ok(closer) = stream.try_clone() else {
            continue;
        };
        let s = shared.clone();
        let conn = next_conn;
        let spawned = std::thread::Builder::new()
            .name(format!("sim-remote-{conn}"))
            .spawn(move || {
                session::run(&s, conn, stream);
                s.release_connection(conn);
            });
        match spawned {
            Ok(t) => {
                let mut c = shared.conns.lock().unwrap_or_else(|p| p.into_inner());
                // Forget connections that already ended.
                c.retain(|(_, t)| !t.is_finished());
                c.push((closer, t));
            }
            Err(e) => log::warn!(target: "nvbare_sim", "remote: no thread for a connection: {e}"),
        }
    }
}

impl Server {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The simulated GPUs, by dev_id.
    pub fn gpus(&self) -> &[Arc<SimGpu>] {
        &self.shared.gpus
    }

    /// The host memory they share.
    pub fn sysmem(&self) -> &Arc<SysMem> {
        &self.shared.sysmem
    }

    /// What was asked so far.
    pub fn stats(&self) -> ServeStats {
        let c = &self.shared.counters;
        ServeStats {
            commands: Command::ALL
                .iter()
                .map(|&cmd| {
                    (
                        cmd,
                        c.commands[usize::from(cmd.wire())].load(Ordering::Relaxed),
                    )
                })
                .collect(),
            bytes_from_client: c.bytes_from_client.load(Ordering::Relaxed),
            bytes_to_client: c.bytes_to_client.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
            refusals: self
                .shared
                .refusals
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            connections: c.connections.load(Ordering::Relaxed),
            uptime: self.shared.started.elapsed(),
        }
    }

    /// Stops accepting, closes every connection and waits for their threads.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if self.shared.stop.swap(true, Ordering::AcqRel) {
            return;
        }
        // Wake the accept loop with a connection of our own.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        let conns =
            std::mem::take(&mut *self.shared.conns.lock().unwrap_or_else(|p| p.into_inner()));
        for (stream, thread) in conns {
            let _ = stream.shutdown(std::net::Shutdown::Both);
            let _ = thread.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}
