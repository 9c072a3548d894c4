//! The GSP: its falcon/RISC-V registers, the GSP-FMC the FSP starts on it, and GSP-RM.
//!
//! Plan (sim-gsp):
//! 1. FSP ([`super::fsp`]): EMEM channel and queue registers; the COT message checked
//!    field by field against OpenRM and the real FMC file; on success it raises
//!    [`Signal::GspFmcStarted`].
//! 2. GSP boot (this unit, [`fmc`]): for a while the GSP's PRIV target mask stays locked to
//!    the FSP and `NV_PFALCON_FALCON_HWCFG2` reads 0xBADF41xx
//!    (`_kfspIsGspTargetMaskReleased`, kern_fsp_gh100.c); then the FMC runs with the RISC-V
//!    lockdown held (HWCFG2 bit 13, `RISCV_BR_PRIV_LOCKDOWN`), checks
//!    `GSP_FMC_BOOT_PARAMS`, the WPR meta, the GSP-RM image, bootloader and signature,
//!    raises WPR2 and releases the lockdown, or leaves an error in `MAILBOX0`
//!    (`_kgspLockdownReleasedOrFmcError`, kernel_gsp_gh100.c).
//! 3. GSP-RM ([`rpc`], [`queues`]): finds its queues through libos args -> `RMARGS` ->
//!    message queue init args, links them, takes SET_SYSTEM_INFO and SET_REGISTRY, sends
//!    GSP_INIT_DONE, then answers RPCs after each doorbell (`NV_PGSP_QUEUE_HEAD(0)`,
//!    `kgspSetCmdQueueHead_TU102`), writing libos log records ([`libos_log`]).
//! 4. RM object database ([`rm`]): allocs and controls with OpenRM's statuses; channels and
//!    VA spaces go to `World::channels` / `World::vaspaces`.
//! 5. Events: MMU faults from `World::mmu_faults` and `Signal::ChannelError` become
//!    MMU_FAULT_QUEUED, OS_ERROR_LOG (an Xid) and RC_TRIGGERED.
//! 6. Faults: `gsp_silent`, `corrupt_reply_to`, `rpc_failure` here; `fsp_error`,
//!    `fsp_corrupt_reply` and `wpr2_left_up` in the FSP.
//!
//! Registers (hopper/gh100 `dev_gsp.h`, `dev_falcon_v4.h`, `dev_riscv_pri.h`; GB202 the
//! same): falcon base 0x110000 (`NV_PGSP` 0x110000..0x113fff), MAILBOX0/1 at +0x40/+0x44,
//! HWCFG2 at +0xf4, `NV_PGSP_FALCON_ENGINE` 0x1103c0, `NV_PGSP_MAILBOX(i)` 0x110804,
//! `NV_PGSP_QUEUE_HEAD/TAIL(i)` 0x110c00/0x110c04 (+8i; `dev_gsp.h` of ga102, which
//! `kgspSetCmdQueueHead_TU102` uses on every GSP chip), RISC-V at 0x111000 with
//! `NV_PRISCV_RISCV_CPUCTL` at +0x388 (HALTED bit 4, ACTIVE_STAT bit 7).

mod booter;
pub mod facts;
pub mod fmc;
pub mod libos_log;
pub mod queues;
pub mod rm;
pub mod rpc;

use std::collections::BTreeMap;

use nvbare_gsp::abi::{RpcEvent, RpcOsErrorLog, RpcRcTriggered};
use zerocopy::{FromZeros, IntoBytes};

use crate::chip::ChipSpec;
use crate::device::{Cx, Engine, MmuFaultRecord, Signal, Unit};
use crate::memory::Access;
use crate::units::falcon::FalconCore;
use crate::units::falcon::fwsec::Fwsec;
use libos_log::LogMessage;
use queues::{Queues, SharedArea};
use rpc::Rm;

/// `NV_PGSP_FALCON_MAILBOX0`.
pub const MAILBOX0: u32 = 0x0011_0040;
/// `NV_PGSP_FALCON_MAILBOX1`.
pub const MAILBOX1: u32 = 0x0011_0044;
/// `NV_PFALCON_FALCON_HWCFG2` of the GSP.
pub const HWCFG2: u32 = 0x0011_00f4;
/// `NV_PGSP_FALCON_ENGINE`.
pub const FALCON_ENGINE: u32 = 0x0011_03c0;
/// `NV_PGSP_QUEUE_HEAD(0)`: the doorbell.
pub const QUEUE_HEAD0: u32 = 0x0011_0c00;
/// `NV_PRISCV_RISCV_CPUCTL` of the GSP.
pub const RISCV_CPUCTL: u32 = 0x0011_1388;
/// First and last byte of `NV_PGSP`.
const GSP_RANGE: (u32, u32) = (0x0011_0000, 0x0011_3fff);

