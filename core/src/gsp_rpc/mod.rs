//! The RPC channel to a booted GSP-RM: send a typed command, wait for its reply while
//! handling the events GSP-RM sends meanwhile, bounded waits, typed errors.
//!
//! [`GspRpc`] is the channel's state (the shared queues, the events received, what GSP-RM
//! said); [`Rpc`] is the channel in use, borrowing the platform whose BAR0 rings the
//! doorbell and whose clock bounds every wait:
//!
//! ```ignore
//! let reply = gsp.rpc().call(&Command::get_gsp_static_info())?;
//! for event in gsp.rpc_state().drain_events() { ... }
//! ```
//!
//! Replies are matched to commands by function, as OpenRM's `_kgspRpcRecvPoll` does, and
//! by the handles and class or control command the reply echoes (`rpc_message_header_v.
//! sequence` is not echoed by GSP-RM), after the queue layer has checked each message's
//! checksum and element sequence number (`pending.rs`). A reply that arrives after its wait
//! was abandoned is recognised as late and dropped; replies to commands sent without
//! waiting ([`Rpc::send`]) are checked when they arrive, a failure surfacing from the next
//! wait. A `GSP_RUN_CPU_SEQUENCER` is run when it arrives, whatever the wait, on a channel
//! given a [`SequencerHost`] (the booter path), as `_kgspProcessRpcEvent` runs it in every
//! context; elsewhere it is an error. Everything else GSP-RM sends (MMU faults, RC, OS error
//! logs, post events, libos prints...) is kept, bounded, for [`GspRpc::drain_events`].
//!
//! Mirrors `_kgspRpcRecvPoll`, `_kgspRpcDrainEvents` and `_kgspProcessRpcEvent`
//! (`kernel_gsp.c`).

pub mod diagnostics;
mod dispatch;
pub mod error;
mod pending;
pub mod queues;

use alloc::collections::VecDeque;

use nvbare_gsp::abi::{RpcEvent, RpcFunction};
use nvbare_gsp::msgq::MsgqError;
use nvbare_gsp::rpc::commands::Command;
use nvbare_gsp::rpc::events::{DecodedMessage, EventError, GspMessage};
use nvbare_gsp::rpc::{MessageFunction, RpcResult};
use nvbare_gsp::sequencer::CpuSequencer;

pub use diagnostics::{
    DiagnosticsSource, GspDiagnostics, LogBuffer, LogTail, LoggingSections, OsErrorLog,
};
pub use error::{RpcError, RpcErrorKind};
pub use queues::SharedQueues;

use crate::boot::booter::sequencer::SequencerHost;
use crate::falcon::{Engine, Falcon};
use crate::hal::{Clock, Deadline, Platform, PollError, TimedOut, Wait, try_poll_until};
use crate::regs::RiscvBase;
use crate::regs::falcon::{GspQueueHead, RiscvCpuctl};
use dispatch::Dispatched;
use pending::{Awaited, Outstanding};
use queues::{ReceiveError, SendError};

// TIMEOUT: _kgspRpcRecvPoll waits 1.5 x RM's default GPU timeout for a reply ("to allow some
// leeway"); that default is 4 s on silicon, so 6 s. GSP-RM answers in microseconds to
// milliseconds when healthy; this only bounds the wait on a hung one.
/// How long a reply may take by default.
pub const DEFAULT_REPLY_TIMEOUT_NS: u64 = 6_000_000_000;
/// Events kept for [`GspRpc::drain_events`]; older ones are dropped (and counted).
pub const EVENT_CAPACITY: usize = 1024;
/// The first part of every wait spins (GSP-RM usually answers within microseconds), the
/// rest pauses between polls.
const SPIN_NS: u64 = 50_000;
/// Pause between polls after the spin.
const PAUSE_NS: u64 = 100_000;
/// Empty polls between health checks (device present, RISC-V core running).
const HEALTH_EVERY: u32 = 16;
/// Messages handled per poll before the clock is looked at again.
const MESSAGES_PER_POLL: usize = 64;

/// A reply to a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The command's function.
    pub function: RpcFunction,
    /// The decoded reply (its result is `NV_OK`).
    pub body: GspMessage,
}

