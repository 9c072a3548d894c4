//! The vfio-user wire format, server side: the requests a client (QEMU's `vfio-user-pci`)
//! sends and the replies the simulator answers.
//!
//! Facts from QEMU's `docs/interop/vfio-user.rst` (the specification) and its client,
//! `hw/vfio-user/protocol.h` and `proxy.c`: every message starts with a 16-byte header (`id`
//! u16, `command` u16, `size` u32 — the whole message, header included —, `flags` u32, `error`
//! u32), little-endian; flags bits 3:0 are the type (0 request, 1 reply), bit 4 "no reply",
//! bit 5 "error" (then `error` is an errno). The payloads reuse the VFIO ioctl structures
//! (`linux/vfio.h`): `vfio_region_info`, `vfio_irq_info`, `vfio_irq_set`, `vfio_device_info`.
//! File descriptors (DMA memory) travel as `SCM_RIGHTS` with the message.
//!
//! [`decode`] checks every length against the header and the header's size against
//! [`MAX_MESSAGE`] before anything is read or allocated; a message that fails is a
//! [`DecodeError`], never a panic.

/// Bytes in the header.
pub const HEADER_LEN: usize = 16;
/// The largest REGION_READ/WRITE data the server accepts, and says so in VERSION's
/// `max_data_xfer_size` (QEMU's default is the same 1 MiB, `VFIO_USER_DEF_MAX_XFER`).
pub const MAX_DATA_XFER: u32 = 1 << 20;
/// The largest message accepted: a REGION_WRITE of [`MAX_DATA_XFER`] bytes, or a VERSION with
/// a capabilities text of up to 64 KiB.
pub const MAX_MESSAGE: u32 = HEADER_LEN as u32 + 16 + MAX_DATA_XFER;
/// The most file descriptors one message may carry (said as `max_msg_fds`).
pub const MAX_FDS: usize = 8;

/// Header flags: the message type (bits 3:0).
pub const FLAG_TYPE_MASK: u32 = 0xf;
/// Type: request.
pub const FLAG_REQUEST: u32 = 0;
/// Type: reply.
pub const FLAG_REPLY: u32 = 1;
/// The sender wants no reply.
pub const FLAG_NO_REPLY: u32 = 0x10;
/// The reply is an error; the header's `error` is the errno.
pub const FLAG_ERROR: u32 = 0x20;

/// Protocol version the server speaks (QEMU's client: major 0, minor 0 or less than its own).
pub const VERSION_MAJOR: u16 = 0;
/// See [`VERSION_MAJOR`].
pub const VERSION_MINOR: u16 = 0;

/// `vfio_device_info.flags`: `VFIO_DEVICE_FLAGS_RESET` (bit 0), `VFIO_DEVICE_FLAGS_PCI` (bit 1).
pub const DEVICE_FLAGS_RESET: u32 = 1 << 0;
/// See [`DEVICE_FLAGS_RESET`].
pub const DEVICE_FLAGS_PCI: u32 = 1 << 1;
/// `vfio_region_info.flags`: READ, WRITE, MMAP (bits 0..2).
pub const REGION_READ: u32 = 1 << 0;
/// See [`REGION_READ`].
pub const REGION_WRITE: u32 = 1 << 1;
/// See [`REGION_READ`]: the client may mmap the region from the file descriptor that comes
/// with the reply, at the reply's `offset` in it.
pub const REGION_MMAP: u32 = 1 << 2;
/// `vfio_irq_info.flags`: `VFIO_IRQ_INFO_EVENTFD` (bit 0), `VFIO_IRQ_INFO_NORESIZE` (bit 3).
pub const IRQ_INFO_EVENTFD: u32 = 1 << 0;
/// See [`IRQ_INFO_EVENTFD`].
pub const IRQ_INFO_NORESIZE: u32 = 1 << 3;
/// DMA_MAP flags: `VFIO_USER_F_DMA_REGION_READ` / `_WRITE`.
pub const DMA_READ: u32 = 1 << 0;
/// See [`DMA_READ`].
pub const DMA_WRITE: u32 = 1 << 1;
/// DMA_UNMAP flags: `VFIO_DMA_UNMAP_FLAG_GET_DIRTY_BITMAP` (1), `_ALL` (2).
pub const UNMAP_DIRTY_BITMAP: u32 = 1 << 0;
/// See [`UNMAP_DIRTY_BITMAP`].
pub const UNMAP_ALL: u32 = 1 << 1;

/// The commands (`enum vfio_user_command`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Command {
    Version = 1,
    DmaMap = 2,
    DmaUnmap = 3,
    DeviceGetInfo = 4,
    DeviceGetRegionInfo = 5,
    DeviceGetRegionIoFds = 6,
    DeviceGetIrqInfo = 7,
    DeviceSetIrqs = 8,
    RegionRead = 9,
    RegionWrite = 10,
    DmaRead = 11,
    DmaWrite = 12,
    DeviceReset = 13,
}

