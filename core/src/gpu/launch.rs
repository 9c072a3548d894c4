//! The launch path: per-launch QMDs and constant bank 0 built from a cached template, placed
//! in the arena (written through `MirroredMem`) and started with one PCAS; plus the knobs
//! that shape it and (with the `probe` feature) the hooks that measure it.

use alloc::vec::Vec;
use core::cell::RefCell;

use super::{Buffer, Engine, Fence, Gpu, GpuError, LaunchTuning, queue_index};
use crate::compute::{self, PcasAction};
use crate::cubin::{Kernel as CubinKernel, ModuleImage};
use crate::gpu::Backend;
#[cfg(feature = "probe")]
use crate::hal::Clock;
use crate::launch::{self, Cbuf0Slots, ComputeContext, LaunchConfig};
use crate::mirror::MirroredMem;
use crate::push::PushBuffer;
use crate::qmd::ConstantBuffer;
use crate::ring::Ring;
#[cfg(feature = "probe")]
use crate::sem;

/// A kernel ready to launch: its module image in video memory plus the
/// cubin's description of it.
#[derive(Debug)]
pub struct Kernel<M> {
    /// The cubin's record of the kernel (owned: the cubin bytes are not kept).
    pub info: CubinKernel<'static>,
    image: ModuleImage,
    /// The code's memory (mapped while the kernel exists).
    code: Buffer<M>,
    /// Bytes of constant bank 0 in an arena slot (`launch::cbuf0_size`, rounded up
    /// so the next slot's QMD stays 256-byte aligned).
    cbuf0_len: u64,
    /// The last launch's QMD and bank 0, reused when the next launch has the
    /// same shape (building a QMD from scratch costs about a microsecond).
    template: RefCell<Option<Template>>,
}

impl<M> Kernel<M> {
    /// A loaded kernel with no launch template yet.
    pub(super) fn new(
        info: CubinKernel<'static>,
        image: ModuleImage,
        code: Buffer<M>,
        slots: &Cbuf0Slots,
    ) -> Self {
        let cbuf0_len = u64::from(launch::cbuf0_size(slots, &info)).next_multiple_of(256);
        Self {
            info,
            image,
            code,
            cbuf0_len,
            template: RefCell::new(None),
        }
    }

    /// The GPU address of the kernel's first instruction and its code's size in bytes: where
    /// a fault's PC falls inside this kernel (`None` if its text section was not laid out).
    pub fn code_range(&self) -> Option<(u64, u64)> {
        Some((
            self.image.section_va(self.info.text_section)?,
            self.info.code_size,
        ))
    }

    /// The kernel's module image (where its sections were laid out).
    pub(super) fn image(&self) -> &ModuleImage {
        &self.image
    }

    /// Bytes of constant bank 0 a launch slot gives the kernel (a multiple of 256).
    pub(super) fn cbuf0_len(&self) -> u64 {
        self.cbuf0_len
    }

    /// The kernel's code memory, for [`Gpu::unload`].
    pub(super) fn into_code(self) -> Buffer<M> {
        self.code
    }
}

/// A launch shape and the QMD / bank 0 it produced.
#[derive(Debug, Clone)]
struct Template {
    cfg: LaunchConfig,
    local: u32,
    /// The tuning that shaped the QMD ([`LaunchTuning::apply`]); another one (`gpu.tuning` is
    /// public, `bench --study` changes it) builds the QMD again.
    tuning: LaunchTuning,
    qmd: crate::qmd::Qmd,
    cbuf0: Vec<u8>,
}

/// CPU time of launches by step, summed (see [`Gpu::profile`]).
#[cfg(feature = "probe")]
#[derive(Clone, Copy, Debug, Default)]
pub struct LaunchProfile {
    /// Building the QMD and bank 0 and taking an arena slot.
    pub prepare_ns: u64,
    /// Storing them into the arena and building the pushbuffer.
    pub write_ns: u64,
    /// Pushbuffer and GPFIFO stores, fences, GPPut and the doorbell.
    pub submit_ns: u64,
    pub launches: u64,
}

/// A per-launch arena: a ring of QMD + cbuf0 slots, reused once the timeline
/// value that last used them has passed.
pub(super) struct Arena<M> {
    pub(super) buf: Buffer<M>,
    /// The arena's CPU mapping with a shadow of what was written to it.
    pub(super) mem: MirroredMem,
    /// Slots, each freed when the compute timeline passes its launch's value.
    pub(super) ring: Ring,
}

