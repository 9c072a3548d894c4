//! One channel's front end: GPFIFO fetch through USERD and the MMU, the segment being
//! executed, and the operations parked on an unsatisfied semaphore.
//!
//! GPFIFO entries (`NVC86F_GP_ENTRY0/1`, clc86f.h) are read at `gpfifo_va + 8 × GPGet`; an
//! entry with a length names a pushbuffer segment (decoded by [`crate::decode::gp_entry`]),
//! one without is a control entry, of which only NOP is modeled. GPGet is written back to
//! USERD + 0x88 as each entry is fetched; GPPut is read from USERD + 0x8c whenever the fetched
//! entries run out (`AmpereAControlGPFifo`, clc56f.h). `GP_ENTRY1_SYNC` (wait for the
//! engines to idle) and `_LEVEL` (subroutine segments, which only change what PB GET reports)
//! need nothing here: the simulated engines finish each operation before the next is fetched.

use std::collections::VecDeque;

use crate::decode::{self, Decoder, MethodWrite};
use crate::device::{ChannelRecord, Cx};
use crate::memory::Target;
use crate::units::compute::ComputeState;
use crate::units::mmu::{self, MemError, Requester};

use super::exec::{self, Flow, Pending, Stop};

/// USERD offset of GPGet.
pub const USERD_GP_GET: u64 = 0x88;
/// USERD offset of GPPut.
pub const USERD_GP_PUT: u64 = 0x8c;
/// `NVC86F_GP_ENTRY1_OPCODE_NOP`.
const GP_OPCODE_NOP: u32 = 0;

/// How a turn on a channel ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Nothing left to fetch (GPGet == GPPut); `worked` if the turn did anything first.
    Idle {
        /// Anything executed or fetched this turn.
        worked: bool,
    },
    /// Its turn's budget ran out with work left.
    Busy,
    /// Parked on a semaphore (or an engine that does not run), or not scheduled.
    Waiting {
        /// Anything executed or fetched this turn.
        worked: bool,
    },
    /// Halted by an error (now, or earlier).
    Halted,
}

/// The method writes of the segment being executed.
#[derive(Debug)]
struct Segment {
    writes: Vec<MethodWrite>,
    next: usize,
}

/// A channel's execution state (the PBDMA's and the engines' view of it).
#[derive(Debug)]
pub struct ChannelState {
    /// The allocation this state belongs to (a re-allocated token is a new one).
    generation: u64,
    gp_get: u32,
    /// GPPut as last read from USERD.
    gp_put: u32,
    /// A doorbell rang since GPPut was last read: the next fetch that finds no entry left
    /// reads it again. Without one the channel does not look (as the hardware's host reads
    /// GPPut when told to).
    rang: bool,
    segment: Option<Segment>,
    /// Operations waiting to run, first one blocked.
    parked: VecDeque<Pending>,
    decoder: Decoder,
    /// Compute-engine state the channel's methods set.
    pub compute: ComputeState,
    /// Whether the current wait has been counted (once per blocked operation).
    wait_counted: bool,
}

impl ChannelState {
    /// A fresh channel (GPGet 0, nothing bound).
    pub fn new(rec: &ChannelRecord) -> ChannelState {
        ChannelState {
            generation: rec.generation,
            gp_get: 0,
            gp_put: 0,
            rang: false,
            segment: None,
            parked: VecDeque::new(),
            decoder: Decoder::new(),
            compute: ComputeState::default(),
            wait_counted: false,
        }
    }

    /// Whether `rec` is the channel this state was made for.
    pub fn same_channel(&self, rec: &ChannelRecord) -> bool {
        self.generation == rec.generation
    }

    /// A doorbell for this channel rang: GPPut is read again when the fetched entries run
    /// out.
    pub fn doorbell(&mut self) {
        self.rang = true;
    }

    /// Runs up to `budget` methods of channel `token`.
    pub fn run(&mut self, cx: &mut Cx, token: u32, rec: &ChannelRecord, budget: u32) -> Progress {
        if rec.error.is_some() {
            return Progress::Halted;
        }
        if !rec.enabled {
            return Progress::Waiting { worked: false };
        }
        let who = Requester {
            token,
            engine: rec.engine,
            vaspace: rec.vaspace,
        };
        match self.turn(cx, &who, rec, budget) {
            Ok(p) => p,
            Err(Stop::Mem(e)) => {
                mmu::raise(cx, &who, &e);
                Progress::Halted
            }
            Err(Stop::Invalid(why)) => {
                mmu::halt(cx, "fifo", token, why);
                Progress::Halted
            }
        }
    }