impl Command {
    /// The command with wire number `n`.
    pub fn from_wire(n: u16) -> Option<Command> {
        use Command::*;
        Some(match n {
            1 => Version,
            2 => DmaMap,
            3 => DmaUnmap,
            4 => DeviceGetInfo,
            5 => DeviceGetRegionInfo,
            6 => DeviceGetRegionIoFds,
            7 => DeviceGetIrqInfo,
            8 => DeviceSetIrqs,
            9 => RegionRead,
            10 => RegionWrite,
            11 => DmaRead,
            12 => DmaWrite,
            13 => DeviceReset,
            _ => return None,
        })
    }
}

/// A message header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub id: u16,
    pub command: u16,
    /// The whole message's size, header included.
    pub size: u32,
    pub flags: u32,
    pub error: u32,
}

impl Header {
    /// Parses the 16 header bytes (no checks: [`check_request`] judges them).
    pub fn parse(b: &[u8; HEADER_LEN]) -> Header {
        Header {
            id: u16::from_le_bytes([b[0], b[1]]),
            command: u16::from_le_bytes([b[2], b[3]]),
            size: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            flags: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
            error: u32::from_le_bytes([b[12], b[13], b[14], b[15]]),
        }
    }

    /// The 16 bytes on the wire.
    pub fn to_bytes(self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..2].copy_from_slice(&self.id.to_le_bytes());
        b[2..4].copy_from_slice(&self.command.to_le_bytes());
        b[4..8].copy_from_slice(&self.size.to_le_bytes());
        b[8..12].copy_from_slice(&self.flags.to_le_bytes());
        b[12..16].copy_from_slice(&self.error.to_le_bytes());
        b
    }

    /// Whether the sender asked for no reply.
    pub fn no_reply(&self) -> bool {
        self.flags & FLAG_NO_REPLY != 0
    }
}

/// Why a message was refused. Each closes the connection: after a malformed message the
/// stream's framing can no longer be trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("message size {0} is smaller than the 16-byte header")]
    TooSmall(u32),
    #[error("message size {0} exceeds the {MAX_MESSAGE}-byte limit this server announced")]
    TooLarge(u32),
    #[error("message type {0:#x} is not a request (flags {1:#x})")]
    NotRequest(u32, u32),
    #[error("unknown command {0}")]
    UnknownCommand(u16),
    #[error("{command:?}: payload of {got} bytes, expected {expected}")]
    Length {
        command: Command,
        got: usize,
        expected: String,
    },
    #[error("VERSION: capabilities are not NUL-terminated UTF-8 text")]
    VersionText,
    #[error("{0:?}: a request the server must answer carries the no-reply flag")]
    NoReplyNotAllowed(Command),
    #[error("{0:?}: count {1} exceeds max_data_xfer_size {MAX_DATA_XFER}")]
    Transfer(Command, u32),
}

/// Checks a header as the start of a request: its size and type, before its payload is read.
pub fn check_request(h: &Header) -> Result<(), DecodeError> {
    if (h.size as usize) < HEADER_LEN {
        return Err(DecodeError::TooSmall(h.size));
    }
    if h.size > MAX_MESSAGE {
        return Err(DecodeError::TooLarge(h.size));
    }
    if h.flags & FLAG_TYPE_MASK != FLAG_REQUEST {
        return Err(DecodeError::NotRequest(h.flags & FLAG_TYPE_MASK, h.flags));
    }
    Ok(())
}

