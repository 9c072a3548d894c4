//! Compute-engine methods (HOPPER_COMPUTE_A 0xcbc0; the offsets used here are the same in
//! AMPERE_COMPUTE_B 0xc6c0, ADA 0xc9c0 and BLACKWELL 0xcec0 — `clcbc0.h`, `clc6c0.h`):
//! one-time setup (object binding, shared/local memory windows, local memory backing),
//! grid launch by QMD address, cache invalidation and semaphore release.

use crate::push::{PushBuffer, PushError, Subchannel, check_address};
use crate::qmd::QMD_ALIGN;
use crate::sem::SEMAPHORE_VA_BITS;

/// `SET_REPORT_SEMAPHORE_PAYLOAD_LOWER`; `_UPPER`, `ADDRESS_LOWER/UPPER`, `REPORT_SEMAPHORE_EXECUTE` follow.
pub const SET_REPORT_SEMAPHORE_PAYLOAD_LOWER: u32 = 0x0158;
/// `REPORT_SEMAPHORE_EXECUTE`.
pub const REPORT_SEMAPHORE_EXECUTE: u32 = 0x0168;
/// `INVALIDATE_SHADER_CACHES` (waits for idle).
pub const INVALIDATE_SHADER_CACHES: u32 = 0x021c;
/// `SET_SHADER_SHARED_MEMORY_WINDOW_A` (upper); `_B` (lower) follows.
pub const SET_SHADER_SHARED_MEMORY_WINDOW_A: u32 = 0x02a0;
/// `SEND_PCAS_A`: QMD address >> 8.
pub const SEND_PCAS_A: u32 = 0x02b4;
/// `SEND_SIGNALING_PCAS2_B`: what the scheduler does with the QMD.
pub const SEND_SIGNALING_PCAS2_B: u32 = 0x02c0;
/// `SEND_SIGNALING_PCAS_B`: INVALIDATE 0:0, SCHEDULE 1:1. TURING_COMPUTE_A's only launch
/// method (`clc5c0.h` defines no `SEND_SIGNALING_PCAS2_B`).
pub const SEND_SIGNALING_PCAS_B: u32 = 0x02bc;
/// `SEND_SIGNALING_PCAS_B_INVALIDATE_TRUE | _SCHEDULE_TRUE`.
pub const PCAS_B_INVALIDATE_SCHEDULE: u32 = 0b11;
/// TURING_COMPUTE_A.
const TURING_COMPUTE_A: u32 = 0xc5c0;
/// `SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A` (size upper); `_B` (lower), `_C` (max SM count) follow.
pub const SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A: u32 = 0x02e4;
/// `SET_SHADER_LOCAL_MEMORY_A` (address upper); `_B` (lower) follows.
pub const SET_SHADER_LOCAL_MEMORY_A: u32 = 0x0790;
/// `SET_SHADER_LOCAL_MEMORY_WINDOW_A` (upper); `_B` (lower) follows.
pub const SET_SHADER_LOCAL_MEMORY_WINDOW_A: u32 = 0x07b0;
/// `INVALIDATE_SHADER_CACHES_NO_WFI`.
pub const INVALIDATE_SHADER_CACHES_NO_WFI: u32 = 0x1698;

/// `INVALIDATE_SHADER_CACHES[_NO_WFI]_INSTRUCTION` bit 0.
pub const INVALIDATE_INSTRUCTION: u32 = 1 << 0;
/// `INVALIDATE_SHADER_CACHES[_NO_WFI]_GLOBAL_DATA` / `_DATA` bit 4.
pub const INVALIDATE_DATA: u32 = 1 << 4;
/// `INVALIDATE_SHADER_CACHES[_NO_WFI]_CONSTANT` bit 12.
pub const INVALIDATE_CONSTANT: u32 = 1 << 12;

/// `REPORT_SEMAPHORE_EXECUTE_PAYLOAD_SIZE64_TRUE` (bit 12).
pub const REPORT_SEMAPHORE_PAYLOAD_SIZE64: u32 = 1 << 12;

/// `SEND_SIGNALING_PCAS2_B_PCAS_ACTION` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcasAction {
    /// `INVALIDATE_COPY_SCHEDULE` (3).
    InvalidateCopySchedule = 3,
    /// `PREFETCH_SCHEDULE` (9): what tinygrad's driver sends on Ampere and Blackwell.
    PrefetchSchedule = 9,
    /// `INVALIDATE_PREFETCH_COPY_SCHEDULE` (0xa).
    InvalidatePrefetchCopySchedule = 0xa,
}

/// Where the shader's shared and local memory windows sit in the GPU's generic address space,
/// and the local memory backing store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComputeSetup {
    /// Compute class to bind on [`Subchannel::COMPUTE`] (e.g. 0xcbc0).
    pub compute_class: u32,
    /// Shared-memory window base (generic addresses here map to the CTA's shared memory).
    pub shared_window: u64,
    /// Local-memory window base.
    pub local_window: u64,
}

/// The local memory backing store: GPU VA and sizes from [`local_memory_size`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalMemory {
    /// GPU VA of the backing store (128 KiB aligned is safe).
    pub va: u64,
    /// Bytes per TPC.
    pub bytes_per_tpc: u64,
    /// Total bytes (what must be allocated at `va`).
    pub total_bytes: u64,
}

