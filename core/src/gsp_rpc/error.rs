//! Why an RPC to GSP-RM failed: one variant per way it can go wrong, each naming the
//! function involved, with what GSP-RM said before ([`GspDiagnostics`]).

use core::fmt;

use nvbare_gsp::msgq::MsgqError;
use nvbare_gsp::rpc::events::EventError;
use nvbare_gsp::rpc::{MessageFunction, RpcResult};

use super::diagnostics::GspDiagnostics;
use crate::boot::booter::sequencer::SequencerFailure;
use crate::hal::TimedOut;
use crate::shared::SharedMemError;

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RpcErrorKind {
    /// No reply (or event) within the bounded wait.
    Timeout {
        /// What was waited for.
        waiting_for: MessageFunction,
        /// The wait.
        timed_out: TimedOut,
    },
    /// GSP-RM answered with a failure status (`rpc_result`, or the `status` of an RM
    /// alloc/control reply).
    Failed {
        /// The function that failed.
        function: MessageFunction,
        /// The status.
        result: RpcResult,
    },
    /// A message on the status queue failed validation (checksum, sequence number,
    /// element count, length, signature): it was dropped.
    BadMessage {
        /// What was waited for when it arrived.
        waiting_for: MessageFunction,
        /// The check that failed.
        source: MsgqError,
    },
    /// The reply to `function` does not match its type (too short, an embedded size
    /// beyond the payload).
    MalformedReply {
        /// The function.
        function: MessageFunction,
        /// The decoding error.
        source: EventError,
    },
    /// The command queue has no room, and GSP-RM did not make room in time.
    QueueFull {
        /// The command.
        function: MessageFunction,
        /// The queue error.
        source: MsgqError,
        /// How long was waited for room.
        timed_out: TimedOut,
    },
    /// The command cannot be queued at all (larger than the whole queue).
    CommandTooLarge {
        /// The command.
        function: MessageFunction,
        /// The queue error.
        source: MsgqError,
    },
    /// The status queue was not set up by GSP-RM yet (no `msgqTxHeader` written).
    StatusQueueNotLinked {
        /// What was waited for.
        waiting_for: MessageFunction,
        /// Why the header GSP-RM wrote is not acceptable (or that it wrote none).
        why: MsgqError,
        /// The wait.
        timed_out: TimedOut,
    },
    /// GSP-RM asked the CPU to run a register sequence (`GSP_RUN_CPU_SEQUENCER`) on a
    /// channel that runs none: after an FSP boot (Hopper, Blackwell). Only the SEC2 booter
    /// path's GSP-RM (Turing to Ada) asks, and there the channel runs every program
    /// ([`super::GspRpc::run_sequencers`]).
    UnexpectedSequencer,
    /// A sequencer program GSP-RM sent failed while the CPU ran it.
    SequencerFailed(SequencerFailure),
    /// The GSP's RISC-V core halted (GSP-RM crashed or shut down).
    GspHalted {
        /// What was waited for.
        waiting_for: MessageFunction,
        /// `NV_PRISCV_RISCV_CPUCTL` as read (for the report: TU10x and GA100 have no such
        /// register, their halt shows in `CORE_SWITCH_RISCV_STATUS`).
        cpuctl: u32,
    },
    /// The device stopped answering (BAR0 reads all ones).
    DeviceGone,
    /// The shared queue memory could not be accessed.
    Memory(SharedMemError),
}

/// An RPC failure, with what GSP-RM said before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcError {
    /// What went wrong.
    pub kind: RpcErrorKind,
    /// `OS_ERROR_LOG` text and libos log tails at the time.
    pub diagnostics: GspDiagnostics,
}

