//! The vfio-user test client: a client that speaks the protocol (QEMU's
//! `docs/interop/vfio-user.rst`) to the simulated GPU's server over its Unix socket, sending
//! descriptors with a message and taking those of a reply, and the payloads of the requests
//! the tests send (region accesses, region info, DMA maps of a memfd).
#![allow(dead_code)]

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use nvbare_sim::SimChip;
use nvbare_sim::vfio_user::protocol::{self, Command, Header};
use nvbare_sim::vfio_user::{VfioUserConfig, VfioUserServer, serve};

pub fn socket_path(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("nvbare-vfu-{}-{name}.sock", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

pub fn server(chip: SimChip, name: &str) -> VfioUserServer {
    serve(VfioUserConfig {
        chip,
        socket: socket_path(name),
        faults: Default::default(),
        bar1_mmap: false,
    })
    .expect("server starts")
}

pub struct Client {
    pub s: UnixStream,
    id: u16,
}

/// A reply: its header and body.
pub type Reply = (Header, Vec<u8>);

impl Client {
    pub fn connect(srv: &VfioUserServer) -> Client {
        let s = UnixStream::connect(srv.socket()).expect("connect");
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        Client { s, id: 0 }
    }

    pub fn raw(&mut self, bytes: &[u8], fds: &[i32]) {
        let mut iov = libc::iovec {
            iov_base: bytes.as_ptr() as *mut _,
            iov_len: bytes.len(),
        };
        let mut control = vec![0u64; 16];
        // SAFETY: a zeroed msghdr, filled below with live buffers.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            let len = std::mem::size_of_val(fds) as u32;
            // SAFETY: CMSG macros over our own control buffer, large enough for 8 fds.
            unsafe {
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen = libc::CMSG_SPACE(len) as usize;
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(len) as usize;
                std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c).cast(), fds.len());
            }
        }
        // SAFETY: msg points at live buffers.
        let n = unsafe { libc::sendmsg(self.s.as_raw_fd(), &msg, 0) };
        assert_eq!(n as usize, bytes.len(), "sendmsg");
    }

    pub fn send(&mut self, cmd: Command, payload: &[u8], fds: &[i32]) {
        self.id = self.id.wrapping_add(1);
        let h = Header {
            id: self.id,
            command: cmd as u16,
            size: (16 + payload.len()) as u32,
            flags: 0,
            error: 0,
        };
        let mut b = h.to_bytes().to_vec();
        b.extend_from_slice(payload);
        self.raw(&b, fds);
    }

    /// The next reply, or None if the server closed the connection.
    pub fn recv(&mut self) -> Option<Reply> {
        let mut h = [0u8; 16];
        self.s.read_exact(&mut h).ok()?;
        let h = Header::parse(&h);
        let mut body = vec![0u8; h.size as usize - 16];
        self.s.read_exact(&mut body).ok()?;
        Some((h, body))
    }

    /// The next reply and the descriptors that came with it.
    pub fn recv_with_fds(&mut self) -> (Reply, Vec<OwnedFd>) {
        let mut buf = vec![0u8; 4096];
        let mut control = vec![0u64; 16];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: 16,
        };
        // SAFETY: a zeroed msghdr, filled below with live buffers.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = control.len() * 8;
        // SAFETY: msg points at live buffers of the lengths given.
        let n = unsafe { libc::recvmsg(self.s.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        assert_eq!(n, 16, "a whole header first");
        let mut fds = Vec::new();
        // SAFETY: the CMSG macros walk the control buffer recvmsg filled.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_type == libc::SCM_RIGHTS {
                    let count = ((*c).cmsg_len - libc::CMSG_LEN(0) as usize) / 4;
                    let p = libc::CMSG_DATA(c).cast::<i32>();
                    for i in 0..count {
                        fds.push(OwnedFd::from_raw_fd(p.add(i).read_unaligned()));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        let h = Header::parse(buf[..16].try_into().unwrap());
        let mut body = vec![0u8; h.size as usize - 16];
        self.s.read_exact(&mut body).unwrap();
        ((h, body), fds)
    }

    pub fn call(&mut self, cmd: Command, payload: &[u8], fds: &[i32]) -> Reply {
        self.send(cmd, payload, fds);
        let r = self.recv().expect("a reply");
        assert_eq!(r.0.id, self.id, "reply to our request");
        assert_eq!(r.0.command, cmd as u16);
        r
    }

    pub fn ok(&mut self, cmd: Command, payload: &[u8], fds: &[i32]) -> Vec<u8> {
        let (h, body) = self.call(cmd, payload, fds);
        assert_eq!(
            h.flags & protocol::FLAG_ERROR,
            0,
            "{cmd:?} failed: errno {}",
            h.error
        );
        body
    }

    pub fn version(&mut self) -> String {
        let mut p = vec![0, 0, 0, 0];
        p.extend_from_slice(b"{\"capabilities\":{\"max_msg_fds\":8}}\0");
        let body = self.ok(Command::Version, &p, &[]);
        assert_eq!(&body[..4], &[0, 0, 0, 0], "version 0.0");
        assert_eq!(body.last(), Some(&0), "NUL-terminated capabilities");
        String::from_utf8(body[4..body.len() - 1].to_vec()).unwrap()
    }

    pub fn region_read(&mut self, region: u32, offset: u64, count: u32) -> Vec<u8> {
        let body = self.ok(Command::RegionRead, &access(region, offset, count), &[]);
        assert_eq!(&body[..16], &access(region, offset, count)[..]);
        body[16..].to_vec()
    }

    pub fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> Reply {
        let mut p = access(region, offset, data.len() as u32);
        p.extend_from_slice(data);
        self.call(Command::RegionWrite, &p, &[])
    }

    pub fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.s.read(&mut b), Ok(0) | Err(_))
    }
}

pub fn access(region: u32, offset: u64, count: u32) -> Vec<u8> {
    let mut p = offset.to_le_bytes().to_vec();
    p.extend_from_slice(&region.to_le_bytes());
    p.extend_from_slice(&count.to_le_bytes());
    p
}

pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

pub fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

pub fn region_info(c: &mut Client, index: u32) -> (u32, u64) {
    let mut p = vec![0u8; 32];
    p[..4].copy_from_slice(&32u32.to_le_bytes());
    p[8..12].copy_from_slice(&index.to_le_bytes());
    let b = c.ok(Command::DeviceGetRegionInfo, &p, &[]);
    assert_eq!(u32_at(&b, 8), index);
    (u32_at(&b, 4), u64_at(&b, 16))
}

pub fn memfd(len: u64) -> OwnedFd {
    // SAFETY: creating a new anonymous file; the name is a NUL-terminated literal.
    let fd = unsafe { libc::memfd_create(c"nvbare-test-dma".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0);
    // SAFETY: fd was just created and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: resizing our own file.
    assert_eq!(unsafe { libc::ftruncate(fd.as_raw_fd(), len as i64) }, 0);
    fd
}

pub fn dma_map(address: u64, size: u64, offset: u64, flags: u32) -> Vec<u8> {
    let mut p = 32u32.to_le_bytes().to_vec();
    p.extend_from_slice(&flags.to_le_bytes());
    p.extend_from_slice(&offset.to_le_bytes());
    p.extend_from_slice(&address.to_le_bytes());
    p.extend_from_slice(&size.to_le_bytes());
    p
}
