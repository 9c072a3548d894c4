//! The GSP on the booter path (GA102, AD102): FWSEC on its falcon core, GSP-RM started on its
//! RISC-V core by the booter ([`Signal::BooterStartedGsp`](crate::device::Signal)).

use super::{Gsp, Phase, fmc};
use crate::device::Cx;
use crate::memory::Target;
use crate::units::falcon::fwsec::{FwsecCommand, SCRATCH_FRTS, SCRATCH_SB};

impl Gsp {
    /// Booter path: `booter_load` started the RISC-V core; GSP-RM boots with the libos
    /// arguments whose address the driver put in MAILBOX0/1 (`kgspBootstrapRiscvOSEarly_TU102`
    /// writes them before running the booter; tinygrad's `init_hw` the same).
    pub(super) fn booter_started(&mut self, cx: &mut Cx, wpr: fmc::WprLayout) {
        let Some(f) = self.falcon.as_mut() else {
            return;
        };
        // Turing has no core select: its GSP runs RISC-V after reset (kflcnSwitchToFalcon_TU102
        // does nothing; tu102 dev_riscv_pri.h has no BCR_CTRL).
        if f.in_reset || !(f.turing || f.riscv_selected()) {
            cx.log.warn(
                "gsp",
                "the booter started the GSP's RISC-V core, but the GSP is held in reset or its \
                 falcon core is selected (RISCV_BCR_CTRL.CORE_SELECT = 0): nothing runs",
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
        let ran = if fw.needs_loader() {
            fw.run_with_loader(cx, f, cx.spec.vram_bytes)
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
