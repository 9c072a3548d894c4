//! The remote PCI protocol server, driven by a client written here from tinygrad 0.14.0's
//! `RemotePCIDevice` (`system.py`): the same framing (`<BIIQQQ` requests, `<BQQ` responses),
//! the same commands in the order tinygrad issues them, and the refusals it must see.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use nvbare_sim::SimChip;
use nvbare_sim::remote::protocol::{Command, REQUEST_BYTES, RESPONSE_BYTES, Request, Response};
use nvbare_sim::remote::{ServeConfig, ServeError, serve};

/// A minimal client, byte for byte what tinygrad sends.
struct Client(TcpStream);

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).expect("connect to the server");
        s.set_nodelay(true).unwrap();
        Client(s)
    }

    fn send(&mut self, cmd: Command, dev_id: u32, bar: u32, args: [u64; 3], payload: &[u8]) {
        let r = Request {
            cmd: cmd.wire(),
            dev_id,
            bar,
            arg0: args[0],
            arg1: args[1],
            arg2: args[2],
        };
        let mut b = r.encode().to_vec();
        assert_eq!(b.len(), REQUEST_BYTES);
        b.extend_from_slice(payload);
        self.0.write_all(&b).unwrap();
    }

    fn recv(&mut self, n: usize) -> Vec<u8> {
        let mut b = vec![0; n];
        self.0.read_exact(&mut b).expect("response bytes");
        b
    }

    /// `_rpc`: the response header, or the error text.
    fn rpc(
        &mut self,
        cmd: Command,
        dev_id: u32,
        bar: u32,
        args: [u64; 3],
        payload: &[u8],
    ) -> Result<(u64, u64), String> {
        self.send(cmd, dev_id, bar, args, payload);
        let h: [u8; RESPONSE_BYTES] = self.recv(RESPONSE_BYTES).try_into().unwrap();
        let r = Response::decode(&h);
        if r.status != 0 {
            let text = self.recv(r.v0 as usize);
            return Err(String::from_utf8(text).expect("UTF-8 error text"));
        }
        Ok((r.v0, r.v1))
    }

    fn read32(&mut self, dev: u32, offset: u32) -> u32 {
        self.rpc(Command::MmioRead, dev, 0, [offset.into(), 4, 0], &[])
            .unwrap();
        u32::from_le_bytes(self.recv(4).try_into().unwrap())
    }
}

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// tinygrad's PROBE payload: (0xff00, device) for every id family its PCI path boots.
fn tinygrad_probe_payload() -> Vec<u8> {
    [
        0x2200u32, 0x2400, 0x2500, 0x2600, 0x2700, 0x2800, 0x2b00, 0x2c00, 0x2d00, 0x2f00,
    ]
    .iter()
    .flat_map(|&d| [0xff00u32.to_le_bytes(), d.to_le_bytes()].concat())
    .collect()
}