/// A decoded request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request<'a> {
    Version {
        major: u16,
        minor: u16,
        capabilities: &'a str,
    },
    DmaMap {
        flags: u32,
        offset: u64,
        address: u64,
        size: u64,
    },
    DmaUnmap {
        argsz: u32,
        flags: u32,
        address: u64,
        size: u64,
    },
    DeviceGetInfo,
    RegionInfo {
        argsz: u32,
        index: u32,
    },
    IrqInfo {
        index: u32,
    },
    SetIrqs {
        flags: u32,
        index: u32,
        start: u32,
        count: u32,
    },
    RegionRead {
        offset: u64,
        region: u32,
        count: u32,
    },
    RegionWrite {
        offset: u64,
        region: u32,
        data: &'a [u8],
    },
    Reset,
    /// A command the protocol has that this server does not serve (answered with an error,
    /// the connection kept).
    Unsupported(Command),
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    // PANIC: callers check the payload's length before reading fields inside it.
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    // PANIC: as for u32_at.
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Decodes the request `h` announced from its payload (exactly `h.size - 16` bytes).
pub fn decode<'a>(h: &Header, payload: &'a [u8]) -> Result<Request<'a>, DecodeError> {
    check_request(h)?;
    let command = Command::from_wire(h.command).ok_or(DecodeError::UnknownCommand(h.command))?;
    let len = payload.len();
    if len != h.size as usize - HEADER_LEN {
        return Err(DecodeError::Length {
            command,
            got: len,
            expected: format!(
                "{} (the header's size less 16)",
                h.size as usize - HEADER_LEN
            ),
        });
    }
    let need = |n: usize, exact: bool| {
        let ok = if exact { len == n } else { len >= n };
        ok.then_some(()).ok_or_else(|| DecodeError::Length {
            command,
            got: len,
            expected: if exact {
                n.to_string()
            } else {
                format!("at least {n}")
            },
        })
    };
    let must_reply = || {
        (!h.no_reply())
            .then_some(())
            .ok_or(DecodeError::NoReplyNotAllowed(command))
    };
    Ok(match command {
        Command::Version => {
            must_reply()?;
            need(4, false)?;
            let text = &payload[4..];
            let capabilities = match text.split_last() {
                None => "",
                Some((0, body)) => {
                    std::str::from_utf8(body).map_err(|_| DecodeError::VersionText)?
                }
                Some(_) => return Err(DecodeError::VersionText),
            };
            Request::Version {
                major: u16::from_le_bytes([payload[0], payload[1]]),
                minor: u16::from_le_bytes([payload[2], payload[3]]),
                capabilities,
            }
        }
        Command::DmaMap => {
            need(32, true)?;
            Request::DmaMap {
                flags: u32_at(payload, 4),
                offset: u64_at(payload, 8),
                address: u64_at(payload, 16),
                size: u64_at(payload, 24),
            }
        }
        Command::DmaUnmap => {
            need(24, true)?;
            Request::DmaUnmap {
                argsz: u32_at(payload, 0),
                flags: u32_at(payload, 4),
                address: u64_at(payload, 8),
                size: u64_at(payload, 16),
            }
        }
        Command::DeviceGetInfo => {
            must_reply()?;
            need(4, false)?;
            Request::DeviceGetInfo
        }
        Command::DeviceGetRegionInfo => {
            must_reply()?;
            need(32, false)?;
            Request::RegionInfo {
                argsz: u32_at(payload, 0),
                index: u32_at(payload, 8),
            }
        }
        Command::DeviceGetIrqInfo => {
            must_reply()?;
            need(16, true)?;
            Request::IrqInfo {
                index: u32_at(payload, 8),
            }
        }
        Command::DeviceSetIrqs => {
            need(20, false)?;
            Request::SetIrqs {
                flags: u32_at(payload, 4),
                index: u32_at(payload, 8),
                start: u32_at(payload, 12),
                count: u32_at(payload, 16),
            }
        }
        Command::RegionRead => {
            must_reply()?;
            need(16, true)?;
            let count = u32_at(payload, 12);
            if count > MAX_DATA_XFER {
                return Err(DecodeError::Transfer(command, count));
            }
            Request::RegionRead {
                offset: u64_at(payload, 0),
                region: u32_at(payload, 8),
                count,
            }
        }
        Command::RegionWrite => {
            need(16, false)?;
            let count = u32_at(payload, 12);
            if count > MAX_DATA_XFER {
                return Err(DecodeError::Transfer(command, count));
            }
            // CAST: count is at most MAX_DATA_XFER.
            need(16 + count as usize, true)?;
            Request::RegionWrite {
                offset: u64_at(payload, 0),
                region: u32_at(payload, 8),
                data: &payload[16..],
            }
        }
        Command::DeviceReset => {
            need(0, true)?;
            Request::Reset
        }
        c @ (Command::DeviceGetRegionIoFds | Command::DmaRead | Command::DmaWrite) => {
            Request::Unsupported(c)
        }
    })
}

/// A reply to `h` carrying `body`.
pub fn reply(h: &Header, body: &[u8]) -> Vec<u8> {
    // CAST: bodies are bounded by MAX_MESSAGE (a REGION_READ of at most MAX_DATA_XFER).
    let head = Header {
        id: h.id,
        command: h.command,
        size: (HEADER_LEN + body.len()) as u32,
        flags: FLAG_REPLY,
        error: 0,
    };
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(&head.to_bytes());
    out.extend_from_slice(body);
    out
}

/// An error reply to `h` with `errno`.
pub fn error_reply(h: &Header, errno: i32) -> [u8; HEADER_LEN] {
    Header {
        id: h.id,
        command: h.command,
        size: HEADER_LEN as u32,
        flags: FLAG_REPLY | FLAG_ERROR,
        // CAST: errno values are small and positive.
        error: errno as u32,
    }
    .to_bytes()
}

/// Little-endian words, concatenated (reply bodies are runs of u32 and u64 fields).
pub fn words(fields: &[Field]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fields {
        match *f {
            Field::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
            Field::U32(v) => out.extend_from_slice(&v.to_le_bytes()),
            Field::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
        }
    }
    out
}

/// One field of a reply body.
#[derive(Clone, Copy, Debug)]
pub enum Field {
    U16(u16),
    U32(u32),
    U64(u64),
}
