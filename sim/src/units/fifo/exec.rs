//! Executing what a channel's methods ask: the host's own methods (SET_OBJECT against the
//! classes allocated on the channel, semaphores, WFI, memory operations) and the engine
//! operations, handed to the copy and compute engines.
//!
//! Host methods: clc56f.h / clc86f.h (`SET_OBJECT` 0x0, `NOP` 0x8, `SEMAPHOREA..D`
//! 0x10..0x1c, `NON_STALL_INTERRUPT` 0x20, `MEM_OP_A..D` 0x28..0x34, `SEM_ADDR_LO` ..
//! `SEM_EXECUTE` 0x5c..0x6c, `WFI` 0x78).

use crate::decode::{self, Decoder, HostSemaphoreOp, MethodWrite, Operation};
use crate::device::{ChannelRecord, Cx, Engine};
use crate::units::ce::{self, CopyRegs};
use crate::units::compute::{self, ComputeState};
use crate::units::mmu::{MemError, Requester};

use super::semaphore::{self, Acquire, Reduction, Release};

/// `NVC56F_SEMAPHORED`: the legacy semaphore trigger.
const SEMAPHORED: u32 = 0x1c;
/// `NVC56F_MEM_OP_D`.
const MEM_OP_D: u32 = 0x34;
/// `NVC56F_MEM_OP_D_OPERATION` values that invalidate the TLB (`MMU_TLB_INVALIDATE`,
/// `_TARGETED`).
const MEM_OP_TLB_INVALIDATE: [u32; 2] = [0x9, 0xa];
/// `NVC56F_SEM_EXECUTE` fields: PAYLOAD_SIZE 24, RELEASE_TIMESTAMP 25, REDUCTION 30:27,
/// REDUCTION_FORMAT 31 (0 signed, 1 unsigned).
const SEM_TIMESTAMP: u32 = 1 << 25;

/// Why a channel stopped.
#[derive(Debug)]
pub enum Stop {
    /// A memory access failed (an MMU fault is raised for it).
    Mem(MemError),
    /// The channel asked for something invalid or not modeled.
    Invalid(String),
}

/// What an operation is waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiting {
    /// A semaphore acquire not yet satisfied.
    Semaphore,
    /// An engine that does not run (the copy engine switched off).
    Engine,
}

/// Whether an operation finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Done.
    Done,
    /// Not yet: retry later.
    Wait(Waiting),
}

/// State captured with an operation when its trigger method was written.
#[derive(Clone, Copy, Debug)]
enum Extra {
    None,
    /// The trigger method's value (SEM_EXECUTE, REPORT_SEMAPHORE_EXECUTE).
    Raw(u32),
    /// The copy engine's registers at LAUNCH_DMA.
    Copy(CopyRegs),
    /// The class bound to the subchannel.
    Class(u32),
}

/// An operation waiting to run (or running), with what it needs from the method state.
#[derive(Clone, Debug)]
pub(super) struct Pending {
    op: Operation,
    extra: Extra,
}

/// The pending form of `op`, triggered by `w`, with the decoder's state it needs.
pub(super) fn pending(decoder: &Decoder, w: MethodWrite, op: Operation) -> Pending {
    let extra = match op {
        Operation::HostSemaphore { .. } | Operation::ComputeSemaphoreRelease { .. } => {
            Extra::Raw(w.value)
        }
        Operation::Copy { .. } | Operation::CopySemaphoreRelease { .. } => {
            Extra::Copy(CopyRegs::capture(decoder, w.subchannel))
        }
        Operation::LaunchQmd { .. } => decoder
            .class(w.subchannel)
            .map_or(Extra::None, Extra::Class),
        _ => Extra::None,
    };
    Pending { op, extra }
}

/// Host methods the decoder reports no operation for: a TLB invalidate from the pushbuffer
/// (`MEM_OP_D` MMU_TLB_INVALIDATE), and the legacy semaphore trigger, which is refused.
pub(super) fn host_method(cx: &mut Cx, w: &MethodWrite) -> Result<(), Stop> {
    match w.method {
        MEM_OP_D if MEM_OP_TLB_INVALIDATE.contains(&(w.value >> 27)) => {
            cx.world.tlb.invalidate();
            cx.log.debug("fifo", "MEM_OP_D: TLB invalidate");
            Ok(())
        }
        SEMAPHORED => Err(Stop::Invalid(
            "the legacy SEMAPHOREA..D methods are not modeled; use SEM_ADDR_LO..SEM_EXECUTE".into(),
        )),
        _ => Ok(()),
    }
}

fn invalid<T>(s: String) -> Result<T, Stop> {
    Err(Stop::Invalid(s))
}