#[test]
fn tinygrads_first_steps_against_two_gb202s() {
    let server = serve(ServeConfig::new(SimChip::Gb202, loopback(), 2)).unwrap();
    let mut c = Client::connect(server.addr());

    let payload = tinygrad_probe_payload();
    let (len, _) = c
        .rpc(
            Command::Probe,
            0,
            0,
            [0x03, payload.len() as u64, 0x10de],
            &payload,
        )
        .unwrap();
    let names = String::from_utf8(c.recv(len as usize)).unwrap();
    assert_eq!(names, "0\n1", "one name per GPU; the number is the dev_id");

    for dev in 0..2 {
        // BAR1 is at least VRAM-sized (tinygrad's large-BAR path) and the GPUs' BARs differ.
        let (bar1, size) = c.rpc(Command::MapBar, dev, 1, [0; 3], &[]).unwrap();
        assert!(size >= 32 << 30);
        assert_eq!(
            (bar1, size),
            server.gpus()[dev as usize].bar(1).unwrap(),
            "MAP_BAR answers the device's own BAR"
        );
        assert_eq!(c.rpc(Command::ResizeBar, dev, 1, [0; 3], &[]), Ok((0, 0)));
        // WPR2_HI, then bus mastering on, as nvdev.py does.
        assert_eq!(c.read32(dev, 0x1fa828), 0, "WPR2 is down at power-on");
        let (cmd, _) = c.rpc(Command::CfgRead, dev, 0, [0x4, 2, 0], &[]).unwrap();
        c.rpc(Command::CfgWrite, dev, 0, [0x4, 2, cmd | 4], &[])
            .unwrap();
        assert_eq!(
            c.rpc(Command::CfgRead, dev, 0, [0x4, 2, 0], &[]).unwrap().0 & 4,
            4
        );
        assert_eq!(
            c.rpc(Command::CfgRead, dev, 0, [0x0, 4, 0], &[]).unwrap().0,
            0x2b85_10de
        );
        assert_eq!(c.read32(dev, 0xa00) >> 24 & 0x3f, 0x1b, "Blackwell GB20x");
        assert_eq!(c.read32(dev, 0x1183a4), 32 << 10, "VRAM in MiB");
    }

    // BAR1 write (streamed, no response) then read back, across a chunk boundary.
    let data: Vec<u8> = (0..(3 << 20) + 5).map(|i| (i * 7 % 251) as u8).collect();
    c.send(
        Command::MmioWrite,
        1,
        1,
        [0x10_0003, data.len() as u64, 0],
        &data,
    );
    c.rpc(
        Command::MmioRead,
        1,
        1,
        [0x10_0003, data.len() as u64, 0],
        &[],
    )
    .unwrap();
    assert_eq!(c.recv(data.len()), data);
    let mut vram = vec![0; 16];
    server.gpus()[1].bar1_read(0x10_0003, &mut vram).unwrap();
    assert_eq!(vram, data[..16], "the write reached GPU 1's VRAM");
    server.gpus()[0].bar1_read(0x10_0003, &mut vram).unwrap();
    assert_eq!(vram, [0; 16], "and not GPU 0's");

    // Host memory: one bus address per 4 KiB page, a u32 handle, reads and writes by handle.
    let (list_len, handle) = c
        .rpc(Command::MapSysmem, 0, 0, [0x3000, 1, 0], &[])
        .unwrap();
    assert_eq!(list_len, 3 * 8);
    let list = c.recv(list_len as usize);
    let pages: Vec<u64> = list
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert!(handle <= u32::MAX.into());
    assert_eq!(pages[1], pages[0] + 0x1000);
    c.send(
        Command::SysmemWrite,
        0,
        handle as u32,
        [0x1ffe, 4, 0],
        &[1, 2, 3, 4],
    );
    c.rpc(Command::SysmemRead, 0, handle as u32, [0x1ffe, 4, 0], &[])
        .unwrap();
    assert_eq!(c.recv(4), [1, 2, 3, 4]);
    // The devices reach it at the addresses the server handed out (both share the memory).
    let mut b = [0; 4];
    server.sysmem().read(pages[1] + 0xffe, &mut b).unwrap();
    assert_eq!(b, [1, 2, 3, 4]);

    assert_eq!(c.rpc(Command::Ping, 0, 0, [0; 3], &[]), Ok((0, 0)));
    drop(c);

    let stats = server.stats();
    assert_eq!(stats.count(Command::Probe), 1);
    assert_eq!(stats.count(Command::MmioWrite), 1);
    assert_eq!(stats.count(Command::SysmemWrite), 1);
    assert!(stats.bytes_from_client >= data.len() as u64 + 4);
    assert!(stats.bytes_to_client >= data.len() as u64 + 4 + 24);
    assert_eq!(stats.refused, 0, "{:?}", stats.refusals);
    println!("{stats}");
}

