//! What differs between falcon generations on the booter path.
//!
//! | | [`Tu102`] (TU10x, GA100) | [`Ga102`] (GA10x, AD10x) |
//! |---|---|---|
//! | pre-reset wait | none | `HWCFG2.RESET_READY`, 150 us, then on regardless (`kflcnPreResetWait_GA102`, bug 3419321) |
//! | scrub done | `DMACTL.DMEM/IMEM_SCRUBBING` 0 (`_kflcnMemScrubbingFinished`) | `HWCFG2.MEM_SCRUBBING` 0 (`_kflcnWaitForScrubbingToFinish`) |
//! | core select | none: the core runs RISC-V after reset (`kflcnSwitchToFalcon_TU102`) | `RISCV_BCR_CTRL` (`kflcnRiscvProgramBcr_GA102`, `kflcnSwitchToFalcon_GA102`) |
//! | HS ucode load | PIO, direct (`s_prepareHsFalconDirect`) | DMA from sysmem with BROM parameters (`kgspExecuteHsFalcon_GA102`) |
//! | RISC-V running | `RISCV_CORE_SWITCH_RISCV_STATUS.ACTIVE_STAT` | `RISCV_CPUCTL.ACTIVE_STAT` |

use super::{Falcon, FalconError};
use crate::hal::Deadline;
use crate::regs::falcon::{FalconDmactl, FalconHwcfg2, RiscvBcrCtrl, RiscvCpuctl};

/// The falcon generation's differences.
pub trait FalconHal: Sync {
    /// The generation's name, for reports.
    fn name(&self) -> &'static str;
    /// Whether HS ucode boots from sysmem by DMA with BROM parameters (`bBootFromHs`), else
    /// by PIO.
    fn boots_from_hs(&self) -> bool;
    /// Waits (bounded, never failing) for the engine to be ready for reset.
    fn pre_reset_wait(&self, f: &Falcon<'_>);
    /// Whether IMEM and DMEM scrubbing finished.
    fn scrubbing_done(&self, f: &Falcon<'_>) -> bool;
    /// Switches the core to falcon mode.
    fn select_falcon(&self, f: &Falcon<'_>) -> Result<(), FalconError>;
    /// Selects the RISC-V core for the next start.
    fn select_riscv(&self, f: &Falcon<'_>);
    /// Whether the RISC-V core is active.
    fn riscv_active(&self, f: &Falcon<'_>) -> bool;
    /// Whether the RISC-V core halted.
    fn riscv_halted(&self, f: &Falcon<'_>) -> bool;
}

/// TU10x and GA100: no core switch, PIO loads, scrubbing in `DMACTL`.
#[derive(Clone, Copy, Debug)]
pub struct Tu102;

/// GA10x and AD10x: BCR core select, DMA loads with BROM parameters, scrubbing in `HWCFG2`.
#[derive(Clone, Copy, Debug)]
pub struct Ga102;

/// `NV_PRISCV_RISCV_CORE_SWITCH_RISCV_STATUS` (TU102 `dev_riscv_pri.h`, RISC-V base +
/// 0x240): bit 0 `ACTIVE_STAT` (`kflcnIsRiscvActive_TU102`).
const TU102_CORE_SWITCH_RISCV_STATUS: u32 = 0x240;

impl FalconHal for Tu102 {
    fn name(&self) -> &'static str {
        "TU102"
    }

    fn boots_from_hs(&self) -> bool {
        false
    }

    fn pre_reset_wait(&self, _f: &Falcon<'_>) {}

    fn scrubbing_done(&self, f: &Falcon<'_>) -> bool {
        let d = FalconDmactl::read(f.bar(), f.engine().base());
        !d.dmem_scrubbing() && !d.imem_scrubbing()
    }

    fn select_falcon(&self, _f: &Falcon<'_>) -> Result<(), FalconError> {
        Ok(())
    }

    fn select_riscv(&self, _f: &Falcon<'_>) {}

    fn riscv_active(&self, f: &Falcon<'_>) -> bool {
        f.read(f.engine().riscv().0 + TU102_CORE_SWITCH_RISCV_STATUS) & 1 != 0
    }

    fn riscv_halted(&self, f: &Falcon<'_>) -> bool {
        !self.riscv_active(f)
    }
}

// TIMEOUT: kflcnPreResetWait_GA102 waits PRE_RESET_TIMEOUT_US (150 us) on silicon for
// HWCFG2.RESET_READY, then resets anyway ("Bug 3419321: this sometimes may not get set by HW").
const PRE_RESET_TIMEOUT_NS: u64 = 150_000;

impl FalconHal for Ga102 {
    fn name(&self) -> &'static str {
        "GA102"
    }

    fn boots_from_hs(&self) -> bool {
        true
    }

    fn pre_reset_wait(&self, f: &Falcon<'_>) {
        let deadline = Deadline::after(f.clock(), PRE_RESET_TIMEOUT_NS);
        while !FalconHwcfg2::read(f.bar(), f.engine().base()).reset_ready()
            && !deadline.expired(f.clock())
        {
            core::hint::spin_loop();
        }
    }

    fn scrubbing_done(&self, f: &Falcon<'_>) -> bool {
        !FalconHwcfg2::read(f.bar(), f.engine().base()).mem_scrubbing()
    }

    fn select_falcon(&self, f: &Falcon<'_>) -> Result<(), FalconError> {
        let base = f.engine().base();
        if !FalconHwcfg2::read(f.bar(), base).riscv() {
            return Ok(());
        }
        let riscv = f.engine().riscv();
        if !RiscvBcrCtrl::read(f.bar(), riscv).core_select() {
            return Ok(());
        }
        RiscvBcrCtrl::default()
            .with_core_select(false)
            .write(f.bar(), riscv);
        f.wait(
            "the core switch to falcon (RISCV_BCR_CTRL.VALID)",
            f.timeout_ns(),
            |f| RiscvBcrCtrl::read(f.bar(), riscv).valid(),
        )
    }

    fn select_riscv(&self, f: &Falcon<'_>) {
        // kflcnRiscvProgramBcr_GA102 with bBRFetch = true.
        RiscvBcrCtrl::default()
            .with_core_select(true)
            .with_valid(true)
            .with_brfetch(true)
            .write(f.bar(), f.engine().riscv());
    }

    fn riscv_active(&self, f: &Falcon<'_>) -> bool {
        RiscvCpuctl::read(f.bar(), f.engine().riscv()).active_stat()
    }

    fn riscv_halted(&self, f: &Falcon<'_>) -> bool {
        RiscvCpuctl::read(f.bar(), f.engine().riscv()).halted()
    }
}