/// One launch's QMD and constant bank 0, and the arena slot they go to.
struct Slot {
    at: u64,
    qmd_va: u64,
    qmd: crate::qmd::Qmd,
    /// The slot's bytes: the QMD's space (filled in by [`Gpu::write_launch`]),
    /// then constant bank 0.
    bytes: Vec<u8>,
}

/// A launch of `grid` × `block` without dynamic shared memory.
const fn shape(grid: [u32; 3], block: [u32; 3]) -> LaunchConfig {
    LaunchConfig {
        grid,
        block,
        dynamic_shared: 0,
    }
}

impl<B: Backend> Gpu<B> {
    /// An arena offset for `bytes` (a multiple of 256, so QMDs stay aligned),
    /// waiting for older launches to finish when the arena is full.
    fn arena_take(&mut self, bytes: u64) -> Result<u64, GpuError<B::Error>> {
        let ci = queue_index(Engine::Compute);
        // TIMEOUT: none of its own: each round either places the slot or waits (with the
        // configured timeout) for the oldest launch holding arena space, which frees it.
        loop {
            // What the waits already saw first; the GPU-written timeline (a cache miss) only
            // when that leaves no room.
            self.arena.ring.reclaim(self.queues[ci].seen);
            // CAST: arena offsets fit usize (the arena is mapped).
            if let Some(at) = self.arena.ring.place(bytes as usize) {
                return Ok(at as u64);
            }
            let done = self.queues[ci].timeline.value();
            self.queues[ci].seen = self.queues[ci].seen.max(done);
            self.arena.ring.reclaim(done);
            if let Some(at) = self.arena.ring.place(bytes as usize) {
                return Ok(at as u64);
            }
            match self.arena.ring.oldest_value() {
                // Only a submitted value will pass; the oldest slot can be this very
                // submission's (a batch larger than the arena).
                Some(value) if value <= self.queues[ci].submitted => self.wait(Fence {
                    engine: Engine::Compute,
                    value,
                })?,
                _ => {
                    return Err(GpuError::ArenaTooSmall {
                        bytes,
                        arena: self.arena.buf.size(),
                    });
                }
            }
        }
    }

    /// Builds the QMD and constant bank 0 of one launch and takes an arena slot
    /// for them (written by [`Self::write_launch`]). `release` makes the grid's
    /// completion write that timeline value; `value_for_arena` is the value after
    /// which the slot may be reused.
    fn prepare(
        &mut self,
        k: &Kernel<B::Memory>,
        cfg: &LaunchConfig,
        params: &[u8],
        release: Option<u64>,
        value_for_arena: u64,
    ) -> Result<Slot, GpuError<B::Error>> {
        let local = self.local.as_ref().map_or(0, |(_, n)| *n);
        let qmd_len = (self.qmd_version.size_bytes() as u64).next_multiple_of(256);
        // Bank 0's size is known before the QMD is built (fixed at load), so the
        // slot is taken first and the QMD can point at it.
        let cbuf0_len = k.cbuf0_len;
        let at = self.arena_take(qmd_len + cbuf0_len)?;
        let qmd_va = self.arena.buf.gpu_va() + at;
        let cbuf0_va = qmd_va + qmd_len;
        let mut t = k.template.borrow_mut();
        let reuse = t
            .as_ref()
            .is_some_and(|t| t.cfg == *cfg && t.local == local && t.tuning == self.tuning)
            && params.len() == k.info.param_size as usize;
        // The slot image: QMD space (written last, in `write_launch`), then bank 0.
        let mut bytes = self.slot_bytes.pop().unwrap_or_default();
        bytes.clear();
        bytes.resize((qmd_len + cbuf0_len) as usize, 0);
        let bank = &mut bytes[qmd_len as usize..];
        let mut qmd = if reuse {
            // Same shape: only bank 0's address and the parameters differ.
            // PANIC: `reuse` is true only when `t` is `Some`.
            let t = t.as_ref().expect("checked above");
            let mut qmd = t.qmd.clone();
            qmd.set_constant_buffer(ConstantBuffer {
                index: 0,
                va: cbuf0_va,
                size: t.cbuf0.len() as u32,
            })?;
            let n = t.cbuf0.len().min(bank.len());
            bank[..n].copy_from_slice(&t.cbuf0[..n]);
            let off = k.info.param_offset as usize;
            bank[off..off + params.len()].copy_from_slice(params);
            qmd
        } else {
            let ctx = ComputeContext {
                qmd_version: self.qmd_version,
                sm: self.sm(),
                shared_window: self.config.shared_window,
                local_window: self.config.local_window,
                local_memory_per_thread: local,
            };
            let mut p = launch::prepare(&ctx, &k.image, &k.info, cfg, params, cbuf0_va).map_err(
                |source| GpuError::Launch {
                    kernel: alloc::string::String::from(&*k.info.name),
                    source,
                },
            )?;
            self.tuning.apply(&mut p.qmd)?;
            let n = p.cbuf0.len().min(bank.len());
            bank[..n].copy_from_slice(&p.cbuf0[..n]);
            *t = Some(Template {
                cfg: *cfg,
                local,
                tuning: self.tuning,
                qmd: p.qmd.clone(),
                cbuf0: p.cbuf0,
            });
            p.qmd
        };
        drop(t);
        if let Some(value) = release {
            let timeline = self.queues[queue_index(Engine::Compute)].timeline.gpu_va();
            qmd.set_release(0, timeline, value)?;
            if self.tuning.release_membar {
                qmd.set_release_membar(0, true)?;
            }
        }
        self.arena
            .ring
            .commit(at as usize, (qmd_len + cbuf0_len) as usize, value_for_arena);
        Ok(Slot {
            at,
            qmd_va,
            qmd,
            bytes,
        })
    }