/// `NV_PFALCON_FALCON_HWCFG2_RISCV_BR_PRIV_LOCKDOWN` (13:13).
pub const HWCFG2_LOCKDOWN: u32 = 1 << 13;
/// HWCFG2 once the target mask is released: RISCV (bit 10) and PKCBOOT (bit 2) present,
/// memory scrubbing done (bit 12 clear).
const HWCFG2_VALUE: u32 = (1 << 10) | (1 << 2);
/// What a PRIV read returns while the target mask is locked to the FSP (the low byte is
/// extra error information, `_kfspIsGspTargetMaskReleased`).
pub const PRIV_TARGET_LOCKED: u32 = 0xbadf_4100;
/// `ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT` (`nverror.h`): Xid 31.
pub const XID_MMU_FAULT: u32 = 31;
/// `ROBUST_CHANNEL_GR_EXCEPTION`: Xid 13.
pub const XID_GR_EXCEPTION: u32 = 13;
/// `ROBUST_CHANNEL_PBDMA_ERROR`: Xid 32.
pub const XID_PBDMA_ERROR: u32 = 32;

/// How long the target mask stays locked after the FSP starts the FMC, and how long the
/// FMC runs before releasing the lockdown (simulated time; real parts take milliseconds).
const TARGET_MASK_NS: u64 = 300_000;
const FMC_NS: u64 = 300_000;

/// Where the GSP is.
#[derive(Debug)]
enum Phase {
    /// Waiting for the FSP.
    Idle,
    /// The FSP started the FMC; the PRIV target mask is still locked to the FSP.
    TargetMaskLocked {
        until_ns: u64,
        boot_params: u64,
        frts: (u64, u64),
    },
    /// The FMC runs, lockdown held.
    Fmc {
        until_ns: u64,
        boot_params: u64,
        frts: (u64, u64),
    },
    /// The FMC failed: its code is in MAILBOX0, the lockdown stays.
    FmcFailed,
    /// GSP-RM runs.
    Rm(Box<Rm>),
    /// The RISC-V core halted (unloaded, or GSP-RM could not start).
    Halted,
}

/// The GSP unit.
#[derive(Debug)]
pub struct Gsp {
    phase: Phase,
    mailbox: [u32; 2],
    /// `NV_PGSP_FALCON_ENGINE` reset asserted.
    in_reset: bool,
    /// The doorbell rang since GSP-RM last looked.
    doorbell: bool,
    /// Other registers of the range, read back as written.
    regs: BTreeMap<u32, u32>,
    /// Events raised by signals, sent once GSP-RM runs.
    pending_errors: Vec<(u32, String)>,
    silent_noted: bool,
    /// Booter path: the GSP's falcon (FWSEC runs on it; the booter starts its RISC-V core).
    falcon: Option<FalconCore>,
    /// Booter path: the VBIOS's FWSEC.
    fwsec: Option<Fwsec>,
}

/// The GSP falcon's IMEM and DMEM on the booter path (the simulator's size: FWSEC needs a
/// few KiB).
const FALCON_MEM: usize = 64 << 10;

impl Gsp {
    /// Power-on state.
    pub fn new(spec: &ChipSpec) -> Gsp {
        let booter = spec.booter.is_some();
        Gsp {
            falcon: booter.then(|| {
                FalconCore::new("gsp", GSP_RANGE.0, true, FALCON_MEM, FALCON_MEM)
                    .with_turing(spec.is_turing())
            }),
            fwsec: if booter { Fwsec::of(spec) } else { None },
            phase: Phase::Idle,
            mailbox: [0; 2],
            in_reset: false,
            doorbell: false,
            regs: BTreeMap::new(),
            pending_errors: Vec::new(),
            silent_noted: false,
        }
    }

