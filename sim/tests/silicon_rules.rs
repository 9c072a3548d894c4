//! Rules the simulated GPU enforces because silicon does, each at the register level (no
//! driver of ours in the loop): the sysmem flush read of every system membar, the reboot
//! after a reset (BAR0 all ones, GB20x's BAR firewall), the time a TLB invalidate takes.
//! Each rule's source is cited where the simulator implements it.

use std::time::Duration;

use nvbare_sim::units::mmu::MMU_INVALIDATE;
use nvbare_sim::{FaultPlan, SimChip, SimGpu};

/// `NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE`: ALL_VA | ALL_PDB | SYS_MEMBAR | TRIGGER.
const INVALIDATE_WITH_MEMBAR: u32 = 1 | 1 << 1 | 1 << 6 | 1 << 31;

fn flush_faults(gpu: &SimGpu) -> u64 {
    gpu.with_world(|w| w.flush_faults)
}

fn settle(gpu: &SimGpu) {
    while gpu.bar0_read(MMU_INVALIDATE) >> 31 != 0 {
        std::thread::sleep(Duration::from_micros(20));
    }
}

#[test]
fn a_membar_reads_the_flush_buffer_and_faults_where_the_iommu_maps_nothing() {
    for chip in [SimChip::Gh100, SimChip::Gb202] {
        let gpu = SimGpu::new(chip).unwrap();
        assert!(gpu.config_write(4, 2, 0x6));
        // Never programmed: the membar reads bus address 0, which nothing maps.
        gpu.bar0_write(MMU_INVALIDATE, INVALIDATE_WITH_MEMBAR);
        settle(&gpu);
        assert_eq!(flush_faults(&gpu), 1, "{chip:?}");
        assert!(
            gpu.log().contains("sysmem flush buffer at bus address 0x0"),
            "{chip:?}"
        );
        let pairs = gpu.spec().sysmem_flush;
        // Programmed with an address the IOMMU does not map: the fault names it.
        for &(hi, lo) in pairs {
            gpu.bar0_write(hi, 0x1);
            gpu.bar0_write(lo, 0x2345_6000);
        }
        gpu.bar0_write(MMU_INVALIDATE, INVALIDATE_WITH_MEMBAR);
        settle(&gpu);
        assert_eq!(flush_faults(&gpu), 2);
        assert!(gpu.log().contains("bus address 0x123456000"), "{chip:?}");
        // A page of host memory: the read succeeds.
        let page = gpu.bus().sysmem.alloc(4096).unwrap();
        for &(hi, lo) in pairs {
            gpu.bar0_write(hi, (page.bus >> 32) as u32);
            gpu.bar0_write(lo, page.bus as u32);
        }
        gpu.bar0_write(MMU_INVALIDATE, INVALIDATE_WITH_MEMBAR);
        settle(&gpu);
        assert_eq!(flush_faults(&gpu), 2, "{chip:?}");
    }
}

#[test]
fn without_an_iommu_the_unprogrammed_flush_reads_ram() {
    // tinygrad's remote protocol: physical addresses, address 0 is RAM (silicon-review.md).
    let gpu = SimGpu::with_faults(
        SimChip::Gb202,
        FaultPlan {
            no_iommu: true,
            ..FaultPlan::default()
        },
    )
    .unwrap();
    gpu.bar0_write(MMU_INVALIDATE, INVALIDATE_WITH_MEMBAR);
    settle(&gpu);
    assert_eq!(flush_faults(&gpu), 0);
}

#[test]
fn after_a_reset_bar0_reads_all_ones_and_gb20x_firewall_is_up_until_the_fsp_booted() {
    for (chip, scratch, firewall) in [
        (SimChip::Gh100, 0x2_00bc, false),
        (SimChip::Gb202, 0xad_00bc, true),
    ] {
        let gpu = SimGpu::with_faults(
            chip,
            FaultPlan {
                reboot_ns: Some(30_000_000),
                ..FaultPlan::default()
            },
        )
        .unwrap();
        assert_eq!(
            gpu.config_read(0x2b8, 4) >> 24 & 1,
            0,
            "{chip:?} at power-on"
        );
        gpu.reset();
        // Config space answers at once; BAR0 does not.
        assert_eq!(gpu.config_read(0, 2), 0x10de);
        assert_eq!(gpu.bar0_read(0), u32::MAX, "{chip:?}: NV_PMC_BOOT_0");
        assert_eq!(gpu.bar0_read(0xa00), u32::MAX, "{chip:?}: NV_PMC_BOOT_42");
        assert_eq!(
            gpu.bar0_read(scratch),
            u32::MAX,
            "{chip:?}: the FSP's status"
        );
        assert_eq!(
            gpu.config_read(0x2b8, 4) >> 24 & 1,
            u32::from(firewall),
            "{chip:?}: BAR_FIREWALL_ENGAGE"
        );
        assert!(gpu.log().contains("while the GPU reboots after a reset"));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(gpu.config_read(0x2b8, 4) >> 24 & 1, 0, "{chip:?}");
        assert_ne!(gpu.bar0_read(0), u32::MAX, "{chip:?}");
        // The FSP finishes its own boot right after BAR0 comes back.
        let mut tries = 0;
        while gpu.bar0_read(scratch) != 0xff {
            tries += 1;
            assert!(tries < 1000, "{chip:?}: the FSP never booted");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

#[test]
fn a_tlb_invalidate_reads_pending_until_it_completes() {
    let gpu = SimGpu::new(SimChip::Gh100).unwrap();
    // TRIGGER reads set for the invalidate's 50 µs (`units::mmu::INVALIDATE_NS`); a test
    // thread descheduled for longer than that (parallel tests on 2 cores) reads it clear
    // already, so the write is repeated until one read lands inside the window.
    let mut seen_pending = false;
    for _ in 0..50 {
        gpu.bar0_write(MMU_INVALIDATE, 1 | 1 << 1 | 1 << 31);
        seen_pending |= gpu.bar0_read(MMU_INVALIDATE) >> 31 == 1;
        std::thread::sleep(Duration::from_millis(1));
        assert_eq!(gpu.bar0_read(MMU_INVALIDATE) >> 31, 0, "done");
        if seen_pending {
            break;
        }
    }
    assert!(
        seen_pending,
        "TRIGGER never read set while the invalidate ran"
    );
}
