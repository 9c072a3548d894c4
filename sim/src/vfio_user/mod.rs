//! The simulated GPU as a vfio-user server: QEMU's `-device vfio-user-pci,socket=PATH` makes it
//! an ordinary PCI device of a guest, which the guest's kernel binds to `vfio-pci` as it would
//! a real GPU. The protocol is QEMU's `docs/interop/vfio-user.rst`.
//!
//! [`serve`] binds the Unix socket, makes one simulated GPU and answers one client at a time
//! on its own thread (QEMU connects once, at start). What the client gets:
//! - regions: BAR0 (registers, 32-bit accesses), BAR1 (VRAM in physical mode, at most
//!   [`GUEST_BAR1_MAX`]: a guest's PCI hole cannot place the chip's own 32–256 GiB BAR1;
//!   `info` says so), BAR3 (listed, its accesses refused), config space (4 KiB, with PM and
//!   PCIe capabilities; an FLR through PCIe Device Control resets the GPU). BAR1 is
//!   mmappable (with [`VfioUserConfig::bar1_mmap`]): REGION_INFO's reply carries the memory
//!   file (`memfd`, [`crate::memory::Vram::shareable`]) that holds the VRAM BAR1 shows (its
//!   first [`GUEST_BAR1_MAX`] bytes; the rest stays anonymous memory), so QEMU maps it into the guest
//!   and the guest's BAR1 accesses reach VRAM with no message; every other access is a
//!   message. A mapped BAR1 outlives a GPU that is gone (the guest keeps reading VRAM, not
//!   all-ones), as the mapping stays valid while the client holds it.
//! - DMA: DMA_MAP's file descriptor is mapped and put on the GPU's bus at the IOVA given, so
//!   the GPU reaches guest memory exactly where the guest's IOMMU mapped it; any other
//!   address stays an IOMMU fault. A map without a descriptor is accepted and unreachable (a
//!   DMA there faults too): the client must share its memory for DMA (QEMU's
//!   `memory-backend-memfd,share=on`); its ROMs come without one.
//! - IRQs: INTx listed; the eventfds are accepted and never signalled (drivers poll).
//! - DEVICE_RESET: [`SimGpu::reset`].
//!
//! Hostile input: every length is checked against the header and a 1 MiB transfer limit
//! before anything is allocated; a malformed message gets an error reply and the connection
//! is closed, a refused request an error reply. When a client goes, its DMA mappings go, and
//! the GPU is reset, as vfio-pci resets a device its user closes.

pub mod protocol;
mod region;
mod session;

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::chip::SimChip;
use crate::device::{SimError, SimGpu};
use crate::faults::FaultPlan;

pub use session::SessionEnd;

/// The most of BAR1 a guest gets: 256 MiB, which QEMU's default 64-bit PCI hole places.
pub const GUEST_BAR1_MAX: u64 = 256 << 20;

/// What to serve, and where.
#[derive(Clone, Debug)]
pub struct VfioUserConfig {
    pub chip: SimChip,
    /// The Unix socket's path (must not exist).
    pub socket: PathBuf,
    pub faults: FaultPlan,
    /// Give the client BAR1 as a memory file it maps (REGION_INFO's MMAP flag and the VRAM's
    /// memfd), so the guest's BAR1 accesses reach VRAM directly instead of one message each.
    pub bar1_mmap: bool,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum VfioUserError {
    #[error("{0} exists; remove it if no server is using it")]
    SocketExists(PathBuf),
    #[error("cannot listen on {path}: {source}")]
    Bind {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Gpu(#[from] SimError),
    #[error("could not start the server's thread: {0}")]
    Thread(std::io::Error),
    #[error(
        "NVBARE_VFIO_USER_BAR1={0:?}: say `full` (the chip's whole BAR1; the guest's 64-bit PCI \
         hole must hold it, e.g. QEMU -global q35-pcihost.pci-hole64-size=128G) or leave it unset \
         (256 MiB)"
    )]
    BadBar1(String),
}

/// The BAR1 a guest gets: [`GUEST_BAR1_MAX`] of the chip's `bar1`, or all of it when
/// `NVBARE_VFIO_USER_BAR1=full` (`setting`). A driver may need the large BAR1 it has on a
/// real board: tinygrad 0.14.0's boot fails with a 256 MiB one (tests/vm/run).
pub fn guest_bar1_size(bar1: u64, setting: Option<&str>) -> Result<u64, VfioUserError> {
    match setting {
        None | Some("") => Ok(bar1.min(GUEST_BAR1_MAX)),
        Some("full") => Ok(bar1),
        Some(other) => Err(VfioUserError::BadBar1(other.to_string())),
    }
}

/// What the connections asked, and what was refused.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) bar1_size: u64,
    /// BAR1 is offered for mmap (`VfioUserConfig::bar1_mmap`).
    pub(crate) bar1_mmap: bool,
    /// Every request on stderr (`NVBARE_VFIO_USER_TRACE` set).
    pub(crate) verbose: bool,
    /// Where the client placed the BARs, kept across resets.
    pub(crate) placed: region::BarPlacement,
    requests: [AtomicU64; 14],
    mappings: AtomicI64,
    refusals: Mutex<Vec<String>>,
    unreachable: Mutex<Vec<String>>,
    ends: Mutex<Vec<String>>,
}

