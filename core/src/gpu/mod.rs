//! The GPU layer, the same over every backend: [`Gpu<B>`] builds the RM object tree through
//! its [`Backend`], wraps the channels in the submission code (one `Queue` per engine,
//! each with a timeline in host memory), and offers what a user calls: allocate, copy, load a
//! kernel, launch, wait, and record work once to replay it many times ([`Recording`],
//! [`Sequence`]). Waits report what faulted ([`FaultReport`](crate::rm::FaultReport)), not just that time ran out.
//!
//! Dispatch is static: `Gpu<Nvk>` and `Gpu<GspRm<P>>` are separate monomorphised types, so
//! the launch path makes no dynamic call and allocates nothing.

mod backend;
mod error;
mod finish;
mod launch;
mod pool;
mod queue;
mod record;
mod replay;
mod timing;
mod tuning;
mod wait;

use alloc::vec::Vec;

use crate::compute::{self, ComputeSetup, LocalMemory};
use crate::copy;
use crate::cubin::Cubin;
use crate::gpfifo::{Channel, GpFifo, USERD_SIZE, USERMODE_DOORBELL};
use crate::launch as prep;
use crate::mirror::MirroredMem;
use crate::push::{PushBuffer, Subchannel};
use crate::qmd::QmdVersion;
use crate::ring::Ring;
use crate::rm::tree::{at, channel_slot};
use crate::rm::{ChannelObjects, DeviceObjects, Engine, GrInfo, Step};
use crate::sem::Semaphore;
use crate::shared::SharedMem;

pub use crate::launch::LaunchConfig;
pub use backend::{Backend, Buffer, BufferView, CardInfo, MemoryRequest, Placement};
pub use error::GpuError;
pub use launch::Kernel;
#[cfg(feature = "probe")]
pub use launch::LaunchProfile;
pub use pool::{CHUNK as POOL_CHUNK, GRANULE as POOL_GRANULE, MAX_POOLED, PoolBuffer};
pub use queue::Fence;
pub use record::{Event, OpId, Recording, SequenceError};
pub use replay::{Replayed, Sequence};
pub use timing::{GpuTimes, STAMP_PAIRS, Timed};
pub use tuning::{LaunchTuning, RAW_FIELDS};
pub use wait::WaitEnd;

use launch::Arena;
use queue::Queue;

/// Sizes, windows and limits of a [`Gpu`]; the defaults are the ones measured on the H200.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuConfig {
    /// GPFIFO entries per channel.
    pub ring_entries: u32,
    /// Pushbuffer memory of the compute channel (bytes).
    pub compute_pushbuffer: u64,
    /// Pushbuffer memory of the copy channel (bytes).
    pub copy_pushbuffer: u64,
    /// The launch arena: QMD + constant bank 0 slots (bytes).
    pub arena: u64,
    /// How long any wait may last before it is reported as a stall (ns).
    pub timeout_ns: u64,
    /// How often a long compute wait asks whether the channel faulted (ns): the backend's
    /// events every slice, the debugger's error states every 20th.
    pub fault_poll_ns: u64,
    /// Where the shared-memory window sits in the GPU VA space (above any buffer).
    pub shared_window: u64,
    /// Where the local-memory window sits in the GPU VA space (above any buffer).
    pub local_window: u64,
    /// QMD choices for launches.
    pub tuning: LaunchTuning,
    /// The asynchronous copy engine (`COPYn`) tried first for the copy channel's own group;
    /// `None` tries the engines with the most physical copy units first
    /// ([`crate::rm::copy_engines::copy_engine_order`]).
    pub copy_engine: Option<u32>,
}

