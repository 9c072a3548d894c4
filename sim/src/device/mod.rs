//! [`SimGpu`]: one simulated GPU. BAR0 accesses from the driver are decoded here and handed to
//! the unit that owns the address ([`Unit`]); work the hardware would do asynchronously (an
//! FSP command, a GSP RPC, a doorbell) runs on the device's own thread, which steps every unit
//! until none has anything left to do and then sleeps until the next register write wakes it.
//!
//! Units talk to each other through [`World`] (state several units read: channels, address
//! spaces, pending interrupts) and [`Signal`]s (one unit telling the others something
//! happened), never by reaching into each other.
//!
//! Register semantics are synchronous, as on hardware: a BAR0 write reaches its unit before
//! `bar0_write` returns, and a read sees every earlier write. A unit's `write` only records what
//! was asked and flags work; the work happens in its `step` on the device thread, and the
//! driver polls for its effect.
//!
//! `world.rs` holds what units share and the [`Unit`] trait; `thread.rs` how a unit is run
//! (one [`Cx`] per call, under the device lock) and the device thread's loop.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::chip::{ChipSpec, SimChip};
use crate::config::ConfigSpace;
use crate::faults::FaultPlan;
use crate::log::SimLog;
use crate::memory::{Bus, SysMem, Vram};
use crate::trace::{Event, Kind, Trace};
use crate::units;

mod thread;
mod world;
pub use world::*;

/// How long the GPU reboots after a function-level reset before BAR0 answers: the FSP's
/// secure boot and devinit (OpenRM allows 4 s, `kfspWaitForSecureBoot_GH100`: "FBFalcon
/// training during devinit alone takes 2 seconds"; Blackwell's CRS release "generally
/// happens ~800msec", `kbifPollBarFirewallDisengage_GB202`). Hundreds of milliseconds, not
/// zero: the simulator's choice, kept short for the tests; `FaultPlan::reboot_ns` changes it.
pub const REBOOT_NS: u64 = 300_000_000;
/// Booter path: how long devinit's FWSEC keeps running on the GSP falcon after it wrote
/// `GFW_BOOT_PROGRESS_COMPLETED`, after a reset. OpenRM waits for the falcon's halt before
/// it reads the progress (`gpuWaitForGfwBootComplete_TU102`, kern_gpu_tu102.c), so the
/// progress alone does not say the falcon is free; how long the gap is on silicon is not
/// published. The simulator's choice, short enough for tinygrad (which waits for the
/// progress only, then reads the VBIOS before it touches the falcon);
/// `FaultPlan::devinit_tail_ns` changes it.
pub const DEVINIT_TAIL_NS: u64 = 1_000_000;
/// `NV_EP_PCFG_GPU_VSEC_DEBUG_SEC_2` (blackwell/gb202/dev_xtl_ep_pcfg_gpu.h).
pub const FIREWALL_REGISTER: u32 = 0x2b8;
/// `NV_EP_PCFG_GPU_VSEC_DEBUG_SEC_2_BAR_FIREWALL_ENGAGE` (24:24).
pub const FIREWALL_ENGAGE: u32 = 1 << 24;

/// Where the simulated function's BARs sit on the bus.
pub const BAR0_BUS: u64 = 0xa000_0000;
/// BAR3's bus address.
pub const BAR3_BUS: u64 = 0xb000_0000;
/// BAR1's bus address: the end of the host-memory bus window
/// ([`SYSMEM_BUS_END`](crate::memory::SYSMEM_BUS_END)), so no host-memory bus address reaches
/// VRAM.
pub const BAR1_BUS: u64 = 0x80_0000_0000;
/// Distance between the BAR1s of consecutive GPUs sharing one host memory.
pub const BAR_STRIDE: u64 = 0x40_0000_0000;
/// Distance between consecutive GPUs' BAR0s: BAR0 is a 32-bit BAR (config space 0x10), so
/// every GPU's must lie below 4 GiB; 64 MiB (the largest BAR0 of the chip table) keeps four
/// GPUs' BAR0s apart below [`BAR3_BUS`].
pub const BAR0_STRIDE: u64 = 0x0400_0000;
/// Distance between consecutive GPUs' BAR3s (32 MiB each, kept below 4 GiB too, clear of
/// the host-memory bus addresses that start there).
pub const BAR3_STRIDE: u64 = 0x0200_0000;

