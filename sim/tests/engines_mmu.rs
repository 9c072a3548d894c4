//! The MMU as the engines see it: page tables built with `nvbare_mmu` in simulated VRAM,
//! translated by the independent walker, cached until invalidated; faults recorded with
//! their address, access and `NV_PFAULT_FAULT_TYPE_*` (dev_fault.h), the channel halted.

mod engines_rig;

use engines_rig::*;
use nvbare_mmu::{Aperture, PhysRange, PteAttributes};
use nvbare_sim::device::Engine;
use nvbare_sim::memory::{Access, Target};
use nvbare_sim::units::mmu::{
    FAULT_PDE, FAULT_PTE, FAULT_RO, FAULT_UNSUPPORTED_APERTURE, MMU_INVALIDATE, MMU_INVALIDATE_PDB,
    MMU_INVALIDATE_UPPER_PDB,
};
use nvbare_sim::{FaultPlan, SimChip};

const HOPPER_COMPUTE_A: u32 = 0xcbc0;
/// `NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE`: ALL_VA 0, ALL_PDB 1, TRIGGER 31 (tu102
/// dev_vm.h), as tinygrad writes it after every map.
const INVALIDATE_ALL: u32 = 1 | 1 << 1 | 1 << 6 | 1 << 31;

fn release_to(rig: &mut Rig, ch: &mut Channel, va: u64, v: u64) {
    let mut p = Push::new();
    p.release(va, v);
    rig.submit(ch, p.words());
}

#[test]
fn releases_land_through_4k_64k_and_2m_pages_in_vram_and_host_memory() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    let bufs = [
        rig.vram_buffer_aligned(2 << 20, 2 << 20),
        rig.vram_buffer_aligned(128 << 10, 64 << 10),
        rig.vram_buffer(8192),
        rig.sys_buffer(8192),
    ];
    for (i, b) in bufs.iter().enumerate() {
        // A release near the end of the buffer: past its first page.
        let off = b.len - 16;
        release_to(&mut rig, &mut ch, b.va + off, 100 + i as u64);
        rig.wait("the release", |r| r.read_u64(b, off) == 100 + i as u64);
    }
    let tlb = rig.gpu.with_world(|w| w.tlb.clone());
    assert!(tlb.walks >= 4 && tlb.hits > 0, "{tlb:?}");
    assert_eq!(rig.error(&ch), None);
}

#[test]
fn an_unmapped_access_is_an_mmu_fault_that_halts_the_channel() {
    let mut rig = Rig::new(SimChip::Gb202, FaultPlan::default());
    let mut ch = rig.channel(Engine::Graphics, &[0xcec0]);
    let hole = rig.vas.alloc(1 << 20, 1 << 20).unwrap();
    release_to(&mut rig, &mut ch, hole + 0x40, 1);
    let e = rig.wait_halted(&ch);
    assert!(
        e.contains("MMU fault") && e.contains(&format!("{:#x}", hole + 0x40)),
        "{e}"
    );
    let f = rig.gpu.with_world(|w| w.mmu_faults.clone());
    assert_eq!(f.len(), 1);
    assert_eq!(
        (
            f[0].va,
            f[0].access,
            f[0].fault_type,
            f[0].token,
            f[0].engine
        ),
        (
            hole + 0x40,
            Access::Write,
            FAULT_PTE,
            ch.token,
            Engine::Graphics
        )
    );
}

#[test]
fn a_write_to_a_read_only_page_and_a_peer_aperture_fault() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let ro = {
        let pa = rig.vram.alloc(4096, 4096).unwrap();
        let va = rig.vas.alloc(4096, 4096).unwrap();
        let mut attrs = PteAttributes::new(Aperture::Video);
        attrs.read_only = true;
        rig.space
            .map(va, &[PhysRange::new(pa, 4096)], attrs)
            .unwrap();
        va
    };
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    // Reading it is fine (an acquire that is satisfied), writing is not.
    let mut p = Push::new();
    p.acquire(ro, 0).release(ro, 1);
    rig.submit(&mut ch, p.words());
    rig.wait_halted(&ch);
    let f = rig
        .gpu
        .with_world(|w| w.mmu_faults.back().cloned())
        .unwrap();
    assert_eq!(
        (f.va, f.access, f.fault_type),
        (ro, Access::Write, FAULT_RO)
    );

    let peer = {
        let va = rig.vas.alloc(4096, 4096).unwrap();
        rig.space
            .map(
                va,
                &[PhysRange::new(0x1000, 4096)],
                PteAttributes::new(Aperture::Peer(1)),
            )
            .unwrap();
        va
    };
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    release_to(&mut rig, &mut ch, peer, 1);
    rig.wait_halted(&ch);
    let f = rig
        .gpu
        .with_world(|w| w.mmu_faults.back().cloned())
        .unwrap();
    assert_eq!(f.fault_type, FAULT_UNSUPPORTED_APERTURE);
}