/// Something GSP-RM sent that was not a reply being waited for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GspEvent {
    /// An event (`NV_VGPU_MSG_EVENT_*`): MMU fault queued, RC triggered, OS error log,
    /// post event, lockdown notice, libos print...
    Message(DecodedMessage),
    /// A reply nobody waits for (any more): to a command whose wait timed out, or one
    /// GSP-RM sent unasked.
    LateReply {
        /// Its function.
        function: MessageFunction,
        /// Its result.
        result: RpcResult,
    },
    /// An event whose payload does not match its type.
    Malformed {
        /// Its function.
        function: MessageFunction,
        /// Why.
        error: EventError,
    },
    /// A message that failed the queue's checks and was dropped.
    Dropped {
        /// What its (unverified) header says it is.
        function: MessageFunction,
        /// The check that failed.
        error: MsgqError,
    },
}

/// What a wait is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    /// The reply to a command.
    Reply(Awaited),
    /// An event.
    Event(RpcEvent),
    /// Nothing: just handle what arrived.
    Nothing,
}

impl Want {
    fn function(self) -> MessageFunction {
        match self {
            Want::Reply(a) => a.function.into(),
            Want::Event(e) => e.into(),
            // NOP: a wait for nothing in particular.
            Want::Nothing => RpcFunction::Nop.into(),
        }
    }
}

/// The state of the RPC channel to one GSP-RM.
#[derive(Debug)]
pub struct GspRpc {
    queues: SharedQueues,
    /// Runs the `GSP_RUN_CPU_SEQUENCER` programs GSP-RM sends (the booter path); `None`:
    /// they are refused ([`RpcErrorKind::UnexpectedSequencer`]).
    sequencer: Option<SequencerHost>,
    diagnostics: DiagnosticsSource,
    events: VecDeque<GspEvent>,
    dropped_events: u64,
    /// Commands sent whose reply has not come: sent with [`Rpc::send`], or whose wait was
    /// abandoned (their reply, if it comes, is late).
    outstanding: Outstanding,
    /// Whether the current wait's reply arrived (also a malformed one).
    reply_claimed: bool,
    doorbell_armed: bool,
    watch_riscv: bool,
    reply_timeout_ns: u64,
    waited_ns: u64,
    /// The last message dropped by the queue's checks during the current wait.
    last_dropped: Option<MsgqError>,
}

impl GspRpc {
    /// A channel over the shared queues and log buffers of one boot.
    pub fn new(queues: SharedQueues, diagnostics: DiagnosticsSource) -> Self {
        Self {
            queues,
            sequencer: None,
            diagnostics,
            events: VecDeque::new(),
            dropped_events: 0,
            outstanding: Outstanding::default(),
            reply_claimed: false,
            doorbell_armed: false,
            watch_riscv: false,
            reply_timeout_ns: DEFAULT_REPLY_TIMEOUT_NS,
            waited_ns: 0,
            last_dropped: None,
        }
    }

    /// The channel in use, over `platform`.
    pub fn on<'a, P: Platform>(&'a mut self, platform: &'a P) -> Rpc<'a, P> {
        Rpc {
            platform,
            rpc: self,
        }
    }

    /// Sets how long [`Rpc::call`] waits for a reply.
    pub fn set_reply_timeout_ns(&mut self, ns: u64) {
        self.reply_timeout_ns = ns;
    }

    /// From now on every `GSP_RUN_CPU_SEQUENCER` is run by `host` as it arrives, during any
    /// wait or poll (the booter path: OpenRM's `_kgspProcessRpcEvent` runs it in every
    /// context, `UNLOADING_GUEST_DRIVER`'s reply wait included). The halt watch
    /// ([`GspRpc::watch_riscv`]) then asks `host`'s falcon generation whether the RISC-V core
    /// halted: TU10x and GA100 have no `RISCV_CPUCTL` (`kflcnIsRiscvActive_TU102` reads
    /// `CORE_SWITCH_RISCV_STATUS`).
    pub fn run_sequencers(&mut self, host: SequencerHost) {
        self.sequencer = Some(host);
    }

    /// From now on every send rings the doorbell (once GSP-RM runs: before, the messages
    /// wait in the queue for GSP-RM to find them at init, as OpenRM's async init RPCs do).
    pub fn arm_doorbell(&mut self) {
        self.doorbell_armed = true;
    }

    /// From now on waits fail as soon as the GSP's RISC-V core halts.
    pub fn watch_riscv(&mut self, on: bool) {
        self.watch_riscv = on;
    }

    /// Whether GSP-RM's status queue is linked.
    pub fn is_linked(&self) -> bool {
        self.queues.is_linked()
    }