/// Runs `p` for the channel `who` (whose record is `rec`).
pub(super) fn execute(
    cx: &mut Cx,
    who: &Requester,
    rec: &ChannelRecord,
    state: &mut ComputeState,
    p: &Pending,
) -> Result<Flow, Stop> {
    match (&p.op, p.extra) {
        (&Operation::SetObject { subchannel, class }, _) => set_object(rec, subchannel, class),
        (
            &Operation::HostSemaphore {
                va,
                value,
                payload64,
                op,
            },
            Extra::Raw(raw),
        ) => host_semaphore(cx, who, va, value, payload64, op, raw),
        (Operation::WaitForIdle, _) => Ok(Flow::Done),
        (&Operation::Copy { src, dst, len }, Extra::Copy(regs)) => {
            ce::copy(cx, who, src, dst, len, &regs)
        }
        (
            &Operation::CopySemaphoreRelease {
                va,
                value,
                payload64,
                timestamp,
            },
            Extra::Copy(regs),
        ) => ce::release(cx, who, va, value, payload64, timestamp, &regs),
        (&Operation::LaunchQmd { qmd_va, action }, Extra::Class(class)) => {
            compute_only(rec)?;
            compute::launch(cx, who, class, qmd_va, action, state).map(|()| Flow::Done)
        }
        (&Operation::SharedWindow(va), _) => {
            compute_only(rec)?;
            state.shared_window = Some(va);
            Ok(Flow::Done)
        }
        (&Operation::LocalWindow(va), _) => {
            compute_only(rec)?;
            state.local_window = Some(va);
            Ok(Flow::Done)
        }
        (&Operation::LocalMemory(va), _) => {
            compute_only(rec)?;
            state.local_memory = Some(va);
            Ok(Flow::Done)
        }
        (&Operation::LocalMemoryPerTpc { bytes, .. }, _) => {
            compute_only(rec)?;
            state.local_memory_per_tpc = bytes;
            Ok(Flow::Done)
        }
        (Operation::InvalidateCaches(_), _) => Ok(Flow::Done),
        (
            &Operation::ComputeSemaphoreRelease {
                va,
                value,
                payload64,
            },
            Extra::Raw(raw),
        ) => {
            compute_only(rec)?;
            compute::report_semaphore(cx, who, va, value, payload64, raw).map(|()| Flow::Done)
        }
        (op, _) => invalid(format!(
            "{op:?} reached the executor without its method state"
        )),
    }
}

/// Compute operations need a channel on the graphics/compute engine.
fn compute_only(rec: &ChannelRecord) -> Result<(), Stop> {
    match rec.engine {
        Engine::Graphics => Ok(()),
        Engine::Copy(n) => invalid(format!(
            "a compute method on a channel of copy engine {n}; compute runs on the graphics engine"
        )),
    }
}

fn set_object(rec: &ChannelRecord, subchannel: u8, class: u32) -> Result<Flow, Stop> {
    if !rec.classes.contains(&class) {
        return invalid(format!(
            "SET_OBJECT binds class {class:#06x} to subchannel {subchannel}, but no object of \
             that class is allocated on this channel (allocated: {:x?})",
            rec.classes
        ));
    }
    match (decode::Engine::of(class), rec.engine) {
        (decode::Engine::Compute, Engine::Copy(n)) => invalid(format!(
            "SET_OBJECT of compute class {class:#06x} on a channel of copy engine {n}"
        )),
        _ => Ok(Flow::Done),
    }
}

fn host_semaphore(
    cx: &mut Cx,
    who: &Requester,
    va: u64,
    value: u64,
    payload64: bool,
    op: HostSemaphoreOp,
    raw: u32,
) -> Result<Flow, Stop> {
    let timestamp = raw & SEM_TIMESTAMP != 0;
    if (payload64 || timestamp) && !va.is_multiple_of(8) {
        return invalid(format!(
            "host semaphore at {va:#x}: a 64-bit payload or a timestamp needs 8-byte alignment"
        ));
    }
    let acquire = match op {
        HostSemaphoreOp::Release { timestamp, .. } => {
            let r = Release {
                va,
                payload: value,
                payload64,
                timestamp,
                reduction: None,
            };
            semaphore::release(cx, who, &r).map_err(Stop::Mem)?;
            return Ok(Flow::Done);
        }
        HostSemaphoreOp::AcquireEqual => Acquire::Equal,
        HostSemaphoreOp::AcquireStrictGeq => Acquire::StrictGeq,
        HostSemaphoreOp::AcquireCircGeq => Acquire::CircGeq,
        HostSemaphoreOp::Other(4) => Acquire::And,
        HostSemaphoreOp::Other(5) => Acquire::Nor,
        HostSemaphoreOp::Other(6) => {
            let Some(red) = Reduction::from_host(raw >> 27 & 0xf) else {
                return invalid(format!(
                    "SEM_EXECUTE {raw:#x}: reduction {} is not one of IMIN..DEC",
                    raw >> 27 & 0xf
                ));
            };
            let signed = raw >> 31 == 0;
            let r = Release {
                va,
                payload: value,
                payload64,
                timestamp,
                reduction: Some((red, signed)),
            };
            semaphore::release(cx, who, &r).map_err(Stop::Mem)?;
            return Ok(Flow::Done);
        }
        HostSemaphoreOp::Other(o) => {
            return invalid(format!(
                "SEM_EXECUTE operation {o} is not defined (clc56f.h)"
            ));
        }
    };
    let mem = semaphore::read_payload(cx, who, va, payload64).map_err(Stop::Mem)?;
    Ok(if acquire.satisfied(mem, value, payload64) {
        Flow::Done
    } else {
        Flow::Wait(Waiting::Semaphore)
    })
}
