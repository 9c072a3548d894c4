//! A GPU ready for work on the kernel-driver path: the [`Device`]'s channels
//! wrapped in `nvbare-core`'s submission code, timeline semaphores in host
//! memory, an arena for per-launch QMDs and constant buffers, and the
//! operations a user calls: allocate, copy, load a kernel, launch, wait.

use std::cell::Cell;
use std::time::Instant;

use nvbare_core::compute::{self, ComputeSetup, LocalMemory};
use nvbare_core::copy;
use nvbare_core::cubin::Cubin;
use nvbare_core::gpfifo::{Channel, GpFifo, USERMODE_DOORBELL};
use nvbare_core::hal::Clock;
use nvbare_core::launch;
use nvbare_core::mirror::MirroredMem;
use nvbare_core::push::PushBuffer;
use nvbare_core::qmd::QmdVersion;
use nvbare_core::ring::Ring;
use nvbare_core::sem::{self, Semaphore};
use nvbare_core::shared::SharedMem;

use super::NvkError;
use super::device::{Device, Doorbell, LOCAL_MEM_WINDOW, SHARED_MEM_WINDOW};
use super::mem::{Buffer, Placement};
use super::pool::{Pool, PoolBuffer};

mod launch_path;

use launch_path::Arena;
pub use launch_path::{Kernel, LaunchProfile, LaunchTuning};

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
    buf.mem()?.slice(offset as usize, len as usize).map_err(sub)
}

fn sub(e: impl std::fmt::Display) -> NvkError {
    NvkError::Submit(e.to_string())
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
    /// The highest compute timeline value a wait has seen passed (no read of the
    /// GPU-written semaphore needed to know it).
    compute_seen: Cell<u64>,
    pub copy_value: u64,
    arena: Arena,
    qmd_version: QmdVersion,
    local: Option<(Buffer, u32)>,
    pool: Pool,
    /// QMD choices for launches.
    pub tuning: LaunchTuning,
    /// When set, launches add the CPU time of their steps here.
    pub profile: Option<LaunchProfile>,
    /// Reused buffers, so a launch allocates nothing: slot images, and the
    /// launch's pushbuffer.
    slot_bytes: Vec<Vec<u8>>,
    launch_pb: PushBuffer,
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
            compute_seen: Cell::new(0),
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
            slot_bytes: Vec::new(),
            launch_pb: PushBuffer::with_capacity(16),
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
        if self.compute_timeline.reached(value) {
            self.compute_seen.set(self.compute_seen.get().max(value));
            return Ok(());
        }
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
                Ok(()) => {
                    self.compute_seen.set(self.compute_seen.get().max(value));
                    return Ok(());
                }
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
    /// image in video memory and records what its launches need. The kernel owns
    /// its record and its code in video memory; `elf` is not kept. Give it back
    /// with [`Self::unload`] (a kernel merely dropped keeps its code memory until
    /// the device closes).
    pub fn load(&mut self, elf: &[u8], name: &str) -> Result<Kernel, NvkError> {
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
            .clone()
            .into_owned();
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
        let slots = launch::Cbuf0Slots::for_sm(sm)
            .ok_or_else(|| sub(format!("no constant-bank layout for sm_{sm}")))?;
        Ok(Kernel::new(info, image, code, &slots))
    }

    /// Frees `k`'s code memory once every launch submitted so far has finished.
    pub fn unload(&mut self, k: Kernel) -> Result<(), NvkError> {
        self.wait_compute(self.compute_value)?;
        self.free(k.into_code());
        Ok(())
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
