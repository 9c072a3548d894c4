//! [`Remote`]: a GPU in another process or on another machine, reached over tinygrad's
//! remote PCI protocol (TCP), as a [`Platform`]: nvbare drives the simulator that
//! `nvbare sim serve` exports, or a GPU another machine exports the same way.
//!
//! Written from the protocol description (`shared/notes/tinygrad-remote.md`) and tinygrad's
//! client (`tinygrad/runtime/support/system.py`, `RemotePCIDevice`): BAR0 32-bit through
//! MMIO_READ/MMIO_WRITE, BAR1 and DMA memory as [`SharedMem`] over accessors that issue
//! MMIO_READ/WRITE on BAR 1 and SYSMEM_READ/WRITE, DMA memory from MAP_SYSMEM (the server
//! picks each 4 KiB page's bus address), config space through CFG_READ/CFG_WRITE, reset
//! through RESET.
//!
//! The protocol has no command to free DMA memory: [`Platform::dma_free`] forgets the
//! allocation here, and the server keeps its pages until the connection closes.

pub mod proto;

use std::collections::HashMap;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nvbare_core::hal::{
    Bar0, BarInfo, DMA_PAGE, DmaMemory, PciAddress, Platform, PlatformError, PollError, Wait,
    try_poll_until,
};
use nvbare_core::shared::{MemIo, SharedMem};

use crate::clock::HostClock;
use crate::lock::{DeviceLock, LockError, remote_lock_path};
use proto::{Cmd, Conn, RemoteError, Response};

/// tinygrad's default port.
pub const DEFAULT_PORT: u16 = 6667;

/// PCI base class of display controllers (what PROBE asks for).
const DISPLAY_CLASS: u64 = 0x03;
/// NVIDIA's vendor id.
const NVIDIA_VENDOR: u64 = 0x10de;
/// PCI config COMMAND register and its memory-space and bus-master bits.
const PCI_COMMAND: u16 = 0x4;
const COMMAND_MEMORY: u32 = 1 << 1;
const COMMAND_BUS_MASTER: u32 = 1 << 2;
/// Zeros are written in pieces of this size (fresh DMA memory must read as zero).
const ZERO_CHUNK: usize = 1 << 20;

/// How to reach the server.
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    /// Which of the server's devices (in PROBE's order).
    pub device_index: usize,
    /// Where the lock file goes (tinygrad's: the temporary directory).
    pub lock_dir: PathBuf,
    /// How long a connection attempt may take.
    pub connect_timeout: Duration,
    /// How long the server may stay silent in the middle of a reply.
    pub reply_timeout: Duration,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            device_index: 0,
            lock_dir: std::env::temp_dir(),
            // TIMEOUT: tinygrad's REMOTE_TIMEOUT default (3 s); a server that does not accept
            // within it is not there.
            connect_timeout: Duration::from_secs(3),
            // TIMEOUT: the longest silence within one reply; the slowest reply seen is a
            // 256 MiB read from a simulator (well under 5 s on loopback), and a reset of a
            // real GPU behind a server takes about 1 s. 30 s of silence means the server hung.
            reply_timeout: Duration::from_secs(30),
        }
    }
}

