//! The simulated GPU as a vfio-user server, driven by a test client that speaks the protocol
//! (QEMU's `docs/interop/vfio-user.rst`) over the Unix socket ([`vfio_user_client`]): version,
//! device and region info, config and BAR0 reads, DMA through a memfd the client shares, BAR1
//! through the VRAM memfd the server shares, reset, FLR, and an unplugged GPU. Malformed input
//! is `vfio_user_robustness.rs`'s.

mod vfio_user_client;

use std::io::Write;
use std::os::fd::AsRawFd;

use nvbare_sim::SimChip;
use nvbare_sim::memory::BusFault;
use nvbare_sim::vfio_user::protocol::{self, Command};
use nvbare_sim::vfio_user::{GUEST_BAR1_MAX, VfioUserConfig, serve};
use vfio_user_client::*;

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
