//! A GPU ready for work on the kernel-driver path: the [`Device`]'s channels
//! wrapped in `nvbare-core`'s submission code, timeline semaphores in host
//! memory, an arena for per-launch QMDs and constant buffers, and the
//! operations a user calls: allocate, copy, load a kernel, launch, wait.

use std::cell::RefCell;
use std::time::Instant;

use nvbare_core::compute::{self, ComputeSetup, LocalMemory, PcasAction};
use nvbare_core::copy;
use nvbare_core::cubin::{Cubin, Kernel as CubinKernel, ModuleImage};
use nvbare_core::gpfifo::{Channel, GpFifo, USERMODE_DOORBELL};
use nvbare_core::hal::Clock;
use nvbare_core::launch::{self, ComputeContext, LaunchConfig};
use nvbare_core::mirror::MirroredMem;
use nvbare_core::push::PushBuffer;
use nvbare_core::qmd::{ConstantBuffer, QmdVersion};
use nvbare_core::ring::Ring;
use nvbare_core::sem::{self, Semaphore};
use nvbare_core::shared::SharedMem;

use super::NvkError;
use super::device::{Device, Doorbell, LOCAL_MEM_WINDOW, SHARED_MEM_WINDOW};
use super::mem::{Buffer, Placement};
use super::pool::{Pool, PoolBuffer};

/// `std::time` as the core's clock.
#[derive(Clone, Copy, Debug)]
pub struct StdClock(Instant);

impl StdClock {
    pub fn new() -> Self {
        Self(Instant::now())
    }
}

