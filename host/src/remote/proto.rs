//! tinygrad's remote PCI protocol on the wire, and one connection speaking it.
//!
//! Request: `<BIIQQQ` (cmd u8, dev_id u32, bar u32, arg0, arg1, arg2 u64; little-endian,
//! packed, 33 bytes), then a payload. Response: `<BQQ` (status u8, v0, v1; 17 bytes), then
//! data. A status other than 0 carries v0 bytes of UTF-8 error text. MMIO_WRITE and
//! SYSMEM_WRITE have no response: the stream orders them.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;

/// Request header size.
pub const REQUEST_LEN: usize = 33;
/// Response header size.
pub const RESPONSE_LEN: usize = 17;

/// The protocol's commands (tinygrad `RemoteCmd`, in its order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cmd {
    /// List devices: arg0 = base class, arg1 = payload length, arg2 = vendor.
    Probe = 0,
    /// BAR bus address and size.
    MapBar = 1,
    /// (macOS only, not used.)
    MapSysmemFd = 2,
    /// Config read: arg0 = offset, arg1 = size.
    CfgRead = 3,
    /// Config write: arg0 = offset, arg1 = size, arg2 = value.
    CfgWrite = 4,
    /// Function reset.
    Reset = 5,
    /// BAR read: bar, arg0 = offset, arg1 = size.
    MmioRead = 6,
    /// BAR write (no response): bar, arg0 = offset, arg1 = length, then data.
    MmioWrite = 7,
    /// DMA memory: arg0 = size, arg1 = contiguous.
    MapSysmem = 8,
    /// DMA memory read: bar = handle, arg0 = offset, arg1 = size.
    SysmemRead = 9,
    /// DMA memory write (no response): bar = handle, arg0 = offset, arg1 = length, data.
    SysmemWrite = 10,
    /// Resize BAR1.
    ResizeBar = 11,
    /// Liveness.
    Ping = 12,
}

impl Cmd {
    /// The command's name as tinygrad spells it.
    pub fn name(self) -> &'static str {
        match self {
            Cmd::Probe => "PROBE",
            Cmd::MapBar => "MAP_BAR",
            Cmd::MapSysmemFd => "MAP_SYSMEM_FD",
            Cmd::CfgRead => "CFG_READ",
            Cmd::CfgWrite => "CFG_WRITE",
            Cmd::Reset => "RESET",
            Cmd::MmioRead => "MMIO_READ",
            Cmd::MmioWrite => "MMIO_WRITE",
            Cmd::MapSysmem => "MAP_SYSMEM",
            Cmd::SysmemRead => "SYSMEM_READ",
            Cmd::SysmemWrite => "SYSMEM_WRITE",
            Cmd::ResizeBar => "RESIZE_BAR",
            Cmd::Ping => "PING",
        }
    }
}

impl fmt::Display for Cmd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A request header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// The command.
    pub cmd: Cmd,
    /// The device (from PROBE's names).
    pub dev_id: u32,
    /// BAR index, or sysmem handle.
    pub bar: u32,
    /// Arguments.
    pub args: [u64; 3],
}

impl Request {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; REQUEST_LEN] {
        let mut b = [0u8; REQUEST_LEN];
        b[0] = self.cmd as u8;
        b[1..5].copy_from_slice(&self.dev_id.to_le_bytes());
        b[5..9].copy_from_slice(&self.bar.to_le_bytes());
        for (i, a) in self.args.iter().enumerate() {
            b[9 + 8 * i..17 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        b
    }
}

/// A response header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response {
    /// 0 on success.
    pub status: u8,
    /// First value (error-text length when status != 0).
    pub v0: u64,
    /// Second value.
    pub v1: u64,
}

impl Response {
    /// Decodes a header.
    pub fn decode(b: &[u8; RESPONSE_LEN]) -> Self {
        let u64_at = |o: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[o..o + 8]);
            u64::from_le_bytes(w)
        };
        Response {
            status: b[0],
            v0: u64_at(1),
            v1: u64_at(9),
        }
    }
}

/// The longest error text a server may send (longer is taken as a broken stream).
const MAX_ERROR_TEXT: u64 = 1 << 16;

