//! GPU-side ordering between the two queues, and GPU timestamps of single launches and copies.
//!
//! Ordering: [`Gpu::wait_on`] makes a queue's later work wait for a fence of the other queue
//! with a host semaphore acquire on that queue's timeline, so the front end holds the channel
//! and no CPU waits in between.
//!
//! Timestamps: a timed launch or copy writes two four-word releases into a ring of stamp pairs
//! in the sync page, one before its work (start) and one after (end). Each pair is tagged with
//! the op's number, so a pair the ring has since given to a later op is reported, not misread.
//! The untimed launch and copy paths are unchanged: timing costs only the ops that ask for it.

use super::{Backend, Engine, Fence, Gpu, GpuError, Kernel, LaunchConfig, queue_index};
use crate::copy;
use crate::push::PushBuffer;
use crate::sem::{self, HostRelease, Semaphore};
use crate::shared::SharedMem;

/// Offset of the stamp ring in the sync page (after the timelines and progress semaphores).
pub(super) const STAMPS_OFFSET: u64 = 0x400;
/// Bytes of the stamp ring: the rest of the 4 KiB sync page.
pub(super) const STAMPS_BYTES: u64 = 0xc00;
/// One pair: a start and an end four-word semaphore (16 bytes each).
const PAIR_BYTES: u64 = 32;
/// Timed ops whose stamps can be read back before the ring reuses their pair.
pub const STAMP_PAIRS: u64 = STAMPS_BYTES / PAIR_BYTES;

/// When a timed op ran on the GPU (the GPU's global timer, ns; the clock of
/// [`Gpu::gpu_time_ns`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuTimes {
    /// When the op's queue reached it with earlier work on the engine finished (and any
    /// [`Gpu::wait_on`] acquire before it satisfied).
    pub start_ns: u64,
    /// When its work had finished (a grid completed and idle; a copy's writes flushed).
    pub end_ns: u64,
}

impl GpuTimes {
    /// `end_ns - start_ns` (0 if the GPU's timer went backwards).
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// A timed launch or copy: its fence, and where its stamps land ([`Gpu::times`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timed {
    /// The op's completion fence.
    pub fence: Fence,
    /// The op's number among timed ops (from 1): the payload both of its stamps carry.
    tag: u64,
}

/// The stamp ring's memory and the number of the last timed op.
#[derive(Debug)]
pub(super) struct Stamps {
    pub(super) mem: SharedMem,
    pub(super) last: u64,
}

impl Stamps {
    /// The GPU address of the start and the end stamp of op `tag`.
    fn vas(&self, tag: u64) -> (u64, u64) {
        let start = self.mem.gpu_va() + (tag % STAMP_PAIRS) * PAIR_BYTES;
        (start, start + 16)
    }

    /// The semaphore at `va` (in the ring).
    fn at(&self, va: u64) -> Result<Semaphore, crate::sem::SemaphoreError> {
        let off = va - self.mem.gpu_va();
        // CAST: offsets inside the 3 KiB ring fit usize.
        Semaphore::new(self.mem.slice(off as usize, 16)?)
    }
}

impl<B: Backend> Gpu<B> {
    /// Makes `engine`'s queue wait on the GPU for `fence` before anything submitted to it
    /// after this call: one host semaphore acquire (`ACQ_CIRC_GEQ`, 64-bit) of the fence's
    /// timeline, in a submission of its own, which does not advance `engine`'s timeline. No
    /// CPU wait; a fence of the same engine, or one already passed, needs nothing (a queue runs
    /// its submissions in order).
    pub fn wait_on(&mut self, engine: Engine, fence: Fence) -> Result<(), GpuError<B::Error>> {
        if fence.engine == engine || self.queues[queue_index(fence.engine)].reached(fence.value) {
            return Ok(());
        }
        let va = self.queues[queue_index(fence.engine)].timeline.gpu_va();
        let mut pb = PushBuffer::with_capacity(6);
        sem::host_acquire(&mut pb, va, fence.value)?;
        let q = &mut self.queues[queue_index(engine)];
        let timeout = self.config.timeout_ns;
        q.channel
            .submit(self.backend.usermode(), self.backend.clock(), timeout, &pb)?;
        Ok(())
    }

    fn next_stamp(&mut self) -> (u64, u64, u64) {
        self.stamps.last += 1;
        let tag = self.stamps.last;
        let (start, end) = self.stamps.vas(tag);
        (tag, start, end)
    }

    /// [`Self::launch_with`] with GPU timestamps: a host release with wait-for-idle and
    /// timestamp before the grid (start: earlier grids done, the front end at this launch),
    /// and one after it in a submission of its own (end: the grid done). Read them with
    /// [`Self::times`].
    pub fn launch_timed(
        &mut self,
        k: &Kernel<B::Memory>,
        cfg: &LaunchConfig,
        params: &[u8],
    ) -> Result<Timed, GpuError<B::Error>> {
        let (tag, start, end) = self.next_stamp();
        let mut pb = PushBuffer::with_capacity(24);
        sem::host_release(&mut pb, start, tag, HostRelease::AFTER_IDLE)?;
        let fence = self.launch_after(&mut pb, k, cfg, params)?;
        let mut tail = PushBuffer::with_capacity(6);
        sem::host_release(&mut tail, end, tag, HostRelease::AFTER_IDLE)?;
        let timeout = self.config.timeout_ns;
        self.queues[queue_index(Engine::Compute)].channel.submit(
            self.backend.usermode(),
            self.backend.clock(),
            timeout,
            &tail,
        )?;
        Ok(Timed { fence, tag })
    }

    /// [`Self::copy`] with GPU timestamps: copy-engine releases with timestamp before the
    /// copy (start: earlier copies flushed) and after it (end: its writes flushed), in the same
    /// submission. Read them with [`Self::times`].
    pub fn copy_timed(
        &mut self,
        dst: u64,
        src: u64,
        len: u64,
    ) -> Result<Timed, GpuError<B::Error>> {
        let (tag, start, end) = self.next_stamp();
        let mut pb = PushBuffer::new();
        let class = self.objects.classes.copy;
        copy::release_semaphore_for(class, &mut pb, start, tag, true)?;
        copy::copy_linear(&mut pb, dst, src, len)?;
        copy::release_semaphore_for(class, &mut pb, end, tag, true)?;
        let fence = self.submit(Engine::Copy, pb)?;
        Ok(Timed { fence, tag })
    }

    /// Waits for a timed op and reads its GPU start and end times. Fails with
    /// [`GpuError::StampsReused`] when more than [`STAMP_PAIRS`] timed ops were submitted
    /// after it (its pair was written again).
    pub fn times(&mut self, t: &Timed) -> Result<GpuTimes, GpuError<B::Error>> {
        self.wait(t.fence)?;
        let (start, end) = self.stamps.vas(t.tag);
        let (start, end) = (self.stamps.at(start)?, self.stamps.at(end)?);
        // The end stamp of a launch is released in a submission after the fence's: wait
        // for it too (a few microseconds at most once the fence passed).
        let q = &self.queues[queue_index(t.fence.engine)];
        end.wait(
            t.tag,
            self.backend.clock(),
            self.config.timeout_ns,
            q.channel.fifo(),
        )?;
        let (s, e) = (start.value(), end.value());
        if s != t.tag || e != t.tag {
            return Err(GpuError::StampsReused {
                tag: t.tag,
                found: s.max(e),
            });
        }
        Ok(GpuTimes {
            start_ns: start.timestamp(),
            end_ns: end.timestamp(),
        })
    }
}
