//! One engine's queue: its channel (GPFIFO, pushbuffer, progress semaphore) and its timeline,
//! a semaphore every submission releases with the next value. Compute and copy queues are the
//! same type; they differ only in how the timeline release is written.

use crate::copy;
use crate::gpfifo::Channel;
use crate::hal::{Bar0, Clock};
use crate::push::{PushBuffer, PushError};
use crate::rm::Engine;
use crate::sem::{self, Semaphore, SemaphoreError};

/// A point on an engine's timeline: the work submitted up to it has finished once the
/// timeline reaches `value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fence {
    /// The engine.
    pub engine: Engine,
    /// The timeline value.
    pub value: u64,
}

/// A channel and its timeline.
#[derive(Debug)]
pub(crate) struct Queue {
    pub(crate) engine: Engine,
    pub(crate) channel: Channel,
    pub(crate) timeline: Semaphore,
    /// The value the last submission releases.
    pub(crate) submitted: u64,
    /// The highest value a wait has seen passed (known without reading the GPU-written
    /// semaphore).
    pub(crate) seen: u64,
    /// Times a wait rang the doorbell again because the front end had fetched nothing for
    /// a whole slice with entries pending ([`Self::ring_again_if_unfetched`]).
    pub(crate) rerings: u64,
    /// The copy class the copy queue's releases are written for ([`copy::release_semaphore_for`];
    /// 0 on the compute queue).
    pub(crate) copy_class: u32,
}

impl Queue {
    pub(crate) fn new(engine: Engine, channel: Channel, timeline: Semaphore) -> Self {
        timeline.signal_from_cpu(0);
        Self {
            engine,
            channel,
            timeline,
            submitted: 0,
            seen: 0,
            rerings: 0,
            copy_class: 0,
        }
    }

    /// Appends the release of timeline value `value` after everything in `pb`: a host release
    /// after the engines went idle on compute, a copy-engine release (after the copy's
    /// writes) on copy.
    pub(crate) fn append_release(&self, pb: &mut PushBuffer, value: u64) -> Result<(), PushError> {
        match self.engine {
            Engine::Compute => sem::host_release(
                pb,
                self.timeline.gpu_va(),
                value,
                sem::HostRelease::AFTER_IDLE,
            ),
            Engine::Copy => copy::release_semaphore_for(
                self.copy_class,
                pb,
                self.timeline.gpu_va(),
                value,
                true,
            ),
        }
    }

    /// Copies `pb` into the channel and rings the doorbell; `value` becomes the submitted one.
    pub(crate) fn submit(
        &mut self,
        usermode: &impl Bar0,
        clock: &impl Clock,
        timeout_ns: u64,
        pb: &PushBuffer,
        value: u64,
    ) -> Result<(), crate::gpfifo::GpFifoError> {
        self.channel.submit(usermode, clock, timeout_ns, pb)?;
        self.submitted = value;
        Ok(())
    }

    /// Submits the resident segment of `words` words at `va` (which ends with this channel's
    /// progress release and the timeline's release of `value`); `value` becomes the submitted
    /// one.
    pub(crate) fn submit_resident(
        &mut self,
        usermode: &impl Bar0,
        clock: &impl Clock,
        timeout_ns: u64,
        (va, words): (u64, u32),
        value: u64,
    ) -> Result<(), crate::gpfifo::GpFifoError> {
        self.channel
            .submit_resident(usermode, clock, timeout_ns, va, words)?;
        self.submitted = value;
        Ok(())
    }

    /// Whether the timeline has reached `value` (one read of the semaphore, unless a wait
    /// already saw it).
    pub(crate) fn reached(&mut self, value: u64) -> bool {
        if self.seen >= value {
            return true;
        }
        let v = self.timeline.value();
        self.seen = self.seen.max(v);
        v >= value
    }

    /// Called between the slices of a wait that has not been reached: when the front end has
    /// entries to fetch (USERD's GPGet behind GPPut) and GPGet has not moved since the last
    /// slice (`last_get`), publishes GPPut and rings the doorbell again; returns whether it
    /// did.
    ///
    /// Why: GPPut lives in USERD, which on the kernel-driver path is video memory written
    /// through BAR1, while the doorbell is a BAR0 (usermode) register. The two writes leave
    /// the CPU in order, but inside the GPU the BAR1 write to memory and the doorbell take
    /// different paths, so the front end may read USERD's GPPut before the new value lands
    /// (a BAR1 TLB miss would delay it) and see no new work. Nothing rings again if no later
    /// submission comes: the channel stays one entry behind (run 29: GPGet 12082, GPPut
    /// 12083 for 10 s). NVIDIA's UVM adds a BAR1 read before the GPPut write only for a
    /// GPPut in system memory (`uvm_hal_turing_host_write_gpu_put`); a read on every submit
    /// would cost a PCIe round trip (2.8 µs in the H200 VM) on the launch path, so nvbare
    /// recovers here instead, once per slice (50 ms), at no cost to a wait that progresses.
    /// A doorbell rung again for a channel that is merely busy (a long kernel ahead of the
    /// pending entries) is harmless: the front end reads GPPut and finds what it knew.
    pub(crate) fn ring_again_if_unfetched(
        &mut self,
        usermode: &impl Bar0,
        last_get: &mut Option<u32>,
    ) -> bool {
        let fifo = self.channel.fifo();
        let st = fifo.state();
        if st.gp_get == st.gp_put || st.gp_get == u32::MAX {
            *last_get = None;
            return false;
        }
        let stuck = *last_get == Some(st.gp_get);
        *last_get = Some(st.gp_get);
        if !stuck {
            return false;
        }
        if fifo.kick(usermode).is_err() {
            return false;
        }
        self.rerings += 1;
        log::debug!(
            "{} channel: GPGet {} behind GPPut {} with no fetch for a slice; doorbell rung again",
            st.channel,
            st.gp_get,
            st.gp_put
        );
        true
    }

    /// Spins up to `timeout_ns` for the timeline to reach `value`.
    pub(crate) fn wait(
        &mut self,
        value: u64,
        clock: &impl Clock,
        timeout_ns: u64,
    ) -> Result<(), SemaphoreError> {
        self.timeline
            .wait(value, clock, timeout_ns, self.channel.fifo())?;
        self.seen = self.seen.max(value);
        Ok(())
    }
}
