//! The memories' and the bus's tests.

use std::sync::Arc;

use super::mapping::Mapping;
use super::sysmem::BUS_GUARD;
use super::*;

#[test]
#[should_panic(expected = "mapping read")]
fn a_mapping_access_out_of_bounds_panics_also_in_release() {
    let m = Mapping::new(4096).unwrap();
    m.read(4090, &mut [0u8; 8]);
}

#[test]
fn shareable_vram_is_one_memory_with_its_file_and_clears_for_every_mapping() {
    use std::os::fd::AsRawFd;
    let vram = Vram::shareable(141 << 30, 16 << 20).expect("141 GiB, 16 MiB of it a file");
    let fd = vram.file().expect("a file").as_raw_fd();
    let len = 1 << 20;
    // SAFETY: a new shared mapping of the VRAM file; used through raw pointers only,
    // unmapped below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    let p = p.cast::<u64>();
    vram.write_u64(0x800, 0x1122_3344_5566_7788).unwrap();
    // SAFETY: inside the 1 MiB mapping.
    unsafe {
        assert_eq!(p.add(0x100).read_volatile(), 0x1122_3344_5566_7788);
        p.add(0x200).write_volatile(7);
    }
    assert_eq!(vram.read_u64(0x1000).unwrap(), 7);
    vram.clear();
    // SAFETY: as above.
    assert_eq!(
        unsafe { p.add(0x100).read_volatile() },
        0,
        "the other mapping too"
    );
    assert_eq!(vram.read_u64(0x1000).unwrap(), 0);
    // Past the window: anonymous memory, written, read and cleared as any.
    vram.write_u64(100 << 30, 9).unwrap();
    assert_eq!(vram.read_u64(100 << 30).unwrap(), 9);
    vram.clear();
    assert_eq!(vram.read_u64(100 << 30).unwrap(), 0);
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(p.cast(), len) };
    assert!(Vram::new(1 << 20).unwrap().file().is_none());
}

#[test]
fn vram_is_sparse_and_bounded() {
    let vram = Vram::new(141 << 30).expect("a sparse 141 GiB mapping");
    vram.write_u64(100 << 30, 0x1122_3344_5566_7788).unwrap();
    assert_eq!(vram.read_u64(100 << 30), Ok(0x1122_3344_5566_7788));
    assert_eq!(vram.read_u32(5 << 30), Ok(0));
    assert!(matches!(
        vram.read_u32((141 << 30) - 2),
        Err(BusFault::VramRange { .. })
    ));
    vram.clear();
    assert_eq!(vram.read_u64(100 << 30), Ok(0));
}

#[test]
fn host_memory_is_reached_only_through_its_mappings() {
    let sys = SysMem::new();
    let a = sys.alloc(8192).unwrap();
    let b = sys.alloc(100).unwrap();
    assert_eq!(b.len, 4096);
    sys.write(a.bus + 8188, &[1, 2, 3, 4]).unwrap();
    let mut out = [0; 4];
    sys.read_alloc(a.id, 8188, &mut out).unwrap();
    assert_eq!(out, [1, 2, 3, 4]);
    // Off the end of a mapping, into the guard: a fault, not the next allocation.
    assert!(matches!(
        sys.read(a.bus + 8190, &mut out),
        Err(BusFault::Iommu {
            access: Access::Read,
            ..
        })
    ));
    assert!(sys.read(0x1000, &mut out).is_err());
    assert_eq!(sys.mapped(), (12288, 2));
    assert!(sys.free(a.id));
    assert!(sys.read(a.bus, &mut out).is_err(), "unmapped memory faults");
    assert!(!sys.free(a.id));
    assert_eq!(sys.mapped().1, 1);
}

#[test]
fn host_memory_bus_ranges_are_reused_and_never_reach_bar1() {
    let sys = SysMem::new();
    let first = sys.alloc(1 << 30).unwrap();
    assert!(sys.free(first.id));
    // 600 GiB allocated and freed in turn: more than the window below BAR1 holds.
    for _ in 0..600 {
        let a = sys.alloc(1 << 30).unwrap();
        assert!(a.bus >= SYSMEM_BUS_BASE && a.bus + (1 << 30) <= SYSMEM_BUS_END);
        assert_eq!(a.bus, first.bus, "a freed bus range is handed out again");
        assert!(sys.free(a.id));
    }
    assert_eq!(sys.mapped(), (0, 0));
}

