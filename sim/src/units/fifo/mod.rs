//! Host (FIFO): doorbells, GPFIFO fetch, pushbuffer methods.
//!
//! A driver writes a channel's work-submit token to the usermode doorbell
//! (`NV_VIRTUAL_FUNCTION_DOORBELL`, BAR0 0xb80000 + 0x30090; VECTOR 11:0 = channel id,
//! RUNLIST_ID 22:16, and on GB20x RUNLIST_DOORBELL 30:30 = ENABLE, gb202 dev_vm.h). The
//! channel found in `World::channels` is then run on the device thread: GPFIFO entries between
//! GPGet and GPPut (USERD + 0x88 / + 0x8c, `AmpereAControlGPFifo` in clc56f.h) are fetched
//! through the MMU, GPGet advancing in USERD as they are; each entry's pushbuffer segment is
//! expanded into method writes by [`crate::decode`] and executed in order ([`channel`]): host
//! methods here, copy-engine methods by [`crate::units::ce`], compute methods by
//! [`crate::units::compute`].
//!
//! A semaphore acquire that is not yet satisfied parks its channel at that method; parked
//! channels are retried on later steps while the others keep running. A channel that faults
//! or sends something invalid is halted ([`crate::units::mmu::halt`]) and fetches nothing more.
//!
//! Injected faults acted on here: `channel_stall` (doorbells accepted and ignored).

pub mod channel;
mod exec;
pub mod semaphore;

use std::collections::{BTreeMap, VecDeque};

use crate::chip::ChipSpec;
use crate::device::{Cx, Signal, Unit};
use channel::{ChannelState, Progress};
pub use exec::{Flow, Stop, Waiting};

/// `NV_VIRTUAL_FUNCTION_DOORBELL` in BAR0 (usermode region 0xbb0000 + 0x90,
/// `NVC361_NOTIFY_CHANNEL_PENDING`).
pub const DOORBELL: u32 = 0x00bb_0090;
/// `NV_VIRTUAL_FUNCTION_DOORBELL_VECTOR` (11:0) and `_RUNLIST_ID` (22:16): the channel.
const DOORBELL_KEY: u32 = 0x007f_0fff;
/// `NV_VIRTUAL_FUNCTION_DOORBELL_RUNLIST_DOORBELL` (30:30) on GB20x; `_ENABLE` is 1.
const DOORBELL_RUNLIST_ENABLE: u32 = 1 << 30;

/// Methods one channel runs before the next pending channel gets its turn.
const METHODS_PER_TURN: u32 = 1 << 14;

/// What the engines have done since power-on (or the last reset). Owner: the FIFO unit and
/// the engines it drives; read through `SimGpu::engine_counters`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineCounters {
    /// Doorbells rung for a known channel.
    pub doorbells: u64,
    /// Doorbells ignored (unknown channel, malformed, or an injected stall).
    pub doorbells_ignored: u64,
    /// GPFIFO entries fetched.
    pub gp_entries: u64,
    /// Pushbuffer method writes executed.
    pub methods: u64,
    /// Semaphore releases by any engine.
    pub semaphore_releases: u64,
    /// Times a channel parked on an acquire not yet satisfied.
    pub acquires_waited: u64,
    /// Copy-engine copies run.
    pub copies: u64,
    /// Bytes those copies moved.
    pub bytes_copied: u64,
    /// Compute grids launched (QMDs scheduled).
    pub launches: u64,
    /// Launches whose kernel the simulator recognised and ran with a native model.
    pub kernels_modeled: u64,
    /// Launches whose kernel the simulator did not recognise: they completed (their releases
    /// were written) but their code was not executed.
    pub kernels_not_executed: u64,
}

/// The host unit: doorbells and the channels they wake.
#[derive(Debug)]
pub struct Fifo {
    /// Per-channel execution state, by token.
    channels: BTreeMap<u32, ChannelState>,
    /// Channels with work (or waiting), in turn order.
    pending: VecDeque<u32>,
    /// Channels whose doorbell rang since their last turn.
    rung: std::collections::BTreeSet<u32>,
    /// Whether the injected stall has been logged.
    stall_logged: bool,
}