/// Everything behind the device lock.
struct State {
    faults: FaultPlan,
    config: ConfigSpace,
    world: World,
    units: Vec<Box<dyn Unit>>,
    /// Set by a BAR0 write: the thread has something to look at.
    kicked: bool,
    /// BAR0 offsets no unit decodes, with how often they were touched (strictness report).
    unclaimed: std::collections::BTreeMap<u32, u64>,
    /// Where the firmware files are (see [`SimGpu::set_firmware_dir`]).
    firmware_dir: Option<PathBuf>,
}

/// The part of a device both the driver side and the device thread hold.
struct Inner {
    /// Until when (device time) the GPU reboots after its last reset.
    reboot_until_ns: std::sync::atomic::AtomicU64,
    /// A BAR0 access during the reboot was logged (once per reset).
    rebooting_noted: AtomicBool,
    spec: &'static ChipSpec,
    bus: Bus,
    bars: [u64; 3],
    log: SimLog,
    start: Instant,
    state: Mutex<State>,
    wake: Condvar,
    gone: AtomicBool,
    stop: AtomicBool,
}

/// One simulated GPU. Dropping it stops its thread.
pub struct SimGpu {
    inner: Arc<Inner>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for SimGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimGpu")
            .field("chip", &self.inner.spec.name)
            .field("bars", &self.inner.bars)
            .finish()
    }
}

/// Why a simulated GPU could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// VRAM could not be reserved.
    #[error(
        "could not reserve {bytes} bytes of address space for simulated VRAM: {source}; the \
         simulator maps VRAM lazily (MAP_NORESERVE), so check `ulimit -v` and vm.overcommit_memory"
    )]
    Vram {
        /// VRAM size.
        bytes: u64,
        /// The mmap error.
        source: std::io::Error,
    },
    /// The device thread could not be started.
    #[error("could not start the simulated GPU's thread: {0}")]
    Thread(std::io::Error),
}

impl SimGpu {
    /// A simulated `chip` with its own host memory and no injected faults.
    pub fn new(chip: SimChip) -> Result<SimGpu, SimError> {
        Self::with_faults(chip, FaultPlan::default())
    }

    /// A simulated `chip` with its own host memory and `faults`.
    pub fn with_faults(chip: SimChip, faults: FaultPlan) -> Result<SimGpu, SimError> {
        Self::on_bus(chip, Arc::new(SysMem::new()), 0, faults)
    }

    /// A simulated `chip` whose first `window` bytes of VRAM live in a memory file another
    /// process may map ([`Vram::shareable`]; `bus().vram.file()`), as the vfio-user server
    /// gives BAR1 to its client.
    pub fn with_shareable_vram(
        chip: SimChip,
        faults: FaultPlan,
        window: u64,
    ) -> Result<SimGpu, SimError> {
        let bytes = chip.spec().vram_bytes;
        let vram =
            Vram::shareable(bytes, window).map_err(|source| SimError::Vram { bytes, source })?;
        Self::build(chip, Arc::new(SysMem::new()), 0, faults, vram)
    }

    /// GPU number `index` of several sharing `sysmem` (their BARs are [`BAR_STRIDE`] apart).
    pub fn on_bus(
        chip: SimChip,
        sysmem: Arc<SysMem>,
        index: u32,
        faults: FaultPlan,
    ) -> Result<SimGpu, SimError> {
        let bytes = chip.spec().vram_bytes;
        let vram = Vram::new(bytes).map_err(|source| SimError::Vram { bytes, source })?;
        Self::build(chip, sysmem, index, faults, vram)
    }

