//! nvbare boots GSP-RM 570.144 itself, over nothing but [`Platform`]: on Hopper and
//! Blackwell through the FSP chain of trust ([`fsp`]), on Turing, Ampere and Ada through the
//! VBIOS's FWSEC and the SEC2 booter ([`booter`]); the stages they share live here.
//!
//! [`boot`] runs the stages of [`Stage::BOOT`] and returns a booted [`Gsp`] (the RPC
//! channel, what GSP-RM reported, the boot report) or a [`BootFailure`] giving the platform
//! back with a [`BootError`] that names the stage, the check, the remedy and what GSP-RM
//! said. [`Gsp::shutdown`] unloads GSP-RM (`UNLOADING_GUEST_DRIVER`), waits for the RISC-V
//! core to halt and frees every DMA allocation, so the next boot finds WPR2 down; dropping
//! a [`Gsp`] does the same.
//!
//! | stage | module | OpenRM |
//! |---|---|---|
//! | identify, reset | [`identify`] | `kbifDoFunctionLevelReset_GH100`, `kbifPollBarFirewallDisengage_GB202`, `kfspWaitForSecureBoot_GH100`, `kgspIsWpr2Up_GH100` |
//! | layout | [`layout`] | `kgspCalculateFbLayout_GH100`, `gsp_fw_heap.h` |
//! | firmware parse | [`firmware`] | `kfspSetupGspImages`, `_kgspPrepareGspRmBinaryImage` |
//! | structures | [`sysmem_flush`], [`structures`], [`gsp_init`] | `kmemsysInitFlushSysmemBuffer_GA100`, `kgspInitRm_IMPL` up to `kgspQueueAsyncInitRpcs` |
//! | FSP, lockdown (FSP path) | [`fsp`] | `kfspSendBootCommands_GH100`, `kgspBootstrap_GH100` |
//! | GSP init | [`gsp_init`] | `GspStatusQueueInit`, `kgspWaitForRmInitDone` |
//! | static info | [`static_info`] | `NV_RM_RPC_GET_GSP_STATIC_INFO`, kgr static info |
//!
//! | FWSEC-FRTS, SEC2 booter, sequencer (booter path) | [`booter`] | `kgspBootstrap_TU102` |
//!
//! Per-chip behaviour is in [`hal`]. Every wait is bounded ([`Timeouts`]) and counted in
//! the [`BootReport`], whose host-side time per stage excludes it.

pub mod booter;
pub mod error;
pub mod firmware;
pub mod fsp;
pub mod gsp_init;
pub mod hal;
pub mod identify;
pub mod layout;
pub mod memory;
pub mod report;
pub mod static_info;
pub mod structures;
pub mod sysmem_flush;
mod teardown;

#[cfg(test)]
mod tests;

use alloc::boxed::Box;

use nvbare_gsp::registry::RegistryTable;

pub use error::{BootError, BootErrorKind, FirmwareFile, Stage};
pub use firmware::{BootImages, Firmware, FirmwareCheck};
pub use layout::FbLayout;
pub use report::{BootReport, StageTime};
pub use static_info::{GrInfo, StaticInfo};
pub use teardown::TeardownReport;

use crate::chip::Chip;
use crate::gsp_rpc::{DEFAULT_REPLY_TIMEOUT_NS, GspDiagnostics, GspRpc, LoggingSections, Rpc};
use crate::hal::Platform;
use hal::BootHal;
use memory::BootMemory;
use report::Timeline;

/// The bound of every wait of a boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// FSP boot complete after a reset; `None` takes the chip's (4 s GH100/GB10x, 5 s GB20x).
    pub fsp_boot_ns: Option<u64>,
    /// Config space answering again after a reset (`kbifConfigAccessWait_GH100`).
    pub config_space_ns: u64,
    /// GB20x's BAR firewall disengaging (`kbifPollBarFirewallDisengage_GB202`).
    pub bar_firewall_ns: u64,
    /// FSP draining its command queue, and its reply to the COT message.
    pub fsp_ns: u64,
    /// GSP target-mask release, then the RISC-V lockdown release (each).
    pub lockdown_ns: u64,
    /// GSP-RM writing its status queue header.
    pub status_queue_ns: u64,
    /// `GSP_INIT_DONE` after the status queue is linked.
    pub init_done_ns: u64,
    /// Each RPC's reply (static info, unload; and the channel's default afterwards).
    pub rpc_reply_ns: u64,
    /// The RISC-V core halting after `UNLOADING_GUEST_DRIVER`.
    pub halt_ns: u64,
}