    fn hwcfg2(&self) -> u32 {
        match &self.phase {
            Phase::TargetMaskLocked { .. } => PRIV_TARGET_LOCKED | 0x0f,
            Phase::Fmc { .. } | Phase::FmcFailed => HWCFG2_VALUE | HWCFG2_LOCKDOWN,
            Phase::Idle => HWCFG2_VALUE | HWCFG2_LOCKDOWN,
            Phase::Rm(_) | Phase::Halted => HWCFG2_VALUE,
        }
    }

    fn cpuctl(&self) -> u32 {
        match self.phase {
            Phase::Rm(_)
            | Phase::Fmc { .. }
            | Phase::FmcFailed
            | Phase::TargetMaskLocked { .. } => 1 << 7,
            Phase::Idle | Phase::Halted => 1 << 4,
        }
    }

    /// Runs the FMC and starts GSP-RM, or leaves its error in MAILBOX0.
    fn finish_fmc(&mut self, cx: &mut Cx, boot_params: u64, frts: (u64, u64)) {
        let boot = match fmc::run(cx, boot_params, frts) {
            Ok(b) => b,
            Err(e) => {
                cx.log.warn(
                    "gsp",
                    format!("{e}; the lockdown stays, MAILBOX0 = {:#x}", e.code()),
                );
                self.mailbox[0] = e.code();
                self.phase = Phase::FmcFailed;
                return;
            }
        };
        cx.world.wpr2 = boot.wpr.registers();
        cx.log.info(
            "gsp",
            format!(
                "GSP-FMC: WPR2 {:#x}..{:#x} raised, heap at {:#x}, lockdown released",
                boot.wpr.wpr_start, boot.wpr.wpr_end, boot.wpr.heap
            ),
        );
        self.start_rm(cx, boot.logs, boot.rm_args, boot.wpr);
    }

    /// GSP-RM starts: it links its message queues from `rm_args` (or halts).
    fn start_rm(
        &mut self,
        cx: &mut Cx,
        logs: Vec<libos_log::LogBuffer>,
        rm_args: nvbare_gsp::abi::GspArgumentsCached,
        wpr: fmc::WprLayout,
    ) {
        let args = rm_args.message_queue_init_arguments;
        let linked =
            SharedArea::new(cx.bus, &args).and_then(|area| Queues::link(cx.bus, area, &args));
        match linked {
            Ok(q) => {
                let (cmd_entries, stat_entries) = q.entries();
                let mut rm = Rm::new(cx, q, logs, wpr);
                rm.log(
                    cx,
                    "LOGINIT",
                    LogMessage::QueuesLinked,
                    &[u64::from(cmd_entries), u64::from(stat_entries)],
                );
                cx.log.info("gsp", "GSP-RM: message queues linked");
                self.phase = Phase::Rm(Box::new(rm));
            }
            Err(e) => {
                cx.log.warn(
                    "gsp",
                    format!("GSP-RM cannot link its message queues: {e}; it halts"),
                );
                self.phase = Phase::Halted;
            }
        }
    }
}

/// Booter path: whether a GSP register is the falcon's ([`FalconCore`]): everything but the
/// GSP's own block at 0x110800..0x110fff (`NV_PGSP_MAILBOX(i)` 0x110804, `NV_PGSP_QUEUE_HEAD/
/// TAIL(i)` 0x110c00.., dev_gsp.h).
fn falcon_owned(offset: u32) -> bool {
    !(0x0011_0800..0x0011_1000).contains(&offset)
}

/// The `NV2080_ENGINE_TYPE` of an engine.
fn rm_engine_type(e: Engine) -> u32 {
    match e {
        Engine::Graphics => 0x01,
        Engine::Copy(i) => 0x09 + i,
    }
}

/// The events GSP-RM sends for a channel error: an Xid in OS_ERROR_LOG, then RC_TRIGGERED
/// (`rpc_os_error_log_v17_00`, `rpc_rc_triggered_v17_02`; `_kgspRpcOsErrorLog`,
/// `_kgspRpcRCTriggered`).
fn channel_error_events(
    rm: &mut Rm,
    cx: &Cx,
    token: u32,
    xid: u32,
    fault: Option<&MmuFaultRecord>,
    text: &str,
) {
    let ch = cx.world.channels.get(&token);
    let (chid, runlist, engine) = ch.map_or((token & 0xffff, token >> 16, Engine::Graphics), |c| {
        (c.chid, c.runlist, c.engine)
    });
    let mut log = RpcOsErrorLog::new_zeroed();
    log.except_type = xid;
    log.runlist_id = runlist;
    log.chid = chid;
    let n = text.len().min(log.err_string.len() - 1);
    log.err_string[..n].copy_from_slice(&text.as_bytes()[..n]);
    rm.event(RpcEvent::OsErrorLog, log.as_bytes().to_vec());
    let mut rc = RpcRcTriggered {
        nv2080_engine_type: rm_engine_type(engine),
        chid,
        except_type: xid,
        // ROBUST_CHANNEL_ERROR_SCOPE? 0: the channel.
        scope: 0,
        ..Default::default()
    };
    if let Some(f) = fault {
        // CAST: the halves of the fault address.
        rc.mmu_fault_addr_lo = f.va as u32;
        rc.mmu_fault_addr_hi = (f.va >> 32) as u32;
        rc.mmu_fault_type = f.fault_type;
    }
    rm.event(RpcEvent::RcTriggered, rc.as_bytes().to_vec());
}