impl Shared {
    fn count(&self, command: u16) {
        if let Some(c) = self.requests.get(usize::from(command)) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn mapped(&self, delta: i64) {
        self.mappings.fetch_add(delta, Ordering::Relaxed);
    }
    fn unreachable(&self, what: String) {
        self.unreachable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(what);
    }
    fn refused(&self, why: String) {
        self.refusals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(why);
    }
}

/// A running server; dropping it stops it and removes the socket.
pub struct VfioUserServer {
    gpu: Arc<SimGpu>,
    shared: Arc<Shared>,
    socket: PathBuf,
    stop: Arc<AtomicBool>,
    current: Arc<Mutex<Option<UnixStream>>>,
    thread: Option<JoinHandle<()>>,
}

/// Starts serving `config.chip` on `config.socket`.
pub fn serve(config: VfioUserConfig) -> Result<VfioUserServer, VfioUserError> {
    if config.socket.exists() {
        return Err(VfioUserError::SocketExists(config.socket));
    }
    let bar1_setting = std::env::var("NVBARE_VFIO_USER_BAR1").ok();
    let gpu = Arc::new(if config.bar1_mmap {
        SimGpu::with_shareable_vram(config.chip, config.faults, GUEST_BAR1_MAX)?
    } else {
        SimGpu::with_faults(config.chip, config.faults)?
    });
    let bar1 = gpu.bar(1).map_or(0, |(_, s)| s);
    let bar1_size = guest_bar1_size(bar1, bar1_setting.as_deref())?;
    // Only the first GUEST_BAR1_MAX bytes of VRAM sit in the memory file: a full-size BAR1
    // (NVBARE_VFIO_USER_BAR1=full) is served through messages even when mmap is asked for.
    let bar1_mmap = config.bar1_mmap && bar1_size <= GUEST_BAR1_MAX;
    let listener = UnixListener::bind(&config.socket).map_err(|source| VfioUserError::Bind {
        path: config.socket.clone(),
        source,
    })?;
    let shared = Arc::new(Shared {
        bar1_size,
        bar1_mmap,
        verbose: std::env::var_os("NVBARE_VFIO_USER_TRACE").is_some(),
        ..Shared::default()
    });
    gpu.set_config_bar1_size(shared.bar1_size);
    let stop = Arc::new(AtomicBool::new(false));
    let current = Arc::new(Mutex::new(None));
    let (g, s, st, cur) = (gpu.clone(), shared.clone(), stop.clone(), current.clone());
    let thread = std::thread::Builder::new()
        .name("vfio-user".into())
        .spawn(move || accept_loop(&listener, &g, &s, &st, &cur))
        .map_err(|e| {
            let _ = std::fs::remove_file(&config.socket);
            VfioUserError::Thread(e)
        })?;
    Ok(VfioUserServer {
        gpu,
        shared,
        socket: config.socket,
        stop,
        current,
        thread: Some(thread),
    })
}

fn accept_loop(
    listener: &UnixListener,
    gpu: &SimGpu,
    shared: &Shared,
    stop: &AtomicBool,
    current: &Mutex<Option<UnixStream>>,
) {
    for stream in listener.incoming() {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if let Ok(c) = stream.try_clone() {
            *current.lock().unwrap_or_else(|p| p.into_inner()) = Some(c);
        }
        gpu.log().info("vfio-user", "client connected");
        let end = session::serve(gpu, shared, stream);
        *current.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let gone = gpu.bus().sysmem.unmap_fd(0, 0);
        shared.mapped(-(gone as i64));
        if !gpu.is_gone() {
            gpu.reset();
        }
        gpu.log().info("vfio-user", format!("client gone: {end}"));
        shared
            .ends
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(end.to_string());
    }
}

impl VfioUserServer {
    /// The simulated GPU (to inspect it, or inject faults).
    pub fn gpu(&self) -> &SimGpu {
        &self.gpu
    }
    /// The socket's path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
    /// The size of BAR1 the guest sees.
    pub fn guest_bar1(&self) -> u64 {
        self.shared.bar1_size
    }
    /// Requests served of command `n`.
    pub fn requests(&self, command: protocol::Command) -> u64 {
        self.shared.requests[command as usize].load(Ordering::Relaxed)
    }
    /// DMA mappings the client has now.
    pub fn mappings(&self) -> i64 {
        self.shared.mappings.load(Ordering::Relaxed)
    }
    /// Why requests were refused.
    pub fn refusals(&self) -> Vec<String> {
        self.shared
            .refusals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
    /// The client's DMA mappings that came without a file descriptor (the GPU cannot reach
    /// them).
    pub fn unreachable(&self) -> Vec<String> {
        self.shared
            .unreachable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
    /// How each finished connection ended.
    pub fn ended(&self) -> Vec<String> {
        self.shared
            .ends
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Stops serving (closing a connected client) and removes the socket.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(c) = self
            .current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
        // Wakes the accept loop, which sees `stop`.
        let _ = UnixStream::connect(&self.socket);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

impl Drop for VfioUserServer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod bar1_tests {
    use super::*;

    #[test]
    fn a_guest_gets_256_mib_of_bar1_unless_it_asks_for_all() {
        let chip = 32 << 30;
        assert_eq!(guest_bar1_size(chip, None).unwrap(), GUEST_BAR1_MAX);
        assert_eq!(guest_bar1_size(chip, Some("")).unwrap(), GUEST_BAR1_MAX);
        assert_eq!(guest_bar1_size(chip, Some("full")).unwrap(), chip);
        assert_eq!(guest_bar1_size(16 << 20, None).unwrap(), 16 << 20);
        let m = guest_bar1_size(chip, Some("32G")).unwrap_err().to_string();
        assert!(m.contains("\"32G\"") && m.contains("`full`"), "{m}");
    }
}