// TIMEOUT: RM's default GPU timeout (`GPU_TIMEOUT_DEFAULT`, 4 s on silicon: its value lives
// in gpu_timeout.c, which the reference tree lacks) bounds OpenRM's FSP queue and reply
// waits (kfspPollForCanSend, kfspSetResponseTimeout), the target-mask and lockdown waits of
// kgspBootstrap_GH100 (gpuTimeoutCondWait with the default) and kflcnWaitForHaltRiscv at
// teardown. The status queue link is GspStatusQueueInit's 4 s, INIT_DONE and replies
// _kgspRpcRecvPoll's 1.5 x default. Healthy firmware takes milliseconds; these only bound
// a failure.
const DEFAULT_GPU_TIMEOUT_NS: u64 = 4_000_000_000;

// TIMEOUT: kbifDoFunctionLevelReset_GH100 gives config space
// BIF_FLR_DEVINIT_COMPLETION_TIMEOUT_DEFAULT (900 ms) to answer again after an FLR.
const CONFIG_SPACE_TIMEOUT_NS: u64 = 900_000_000;

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            fsp_boot_ns: None,
            config_space_ns: CONFIG_SPACE_TIMEOUT_NS,
            // TIMEOUT: kbifPollBarFirewallDisengage_GB202 waits NV_MAX(500 ms, the default
            // GPU timeout): the default's 4 s.
            bar_firewall_ns: DEFAULT_GPU_TIMEOUT_NS,
            fsp_ns: DEFAULT_GPU_TIMEOUT_NS,
            lockdown_ns: DEFAULT_GPU_TIMEOUT_NS,
            status_queue_ns: DEFAULT_GPU_TIMEOUT_NS,
            init_done_ns: DEFAULT_REPLY_TIMEOUT_NS,
            rpc_reply_ns: DEFAULT_REPLY_TIMEOUT_NS,
            halt_ns: DEFAULT_GPU_TIMEOUT_NS,
        }
    }
}

/// How to boot.
#[derive(Clone, Debug)]
pub struct BootOptions {
    /// The registry keys sent with `SET_REGISTRY` (default: tinygrad's
    /// `RMForcePcieConfigSave = 1`, `RMSecBusResetEnable = 1`).
    pub registry: RegistryTable,
    /// Wait bounds.
    pub timeouts: Timeouts,
    /// How strictly the firmware files are checked.
    pub firmware_check: FirmwareCheck,
    /// The firmware's `.fwlogging_*` sections, to decode libos logs (else raw words).
    pub logging: Option<LoggingSections>,
}

impl Default for BootOptions {
    fn default() -> Self {
        Self {
            registry: RegistryTable::tinygrad_defaults(),
            timeouts: Timeouts::default(),
            firmware_check: FirmwareCheck::Pinned,
            logging: None,
        }
    }
}

/// A failed boot: the error, and the platform back (its DMA memory all freed).
pub struct BootFailure<P> {
    /// What went wrong.
    pub error: BootError,
    /// The platform.
    pub platform: P,
}

impl<P> core::fmt::Debug for BootFailure<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BootFailure")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<P> core::fmt::Display for BootFailure<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.error.fmt(f)
    }
}

impl<P> From<Box<BootFailure<P>>> for BootError {
    fn from(f: Box<BootFailure<P>>) -> Self {
        f.error
    }
}