#[test]
fn refusals_are_answered_with_text_and_bad_writes_close_the_stream() {
    let server = serve(ServeConfig::new(SimChip::Gh100, loopback(), 1)).unwrap();
    let mut c = Client::connect(server.addr());

    // tinygrad's PCI path does not boot Hopper: its probe finds nothing here, and says why.
    let payload = tinygrad_probe_payload();
    let e = c
        .rpc(
            Command::Probe,
            0,
            0,
            [0x03, payload.len() as u64, 0x10de],
            &payload,
        )
        .unwrap_err();
    assert!(e.contains("gh100") && e.contains("0x2335"), "{e}");

    let e = c.rpc(Command::MapBar, 3, 1, [0; 3], &[]).unwrap_err();
    assert!(e.contains("no device 3"), "{e}");
    let e = c.rpc(Command::MapBar, 0, 2, [0; 3], &[]).unwrap_err();
    assert!(e.contains("BAR 2"), "{e}");
    let e = c
        .rpc(Command::MmioRead, 0, 0, [0x2, 4, 0], &[])
        .unwrap_err();
    assert!(e.contains("32-bit"), "{e}");
    let e = c.rpc(Command::CfgRead, 0, 0, [0x3, 2, 0], &[]).unwrap_err();
    assert!(e.contains("config access"), "{e}");
    let e = c
        .rpc(Command::SysmemRead, 0, 77, [0, 4, 0], &[])
        .unwrap_err();
    assert!(e.contains("handle 77"), "{e}");
    let e = c
        .rpc(Command::MapSysmemFd, 0, 0, [4096, 0, 0], &[])
        .unwrap_err();
    assert!(e.contains("macOS"), "{e}");
    let e = c.rpc(Command::MapSysmem, 0, 0, [0, 0, 0], &[]).unwrap_err();
    assert!(e.contains("MAP_SYSMEM of 0 bytes"), "{e}");
    // The connection is still in step after all of that.
    assert_eq!(c.rpc(Command::Ping, 0, 0, [0; 3], &[]), Ok((0, 0)));

    // A streamed write that cannot be honoured closes the connection: the protocol has no other
    // way to refuse it.
    c.send(Command::MmioWrite, 0, 0, [0x1, 4, 0], &[0; 4]);
    let mut b = [0u8; 1];
    assert_eq!(c.0.read(&mut b).unwrap(), 0, "closed");
    let stats = server.stats();
    assert!(
        stats
            .refusals
            .iter()
            .any(|r| r.contains("MMIO_WRITE") && r.contains("closing")),
        "{:?}",
        stats.refusals
    );

    // An unknown command closes too (the stream cannot be followed past it).
    let mut c = Client::connect(server.addr());
    c.0.write_all(&[200; REQUEST_BYTES]).unwrap();
    assert_eq!(c.0.read(&mut b).unwrap(), 0, "closed");
}

#[test]
fn host_memory_goes_with_its_connection() {
    let server = serve(ServeConfig::new(SimChip::Gb202, loopback(), 1)).unwrap();
    let mut c = Client::connect(server.addr());
    let (n, _) = c
        .rpc(Command::MapSysmem, 0, 0, [1 << 20, 0, 0], &[])
        .unwrap();
    c.recv(n as usize);
    assert_eq!(server.sysmem().mapped().1, 1);
    drop(c);
    // TIMEOUT: the session thread notices the close at its next read; 5 s is generous.
    let clock = nvbare_sim::platform::SimClock::default();
    nvbare_core::hal::poll_until(
        &clock,
        nvbare_core::hal::Wait::pausing(
            "the closed connection's memory freed",
            5_000_000_000,
            1_000_000,
        ),
        || (server.sysmem().mapped().1 == 0).then_some(()),
    )
    .unwrap();
}

#[test]
fn grants_per_connection_are_capped() {
    use nvbare_sim::remote::MAX_GRANTS_PER_CONNECTION;
    let server = serve(ServeConfig::new(SimChip::Gb202, loopback(), 1)).unwrap();
    let mut c = Client::connect(server.addr());
    for _ in 0..MAX_GRANTS_PER_CONNECTION {
        let (n, _) = c.rpc(Command::MapSysmem, 0, 0, [4096, 0, 0], &[]).unwrap();
        c.recv(n as usize);
    }
    let e = c
        .rpc(Command::MapSysmem, 0, 0, [4096, 0, 0], &[])
        .unwrap_err();
    assert!(e.contains("the most one may"), "{e}");
    // Another connection still gets memory.
    let mut d = Client::connect(server.addr());
    let (n, _) = d.rpc(Command::MapSysmem, 0, 0, [4096, 0, 0], &[]).unwrap();
    d.recv(n as usize);
    assert_eq!(server.sysmem().mapped().1, MAX_GRANTS_PER_CONNECTION + 1);
}

