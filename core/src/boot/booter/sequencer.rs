//! Running a CPU sequencer program GSP-RM sent (`GSP_RUN_CPU_SEQUENCER`), as
//! `kgspExecuteSequencerBuffer_IMPL` (`kernel_gsp.c`) and `kgspExecuteSequencerCommand_GA102`
//! (`CORE_RESUME`) do: register writes, read-modify-writes, polls, delays and stores; the
//! GSP falcon's reset, start and halt wait; and the resume that restarts GSP-RM through SEC2.
//! The program is decoded (and its bounds checked) by [`nvbare_gsp::sequencer`].
//!
//! OpenRM runs such a program whenever one arrives, not only while it waits for
//! `GSP_INIT_DONE`: `_kgspProcessRpcEvent` (`kernel_gsp.c`) calls `_kgspRpcRunCpuSequencer`
//! in every context it drains events in (the boot-time poll, the poll for any RPC's reply,
//! `UNLOADING_GUEST_DRIVER`'s included, and the interrupt bottom half, `kgspRpcRecvEvents`).
//! So the booter path hands a [`SequencerHost`] to the RPC channel
//! ([`crate::gsp_rpc::GspRpc::run_sequencers`]), which runs every program it receives.

use core::fmt;

use nvbare_gsp::sequencer::{CpuSequencer, REG_SAVE_SIZE, SequencerStep};

use crate::falcon::{Engine, Falcon, FalconError, FalconHal};
use crate::hal::{Bar0, Clock, TimedOut, Wait, poll_until};
use crate::regs::secure_boot::BsiSecureScratch14;

/// What a program needs besides registers: how to restart GSP-RM (`CORE_RESUME`).
#[derive(Clone, Copy, Debug)]
pub struct ResumeArgs {
    /// Bus address of the libos init arguments (GSP `MAILBOX0/1`).
    pub libos_args: u64,
    /// The RISC-V bootloader's `appVersion` (`FALCON_OS`).
    pub app_version: u32,
}

/// What the RPC channel of a booter-path GSP-RM needs to run the programs GSP-RM sends:
/// the falcon generation (for the core steps) and how to resume GSP-RM.
#[derive(Clone, Copy)]
pub struct SequencerHost {
    /// The chip's falcon generation.
    pub falcons: &'static dyn FalconHal,
    /// How to restart GSP-RM (`CORE_RESUME`).
    pub resume: ResumeArgs,
}

impl fmt::Debug for SequencerHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SequencerHost")
            .field("falcons", &self.falcons.name())
            .field("resume", &self.resume)
            .finish()
    }
}

impl SequencerHost {
    /// Runs `program` ([`run`]).
    pub fn run(
        &self,
        bar: &dyn Bar0,
        clock: &dyn Clock,
        program: &CpuSequencer,
    ) -> Result<[u32; REG_SAVE_SIZE], SequencerFailure> {
        run(bar, clock, self.falcons, program, self.resume)
    }
}

/// A sequencer program that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SequencerFailure {
    /// A `REG_POLL` did not settle; `error` is GSP-RM's code for it.
    Poll {
        /// The register.
        addr: u32,
        /// Last value read.
        value: u32,
        /// GSP-RM's error code.
        error: u32,
        /// The wait.
        timed_out: TimedOut,
    },
    /// A falcon step failed.
    Falcon(FalconError),
    /// `CORE_RESUME`: SEC2 did not hand GSP-RM back, or reported an error in `MAILBOX0`.
    Resume {
        /// SEC2's `MAILBOX0`.
        sec2_mailbox0: u32,
    },
    /// `CORE_RESUME`: the GSP's RISC-V core is not running afterwards.
    NotRunning,
}

impl fmt::Display for SequencerFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SequencerFailure::Poll {
                addr,
                value,
                error,
                timed_out,
            } => write!(
                f,
                "GSP-RM's sequencer poll of {addr:#x} never settled (last {value:#x}, \
                 GSP-RM's error code {error:#x}): {timed_out}"
            ),
            SequencerFailure::Falcon(e) => write!(f, "sequencer falcon step: {e}"),
            SequencerFailure::Resume { sec2_mailbox0 } => write!(
                f,
                "SEC2 did not resume GSP-RM (SEC2 MAILBOX0 {sec2_mailbox0:#x})"
            ),
            SequencerFailure::NotRunning => {
                f.write_str("GSP's RISC-V core is not running after the sequencer's resume")
            }
        }
    }
}

