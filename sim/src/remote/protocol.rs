//! The wire format of tinygrad's remote PCI protocol (tinygrad 0.14.0,
//! `tinygrad/runtime/support/system.py`: `RemoteCmd`, `RemotePCIDevice._rpc`, `_bulk_read`,
//! `_bulk_write`), as data: the request header, the commands, the response header.
//!
//! All little-endian and packed. A request is `<BIIQQQ` (33 bytes: command, device id, BAR or
//! handle, three arguments) followed by a payload for PROBE, MMIO_WRITE and SYSMEM_WRITE. A
//! response is `<BQQ` (17 bytes: status, two values) followed by data; a non-zero status
//! carries the length of a UTF-8 error text in the first value. MMIO_WRITE and SYSMEM_WRITE
//! get no response at all: the client streams them and relies on the stream's order.

use std::fmt;

/// Bytes of a request header.
pub const REQUEST_BYTES: usize = 33;
/// Bytes of a response header.
pub const RESPONSE_BYTES: usize = 17;

/// A command (`RemoteCmd` in tinygrad, numbered in its order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Command {
    /// List the devices that match a vendor, a base class and (mask, device) pairs.
    Probe,
    /// Bus address and size of a BAR.
    MapBar,
    /// macOS only: system memory handed over as a file descriptor.
    MapSysmemFd,
    /// Read PCI config space.
    CfgRead,
    /// Write PCI config space.
    CfgWrite,
    /// Function-level reset.
    Reset,
    /// Read a BAR (BAR0 in 32-bit registers; BAR1 any length).
    MmioRead,
    /// Write a BAR (no response).
    MmioWrite,
    /// Allocate system memory the device may reach; the server picks the bus addresses.
    MapSysmem,
    /// Read system memory by handle.
    SysmemRead,
    /// Write system memory by handle (no response).
    SysmemWrite,
    /// Resize a BAR to its largest size.
    ResizeBar,
    /// Liveness check.
    Ping,
}

impl Command {
    /// Every command, by wire number.
    pub const ALL: [Command; 13] = [
        Command::Probe,
        Command::MapBar,
        Command::MapSysmemFd,
        Command::CfgRead,
        Command::CfgWrite,
        Command::Reset,
        Command::MmioRead,
        Command::MmioWrite,
        Command::MapSysmem,
        Command::SysmemRead,
        Command::SysmemWrite,
        Command::ResizeBar,
        Command::Ping,
    ];

    /// The command with wire number `n`.
    pub fn from_wire(n: u8) -> Option<Command> {
        Self::ALL.get(usize::from(n)).copied()
    }

    /// The wire number.
    pub fn wire(self) -> u8 {
        // CAST: 13 variants, numbered from 0 in declaration order.
        self as u8
    }

    /// tinygrad's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Command::Probe => "PROBE",
            Command::MapBar => "MAP_BAR",
            Command::MapSysmemFd => "MAP_SYSMEM_FD",
            Command::CfgRead => "CFG_READ",
            Command::CfgWrite => "CFG_WRITE",
            Command::Reset => "RESET",
            Command::MmioRead => "MMIO_READ",
            Command::MmioWrite => "MMIO_WRITE",
            Command::MapSysmem => "MAP_SYSMEM",
            Command::SysmemRead => "SYSMEM_READ",
            Command::SysmemWrite => "SYSMEM_WRITE",
            Command::ResizeBar => "RESIZE_BAR",
            Command::Ping => "PING",
        }
    }

    /// Whether the client expects a response (everything but the two streamed writes).
    pub fn has_response(self) -> bool {
        !matches!(self, Command::MmioWrite | Command::SysmemWrite)
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A request header, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// The command's wire number (kept raw so an unknown one can be reported).
    pub cmd: u8,
    /// Device index (the number after the last `:` of a PROBE name).
    pub dev_id: u32,
    /// BAR index, or the sysmem handle for SYSMEM_READ/WRITE.
    pub bar: u32,
    /// First argument.
    pub arg0: u64,
    /// Second argument.
    pub arg1: u64,
    /// Third argument.
    pub arg2: u64,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

impl Request {
    /// Decodes a header.
    pub fn decode(b: &[u8; REQUEST_BYTES]) -> Request {
        Request {
            cmd: b[0],
            dev_id: u32_at(b, 1),
            bar: u32_at(b, 5),
            arg0: u64_at(b, 9),
            arg1: u64_at(b, 17),
            arg2: u64_at(b, 25),
        }
    }

    /// Encodes a header (what the client sends; for tests and clients).
    pub fn encode(&self) -> [u8; REQUEST_BYTES] {
        let mut b = [0u8; REQUEST_BYTES];
        b[0] = self.cmd;
        b[1..5].copy_from_slice(&self.dev_id.to_le_bytes());
        b[5..9].copy_from_slice(&self.bar.to_le_bytes());
        b[9..17].copy_from_slice(&self.arg0.to_le_bytes());
        b[17..25].copy_from_slice(&self.arg1.to_le_bytes());
        b[25..33].copy_from_slice(&self.arg2.to_le_bytes());
        b
    }

    /// The command, if the number is one.
    pub fn command(&self) -> Option<Command> {
        Command::from_wire(self.cmd)
    }
}

/// A response header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response {
    /// 0 for success.
    pub status: u8,
    /// First value (the error text's length when `status != 0`).
    pub v0: u64,
    /// Second value.
    pub v1: u64,
}