impl Default for StdClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for StdClock {
    fn now_ns(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
    fn delay_ns(&self, ns: u64) {
        let end = self.now_ns() + ns;
        while self.now_ns() < end {
            std::hint::spin_loop();
        }
    }
}

/// How long any wait may last before it is reported as a stall.
pub const TIMEOUT_NS: u64 = 10_000_000_000;
/// How often a long compute wait asks the debugger whether the channel faulted.
const FAULT_POLL_NS: u64 = 50_000_000;
const RING_ENTRIES: u32 = 0x4000;
const COMPUTE_PB: u64 = 8 << 20;
const COPY_PB: u64 = 2 << 20;
const ARENA: u64 = 64 << 20;

fn shared(buf: &Buffer, offset: u64, len: u64) -> Result<SharedMem, NvkError> {
    let p = buf.cpu_ptr()?;
    if offset.checked_add(len).is_none_or(|end| end > buf.size) {
        return Err(sub(format!(
            "{len:#x} bytes at {offset:#x} do not fit the {:#x}-byte buffer at {:#x}",
            buf.size, buf.gpu_va
        )));
    }
    // SAFETY: `buf` stays mapped for as long as the Gpu that owns it; the range is
    // inside the mapping (checked above).
    Ok(unsafe { SharedMem::from_raw(p.add(offset as usize), len as usize, buf.gpu_va + offset) })
}

fn sub(e: impl std::fmt::Display) -> NvkError {
    NvkError::Submit(e.to_string())
}

/// A kernel ready to launch: its module image in video memory plus the
/// cubin's description of it.
#[derive(Debug)]
pub struct Kernel {
    /// The cubin's record (borrows the cubin bytes, which a loaded module keeps
    /// for the life of the process).
    pub info: CubinKernel<'static>,
    image: ModuleImage,
    /// Keeps the code mapped while the kernel exists.
    _code: Buffer,
    /// The last launch's QMD and bank 0, reused when the next launch has the
    /// same shape (building a QMD from scratch costs about a microsecond).
    template: RefCell<Option<Template>>,
}

/// A launch shape and the QMD / bank 0 it produced.
#[derive(Debug, Clone)]
struct Template {
    grid: [u32; 3],
    block: [u32; 3],
    local: u32,
    /// The tuning that shaped the QMD (`membar`, `invalidate`).
    qmd_fields: (u64, bool),
    qmd: nvbare_core::qmd::Qmd,
    cbuf0: Vec<u8>,
}

/// Per-launch QMD choices that trade safety margins for latency; the defaults
/// are the conservative ones. `NVBARE_TUNE=membar=N,inval=0|1,pcas=N,chain=0|1`
/// overrides them (for measuring; see BENCHMARKS.md).
#[derive(Clone, Copy, Debug)]
pub struct LaunchTuning {
    /// `CWD_MEMBAR_TYPE`: 0 none, 1 L1 + sysmembar (default), 3 L1 + GPU membar.
    pub membar: u64,
    /// Invalidate the SM's texture/data caches at every grid start (default).
    pub invalidate: bool,
    /// PCAS action that starts a QMD.
    pub pcas: PcasAction,
    /// In `launch_many`, chain each QMD to the next instead of one PCAS each.
    pub chain: bool,
    /// Store only the arena lines that differ from what was last written there
    /// (default); off stores every byte of every launch.
    pub mirror: bool,
    /// The completion release also waits for a front-end sysmembar; off by
    /// default, since the per-CTA `CWD_MEMBAR_TYPE` already makes the grid's
    /// writes visible (see `Qmd::set_release`).
    pub release_membar: bool,
}

impl Default for LaunchTuning {
    fn default() -> Self {
        Self {
            membar: 1,
            invalidate: true,
            pcas: PcasAction::PrefetchSchedule,
            chain: false,
            mirror: true,
            release_membar: false,
        }
    }
}

impl LaunchTuning {
    /// The defaults with `NVBARE_TUNE`'s overrides applied.
    pub fn from_env() -> Self {
        let mut t = Self::default();
        let Ok(spec) = std::env::var("NVBARE_TUNE") else {
            return t;
        };
        for kv in spec.split(',') {
            let (k, v) = kv.split_once('=').unwrap_or((kv, "1"));
            let n: u64 = v.parse().unwrap_or(1);
            match k {
                "membar" => t.membar = n,
                "inval" => t.invalidate = n != 0,
                "pcas" => {
                    t.pcas = match n {
                        3 => PcasAction::InvalidateCopySchedule,
                        10 => PcasAction::InvalidatePrefetchCopySchedule,
                        _ => PcasAction::PrefetchSchedule,
                    }
                }
                "chain" => t.chain = n != 0,
                "mirror" => t.mirror = n != 0,
                "relmembar" => t.release_membar = n != 0,
                _ => {}
            }
        }
        t
    }
}

/// CPU time of launches by step, summed (see [`Gpu::profile`]).
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
struct Arena {
    buf: Buffer,
    /// The arena's CPU mapping with a shadow of what was written to it.
    mem: MirroredMem,
    /// Slots, each freed when the compute timeline passes its launch's value.
    ring: Ring,
}

/// One launch's QMD and constant bank 0, and the arena slot they go to.
struct Slot {
    at: u64,
    qmd_va: u64,
    qmd: nvbare_core::qmd::Qmd,
    /// The slot's bytes: the QMD's space (filled in by [`Gpu::write_launch`]),
    /// then constant bank 0.
    bytes: Vec<u8>,
}

/// The GPU.
pub struct Gpu {
    pub dev: Device,
    doorbell: Doorbell,
    clock: StdClock,
    compute: Channel,
    copy: Channel,
    /// Host-memory page with the timelines and progress semaphores.
    _sync_page: Buffer,
    compute_timeline: Semaphore,
    copy_timeline: Semaphore,
    /// Written with a GPU timestamp when the front end reaches a stamped launch.
    fetch_stamp: Semaphore,
    pub compute_value: u64,
    pub copy_value: u64,
    arena: Arena,
    qmd_version: QmdVersion,
    local: Option<(Buffer, u32)>,
    pool: Pool,
    /// QMD choices for launches.
    pub tuning: LaunchTuning,
    /// When set, launches add the CPU time of their steps here.
    pub profile: Option<LaunchProfile>,
    _pbs: Vec<Buffer>,
}

impl Gpu {
    /// Opens GPU `index`, creates its channels and runs the one-time setup.
    pub fn open(index: usize) -> Result<Self, NvkError> {
        let mut dev = Device::open(index)?;
        dev.create_channels(RING_ENTRIES)?;
        let qmd_version = QmdVersion::for_compute_class(dev.classes.compute).ok_or_else(|| {
            sub(format!(
                "no QMD layout for compute class {:#x}",
                dev.classes.compute
            ))
        })?;

        let sync_page = dev.alloc(0x1000, Placement::Host, true)?;
        let compute_pb = dev.alloc(COMPUTE_PB, Placement::Vram, true)?;
        let copy_pb = dev.alloc(COPY_PB, Placement::Vram, true)?;
        let arena = dev.alloc(ARENA, Placement::Vram, true)?;

        let area = dev.channel_area.as_ref().expect("channels created");
        let make_fifo = |label, ch: &super::device::RmChannel| -> Result<GpFifo, NvkError> {
            let ring_len = u64::from(ch.entries) * 8;
            let ring = shared(area, ch.ring_offset, ring_len)?;
            let userd = shared(area, ch.ring_offset + ring_len, 0x200)?;
            GpFifo::new(label, ring, userd, ch.entries, ch.token, USERMODE_DOORBELL).map_err(sub)
        };
        let cfifo = make_fifo("compute", dev.compute.as_ref().expect("compute channel"))?;
        let xfifo = make_fifo("copy", dev.copy.as_ref().expect("copy channel"))?;
        let sem_at = |off| -> Result<Semaphore, NvkError> {
            Semaphore::new(shared(&sync_page, off, 16)?).map_err(sub)
        };
        let compute = Channel::new(cfifo, shared(&compute_pb, 0, COMPUTE_PB)?, sem_at(0x100)?);
        let copy = Channel::new(xfifo, shared(&copy_pb, 0, COPY_PB)?, sem_at(0x180)?);
        let compute_timeline = sem_at(0)?;
        let copy_timeline = sem_at(0x40)?;
        let fetch_stamp = sem_at(0x200)?;
        compute_timeline.signal_from_cpu(0);
        copy_timeline.signal_from_cpu(0);

        let doorbell = dev.doorbell();
        let mut gpu = Self {
            dev,
            doorbell,
            clock: StdClock::new(),
            compute,
            copy,
            _sync_page: sync_page,
            compute_timeline,
            copy_timeline,
            fetch_stamp,
            compute_value: 0,
            copy_value: 0,
            arena: Arena {
                ring: Ring::new(arena.size as usize),
                mem: MirroredMem::new(shared(&arena, 0, arena.size)?).map_err(sub)?,
                buf: arena,
            },
            qmd_version,
            local: None,
            pool: Pool::default(),
            tuning: LaunchTuning::from_env(),
            profile: None,
            _pbs: vec![compute_pb, copy_pb],
        };
        gpu.setup_engines()?;
        Ok(gpu)
    }