    fn build(
        chip: SimChip,
        sysmem: Arc<SysMem>,
        index: u32,
        faults: FaultPlan,
        vram: Vram,
    ) -> Result<SimGpu, SimError> {
        let spec = chip.spec();
        let shift = u64::from(index) * BAR_STRIDE;
        let bars = [
            BAR0_BUS + u64::from(index) * BAR0_STRIDE,
            BAR1_BUS + shift,
            BAR3_BUS + u64::from(index) * BAR3_STRIDE,
        ];
        let bus = Bus::new(Arc::new(vram), sysmem, (bars[1], spec.bar1_size));
        // Peers on the same bus reach this device's VRAM through its BAR1.
        bus.sysmem
            .attach_bar(bars[1], spec.bar1_size, bus.vram.clone());
        let mut world = World::default();
        if faults.wpr2_left_up {
            world.wpr2 = units::identity::WPR2_LEFT_UP;
        }
        let state = State {
            config: ConfigSpace::new(spec, bars[0], bars[1], bars[2]),
            faults,
            world,
            units: units::all(spec),
            kicked: false,
            unclaimed: Default::default(),
            firmware_dir: None,
        };
        let inner = Arc::new(Inner {
            reboot_until_ns: std::sync::atomic::AtomicU64::new(0),
            rebooting_noted: AtomicBool::new(false),
            spec,
            bus,
            bars,
            log: SimLog::new(),
            start: Instant::now(),
            state: Mutex::new(state),
            wake: Condvar::new(),
            gone: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        if inner.lock().faults.wpr2_left_up {
            inner.log.warn(
                "fault",
                "WPR2 is up at power-on, as a crashed previous run leaves it",
            );
        }
        let worker = inner.clone();
        let thread = std::thread::Builder::new()
            .name(format!("sim-{}", spec.name))
            .spawn(move || worker.run())
            .map_err(|e| {
                inner.bus.sysmem.detach_bar(bars[1]);
                SimError::Thread(e)
            })?;
        Ok(SimGpu {
            inner,
            thread: Some(thread),
        })
    }

    /// The chip's facts.
    pub fn spec(&self) -> &'static ChipSpec {
        self.inner.spec
    }

    /// The device's view of memory (its VRAM, the host memory it shares).
    pub fn bus(&self) -> &Bus {
        &self.inner.bus
    }

    /// The device's log.
    pub fn log(&self) -> &SimLog {
        &self.inner.log
    }

    /// Bus address and size of BAR `index` (0, 1, 3).
    pub fn bar(&self, index: u32) -> Option<(u64, u64)> {
        let s = self.inner.spec;
        match index {
            0 => Some((self.inner.bars[0], s.bar0_size)),
            1 => Some((self.inner.bars[1], s.bar1_size)),
            3 => Some((self.inner.bars[2], s.bar3_size)),
            _ => None,
        }
    }

    /// The GPU timer: ns since the device was made.
    pub fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }

    /// Whether the GPU is still rebooting after a reset: its FSP and devinit run, BAR0
    /// reads all ones and drops writes, and GB20x's BAR firewall is engaged.
    pub fn rebooting(&self) -> bool {
        self.inner.now_ns() < self.inner.reboot_until_ns.load(Ordering::Acquire)
    }

    /// Whether BAR0 is dark while the GPU reboots: on the FSP chips until the FSP has booted
    /// (`kfspWaitForSecureBoot_GH100`). The booter-path chips answer at once and report
    /// devinit's progress in `NV_PGC6_AON_SECURE_SCRATCH_GROUP_05` instead, which OpenRM
    /// polls after a reset (`gpuWaitForGfwBootComplete_TU102`) and tinygrad 0.14.0 polls after
    /// reading `PMC_BOOT_42` (`NV_FLCN.wait_for_reset`): see [`crate::units::gfw`].
    fn blanked(&self) -> bool {
        self.rebooting() && self.inner.spec.boot != crate::chip::BootModel::Booter
    }

    /// Reads the BAR0 register at `offset` (0xffffffff once the device is gone, or while it
    /// reboots after a reset).
    pub fn bar0_read(&self, offset: u32) -> u32 {
        if self.inner.gone.load(Ordering::Acquire) {
            return u32::MAX;
        }
        if self.blanked() {
            self.inner.note_rebooting_access("read", offset);
            self.inner
                .traced(Kind::Bar0Read, offset, 4, u32::MAX, "rebooting");
            return u32::MAX;
        }
        let (value, unit) = self
            .inner
            .with_unit(offset, |u, cx| (u.read(cx, offset), u.name()))
            .unwrap_or((0, "-"));
        self.inner.traced(Kind::Bar0Read, offset, 4, value, unit);
        value
    }