/// What a command to the server could not do.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The server closed the connection (it stopped, crashed, or refused a write).
    #[error("the server at {peer} closed the connection during {cmd}")]
    Closed {
        /// The server.
        peer: String,
        /// The command in flight.
        cmd: Cmd,
    },
    /// The connection failed or timed out.
    #[error("{cmd} to {peer} failed: {source}")]
    Io {
        /// The server.
        peer: String,
        /// The command in flight.
        cmd: Cmd,
        /// The cause (a timeout reads "timed out" / "would block").
        #[source]
        source: io::Error,
    },
    /// The server answered with an error.
    #[error("the server at {peer} refused {cmd}: {text}")]
    Server {
        /// The server.
        peer: String,
        /// The command.
        cmd: Cmd,
        /// Its error text.
        text: String,
    },
    /// The reply makes no sense; the connection is not used again.
    #[error("{cmd}: the reply from {peer} makes no sense: {what}")]
    BadReply {
        /// The server.
        peer: String,
        /// The command.
        cmd: Cmd,
        /// What was wrong.
        what: String,
    },
    /// An earlier failure ended the connection.
    #[error("{cmd}: the connection to {peer} is gone after an earlier failure ({first})")]
    Dead {
        /// The server.
        peer: String,
        /// The command asked for now.
        cmd: Cmd,
        /// The first failure, as text.
        first: String,
    },
}

struct Stream {
    tcp: TcpStream,
    /// Why the stream stopped being usable.
    dead: Option<String>,
}

/// One TCP connection to a server, shared by the platform and its memory views. Each call
/// holds the stream for its whole exchange, so exchanges never interleave.
pub struct Conn {
    stream: Mutex<Stream>,
    peer: String,
    dev_id: u32,
}

impl fmt::Debug for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conn")
            .field("peer", &self.peer)
            .field("dev_id", &self.dev_id)
            .finish()
    }
}

impl Conn {
    /// Wraps a connected stream.
    pub fn new(tcp: TcpStream, peer: String) -> Self {
        Conn {
            stream: Mutex::new(Stream { tcp, dead: None }),
            peer,
            dev_id: 0,
        }
    }

    /// The server's address.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// Sets the device later calls address.
    pub fn set_dev_id(&mut self, dev_id: u32) {
        self.dev_id = dev_id;
    }

    /// The device calls address.
    pub fn dev_id(&self) -> u32 {
        self.dev_id
    }

    /// Whether an earlier failure ended the connection.
    pub fn is_dead(&self) -> bool {
        self.stream.lock().map_or(true, |s| s.dead.is_some())
    }

    fn with_stream<T>(
        &self,
        cmd: Cmd,
        f: impl FnOnce(&mut TcpStream) -> Result<T, RemoteError>,
    ) -> Result<T, RemoteError> {
        let mut s = match self.stream.lock() {
            Ok(s) => s,
            // A panic elsewhere while the stream was held: its state is unknown.
            Err(p) => {
                let mut s = p.into_inner();
                s.dead
                    .get_or_insert_with(|| "a thread panicked mid-exchange".into());
                s
            }
        };
        if let Some(first) = &s.dead {
            return Err(RemoteError::Dead {
                peer: self.peer.clone(),
                cmd,
                first: first.clone(),
            });
        }
        let r = f(&mut s.tcp);
        if let Err(e) = &r
            && !matches!(e, RemoteError::Server { .. })
        {
            // Anything but a clean server error leaves the stream out of step.
            s.dead = Some(e.to_string());
        }
        r
    }

    fn io(&self, cmd: Cmd, e: io::Error) -> RemoteError {
        if matches!(
            e.kind(),
            io::ErrorKind::UnexpectedEof
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::ConnectionAborted
        ) {
            RemoteError::Closed {
                peer: self.peer.clone(),
                cmd,
            }
        } else {
            RemoteError::Io {
                peer: self.peer.clone(),
                cmd,
                source: e,
            }
        }
    }

    /// Sends `req` and `payload`, reads the response header; a server error (status != 0
    /// and its text) becomes [`RemoteError::Server`].
    fn exchange(
        &self,
        tcp: &mut TcpStream,
        req: &Request,
        payload: &[u8],
    ) -> Result<Response, RemoteError> {
        let cmd = req.cmd;
        send(tcp, req, payload).map_err(|e| self.io(cmd, e))?;
        let mut hdr = [0u8; RESPONSE_LEN];
        tcp.read_exact(&mut hdr).map_err(|e| self.io(cmd, e))?;
        let resp = Response::decode(&hdr);
        if resp.status == 0 {
            return Ok(resp);
        }
        if resp.v0 > MAX_ERROR_TEXT {
            return Err(self.bad(cmd, format!("error text of {} bytes", resp.v0)));
        }
        // CAST: bounded by MAX_ERROR_TEXT just above.
        let mut text = vec![0u8; resp.v0 as usize];
        tcp.read_exact(&mut text).map_err(|e| self.io(cmd, e))?;
        let text = String::from_utf8_lossy(&text).into_owned();
        Err(RemoteError::Server {
            peer: self.peer.clone(),
            cmd,
            text: if text.is_empty() {
                format!("status {} with no text", resp.status)
            } else {
                text
            },
        })
    }