    fn setup_engines(&mut self) -> Result<(), NvkError> {
        let mut pb = PushBuffer::new();
        compute::setup(
            &mut pb,
            &ComputeSetup {
                compute_class: self.dev.classes.compute,
                shared_window: SHARED_MEM_WINDOW,
                local_window: LOCAL_MEM_WINDOW,
            },
        )
        .map_err(sub)?;
        self.submit_compute(pb)?;
        let mut pb = PushBuffer::new();
        pb.set_object(nvbare_core::push::Subchannel::COPY, self.dev.classes.copy)
            .map_err(sub)?;
        self.submit_copy(pb)?;
        self.sync()
    }

    /// Submits `pb` on the compute channel followed by a timeline release;
    /// returns the timeline value that marks its completion.
    pub fn submit_compute(&mut self, mut pb: PushBuffer) -> Result<u64, NvkError> {
        self.compute_value += 1;
        sem::host_release(
            &mut pb,
            self.compute_timeline.gpu_va(),
            self.compute_value,
            sem::HostRelease::AFTER_IDLE,
        )
        .map_err(sub)?;
        self.compute
            .submit(&self.doorbell, &self.clock, TIMEOUT_NS, &pb)
            .map_err(sub)?;
        Ok(self.compute_value)
    }

    /// Submits `pb` on the copy channel followed by a copy-engine release.
    pub fn submit_copy(&mut self, mut pb: PushBuffer) -> Result<u64, NvkError> {
        self.copy_value += 1;
        copy::release_semaphore(&mut pb, self.copy_timeline.gpu_va(), self.copy_value, true)
            .map_err(sub)?;
        self.copy
            .submit(&self.doorbell, &self.clock, TIMEOUT_NS, &pb)
            .map_err(sub)?;
        Ok(self.copy_value)
    }

