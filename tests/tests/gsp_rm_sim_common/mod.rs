//! Helpers of the simulator end-to-end tests (`gsp_rm_sim.rs`, `gsp_rm_sim_faults.rs`): the
//! firmware, a simulated GPU, opening GSP-RM over it, the simulator's log for a failure, and a
//! close that checks nothing was left behind.
#![allow(dead_code)]

use std::sync::Arc;

use nvbare_core::gsp_rm::{GspRm, GspRmOptions};
use nvbare_sim::{FaultPlan, SimChip, SimGpu, SimPlatform};
use nvbare_tests::gsp_suite::scenarios::GspGpu;
use nvbare_tests::gsp_suite::{self, Files, firmware};

pub fn sim_log(p: &SimPlatform) -> String {
    let lines = p.gpu().log().lines();
    let tail: Vec<String> = lines[lines.len().saturating_sub(40)..]
        .iter()
        .map(|l| format!("{} {}: {}", l.at_ns, l.unit, l.text))
        .collect();
    format!("simulator log (last 40):\n{}", tail.join("\n"))
}

pub fn files(chip: SimChip) -> Option<Files> {
    firmware::load(chip.spec().name)
}

pub fn sim(chip: SimChip, faults: FaultPlan) -> Arc<SimGpu> {
    Arc::new(SimGpu::with_faults(chip, faults).expect("simulated GPU"))
}

pub fn open(g: &Arc<SimGpu>, files: &Files, o: &GspRmOptions) -> GspGpu<SimPlatform> {
    gsp_suite::open(SimPlatform::new(g.clone()), files, o, sim_log)
}

/// Closes cleanly and checks nothing is left: DMA memory, DMA mappings, RM objects.
pub fn close_clean(gpu: GspGpu<SimPlatform>, g: &SimGpu) -> SimPlatform {
    close_leaving(gpu, g, (0, 0))
}

/// [`close_clean`] where `mapped` (bytes, mappings) of DMA memory were left by a process
/// that "crashed" on the same device.
pub fn close_leaving(gpu: GspGpu<SimPlatform>, g: &SimGpu, mapped: (u64, usize)) -> SimPlatform {
    let (p, r) = GspRm::close(gpu);
    let report = r.unwrap_or_else(|e| panic!("close: {e}"));
    assert!(
        report.teardown.unloaded && report.teardown.halted,
        "{report:?}"
    );
    assert!(!report.teardown.wpr2_left_up, "{report:?}");
    assert_eq!(report.left.buffers, 0, "buffers left: {report:?}");
    assert_eq!(p.dma_outstanding(), 0, "DMA memory leaked");
    assert_eq!(g.bus().sysmem.mapped(), mapped, "DMA mappings left");
    assert_eq!(g.rm_objects().objects, 0, "GSP-RM halted, its objects gone");
    p
}