impl From<FalconError> for SequencerFailure {
    fn from(e: FalconError) -> Self {
        SequencerFailure::Falcon(e)
    }
}

// TIMEOUT: a REG_POLL with timeout 0 and the falcon steps use RM's default GPU timeout
// (gpuSetTimeout(pGpu, regPoll.timeout, ..) treats 0 as GPU_TIMEOUT_DEFAULT; CORE_WAIT_FOR_HALT
// and CORE_RESUME's reload wait pass GPU_TIMEOUT_DEFAULT).
const DEFAULT_NS: u64 = crate::falcon::DEFAULT_TIMEOUT_NS;

/// Runs `program` on `bar`; returns the register save area as the `REG_STORE`s left it.
pub fn run(
    bar: &dyn Bar0,
    clock: &dyn Clock,
    falcons: &'static dyn FalconHal,
    program: &CpuSequencer,
    resume: ResumeArgs,
) -> Result<[u32; REG_SAVE_SIZE], SequencerFailure> {
    let gsp = Falcon::new(bar, clock, Engine::Gsp, falcons);
    let mut save = program.reg_save_area;
    for step in &program.steps {
        match *step {
            SequencerStep::RegWrite { addr, val } => bar.write32(addr, val),
            SequencerStep::RegModify { addr, mask, val } => {
                let old = bar.read32(addr);
                bar.write32(addr, SequencerStep::modified(old, mask, val));
            }
            SequencerStep::RegPoll {
                addr,
                mask,
                val,
                timeout_us,
                error,
            } => {
                let timeout_ns = match timeout_us {
                    0 => DEFAULT_NS,
                    us => u64::from(us) * 1_000,
                };
                let mut value = 0;
                poll_until(
                    &clock,
                    Wait::spin("a sequencer REG_POLL", timeout_ns),
                    || {
                        value = bar.read32(addr);
                        (value & mask == val).then_some(())
                    },
                )
                .map_err(|timed_out| SequencerFailure::Poll {
                    addr,
                    value,
                    error,
                    timed_out,
                })?;
            }
            SequencerStep::DelayUs(us) => clock.delay_ns(u64::from(us) * 1_000),
            SequencerStep::RegStore { addr, index } => {
                // PANIC: the decoder checked index < REG_SAVE_SIZE.
                save[usize::from(index)] = bar.read32(addr);
            }
            SequencerStep::CoreReset => {
                gsp.reset()?;
                gsp.disable_ctx_required();
            }
            SequencerStep::CoreStart => gsp.start_cpu(),
            SequencerStep::CoreWaitForHalt => gsp.wait_halted(DEFAULT_NS)?,
            SequencerStep::CoreResume => resume_gsp(bar, clock, falcons, &gsp, resume)?,
        }
    }
    Ok(save)
}

/// `CORE_RESUME` (`kgspExecuteSequencerCommand_GA102`): the GSP reset into RISC-V with the
/// libos arguments in its mailboxes, SEC2 started to reload GSP-RM, the stage-3 handoff
/// awaited, SEC2's `MAILBOX0` checked, `FALCON_OS` written, the RISC-V core running.
fn resume_gsp(
    bar: &dyn Bar0,
    clock: &dyn Clock,
    falcons: &'static dyn FalconHal,
    gsp: &Falcon<'_>,
    resume: ResumeArgs,
) -> Result<(), SequencerFailure> {
    gsp.reset_into_riscv()?;
    // CAST: the low and high halves of the bus address.
    gsp.set_mailboxes(resume.libos_args as u32, (resume.libos_args >> 32) as u32);
    let sec2 = Falcon::new(bar, clock, Engine::Sec2, falcons);
    sec2.start_cpu();
    let done = poll_until(
        &clock,
        Wait::spin("SEC2 to reload GSP-RM (BOOT_STAGE_3_HANDOFF)", DEFAULT_NS),
        || {
            BsiSecureScratch14::read(&bar)
                .boot_stage_3_handoff()
                .then_some(())
        },
    );
    let sec2_mailbox0 = sec2.mailboxes().0;
    if done.is_err() || sec2_mailbox0 != 0 {
        return Err(SequencerFailure::Resume { sec2_mailbox0 });
    }
    gsp.set_os_version(resume.app_version);
    if !gsp.riscv_active() {
        return Err(SequencerFailure::NotRunning);
    }
    Ok(())
}
