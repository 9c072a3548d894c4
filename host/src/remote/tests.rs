//! `Remote` against a tiny server written here from the protocol description: a device with
//! a few BAR0 registers, config space, a BAR1 window and server-chosen sysmem pages.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::*;

const BOOT0: u32 = 0x180a_00a1;
const BAR1_BASE: u64 = 0x38_0000_0000;
const BAR1_SIZE: usize = 1 << 20;

/// What the fake server does wrong, on purpose.
#[derive(Clone, Copy, Default)]
struct Faults {
    /// MAP_SYSMEM of more than this many bytes fails with an error text.
    sysmem_limit: Option<u64>,
    /// MAP_SYSMEM replies with one address too few.
    short_page_list: bool,
    /// Close the connection on this command.
    close_on: Option<u8>,
}

#[derive(Default)]
struct Device {
    regs: HashMap<u32, u32>,
    config: Vec<u8>,
    bar1: Vec<u8>,
    sysmem: Vec<Vec<u8>>,
    /// Every command received, in order.
    log: Vec<(u8, u32, u32, [u64; 3])>,
    resets: u32,
}

struct Server {
    addr: String,
    dev: Arc<Mutex<Device>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start(faults: Faults) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let mut d = Device {
            config: vec![0; 256],
            bar1: vec![0; BAR1_SIZE],
            ..Device::default()
        };
        d.regs.insert(0, BOOT0);
        d.config[0..2].copy_from_slice(&0x10deu16.to_le_bytes());
        d.config[2..4].copy_from_slice(&0x2335u16.to_le_bytes());
        let dev = Arc::new(Mutex::new(d));
        let dev2 = dev.clone();
        let thread = std::thread::spawn(move || {
            // One client, then stop (a bounded server: it never outlives its test).
            if let Ok((s, _)) = listener.accept() {
                serve(s, &dev2, faults);
            }
        });
        Server {
            addr,
            dev,
            thread: Some(thread),
        }
    }

    fn log(&self) -> Vec<(u8, u32, u32, [u64; 3])> {
        self.dev.lock().unwrap().log.clone()
    }

    fn config16(&self, off: usize) -> u16 {
        let d = self.dev.lock().unwrap();
        u16::from_le_bytes([d.config[off], d.config[off + 1]])
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

fn reply(s: &mut TcpStream, status: u8, v0: u64, v1: u64, data: &[u8]) {
    let mut b = vec![status];
    b.extend_from_slice(&v0.to_le_bytes());
    b.extend_from_slice(&v1.to_le_bytes());
    b.extend_from_slice(data);
    let _ = s.write_all(&b);
}

fn error(s: &mut TcpStream, text: &str) {
    reply(s, 1, text.len() as u64, 0, text.as_bytes());
}

fn serve(mut s: TcpStream, dev: &Mutex<Device>, faults: Faults) {
    let mut hdr = [0u8; 33];
    while s.read_exact(&mut hdr).is_ok() {
        let cmd = hdr[0];
        let dev_id = u32::from_le_bytes(hdr[1..5].try_into().unwrap());
        let bar = u32::from_le_bytes(hdr[5..9].try_into().unwrap());
        let args = [u64_at(&hdr, 9), u64_at(&hdr, 17), u64_at(&hdr, 25)];
        let mut d = dev.lock().unwrap();
        d.log.push((cmd, dev_id, bar, args));
        if faults.close_on == Some(cmd) {
            return;
        }
        let mut payload = vec![
            0u8;
            if matches!(cmd, 0 | 7 | 10) {
                args[1] as usize
            } else {
                0
            }
        ];
        if s.read_exact(&mut payload).is_err() {
            return;
        }
        match cmd {
            0 => {
                assert_eq!((args[0], args[2]), (0x03, 0x10de));
                let names = "gh100:7";
                reply(&mut s, 0, names.len() as u64, 0, names.as_bytes());
            }
            1 => match bar {
                0 => reply(&mut s, 0, 0xfa00_0000, 16 << 20, &[]),
                1 => reply(&mut s, 0, BAR1_BASE, BAR1_SIZE as u64, &[]),
                _ => error(&mut s, "no such BAR"),
            },
            3 => {
                let (o, n) = (args[0] as usize, args[1] as usize);
                let mut v = [0u8; 8];
                v[..n].copy_from_slice(&d.config[o..o + n]);
                reply(&mut s, 0, u64::from_le_bytes(v), 0, &[]);
            }
            4 => {
                let (o, n) = (args[0] as usize, args[1] as usize);
                let v = args[2].to_le_bytes();
                d.config[o..o + n].copy_from_slice(&v[..n]);
                reply(&mut s, 0, 0, 0, &[]);
            }
            5 => {
                d.resets += 1;
                reply(&mut s, 0, 0, 0, &[]);
            }
            6 => {
                let (o, n) = (args[0] as usize, args[1] as usize);
                let data = if bar == 0 {
                    d.regs
                        .get(&(o as u32))
                        .copied()
                        .unwrap_or(0)
                        .to_le_bytes()
                        .to_vec()
                } else {
                    d.bar1[o..o + n].to_vec()
                };
                reply(&mut s, 0, 0, 0, &data[..n]);
            }
            7 => {
                if bar == 0 {
                    let v = u32::from_le_bytes(payload[..4].try_into().unwrap());
                    d.regs.insert(args[0] as u32, v);
                } else {
                    let o = args[0] as usize;
                    d.bar1[o..o + payload.len()].copy_from_slice(&payload);
                }
            }
            8 => {
                let size = args[0];
                if faults.sysmem_limit.is_some_and(|l| size > l) {
                    error(&mut s, "out of host memory for sysmem");
                    continue;
                }
                let handle = d.sysmem.len() as u64;
                // Filled with 0xaa: the client must zero it.
                d.sysmem.push(vec![0xaa; size as usize]);
                let mut pages: Vec<u64> = (0..size / 4096)
                    .map(|i| 0x1_0000_0000 + (handle << 24) + (i * 2 + 1) * 4096)
                    .collect();
                if args[1] == 1 {
                    pages = (0..size / 4096)
                        .map(|i| 0x2_0000_0000 + (handle << 24) + i * 4096)
                        .collect();
                }
                if faults.short_page_list {
                    pages.pop();
                }
                let bytes: Vec<u8> = pages.iter().flat_map(|p| p.to_le_bytes()).collect();
                reply(&mut s, 0, bytes.len() as u64, handle, &bytes);
            }
            9 => {
                let (o, n) = (args[0] as usize, args[1] as usize);
                let data = d.sysmem[bar as usize][o..o + n].to_vec();
                reply(&mut s, 0, 0, 0, &data);
            }
            10 => {
                let o = args[0] as usize;
                d.sysmem[bar as usize][o..o + payload.len()].copy_from_slice(&payload);
            }
            _ => error(&mut s, "unknown command"),
        }
    }
}

fn open(server: &Server) -> Remote {
    let opts = RemoteOptions {
        lock_dir: tempfile::tempdir().unwrap().keep(),
        ..RemoteOptions::default()
    };
    Remote::connect_with(&server.addr, &opts).unwrap()
}

#[test]
fn opens_probes_maps_bars_with_memory_decoding_on_and_bus_mastering_off() {
    let server = Server::start(Faults::default());
    let r = open(&server);
    assert_eq!(r.name(), "gh100:7");
    assert_eq!(
        r.bar_info(0),
        Some(BarInfo {
            bus_addr: 0xfa00_0000,
            size: 16 << 20
        })
    );
    assert_eq!(r.bar_info(1).unwrap().bus_addr, BAR1_BASE);
    assert_eq!(r.bar_info(3), None, "a BAR the server refuses is absent");
    // Bus mastering waits for the boot (WPR2 down, the FSP booted).
    assert_eq!(server.config16(4) & 0x6, 0x2, "memory on, bus master off");
    // Every call after PROBE names the device id from the name.
    assert!(server.log()[1..].iter().all(|e| e.1 == 7));
    assert_eq!(r.config_read(0, 2).unwrap(), 0x10de);
    assert_eq!(r.config_read(2, 2).unwrap(), 0x2335);
    drop(r);
    assert_eq!(server.config16(4) & 0x4, 0, "bus master off at close");
}

#[test]
fn bar0_reads_and_writes_are_32_bit_mmio_commands() {
    let server = Server::start(Faults::default());
    let r = open(&server);
    assert_eq!(r.read32(0), BOOT0);
    assert!(r.is_present());
    r.write32(0x1704, 0xdead_beef);
    assert_eq!(r.read32(0x1704), 0xdead_beef);
    let log = server.log();
    let write = log.iter().find(|e| e.0 == 7).unwrap();
    assert_eq!((write.2, write.3[0], write.3[1]), (0, 0x1704, 4));
}

#[test]
fn bar1_is_a_shared_mem_over_mmio_on_bar_1() {
    let server = Server::start(Faults::default());
    let r = open(&server);
    let bar1 = r.bar1().unwrap();
    assert_eq!(bar1.len(), BAR1_SIZE);
    assert_eq!(bar1.gpu_va(), BAR1_BASE);
    bar1.write_u32(0x100, 0x1234_5678).unwrap();
    bar1.slice(0x1000, 16).unwrap().write_u64(8, 7).unwrap();
    assert_eq!(bar1.read_u32(0x100).unwrap(), 0x1234_5678);
    assert_eq!(server.dev.lock().unwrap().bar1[0x1008], 7);
    assert!(
        server
            .log()
            .iter()
            .any(|e| e.0 == 6 && e.2 == 1 && e.3[0] == 0x100)
    );
}

#[test]
fn dma_memory_has_the_servers_page_addresses_and_reads_as_zero() {
    let server = Server::start(Faults::default());
    let mut r = open(&server);
    let m = r.dma_alloc(3 * 4096, false).unwrap();
    assert_eq!(m.len(), 3 * 4096);
    assert_eq!(m.bus_pages, [0x1_0000_1000, 0x1_0000_3000, 0x1_0000_5000]);
    assert!(!m.is_contiguous());
    assert_eq!(m.cpu.gpu_va(), 0x1_0000_1000);
    assert_eq!(m.cpu.read_u64(4096).unwrap(), 0, "zeroed over 0xaa");
    m.cpu.write_u32(8192 + 4, 0xabcd).unwrap();
    assert_eq!(m.cpu.read_u32(8192 + 4).unwrap(), 0xabcd);
    assert_eq!(server.dev.lock().unwrap().sysmem[0][8196], 0xcd);
    let c = r.dma_alloc(2 * 4096, true).unwrap();
    assert!(c.is_contiguous());
    assert_eq!(r.dma_outstanding(), 2);
    // SAFETY: no view of `m` is used after this and no device uses it.
    unsafe { r.dma_free(m) };
    // SAFETY: no view of `c` is used after this and no device uses it.
    unsafe { r.dma_free(c) };
    assert_eq!(r.dma_outstanding(), 0);
    assert!(matches!(
        r.dma_alloc(100, false),
        Err(PlatformError::Unsupported(_))
    ));
}

#[test]
fn freed_dma_memory_is_taken_again_by_an_allocation_of_its_size() {
    let server = Server::start(Faults::default());
    let mut r = open(&server);
    let m = r.dma_alloc(2 * 4096, false).unwrap();
    m.cpu.write_u32(4096, 0x1234_5678).unwrap();
    let pages = m.bus_pages.clone();
    let grants = server.dev.lock().unwrap().sysmem.len();
    // SAFETY: no view of `m` is used after this and no device uses it.
    unsafe { r.dma_free(m) };
    let again = r.dma_alloc(2 * 4096, false).unwrap();
    assert_eq!(again.bus_pages, pages, "the freed grant, not a new one");
    assert_eq!(server.dev.lock().unwrap().sysmem.len(), grants);
    assert_eq!(again.cpu.read_u32(4096).unwrap(), 0, "zeroed again");
    // Another size, or contiguity the freed grant lacks, asks the server.
    let other = r.dma_alloc(4096, false).unwrap();
    assert_eq!(server.dev.lock().unwrap().sysmem.len(), grants + 1);
    assert_eq!(r.dma_outstanding(), 2);
    // SAFETY: as above.
    unsafe { r.dma_free(again) };
    // SAFETY: as above.
    unsafe { r.dma_free(other) };
    assert_eq!(r.dma_outstanding(), 0);
}

#[test]
fn a_server_error_names_the_command_and_carries_its_text() {
    let server = Server::start(Faults {
        sysmem_limit: Some(8192),
        ..Faults::default()
    });
    let mut r = open(&server);
    let e = r.dma_alloc(1 << 20, false).unwrap_err();
    let m = e.to_string();
    assert!(m.starts_with("MAP_SYSMEM: "), "{m}");
    assert!(m.contains("out of host memory for sysmem"), "{m}");
    // A server error leaves the connection usable.
    assert_eq!(r.read32(0), BOOT0);
    r.dma_alloc(4096, false).unwrap();
}

#[test]
fn a_reply_that_makes_no_sense_is_an_error_and_ends_the_connection() {
    let server = Server::start(Faults {
        short_page_list: true,
        ..Faults::default()
    });
    let mut r = open(&server);
    let m = r.dma_alloc(2 * 4096, false).unwrap_err().to_string();
    assert!(
        m.contains("makes no sense") && m.contains("8 bytes of page addresses"),
        "{m}"
    );
    assert!(!r.is_present());
    let m = r.config_read(0, 2).unwrap_err().to_string();
    assert!(m.contains("gone after an earlier failure"), "{m}");
}

#[test]
fn a_dropped_connection_is_a_clear_error_never_a_panic() {
    let server = Server::start(Faults {
        close_on: Some(5),
        ..Faults::default()
    });
    let mut r = open(&server);
    let e = r.reset().unwrap_err();
    let m = e.to_string();
    assert!(m.starts_with("RESET: "), "{m}");
    assert!(m.contains("closed the connection during RESET"), "{m}");
    assert_eq!(r.read32(0), u32::MAX, "a vanished device reads all ones");
    assert!(!r.is_present());
    let bar1 = r.bar1().unwrap();
    assert_eq!(bar1.read_u32(0).unwrap(), u32::MAX);
    bar1.write_u32(0, 1).unwrap();
    assert!(r.dma_alloc(4096, false).is_err());
    drop(r);
}

#[test]
fn reset_turns_bus_mastering_off_resets_and_leaves_it_off() {
    let server = Server::start(Faults::default());
    let mut r = open(&server);
    r.reset().unwrap();
    assert_eq!(server.dev.lock().unwrap().resets, 1);
    let log = server.log();
    let reset_at = log.iter().position(|e| e.0 == 5).unwrap();
    let before = log[..reset_at].iter().rev().find(|e| e.0 == 4).unwrap();
    assert_eq!(before.3[2] & 0x4, 0, "bus master off before RESET");
    // The boot turns it back on once WPR2 is down and the FSP booted.
    assert_eq!(server.config16(4) & 0x4, 0);
}

#[test]
fn open_errors_name_the_address_and_the_remedy() {
    let m = Remote::connect("127.0.0.1:1").unwrap_err().to_string();
    assert!(m.contains("cannot connect to 127.0.0.1:1"), "{m}");
    assert!(m.contains("nvbare sim serve"), "{m}");
    let m = Remote::connect("host:notaport").unwrap_err().to_string();
    assert!(m.contains("not HOST:PORT"), "{m}");
}

#[test]
fn a_second_client_of_one_remote_gpu_is_refused_by_the_lock() {
    let server = Server::start(Faults::default());
    let dir = tempfile::tempdir().unwrap();
    let opts = RemoteOptions {
        lock_dir: dir.path().into(),
        ..RemoteOptions::default()
    };
    let _r = Remote::connect_with(&server.addr, &opts).unwrap();
    assert!(
        dir.path()
            .join(format!(
                "nv_remote:127.0.0.1:{}:7.lock",
                server.addr.rsplit_once(':').unwrap().1
            ))
            .exists(),
        "the first client holds tinygrad's lock file"
    );
    // The same lock name only for the same HOST:PORT:N: a second server's lock, taken here as
    // another client (tinygrad) would.
    let second = Server::start(Faults::default());
    let second_port = second.addr.rsplit_once(':').unwrap().1;
    let _held = crate::lock::DeviceLock::acquire(
        &dir.path()
            .join(format!("nv_remote:127.0.0.1:{second_port}:7.lock")),
        "remote GPU",
    )
    .unwrap();
    let m = Remote::connect_with(&second.addr, &opts)
        .unwrap_err()
        .to_string();
    assert!(
        m.contains(&format!("in use by process {}", std::process::id())),
        "{m}"
    );
}

/// Against a real server (`nvbare sim serve`, or the sim crate's `serve` example) at
/// `$NVBARE_REMOTE_SERVER`; ignored without it.
#[test]
#[ignore = "needs a remote PCI server: NVBARE_REMOTE_SERVER=HOST:PORT"]
fn against_the_server_in_nvbare_remote_server() {
    let Some(addr) = std::env::var_os("NVBARE_REMOTE_SERVER") else {
        eprintln!("skipped: NVBARE_REMOTE_SERVER not set");
        return;
    };
    let addr = addr.to_string_lossy().into_owned();
    let mut r = Remote::connect(&addr).unwrap();
    let boot42 = r.read32(0xa00);
    let arch = (boot42 >> 24) & 0x3f;
    assert!(matches!(arch, 0x18 | 0x1a | 0x1b), "BOOT_42 {boot42:#x}");
    assert_eq!(r.config_read(0, 2).unwrap(), 0x10de);
    let bar1 = r.bar1().unwrap();
    bar1.write_u32(0x2000, 0x5a5a_1234).unwrap();
    assert_eq!(bar1.read_u32(0x2000).unwrap(), 0x5a5a_1234);
    let m = r.dma_alloc(64 << 10, false).unwrap();
    assert_eq!(m.bus_pages.len(), 16);
    assert_eq!(m.cpu.read_u64(0x800).unwrap(), 0);
    m.cpu.write_u64(0x800, 0x0123_4567_89ab_cdef).unwrap();
    assert_eq!(m.cpu.read_u64(0x800).unwrap(), 0x0123_4567_89ab_cdef);
    // SAFETY: no view of `m` is used after this and no device uses it.
    unsafe { r.dma_free(m) };
    r.reset().unwrap();
    assert!(r.is_present());
    eprintln!(
        "remote server {addr}: {} BOOT_42 {boot42:#x}, BAR0 {:?}, BAR1 {:?}",
        r.name(),
        r.bar_info(0),
        r.bar_info(1)
    );
}