    /// Takes the events received so far, oldest first.
    pub fn drain_events(&mut self) -> alloc::collections::vec_deque::Drain<'_, GspEvent> {
        self.events.drain(..)
    }

    /// Events dropped because nobody drained them (beyond [`EVENT_CAPACITY`]).
    pub fn dropped_events(&self) -> u64 {
        self.dropped_events
    }

    /// `OS_ERROR_LOG`s and the libos log tails, read now.
    pub fn diagnostics(&self) -> GspDiagnostics {
        self.diagnostics.collect()
    }

    /// Nanoseconds spent in waits so far (for the boot report's host-side time).
    pub fn waited_ns(&self) -> u64 {
        self.waited_ns
    }

    /// An error for `kind`, with the diagnostics read now, except for a plain refusal
    /// ([`RpcErrorKind::Failed`]: GSP-RM did the call and answered with a status, so its
    /// logs tell nothing more, and reading 5 × 64 KiB of them would cost every refused
    /// call; whoever needs them asks [`Self::diagnostics`]).
    fn error(&self, kind: RpcErrorKind) -> RpcError {
        let diagnostics = match kind {
            RpcErrorKind::Failed { .. } => GspDiagnostics::default(),
            _ => self.diagnostics.collect(),
        };
        RpcError { kind, diagnostics }
    }
}

/// The RPC channel in use: [`GspRpc`] with the platform that reaches the GPU.
pub struct Rpc<'a, P: Platform> {
    platform: &'a P,
    rpc: &'a mut GspRpc,
}