#[test]
fn connections_beyond_the_cap_are_closed() {
    use nvbare_sim::remote::MAX_CONNECTIONS;
    let server = serve(ServeConfig::new(SimChip::Gb202, loopback(), 1)).unwrap();
    let mut held: Vec<Client> = (0..MAX_CONNECTIONS)
        .map(|_| Client::connect(server.addr()))
        .collect();
    for c in &mut held {
        assert_eq!(c.read32(0, 0) >> 20, 0x1b2, "served (GB202's PMC_BOOT_0)");
    }
    let mut extra = Client::connect(server.addr());
    let mut b = [0u8; 1];
    extra.send(Command::Ping, 0, 0, [0; 3], &[]);
    assert!(
        matches!(extra.0.read(&mut b), Ok(0) | Err(_)),
        "closed without an answer"
    );
    assert!(
        server
            .stats()
            .refusals
            .iter()
            .any(|r| r.contains("connections are served")),
        "{:?}",
        server.stats().refusals
    );
}

#[test]
fn loopback_only_unless_allowed() {
    let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
    assert!(matches!(
        serve(ServeConfig::new(SimChip::Gb202, any, 1)),
        Err(ServeError::NotLoopback(_))
    ));
    assert!(matches!(
        serve(ServeConfig::new(SimChip::Gb202, loopback(), 0)),
        Err(ServeError::NoGpus)
    ));
    assert!(matches!(
        serve(ServeConfig::new(
            SimChip::Gb202,
            loopback(),
            nvbare_sim::remote::MAX_GPUS + 1
        )),
        Err(ServeError::TooManyGpus(_))
    ));
    let mut open = ServeConfig::new(SimChip::Gb202, any, 1);
    open.allow_remote = true;
    let s = serve(open).unwrap();
    assert_ne!(s.addr().port(), 0);
    s.stop();
}

#[test]
fn a_traced_server_records_each_gpus_accesses_and_collapses_polls() {
    use nvbare_sim::trace::{Kind, Trace};
    let trace = std::sync::Arc::new(Trace::new());
    let mut config = ServeConfig::new(SimChip::Gb202, loopback(), 2);
    config.trace = Some(trace.clone());
    let server = serve(config).unwrap();
    let mut c = Client::connect(server.addr());
    c.read32(1, 0x1fa828);
    let (cmd, _) = c.rpc(Command::CfgRead, 1, 0, [0x4, 2, 0], &[]).unwrap();
    c.rpc(Command::CfgWrite, 1, 0, [0x4, 2, cmd | 4], &[])
        .unwrap();
    // A poll of a register whose value does not depend on when the simulated FSP gets to
    // run (WPR2_HI; the FSP's boot status would read 0 or 0xff by scheduling).
    for _ in 0..50 {
        c.read32(0, 0x1fa828);
    }
    // A BAR0 write of two registers (streamed, no response), then a read to order it.
    let two: Vec<u8> = [7u32, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
    c.send(Command::MmioWrite, 0, 0, [0x8f2c04, 8, 0], &two);
    c.read32(0, 0x8f2c04);
    drop(c);
    server.stop();
    let got: Vec<(Kind, u32, u32, u32, u64)> = trace
        .events()
        .iter()
        .map(|e| (e.kind, e.gpu, e.offset, e.value, e.count))
        .collect();
    assert_eq!(
        got,
        [
            (Kind::Bar0Read, 1, 0x1fa828, 0, 1),
            (Kind::CfgRead, 1, 0x4, 0, 1),
            (Kind::CfgWrite, 1, 0x4, 4, 1),
            (Kind::Bar0Read, 0, 0x1fa828, 0, 50),
            (Kind::Bar0Write, 0, 0x8f2c04, 7, 1),
            (Kind::Bar0Write, 0, 0x8f2c08, 9, 1),
            (Kind::Bar0Read, 0, 0x8f2c04, 7, 1),
        ]
    );
    // No DMA without a driver that sets anything up.
    assert!(trace.dma().is_empty());
}
