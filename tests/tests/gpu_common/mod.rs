//! Helpers of the GPU-layer tests: the configuration, opening over the test backend, cubins.
#![allow(dead_code)]

use nvbare_core::gpu::{Gpu, GpuConfig};
use nvbare_tests::test_backend::{RmCall, TestBackend};

/// The committed test kernels for sm_90 (the test backend's SM) and sm_80 (another SM).
pub const SM90: &[u8] = nvbare_test_kernels::for_sm(90).expect("committed").cubin;
pub const SM80: &[u8] = nvbare_test_kernels::for_sm(80).expect("committed").cubin;

/// Small rings and pushbuffers: the test backend's memory is heap memory.
pub fn config() -> GpuConfig {
    GpuConfig {
        ring_entries: 64,
        compute_pushbuffer: 256 << 10,
        copy_pushbuffer: 64 << 10,
        arena: 1 << 20,
        // TIMEOUT: the test front end runs at the doorbell, so a wait that is not satisfied at
        // once never will be; 2 s only bounds a broken test.
        timeout_ns: 2_000_000_000,
        // TIMEOUT: fault polls every 5 ms keep the fault tests short.
        fault_poll_ns: 5_000_000,
        ..GpuConfig::default()
    }
}

pub fn open_with(b: TestBackend, c: GpuConfig) -> Gpu<TestBackend> {
    match Gpu::open(b, c) {
        Ok(g) => g,
        Err(e) => panic!("open: {e}"),
    }
}

pub fn open() -> Gpu<TestBackend> {
    open_with(TestBackend::new(), config())
}

/// What an RM call is, in one word, for comparing sequences.
pub fn shape(c: &RmCall) -> (&'static str, u32) {
    match c {
        RmCall::Alloc { class, .. } => ("alloc", *class),
        RmCall::Control { cmd, .. } => ("control", *cmd),
        RmCall::Free { .. } => ("free", 0),
    }
}

pub fn handle_of(calls: &[RmCall], class: u32, nth: usize) -> u32 {
    calls
        .iter()
        .filter_map(|c| match c {
            RmCall::Alloc {
                class: k, handle, ..
            } if *k == class && *handle != 0 => Some(*handle),
            _ => None,
        })
        .nth(nth)
        .expect("allocated")
}