    fn turn(
        &mut self,
        cx: &mut Cx,
        who: &Requester,
        rec: &ChannelRecord,
        budget: u32,
    ) -> Result<Progress, Stop> {
        let mut done = 0u32;
        let mut worked = false;
        loop {
            // First whatever is parked, in order.
            while let Some(p) = self.parked.front() {
                match exec::execute(cx, who, rec, &mut self.compute, p)? {
                    Flow::Done => {
                        self.parked.pop_front();
                        self.wait_counted = false;
                        worked = true;
                    }
                    Flow::Wait(what) => {
                        if !self.wait_counted {
                            self.wait_counted = true;
                            match what {
                                exec::Waiting::Semaphore => cx.world.engines.acquires_waited += 1,
                                exec::Waiting::Engine => cx.log.warn(
                                    "ce",
                                    format!(
                                        "injected fault: the copy engine is off; channel \
                                         {:#x} waits at its copy forever",
                                        who.token
                                    ),
                                ),
                            }
                        }
                        return Ok(Progress::Waiting { worked });
                    }
                }
            }
            if done >= budget {
                return Ok(Progress::Busy);
            }
            // Then the segment's next method.
            if let Some(seg) = &mut self.segment {
                if let Some(&w) = seg.writes.get(seg.next) {
                    seg.next += 1;
                    done += 1;
                    worked = true;
                    cx.world.engines.methods += 1;
                    exec::host_method(cx, &w)?;
                    let (a, b) = self
                        .decoder
                        .apply(w)
                        .map_err(|e| Stop::Invalid(format!("pushbuffer: {e}")))?;
                    for op in [a, b].into_iter().flatten() {
                        self.parked.push_back(exec::pending(&self.decoder, w, op));
                    }
                    continue;
                }
                self.segment = None;
            }
            // Then the next GPFIFO entry.
            if !self.fetch(cx, who, rec)? {
                return Ok(Progress::Idle { worked });
            }
            worked = true;
        }
    }

    /// Fetches the GPFIFO entry at GPGet, if GPPut is past it; false when there is none.
    fn fetch(&mut self, cx: &mut Cx, who: &Requester, rec: &ChannelRecord) -> Result<bool, Stop> {
        let userd = |off: u64| match rec.userd {
            Target::Vram(pa) => Target::Vram(pa + off),
            Target::Bus(a) => Target::Bus(a + off),
        };
        let bus_err = |fault| {
            Stop::Invalid(format!(
                "USERD at {:?} cannot be reached: {fault}",
                rec.userd
            ))
        };
        if self.gp_put == self.gp_get {
            if !self.rang {
                return Ok(false);
            }
            self.rang = false;
            mmu::dma_allowed(cx, 0, rec.userd).map_err(Stop::Mem)?;
            self.gp_put = cx.bus.read_u32(userd(USERD_GP_PUT)).map_err(bus_err)?;
        }
        let put = self.gp_put;
        if put == self.gp_get {
            return Ok(false);
        }
        if put >= rec.gpfifo_entries {
            return Err(Stop::Invalid(format!(
                "GPPut {put} is past the end of the {}-entry GPFIFO",
                rec.gpfifo_entries
            )));
        }
        let entry_va = rec.gpfifo_va + 8 * u64::from(self.gp_get);
        let raw = mmu::read_u64(cx, who, entry_va).map_err(Stop::Mem)?;
        self.gp_get = (self.gp_get + 1) % rec.gpfifo_entries;
        cx.bus
            .write_u32(userd(USERD_GP_GET), self.gp_get)
            .map_err(bus_err)?;
        cx.world.engines.gp_entries += 1;
        let Some(seg) = decode::gp_entry(raw) else {
            // CAST: GP_ENTRY1_OPCODE is bits 7:0 of the entry's upper word.
            let opcode = (raw >> 32) as u32 & 0xff;
            if opcode != GP_OPCODE_NOP {
                return Err(Stop::Invalid(format!(
                    "GPFIFO control entry {raw:#018x} (opcode {opcode}) is not modeled; only NOP is"
                )));
            }
            return Ok(true);
        };
        // CAST: a segment is at most 2^21 - 1 words (GP_ENTRY1_LENGTH 30:10).
        let mut bytes = vec![0u8; seg.words as usize * 4];
        mmu::read(cx, who, seg.va, &mut bytes).map_err(Stop::Mem)?;
        let words: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let writes = decode::method_writes(&words).map_err(|e| {
            Stop::Invalid(format!("pushbuffer segment at GPU VA {:#x}: {e}", seg.va))
        })?;
        self.segment = Some(Segment { writes, next: 0 });
        Ok(true)
    }
}

impl From<MemError> for Stop {
    fn from(e: MemError) -> Self {
        Stop::Mem(e)
    }
}