    /// Sends `req` with `payload`, reads the response header and then `data.len()` bytes of
    /// data into `data`. Returns the header.
    pub fn call(
        &self,
        req: Request,
        payload: &[u8],
        data: &mut [u8],
    ) -> Result<Response, RemoteError> {
        self.with_stream(req.cmd, |tcp| {
            let resp = self.exchange(tcp, &req, payload)?;
            tcp.read_exact(data).map_err(|e| self.io(req.cmd, e))?;
            Ok(resp)
        })
    }

    /// Sends `req`, reads the header, then as many bytes of data as `check` derives from the
    /// header (it refuses lengths that make no sense before anything is read).
    pub fn call_with_tail(
        &self,
        req: Request,
        payload: &[u8],
        check: impl FnOnce(&Response) -> Result<usize, String>,
    ) -> Result<(Response, Vec<u8>), RemoteError> {
        self.with_stream(req.cmd, |tcp| {
            let resp = self.exchange(tcp, &req, payload)?;
            let len = check(&resp).map_err(|what| self.bad(req.cmd, what))?;
            let mut tail = vec![0u8; len];
            tcp.read_exact(&mut tail).map_err(|e| self.io(req.cmd, e))?;
            Ok((resp, tail))
        })
    }

    /// Sends a request that gets no response (MMIO_WRITE, SYSMEM_WRITE).
    pub fn send_only(&self, req: Request, payload: &[u8]) -> Result<(), RemoteError> {
        let cmd = req.cmd;
        self.with_stream(cmd, |tcp| {
            send(tcp, &req, payload).map_err(|e| self.io(cmd, e))
        })
    }

    fn bad(&self, cmd: Cmd, what: String) -> RemoteError {
        RemoteError::BadReply {
            peer: self.peer.clone(),
            cmd,
            what,
        }
    }

    /// A request for this connection's device.
    pub fn req(&self, cmd: Cmd, bar: u32, args: [u64; 3]) -> Request {
        Request {
            cmd,
            dev_id: self.dev_id,
            bar,
            args,
        }
    }
}

fn send(tcp: &mut TcpStream, req: &Request, payload: &[u8]) -> io::Result<()> {
    // One write for small requests (a register write is one segment with TCP_NODELAY).
    if payload.len() <= 64 {
        let mut buf = [0u8; REQUEST_LEN + 64];
        buf[..REQUEST_LEN].copy_from_slice(&req.encode());
        buf[REQUEST_LEN..REQUEST_LEN + payload.len()].copy_from_slice(payload);
        tcp.write_all(&buf[..REQUEST_LEN + payload.len()])
    } else {
        tcp.write_all(&req.encode())?;
        tcp.write_all(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_match_tinygrads_struct_formats() {
        // struct.pack('<BIIQQQ', 6, 1, 0, 0x1fa828, 4, 0)
        let r = Request {
            cmd: Cmd::MmioRead,
            dev_id: 1,
            bar: 0,
            args: [0x1f_a828, 4, 0],
        };
        let mut want = vec![6u8, 1, 0, 0, 0, 0, 0, 0, 0];
        want.extend_from_slice(&0x1f_a828u64.to_le_bytes());
        want.extend_from_slice(&4u64.to_le_bytes());
        want.extend_from_slice(&0u64.to_le_bytes());
        assert_eq!(r.encode().as_slice(), want.as_slice());
        // struct.pack('<BQQ', 1, 5, 7)
        let mut b = [0u8; RESPONSE_LEN];
        b[0] = 1;
        b[1] = 5;
        b[9] = 7;
        assert_eq!(
            Response::decode(&b),
            Response {
                status: 1,
                v0: 5,
                v1: 7
            }
        );
        assert_eq!(Cmd::Ping as u8, 12);
        assert_eq!(Cmd::SysmemWrite as u8, 10);
    }
}