    /// Waits for the compute timeline to reach `value`.
    pub fn wait_compute(&self, value: u64) -> Result<(), NvkError> {
        self.wait_compute_for(value, TIMEOUT_NS)
    }

    /// Waits up to `timeout_ns` for the compute timeline to reach `value`; a
    /// timeout reports what faulted, if anything did.
    pub fn wait_compute_for(&self, value: u64, timeout_ns: u64) -> Result<(), NvkError> {
        // Spin in slices; between slices ask the debugger whether the channel has
        // faulted, so a fault is reported within a slice instead of at the timeout.
        let start = self.clock.now_ns();
        loop {
            let spent = self.clock.now_ns().saturating_sub(start);
            let slice = FAULT_POLL_NS.min(timeout_ns.saturating_sub(spent));
            match self
                .compute_timeline
                .wait(value, &self.clock, slice, self.compute.fifo())
            {
                Ok(()) => return Ok(()),
                Err(e) if spent + slice >= timeout_ns => return Err(self.stalled(e)),
                Err(e) => {
                    if let Some(report) = super::fault::report(&self.dev) {
                        return Err(NvkError::Submit(format!("{report} (then: {e})")));
                    }
                }
            }
        }
    }

    /// Waits for the copy timeline to reach `value`.
    pub fn wait_copy(&self, value: u64) -> Result<(), NvkError> {
        self.copy_timeline
            .wait(value, &self.clock, TIMEOUT_NS, self.copy.fifo())
            .map_err(|e| self.stalled(e))
    }

    fn stalled(&self, e: impl std::fmt::Display) -> NvkError {
        match super::fault::report(&self.dev) {
            Some(report) => NvkError::Submit(format!("{report} (then: {e})")),
            None => sub(e),
        }
    }

    /// Waits for all submitted work.
    pub fn sync(&self) -> Result<(), NvkError> {
        self.wait_compute(self.compute_value)?;
        self.wait_copy(self.copy_value)
    }

    /// The compute timeline's current value (one read of host memory).
    pub fn compute_done(&self) -> u64 {
        self.compute_timeline.value()
    }

    /// Copies `len` bytes between GPU virtual addresses on the copy engine.
    pub fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<u64, NvkError> {
        let mut pb = PushBuffer::new();
        copy::copy_linear(&mut pb, dst, src, len).map_err(sub)?;
        self.submit_copy(pb)
    }

    /// Allocates GPU-visible memory.
    pub fn alloc(
        &mut self,
        size: u64,
        placement: Placement,
        cpu_access: bool,
    ) -> Result<Buffer, NvkError> {
        self.dev.alloc(size, placement, cpu_access)
    }

    /// Frees a buffer (the caller guarantees the GPU no longer uses it).
    pub fn free(&mut self, buf: Buffer) {
        self.dev.free(buf)
    }

    /// Loads kernel `name` of the cubin `elf`: lays out and relocates its module
    /// image in video memory and records what its launches need. The cubin bytes
    /// are kept for the life of the process (modules are not unloaded).
    pub fn load(&mut self, elf: &[u8], name: &str) -> Result<Kernel, NvkError> {
        let elf: &'static [u8] = Box::leak(elf.to_vec().into_boxed_slice());
        let cubin = Cubin::parse(elf).map_err(|e| sub(format!("cubin: {e}")))?;
        let sm = self.sm();
        if cubin.sm / 10 != sm / 10 {
            return Err(sub(format!(
                "cubin is for sm_{} but this GPU is sm_{sm}; recompile with -arch=sm_{sm}",
                cubin.sm
            )));
        }
        let info = cubin
            .kernel(name)
            .map_err(|e| sub(format!("cubin: {e}")))?
            .clone();
        let size = cubin
            .load_image(0)
            .map_err(|e| sub(format!("cubin: {e}")))?
            .bytes
            .len() as u64;
        let code = self.alloc(size + 0x100, Placement::Vram, true)?;
        let image = cubin
            .load_image(code.gpu_va)
            .map_err(|e| sub(format!("cubin: {e}")))?;
        shared(&code, 0, size)?
            .write_bytes(0, &image.bytes)
            .map_err(sub)?;
        self.ensure_local_memory(launch::local_memory_needed(&info))?;
        // Code was written by the CPU: invalidate the SM instruction caches.
        let mut pb = PushBuffer::new();
        compute::invalidate_caches(&mut pb).map_err(sub)?;
        let v = self.submit_compute(pb)?;
        self.wait_compute(v)?;
        Ok(Kernel {
            info,
            image,
            _code: code,
            template: RefCell::new(None),
        })
    }