impl<P: Platform> Rpc<'_, P> {
    /// Sends `cmd` and waits for its reply (at most the channel's reply timeout).
    pub fn call(&mut self, cmd: &Command) -> Result<Reply, RpcError> {
        let timeout = self.rpc.reply_timeout_ns;
        self.call_within(cmd, timeout)
    }

    /// Sends `cmd` and waits at most `timeout_ns` for its reply. A reply with a failure
    /// status is [`RpcErrorKind::Failed`].
    pub fn call_within(&mut self, cmd: &Command, timeout_ns: u64) -> Result<Reply, RpcError> {
        self.queue(cmd, timeout_ns)?;
        let awaited = self.rpc.outstanding.sent(cmd);
        let d = self.wait(Want::Reply(awaited), timeout_ns)?;
        match d.failure() {
            Some(result) => Err(self.rpc.error(RpcErrorKind::Failed {
                function: d.function,
                result,
            })),
            None => Ok(Reply {
                function: cmd.function,
                body: d.body,
            }),
        }
    }

    /// Sends `cmd` without waiting: its reply is checked when it arrives, and a failure
    /// surfaces as the error of the next wait.
    pub fn send(&mut self, cmd: &Command) -> Result<(), RpcError> {
        let timeout = self.rpc.reply_timeout_ns;
        self.queue(cmd, timeout)?;
        let awaited = self.rpc.outstanding.sent(cmd);
        self.rpc.outstanding.push_async(awaited);
        Ok(())
    }

    /// Waits at most `timeout_ns` for GSP-RM to send `event`, handling everything else.
    pub fn wait_event(
        &mut self,
        event: RpcEvent,
        timeout_ns: u64,
    ) -> Result<DecodedMessage, RpcError> {
        self.wait(Want::Event(event), timeout_ns)
    }

    /// Handles whatever GSP-RM has sent, without waiting; returns how many events it
    /// queued (or dropped for want of room): replies to calls are handled, not counted.
    pub fn poll(&mut self) -> Result<usize, RpcError> {
        let before = self.rpc.events.len() + self.rpc.dropped_events as usize;
        match self.pump(Want::Nothing) {
            Ok(_) => Ok(self.rpc.events.len() + self.rpc.dropped_events as usize - before),
            Err(k) => Err(self.rpc.error(k)),
        }
    }

    /// Waits at most `timeout_ns` for GSP-RM to write its status queue header
    /// (`GspStatusQueueInit`).
    pub fn link(&mut self, timeout_ns: u64) -> Result<(), RpcError> {
        let platform = self.platform;
        let clock = platform.clock();
        let start = clock.now_ns();
        let mut last = MsgqError::BadTxHeader { why: "not written" };
        let wait = Wait::pausing("GSP-RM's status queue header", timeout_ns, PAUSE_NS);
        let r = try_poll_until(clock, wait, || match self.rpc.queues.try_link() {
            Ok(()) => Ok(Some(())),
            Err(e) => {
                last = e;
                if !self.platform.is_present() {
                    return Err(RpcErrorKind::DeviceGone);
                }
                Ok(None)
            }
        });
        self.rpc.waited_ns += clock.now_ns().saturating_sub(start);
        match r {
            Ok(()) => Ok(()),
            Err(PollError::Failed(k)) => Err(self.rpc.error(k)),
            Err(PollError::TimedOut(timed_out)) => {
                Err(self.rpc.error(RpcErrorKind::StatusQueueNotLinked {
                    waiting_for: RpcEvent::GspInitDone.into(),
                    why: last,
                    timed_out,
                }))
            }
        }
    }

    /// Rings the GSP doorbell (`NV_PGSP_QUEUE_HEAD(0)`), telling GSP-RM a command is
    /// queued (`kgspSetCmdQueueHead`).
    pub fn ring_doorbell(&self) {
        // PANIC: index 0 of an 8-entry register array.
        let _ = GspQueueHead::default().with_head(0).write(self.platform, 0);
    }

    fn queue(&mut self, cmd: &Command, timeout_ns: u64) -> Result<(), RpcError> {
        let function: MessageFunction = cmd.function.into();
        let platform = self.platform;
        let clock = platform.clock();
        match self.rpc.queues.send(cmd.function, &cmd.payload) {
            Ok(_) => {}
            Err(SendError::Rejected(source)) => {
                return Err(self
                    .rpc
                    .error(RpcErrorKind::CommandTooLarge { function, source }));
            }
            Err(SendError::Memory(e)) => return Err(self.rpc.error(RpcErrorKind::Memory(e))),
            Err(SendError::Full(first)) => {
                // Wait for GSP-RM to read, handling what it sends meanwhile (it may be
                // waiting for room in the status queue itself).
                let start = clock.now_ns();
                let wait = Wait::pausing("room in the GSP command queue", timeout_ns, PAUSE_NS);
                let mut last = first;
                let r = try_poll_until(clock, wait, || {
                    self.pump(Want::Nothing)?;
                    match self.rpc.queues.send(cmd.function, &cmd.payload) {
                        Ok(_) => Ok(Some(())),
                        Err(SendError::Full(e)) => {
                            last = e;
                            Ok(None)
                        }
                        Err(SendError::Rejected(source)) => {
                            Err(RpcErrorKind::CommandTooLarge { function, source })
                        }
                        Err(SendError::Memory(e)) => Err(RpcErrorKind::Memory(e)),
                    }
                });
                self.rpc.waited_ns += clock.now_ns().saturating_sub(start);
                match r {
                    Ok(()) => {}
                    Err(PollError::Failed(k)) => return Err(self.rpc.error(k)),
                    Err(PollError::TimedOut(timed_out)) => {
                        return Err(self.rpc.error(RpcErrorKind::QueueFull {
                            function,
                            source: last,
                            timed_out,
                        }));
                    }
                }
            }
        }
        if self.rpc.doorbell_armed {
            self.ring_doorbell();
        }
        Ok(())
    }

    /// Handles up to [`MESSAGES_PER_POLL`] messages; returns the one `want` waits for.
    fn pump(&mut self, want: Want) -> Result<Option<DecodedMessage>, RpcErrorKind> {
        for _ in 0..MESSAGES_PER_POLL {
            match self.rpc.queues.receive() {
                Ok(None) => return Ok(None),
                Ok(Some(m)) => match self.rpc.dispatch(m, want)? {
                    Dispatched::Handled => {}
                    Dispatched::Wanted(d) => return Ok(Some(d)),
                    Dispatched::Sequencer(program) => self.run_sequencer(&program)?,
                },
                Err(ReceiveError::Memory(e)) => return Err(RpcErrorKind::Memory(e)),
                Err(ReceiveError::Bad { error, function }) => {
                    // A write pointer outside the ring cannot be skipped past: every poll
                    // would see it again.
                    let stuck = matches!(error, MsgqError::PointerOutOfRange { .. });
                    let its = want != Want::Nothing && function == want.function().0;
                    if stuck || its {
                        // A message that claims to be the one waited for, dropped: most
                        // likely it was (its reply is not to be expected later).
                        self.rpc.reply_claimed |= its;
                        return Err(RpcErrorKind::BadMessage {
                            waiting_for: want.function(),
                            source: error,
                        });
                    }
                    self.rpc.last_dropped = Some(error);
                    self.rpc.push_event(GspEvent::Dropped {
                        function: MessageFunction(function),
                        error,
                    });
                }
            }
        }
        Ok(None)
    }

    /// Runs a program GSP-RM sent (`_kgspRpcRunCpuSequencer`); GSP-RM goes on once it ran.
    fn run_sequencer(&mut self, program: &CpuSequencer) -> Result<(), RpcErrorKind> {
        let host = self
            .rpc
            .sequencer
            .ok_or(RpcErrorKind::UnexpectedSequencer)?;
        log::debug!(
            "GSP-RM asks for a CPU sequencer program: {:?}",
            program.steps
        );
        let platform = self.platform;
        let saved = host
            .run(platform, platform.clock(), program)
            .map_err(RpcErrorKind::SequencerFailed)?;
        log::debug!("sequencer ran; register save area {saved:x?}");
        Ok(())
    }

    /// Whether the GPU is still there and GSP-RM still running.
    fn health(&self, want: Want) -> Result<(), RpcErrorKind> {
        if !self.platform.is_present() {
            return Err(RpcErrorKind::DeviceGone);
        }
        if self.rpc.watch_riscv {
            // NV_PRISCV_RISCV_CPUCTL for the report; the halt as the chip's falcons show it.
            let cpuctl = RiscvCpuctl::read(self.platform, RiscvBase::GSP);
            let halted = match &self.rpc.sequencer {
                Some(host) => {
                    let p = self.platform;
                    Falcon::new(p, p.clock(), Engine::Gsp, host.falcons).riscv_halted_now()
                }
                None => cpuctl.halted(),
            };
            if halted {
                return Err(RpcErrorKind::GspHalted {
                    waiting_for: want.function(),
                    cpuctl: cpuctl.raw(),
                });
            }
        }
        Ok(())
    }

    fn wait(&mut self, want: Want, timeout_ns: u64) -> Result<DecodedMessage, RpcError> {
        let platform = self.platform;
        let clock = platform.clock();
        let deadline = Deadline::after(clock, timeout_ns);
        // TIMEOUT: a command whose wait was abandoned had its own wait and then another
        // reply timeout to be answered in; later than that, its reply is not expected (a
        // retry of the same call takes its own reply).
        let age = self.rpc.reply_timeout_ns;
        self.rpc.outstanding.expire(clock.now_ns(), age);
        self.rpc.last_dropped = None;
        self.rpc.reply_claimed = false;
        let mut empty = 0u32;
        let mut probe = |rpc: &mut Self| -> Result<Option<DecodedMessage>, RpcErrorKind> {
            let got = rpc.pump(want)?;
            if got.is_some() {
                return Ok(got);
            }
            empty += 1;
            if empty.is_multiple_of(HEALTH_EVERY) {
                rpc.health(want)?;
            }
            Ok(None)
        };
        let what = "a message from GSP-RM";
        let spin = Wait::spin(what, SPIN_NS.min(timeout_ns));
        let mut r = try_poll_until(clock, spin, || probe(self));
        if let Err(PollError::TimedOut(_)) = r {
            let rest = Wait::pausing(what, deadline.remaining_ns(clock), PAUSE_NS);
            r = try_poll_until(clock, rest, || probe(self));
        }
        self.rpc.waited_ns += deadline.elapsed_ns(clock);
        if r.is_err()
            && let Want::Reply(a) = want
            && !self.rpc.reply_claimed
        {
            // The reply may still come: it will be recognised as late.
            self.rpc.outstanding.abandon(a, clock.now_ns());
        }
        match r {
            Ok(d) => Ok(d),
            Err(PollError::Failed(k)) => Err(self.rpc.error(k)),
            Err(PollError::TimedOut(_)) => {
                let timed_out = TimedOut {
                    what,
                    waited_ns: deadline.elapsed_ns(clock),
                    timeout_ns,
                };
                let kind = match self.rpc.last_dropped.take() {
                    // A message was dropped and what we wait for never came: most likely
                    // the dropped one was it.
                    Some(source) => RpcErrorKind::BadMessage {
                        waiting_for: want.function(),
                        source,
                    },
                    None => RpcErrorKind::Timeout {
                        waiting_for: want.function(),
                        timed_out,
                    },
                };
                Err(self.rpc.error(kind))
            }
        }
    }
}