    /// Writes the BAR0 register at `offset` (dropped once the device is gone), and wakes the
    /// device thread.
    pub fn bar0_write(&self, offset: u32, value: u32) {
        if self.inner.gone.load(Ordering::Acquire) {
            return;
        }
        if self.blanked() {
            self.inner.note_rebooting_access("write", offset);
            self.inner
                .traced(Kind::Bar0Write, offset, 4, value, "rebooting");
            return;
        }
        let unit = self
            .inner
            .with_unit(offset, |u, cx| {
                u.write(cx, offset, value);
                u.name()
            })
            .unwrap_or("-");
        self.inner.traced(Kind::Bar0Write, offset, 4, value, unit);
        self.inner.kick();
    }

    /// Reads BAR1 at `offset` (BAR1 in physical mode: VRAM at the same address).
    pub fn bar1_read(&self, offset: u64, out: &mut [u8]) -> Result<(), crate::memory::BusFault> {
        if self.inner.gone.load(Ordering::Acquire) {
            out.fill(0xff);
            return Ok(());
        }
        self.inner.bus.vram.read(offset, out)
    }

    /// Writes BAR1 at `offset`.
    pub fn bar1_write(&self, offset: u64, data: &[u8]) -> Result<(), crate::memory::BusFault> {
        if self.inner.gone.load(Ordering::Acquire) {
            return Ok(());
        }
        self.inner.bus.vram.write(offset, data)
    }

    /// Reads `size` bytes of PCI config space (all ones once gone or when malformed).
    pub fn config_read(&self, offset: u32, size: u32) -> u32 {
        let ones = match size {
            1 => 0xff,
            2 => 0xffff,
            _ => u32::MAX,
        };
        if self.inner.gone.load(Ordering::Acquire) {
            return ones;
        }
        // NV_EP_PCFG_GPU_VSEC_DEBUG_SEC_2 (0x2b8), GB20x: BAR_FIREWALL_ENGAGE (bit 24) stays
        // set until the FSP lowers it at the end of its boot (kbifPollBarFirewallDisengage_
        // GB202: "FSP disengage firewall around CRS release").
        if self.inner.spec.bar_firewall && offset & !3 == FIREWALL_REGISTER {
            let dword = if self.rebooting() { FIREWALL_ENGAGE } else { 0 };
            let value = (dword >> ((offset & 3) * 8)) & ones;
            self.inner
                .traced(Kind::CfgRead, offset, size, value, "config");
            return value;
        }
        let value = self.inner.lock().config.read(offset, size).unwrap_or(ones);
        self.inner
            .traced(Kind::CfgRead, offset, size, value, "config");
        value
    }

    /// Writes PCI config space; false if the access is malformed or the device is gone.
    pub fn config_write(&self, offset: u32, size: u32, value: u32) -> bool {
        if self.inner.gone.load(Ordering::Acquire) {
            return false;
        }
        let mut st = self.inner.lock();
        let ok = st.config.write(offset, size, value).is_some();
        self.inner.bus.set_bus_master(st.config.bus_master());
        drop(st);
        self.inner
            .traced(Kind::CfgWrite, offset, size, value, "config");
        self.inner.kick();
        ok
    }

    /// Makes BAR1 decode `size` bytes in config space (its register's writable bits), as a
    /// vfio-user guest sees it; VRAM and the bus are unchanged.
    pub fn set_config_bar1_size(&self, size: u64) {
        self.inner.lock().config.set_bar_size(1, size);
    }

    /// Function-level reset: every unit back to its power-on state, WPR2 lowered, bus
    /// mastering off. VRAM keeps its contents (as on hardware).
    pub fn reset(&self) {
        let mut st = self.inner.lock();
        let reboot = st.faults.reboot_ns.unwrap_or(REBOOT_NS);
        self.inner
            .reboot_until_ns
            .store(self.inner.now_ns() + reboot, Ordering::Release);
        self.inner.rebooting_noted.store(false, Ordering::Release);
        st.config.reset();
        self.inner.bus.set_bus_master(st.config.bus_master());
        let tail = st.faults.devinit_tail_ns.unwrap_or(DEVINIT_TAIL_NS);
        st.world = World {
            gfw_boot_done_ns: self.inner.now_ns() + reboot,
            devinit_halt_ns: self.inner.now_ns() + reboot + tail,
            ..World::default()
        };
        st.units = units::all(self.inner.spec);
        st.world.signals.push_back(Signal::Reset);
        st.kicked = true;
        drop(st);
        self.inner.traced(Kind::Reset, 0, 0, 0, "device");
        self.inner.log.info("device", "function-level reset");
        self.inner.wake.notify_all();
    }