impl Unit for Gsp {
    fn name(&self) -> &'static str {
        "gsp"
    }

    fn claims(&self, _spec: &ChipSpec, offset: u32) -> bool {
        (GSP_RANGE.0..=GSP_RANGE.1).contains(&offset)
    }

    fn read(&mut self, cx: &mut Cx, offset: u32) -> u32 {
        if let Some(f) = self.falcon.as_mut().filter(|_| falcon_owned(offset)) {
            return f.read(cx.now_ns, offset);
        }
        match offset {
            MAILBOX0 => self.mailbox[0],
            MAILBOX1 => self.mailbox[1],
            HWCFG2 => self.hwcfg2(),
            // RESET_STATUS (10:8): ASSERTED 0, DEASSERTED 2.
            FALCON_ENGINE => u32::from(self.in_reset) | if self.in_reset { 0 } else { 2 << 8 },
            RISCV_CPUCTL => self.cpuctl(),
            o => {
                if !self.regs.contains_key(&o) {
                    cx.log
                        .debug("gsp", format!("read of unmodelled GSP register {o:#x}"));
                }
                self.regs.get(&o).copied().unwrap_or(0)
            }
        }
    }

    fn write(&mut self, cx: &mut Cx, offset: u32, value: u32) {
        if let Some(f) = self.falcon.as_mut().filter(|_| falcon_owned(offset)) {
            f.write(cx, offset, value);
            if offset == FALCON_ENGINE && value & 1 == 1 && matches!(self.phase, Phase::Rm(_)) {
                cx.log.warn(
                    "gsp",
                    "GSP falcon reset asserted while GSP-RM ran: it halts",
                );
                self.phase = Phase::Halted;
                cx.world.rm_objects = Default::default();
            }
            return;
        }
        match offset {
            MAILBOX0 => self.mailbox[0] = value,
            MAILBOX1 => self.mailbox[1] = value,
            HWCFG2 | RISCV_CPUCTL => cx.log.warn(
                "gsp",
                format!("write of {value:#x} to read-only GSP register {offset:#x} ignored"),
            ),
            QUEUE_HEAD0 => {
                self.doorbell = true;
                self.regs.insert(offset, value);
            }
            FALCON_ENGINE => {
                self.in_reset = value & 1 == 1;
                if self.in_reset && matches!(self.phase, Phase::Rm(_)) {
                    cx.log.warn(
                        "gsp",
                        "GSP falcon reset asserted while GSP-RM ran: it halts",
                    );
                    self.phase = Phase::Halted;
                }
            }
            o => {
                self.regs.insert(o, value);
            }
        }
    }

    fn step(&mut self, cx: &mut Cx) -> bool {
        if self.falcon.as_mut().is_some_and(|f| f.take_start()) {
            self.run_fwsec(cx);
            return true;
        }
        let sequencer_ran = self.regs.get(&rpc::SEQ_MAILBOX2) == Some(&rpc::SEQ_TOKEN)
            && self
                .regs
                .get(&rpc::SEQ_MAILBOX3)
                .is_some_and(|v| v & 1 == 1);
        match &mut self.phase {
            Phase::TargetMaskLocked {
                until_ns,
                boot_params,
                frts,
            } => {
                if cx.now_ns < *until_ns {
                    return false;
                }
                // The FMC clears the mailboxes when it starts (_kgspLockdownReleasedOrFmcError).
                self.mailbox = [0; 2];
                self.phase = Phase::Fmc {
                    until_ns: cx.now_ns + FMC_NS,
                    boot_params: *boot_params,
                    frts: *frts,
                };
                true
            }
            Phase::Fmc {
                until_ns,
                boot_params,
                frts,
            } => {
                if cx.now_ns < *until_ns {
                    return false;
                }
                let (b, f) = (*boot_params, *frts);
                self.finish_fmc(cx, b, f);
                true
            }
            Phase::Rm(rm) => {
                if cx.faults.gsp_silent {
                    if !self.silent_noted {
                        cx.log
                            .warn("fault", "GSP-RM is silent: no GSP_INIT_DONE, no replies");
                        self.silent_noted = true;
                    }
                    return false;
                }
                let mut busy = false;
                while let Some(f) = cx.world.mmu_faults.pop_front() {
                    busy = true;
                    let text = format!(
                        "MMU Fault: ENGINE {:?} {} at VA {:#x} (fault type {:#x})",
                        f.engine,
                        if f.access == Access::Write {
                            "write"
                        } else {
                            "read"
                        },
                        f.va,
                        f.fault_type
                    );
                    rm.db.mmu_faults.push((f.token, f.va, f.fault_type));
                    rm.log(
                        cx,
                        "LOGRM",
                        LogMessage::ChannelFault,
                        &[u64::from(f.token & 0xffff), f.va],
                    );
                    // MMU_FAULT_QUEUED carries no payload: the kernel RM reads the fault buffer.
                    rm.event(RpcEvent::MmuFaultQueued, Vec::new());
                    channel_error_events(rm, cx, f.token, XID_MMU_FAULT, Some(&f), &text);
                }
                for (token, reason) in std::mem::take(&mut self.pending_errors) {
                    busy = true;
                    let xid = match cx.world.channels.get(&token).map(|c| c.engine) {
                        Some(Engine::Graphics) => XID_GR_EXCEPTION,
                        _ => XID_PBDMA_ERROR,
                    };
                    channel_error_events(rm, cx, token, xid, None, &reason);
                }
                let doorbell = std::mem::take(&mut self.doorbell);
                rm.sequencer_ran = sequencer_ran;
                let p = rm.step(cx, doorbell);
                cx.world.rm_objects = rm.db.count();
                if let Some(keep_wpr2) = p.halted {
                    cx.world.rm_objects = Default::default();
                    // LIBOS_INTERRUPT_PROCESSOR_SUSPENDED before the halt
                    // (_kgspIsProcessorSuspended, kernel_gsp_tu102.c).
                    self.mailbox[0] = 0x8000_0000;
                    if let Some(f) = self.falcon.as_mut() {
                        f.mailbox[0] = 0x8000_0000;
                        f.riscv_active = false;
                        cx.log.info(
                            "gsp",
                            "GSP-RM unloaded and halted; WPR2 stays up for the booter unloader",
                        );
                    } else if !keep_wpr2 {
                        cx.world.wpr2 = (0, 0);
                        cx.log
                            .info("gsp", "GSP-RM unloaded and halted; WPR2 lowered");
                    } else {
                        cx.log
                            .info("gsp", "GSP-RM unloaded for a power transition; WPR2 kept");
                    }
                    self.phase = Phase::Halted;
                    cx.signal(Signal::GspHalted);
                    return true;
                }
                busy || p.busy
            }
            Phase::Idle | Phase::FmcFailed | Phase::Halted => false,
        }
    }

    fn signal(&mut self, cx: &mut Cx, signal: &Signal) {
        match signal {
            Signal::GspFmcStarted {
                boot_params,
                frts_vidmem,
            } => {
                // A halted core boots again (after a clean unload); a failed FMC needs a reset.
                if !matches!(self.phase, Phase::Idle | Phase::Halted) {
                    cx.log.warn(
                        "gsp",
                        "the FSP started the FMC on a GSP that is not idle; ignored",
                    );
                    return;
                }
                self.phase = Phase::TargetMaskLocked {
                    until_ns: cx.now_ns + TARGET_MASK_NS,
                    boot_params: *boot_params,
                    frts: *frts_vidmem,
                };
            }
            Signal::ChannelError { token, reason } => {
                if matches!(self.phase, Phase::Rm(_)) {
                    self.pending_errors.push((*token, reason.clone()));
                }
            }
            Signal::BooterStartedGsp { wpr } => self.booter_started(cx, *wpr),
            Signal::Reset | Signal::GspHalted => {}
        }
    }
}
