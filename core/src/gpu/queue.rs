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
            Engine::Copy => copy::release_semaphore(pb, self.timeline.gpu_va(), value, true),
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