    /// The device disappears: BAR0 reads return 0xffffffff, writes are dropped, engines stop.
    pub fn unplug(&self) {
        self.inner.gone.store(true, Ordering::Release);
        self.inner
            .log
            .warn("fault", "device unplugged: BAR0 reads return 0xffffffff");
    }

    /// Whether [`SimGpu::unplug`] was called.
    pub fn is_gone(&self) -> bool {
        self.inner.gone.load(Ordering::Acquire)
    }

    /// Changes the injected faults while the device runs.
    pub fn inject(&self, f: impl FnOnce(&mut FaultPlan)) {
        f(&mut self.inner.lock().faults);
        self.inner.kick();
    }

    /// BAR0 offsets no unit decodes that were touched, with counts.
    pub fn unclaimed_registers(&self) -> Vec<(u32, u64)> {
        self.inner
            .lock()
            .unclaimed
            .iter()
            .map(|(&k, &v)| (k, v))
            .collect()
    }

    /// Records this GPU's driver accesses (BAR0, config, reset) and DMA into `trace`, as GPU
    /// `index` of it, from now on; false if a trace was attached already (one per GPU).
    pub fn set_trace(&self, trace: Arc<Trace>, index: u32) -> bool {
        self.inner.bus.trace_tap().attach(trace, index)
    }

    /// Reads the real firmware files (which the simulated FSP and GSP-FMC check a driver's
    /// boot structures against) from `dir` instead of `$NVBARE_FIRMWARE_DIR` or
    /// `~/.cache/nvbare/firmware`.
    pub fn set_firmware_dir(&self, dir: impl Into<PathBuf>) {
        self.inner.lock().firmware_dir = Some(dir.into());
    }

    /// What the engines have done since power-on or the last reset: methods, copies,
    /// launches, and how many launched kernels the simulator did not execute.
    pub fn engine_counters(&self) -> units::fifo::EngineCounters {
        self.inner.lock().world.engines.clone()
    }

    /// Clients and objects GSP-RM's database holds now (zero while GSP-RM does not run):
    /// what a driver that frees what it allocates leaves behind is GSP-RM's own.
    pub fn rm_objects(&self) -> units::gsp::rm::RmObjectCount {
        self.inner.lock().world.rm_objects
    }

    /// Runs `f` with the world (for units' tests and the remote server's bookkeeping).
    pub fn with_world<R>(&self, f: impl FnOnce(&mut World) -> R) -> R {
        f(&mut self.inner.lock().world)
    }
}

impl Drop for SimGpu {
    fn drop(&mut self) {
        self.inner.bus.sysmem.detach_bar(self.inner.bars[1]);
        self.inner.stop.store(true, Ordering::Release);
        self.inner.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Logs (once per reset) that the driver touched BAR0 while the GPU rebooted: OpenRM
    /// reads nothing there before the FSP reports its boot done.
    fn note_rebooting_access(&self, what: &str, offset: u32) {
        if !self.rebooting_noted.swap(true, Ordering::AcqRel) {
            self.log.warn(
                "device",
                format!(
                    "BAR0 {what} at {offset:#x} while the GPU reboots after a reset: BAR0 reads \
                     0xffffffff and drops writes until the FSP has booted (wait for config \
                     space, GB20x's BAR firewall and NV_THERM_I2CS_SCRATCH first)"
                ),
            );
        }
    }

    /// Records a driver access when a trace is attached (one `OnceLock` load when not).
    #[inline]
    fn traced(&self, kind: Kind, offset: u32, size: u32, value: u32, unit: &'static str) {
        if let Some((t, gpu)) = self.bus.trace_tap().get() {
            t.record(Event {
                kind,
                gpu,
                offset,
                size,
                value,
                count: 1,
                unit,
            });
        }
    }
}