    /// Writes a prepared launch into its arena slot.
    fn write_launch(&mut self, s: &mut Slot) -> Result<(), GpuError<B::Error>> {
        for (chunk, w) in s.bytes.chunks_exact_mut(4).zip(s.qmd.words()) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        if !self.tuning.mirror {
            self.arena.mem.forget(s.at as usize, s.bytes.len());
        }
        self.arena.mem.write(s.at as usize, &s.bytes)?;
        Ok(())
    }

    /// Launches `k` over `grid` × `block` with `params` (the kernel's parameter
    /// bytes). Returns the fence that marks its completion.
    pub fn launch(
        &mut self,
        k: &Kernel<B::Memory>,
        grid: [u32; 3],
        block: [u32; 3],
        params: &[u8],
    ) -> Result<Fence, GpuError<B::Error>> {
        self.launch_with(k, &shape(grid, block), params)
    }

    /// Launches `k` as `cfg` says (grid, block and dynamic shared memory per block, as
    /// CUDA's `<<<grid, block, shared>>>`) with `params`. Returns the fence that marks its
    /// completion.
    pub fn launch_with(
        &mut self,
        k: &Kernel<B::Memory>,
        cfg: &LaunchConfig,
        params: &[u8],
    ) -> Result<Fence, GpuError<B::Error>> {
        // The pushbuffer is reused from launch to launch: no allocation per launch.
        let mut pb = core::mem::take(&mut self.launch_pb);
        pb.clear();
        let r = self.launch_after(&mut pb, k, cfg, params);
        self.launch_pb = pb;
        r
    }

    /// [`Self::launch`], with the front end first writing its GPU time when it
    /// reaches the launch (read back with [`Self::last_stamps`]): where a round
    /// trip's time goes.
    #[cfg(feature = "probe")]
    pub fn launch_stamped(
        &mut self,
        k: &Kernel<B::Memory>,
        grid: [u32; 3],
        block: [u32; 3],
        params: &[u8],
    ) -> Result<Fence, GpuError<B::Error>> {
        let mut pb = PushBuffer::with_capacity(12);
        let stamp = sem::HostRelease {
            wait_for_idle: false,
            timestamp: true,
        };
        let next = self.queues[queue_index(Engine::Compute)].submitted + 1;
        sem::host_release(&mut pb, self.fetch_stamp.gpu_va(), next, stamp)?;
        self.launch_after(&mut pb, k, &shape(grid, block), params)
    }

    /// Publishes the compute channel's GPFIFO again and rings its doorbell, with
    /// nothing new in it (what a submission's kick costs; the front end finds no
    /// new entries).
    #[cfg(feature = "probe")]
    pub fn rekick(&self) -> Result<(), GpuError<B::Error>> {
        let q = &self.queues[queue_index(Engine::Compute)];
        Ok(q.channel.fifo().kick(self.backend.usermode())?)
    }