#[test]
fn translations_are_cached_until_invalidated() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    let va = rig.vas.alloc(4096, 4096).unwrap();
    let (old, new) = (
        rig.vram.alloc(4096, 4096).unwrap(),
        rig.vram.alloc(4096, 4096).unwrap(),
    );
    let attrs = PteAttributes::new(Aperture::Video);
    rig.space
        .map(va, &[PhysRange::new(old, 4096)], attrs)
        .unwrap();
    let at = |pa| Buffer {
        va,
        len: 4096,
        at: Target::Vram(pa),
    };
    release_to(&mut rig, &mut ch, va, 1);
    rig.wait("the first release", |r| r.read_u64(&at(old), 0) == 1);

    // The driver points the page elsewhere but does not invalidate: the TLB still has the
    // old translation, as the hardware's would.
    rig.space.unmap(va, 4096).unwrap();
    rig.space
        .map(va, &[PhysRange::new(new, 4096)], attrs)
        .unwrap();
    release_to(&mut rig, &mut ch, va, 2);
    rig.wait("the stale release", |r| r.read_u64(&at(old), 0) == 2);
    assert_eq!(rig.read_u64(&at(new), 0), 0);

    // The invalidate takes time: TRIGGER reads back set, and the TLB still serves the old
    // translation, until it completes (kgmmuCheckPendingInvalidates_TU102 polls TRIGGER).
    rig.gpu.bar0_write(MMU_INVALIDATE, INVALIDATE_ALL);
    assert_eq!(
        rig.gpu.bar0_read(MMU_INVALIDATE) >> 31,
        1,
        "TRIGGER reads back pending at first"
    );
    rig.wait("the invalidate to complete", |r| {
        r.gpu.bar0_read(MMU_INVALIDATE) >> 31 == 0
    });
    // After the invalidate every engine sees the new page.
    release_to(&mut rig, &mut ch, va, 3);
    rig.wait("the release after the invalidate", |r| {
        r.read_u64(&at(new), 0) == 3
    });
    assert_eq!(rig.read_u64(&at(old), 0), 2);

    // A pushbuffer MEM_OP_D MMU_TLB_INVALIDATE (operation 9 in 31:27) does the same.
    rig.space.unmap(va, 4096).unwrap();
    rig.space
        .map(va, &[PhysRange::new(old, 4096)], attrs)
        .unwrap();
    let mut p = Push::new();
    p.inc(0, MEM_OP_C, &[0, 9 << 27]).release(va, 4);
    rig.submit(&mut ch, p.words());
    rig.wait("the release after MEM_OP_D", |r| {
        r.read_u64(&at(old), 0) == 4
    });
    assert_eq!(rig.error(&ch), None);
}