/// Why [`Remote::connect`] failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The address is not `HOST:PORT`.
    #[error("{0:?} is not HOST:PORT (e.g. 127.0.0.1:6667)")]
    BadAddress(String),
    /// No connection.
    #[error(
        "cannot connect to {addr}: {source}; is a remote PCI server (`nvbare sim serve`) \
         listening there?"
    )]
    Connect {
        /// The address.
        addr: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A step of opening failed.
    #[error("opening the remote GPU at {addr}: {step}")]
    Step {
        /// The address.
        addr: String,
        /// The failed step.
        #[source]
        step: RemoteError,
    },
    /// The server offers no (or not that many) NVIDIA GPUs.
    #[error("the server at {addr} offers {count} NVIDIA GPU(s); device {index} asked for")]
    NoDevice {
        /// The address.
        addr: String,
        /// How many it offers.
        count: usize,
        /// The index asked for.
        index: usize,
    },
    /// A device name whose id does not parse.
    #[error("the server at {addr} names a device {name:?} without a numeric id after its last ':'")]
    BadName {
        /// The address.
        addr: String,
        /// The name.
        name: String,
    },
    /// BAR0 is missing.
    #[error("the remote GPU at {addr} has no BAR0")]
    NoBar0 {
        /// The address.
        addr: String,
    },
    /// Bus mastering could not be turned on.
    #[error("turning bus mastering on for the remote GPU at {addr}")]
    BusMaster {
        /// The address.
        addr: String,
        /// The cause.
        #[source]
        source: PlatformError,
    },
    /// Another process drives that GPU.
    #[error(transparent)]
    Locked(#[from] LockError),
}

/// A remote GPU.
#[derive(Debug)]
pub struct Remote {
    conn: Arc<Conn>,
    clock: HostClock,
    name: String,
    address: PciAddress,
    bars: [Option<BarInfo>; 6],
    /// DMA allocations by id: the server's handle, size and page addresses.
    dma: HashMap<u64, Grant>,
    /// Freed grants, kept for the next allocation of their size: the protocol has no free,
    /// so the server keeps their pages until the connection closes.
    freed: Vec<Grant>,
    next_dma_id: u64,
    _lock: DeviceLock,
}

/// Host memory the server granted (MAP_SYSMEM): its handle, size and page addresses.
#[derive(Clone, Debug)]
struct Grant {
    handle: u32,
    bytes: usize,
    bus_pages: Vec<u64>,
}

/// Whether consecutive pages are consecutive on the bus.
fn pages_contiguous(pages: &[u64]) -> bool {
    pages.windows(2).all(|w| w[1] == w[0] + DMA_PAGE as u64)
}

fn step_err(step: &'static str, e: RemoteError) -> PlatformError {
    PlatformError::Failed {
        step,
        source: Box::new(e),
    }
}

impl Remote {
    /// Zeroes `grant` and hands it out as a new DMA allocation.
    fn hand_out(&mut self, grant: Grant) -> Result<DmaMemory, PlatformError> {
        let (handle, bytes) = (grant.handle, grant.bytes);
        // Fresh DMA memory reads as zero whatever the server (or an earlier user) left.
        let zeros = vec![0u8; ZERO_CHUNK.min(bytes)];
        let mut off = 0;
        while off < bytes {
            let n = zeros.len().min(bytes - off);
            let req = self
                .conn
                .req(Cmd::SysmemWrite, handle, [off as u64, n as u64, 0]);
            if let Err(e) = self.conn.send_only(req, &zeros[..n]) {
                self.freed.push(grant);
                return Err(step_err(Cmd::SysmemWrite.name(), e));
            }
            off += n;
        }
        let mem = DmaMemory {
            cpu: SharedMem::from_io(
                self.mem(handle, Cmd::SysmemRead, Cmd::SysmemWrite),
                bytes,
                grant.bus_pages[0],
            ),
            bus_pages: grant.bus_pages.clone(),
            id: self.next_dma_id,
        };
        self.dma.insert(mem.id, grant);
        self.next_dma_id += 1;
        Ok(mem)
    }

    /// Connects to `addr` (`HOST:PORT`; `HOST` alone uses port 6667) and opens its first
    /// NVIDIA GPU.
    pub fn connect(addr: &str) -> Result<Remote, OpenError> {
        Self::connect_with(addr, &RemoteOptions::default())
    }

    /// [`Remote::connect`] with options.
    pub fn connect_with(addr: &str, opts: &RemoteOptions) -> Result<Remote, OpenError> {
        let (host, port) = match addr.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse::<u16>()
                    .map_err(|_| OpenError::BadAddress(addr.into()))?,
            ),
            None => (addr, DEFAULT_PORT),
        };
        if host.is_empty() {
            return Err(OpenError::BadAddress(addr.into()));
        }
        let connect_err = |source| OpenError::Connect {
            addr: addr.into(),
            source,
        };
        let sock = (host, port)
            .to_socket_addrs()
            .map_err(connect_err)?
            .next()
            .ok_or_else(|| OpenError::BadAddress(addr.into()))?;
        let tcp = TcpStream::connect_timeout(&sock, opts.connect_timeout).map_err(connect_err)?;
        tcp.set_nodelay(true).map_err(connect_err)?;
        tcp.set_read_timeout(Some(opts.reply_timeout))
            .map_err(connect_err)?;
        tcp.set_write_timeout(Some(opts.reply_timeout))
            .map_err(connect_err)?;
        let mut conn = Conn::new(tcp, format!("{host}:{port}"));
        let step = |step| OpenError::Step {
            addr: addr.into(),
            step,
        };

        // PROBE: (mask, device) pairs; mask 0 matches every device id.
        let payload = [0u8; 8];
        let (_, names) = conn
            .call_with_tail(
                conn.req(
                    Cmd::Probe,
                    0,
                    [DISPLAY_CLASS, payload.len() as u64, NVIDIA_VENDOR],
                ),
                &payload,
                |r| {
                    if r.v0 > 1 << 20 {
                        Err(format!("a device list of {} bytes", r.v0))
                    } else {
                        // CAST: at most 1 MiB.
                        Ok(r.v0 as usize)
                    }
                },
            )
            .map_err(step)?;
        let names = String::from_utf8_lossy(&names).into_owned();
        let names: Vec<&str> = names.split('\n').filter(|n| !n.trim().is_empty()).collect();
        let name = names
            .get(opts.device_index)
            .ok_or(OpenError::NoDevice {
                addr: addr.into(),
                count: names.len(),
                index: opts.device_index,
            })?
            .trim()
            .to_string();
        let dev_id = name
            .rsplit(':')
            .next()
            .and_then(|id| id.parse::<u32>().ok())
            .ok_or_else(|| OpenError::BadName {
                addr: addr.into(),
                name: name.clone(),
            })?;
        conn.set_dev_id(dev_id);
        let lock = DeviceLock::acquire(
            &remote_lock_path(&opts.lock_dir, host, port, dev_id),
            &format!("remote GPU {host}:{port}:{dev_id}"),
        )?;
        let conn = Arc::new(conn);

        // BARs 0, 1 and 3, as tinygrad asks; a BAR the server refuses is absent.
        let mut bars = [None; 6];
        for index in [0u32, 1, 3] {
            match conn.call(conn.req(Cmd::MapBar, index, [0; 3]), &[], &mut []) {
                Ok(Response { v0, v1, .. }) if v1 > 0 => {
                    bars[index as usize] = Some(BarInfo {
                        bus_addr: v0,
                        size: v1,
                    })
                }
                Ok(_) | Err(RemoteError::Server { .. }) => {}
                Err(e) => return Err(step(e)),
            }
        }
        if bars[0].is_none_or(|b| b.size < 4) {
            return Err(OpenError::NoBar0 { addr: addr.into() });
        }
        let address = crate::pci::parse_address(&name)
            .or_else(|_| crate::pci::parse_address(name.rsplit_once(':').map_or("", |p| p.0)))
            .unwrap_or_default();
        let remote = Remote {
            conn,
            clock: HostClock::new(),
            name,
            address,
            bars,
            dma: HashMap::new(),
            freed: Vec::new(),
            next_dma_id: 1,
            _lock: lock,
        };
        // Memory decoding on, bus mastering off: the boot turns mastering on once WPR2 is
        // down and the FSP booted (core::boot::identify), as on VFIO.
        remote
            .config_read(PCI_COMMAND, 2)
            .and_then(|cmd| {
                remote.config_write(PCI_COMMAND, 2, (cmd | COMMAND_MEMORY) & !COMMAND_BUS_MASTER)
            })
            .map_err(|source| OpenError::BusMaster {
                addr: addr.into(),
                source,
            })?;
        Ok(remote)
    }

    /// The device's name as the server gave it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// DMA allocations not yet given back through [`Platform::dma_free`].
    pub fn dma_outstanding(&self) -> usize {
        self.dma.len()
    }

    fn set_bus_master(&self, on: bool) -> Result<(), PlatformError> {
        let cmd = self.config_read(PCI_COMMAND, 2)?;
        let want = if on {
            cmd | COMMAND_MEMORY | COMMAND_BUS_MASTER
        } else {
            cmd & !COMMAND_BUS_MASTER
        };
        self.config_write(PCI_COMMAND, 2, want)
    }

    fn mem(&self, index: u32, read: Cmd, write: Cmd) -> Arc<RemoteMem> {
        Arc::new(RemoteMem {
            conn: self.conn.clone(),
            index,
            read,
            write,
        })
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        // Bus mastering off before the device is left to the next user; a server that is
        // gone needs nothing.
        if !self.conn.is_dead() {
            let _ = self.set_bus_master(false);
        }
    }
}

