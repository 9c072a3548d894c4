//! One vfio-user connection: requests against the simulated GPU.
//!
//! Regions are the VFIO PCI indexes (`linux/vfio.h`, `VFIO_PCI_BAR0_REGION_INDEX` = 0 …
//! `VFIO_PCI_CONFIG_REGION_INDEX` = 7, `VFIO_PCI_VGA_REGION_INDEX` = 8); IRQs the VFIO PCI
//! IRQ indexes (INTx 0, MSI 1, MSI-X 2, ERR 3, REQ 4). A request the server refuses is answered
//! with an error reply and the connection stays; a message that cannot be decoded closes it.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;

use super::protocol::{
    self, Command, DecodeError, Field, HEADER_LEN, Header, MAX_DATA_XFER, MAX_FDS, Request,
};
use super::{Shared, region};
use crate::device::SimGpu;

/// Why a connection ended.
#[derive(Debug, thiserror::Error)]
pub enum SessionEnd {
    /// The client closed the socket between messages.
    #[error("the client closed the connection")]
    Closed,
    /// The socket failed (or closed in the middle of a message).
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
    /// A message could not be decoded: the connection is closed.
    #[error("malformed message, connection closed: {0}")]
    Malformed(#[from] DecodeError),
    /// A request came before VERSION.
    #[error("{0:?} before VERSION: the client must negotiate the version first")]
    NotNegotiated(Command),
}

/// A refused request: errno for the reply, and why (for the log).
type Refusal = (i32, String);

fn refuse<T>(errno: i32, why: impl Into<String>) -> Result<T, Refusal> {
    Err((errno, why.into()))
}

/// Serves `stream` until the client closes it or sends something malformed.
pub(super) fn serve(gpu: &SimGpu, shared: &Shared, mut stream: UnixStream) -> SessionEnd {
    let mut negotiated = false;
    loop {
        let (head, fds) = match recv_header(&stream) {
            Ok(Some(x)) => x,
            Ok(None) => return SessionEnd::Closed,
            Err(e) => return e,
        };
        let h = Header::parse(&head);
        if let Err(e) = protocol::check_request(&h) {
            let _ = stream.write_all(&protocol::error_reply(&h, libc::EINVAL));
            return e.into();
        }
        // CAST: check_request bounded the size by MAX_MESSAGE.
        let mut payload = vec![0u8; h.size as usize - HEADER_LEN];
        if let Err(e) = stream.read_exact(&mut payload) {
            return e.into();
        }
        let req = match protocol::decode(&h, &payload) {
            Ok(r) => r,
            Err(e) => {
                let _ = stream.write_all(&protocol::error_reply(&h, libc::EINVAL));
                return e.into();
            }
        };
        if !negotiated {
            if !matches!(req, Request::Version { .. }) {
                let _ = stream.write_all(&protocol::error_reply(&h, libc::EINVAL));
                // PANIC: decode succeeded, so the command is known.
                let c = Command::from_wire(h.command).expect("decoded command");
                return SessionEnd::NotNegotiated(c);
            }
            negotiated = true;
        }
        shared.count(h.command);
        // BAR1's REGION_INFO carries the VRAM's memory file when it is offered for mmap.
        let region_fd = match req {
            Request::RegionInfo { index: 1, .. } if shared.bar1_mmap => gpu.bus().vram.file(),
            _ => None,
        };
        let answer = handle(gpu, shared, &req, fds);
        if shared.verbose {
            debug_line(&req, &answer);
        }
        let answer_ok = answer.is_ok();
        let out = match answer {
            Ok(body) => protocol::reply(&h, &body),
            Err((errno, why)) => {
                let c = Command::from_wire(h.command).map_or("?".into(), |c| format!("{c:?}"));
                shared.refused(format!("{c}: {why}"));
                gpu.log().warn("vfio-user", format!("refused: {why}"));
                protocol::error_reply(&h, errno).to_vec()
            }
        };
        // A request with the no-reply flag gets no answer, not even an error (the
        // specification: "the receiver must not send a reply").
        if !h.no_reply() {
            let sent = match region_fd {
                Some(fd) if answer_ok => send_with_fd(&stream, &out, fd),
                _ => stream.write_all(&out),
            };
            if let Err(e) = sent {
                return e.into();
            }
        }
    }
}

fn handle(
    gpu: &SimGpu,
    shared: &Shared,
    req: &Request<'_>,
    mut fds: Vec<OwnedFd>,
) -> Result<Vec<u8>, Refusal> {
    use Field::{U16, U32, U64};
    if !fds.is_empty() && !matches!(req, Request::DmaMap { .. } | Request::SetIrqs { .. }) {
        return refuse(
            libc::EINVAL,
            format!("{} unexpected file descriptors", fds.len()),
        );
    }
    match *req {
        Request::Version { major, .. } => {
            if major != protocol::VERSION_MAJOR {
                return refuse(
                    libc::ENOTSUP,
                    format!("client version {major}.x, server 0.0"),
                );
            }
            let caps = format!(
                "{{\"capabilities\":{{\"max_msg_fds\":{MAX_FDS},\"max_data_xfer_size\":\
                 {MAX_DATA_XFER}}}}}\0"
            );
            let mut body =
                protocol::words(&[U16(protocol::VERSION_MAJOR), U16(protocol::VERSION_MINOR)]);
            body.extend_from_slice(caps.as_bytes());
            Ok(body)
        }
        Request::DmaMap {
            flags,
            offset,
            address,
            size,
        } => {
            if fds.len() > 1 {
                return refuse(libc::EINVAL, format!("DMA_MAP with {} fds", fds.len()));
            }
            let Some(fd) = fds.pop() else {
                // Memory the client does not share as a file (QEMU: its ROMs, or all of a
                // guest's RAM without a shared memory backend) would need DMA_READ/DMA_WRITE
                // messages from server to client, which this server does not send. The map is
                // accepted, so the client carries on, and the GPU cannot reach it: a DMA there
                // is an IOMMU fault, as for any address never mapped.
                shared.unreachable(format!(
                    "{address:#x}+{size:#x} (DMA_MAP without a file descriptor; for DMA into \
                     guest RAM give QEMU -object memory-backend-memfd,share=on)"
                ));
                gpu.log().info(
                    "vfio-user",
                    format!("DMA_MAP {address:#x}+{size:#x} without a descriptor: unreachable"),
                );
                return Ok(Vec::new());
            };
            let writable = flags & protocol::DMA_WRITE != 0;
            gpu.bus()
                .sysmem
                .map_fd(address, size, fd.as_fd(), offset, writable)
                .map_err(|e| (libc::EINVAL, format!("DMA_MAP {address:#x}+{size:#x}: {e}")))?;
            shared.mapped(1);
            Ok(Vec::new())
        }
        Request::DmaUnmap {
            argsz,
            flags,
            address,
            size,
        } => {
            if flags & protocol::UNMAP_DIRTY_BITMAP != 0 {
                return refuse(libc::ENOTSUP, "DMA_UNMAP: dirty bitmaps are not kept");
            }
            let (a, s) = if flags & protocol::UNMAP_ALL != 0 {
                (0, 0)
            } else {
                (address, size.max(1))
            };
            let n = gpu.bus().sysmem.unmap_fd(a, s);
            shared.mapped(-(n as i64));
            Ok(protocol::words(&[
                U32(argsz),
                U32(flags),
                U64(address),
                U64(size),
            ]))
        }
        Request::DeviceGetInfo => Ok(protocol::words(&[
            U32(16),
            U32(protocol::DEVICE_FLAGS_PCI | protocol::DEVICE_FLAGS_RESET),
            U32(region::COUNT),
            U32(IRQ_COUNT),
        ])),
        Request::RegionInfo { index, .. } => {
            if index >= region::COUNT {
                return refuse(libc::EINVAL, format!("no region {index}"));
            }
            let (size, mut flags) = region::info(gpu, shared.bar1_size, index);
            if index == 1 && shared.bar1_mmap && gpu.bus().vram.file().is_some() {
                flags |= protocol::REGION_MMAP;
            }
            Ok(protocol::words(&[
                U32(32),
                U32(flags),
                U32(index),
                U32(0),
                U64(size),
                U64(0),
            ]))
        }
        Request::IrqInfo { index } => {
            if index >= IRQ_COUNT {
                return refuse(libc::EINVAL, format!("no IRQ index {index}"));
            }
            // INTx: one line, as the config header's interrupt pin says (INTA); the
            // simulator raises no interrupts (its drivers poll). No MSI, MSI-X, ERR, REQ.
            let count = u32::from(index == 0);
            Ok(protocol::words(&[
                U32(16),
                U32(protocol::IRQ_INFO_EVENTFD | protocol::IRQ_INFO_NORESIZE),
                U32(index),
                U32(count),
            ]))
        }
        Request::SetIrqs { index, .. } => {
            if index >= IRQ_COUNT {
                return refuse(libc::EINVAL, format!("no IRQ index {index}"));
            }
            // The eventfds are accepted and closed: no interrupt is ever signalled.
            drop(fds);
            Ok(Vec::new())
        }
        Request::RegionRead {
            offset,
            region,
            count,
        } => {
            let data = region::read(gpu, shared.bar1_size, region, offset, count)?;
            let mut body = protocol::words(&[U64(offset), U32(region), U32(count)]);
            body.extend_from_slice(&data);
            Ok(body)
        }
        Request::RegionWrite {
            offset,
            region,
            data,
        } => {
            region::write(gpu, &shared.placed, shared.bar1_size, region, offset, data)?;
            // CAST: decode bounded the data by MAX_DATA_XFER.
            Ok(protocol::words(&[
                U64(offset),
                U32(region),
                U32(data.len() as u32),
            ]))
        }
        Request::Reset => {
            if gpu.is_gone() {
                return refuse(libc::ENODEV, "the device is gone; it cannot be reset");
            }
            gpu.reset();
            shared.placed.restore(gpu);
            Ok(Vec::new())
        }
        Request::Unsupported(c) => refuse(libc::ENOTSUP, format!("{c:?} is not served")),
    }
}

/// One line on stderr per request (`NVBARE_VFIO_USER_TRACE`): what a client does, to debug it.
fn debug_line(req: &Request<'_>, answer: &Result<Vec<u8>, Refusal>) {
    let what = match req {
        Request::RegionRead {
            offset,
            region,
            count,
        } => {
            let v = answer.as_ref().ok().and_then(|b| b.get(16..)).map(|d| {
                d.iter()
                    .take(8)
                    .rev()
                    .map(|x| format!("{x:02x}"))
                    .collect::<String>()
            });
            format!(
                "read r{region} {offset:#x}+{count} = {}",
                v.unwrap_or_default()
            )
        }
        Request::RegionWrite {
            offset,
            region,
            data,
        } => {
            let v: String = data
                .iter()
                .take(8)
                .rev()
                .map(|x| format!("{x:02x}"))
                .collect();
            format!("write r{region} {offset:#x}+{} <- {v}", data.len())
        }
        other => format!("{other:?}"),
    };
    match answer {
        Ok(_) => eprintln!("vfio-user: {what}"),
        Err((e, why)) => eprintln!("vfio-user: {what}: refused (errno {e}): {why}"),
    }
}

/// Writes `bytes` (one reply) with `fd` as `SCM_RIGHTS` on its first byte.
fn send_with_fd(
    stream: &UnixStream,
    bytes: &[u8],
    fd: std::os::fd::BorrowedFd<'_>,
) -> std::io::Result<()> {
    let one = std::mem::size_of::<libc::c_int>();
    // CAST: one descriptor of 4 bytes.
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(one as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: a zeroed msghdr is a valid empty one; its fields are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: the control buffer holds one header of CMSG_SPACE(4) bytes; the CMSG macros
    // write inside it.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        // CAST: as above.
        (*c).cmsg_len = libc::CMSG_LEN(one as u32) as usize;
        libc::CMSG_DATA(c)
            .cast::<libc::c_int>()
            .write_unaligned(fd.as_raw_fd());
    }
    let n = loop {
        // SAFETY: msg points at live buffers of the lengths given.
        let n = unsafe { libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if n >= 0 {
            break n;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    // The descriptor went with the first byte; the rest, if the socket took less, as usual.
    // CAST: n is non-negative and at most bytes.len().
    (&*stream).write_all(&bytes[n as usize..])
}

/// VFIO PCI IRQ indexes: INTx, MSI, MSI-X, ERR, REQ.
const IRQ_COUNT: u32 = 5;

/// A header's bytes and the descriptors that came with them.
type Received = ([u8; HEADER_LEN], Vec<OwnedFd>);

/// Reads one header (16 bytes) with the file descriptors sent alongside it; `None` when the
/// client closed the socket before a new message.
fn recv_header(stream: &UnixStream) -> Result<Option<Received>, SessionEnd> {
    let mut head = [0u8; HEADER_LEN];
    let mut got = 0;
    let mut fds = Vec::new();
    // CAST: MAX_FDS descriptors of 4 bytes.
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE((MAX_FDS * std::mem::size_of::<libc::c_int>()) as u32) };
    let mut control = vec![0u64; (space as usize).div_ceil(8)];
    while got < HEADER_LEN {
        let mut iov = libc::iovec {
            // SAFETY: inside `head` (got < HEADER_LEN).
            iov_base: unsafe { head.as_mut_ptr().add(got) }.cast(),
            iov_len: HEADER_LEN - got,
        };
        // SAFETY: a zeroed msghdr is a valid empty one; its fields are set below.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = control.len() * 8;
        // SAFETY: msg points at live buffers of the lengths given.
        let n = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e.into());
        }
        // Take ownership of every descriptor first, so that any error below closes them.
        // SAFETY: msg was filled by recvmsg; the CMSG macros walk its control buffer.
        let mut c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !c.is_null() {
            // SAFETY: c is a control message header recvmsg wrote inside `control`.
            let (level, kind, len) = unsafe { ((*c).cmsg_level, (*c).cmsg_type, (*c).cmsg_len) };
            if level == libc::SOL_SOCKET && kind == libc::SCM_RIGHTS {
                // SAFETY: as above; CMSG_LEN(0) is a pure size computation.
                let data_len = len - unsafe { libc::CMSG_LEN(0) } as usize;
                // SAFETY: the data of an SCM_RIGHTS message is an array of descriptors.
                let p = unsafe { libc::CMSG_DATA(c) } as *const libc::c_int;
                for i in 0..data_len / std::mem::size_of::<libc::c_int>() {
                    // SAFETY: inside the message's data; the kernel installed each
                    // descriptor for us, and nothing else owns it.
                    fds.push(unsafe { OwnedFd::from_raw_fd(p.add(i).read_unaligned()) });
                }
            }
            // SAFETY: as above.
            c = unsafe { libc::CMSG_NXTHDR(&msg, c) };
        }
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(std::io::Error::other(format!(
                "more than {MAX_FDS} file descriptors with one message"
            ))
            .into());
        }
        if n == 0 {
            return if got == 0 && fds.is_empty() {
                Ok(None)
            } else {
                Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into())
            };
        }
        // CAST: n is positive and at most the iovec's length.
        got += n as usize;
    }
    Ok(Some((head, fds)))
}
