//! One connection of the remote PCI protocol: requests in, responses out, in stream order.
//!
//! Large transfers stream: an MMIO_WRITE of 63 MiB to BAR1 goes from the socket into VRAM a
//! chunk at a time, and SYSMEM_READ/WRITE move host memory the same way, so nothing is held
//! twice in memory and the first bytes move before the last arrive.

use std::io::{BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;

use super::protocol::{self, Command, REQUEST_BYTES, Request, Response};
use super::{Shared, SysmemGrant};
use crate::device::SimGpu;

/// Bytes moved per step of a streamed transfer.
const CHUNK: usize = 1 << 20;
/// Largest PROBE payload accepted (tinygrad sends ten pairs).
const MAX_PROBE_PAYLOAD: u64 = 4096;
/// Largest single MAP_SYSMEM (the memory is reserved lazily, but the page list is not).
const MAX_SYSMEM: u64 = 64 << 30;
/// Page granularity of MAP_SYSMEM's bus address list.
const PAGE: u64 = 4096;

/// PCI base class of a display controller (what a GPU reports; tinygrad asks for 0x03).
const DISPLAY_CLASS: u64 = 0x03;
/// NVIDIA's PCI vendor id.
const NVIDIA: u64 = 0x10de;

/// Why a request was refused.
enum Refusal {
    /// Answer with this error text; the connection goes on.
    Answer(String),
    /// The stream cannot go on (a streamed write that cannot be honoured, a broken socket).
    Close(String),
}

type Outcome = Result<(), Refusal>;

fn answer<T>(text: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal::Answer(text.into()))
}

fn io_close(e: std::io::Error) -> Refusal {
    Refusal::Close(format!("connection failed: {e}"))
}

struct Session<'a> {
    shared: &'a Shared,
    conn: u64,
    rx: BufReader<TcpStream>,
    tx: BufWriter<TcpStream>,
    buf: Vec<u8>,
}

/// Serves one connection until the client closes it (or it must be closed).
pub(super) fn run(shared: &Shared, conn: u64, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut s = Session {
        shared,
        conn,
        rx: BufReader::with_capacity(CHUNK, stream),
        tx: BufWriter::with_capacity(CHUNK, write_half),
        buf: vec![0; CHUNK],
    };
    serve_requests(&mut s);
    // Other clones of the stream (the server keeps one to stop it) would keep the socket open:
    // shut it, so the client sees the end.
    let _ = s.rx.get_ref().shutdown(std::net::Shutdown::Both);
}

fn serve_requests(s: &mut Session) {
    let shared = s.shared;
    let mut header = [0u8; REQUEST_BYTES];
    loop {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        if s.rx.read_exact(&mut header).is_err() {
            // The client went away (or stop shut the socket): the end of the session.
            return;
        }
        let req = Request::decode(&header);
        let cmd = req.command();
        let result = match cmd {
            Some(c) => {
                shared.count(c);
                s.handle(c, &req)
            }
            None => Err(Refusal::Close(format!(
                "unknown command {} (tinygrad 0.14.0 numbers them 0..=12); the stream cannot be \
                 followed past it",
                req.cmd
            ))),
        };
        match result {
            Ok(()) => {}
            Err(Refusal::Answer(text)) => {
                let what = cmd.map_or("?", Command::name);
                shared.refused(format!("{what} on device {}: {text}", req.dev_id));
                if s.error(&text).is_err() {
                    return;
                }
            }
            Err(Refusal::Close(text)) => {
                let what = cmd.map_or("?", Command::name);
                shared.refused(format!(
                    "{what} on device {}: {text}; closing the connection",
                    req.dev_id
                ));
                return;
            }
        }
    }
}

/// GPU `dev_id` of `shared`.
fn gpu_of(shared: &Shared, dev_id: u32) -> Result<&SimGpu, String> {
    shared
        .gpus
        .get(dev_id as usize)
        .map(|g| &**g)
        .ok_or_else(|| {
            format!(
                "no device {dev_id}: this server has {} simulated GPU(s), numbered from 0",
                shared.gpus.len()
            )
        })
}

