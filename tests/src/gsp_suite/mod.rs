//! The VFIO path's end-to-end scenarios, written once over any `Platform`: the simulator
//! (`tests/gsp_rm_sim.rs`, `tests/gsp_rm_sim_faults.rs`, `tests/soak.rs`) and a real GPU
//! bound to vfio-pci (`tests/gsp_rm_hw.rs`, `NVBARE_TEST_DEVICE=BDF`).
//!
//! Each scenario takes an open [`Gpu`] over [`GspRm`] and asserts real behaviour: memory
//! read back, copies and kernels checked element by element, faults named by address.

pub mod firmware;
pub mod scenarios;

use nvbare_core::boot::BootOptions;
use nvbare_core::gpu::{Gpu, GpuConfig};
use nvbare_core::gsp_rm::{GspRm, GspRmOptions, OpenFailure};
use nvbare_core::hal::Platform;

pub use firmware::Files;

/// The committed test kernels (`core/tests/data/cubin/kernels.cu`) for a GPU of SM version
/// `sm`, if committed: [`nvbare_test_kernels::for_sm`]'s cubin (the simulator runs their
/// native models).
pub fn kernels_for(sm: u32) -> Option<&'static [u8]> {
    nvbare_test_kernels::for_sm(sm).map(|k| k.cubin)
}

/// Wait bounds short enough that an injected failure ends a test within seconds, long
/// enough for the simulator in a debug build on a shared machine.
pub fn quick_options() -> GspRmOptions {
    const S: u64 = 1_000_000_000;
    let mut boot = BootOptions::default();
    boot.timeouts.fsp_ns = 3 * S;
    boot.timeouts.lockdown_ns = 5 * S;
    boot.timeouts.status_queue_ns = 5 * S;
    boot.timeouts.init_done_ns = 5 * S;
    boot.timeouts.rpc_reply_ns = 3 * S;
    boot.timeouts.halt_ns = 3 * S;
    GspRmOptions {
        boot,
        gpu: GpuConfig {
            // Smaller rings and arena than the H200 defaults: the simulator's memory is the
            // host's.
            ring_entries: 0x400,
            compute_pushbuffer: 1 << 20,
            copy_pushbuffer: 1 << 20,
            arena: 4 << 20,
            // TIMEOUT: a healthy simulated kernel or copy of these tests ends in well under
            // a second even in a debug build; 5 s bounds a stalled channel.
            timeout_ns: 5 * S,
            // TIMEOUT: faults are reported within 20 ms.
            fault_poll_ns: 20_000_000,
            ..GpuConfig::default()
        },
        ..GspRmOptions::default()
    }
}

/// [`quick_options`] with room for the long scenarios (a 256 MiB copy through the
/// simulator's debug build takes seconds).
pub fn roomy_options() -> GspRmOptions {
    let mut o = quick_options();
    // TIMEOUT: 60 s: the debug-build simulator copies ~100 MiB/s with the other tests
    // running beside it; only a broken test waits this long.
    o.gpu.timeout_ns = 60_000_000_000;
    o
}

/// Opens the GPU on `platform`, or panics with the error (and the platform's log, through
/// `log`).
pub fn open<P: Platform>(
    platform: P,
    files: &Files,
    options: &GspRmOptions,
    log: impl Fn(&P) -> String,
) -> Gpu<GspRm<P>> {
    match GspRm::open(platform, &files.firmware(), options) {
        Ok(g) => g,
        Err(f) => {
            let OpenFailure {
                error, platform, ..
            } = *f;
            panic!("open failed: {error}\n{}", log(&platform))
        }
    }
}