/// Sizes a local memory backing store for `bytes_per_thread` of local memory (stack, spills)
/// on a GPU with the given topology: per TPC, each SM's warps times 32 threads, rounded as the
/// hardware allocates (0x200 per warp slot, 32 KiB per TPC, 128 KiB total).
pub fn local_memory_size(
    bytes_per_thread: u64,
    max_warps_per_sm: u64,
    sm_per_tpc: u64,
    tpc_count: u64,
) -> (u64, u64) {
    let per_thread = bytes_per_thread.next_multiple_of(32);
    let per_tpc = (per_thread * 32).next_multiple_of(0x200) * max_warps_per_sm * sm_per_tpc;
    let per_tpc = per_tpc.next_multiple_of(0x8000);
    (per_tpc, (per_tpc * tpc_count).next_multiple_of(0x20000))
}

fn hi_lo(v: u64) -> [u32; 2] {
    [(v >> 32) as u32, v as u32]
}

/// One-time compute setup: `SET_OBJECT` on the compute subchannel, then the local and shared
/// memory windows (which must match the cbuf0 driver slots of every launch).
pub fn setup(pb: &mut PushBuffer, s: &ComputeSetup) -> Result<(), PushError> {
    check_address(s.shared_window, 1 << 24, 49)?;
    check_address(s.local_window, 1 << 24, 49)?;
    pb.set_object(Subchannel::COMPUTE, s.compute_class)?;
    pb.method(
        Subchannel::COMPUTE,
        SET_SHADER_LOCAL_MEMORY_WINDOW_A,
        &hi_lo(s.local_window),
    )?;
    pb.method(
        Subchannel::COMPUTE,
        SET_SHADER_SHARED_MEMORY_WINDOW_A,
        &hi_lo(s.shared_window),
    )?;
    Ok(())
}

/// Points the compute engine at a local memory backing store.
pub fn set_local_memory(pb: &mut PushBuffer, lm: &LocalMemory) -> Result<(), PushError> {
    check_address(lm.va, 1 << 17, 57)?;
    if lm.bytes_per_tpc >> 40 != 0 {
        return Err(PushError::BadSize {
            what: "local memory per TPC",
            value: lm.bytes_per_tpc,
            max: (1 << 40) - 1,
        });
    }
    pb.method(
        Subchannel::COMPUTE,
        SET_SHADER_LOCAL_MEMORY_A,
        &hi_lo(lm.va),
    )?;
    // NON_THROTTLED_A/B: per-TPC size; C: max SM count 0xff (all), as tinygrad sets it.
    let [hi, lo] = hi_lo(lm.bytes_per_tpc);
    pb.method(
        Subchannel::COMPUTE,
        SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A,
        &[hi, lo, 0xff],
    )?;
    Ok(())
}

/// Launches the QMD at `qmd_va` (256-byte aligned, below 2^40).
pub fn launch_qmd(pb: &mut PushBuffer, qmd_va: u64, action: PcasAction) -> Result<(), PushError> {
    check_address(qmd_va, QMD_ALIGN, 40)?;
    pb.method(Subchannel::COMPUTE, SEND_PCAS_A, &[(qmd_va >> 8) as u32])?;
    pb.method(
        Subchannel::COMPUTE,
        SEND_SIGNALING_PCAS2_B,
        &[action as u32],
    )?;
    Ok(())
}

/// [`launch_qmd`] for compute class `class`: on TURING_COMPUTE_A, which has no
/// `SEND_SIGNALING_PCAS2_B`, `SEND_SIGNALING_PCAS_B` with INVALIDATE and SCHEDULE (what mesa's
/// NVK sends on Volta and Turing; `action`'s prefetch has no Turing equivalent). The same
/// number of words either way.
pub fn launch_qmd_for(
    class: u32,
    pb: &mut PushBuffer,
    qmd_va: u64,
    action: PcasAction,
) -> Result<(), PushError> {
    if class != TURING_COMPUTE_A {
        return launch_qmd(pb, qmd_va, action);
    }
    check_address(qmd_va, QMD_ALIGN, 40)?;
    pb.method(Subchannel::COMPUTE, SEND_PCAS_A, &[(qmd_va >> 8) as u32])?;
    pb.method(
        Subchannel::COMPUTE,
        SEND_SIGNALING_PCAS_B,
        &[PCAS_B_INVALIDATE_SCHEDULE],
    )?;
    Ok(())
}

/// Invalidates the SM instruction, global data and constant caches without waiting for idle
/// (needed after the CPU or copy engine rewrote code, constants or data a later grid reads).
pub fn invalidate_caches(pb: &mut PushBuffer) -> Result<(), PushError> {
    pb.method(
        Subchannel::COMPUTE,
        INVALIDATE_SHADER_CACHES_NO_WFI,
        &[INVALIDATE_INSTRUCTION | INVALIDATE_DATA | INVALIDATE_CONSTANT],
    )?;
    Ok(())
}

/// Compute-engine release of a 64-bit payload to `va` after all earlier grids completed
/// (`SET_REPORT_SEMAPHORE_*` + `REPORT_SEMAPHORE_EXECUTE`, four-word structure with timestamp).
/// These methods exist from Ada (0xc9c0) on, not in AMPERE_COMPUTE_B (0xc6c0): there, use a
/// QMD release ([`crate::qmd::Qmd::set_release`]) or a host release ([`crate::sem::host_release`]).
pub fn release_semaphore(pb: &mut PushBuffer, va: u64, value: u64) -> Result<(), PushError> {
    check_address(va, 16, SEMAPHORE_VA_BITS)?;
    pb.method(
        Subchannel::COMPUTE,
        SET_REPORT_SEMAPHORE_PAYLOAD_LOWER,
        &[
            value as u32,
            (value >> 32) as u32,
            va as u32,
            (va >> 32) as u32,
            REPORT_SEMAPHORE_PAYLOAD_SIZE64,
        ],
    )?;
    Ok(())
}