/// Remote memory: a BAR (MMIO_READ/WRITE) or a DMA allocation (SYSMEM_READ/WRITE). Reads of
/// a server that is gone give 0xff bytes, as a vanished PCI device does; writes to it are
/// dropped (the platform's next fallible call reports the failure).
#[derive(Debug)]
struct RemoteMem {
    conn: Arc<Conn>,
    /// BAR index or sysmem handle.
    index: u32,
    read: Cmd,
    write: Cmd,
}

impl MemIo for RemoteMem {
    fn read(&self, offset: u64, out: &mut [u8]) {
        let req = self
            .conn
            .req(self.read, self.index, [offset, out.len() as u64, 0]);
        if let Err(e) = self.conn.call(req, &[], out) {
            log::error!("{e}");
            out.fill(0xff);
        }
    }

    fn write(&self, offset: u64, data: &[u8]) {
        let req = self
            .conn
            .req(self.write, self.index, [offset, data.len() as u64, 0]);
        if let Err(e) = self.conn.send_only(req, data) {
            log::error!("{e}");
        }
    }
}

impl Bar0 for Remote {
    fn read32(&self, offset: u32) -> u32 {
        let mut b = [0u8; 4];
        let req = self.conn.req(Cmd::MmioRead, 0, [u64::from(offset), 4, 0]);
        match self.conn.call(req, &[], &mut b) {
            Ok(_) => u32::from_le_bytes(b),
            Err(e) => {
                log::error!("BAR0 read at {offset:#x}: {e}");
                u32::MAX
            }
        }
    }