#[test]
fn scattered_host_memory_has_a_bus_address_per_page_and_faults_between_them() {
    let sys = SysMem::new();
    let a = sys.alloc_scattered(3 * 4096).unwrap();
    assert_eq!(a.pages.len(), 3);
    assert_eq!(a.bus, a.pages[0]);
    assert!(
        a.pages.windows(2).all(|w| w[1] + 2 * 4096 == w[0]),
        "{:x?}",
        a.pages
    );
    sys.write(a.pages[1] + 8, &[7]).unwrap();
    let mut b = [0u8; 1];
    sys.read_alloc(a.id, 4096 + 8, &mut b).unwrap();
    assert_eq!(b, [7], "page 1 is bytes 4096.. of the allocation");
    let mut two = [0u8; 2];
    assert!(
        sys.read(a.pages[2] + 4095, &mut two).is_err(),
        "no page follows on the bus"
    );
    assert_eq!(sys.mapped(), (3 * 4096, 1));
    assert!(sys.free(a.id));
    assert_eq!(sys.mapped(), (0, 0));
    let c = sys.alloc(4096).unwrap();
    assert_eq!(c.pages, [c.bus]);
}

#[test]
fn a_full_host_memory_window_is_an_error_until_something_is_freed() {
    let base = SYSMEM_BUS_BASE;
    let sys = SysMem::with_window(base, base + 2 * (0x1000 + BUS_GUARD));
    let a = sys.alloc(0x1000).unwrap();
    let b = sys.alloc(0x1000).unwrap();
    assert_eq!(
        b.bus,
        a.bus + 0x1000 + BUS_GUARD,
        "the guard lies between them"
    );
    let full = sys.alloc(0x1000).unwrap_err();
    assert_eq!(full.kind(), std::io::ErrorKind::OutOfMemory);
    assert!(full.to_string().contains("no room"), "{full}");
    assert!(sys.free(a.id));
    assert_eq!(sys.alloc(0x1000).unwrap().bus, a.bus);
}

#[test]
#[should_panic(expected = "overlaps the host-memory bus window")]
fn a_bar1_inside_the_host_memory_window_is_refused() {
    let sys = SysMem::new();
    sys.attach_bar(
        SYSMEM_BUS_END - (1 << 30),
        2 << 30,
        Arc::new(Vram::new(2 << 30).unwrap()),
    );
}

#[test]
#[should_panic(expected = "overlaps another device's BAR1")]
fn overlapping_bar1s_are_refused() {
    let sys = SysMem::new();
    let vram = Arc::new(Vram::new(1 << 30).unwrap());
    sys.attach_bar(0x80_0000_0000, 2 << 30, vram.clone());
    sys.attach_bar(0x80_4000_0000, 1 << 30, vram);
}

#[test]
fn bar1_bus_addresses_reach_vram() {
    let bus = Bus::new(
        Arc::new(Vram::new(1 << 30).unwrap()),
        Arc::new(SysMem::new()),
        (0x80_0000_0000, 1 << 30),
    );
    bus.set_bus_master(true);
    bus.write_u32(Target::Bus(0x80_0000_1000), 0xabcd).unwrap();
    assert_eq!(bus.read_u32(Target::Vram(0x1000)), Ok(0xabcd));
    assert!(bus.read_u32(Target::Bus(0x80_4000_0000)).is_err());
}

#[test]
fn bus_addresses_need_bus_mastering_vram_does_not() {
    let sys = Arc::new(SysMem::new());
    let a = sys.alloc(4096).unwrap();
    let bus = Bus::new(
        Arc::new(Vram::new(1 << 20).unwrap()),
        sys.clone(),
        (0x80_0000_0000, 1 << 20),
    );
    assert!(matches!(
        bus.write_u32(Target::Bus(a.bus), 1),
        Err(BusFault::NoBusMaster {
            access: Access::Write,
            ..
        })
    ));
    assert!(matches!(
        bus.read_u32(Target::Bus(0x80_0000_0000)),
        Err(BusFault::NoBusMaster { .. })
    ));
    bus.write_u32(Target::Vram(0x100), 5).unwrap();
    bus.set_bus_master(true);
    bus.write_u32(Target::Bus(a.bus), 1).unwrap();
    assert_eq!(bus.read_u32(Target::Bus(a.bus)), Ok(1));
}

#[test]
fn a_peers_bar1_on_the_shared_bus_reaches_its_vram() {
    let sysmem = Arc::new(SysMem::new());
    let peer = Arc::new(Vram::new(1 << 30).unwrap());
    sysmem.attach_bar(0xc0_0000_0000, 1 << 30, peer.clone());
    let bus = Bus::new(
        Arc::new(Vram::new(1 << 30).unwrap()),
        sysmem.clone(),
        (0x80_0000_0000, 1 << 30),
    );
    bus.set_bus_master(true);
    bus.write_u32(Target::Bus(0xc0_0000_2000), 7).unwrap();
    assert_eq!(peer.read_u32(0x2000), Ok(7));
    assert!(
        bus.read_u32(Target::Bus(0xc0_3fff_fffe)).is_err(),
        "past its end"
    );
    sysmem.detach_bar(0xc0_0000_0000);
    assert!(matches!(
        bus.read_u32(Target::Bus(0xc0_0000_2000)),
        Err(BusFault::Iommu { .. })
    ));
}