impl<'a> Session<'a> {
    fn gpu(&self, dev_id: u32) -> Result<&'a SimGpu, String> {
        gpu_of(self.shared, dev_id)
    }

    fn respond(&mut self, r: Response, data: &[u8]) -> Outcome {
        self.tx.write_all(&r.encode()).map_err(io_close)?;
        self.tx.write_all(data).map_err(io_close)?;
        self.tx.flush().map_err(io_close)?;
        self.sent(data.len() as u64);
        Ok(())
    }

    fn error(&mut self, text: &str) -> Outcome {
        let r = Response {
            status: 1,
            v0: text.len() as u64,
            v1: 0,
        };
        self.respond(r, text.as_bytes())
    }

    fn sent(&self, n: u64) {
        self.shared
            .counters
            .bytes_to_client
            .fetch_add(n, Ordering::Relaxed);
    }

    fn received(&self, n: u64) {
        self.shared
            .counters
            .bytes_from_client
            .fetch_add(n, Ordering::Relaxed);
    }

    /// Reads `len` payload bytes, `CHUNK` at a time, handing each chunk to `sink` with its
    /// offset. The whole payload is consumed even after `sink` fails, so that a refusal can
    /// leave the stream in step.
    fn stream_in(
        &mut self,
        len: u64,
        mut sink: impl FnMut(u64, &[u8]) -> Result<(), String>,
    ) -> Result<Result<(), String>, Refusal> {
        let mut done = 0u64;
        let mut outcome = Ok(());
        while done < len {
            // CAST: bounded by CHUNK.
            let n = (len - done).min(CHUNK as u64) as usize;
            self.rx.read_exact(&mut self.buf[..n]).map_err(io_close)?;
            self.received(n as u64);
            if outcome.is_ok() {
                outcome = sink(done, &self.buf[..n]);
            }
            done += n as u64;
        }
        Ok(outcome)
    }

    fn handle(&mut self, cmd: Command, r: &Request) -> Outcome {
        match cmd {
            Command::Probe => self.probe(r),
            Command::MapBar => {
                let gpu = self.gpu(r.dev_id).map_err(Refusal::Answer)?;
                let Some((bus, size)) = gpu.bar(r.bar) else {
                    return answer(format!(
                        "BAR {} does not exist; the simulated GPU has BARs 0, 1 and 3",
                        r.bar
                    ));
                };
                self.respond(Response::ok(bus, size), &[])
            }
            Command::MapSysmemFd => answer(
                "MAP_SYSMEM_FD hands over a file descriptor (macOS only); this server hands out \
                 memory with MAP_SYSMEM",
            ),
            Command::CfgRead => {
                let gpu = self.gpu(r.dev_id).map_err(Refusal::Answer)?;
                let (offset, size) = config_access(r.arg0, r.arg1).map_err(Refusal::Answer)?;
                let v = gpu.config_read(offset, size);
                self.respond(Response::ok(v.into(), 0), &[])
            }
            Command::CfgWrite => {
                let gpu = self.gpu(r.dev_id).map_err(Refusal::Answer)?;
                let (offset, size) = config_access(r.arg0, r.arg1).map_err(Refusal::Answer)?;
                let Ok(value) = u32::try_from(r.arg2) else {
                    return answer(format!("config value {:#x} is wider than 32 bits", r.arg2));
                };
                if !gpu.config_write(offset, size, value) {
                    return answer("the device is gone");
                }
                self.respond(Response::ok(0, 0), &[])
            }
            Command::Reset => {
                let gpu = self.gpu(r.dev_id).map_err(Refusal::Answer)?;
                if gpu.is_gone() {
                    return answer("the device is gone; it cannot be reset");
                }
                gpu.reset();
                self.respond(Response::ok(0, 0), &[])
            }
            Command::MmioRead => self.mmio_read(r),
            Command::MmioWrite => self.mmio_write(r),
            Command::MapSysmem => self.map_sysmem(r),
            Command::SysmemRead => self.sysmem_read(r),
            Command::SysmemWrite => self.sysmem_write(r),
            Command::ResizeBar => {
                let gpu = self.gpu(r.dev_id).map_err(Refusal::Answer)?;
                match (r.bar, gpu.bar(1)) {
                    // BAR1 is made at least as large as VRAM (the chip table checks it): there
                    // is nothing larger to resize it to.
                    (1, Some(_)) => self.respond(Response::ok(0, 0), &[]),
                    (b, _) => answer(format!("BAR {b} is not resizable; BAR1 is")),
                }
            }
            Command::Ping => self.respond(Response::ok(0, 0), &[]),
        }
    }

    fn probe(&mut self, r: &Request) -> Outcome {
        if r.arg1 > MAX_PROBE_PAYLOAD {
            return Err(Refusal::Close(format!(
                "PROBE payload of {} bytes (at most {MAX_PROBE_PAYLOAD})",
                r.arg1
            )));
        }
        // CAST: bounded above.
        let mut payload = vec![0u8; r.arg1 as usize];
        self.rx.read_exact(&mut payload).map_err(io_close)?;
        self.received(r.arg1);
        let Some(pairs) = protocol::probe_pairs(&payload) else {
            return answer("PROBE payload is not a list of u32 (mask, device) pairs");
        };
        let class_ok = r.arg0 == 0 || r.arg0 == DISPLAY_CLASS;
        let names: Vec<String> = self
            .shared
            .gpus
            .iter()
            .enumerate()
            .filter(|(_, g)| {
                let id = u32::from(g.spec().device_id);
                class_ok && r.arg2 == NVIDIA && pairs.iter().any(|&(m, d)| id & m == d)
            })
            .map(|(i, _)| i.to_string())
            .collect();
        if names.is_empty() {
            let spec = self.shared.gpus[0].spec();
            return answer(format!(
                "no simulated GPU matches vendor {:#x}, class {:#x} and the device list (this \
                 server simulates {} with device id {:#06x})",
                r.arg2, r.arg0, spec.name, spec.device_id
            ));
        }
        let text = names.join("\n");
        self.respond(Response::ok(text.len() as u64, 0), text.as_bytes())
    }

    /// Checks a BAR access of `len` bytes at `offset`; BAR0 accesses are whole registers.
    fn bar_range(&self, r: &Request) -> Result<(&'a SimGpu, u64, u64), String> {
        let gpu = self.gpu(r.dev_id)?;
        let (offset, len) = (r.arg0, r.arg1);
        let Some((_, size)) = gpu.bar(r.bar) else {
            return Err(format!("BAR {} does not exist", r.bar));
        };
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(format!(
                "{len} bytes at {offset:#x} run past the end of BAR {} ({size:#x} bytes)",
                r.bar
            ));
        }
        match r.bar {
            0 if !offset.is_multiple_of(4) || !len.is_multiple_of(4) => Err(format!(
                "BAR0 is reached in aligned 32-bit registers, not {len} bytes at {offset:#x}"
            )),
            0 | 1 => Ok((gpu, offset, len)),
            b => Err(format!(
                "BAR {b} (instance memory) is not reachable over this protocol; use BAR0 or BAR1"
            )),
        }
    }

    fn mmio_read(&mut self, r: &Request) -> Outcome {
        let (gpu, offset, len) = self.bar_range(r).map_err(Refusal::Answer)?;
        if r.bar == 0 {
            // CAST: BAR0 offsets fit 32 bits (the range check above bounds them by its size).
            let data: Vec<u8> = (0..len / 4)
                .flat_map(|i| gpu.bar0_read((offset + 4 * i) as u32).to_le_bytes())
                .collect();
            return self.respond(Response::ok(0, 0), &data);
        }
        // BAR1 in physical mode reaches VRAM 1:1; past the end of VRAM there is nothing.
        if offset + len > gpu.bus().vram.size() {
            return answer(format!(
                "BAR1 {len} bytes at {offset:#x} run past the end of VRAM ({:#x} bytes)",
                gpu.bus().vram.size()
            ));
        }
        self.tx
            .write_all(&Response::ok(0, 0).encode())
            .map_err(io_close)?;
        let mut done = 0;
        while done < len {
            // CAST: bounded by CHUNK.
            let n = (len - done).min(CHUNK as u64) as usize;
            if let Err(e) = gpu.bar1_read(offset + done, &mut self.buf[..n]) {
                return Err(Refusal::Close(format!("BAR1 read failed mid-stream: {e}")));
            }
            self.tx.write_all(&self.buf[..n]).map_err(io_close)?;
            done += n as u64;
        }
        self.tx.flush().map_err(io_close)?;
        self.sent(len);
        Ok(())
    }

    fn mmio_write(&mut self, r: &Request) -> Outcome {
        // A refused write is lost and the protocol cannot say so: close the connection.
        let (gpu, offset, len) = self
            .bar_range(r)
            .map_err(|t| Refusal::Close(format!("MMIO_WRITE refused: {t}")))?;
        let bar = r.bar;
        let vram = gpu.bus().vram.size();
        let outcome = self.stream_in(len, |at, chunk| {
            if bar == 0 {
                for (i, w) in chunk.chunks_exact(4).enumerate() {
                    let mut b = [0u8; 4];
                    b.copy_from_slice(w);
                    // CAST: BAR0 offsets fit 32 bits (checked against its size).
                    gpu.bar0_write((offset + at) as u32 + 4 * i as u32, u32::from_le_bytes(b));
                }
                Ok(())
            } else if offset + at + chunk.len() as u64 > vram {
                Err(format!(
                    "BAR1 write at {:#x} runs past the end of VRAM ({vram:#x} bytes)",
                    offset + at
                ))
            } else {
                gpu.bar1_write(offset + at, chunk)
                    .map_err(|e| e.to_string())
            }
        })?;
        outcome.map_err(|t| Refusal::Close(format!("MMIO_WRITE failed: {t}")))
    }

    fn map_sysmem(&mut self, r: &Request) -> Outcome {
        self.gpu(r.dev_id).map_err(Refusal::Answer)?;
        let size = r.arg0;
        if size == 0 || size > MAX_SYSMEM {
            return answer(format!(
                "MAP_SYSMEM of {size} bytes; ask for 1 byte to {} GiB",
                MAX_SYSMEM >> 30
            ));
        }
        {
            let grants = self.shared.lock_grants();
            let mine = grants.values().filter(|g| g.conn == self.conn).count();
            if mine >= super::MAX_GRANTS_PER_CONNECTION {
                return answer(format!(
                    "MAP_SYSMEM: this connection holds {mine} host-memory grants, the most one \
                     may (the protocol has no free: they go when the connection closes)"
                ));
            }
            if grants.len() >= super::MAX_GRANTS {
                return answer(format!(
                    "MAP_SYSMEM: the server holds {} host-memory grants, the most it serves",
                    grants.len()
                ));
            }
        }
        // CAST: bounded by MAX_SYSMEM, which fits usize on the 64-bit hosts the simulator
        // runs on.
        let alloc = match self.shared.sysmem.alloc(size as usize) {
            Ok(a) => a,
            Err(e) => {
                return answer(format!(
                    "could not allocate {size} bytes of host memory: {e}"
                ));
            }
        };
        let Ok(handle) = u32::try_from(alloc.id) else {
            self.shared.sysmem.free(alloc.id);
            return answer("out of sysmem handles (tinygrad's handles are 32-bit)");
        };
        let pages = size.div_ceil(PAGE);
        let list: Vec<u8> = (0..pages)
            .flat_map(|i| (alloc.bus + i * PAGE).to_le_bytes())
            .collect();
        self.shared.lock_grants().insert(
            handle,
            SysmemGrant {
                id: alloc.id,
                len: alloc.len as u64,
                conn: self.conn,
            },
        );
        // Contiguity (arg1) is always given: every allocation is contiguous on the simulated
        // bus.
        self.respond(Response::ok(list.len() as u64, handle.into()), &list)
    }

    fn grant(&self, handle: u32, offset: u64, len: u64) -> Result<SysmemGrant, String> {
        let g = self
            .shared
            .lock_grants()
            .get(&handle)
            .copied()
            .ok_or_else(|| {
                format!("no host memory with handle {handle} (MAP_SYSMEM gives them)")
            })?;
        if offset.checked_add(len).is_none_or(|end| end > g.len) {
            return Err(format!(
                "{len} bytes at {offset:#x} run past the end of handle {handle} ({:#x} bytes)",
                g.len
            ));
        }
        Ok(g)
    }

    fn sysmem_read(&mut self, r: &Request) -> Outcome {
        let g = self.grant(r.bar, r.arg0, r.arg1).map_err(Refusal::Answer)?;
        let (offset, len) = (r.arg0, r.arg1);
        self.tx
            .write_all(&Response::ok(0, 0).encode())
            .map_err(io_close)?;
        let mut done = 0;
        while done < len {
            // CAST: bounded by CHUNK.
            let n = (len - done).min(CHUNK as u64) as usize;
            if let Err(e) = self
                .shared
                .sysmem
                .read_alloc(g.id, offset + done, &mut self.buf[..n])
            {
                return Err(Refusal::Close(format!(
                    "SYSMEM_READ failed mid-stream: {e}"
                )));
            }
            self.tx.write_all(&self.buf[..n]).map_err(io_close)?;
            done += n as u64;
        }
        self.tx.flush().map_err(io_close)?;
        self.sent(len);
        Ok(())
    }

    fn sysmem_write(&mut self, r: &Request) -> Outcome {
        let g = self.grant(r.bar, r.arg0, r.arg1);
        let offset = r.arg0;
        let sysmem = &self.shared.sysmem;
        let outcome = self.stream_in(r.arg1, |at, chunk| match &g {
            Ok(g) => sysmem
                .write_alloc(g.id, offset + at, chunk)
                .map_err(|e| e.to_string()),
            Err(t) => Err(t.clone()),
        })?;
        outcome.map_err(|t| Refusal::Close(format!("SYSMEM_WRITE refused: {t}")))
    }
}

/// Checks a config-space access: a 1-, 2- or 4-byte access inside the 4 KiB of config space.
fn config_access(offset: u64, size: u64) -> Result<(u32, u32), String> {
    match (u32::try_from(offset), size) {
        (Ok(o), 1 | 2 | 4) if o < 4096 && o.is_multiple_of(size as u32) => Ok((o, size as u32)),
        _ => Err(format!(
            "config access of {size} bytes at {offset:#x}; use 1, 2 or 4 aligned bytes below 0x1000"
        )),
    }
}
