//! Teardown (`kgspUnloadRm_IMPL`, `kgspTeardown_GH100`; on the booter path then
//! `kgspTeardown_TU102`'s FWSEC-SB and `booter_unload`, [`super::booter::teardown`]): `UNLOADING_GUEST_DRIVER` with
//! `newLevel` 0 (the normal unload: `gpuStateUnload` passes
//! `NV2080_CTRL_GPU_SET_POWER_STATE_GPU_LEVEL_0`, gpu.c, and nouveau sends 0; OpenRM sends
//! `GPU_STATE_FLAGS_FAST_UNLOAD` only at system shutdown, where it "skips rmDestruct in GSP"),
//! then wait for the processor to suspend (`MAILBOX0` = `LIBOS_INTERRUPT_PROCESSOR_SUSPENDED`,
//! `kgspWaitForProcessorSuspend_TU102`) and for the RISC-V core to halt ("to allow ACR and
//! GSP FMC to finish shutdown"), then give back every DMA allocation, the sysmem flush buffer
//! last of all with the rest. If GSP-RM does not answer or does not halt, the
//! GPU is reset (where the platform can) before its memory is freed, since a running
//! GSP-RM may still write to it; the next boot then finds WPR2 down.

use nvbare_gsp::rpc::commands::Command;

use super::Timeouts;
use super::error::{BootError, BootErrorKind, Stage};
use super::identify::wpr2_up;
use super::memory::BootMemory;
use crate::falcon::{Engine, Falcon};
use crate::gsp_rpc::GspRpc;
use crate::hal::{Platform, PollError, Wait, try_poll_until};
use crate::regs::falcon::{FalconMailbox0, RiscvCpuctl};
use crate::regs::{FalconBase, RiscvBase};

/// Pause between polls of the RISC-V state.
const PAUSE_NS: u64 = 20_000;
/// `newLevel` of the normal unload: `NV2080_CTRL_GPU_SET_POWER_STATE_GPU_LEVEL_0`.
const UNLOAD_LEVEL_0: u32 = 0;
/// `LIBOS_INTERRUPT_PROCESSOR_SUSPENDED` in `MAILBOX0` (`_kgspIsProcessorSuspended`).
const PROCESSOR_SUSPENDED: u32 = 0x8000_0000;

/// How a teardown went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TeardownReport {
    /// GSP-RM acknowledged `UNLOADING_GUEST_DRIVER`.
    pub unloaded: bool,
    /// The RISC-V core halted.
    pub halted: bool,
    /// The GPU was reset because GSP-RM did not unload or halt.
    pub reset: bool,
    /// WPR2 was still up after it all (the next boot resets the GPU).
    pub wpr2_left_up: bool,
    /// DMA allocations given back.
    pub freed: usize,
    /// Booter path: FWSEC-SB and `booter_unload` (default on the FSP path).
    pub booter: super::booter::teardown::BooterTeardown,
}

