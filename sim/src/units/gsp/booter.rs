//! The GSP on the booter path (GA102, AD102, GA100, TU102): FWSEC on its falcon core (on
//! GA100 and TU102 through the generic bootloader, [`loader`]), GSP-RM started on its RISC-V
//! core by the booter ([`Signal::BooterStartedGsp`](crate::device::Signal)).
//!
//! After a reset the falcon is devinit's until devinit's FWSEC halts on it
//! (`World::devinit_halt_ns`, a little after GFW boot reads complete): `CPUCTL.HALTED`
//! reads clear and the driver's writes to the falcon are refused. OpenRM waits for that halt
//! before it even reads the GFW boot progress (`gpuWaitForGfwBootComplete_TU102`,
//! kern_gpu_tu102.c: `kflcnWaitForHalt_HAL` on the GSP falcon, then
//! `_gpuIsGfwBootCompleted_TU102`), and resets the falcon for FWSEC-FRTS only after it
//! (`kgspBootstrap_TU102`); a driver that goes by the progress alone may cut devinit short.

use super::{Gsp, Phase, fmc};
use crate::chip::FalconGen;
use crate::device::Cx;
use crate::memory::Target;
use crate::units::falcon::fwsec::{FwsecCommand, SCRATCH_FRTS, SCRATCH_SB};
use crate::units::falcon::loader;

/// `NV_PFALCON_FALCON_CPUCTL` of the GSP falcon.
const FALCON_CPUCTL: u32 = 0x0011_0100;
/// Its `HALTED` bit.
const CPUCTL_HALTED: u32 = 1 << 4;

/// Whether devinit's FWSEC still runs on the GSP falcon (after a reset, until it halts).
pub(super) fn devinit_runs(cx: &Cx) -> bool {
    cx.now_ns < cx.world.devinit_halt_ns
}

impl Gsp {
    /// A read of the falcon's `offset` as devinit's FWSEC runs: `CPUCTL.HALTED` clear.
    pub(super) fn devinit_read(offset: u32, value: u32) -> u32 {
        if offset == FALCON_CPUCTL {
            value & !CPUCTL_HALTED
        } else {
            value
        }
    }

    /// A write to the falcon while devinit's FWSEC runs on it: refused.
    pub(super) fn devinit_write(cx: &mut Cx, offset: u32, value: u32) {
        cx.log.warn(
            "gsp",
            format!(
                "write of {value:#x} to GSP falcon register {offset:#x} refused: devinit's \
                 FWSEC still runs on the GSP falcon (CPUCTL.HALTED reads 0); wait for the \
                 halt first, as gpuWaitForGfwBootComplete_TU102 does (kflcnWaitForHalt) \
                 before it reads GFW_BOOT"
            ),
        );
    }

    /// Booter path: `booter_load` started the RISC-V core; GSP-RM boots with the libos
    /// arguments whose address the driver put in MAILBOX0/1 (`kgspBootstrapRiscvOSEarly_TU102`
    /// writes them before running the booter; tinygrad's `init_hw` the same).
    pub(super) fn booter_started(&mut self, cx: &mut Cx, wpr: fmc::WprLayout) {
        let Some(f) = self.falcon.as_mut() else {
            return;
        };
        if f.in_reset || !f.riscv_selected() {
            let why = match f.generation {
                FalconGen::Ga102 => "its falcon core is selected (RISCV_BCR_CTRL.CORE_SELECT = 0)",
                FalconGen::Tu102 => {
                    "its falcon core ran since the last reset (TU10x/GA100 have no core switch: \
                     reset the GSP before the booter, kflcnResetIntoRiscv_TU102)"
                }
            };
            cx.log.warn(
                "gsp",
                format!(
                    "the booter started the GSP's RISC-V core, but the GSP is held in reset or \
                     {why}: nothing runs"
                ),
            );
            return;
        }
        if !matches!(self.phase, Phase::Idle | Phase::Halted) {
            cx.log
                .warn("gsp", "the booter started a GSP that is not idle; ignored");
            return;
        }
        let args = u64::from(f.mailbox[1]) << 32 | u64::from(f.mailbox[0]);
        f.riscv_active = true;
        match fmc::read_libos_args(cx, Target::Bus(args)) {
            Ok((logs, rm_args)) => self.start_rm(cx, logs, rm_args, wpr),
            Err(e) => {
                cx.log.warn(
                    "gsp",
                    format!(
                        "GSP-RM: the libos arguments at {args:#x} (MAILBOX0/1): {}; it halts",
                        e.why
                    ),
                );
                self.phase = Phase::Halted;
            }
        }
        if let (Phase::Halted, Some(f)) = (&self.phase, self.falcon.as_mut()) {
            f.riscv_active = false;
        }
    }

    /// Booter path: the falcon started; FWSEC runs if that is what it holds.
    pub(super) fn run_fwsec(&mut self, cx: &mut Cx) {
        let (Some(f), Some(fw)) = (self.falcon.as_mut(), self.fwsec.as_ref()) else {
            return;
        };
        let fuse = crate::units::gfw::fwsec_fuse_version(cx);
        let ran = if fw.is_v2() {
            loader::run(cx, f).and_then(|bl| fw.run_v2(f, &bl, cx.spec.vram_bytes))
        } else {
            fw.run(f, fuse, cx.spec.vram_bytes)
        };
        match ran {
            Ok(FwsecCommand::Frts { offset, size }) => {
                if cx.world.wpr2.1 != 0 {
                    cx.log.warn(
                        "gsp",
                        "FWSEC-FRTS: WPR2 is already up (a previous boot was not unloaded); \
                         FRTS error 1 in NV_PBUS_VBIOS_SCRATCH(0xe)",
                    );
                    cx.world.vbios_scratch.insert(SCRATCH_FRTS, 1 << 16);
                } else {
                    let w = fmc::WprLayout {
                        non_wpr_heap: offset,
                        wpr_start: offset,
                        heap: offset,
                        gsp_fw: offset,
                        boot_bin: offset,
                        frts: offset,
                        wpr_end: offset + size,
                    };
                    cx.world.wpr2 = w.registers();
                    cx.world.vbios_scratch.insert(SCRATCH_FRTS, 0);
                    cx.log.info(
                        "gsp",
                        format!("FWSEC-FRTS: FRTS at {offset:#x}+{size:#x}, WPR2 raised over it"),
                    );
                }
            }
            Ok(FwsecCommand::Sb) => {
                cx.world.vbios_scratch.insert(SCRATCH_SB, 0);
                cx.log.info("gsp", "FWSEC-SB ran");
            }
            Err(e) => {
                cx.log.warn(
                    "gsp",
                    format!("the GSP falcon's boot ROM refuses the ucode: {e}"),
                );
                cx.world.vbios_scratch.insert(SCRATCH_FRTS, 2 << 16);
            }
        }
        f.halt(f.mailbox[0]);
    }
}