impl Default for GpuConfig {
    fn default() -> Self {
        Self {
            ring_entries: 0x4000,
            compute_pushbuffer: 8 << 20,
            copy_pushbuffer: 2 << 20,
            arena: 64 << 20,
            // TIMEOUT: 10 s: the longest kernel or copy nvbare's users run between waits is well
            // under a second (a 1 GiB copy takes 40 ms over PCIe); a wait longer than this is a
            // stalled channel, reported with its GPGet/GPPut.
            timeout_ns: 10_000_000_000,
            // TIMEOUT: a fault is reported within 50 ms; each poll costs a few RM calls, so
            // polling more often would slow long waits for nothing.
            fault_poll_ns: 50_000_000,
            shared_window: 0x7294_0000_0000,
            local_window: 0x7293_0000_0000,
            tuning: LaunchTuning::DEFAULT,
            copy_engine: None,
        }
    }
}

/// Offsets of the semaphores in the sync page (host memory).
const COMPUTE_TIMELINE: u64 = 0;
const COPY_TIMELINE: u64 = 0x40;
const COMPUTE_PROGRESS: u64 = 0x100;
const COPY_PROGRESS: u64 = 0x180;
#[cfg(feature = "probe")]
const FETCH_STAMP: u64 = 0x200;

/// What [`Gpu::build`] makes besides the buffers it holds.
struct Built<B: Backend> {
    objects: DeviceObjects,
    channels: ChannelObjects<B::Error>,
    info: CardInfo,
    queues: [Queue; 2],
    #[cfg(feature = "probe")]
    fetch_stamp: Semaphore,
    arena: Arena<B::Memory>,
    qmd_version: QmdVersion,
    stamps: SharedMem,
}

/// Numbers [`Gpu`]s, so a sequence finished on one is refused by another.
static NEXT_GPU: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

/// A GPU ready for work, reached through `B`.
pub struct Gpu<B: Backend> {
    /// This GPU's number (from `NEXT_GPU`).
    id: u64,
    backend: B,
    config: GpuConfig,
    objects: DeviceObjects,
    channels: ChannelObjects<B::Error>,
    info: CardInfo,
    /// Compute, then copy.
    queues: [Queue; 2],
    /// Memory that lives as long as the GPU: the channel area, the sync page, pushbuffers
    /// (given back with the backend, which frees what its RM client owns when it closes).
    _held: Vec<Buffer<B::Memory>>,
    /// Written with a GPU timestamp when the front end reaches a stamped launch.
    #[cfg(feature = "probe")]
    fetch_stamp: Semaphore,
    arena: Arena<B::Memory>,
    qmd_version: QmdVersion,
    /// The ring of start/end stamps of timed ops (in the sync page).
    stamps: timing::Stamps,
    local: Option<(Buffer<B::Memory>, u32)>,
    pool: pool::Pool<B::Memory>,
    /// QMD choices for launches.
    pub tuning: LaunchTuning,
    /// When set, launches add the CPU time of their steps here.
    #[cfg(feature = "probe")]
    pub profile: Option<LaunchProfile>,
    /// Reused buffers, so a launch allocates nothing: slot images and the launch pushbuffer.
    slot_bytes: Vec<Vec<u8>>,
    launch_pb: PushBuffer,
}

fn view<M, E: core::error::Error + 'static>(
    buf: &Buffer<M>,
    offset: u64,
    len: u64,
) -> Result<SharedMem, GpuError<E>> {
    let mem = buf.shared().ok_or(GpuError::NoCpuView(buf.gpu_va()))?;
    // CAST: offsets and lengths inside a mapped buffer fit usize.
    Ok(mem.slice(offset as usize, len as usize)?)
}

fn queue_index(e: Engine) -> usize {
    match e {
        Engine::Compute => 0,
        Engine::Copy => 1,
    }
}

impl<B: Backend> Gpu<B> {
    /// Builds the object tree and the channels over `backend`, and runs the one-time engine
    /// setup.
    pub fn open(backend: B, config: GpuConfig) -> Result<Self, GpuError<B::Error>> {
        Self::open_or_give_back(backend, config).map_err(|(e, _)| e)
    }