/// A booted GSP-RM: the platform, the boot's DMA memory, the RPC channel and what GSP-RM
/// reported.
pub struct Gsp<P: Platform> {
    /// `Some` until [`Gsp::shutdown`] or drop take it.
    live: Option<Live<P>>,
    chip: Chip,
    info: StaticInfo,
    layout: FbLayout,
    reserved_top: u64,
    wpr2: (u64, u64),
    report: BootReport,
    timeouts: Timeouts,
}

/// What lives only while GSP-RM runs: the platform, the RPC channel over the boot's DMA
/// memory, and that memory.
struct Live<P> {
    platform: P,
    rpc: GspRpc,
    memory: BootMemory,
    /// The booter path's teardown needs (FWSEC-SB, `booter_unload`); `None` on the FSP path.
    booter: Option<booter::BooterState>,
}

impl<P: Platform> core::fmt::Debug for Gsp<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Gsp")
            .field("chip", &self.chip)
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// The parts a successful boot hands to [`Gsp`].
pub(crate) struct Booted {
    pub(crate) chip: Chip,
    pub(crate) wpr2: (u64, u64),
    pub(crate) info: StaticInfo,
    pub(crate) layout: FbLayout,
    pub(crate) reserved_top: u64,
    pub(crate) reset: bool,
}

/// Boots GSP-RM on `platform` with `firmware`. On failure the platform comes back with
/// the error (boxed: it carries the platform).
pub fn boot<P: Platform>(
    platform: P,
    firmware: &Firmware<'_>,
    options: &BootOptions,
) -> Result<Gsp<P>, Box<BootFailure<P>>> {
    let mut p = platform;
    let mut tl = Timeline::new();
    let mut memory = BootMemory::new();
    let mut rpc = None;
    let mut booter = None;
    match run(
        &mut p,
        firmware,
        options,
        &mut tl,
        &mut memory,
        &mut rpc,
        &mut booter,
    ) {
        Ok(b) => {
            let report = tl.finish(p.clock(), b.chip, b.reset);
            // PANIC: run() fills `rpc` before any stage that can succeed after it.
            let Some(mut rpc) = rpc else {
                unreachable!("a successful boot has an RPC channel")
            };
            rpc.set_reply_timeout_ns(options.timeouts.rpc_reply_ns);
            Ok(Gsp {
                live: Some(Live {
                    platform: p,
                    rpc,
                    memory,
                    booter,
                }),
                chip: b.chip,
                wpr2: b.wpr2,
                info: b.info,
                layout: b.layout,
                reserved_top: b.reserved_top,
                report,
                timeouts: options.timeouts,
            })
        }
        Err(kind) => {
            let stage = tl.stage().unwrap_or(Stage::Identify);
            let error = failure(stage, kind, rpc.as_ref());
            // Past the COT message (or FWSEC), firmware may still use the boot's memory:
            // stop the device before giving the memory back.
            if stage >= Stage::Fsp {
                let _ = identify::quiesce_and_reset(&mut p);
            }
            // The channel's views of the memory go before the memory does.
            drop(rpc);
            // SAFETY: the RPC channel (the only holder of views of this memory: queues and
            // log buffers) is dropped; before the COT message nothing on the GPU knows the
            // memory, after it bus mastering is off and the GPU reset.
            unsafe { memory.free_all(&mut p) };
            Err(Box::new(BootFailure { error, platform: p }))
        }
    }
}

/// A [`BootError`] for `kind` at `stage`, with GSP-RM's diagnostics when there are any.
fn failure(stage: Stage, kind: BootErrorKind, rpc: Option<&GspRpc>) -> BootError {
    let (kind, diagnostics) = match kind {
        BootErrorKind::Rpc(mut e) => {
            let mut d = core::mem::take(&mut e.diagnostics);
            if d.is_empty() {
                // A refusal carries none (they are read only for real failures); a failed
                // boot shows them.
                d = rpc.map_or_else(GspDiagnostics::default, GspRpc::diagnostics);
            }
            (BootErrorKind::Rpc(e), d)
        }
        other => (
            other,
            rpc.map_or_else(GspDiagnostics::default, GspRpc::diagnostics),
        ),
    };
    BootError {
        stage,
        kind,
        diagnostics,
    }
}