impl Response {
    /// A success with two values.
    pub fn ok(v0: u64, v1: u64) -> Response {
        Response { status: 0, v0, v1 }
    }

    /// Encodes it.
    pub fn encode(&self) -> [u8; RESPONSE_BYTES] {
        let mut b = [0u8; RESPONSE_BYTES];
        b[0] = self.status;
        b[1..9].copy_from_slice(&self.v0.to_le_bytes());
        b[9..17].copy_from_slice(&self.v1.to_le_bytes());
        b
    }

    /// Decodes one (for clients and tests).
    pub fn decode(b: &[u8; RESPONSE_BYTES]) -> Response {
        Response {
            status: b[0],
            v0: u64_at(b, 1),
            v1: u64_at(b, 9),
        }
    }
}

/// Parses PROBE's payload: little-endian u32 (mask, device) pairs. `None` when its length
/// is not a whole number of pairs.
pub fn probe_pairs(payload: &[u8]) -> Option<Vec<(u32, u32)>> {
    if !payload.len().is_multiple_of(8) {
        return None;
    }
    Some(
        payload
            .chunks_exact(8)
            .map(|c| (u32_at(c, 0), u32_at(c, 4)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_match_tinygrads_struct_formats() {
        // struct.pack('<BIIQQQ', 6, 1, 0, 0x1fa828, 4, 0) as tinygrad sends an MMIO_READ.
        let wire: [u8; 33] = [
            6, 1, 0, 0, 0, 0, 0, 0, 0, 0x28, 0xa8, 0x1f, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0,
        ];
        let r = Request::decode(&wire);
        assert_eq!(r.command(), Some(Command::MmioRead));
        assert_eq!((r.dev_id, r.bar, r.arg0, r.arg1), (1, 0, 0x1fa828, 4));
        assert_eq!(r.encode(), wire);
        // struct.pack('<BQQ', 1, 5, 0).
        let resp = Response {
            status: 1,
            v0: 5,
            v1: 0,
        };
        assert_eq!(
            resp.encode(),
            [1, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(Response::decode(&resp.encode()), resp);
    }

    #[test]
    fn commands_are_numbered_as_tinygrad_numbers_them() {
        // RemoteCmd: PROBE, MAP_BAR, MAP_SYSMEM_FD, CFG_READ, CFG_WRITE, RESET, MMIO_READ,
        // MMIO_WRITE, MAP_SYSMEM, SYSMEM_READ, SYSMEM_WRITE, RESIZE_BAR, PING = range(13)
        let names = [
            "PROBE",
            "MAP_BAR",
            "MAP_SYSMEM_FD",
            "CFG_READ",
            "CFG_WRITE",
            "RESET",
            "MMIO_READ",
            "MMIO_WRITE",
            "MAP_SYSMEM",
            "SYSMEM_READ",
            "SYSMEM_WRITE",
            "RESIZE_BAR",
            "PING",
        ];
        for (n, name) in names.iter().enumerate() {
            let c = Command::from_wire(n as u8).unwrap();
            assert_eq!((c.name(), c.wire() as usize), (*name, n));
        }
        assert_eq!(Command::from_wire(13), None);
        assert!(!Command::MmioWrite.has_response() && !Command::SysmemWrite.has_response());
        assert!(Command::MmioRead.has_response());
    }

    #[test]
    fn probe_payload() {
        let mut p = Vec::new();
        for (m, d) in [(0xff00u32, 0x2b00u32), (0xff00, 0x2200)] {
            p.extend_from_slice(&m.to_le_bytes());
            p.extend_from_slice(&d.to_le_bytes());
        }
        assert_eq!(
            probe_pairs(&p),
            Some(vec![(0xff00, 0x2b00), (0xff00, 0x2200)])
        );
        assert_eq!(probe_pairs(&p[..7]), None);
    }
}
