//! The soak test of the VFIO path on the simulator, in release mode (CI runs
//! `cargo test --release -p nvbare-tests --test soak`; a debug build ignores it):
//! 10 000 allocation/free cycles of every kind and 1 000 000 kernel launches leave no RM
//! object, VRAM, GPU VA, page table or DMA mapping behind — asked of our RM emulation and
//! of the simulator itself (GSP-RM's object count, its DMA mappings).

use std::sync::Arc;

use nvbare_core::gpu::Placement;
use nvbare_core::gsp_rm::GspRm;
use nvbare_core::rm::Engine;
use nvbare_sim::{FaultPlan, SimChip, SimGpu, SimPlatform};
use nvbare_tests::gsp_suite::scenarios::{self, GspGpu};
use nvbare_tests::gsp_suite::{self, firmware, kernels_for, roomy_options};

/// What could leak, from both sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Footprint {
    objects: usize,
    memory: nvbare_core::gsp_rm::MemoryUse,
    sim_rm: nvbare_sim::units::gsp::rm::RmObjectCount,
    sim_mapped: (u64, usize),
    dma: usize,
}

fn footprint(gpu: &GspGpu<SimPlatform>, g: &SimGpu) -> Footprint {
    // GSP-RM counts its objects when it steps; it steps at least every millisecond.
    std::thread::sleep(std::time::Duration::from_millis(5));
    Footprint {
        objects: gpu.backend().live_objects(),
        memory: gpu.backend().memory_use(),
        sim_rm: g.rm_objects(),
        sim_mapped: g.bus().sysmem.mapped(),
        dma: gpu.backend().platform().dma_outstanding(),
    }
}

const CYCLES: usize = 10_000;
const LAUNCHES: u32 = 1_000_000;

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "a release-mode soak: cargo test --release -p nvbare-tests --test soak"
)]
fn ten_thousand_allocations_and_a_million_launches_leak_nothing() {
    let chip = SimChip::Gh100;
    let Some(files) = firmware::load(chip.spec().name) else {
        return;
    };
    let g = Arc::new(SimGpu::with_faults(chip, FaultPlan::default()).expect("simulated GPU"));
    let mut gpu = gsp_suite::open(
        SimPlatform::new(g.clone()),
        &files,
        &roomy_options(),
        |_| String::new(),
    );
    let k = gpu
        .load(kernels_for(gpu.sm()).unwrap(), "empty_kernel")
        .unwrap();
    let base = footprint(&gpu, &g);
    assert!(base.sim_rm.objects > 0);

    let kinds = [
        (4096, Placement::Vram, true),
        (70_000, Placement::Vram, false),
        (3 << 20, Placement::Vram, true),
        (8192, Placement::Host, true),
        (2 << 20, Placement::Host, true),
        (64 << 10, Placement::Vram, true),
    ];
    for i in 0..CYCLES {
        let (size, placement, cpu) = kinds[i % kinds.len()];
        let b = gpu.alloc(size, placement, cpu).unwrap();
        if let Some(v) = b.view() {
            let at = (i * 8) % (v.len() - 8);
            v.write_u64(at, i as u64).unwrap();
            assert_eq!(v.read_u64(at).unwrap(), i as u64);
        }
        gpu.free(b);
        if (i + 1) % 1000 == 0 {
            assert_eq!(footprint(&gpu, &g), base, "after {} cycles", i + 1);
        }
    }

    let mut launched = 0;
    while launched < LAUNCHES {
        for _ in 0..100_000 {
            gpu.launch(&k, [1, 1, 1], [32, 1, 1], &[]).unwrap();
        }
        launched += 100_000;
        gpu.sync().unwrap();
        assert_eq!(
            gpu.completed(Engine::Compute),
            gpu.submitted(Engine::Compute).value
        );
        assert_eq!(footprint(&gpu, &g), base, "after {launched} launches");
    }
    let counters = g.engine_counters();
    assert!(
        counters.launches >= u64::from(LAUNCHES),
        "{} launches ran",
        counters.launches
    );
    // Still correct after all that.
    scenarios::vector_add(&mut gpu, 1 << 16);
    assert_eq!(footprint(&gpu, &g), base, "after the check");

    gpu.unload(k).unwrap();
    let (p, r) = GspRm::close(gpu);
    let r = r.expect("close");
    assert_eq!(r.left.buffers, 0, "{r:?}");
    assert_eq!(p.dma_outstanding(), 0);
    assert_eq!(g.bus().sysmem.mapped(), (0, 0));
    assert_eq!(g.rm_objects().objects, 0);
}