    /// [`Self::open`], giving the backend back with the error when it fails (for a backend
    /// that owns a device the caller wants back: the VFIO path's platform). The memory the
    /// failed open allocated is freed; RM objects it made stay for the backend to free.
    pub fn open_or_give_back(
        mut backend: B,
        config: GpuConfig,
    ) -> Result<Self, (GpuError<B::Error>, B)> {
        let mut held = Vec::new();
        let built = match Self::build(&mut backend, &config, &mut held) {
            Ok(b) => b,
            Err(e) => {
                for b in held {
                    backend.free_memory(b);
                }
                return Err((e, backend));
            }
        };
        let mut gpu = Self {
            id: NEXT_GPU.fetch_add(1, core::sync::atomic::Ordering::Relaxed),
            backend,
            config,
            objects: built.objects,
            channels: built.channels,
            info: built.info,
            queues: built.queues,
            _held: held,
            #[cfg(feature = "probe")]
            fetch_stamp: built.fetch_stamp,
            arena: built.arena,
            qmd_version: built.qmd_version,
            stamps: timing::Stamps {
                mem: built.stamps,
                last: 0,
            },
            local: None,
            pool: pool::Pool::default(),
            tuning: config.tuning,
            #[cfg(feature = "probe")]
            profile: None,
            slot_bytes: Vec::new(),
            launch_pb: PushBuffer::with_capacity(16),
        };
        if let Err(e) = gpu.setup_engines() {
            return Err((e, gpu.close()));
        }
        log::info!(
            "GPU ready: {} (sm_{}, {} SMs), RM {}",
            gpu.info.name,
            gpu.sm(),
            gpu.objects.gr.sm_count,
            gpu.info.rm
        );
        Ok(gpu)
    }

    /// The object tree, the channels and the memory they need, over `backend`. The buffers
    /// that live as long as the GPU are left in `held` (also when a later step fails, for the
    /// caller to free).
    fn build(
        backend: &mut B,
        config: &GpuConfig,
        held: &mut Vec<Buffer<B::Memory>>,
    ) -> Result<Built<B>, GpuError<B::Error>> {
        let objects = DeviceObjects::create(backend)?;
        let qmd_version = QmdVersion::for_compute_class(objects.classes.compute)
            .ok_or(GpuError::NoQmdLayout(objects.classes.compute))?;
        let info = backend.card_info(objects.subdevice);
        let alloc = |b: &mut B, held: &mut Vec<Buffer<B::Memory>>, req: MemoryRequest| {
            let buf = b.alloc_memory(&req).map_err(at(Step::AllocMemory))?;
            held.push(buf);
            Ok::<_, GpuError<B::Error>>(held.len() - 1)
        };

        let slot = channel_slot(config.ring_entries);
        let area = alloc(
            backend,
            held,
            MemoryRequest {
                contiguous: true,
                align: 2 << 20,
                ..MemoryRequest::new(slot * 2, Placement::Vram, true)
            },
        )?;
        let channels = ChannelObjects::create(
            backend,
            &objects,
            &held[area],
            config.ring_entries,
            config.copy_engine,
        )?;
        let sync_page = alloc(
            backend,
            held,
            MemoryRequest::new(0x1000, Placement::Host, true),
        )?;
        let compute_pb = alloc(
            backend,
            held,
            MemoryRequest::new(config.compute_pushbuffer, Placement::Vram, true),
        )?;
        let copy_pb = alloc(
            backend,
            held,
            MemoryRequest::new(config.copy_pushbuffer, Placement::Vram, true),
        )?;
        // The arena is the last buffer: it leaves `held` for the arena itself.
        let arena = alloc(
            backend,
            held,
            MemoryRequest::new(config.arena, Placement::Vram, true),
        )?;

        let (area, sync_page) = (&held[area], &held[sync_page]);
        let (compute_pb, copy_pb) = (&held[compute_pb], &held[copy_pb]);
        let doorbell = backend.usermode_base() + USERMODE_DOORBELL;
        let make_fifo = |engine: Engine| -> Result<GpFifo, GpuError<B::Error>> {
            let ch = channels.channel(engine);
            let ring_len = u64::from(ch.entries) * 8;
            let ring = view(area, ch.ring_offset, ring_len)?;
            let userd = view(area, ch.ring_offset + ring_len, USERD_SIZE as u64)?;
            Ok(GpFifo::new(
                engine.label(),
                ring,
                userd,
                ch.entries,
                ch.token,
                doorbell,
            )?)
        };
        let sem_at = |off| -> Result<Semaphore, GpuError<B::Error>> {
            Ok(Semaphore::new(view(sync_page, off, 16)?)?)
        };
        let compute = Channel::new(
            make_fifo(Engine::Compute)?,
            view(compute_pb, 0, compute_pb.size())?,
            sem_at(COMPUTE_PROGRESS)?,
        );
        let copy = Channel::new(
            make_fifo(Engine::Copy)?,
            view(copy_pb, 0, copy_pb.size())?,
            sem_at(COPY_PROGRESS)?,
        );
        let mut copy_queue = Queue::new(Engine::Copy, copy, sem_at(COPY_TIMELINE)?);
        copy_queue.copy_class = objects.classes.copy;
        let queues = [
            Queue::new(Engine::Compute, compute, sem_at(COMPUTE_TIMELINE)?),
            copy_queue,
        ];
        #[cfg(feature = "probe")]
        let fetch_stamp = sem_at(FETCH_STAMP)?;
        let stamps = view(sync_page, timing::STAMPS_OFFSET, timing::STAMPS_BYTES)?;
        let arena_mem = MirroredMem::new(view(&held[arena], 0, held[arena].size())?)?;
        // PANIC: `arena` is the last index pushed and nothing was removed since.
        let Some(arena) = held.pop() else {
            unreachable!("the arena buffer is in `held`")
        };
        Ok(Built {
            objects,
            channels,
            info,
            queues,
            #[cfg(feature = "probe")]
            fetch_stamp,
            arena: Arena {
                ring: Ring::new(arena.size() as usize),
                mem: arena_mem,
                buf: arena,
            },
            qmd_version,
            stamps,
        })
    }