impl RpcError {
    /// The function the failure is about, where there is one.
    pub fn function(&self) -> Option<MessageFunction> {
        match &self.kind {
            RpcErrorKind::Timeout { waiting_for, .. }
            | RpcErrorKind::BadMessage { waiting_for, .. }
            | RpcErrorKind::StatusQueueNotLinked { waiting_for, .. }
            | RpcErrorKind::GspHalted { waiting_for, .. } => Some(*waiting_for),
            RpcErrorKind::Failed { function, .. }
            | RpcErrorKind::MalformedReply { function, .. }
            | RpcErrorKind::QueueFull { function, .. }
            | RpcErrorKind::CommandTooLarge { function, .. } => Some(*function),
            RpcErrorKind::UnexpectedSequencer
            | RpcErrorKind::SequencerFailed(_)
            | RpcErrorKind::DeviceGone
            | RpcErrorKind::Memory(_) => None,
        }
    }

    /// The failure status GSP-RM returned, for [`RpcErrorKind::Failed`].
    pub fn status(&self) -> Option<RpcResult> {
        match self.kind {
            RpcErrorKind::Failed { result, .. } => Some(result),
            _ => None,
        }
    }
}

impl fmt::Display for RpcErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout {
                waiting_for,
                timed_out,
            } => write!(
                f,
                "GSP-RM did not answer {waiting_for}: {timed_out}; GSP-RM is hung or dead, \
                 reset the GPU (the next boot does) and see its logs below"
            ),
            Self::Failed { function, result } => {
                write!(f, "GSP-RM failed {function} with {result}")?;
                if let Some(d) = result.description() {
                    write!(f, " ({d})")?;
                }
                Ok(())
            }
            Self::BadMessage {
                waiting_for,
                source,
            } => write!(
                f,
                "a message from GSP-RM failed its checks while waiting for {waiting_for} \
                 ({source}); it was dropped: GSP-RM or the memory between us is corrupting \
                 messages"
            ),
            Self::MalformedReply { function, source } => {
                write!(f, "GSP-RM's reply to {function} makes no sense: {source}")
            }
            Self::QueueFull {
                function,
                source,
                timed_out,
            } => write!(
                f,
                "cannot queue {function}: {source}, and GSP-RM made no room ({timed_out})"
            ),
            Self::CommandTooLarge { function, source } => {
                write!(f, "cannot queue {function}: {source}")
            }
            Self::StatusQueueNotLinked {
                waiting_for,
                why,
                timed_out,
            } => write!(
                f,
                "GSP-RM never set up its status queue ({why}) while waiting for \
                 {waiting_for}: {timed_out}; GSP-RM did not start"
            ),
            Self::UnexpectedSequencer => f.write_str(
                "GSP-RM sent GSP_RUN_CPU_SEQUENCER to a GPU booted through the FSP \
                 (Hopper, Blackwell), whose GSP-RM never asks the CPU to run register \
                 sequences (only the Turing-to-Ada SEC2 booter path's does): the GSP-RM image \
                 is not this chip's; fetch the chip's firmware again (nvbare firmware fetch \
                 --chip CHIP) and reset the GPU",
            ),
            Self::SequencerFailed(e) => write!(
                f,
                "a CPU sequencer program GSP-RM sent failed ({e}); GSP-RM cannot go on \
                 without it: reset the GPU (the next boot does)"
            ),
            Self::GspHalted {
                waiting_for,
                cpuctl,
            } => write!(
                f,
                "the GSP's RISC-V core halted (NV_PRISCV_RISCV_CPUCTL = {cpuctl:#010x}) \
                 while waiting for {waiting_for}: GSP-RM crashed; reset the GPU"
            ),
            Self::DeviceGone => f.write_str(
                "the GPU no longer answers (BAR0 reads 0xffffffff): it was removed or \
                 reset; check dmesg and the PCI bus",
            ),
            Self::Memory(e) => write!(f, "GSP queue memory: {e}"),
        }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)?;
        if !self.diagnostics.is_empty() {
            write!(f, "\n  {}", self.diagnostics)?;
        }
        Ok(())
    }
}

impl core::error::Error for RpcError {}