impl Fifo {
    /// Power-on state.
    pub fn new() -> Fifo {
        Fifo {
            channels: BTreeMap::new(),
            pending: VecDeque::new(),
            rung: std::collections::BTreeSet::new(),
            stall_logged: false,
        }
    }

    fn doorbell(&mut self, cx: &mut Cx, value: u32) {
        let gb20x = cx.spec.pmc_boot_42 >> 24 & 0x3f == 0x1b;
        if gb20x && value & DOORBELL_RUNLIST_ENABLE == 0 {
            cx.world.engines.doorbells_ignored += 1;
            cx.log.warn(
                "fifo",
                format!(
                    "doorbell {value:#x} ignored: on GB20x a channel doorbell needs \
                     RUNLIST_DOORBELL (bit 30) set (gb202 dev_vm.h)"
                ),
            );
            return;
        }
        let extra = value & !DOORBELL_KEY & !if gb20x { DOORBELL_RUNLIST_ENABLE } else { 0 };
        if extra != 0 {
            cx.log.warn(
                "fifo",
                format!("doorbell {value:#x} sets bits {extra:#x} outside VECTOR and RUNLIST_ID"),
            );
        }
        let token = value & DOORBELL_KEY;
        if !cx.world.channels.contains_key(&token) {
            cx.world.engines.doorbells_ignored += 1;
            cx.log.warn(
                "fifo",
                format!(
                    "doorbell for channel {:#x} on runlist {}, which GSP-RM did not allocate",
                    token & 0xfff,
                    token >> 16
                ),
            );
            return;
        }
        if cx.faults.channel_stall {
            cx.world.engines.doorbells_ignored += 1;
            if !self.stall_logged {
                self.stall_logged = true;
                cx.log.warn(
                    "fifo",
                    "injected fault: channels stall (doorbells are accepted and ignored)",
                );
            }
            return;
        }
        cx.world.engines.doorbells += 1;
        cx.log.debug("fifo", format!("doorbell {value:#x}"));
        self.rung.insert(token);
        if !self.pending.contains(&token) {
            self.pending.push_back(token);
        }
    }
}

impl Default for Fifo {
    fn default() -> Self {
        Self::new()
    }
}

impl Unit for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }

    fn claims(&self, _spec: &ChipSpec, offset: u32) -> bool {
        offset == DOORBELL
    }

    fn read(&mut self, cx: &mut Cx, _offset: u32) -> u32 {
        cx.log
            .debug("fifo", "read of the write-only doorbell returns 0");
        0
    }

    fn write(&mut self, cx: &mut Cx, _offset: u32, value: u32) {
        self.doorbell(cx, value);
    }

    fn step(&mut self, cx: &mut Cx) -> bool {
        // Forget channels GSP-RM freed.
        self.channels
            .retain(|token, _| cx.world.channels.contains_key(token));
        self.rung
            .retain(|token| cx.world.channels.contains_key(token));
        let mut progressed = false;
        for _ in 0..self.pending.len() {
            let Some(token) = self.pending.pop_front() else {
                break;
            };
            let Some(record) = cx.world.channels.get(&token).cloned() else {
                continue;
            };
            let state = self
                .channels
                .entry(token)
                .or_insert_with(|| ChannelState::new(&record));
            if !state.same_channel(&record) {
                // The token was freed and allocated again: a new channel.
                *state = ChannelState::new(&record);
            }
            if self.rung.remove(&token) {
                state.doorbell();
            }
            match state.run(cx, token, &record, METHODS_PER_TURN) {
                Progress::Idle { worked } => progressed |= worked,
                Progress::Busy => {
                    progressed = true;
                    self.pending.push_back(token);
                }
                Progress::Waiting { worked } => {
                    progressed |= worked;
                    self.pending.push_back(token);
                }
                Progress::Halted => progressed = true,
            }
        }
        progressed
    }

    fn signal(&mut self, _cx: &mut Cx, signal: &Signal) {
        if let Signal::ChannelError { token, .. } = signal {
            self.pending.retain(|t| t != token);
        }
    }
}