fn run<P: Platform>(
    p: &mut P,
    fw: &Firmware<'_>,
    opts: &BootOptions,
    tl: &mut Timeline,
    memory: &mut BootMemory,
    rpc_slot: &mut Option<GspRpc>,
    booter_slot: &mut Option<booter::BooterState>,
) -> Result<Booted, BootErrorKind> {
    tl.begin(p.clock(), Stage::Identify);
    let hal = identify::identify(&*p, tl, &opts.timeouts)?;
    match hal {
        BootHal::Fsp(hal) => fsp::run(p, hal, fw, opts, tl, memory, rpc_slot),
        BootHal::Booter(hal) => booter::run(p, hal, fw, opts, tl, memory, rpc_slot, booter_slot),
    }
}

impl<P: Platform> Gsp<P> {
    fn live(&self) -> &Live<P> {
        match &self.live {
            Some(l) => l,
            // PANIC: only shutdown and drop take the live parts, and both consume the Gsp.
            None => unreachable!("the live parts of a Gsp"),
        }
    }

    fn live_mut(&mut self) -> &mut Live<P> {
        match &mut self.live {
            Some(l) => l,
            // PANIC: as in `live()`.
            None => unreachable!("the live parts of a Gsp"),
        }
    }

    /// The RPC channel.
    pub fn rpc(&mut self) -> Rpc<'_, P> {
        let l = self.live_mut();
        l.rpc.on(&l.platform)
    }

    /// The RPC channel's state: events, diagnostics, timeouts.
    pub fn rpc_state(&mut self) -> &mut GspRpc {
        &mut self.live_mut().rpc
    }

    /// The platform.
    pub fn platform(&self) -> &P {
        &self.live().platform
    }

    /// The platform, to allocate memory or map BARs through.
    pub fn platform_mut(&mut self) -> &mut P {
        &mut self.live_mut().platform
    }

    /// The chip.
    pub fn chip(&self) -> Chip {
        self.chip
    }

    /// What GSP-RM reported.
    pub fn info(&self) -> &StaticInfo {
        &self.info
    }

    /// The FB layout asked of GSP-FMC.
    pub fn layout(&self) -> &FbLayout {
        &self.layout
    }

    /// VRAM below what the firmware took: from 0 to the non-WPR heap GSP-FMC placed (or,
    /// if GSP-RM reported none, below nvbare's estimate of the reserved top).
    pub fn usable_vram_end(&self) -> u64 {
        let estimate = self.layout.fb_size.saturating_sub(self.reserved_top);
        match self.info.non_wpr_heap_offset {
            0 => estimate,
            start => start.min(self.layout.fb_size),
        }
    }

    /// WPR2 as GSP-FMC raised it (`NV_PFB_PRI_MMU_WPR2_ADDR_LO/HI`, read after boot): the
    /// write-protected region holding GSP-RM's image and heap.
    pub fn wpr2(&self) -> core::ops::Range<u64> {
        self.wpr2.0..self.wpr2.1
    }

    /// How the boot went.
    pub fn report(&self) -> &BootReport {
        &self.report
    }

    /// Unloads GSP-RM, waits for the GSP to halt, frees every DMA allocation and gives the
    /// platform back. The memory is freed even when the unload fails (after a reset, when
    /// GSP-RM did not halt).
    pub fn shutdown(mut self) -> (P, Result<TeardownReport, BootError>) {
        match self.live.take() {
            Some(l) => teardown::run(l.platform, l.rpc, l.memory, l.booter, &self.timeouts),
            // PANIC: the live parts are taken only here and in drop, which consume the Gsp.
            None => unreachable!("the live parts of a Gsp"),
        }
    }
}

impl<P: Platform> Drop for Gsp<P> {
    fn drop(&mut self) {
        if let Some(l) = self.live.take() {
            let _ = teardown::run(l.platform, l.rpc, l.memory, l.booter, &self.timeouts);
        }
    }
}