#[test]
fn an_invalidate_of_one_pdb_drops_only_that_address_spaces_translations() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    let va = rig.vas.alloc(4096, 4096).unwrap();
    let (old, new) = (
        rig.vram.alloc(4096, 4096).unwrap(),
        rig.vram.alloc(4096, 4096).unwrap(),
    );
    let attrs = PteAttributes::new(Aperture::Video);
    rig.space
        .map(va, &[PhysRange::new(old, 4096)], attrs)
        .unwrap();
    let at = |pa| Buffer {
        va,
        len: 4096,
        at: Target::Vram(pa),
    };
    release_to(&mut rig, &mut ch, va, 1);
    rig.wait("the first release", |r| r.read_u64(&at(old), 0) == 1);
    rig.space.unmap(va, 4096).unwrap();
    rig.space
        .map(va, &[PhysRange::new(new, 4096)], attrs)
        .unwrap();
    // ONE PDB (ALL_PDB clear), naming another address space: the channel's translation
    // stays, and the simulator says no VA space has that PDB.
    let root = rig.space.root().addr;
    let pdb = |addr: u64| ((addr >> 12) as u32) << 4;
    rig.gpu
        .bar0_write(MMU_INVALIDATE_PDB, pdb(root + 0x10_0000));
    rig.gpu.bar0_write(MMU_INVALIDATE_UPPER_PDB, 0);
    rig.gpu
        .bar0_write(MMU_INVALIDATE, INVALIDATE_ALL & !(1 << 1));
    release_to(&mut rig, &mut ch, va, 2);
    rig.wait("the release through the kept translation", |r| {
        r.read_u64(&at(old), 0) == 2
    });
    let warnings = rig.gpu.log().warnings().join("\n");
    assert!(warnings.contains("no VA space has"), "{warnings}");
    // Naming the channel's own page directory drops its translation.
    rig.gpu.bar0_write(MMU_INVALIDATE_PDB, pdb(root));
    rig.gpu
        .bar0_write(MMU_INVALIDATE, INVALIDATE_ALL & !(1 << 1));
    rig.wait("the invalidate to complete", |r| {
        r.gpu.bar0_read(MMU_INVALIDATE) >> 31 == 0
    });
    release_to(&mut rig, &mut ch, va, 3);
    rig.wait("the release after the invalidate", |r| {
        r.read_u64(&at(new), 0) == 3
    });
    assert_eq!(rig.error(&ch), None);
}

#[test]
fn injected_mmu_fault_at_a_chosen_va() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    rig.gpu.inject(|f| f.mmu_fault_at = Some(sem.va + 0x100));
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    release_to(&mut rig, &mut ch, sem.va, 1);
    rig.wait("an unaffected release", |r| r.read_u64(&sem, 0) == 1);
    release_to(&mut rig, &mut ch, sem.va + 0x100, 2);
    rig.wait_halted(&ch);
    let f = rig
        .gpu
        .with_world(|w| w.mmu_faults.back().cloned())
        .unwrap();
    assert_eq!((f.va, f.fault_type), (sem.va + 0x100, FAULT_PTE));
    assert_eq!(
        rig.read_u64(&sem, 0x100),
        0,
        "the faulting write did not land"
    );
    assert!(
        rig.gpu
            .log()
            .warnings()
            .iter()
            .any(|w| w.contains("injected fault"))
    );
    // It fires once: another channel reaches the address afterwards.
    let mut ch2 = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    release_to(&mut rig, &mut ch2, sem.va + 0x100, 3);
    rig.wait("after the injected fault", |r| r.read_u64(&sem, 0x100) == 3);
}

#[test]
fn a_vaspace_without_a_page_directory_faults() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    // The ring itself is fetched through the MMU: with no page directory, the first fetch
    // faults.
    rig.gpu
        .with_world(|w| w.vaspaces.get_mut(&VASPACE).unwrap().page_dir = None);
    release_to(&mut rig, &mut ch, sem.va, 1);
    let e = rig.wait_halted(&ch);
    assert!(e.contains("no page directory"), "{e}");
    let f = rig
        .gpu
        .with_world(|w| w.mmu_faults.back().cloned())
        .unwrap();
    assert_eq!(
        (f.va, f.access, f.fault_type),
        (ch.ring.va, Access::Read, FAULT_PDE)
    );
}

#[test]
fn bar1_is_bound_in_physical_mode_only() {
    use nvbare_sim::units::mmu::BAR1_BLOCK_LOW_ADDR;
    let rig = Rig::new(SimChip::Gb202, FaultPlan::default());
    // What tinygrad writes: MODE PHYSICAL, TARGET VID_MEM, PTR 0.
    rig.gpu.bar0_write(BAR1_BLOCK_LOW_ADDR, 0);
    assert_eq!(rig.gpu.bar0_read(BAR1_BLOCK_LOW_ADDR), 0);
    assert!(rig.gpu.log().warnings().is_empty());
    // Virtual mode (MODE 9:9 = 1) is refused in the log: BAR1 stays physical.
    rig.gpu
        .bar0_write(BAR1_BLOCK_LOW_ADDR, 1 << 9 | 0x1234 << 12);
    assert!(rig.gpu.log().contains("only physical mode"));
    rig.gpu.bar1_write(0x2000, &[7]).unwrap();
    assert_eq!(rig.gpu.bus().vram.read_u32(0x2000), Ok(7));
}