    fn write32(&self, offset: u32, value: u32) {
        let req = self.conn.req(Cmd::MmioWrite, 0, [u64::from(offset), 4, 0]);
        if let Err(e) = self.conn.send_only(req, &value.to_le_bytes()) {
            log::error!("BAR0 write at {offset:#x}: {e}");
        }
    }
}

impl Platform for Remote {
    type Clock = HostClock;

    fn clock(&self) -> &HostClock {
        &self.clock
    }

    fn pci_address(&self) -> PciAddress {
        self.address
    }

    fn bar_info(&self, index: u32) -> Option<BarInfo> {
        *self.bars.get(index as usize)?
    }

    fn bar1(&self) -> Option<SharedMem> {
        let bar = self.bars[1]?;
        let len = usize::try_from(bar.size).ok()?;
        Some(SharedMem::from_io(
            self.mem(1, Cmd::MmioRead, Cmd::MmioWrite),
            len,
            bar.bus_addr,
        ))
    }

    fn dma_alloc(&mut self, bytes: usize, contiguous: bool) -> Result<DmaMemory, PlatformError> {
        if bytes == 0 || !bytes.is_multiple_of(DMA_PAGE) {
            return Err(PlatformError::Unsupported(
                "DMA allocations that are not a non-zero multiple of 4 KiB",
            ));
        }
        let reuse = self
            .freed
            .iter()
            .position(|g| g.bytes == bytes && (!contiguous || pages_contiguous(&g.bus_pages)));
        if let Some(i) = reuse {
            let grant = self.freed.swap_remove(i);
            return self.hand_out(grant);
        }
        let pages = bytes / DMA_PAGE;
        let req = self
            .conn
            .req(Cmd::MapSysmem, 0, [bytes as u64, u64::from(contiguous), 0]);
        let (resp, tail) = self
            .conn
            .call_with_tail(req, &[], |r| {
                if r.v0 == 8 * pages as u64 {
                    Ok(8 * pages)
                } else {
                    Err(format!(
                        "{} bytes of page addresses for {pages} pages (want {})",
                        r.v0,
                        8 * pages
                    ))
                }
            })
            .map_err(|e| step_err(Cmd::MapSysmem.name(), e))?;
        let bad = |what: String| {
            step_err(
                Cmd::MapSysmem.name(),
                RemoteError::BadReply {
                    peer: self.conn.peer().into(),
                    cmd: Cmd::MapSysmem,
                    what,
                },
            )
        };
        let handle = u32::try_from(resp.v1).map_err(|_| bad(format!("handle {:#x}", resp.v1)))?;
        let bus_pages: Vec<u64> = tail
            .chunks_exact(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w.copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect();
        if let Some(p) = bus_pages
            .iter()
            .find(|p| !p.is_multiple_of(DMA_PAGE as u64))
        {
            return Err(bad(format!("page address {p:#x} not 4 KiB aligned")));
        }
        let grant = Grant {
            handle,
            bytes,
            bus_pages,
        };
        if contiguous && !pages_contiguous(&grant.bus_pages) {
            let first = grant.bus_pages[0];
            // Not handed out: kept for a later scattered allocation of its size.
            self.freed.push(grant);
            return Err(bad(format!(
                "contiguous memory asked for, scattered pages given (first {first:#x})"
            )));
        }
        self.hand_out(grant)
    }

    unsafe fn dma_free(&mut self, mem: DmaMemory) {
        // The protocol has no free: the server keeps the pages until the connection closes,
        // and the next allocation of their size takes them again.
        if let Some(g) = self.dma.remove(&mem.id) {
            self.freed.push(g);
        }
    }

    fn config_read(&self, offset: u16, size: u8) -> Result<u32, PlatformError> {
        if !matches!(size, 1 | 2 | 4) {
            return Err(PlatformError::Unsupported(
                "config accesses other than 1, 2, 4 bytes",
            ));
        }
        let req = self
            .conn
            .req(Cmd::CfgRead, 0, [u64::from(offset), u64::from(size), 0]);
        let r = self
            .conn
            .call(req, &[], &mut [])
            .map_err(|e| step_err(Cmd::CfgRead.name(), e))?;
        // CAST: a config read of at most 4 bytes; higher bits would be the server's noise.
        Ok(r.v0 as u32)
    }

    fn config_write(&self, offset: u16, size: u8, value: u32) -> Result<(), PlatformError> {
        if !matches!(size, 1 | 2 | 4) {
            return Err(PlatformError::Unsupported(
                "config accesses other than 1, 2, 4 bytes",
            ));
        }
        let req = self.conn.req(
            Cmd::CfgWrite,
            0,
            [u64::from(offset), u64::from(size), u64::from(value)],
        );
        self.conn
            .call(req, &[], &mut [])
            .map(drop)
            .map_err(|e| step_err(Cmd::CfgWrite.name(), e))
    }

    fn reset(&mut self) -> Result<(), PlatformError> {
        self.set_bus_master(false)?;
        self.conn
            .call(self.conn.req(Cmd::Reset, 0, [0; 3]), &[], &mut [])
            .map_err(|e| step_err(Cmd::Reset.name(), e))?;
        // TIMEOUT: a function-level reset completes within 100 ms by the PCIe spec (tinygrad
        // sleeps 0.1 s after RESET); 1 s leaves room for a server on another machine. This
        // waits for config space only (`is_present`): BAR0 may read all ones for much longer
        // while the FSP reboots, which the boot waits for itself (core::boot::identify).
        try_poll_until(
            &self.clock,
            Wait::pausing(
                "the remote GPU's config space to answer after RESET",
                1_000_000_000,
                1_000_000,
            ),
            || {
                if self.conn.is_dead() {
                    return Err(());
                }
                Ok(self.is_present().then_some(()))
            },
        )
        .map_err(|e| match e {
            PollError::TimedOut(t) => PlatformError::Failed {
                step: "RESET",
                source: Box::new(t),
            },
            PollError::Failed(()) => PlatformError::DeviceGone,
        })?;
        // Bus mastering stays off until the boot turns it on (core::boot::identify).
        Ok(())
    }
}

#[cfg(test)]
mod tests;