    /// Frees the GPU layer's own memory (the channel area, sync page, pushbuffers, launch
    /// arena, local memory, pool chunks) and gives the backend back, for a teardown of its
    /// own (the VFIO path's `GspRm::close`). Wait for submitted work first ([`Self::sync`]):
    /// the GPU must no longer use the memory. Kernels not unloaded keep their code memory,
    /// and the RM objects stay, for the backend to free.
    pub fn close(self) -> B {
        let Self {
            mut backend,
            _held: held,
            arena,
            local,
            pool,
            queues,
            stamps,
            #[cfg(feature = "probe")]
            fetch_stamp,
            ..
        } = self;
        // The views into the memory (rings, USERD, semaphores, pushbuffers, the arena's
        // mapping) go before the memory does: the backend may unmap it.
        drop((queues, stamps));
        #[cfg(feature = "probe")]
        drop(fetch_stamp);
        let Arena {
            buf: arena,
            mem,
            ring,
        } = arena;
        drop((mem, ring));
        for b in held {
            backend.free_memory(b);
        }
        backend.free_memory(arena);
        if let Some((b, _)) = local {
            backend.free_memory(b);
        }
        for b in pool.into_buffers() {
            backend.free_memory(b);
        }
        backend
    }

    fn setup_engines(&mut self) -> Result<(), GpuError<B::Error>> {
        let mut pb = PushBuffer::new();
        compute::setup(
            &mut pb,
            &ComputeSetup {
                compute_class: self.objects.classes.compute,
                shared_window: self.config.shared_window,
                local_window: self.config.local_window,
            },
        )?;
        self.submit(Engine::Compute, pb)?;
        let mut pb = PushBuffer::new();
        pb.set_object(Subchannel::COPY, self.objects.classes.copy)?;
        self.submit(Engine::Copy, pb)?;
        self.sync()
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The backend, mutably (for backend-specific calls beside the GPU layer).
    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    /// The configuration the GPU was opened with.
    pub fn config(&self) -> &GpuConfig {
        &self.config
    }

    /// The device-level RM objects, classes and GR facts.
    pub fn objects(&self) -> &DeviceObjects {
        &self.objects
    }

    /// The channels' RM objects, and which copy engine the copy channel got.
    pub fn channels(&self) -> &ChannelObjects<B::Error> {
        &self.channels
    }

    /// Name, RM version, VRAM, PCI address.
    pub fn info(&self) -> &CardInfo {
        &self.info
    }

    /// Graphics-engine facts.
    pub fn gr(&self) -> &GrInfo {
        &self.objects.gr
    }

    /// The SM version as nvcc numbers it (90 on Hopper).
    pub fn sm(&self) -> u32 {
        self.objects.gr.sm()
    }

    /// Submits `pb` on `engine`'s channel followed by its timeline release; returns the fence
    /// that marks its completion.
    pub fn submit(
        &mut self,
        engine: Engine,
        mut pb: PushBuffer,
    ) -> Result<Fence, GpuError<B::Error>> {
        let i = queue_index(engine);
        let value = self.queues[i].submitted + 1;
        self.queues[i].append_release(&mut pb, value)?;
        let timeout = self.config.timeout_ns;
        self.queues[i].submit(
            self.backend.usermode(),
            self.backend.clock(),
            timeout,
            &pb,
            value,
        )?;
        Ok(Fence { engine, value })
    }

    /// The fence of the last submission on `engine`.
    pub fn submitted(&self, engine: Engine) -> Fence {
        Fence {
            engine,
            value: self.queues[queue_index(engine)].submitted,
        }
    }

    /// `engine`'s timeline value now (one read of host memory).
    pub fn completed(&self, engine: Engine) -> u64 {
        self.queues[queue_index(engine)].timeline.value()
    }

    /// Whether the work up to `fence` has finished.
    pub fn is_done(&mut self, fence: Fence) -> bool {
        self.queues[queue_index(fence.engine)].reached(fence.value)
    }

    /// Copies `len` bytes between GPU virtual addresses on the copy engine.
    pub fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<Fence, GpuError<B::Error>> {
        let mut pb = PushBuffer::new();
        copy::copy_linear(&mut pb, dst, src, len)?;
        self.submit(Engine::Copy, pb)
    }

    /// Allocates GPU-visible memory (with a CPU view when `cpu_access`; host memory always
    /// has one).
    pub fn alloc(
        &mut self,
        size: u64,
        placement: Placement,
        cpu_access: bool,
    ) -> Result<Buffer<B::Memory>, GpuError<B::Error>> {
        self.backend
            .alloc_memory(&MemoryRequest::new(size, placement, cpu_access))
            .map_err(at(Step::AllocMemory))
    }

    /// Frees a buffer (the caller guarantees the GPU no longer uses it).
    pub fn free(&mut self, buf: Buffer<B::Memory>) {
        self.backend.free_memory(buf)
    }

    /// Loads kernel `name` of the cubin `elf`: lays out and relocates its module image in
    /// video memory and records what its launches need. The kernel owns its record and its
    /// code; `elf` is not kept. Give it back with [`Self::unload`] (a kernel merely dropped
    /// keeps its code memory until the backend closes).
    pub fn load(
        &mut self,
        elf: &[u8],
        name: &str,
    ) -> Result<Kernel<B::Memory>, GpuError<B::Error>> {
        let cubin = Cubin::parse(elf)?;
        let sm = self.sm();
        if cubin.sm / 10 != sm / 10 {
            return Err(GpuError::WrongSm {
                cubin: cubin.sm,
                gpu: sm,
            });
        }
        let info = cubin.kernel(name)?.clone().into_owned();
        // CAST: a module image is far below 2^64 bytes.
        let size = cubin.load_image(0)?.bytes.len() as u64;
        // Saturating: a size near 2^64 fails the allocation instead of wrapping.
        let code = self.alloc(size.saturating_add(0x100), Placement::Vram, true)?;
        let image = cubin.load_image(code.gpu_va())?;
        let written = view(&code, 0, size).and_then(|m| Ok(m.write_bytes(0, &image.bytes)?));
        if let Err(e) = written {
            self.free(code);
            return Err(e);
        }
        let slots = prep::Cbuf0Slots::for_sm(sm).ok_or(GpuError::NoCbufLayout(sm));
        let ready = slots.and_then(|slots| {
            self.ensure_local_memory(prep::local_memory_needed(&info))?;
            // Code was written by the CPU: invalidate the SM instruction caches.
            let mut pb = PushBuffer::new();
            compute::invalidate_caches(&mut pb)?;
            let f = self.submit(Engine::Compute, pb)?;
            self.wait(f)?;
            Ok(slots)
        });
        match ready {
            Ok(slots) => Ok(Kernel::new(info, image, code, &slots)),
            Err(e) => {
                self.free(code);
                Err(e)
            }
        }
    }

    /// Frees `k`'s code memory once every launch submitted so far has finished.
    pub fn unload(&mut self, k: Kernel<B::Memory>) -> Result<(), GpuError<B::Error>> {
        self.wait(self.submitted(Engine::Compute))?;
        self.free(k.into_code());
        Ok(())
    }

    fn ensure_local_memory(&mut self, per_thread: u32) -> Result<(), GpuError<B::Error>> {
        // Always keep a small stack: nvcc's kernels read their initial stack pointer from
        // cbuf0 even with no frame.
        let want = per_thread.max(prep::STACK_RESERVE).next_multiple_of(32);
        if self.local.as_ref().is_some_and(|(_, have)| *have >= want) {
            return Ok(());
        }
        let g = self.objects.gr;
        let tpcs = u64::from(g.gpcs * g.tpcs_per_gpc);
        let (per_tpc, total) = compute::local_memory_size(
            u64::from(want),
            u64::from(g.max_warps_per_sm),
            u64::from(g.sms_per_tpc),
            tpcs,
        );
        self.sync()?;
        let buf = self.alloc(total, Placement::Vram, false)?;
        let mut pb = PushBuffer::new();
        let submitted = compute::set_local_memory(
            &mut pb,
            &LocalMemory {
                va: buf.gpu_va(),
                bytes_per_tpc: per_tpc,
                total_bytes: total,
            },
        )
        .map_err(GpuError::from)
        .and_then(|()| self.submit(Engine::Compute, pb));
        let f = match submitted {
            Ok(f) => f,
            Err(e) => {
                // Never submitted: the GPU does not know the buffer.
                self.free(buf);
                return Err(e);
            }
        };
        // A failed wait keeps the buffer (the GPU may already use it as local memory, and
        // the old one too): it stays allocated until the backend closes.
        self.wait(f)?;
        if let Some((old, _)) = self.local.replace((buf, want)) {
            self.free(old);
        }
        Ok(())
    }

    /// Takes `size` bytes of video memory from the sub-allocator (no backend call once a
    /// chunk exists).
    pub fn pool_alloc(&mut self, size: u64) -> Result<PoolBuffer, GpuError<B::Error>> {
        self.pool.alloc(&mut self.backend, size)
    }

    /// Returns a sub-allocation (the caller guarantees the GPU no longer uses it).
    pub fn pool_free(&mut self, b: PoolBuffer) {
        self.pool.free(b)
    }

    /// The GPU's timer (ns; the clock of semaphore timestamps), read through the usermode
    /// region (`NVC361_TIME_1` / `TIME_0`).
    pub fn gpu_time_ns(&self) -> u64 {
        crate::gpfifo::gpu_time_ns(self.backend.usermode(), self.backend.usermode_base())
    }
}