    /// The SM version as nvcc numbers it (90 on Hopper).
    pub fn sm(&self) -> u32 {
        let v = self.dev.gr.sm_version;
        (v >> 8) * 10 + (v & 0xf)
    }

    fn ensure_local_memory(&mut self, per_thread: u32) -> Result<(), NvkError> {
        // Always keep a small stack: nvcc's kernels read their initial stack pointer
        // from cbuf0 even with no frame.
        let want = per_thread.max(launch::STACK_RESERVE).next_multiple_of(32);
        if self.local.as_ref().is_some_and(|(_, have)| *have >= want) {
            return Ok(());
        }
        let g = self.dev.gr;
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
        compute::set_local_memory(
            &mut pb,
            &LocalMemory {
                va: buf.gpu_va,
                bytes_per_tpc: per_tpc,
                total_bytes: total,
            },
        )
        .map_err(sub)?;
        let v = self.submit_compute(pb)?;
        self.wait_compute(v)?;
        if let Some((old, _)) = self.local.replace((buf, want)) {
            self.free(old);
        }
        Ok(())
    }

    /// An arena offset for `bytes` (a multiple of 256, so QMDs stay aligned),
    /// waiting for older launches to finish when the arena is full.
    fn arena_take(&mut self, bytes: u64) -> Result<u64, NvkError> {
        loop {
            self.arena.ring.reclaim(self.compute_timeline.value());
            if let Some(at) = self.arena.ring.place(bytes as usize) {
                return Ok(at as u64);
            }
            match self.arena.ring.oldest_value() {
                Some(v) => self.wait_compute(v)?,
                None => {
                    return Err(sub(format!(
                        "a launch needs {bytes:#x} bytes of QMD and constant bank 0; the arena has {:#x}",
                        self.arena.buf.size
                    )));
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
        k: &Kernel,
        grid: [u32; 3],
        block: [u32; 3],
        params: &[u8],
        release: Option<u64>,
        value_for_arena: u64,
    ) -> Result<Slot, NvkError> {
        let local = self.local.as_ref().map_or(0, |(_, n)| *n);
        let qmd_len = (self.qmd_version.size_bytes() as u64).next_multiple_of(256);
        // Bank 0's size is known before the QMD is built (driver slots up to 0x380
        // on every sm, then the parameters); take the slot first so the QMD can
        // point at it.
        let cbuf0_len = u64::from(
            k.info
                .cbuf0_size
                .max(0x380)
                .max(k.info.param_offset + k.info.param_size),
        )
        .next_multiple_of(256);
        let at = self.arena_take(qmd_len + cbuf0_len)?;
        let qmd_va = self.arena.buf.gpu_va + at;
        let cbuf0_va = qmd_va + qmd_len;
        let qmd_fields = (self.tuning.membar, self.tuning.invalidate);
        let mut t = k.template.borrow_mut();
        let reuse = t.as_ref().is_some_and(|t| {
            t.grid == grid && t.block == block && t.local == local && t.qmd_fields == qmd_fields
        }) && params.len() == k.info.param_size as usize;
        // The slot image: QMD space (written last, in `write_launch`), then bank 0.
        let mut bytes = vec![0u8; (qmd_len + cbuf0_len) as usize];
        let bank = &mut bytes[qmd_len as usize..];
        let mut qmd = if reuse {
            // Same shape: only bank 0's address and the parameters differ.
            let t = t.as_ref().expect("checked above");
            let mut qmd = t.qmd.clone();
            qmd.set_constant_buffer(ConstantBuffer {
                index: 0,
                va: cbuf0_va,
                size: t.cbuf0.len() as u32,
            })
            .map_err(sub)?;
            let n = t.cbuf0.len().min(bank.len());
            bank[..n].copy_from_slice(&t.cbuf0[..n]);
            let off = k.info.param_offset as usize;
            bank[off..off + params.len()].copy_from_slice(params);
            qmd
        } else {
            let cfg = LaunchConfig {
                grid,
                block,
                dynamic_shared: 0,
            };
            let ctx = ComputeContext {
                qmd_version: self.qmd_version,
                sm: self.sm(),
                shared_window: SHARED_MEM_WINDOW,
                local_window: LOCAL_MEM_WINDOW,
                local_memory_per_thread: local,
            };
            let mut p = launch::prepare(&ctx, &k.image, &k.info, &cfg, params, cbuf0_va)
                .map_err(|e| sub(format!("launch of {}: {e}", k.info.name)))?;
            let l = self.qmd_version.layout();
            p.qmd
                .set(l.cwd_membar_type, self.tuning.membar)
                .map_err(sub)?;
            if !self.tuning.invalidate {
                for f in l.invalidate_caches {
                    p.qmd.set(f, 0).map_err(sub)?;
                }
            }
            let n = p.cbuf0.len().min(bank.len());
            bank[..n].copy_from_slice(&p.cbuf0[..n]);
            *t = Some(Template {
                grid,
                block,
                local,
                qmd_fields,
                qmd: p.qmd.clone(),
                cbuf0: p.cbuf0,
            });
            p.qmd
        };
        drop(t);
        if let Some(value) = release {
            qmd.set_release(0, self.compute_timeline.gpu_va(), value)
                .map_err(sub)?;
            if self.tuning.release_membar {
                qmd.set_release_membar(0, true).map_err(sub)?;
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
    fn write_launch(&mut self, s: &mut Slot) -> Result<(), NvkError> {
        for (chunk, w) in s.bytes.chunks_exact_mut(4).zip(s.qmd.words()) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        if !self.tuning.mirror {
            self.arena.mem.forget(s.at as usize, s.bytes.len());
        }
        self.arena
            .mem
            .write(s.at as usize, &s.bytes)
            .map(|_| ())
            .map_err(sub)
    }

    /// Launches `k` over `grid` × `block` with `params` (the kernel's parameter
    /// bytes). Returns the timeline value that marks its completion.
    pub fn launch(
        &mut self,
        k: &Kernel,
        grid: [u32; 3],
        block: [u32; 3],
        params: &[u8],
    ) -> Result<u64, NvkError> {
        self.launch_after(PushBuffer::with_capacity(4), k, grid, block, params)
    }

    /// [`Self::launch`], with the front end first writing its GPU time when it
    /// reaches the launch (read back with [`Self::last_stamps`]): where a round
    /// trip's time goes.
    pub fn launch_stamped(
        &mut self,
        k: &Kernel,
        grid: [u32; 3],
        block: [u32; 3],
        params: &[u8],
    ) -> Result<u64, NvkError> {
        let mut pb = PushBuffer::with_capacity(12);
        let stamp = sem::HostRelease {
            wait_for_idle: false,
            timestamp: true,
        };
        sem::host_release(
            &mut pb,
            self.fetch_stamp.gpu_va(),
            self.compute_value + 1,
            stamp,
        )
        .map_err(sub)?;
        self.launch_after(pb, k, grid, block, params)
    }

    /// Publishes the compute channel's GPFIFO again and rings its doorbell, with
    /// nothing new in it (what a submission's kick costs; the front end finds no
    /// new entries).
    pub fn rekick(&self) -> Result<(), NvkError> {
        self.compute.fifo().kick(&self.doorbell).map_err(sub)
    }

    /// GPU times (ns) of the last stamped launch: when the front end reached it,
    /// and when its grid's completion was released.
    pub fn last_stamps(&self) -> (u64, u64) {
        (
            self.fetch_stamp.timestamp(),
            self.compute_timeline.timestamp(),
        )
    }

    /// The GPU's timer (ns; the clock of semaphore timestamps), read through the
    /// usermode page (`NVC361_TIME_1` / `TIME_0`).
    pub fn gpu_time_ns(&self) -> u64 {
        use nvbare_core::hal::Bar0;
        loop {
            let hi = self.doorbell.read32(0x84);
            let lo = self.doorbell.read32(0x80);
            if self.doorbell.read32(0x84) == hi {
                return (u64::from(hi) << 32) | u64::from(lo);
            }
        }
    }

    fn launch_after(
        &mut self,
        mut pb: PushBuffer,
        k: &Kernel,
        grid: [u32; 3],
        block: [u32; 3],
        params: &[u8],
    ) -> Result<u64, NvkError> {
        let t0 = self.profile.is_some().then(Instant::now);
        let value = self.compute_value + 1;
        let mut s = self.prepare(k, grid, block, params, Some(value), value)?;
        let t1 = t0.map(|_| Instant::now());
        self.write_launch(&mut s)?;
        compute::launch_qmd(&mut pb, s.qmd_va, self.tuning.pcas).map_err(sub)?;
        let t2 = t0.map(|_| Instant::now());
        self.compute
            .submit(&self.doorbell, &self.clock, TIMEOUT_NS, &pb)
            .map_err(sub)?;
        self.compute_value = value;
        if let (Some(p), Some(t0), Some(t1), Some(t2)) = (self.profile.as_mut(), t0, t1, t2) {
            let t3 = Instant::now();
            p.prepare_ns += (t1 - t0).as_nanos() as u64;
            p.write_ns += (t2 - t1).as_nanos() as u64;
            p.submit_ns += (t3 - t2).as_nanos() as u64;
            p.launches += 1;
        }
        Ok(value)
    }

    /// Launches `k` `count` times in one submission (one GPFIFO entry, one
    /// doorbell), the last grid releasing the timeline: what a recorded command
    /// list (a CUDA graph) costs per kernel. With `tuning.chain` each QMD names
    /// the next as its dependent, so the front end sees one PCAS in all.
    pub fn launch_many(
        &mut self,
        k: &Kernel,
        grid: [u32; 3],
        block: [u32; 3],
        params: &[u8],
        count: u32,
    ) -> Result<u64, NvkError> {
        let value = self.compute_value + 1;
        let mut pb = PushBuffer::with_capacity(4 * count as usize);
        let mut prev: Option<Slot> = None;
        for i in 0..count {
            let release = (i + 1 == count).then_some(value);
            let mut s = self.prepare(k, grid, block, params, release, value)?;
            if self.tuning.chain {
                match prev.take() {
                    Some(mut p) => {
                        p.qmd.set_dependent(s.qmd_va).map_err(sub)?;
                        self.write_launch(&mut p)?;
                    }
                    None => {
                        compute::launch_qmd(&mut pb, s.qmd_va, self.tuning.pcas).map_err(sub)?
                    }
                }
                prev = Some(s);
            } else {
                self.write_launch(&mut s)?;
                compute::launch_qmd(&mut pb, s.qmd_va, self.tuning.pcas).map_err(sub)?;
            }
        }
        if let Some(mut p) = prev {
            self.write_launch(&mut p)?;
        }
        self.compute
            .submit(&self.doorbell, &self.clock, TIMEOUT_NS, &pb)
            .map_err(sub)?;
        self.compute_value = value;
        Ok(value)
    }

    /// Takes `size` bytes of video memory from the sub-allocator (no RM call
    /// once a chunk exists).
    pub fn pool_alloc(&mut self, size: u64) -> Result<PoolBuffer, NvkError> {
        self.pool.alloc(&mut self.dev, size)
    }

    /// Returns a sub-allocation.
    pub fn pool_free(&mut self, b: PoolBuffer) {
        self.pool.free(b)
    }
}