    /// GPU times (ns) of the last stamped launch: when the front end reached it,
    /// and when its grid's completion was released.
    #[cfg(feature = "probe")]
    pub fn last_stamps(&self) -> (u64, u64) {
        (
            self.fetch_stamp.timestamp(),
            self.queues[queue_index(Engine::Compute)]
                .timeline
                .timestamp(),
        )
    }

    pub(super) fn launch_after(
        &mut self,
        pb: &mut PushBuffer,
        k: &Kernel<B::Memory>,
        cfg: &LaunchConfig,
        params: &[u8],
    ) -> Result<Fence, GpuError<B::Error>> {
        let value = self.queues[queue_index(Engine::Compute)].submitted + 1;
        match self.launch_value(pb, k, cfg, params, value) {
            Ok(()) => Ok(Fence {
                engine: Engine::Compute,
                value,
            }),
            Err(e) => {
                // Not submitted: its arena slot waits for no value.
                self.arena.ring.unwind(value);
                Err(e)
            }
        }
    }

    /// Prepares, writes and submits one launch that releases `value` (its slot is committed
    /// for `value`, which the caller unwinds if this fails).
    #[inline]
    fn launch_value(
        &mut self,
        pb: &mut PushBuffer,
        k: &Kernel<B::Memory>,
        cfg: &LaunchConfig,
        params: &[u8],
        value: u64,
    ) -> Result<(), GpuError<B::Error>> {
        let ci = queue_index(Engine::Compute);
        #[cfg(feature = "probe")]
        let t0 = self
            .profile
            .is_some()
            .then(|| self.backend.clock().now_ns());
        let mut s = self.prepare(k, cfg, params, Some(value), value)?;
        #[cfg(feature = "probe")]
        let t1 = t0.map(|_| self.backend.clock().now_ns());
        self.write_launch(&mut s)?;
        self.slot_bytes.push(core::mem::take(&mut s.bytes));
        compute::launch_qmd_for(
            self.objects.classes.compute,
            pb,
            s.qmd_va,
            PcasAction::PrefetchSchedule,
        )?;
        #[cfg(feature = "probe")]
        let t2 = t0.map(|_| self.backend.clock().now_ns());
        let timeout = self.config.timeout_ns;
        self.queues[ci].submit(
            self.backend.usermode(),
            self.backend.clock(),
            timeout,
            pb,
            value,
        )?;
        #[cfg(feature = "probe")]
        if let (Some(t0), Some(t1), Some(t2)) = (t0, t1, t2) {
            let t3 = self.backend.clock().now_ns();
            if let Some(p) = self.profile.as_mut() {
                p.prepare_ns += t1 - t0;
                p.write_ns += t2 - t1;
                p.submit_ns += t3 - t2;
                p.launches += 1;
            }
        }
        Ok(())
    }

    /// Launches `k` `count` times in one submission (one GPFIFO entry, one
    /// doorbell), the last grid releasing the timeline: what a recorded command
    /// list (a CUDA graph) costs per kernel.
    pub fn launch_many(
        &mut self,
        k: &Kernel<B::Memory>,
        grid: [u32; 3],
        block: [u32; 3],
        params: &[u8],
        count: u32,
    ) -> Result<Fence, GpuError<B::Error>> {
        let ci = queue_index(Engine::Compute);
        let value = self.queues[ci].submitted + 1;
        let mut pb = PushBuffer::with_capacity(4 * count as usize);
        let cfg = shape(grid, block);
        let mut submit = || {
            for i in 0..count {
                let release = (i + 1 == count).then_some(value);
                let mut s = self.prepare(k, &cfg, params, release, value)?;
                self.write_launch(&mut s)?;
                self.slot_bytes.push(core::mem::take(&mut s.bytes));
                compute::launch_qmd_for(
                    self.objects.classes.compute,
                    &mut pb,
                    s.qmd_va,
                    PcasAction::PrefetchSchedule,
                )?;
            }
            let timeout = self.config.timeout_ns;
            self.queues[ci].submit(
                self.backend.usermode(),
                self.backend.clock(),
                timeout,
                &pb,
                value,
            )?;
            Ok(())
        };
        match submit() {
            Ok(()) => Ok(Fence {
                engine: Engine::Compute,
                value,
            }),
            Err(e) => {
                // Not submitted: none of its arena slots waits for a value.
                self.arena.ring.unwind(value);
                Err(e)
            }
        }
    }
}