/// Unloads GSP-RM and frees `memory`; the memory is freed whatever happens, and the
/// platform given back.
pub fn run<P: Platform>(
    mut platform: P,
    mut rpc: GspRpc,
    mut memory: BootMemory,
    booter: Option<super::booter::BooterState>,
    timeouts: &Timeouts,
) -> (P, Result<TeardownReport, BootError>) {
    let p = &mut platform;
    let mut report = TeardownReport::default();
    let mut first_error: Option<BootError> = None;

    // The reply to `UNLOADING_GUEST_DRIVER` comes just before GSP-RM halts: a halt seen
    // while waiting for it is expected, so the channel's RISC-V watch is off here.
    rpc.watch_riscv(false);
    let unload = Command::unloading_guest_driver(false, false, UNLOAD_LEVEL_0);
    match rpc.on(&*p).call_within(&unload, timeouts.rpc_reply_ns) {
        Ok(_) => report.unloaded = true,
        Err(mut e) => {
            let mut diagnostics = core::mem::take(&mut e.diagnostics);
            if diagnostics.is_empty() {
                // A refusal carries none: read them for the report.
                diagnostics = rpc.diagnostics();
            }
            first_error = Some(BootError {
                stage: Stage::Teardown,
                kind: BootErrorKind::Rpc(e),
                diagnostics,
            });
        }
    }

    if report.unloaded {
        // kgspUnloadRm_IMPL waits for the suspend and goes on to the halt wait whatever it
        // found; a core that already halted has suspended too.
        let wait = Wait::pausing("the GSP to suspend", timeouts.halt_ns, PAUSE_NS);
        let suspended = try_poll_until(p.clock(), wait, || {
            let mb = FalconMailbox0::read(&*p, FalconBase::GSP).raw();
            let halted = RiscvCpuctl::read(&*p, RiscvBase::GSP).halted();
            Ok::<_, ()>((mb == PROCESSOR_SUSPENDED || halted).then_some(()))
        });
        if suspended.is_err() {
            log::debug!("teardown: GSP-RM never reported its processor suspended");
        }
        let mut cpuctl = 0;
        // On the booter path the falcon generation says how a halted RISC-V core shows:
        // Turing has no RISCV_CPUCTL (tu102 dev_riscv_pri.h), only
        // RISCV_CORE_SWITCH_RISCV_STATUS.ACTIVE_STAT (kflcnIsRiscvActive_TU102).
        let falcon_hal = booter.as_ref().map(|b| b.hal.booter.falcon());
        let wait = Wait::pausing("the GSP RISC-V core to halt", timeouts.halt_ns, PAUSE_NS);
        let r = try_poll_until(p.clock(), wait, || {
            let c = RiscvCpuctl::read(&*p, RiscvBase::GSP);
            cpuctl = c.raw();
            if cpuctl == u32::MAX && !p.is_present() {
                return Err(BootErrorKind::gone("polling NV_PRISCV_RISCV_CPUCTL"));
            }
            let halted = match falcon_hal {
                Some(hal) => hal.riscv_halted(&Falcon::new(&*p, p.clock(), Engine::Gsp, hal)),
                None => c.halted(),
            };
            Ok(halted.then_some(()))
        });
        match r {
            Ok(()) => report.halted = true,
            Err(e) => {
                let kind = match e {
                    PollError::Failed(k) => k,
                    PollError::TimedOut(timed_out) => {
                        BootErrorKind::GspDidNotHalt { cpuctl, timed_out }
                    }
                };
                first_error = Some(BootError {
                    stage: Stage::Teardown,
                    kind,
                    diagnostics: rpc.diagnostics(),
                });
            }
        }
    }

    if report.halted
        && let Some(state) = &booter
    {
        // kgspTeardown_TU102: FWSEC-SB, then booter_unload takes WPR2 down.
        let (done, error) = super::booter::teardown::run(p, &mut memory, state, timeouts.halt_ns);
        report.booter = done;
        if let Some(kind) = error
            && first_error.is_none()
        {
            first_error = Some(BootError {
                stage: Stage::Teardown,
                kind,
                diagnostics: rpc.diagnostics(),
            });
        }
    }

    if !report.halted {
        // GSP-RM may still be running and writing to its memory: stop the device first.
        report.reset = super::identify::quiesce_and_reset(p).is_ok();
    }
    report.wpr2_left_up = p.is_present() && wpr2_up(&*p);
    report.freed = memory.len();
    // The channel's views of the memory go before the memory does.
    drop(rpc);
    // SAFETY: the RPC channel, the only holder of views of this memory, is dropped; GSP-RM
    // halted, or bus mastering is off and the GPU reset (`quiesce_and_reset` above).
    unsafe { memory.free_all(p) };
    let result = match first_error {
        None => Ok(report),
        Some(e) => Err(e),
    };
    (platform, result)
}
