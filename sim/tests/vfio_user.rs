//! The simulated GPU as a vfio-user server, driven by a test client that speaks the protocol
//! (QEMU's `docs/interop/vfio-user.rst`) over the Unix socket: version, device and region
//! info, config and BAR0 reads, DMA through a memfd the client shares, BAR1 through the VRAM
//! memfd the server shares, reset, FLR, and malformed input (an error reply and a closed connection, the server still serving).

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use nvbare_sim::SimChip;
use nvbare_sim::memory::BusFault;
use nvbare_sim::vfio_user::protocol::{self, Command, Header};
use nvbare_sim::vfio_user::{GUEST_BAR1_MAX, VfioUserConfig, VfioUserServer, serve};
use proptest::prelude::*;

fn socket_path(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("nvbare-vfu-{}-{name}.sock", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

fn server(chip: SimChip, name: &str) -> VfioUserServer {
    serve(VfioUserConfig {
        chip,
        socket: socket_path(name),
        faults: Default::default(),
        bar1_mmap: false,
    })
    .expect("server starts")
}

struct Client {
    s: UnixStream,
    id: u16,
}

/// A reply: its header and body.
type Reply = (Header, Vec<u8>);

impl Client {
    fn connect(srv: &VfioUserServer) -> Client {
        let s = UnixStream::connect(srv.socket()).expect("connect");
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        Client { s, id: 0 }
    }

    fn raw(&mut self, bytes: &[u8], fds: &[i32]) {
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

    fn send(&mut self, cmd: Command, payload: &[u8], fds: &[i32]) {
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
    fn recv(&mut self) -> Option<Reply> {
        let mut h = [0u8; 16];
        self.s.read_exact(&mut h).ok()?;
        let h = Header::parse(&h);
        let mut body = vec![0u8; h.size as usize - 16];
        self.s.read_exact(&mut body).ok()?;
        Some((h, body))
    }

    /// The next reply and the descriptors that came with it.
    fn recv_with_fds(&mut self) -> (Reply, Vec<OwnedFd>) {
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

    fn call(&mut self, cmd: Command, payload: &[u8], fds: &[i32]) -> Reply {
        self.send(cmd, payload, fds);
        let r = self.recv().expect("a reply");
        assert_eq!(r.0.id, self.id, "reply to our request");
        assert_eq!(r.0.command, cmd as u16);
        r
    }

    fn ok(&mut self, cmd: Command, payload: &[u8], fds: &[i32]) -> Vec<u8> {
        let (h, body) = self.call(cmd, payload, fds);
        assert_eq!(
            h.flags & protocol::FLAG_ERROR,
            0,
            "{cmd:?} failed: errno {}",
            h.error
        );
        body
    }

    fn version(&mut self) -> String {
        let mut p = vec![0, 0, 0, 0];
        p.extend_from_slice(b"{\"capabilities\":{\"max_msg_fds\":8}}\0");
        let body = self.ok(Command::Version, &p, &[]);
        assert_eq!(&body[..4], &[0, 0, 0, 0], "version 0.0");
        assert_eq!(body.last(), Some(&0), "NUL-terminated capabilities");
        String::from_utf8(body[4..body.len() - 1].to_vec()).unwrap()
    }

    fn region_read(&mut self, region: u32, offset: u64, count: u32) -> Vec<u8> {
        let body = self.ok(Command::RegionRead, &access(region, offset, count), &[]);
        assert_eq!(&body[..16], &access(region, offset, count)[..]);
        body[16..].to_vec()
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> Reply {
        let mut p = access(region, offset, data.len() as u32);
        p.extend_from_slice(data);
        self.call(Command::RegionWrite, &p, &[])
    }

    fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.s.read(&mut b), Ok(0) | Err(_))
    }
}

fn access(region: u32, offset: u64, count: u32) -> Vec<u8> {
    let mut p = offset.to_le_bytes().to_vec();
    p.extend_from_slice(&region.to_le_bytes());
    p.extend_from_slice(&count.to_le_bytes());
    p
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn region_info(c: &mut Client, index: u32) -> (u32, u64) {
    let mut p = vec![0u8; 32];
    p[..4].copy_from_slice(&32u32.to_le_bytes());
    p[8..12].copy_from_slice(&index.to_le_bytes());
    let b = c.ok(Command::DeviceGetRegionInfo, &p, &[]);
    assert_eq!(u32_at(&b, 8), index);
    (u32_at(&b, 4), u64_at(&b, 16))
}

fn memfd(len: u64) -> OwnedFd {
    // SAFETY: creating a new anonymous file; the name is a NUL-terminated literal.
    let fd = unsafe { libc::memfd_create(c"nvbare-test-dma".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0);
    // SAFETY: fd was just created and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: resizing our own file.
    assert_eq!(unsafe { libc::ftruncate(fd.as_raw_fd(), len as i64) }, 0);
    fd
}

fn dma_map(address: u64, size: u64, offset: u64, flags: u32) -> Vec<u8> {
    let mut p = 32u32.to_le_bytes().to_vec();
    p.extend_from_slice(&flags.to_le_bytes());
    p.extend_from_slice(&offset.to_le_bytes());
    p.extend_from_slice(&address.to_le_bytes());
    p.extend_from_slice(&size.to_le_bytes());
    p
}

#[test]
fn a_client_sees_the_gpu_its_config_its_registers_and_its_dma() {
    let srv = server(SimChip::Gh100, "flow");
    let mut c = Client::connect(&srv);
    let caps = c.version();
    assert!(caps.contains("\"max_data_xfer_size\":1048576"), "{caps}");

    let info = c.ok(Command::DeviceGetInfo, &16u32.to_le_bytes(), &[]);
    assert_eq!(
        u32_at(&info, 4),
        protocol::DEVICE_FLAGS_PCI | protocol::DEVICE_FLAGS_RESET
    );
    assert_eq!(u32_at(&info, 8), 9, "VFIO_PCI_NUM_REGIONS");
    assert_eq!(u32_at(&info, 12), 5, "VFIO_PCI_NUM_IRQS");

    let spec = SimChip::Gh100.spec();
    assert_eq!(region_info(&mut c, 0).1, spec.bar0_size);
    assert_eq!(
        region_info(&mut c, 1).1,
        GUEST_BAR1_MAX,
        "BAR1 shrunk for a guest"
    );
    assert_eq!(region_info(&mut c, 2), (0, 0), "no BAR2");
    assert_eq!(region_info(&mut c, 7).1, 4096, "PCIe config space");

    // Config: ids, then the capability list PM -> PCIe (FLR capable).
    let cfg = c.region_read(7, 0, 256);
    assert_eq!(u32_at(&cfg, 0), 0x2335_10de);
    assert_ne!(cfg[6] & 0x10, 0, "STATUS: capability list");
    let pm = cfg[0x34] as usize;
    assert_eq!(cfg[pm], 0x01, "PM capability");
    let pe = cfg[pm + 1] as usize;
    assert_eq!(cfg[pe], 0x10, "PCIe capability");
    assert_ne!(u32_at(&cfg, pe + 4) & (1 << 28), 0, "FLR capable");
    assert_eq!(
        c.region_read(7, 2, 2),
        0x2335u16.to_le_bytes(),
        "a narrow config read"
    );

    // BAR0: NV_PMC_BOOT_42 (0xa00), whole and one byte of it.
    let boot42 = u32_at(&c.region_read(0, 0xa00, 4), 0);
    assert_eq!(boot42, spec.pmc_boot_42);
    assert_eq!(c.region_read(0, 0xa03, 1), [(boot42 >> 24) as u8]);

    // BAR1 (VRAM) round trip.
    assert_eq!(
        c.region_write(1, 0x1000, b"vram!").0.flags & protocol::FLAG_ERROR,
        0
    );
    assert_eq!(c.region_read(1, 0x1000, 5), b"vram!");

    // DMA: a memfd mapped at an IOVA; the GPU's bus reaches it there and nowhere else.
    let iova = 0x2_0000_0000u64;
    let fd = memfd(0x4000);
    // SAFETY: writing a buffer into our own file.
    unsafe { libc::pwrite(fd.as_raw_fd(), b"guest".as_ptr().cast(), 5, 0x1000) };
    c.ok(
        Command::DmaMap,
        &dma_map(
            iova,
            0x3000,
            0x1000,
            protocol::DMA_READ | protocol::DMA_WRITE,
        ),
        &[fd.as_raw_fd()],
    );
    assert_eq!(srv.mappings(), 1);
    let bus = &srv.gpu().bus().sysmem;
    let mut got = [0u8; 5];
    bus.read(iova, &mut got).expect("mapped");
    assert_eq!(
        &got, b"guest",
        "the GPU reads the client's memory at the IOVA"
    );
    bus.write(iova + 0x2ff8, b"fromgpu!")
        .expect("mapped, writable");
    let mut back = [0u8; 8];
    // SAFETY: reading our own file into a buffer.
    unsafe { libc::pread(fd.as_raw_fd(), back.as_mut_ptr().cast(), 8, 0x3ff8) };
    assert_eq!(&back, b"fromgpu!", "the client sees what the GPU wrote");
    assert!(matches!(
        bus.read(iova + 0x3000, &mut got),
        Err(BusFault::Iommu { .. })
    ));
    assert!(matches!(
        bus.read(iova - 8, &mut got),
        Err(BusFault::Iommu { .. })
    ));

    // A read-only mapping refuses the GPU's writes.
    let ro = memfd(0x1000);
    c.ok(
        Command::DmaMap,
        &dma_map(0x3_0000_0000, 0x1000, 0, protocol::DMA_READ),
        &[ro.as_raw_fd()],
    );
    assert!(bus.write(0x3_0000_0000, b"x").is_err());
    // An overlapping map is refused; the connection stays.
    let (h, _) = c.call(
        Command::DmaMap,
        &dma_map(iova + 0x1000, 0x1000, 0, 3),
        &[ro.as_raw_fd()],
    );
    assert_ne!(h.flags & protocol::FLAG_ERROR, 0);
    // A map without a descriptor is accepted, and the GPU cannot reach it.
    c.ok(Command::DmaMap, &dma_map(0x4_0000_0000, 0x1000, 0, 3), &[]);
    assert!(bus.read(0x4_0000_0000, &mut got).is_err());
    assert_eq!(srv.unreachable().len(), 1, "{:?}", srv.unreachable());

    let mut unmap = 24u32.to_le_bytes().to_vec();
    unmap.extend_from_slice(&0u32.to_le_bytes());
    unmap.extend_from_slice(&iova.to_le_bytes());
    unmap.extend_from_slice(&0x3000u64.to_le_bytes());
    c.ok(Command::DmaUnmap, &unmap, &[]);
    assert!(
        bus.read(iova, &mut got).is_err(),
        "unmapped: an IOMMU fault again"
    );
    assert_eq!(srv.mappings(), 1, "the read-only one is left");

    // IRQs: INTx listed, SET_IRQS accepted.
    let mut irq = 16u32.to_le_bytes().to_vec();
    irq.extend_from_slice(&[0; 12]);
    assert_eq!(u32_at(&c.ok(Command::DeviceGetIrqInfo, &irq, &[]), 12), 1);

    // Reset, then FLR through PCIe Device Control: both reboot the GPU.
    c.ok(Command::DeviceReset, &[], &[]);
    assert!(srv.gpu().rebooting());
    drop(c);
    // The server resets the GPU and drops the mappings when the client goes.
    let t = std::time::Instant::now();
    while srv.mappings() != 0 && t.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(srv.mappings(), 0);
    assert_eq!(srv.gpu().bus().sysmem.mapped(), (0, 0));
}

#[test]
fn an_flr_through_pcie_device_control_resets_the_gpu() {
    let srv = server(SimChip::Gb202, "flr");
    let mut c = Client::connect(&srv);
    c.version();
    let cfg = c.region_read(7, 0, 256);
    let pe = cfg[cfg[0x34] as usize + 1] as u64;
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert!(!srv.gpu().rebooting());
    assert_eq!(
        c.region_write(7, pe + 8, &0x8000u16.to_le_bytes()).0.flags & protocol::FLAG_ERROR,
        0
    );
    assert!(srv.gpu().rebooting(), "FLR initiated");

    // The client (QEMU) places the BARs; they stay placed across the device's resets, as the
    // guest, which sees QEMU's virtual BARs, expects (GSP-RM checks them).
    c.region_write(7, 0x10, &0xf800_0000u32.to_le_bytes());
    c.region_write(7, 0x14, &0x1000_000cu32.to_le_bytes());
    c.region_write(7, 0x18, &0xc0u32.to_le_bytes());
    c.region_write(7, pe + 8, &0x8000u16.to_le_bytes());
    c.ok(Command::DeviceReset, &[], &[]);
    let cfg = c.region_read(7, 0x10, 12);
    assert_eq!(u32_at(&cfg, 0), 0xf800_0000, "BAR0 kept");
    assert_eq!(
        u32_at(&cfg, 4),
        0x1000_000c,
        "BAR1 kept (256 MiB aligned: the guest's size)"
    );
    assert_eq!(u32_at(&cfg, 8), 0xc0);
}

#[test]
fn malformed_messages_close_the_connection_and_the_server_serves_on() {
    let srv = server(SimChip::Gh100, "malformed");
    let header = |cmd: u16, size: u32, flags: u32| {
        Header {
            id: 7,
            command: cmd,
            size,
            flags,
            error: 0,
        }
        .to_bytes()
        .to_vec()
    };
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("size below the header", header(1, 8, 0), false),
        ("size beyond the limit", header(9, u32::MAX, 0), false),
        ("a reply sent as a request", header(1, 16, 1), false),
        ("an unknown command", header(99, 16, 0), true),
        (
            "a command before VERSION",
            header(4, 20, 0).into_iter().chain([16, 0, 0, 0]).collect(),
            false,
        ),
    ];
    for (what, bytes, version_first) in cases {
        let mut c = Client::connect(&srv);
        if version_first {
            c.version();
        }
        c.raw(&bytes, &[]);
        let r = c.recv().unwrap_or_else(|| panic!("{what}: an error reply"));
        assert_ne!(r.0.flags & protocol::FLAG_ERROR, 0, "{what}");
        assert!(c.closed(), "{what}: connection closed");
    }
    // Negotiated, then hostile payloads.
    let after_version: Vec<(&str, Command, Vec<u8>)> = vec![
        ("a short DMA_MAP", Command::DmaMap, vec![0; 20]),
        (
            "a REGION_READ over the transfer limit",
            Command::RegionRead,
            access(0, 0, u32::MAX),
        ),
        (
            "a REGION_WRITE whose count lies",
            Command::RegionWrite,
            access(1, 0, 100),
        ),
        ("a RESET with a payload", Command::DeviceReset, vec![1]),
    ];
    for (what, cmd, payload) in after_version {
        let mut c = Client::connect(&srv);
        c.version();
        c.send(cmd, &payload, &[]);
        let r = c.recv().unwrap_or_else(|| panic!("{what}: an error reply"));
        assert_ne!(r.0.flags & protocol::FLAG_ERROR, 0, "{what}");
        assert!(c.closed(), "{what}: connection closed");
    }
    // Refused requests keep the connection.
    let mut c = Client::connect(&srv);
    c.version();
    let refused: Vec<(&str, Command, Vec<u8>)> = vec![
        (
            "a read past BAR0",
            Command::RegionRead,
            access(0, 16 << 20, 4),
        ),
        (
            "a read of a missing region",
            Command::RegionRead,
            access(5, 0, 4),
        ),
        ("BAR3", Command::RegionRead, access(3, 0, 4)),
        (
            "a BAR0 write of 2 bytes",
            Command::RegionWrite,
            [access(0, 0, 2), vec![1, 2]].concat(),
        ),
        ("DMA_READ (server to client only)", Command::DmaRead, vec![]),
    ];
    for (what, cmd, payload) in refused {
        let (h, _) = c.call(cmd, &payload, &[]);
        assert_ne!(h.flags & protocol::FLAG_ERROR, 0, "{what}");
        assert_ne!(h.error, 0, "{what}: an errno");
    }
    assert_eq!(
        u32_at(&c.region_read(7, 0, 4), 0),
        0x2335_10de,
        "still serving"
    );
    assert_eq!(srv.refusals().len(), 5, "{:?}", srv.refusals());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Any bytes: decode answers a request or an error, never panics, and a request it accepts
    /// lies inside the payload it was given.
    #[test]
    fn decode_never_panics(cmd in 0u16..16, flags in 0u32..64, payload in proptest::collection::vec(any::<u8>(), 0..96), lie in 0u32..3) {
        let size = (16 + payload.len() as u32).wrapping_add(lie).wrapping_sub(1);
        let h = Header { id: 1, command: cmd, size, flags, error: 0 };
        if let Ok(protocol::Request::RegionWrite { data, .. }) = protocol::decode(&h, &payload) {
            prop_assert_eq!(data.len() + 16, payload.len());
        }
    }
}

/// BAR1 offered for mmap: REGION_INFO says MMAP and carries the VRAM's memory file, which
/// the client maps; its accesses and the GPU's reach the same memory, both ways. BAR0 and
/// config space stay messages (no MMAP flag, no descriptor); a server without `bar1_mmap`
/// offers none.
#[test]
fn bar1_is_mapped_from_the_vram_memory_file() {
    let srv = serve(VfioUserConfig {
        chip: SimChip::Gb202,
        socket: socket_path("mmap"),
        faults: Default::default(),
        bar1_mmap: true,
    })
    .expect("server starts");
    let mut c = Client::connect(&srv);
    c.version();
    let info = |c: &mut Client, index: u32| {
        let mut p = vec![0u8; 32];
        p[..4].copy_from_slice(&32u32.to_le_bytes());
        p[8..12].copy_from_slice(&index.to_le_bytes());
        c.send(Command::DeviceGetRegionInfo, &p, &[]);
        let ((h, b), fds) = c.recv_with_fds();
        assert_eq!(h.flags & protocol::FLAG_ERROR, 0);
        (u32_at(&b, 4), u64_at(&b, 16), u64_at(&b, 24), fds)
    };
    let (flags, size, offset, fds) = info(&mut c, 1);
    assert_eq!(size, GUEST_BAR1_MAX);
    assert_ne!(flags & protocol::REGION_MMAP, 0, "BAR1 mmappable");
    assert_eq!(
        (fds.len(), offset),
        (1, 0),
        "one memory file, BAR1 at its start"
    );
    for index in [0, 7] {
        let (flags, _, _, fds) = info(&mut c, index);
        assert_eq!(flags & protocol::REGION_MMAP, 0, "region {index}");
        assert!(fds.is_empty(), "region {index}");
    }

    let len = size as usize;
    // SAFETY: a new shared mapping of the file the server gave us; only this test uses it,
    // through raw pointers, and unmaps it below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fds[0].as_raw_fd(),
            offset as i64,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    let p = p.cast::<u32>();
    let at = 0x0123_4560usize;
    // The client's store through the mapping: the GPU's VRAM and a BAR1 message see it.
    // SAFETY: inside the mapping (at < 256 MiB), aligned.
    unsafe { p.add(at / 4).write_volatile(0xc0ff_ee11) };
    assert_eq!(
        srv.gpu().bus().vram.read_u32(at as u64).unwrap(),
        0xc0ff_ee11
    );
    assert_eq!(u32_at(&c.region_read(1, at as u64, 4), 0), 0xc0ff_ee11);
    // A message write and the GPU's own write: the mapping sees both.
    c.region_write(1, at as u64 + 4, &0x5555_aaaau32.to_le_bytes());
    srv.gpu()
        .bus()
        .vram
        .write_u32(at as u64 + 8, 0x1234_5678)
        .unwrap();
    // SAFETY: as above.
    unsafe {
        assert_eq!(p.add(at / 4 + 1).read_volatile(), 0x5555_aaaa);
        assert_eq!(p.add(at / 4 + 2).read_volatile(), 0x1234_5678);
    }
    // VRAM cleared (a cold reset's state): the client's mapping reads zero too.
    srv.gpu().bus().vram.clear();
    // SAFETY: as above.
    unsafe { assert_eq!(p.add(at / 4).read_volatile(), 0) };
    // SAFETY: the mapping made above, used no more.
    unsafe { libc::munmap(p.cast(), len) };

    // Without bar1_mmap: BAR1 is messages only.
    let plain = server(SimChip::Gb202, "no-mmap");
    let mut c = Client::connect(&plain);
    c.version();
    let (flags, _, _, fds) = info(&mut c, 1);
    assert_eq!(flags & protocol::REGION_MMAP, 0);
    assert!(fds.is_empty());
}

#[test]
fn a_second_client_finds_the_gpu_again() {
    let srv = server(SimChip::Gh100, "again");
    for _ in 0..2 {
        let mut c = Client::connect(&srv);
        c.version();
        assert_eq!(u32_at(&c.region_read(7, 0, 4), 0), 0x2335_10de);
        c.s.shutdown(std::net::Shutdown::Both).unwrap();
    }
    let _ = std::io::stderr().flush();
}

#[test]
fn an_unplugged_gpu_reads_all_ones_and_refuses_a_reset_while_the_connection_stays() {
    // `nvbare sim serve --vfio-user` unplugs the GPU on SIGUSR1 (tests/vm/run makes the GPU
    // vanish under a guest that way: killing the server would abort QEMU 11.1.3 too). A
    // surprise-removed PCIe device completes reads with all ones and drops writes; the socket
    // stays up, so the guest's kernel and driver see exactly that.
    let srv = server(SimChip::Gb202, "unplug");
    let mut c = Client::connect(&srv);
    c.version();
    assert_ne!(u32_at(&c.region_read(0, 0xa00, 4), 0), 0xffff_ffff);
    srv.gpu().unplug();
    assert_eq!(c.region_read(0, 0xa00, 4), [0xff; 4], "BAR0: all ones");
    assert_eq!(c.region_read(7, 0, 4), [0xff; 4], "config space: all ones");
    let r = c.region_write(0, 0x1704, &[0, 0, 0, 0]);
    assert_eq!(
        r.0.flags & protocol::FLAG_ERROR,
        0,
        "a write is accepted and dropped"
    );
    let r = c.region_write(7, 4, &[6, 0]);
    assert_eq!(r.0.flags & protocol::FLAG_ERROR, 0, "a config write too");
    assert_eq!(c.region_read(7, 4, 2), [0xff; 2]);
    let (h, _) = c.call(Command::DeviceReset, &[], &[]);
    assert_ne!(
        h.flags & protocol::FLAG_ERROR,
        0,
        "no reset of a device that is gone"
    );
    assert_eq!(h.error, libc::ENODEV as u32);
    assert_eq!(
        c.region_read(1, 0, 8),
        [0xff; 8],
        "BAR1 too; the connection stays up"
    );
}

#[test]
fn a_bus_address_inside_bar1_where_the_guest_placed_it_reaches_vram() {
    // tinygrad hands the FSP the BAR1 bus address of boot structures in VRAM; under a guest
    // that is where the guest's kernel placed BAR1 (0xc000000000 in tests/vm/run), not the
    // simulator's default.
    let srv = server(SimChip::Gb202, "bar1-place");
    let mut c = Client::connect(&srv);
    c.version();
    let base: u64 = 0xc0_0000_0000;
    // Sizing first (all ones), as a kernel does, then the address.
    for v in [0xffff_ffffu32, base as u32 | 0xc, (base >> 32) as u32] {
        let at = if v == (base >> 32) as u32 { 0x18 } else { 0x14 };
        let r = c.region_write(7, at, &v.to_le_bytes());
        assert_eq!(r.0.flags & protocol::FLAG_ERROR, 0);
    }
    let r = c.region_write(7, 0x18, &((base >> 32) as u32).to_le_bytes());
    assert_eq!(r.0.flags & protocol::FLAG_ERROR, 0);
    let r = c.region_write(1, 0x20_0000, &[0x5a; 8]);
    assert_eq!(r.0.flags & protocol::FLAG_ERROR, 0);
    let mut got = [0u8; 8];
    srv.gpu()
        .bus()
        .sysmem
        .read(base + 0x20_0000, &mut got)
        .expect("the guest's BAR1 address reaches VRAM");
    assert_eq!(got, [0x5a; 8]);
}

/// A guest without an IOMMU (tests/vm/run's, where tinygrad 0.14.0 boots through its own PCI
/// path): `sim serve` sets `FaultPlan::no_iommu` (NVBARE_VFIO_USER_NO_IOMMU=1), and the
/// membar of a driver that never programs the sysmem flush buffer reads bus address 0, RAM
/// there (silicon-review.md: "tinygrad skips it but hands the GPU physical addresses, where
/// address 0 is RAM"); the default server models an IOMMU, where that read faults
/// (`units/flush.rs`, `kern_mem_sys_ga100.c`).
#[test]
fn a_server_for_a_guest_without_an_iommu_lets_the_unprogrammed_flush_read_ram() {
    use nvbare_sim::units::mmu::MMU_INVALIDATE;
    // NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE: ALL_VA | ALL_PDB | SYS_MEMBAR | TRIGGER.
    const INVALIDATE_WITH_MEMBAR: u32 = 1 | 1 << 1 | 1 << 6 | 1 << 31;
    for (no_iommu, faults) in [(true, 0), (false, 1)] {
        let srv = serve(VfioUserConfig {
            chip: SimChip::Gb202,
            socket: socket_path(&format!("noiommu-{no_iommu}")),
            faults: nvbare_sim::FaultPlan {
                no_iommu,
                ..Default::default()
            },
            bar1_mmap: false,
        })
        .expect("server starts");
        let gpu = srv.gpu();
        gpu.bar0_write(MMU_INVALIDATE, INVALIDATE_WITH_MEMBAR);
        // TIMEOUT: the invalidate completes in simulated microseconds; 5 s is a hang.
        let t = std::time::Instant::now();
        while gpu.bar0_read(MMU_INVALIDATE) >> 31 != 0 {
            assert!(t.elapsed().as_secs() < 5, "the invalidate never completed");
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
        assert_eq!(
            gpu.with_world(|w| w.flush_faults),
            faults,
            "no_iommu {no_iommu}"
        );
    }
}
