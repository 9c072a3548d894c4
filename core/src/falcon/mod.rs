//! Falcon control from the CPU, below the boot and testable without a GPU: what the booter
//! path (Turing to Ada) does to the GSP and SEC2 falcons to run heavy-secure (HS) ucode on
//! them (FWSEC, booter) and to hand the GSP to its RISC-V core.
//!
//! | step | function | OpenRM |
//! |---|---|---|
//! | reset, scrub wait, falcon mode | [`Falcon::reset`] | `kflcnReset_TU102`, `kflcnPreResetWait_GA102`, `kgspResetHw_TU102`, `kflcnWaitForResetToFinish_TU102/_GA102` |
//! | reset into RISC-V | [`Falcon::reset_into_riscv`] | `kflcnResetIntoRiscv_TU102/_GA102`, `kflcnRiscvProgramBcr_GA102` |
//! | FBIF aperture | [`Falcon::use_physical_sysmem`] | `kflcnDisableCtxReq_TU102`, `kgspExecuteHsFalcon_GA102` |
//! | IMEM/DMEM by PIO | [`Falcon::imem_pio`], [`Falcon::dmem_pio`] | `s_imemCopyTo_TU102`, `s_dmemCopyTo_TU102` |
//! | IMEM/DMEM by DMA | [`Falcon::dma_load`] | `s_dmaTransfer_GA102` |
//! | BROM parameters | [`Falcon::set_brom_params`] | `kgspExecuteHsFalcon_GA102` |
//! | boot vector, mailboxes, start, halt | [`Falcon::set_boot_vector`], [`Falcon::set_mailboxes`], [`Falcon::start_cpu`], [`Falcon::wait_halted`] | `kflcnStartCpu_TU102`, `kflcnWaitForHalt_TU102` |
//! | run an HS ucode | [`hs::execute`] | `kgspExecuteHsFalcon_TU102/_GA102` |
//!
//! What differs by chip is in [`FalconHal`] ([`hal::Tu102`] for TU10x and GA100,
//! [`hal::Ga102`] for GA10x and AD10x), which the boot HAL picks.

pub mod hal;
pub mod hs;
mod load;

#[cfg(test)]
mod tests;

use core::fmt;

pub use hal::FalconHal;
pub use load::{BromParams, DmaTarget, MemLoad};

use crate::hal::{Bar0, Clock, TimedOut, Wait, poll_until};
use crate::regs::falcon::{
    FalconCpuctl, FalconCpuctlAlias, FalconEngine, FalconMailbox0, FalconMailbox1, FalconOs,
};
use crate::regs::falcon_hs::FalconRm;
use crate::regs::{FalconBase, FbifBase, PmcBoot0, RiscvBase};

/// A falcon engine the CPU drives on the booter path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// The GSP (FWSEC runs on its falcon core, GSP-RM on its RISC-V core).
    Gsp,
    /// SEC2 (the booter runs on it).
    Sec2,
}

impl Engine {
    /// The falcon register base.
    pub const fn base(self) -> FalconBase {
        match self {
            Engine::Gsp => FalconBase::GSP,
            Engine::Sec2 => FalconBase::SEC2,
        }
    }

    /// The FBIF register base.
    pub const fn fbif(self) -> FbifBase {
        self.base().fbif()
    }

    /// The RISC-V ("FALCON2") register base.
    pub const fn riscv(self) -> RiscvBase {
        self.base().riscv()
    }

    /// The engine's name in messages.
    pub const fn name(self) -> &'static str {
        match self {
            Engine::Gsp => "GSP",
            Engine::Sec2 => "SEC2",
        }
    }
}

/// Why a falcon operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FalconError {
    /// A wait ran out of time.
    TimedOut {
        /// The engine.
        engine: Engine,
        /// The wait.
        timed_out: TimedOut,
    },
    /// A load was asked with an offset or size the falcon cannot take.
    BadLoad {
        /// The engine.
        engine: Engine,
        /// What was wrong.
        what: &'static str,
        /// The value.
        value: u64,
    },
}

impl fmt::Display for FalconError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FalconError::TimedOut { engine, timed_out } => write!(
                f,
                "{} falcon: {timed_out}; the engine is wedged: reset the GPU (`nvbare reset`)",
                engine.name()
            ),
            FalconError::BadLoad {
                engine,
                what,
                value,
            } => write!(
                f,
                "{} falcon: cannot load {what} {value:#x} (IMEM/DMEM take 256-byte blocks of \
                 32-bit words); the ucode image is malformed",
                engine.name()
            ),
        }
    }
}

impl core::error::Error for FalconError {}

// TIMEOUT: RM's default GPU timeout (GPU_TIMEOUT_DEFAULT, 4 s on silicon) bounds the scrub
// wait (gpuTimeoutCondWait in kflcnWaitForResetToFinish_TU102/_GA102), the DMA queue and
// idle polls (s_dmaPoll_GA102), the core switch (kflcnSwitchToFalcon_GA102) and the halt
// after an HS ucode (kgspExecuteHsFalcon_* pass GPU_TIMEOUT_DEFAULT to kflcnWaitForHalt).
/// The bound of the falcon waits that OpenRM gives the default GPU timeout.
pub const DEFAULT_TIMEOUT_NS: u64 = 4_000_000_000;

/// Reads of `FALCON_ENGINE` after each reset edge (`FLCN_RESET_PROPAGATION_DELAY_COUNT`,
/// falcon_common.h: "reg read cycles needed for signal propagation").
const RESET_PROPAGATION_READS: u32 = 10;

/// One falcon engine over a register space.
pub struct Falcon<'a> {
    bar: &'a dyn Bar0,
    clock: &'a dyn Clock,
    engine: Engine,
    hal: &'static dyn FalconHal,
    timeout_ns: u64,
}

impl<'a> Falcon<'a> {
    /// `engine` on `bar`, with the chip's falcon HAL.
    pub fn new(
        bar: &'a dyn Bar0,
        clock: &'a dyn Clock,
        engine: Engine,
        hal: &'static dyn FalconHal,
    ) -> Self {
        Self {
            bar,
            clock,
            engine,
            hal,
            timeout_ns: DEFAULT_TIMEOUT_NS,
        }
    }

    /// The same falcon with another bound for its waits (tests, a caller's own budget).
    pub fn with_timeout_ns(mut self, timeout_ns: u64) -> Self {
        self.timeout_ns = timeout_ns;
        self
    }

    /// The engine.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    pub(crate) fn bar(&self) -> &&'a dyn Bar0 {
        &self.bar
    }

    pub(crate) fn read(&self, offset: u32) -> u32 {
        self.bar.read32(offset)
    }

    pub(crate) fn write(&self, offset: u32, value: u32) {
        self.bar.write32(offset, value)
    }

    /// Polls `probe` until it holds, for at most the falcon's timeout.
    pub(crate) fn wait(
        &self,
        what: &'static str,
        timeout_ns: u64,
        mut probe: impl FnMut(&Self) -> bool,
    ) -> Result<(), FalconError> {
        poll_until(&self.clock, Wait::spin(what, timeout_ns), || {
            probe(self).then_some(())
        })
        .map_err(|timed_out| FalconError::TimedOut {
            engine: self.engine,
            timed_out,
        })
    }

    pub(crate) fn timeout_ns(&self) -> u64 {
        self.timeout_ns
    }

    pub(crate) fn clock(&self) -> &&'a dyn Clock {
        &self.clock
    }

    /// Pulses the engine reset (`kgspResetHw_TU102`, `ksec2ResetHw_TU102`): `RESET` set,
    /// ten reads, cleared, ten reads.
    fn reset_hw(&self) {
        let base = self.engine.base();
        for assert in [true, false] {
            FalconEngine::read(&self.bar, base)
                .with_reset(assert)
                .write(&self.bar, base);
            for _ in 0..RESET_PROPAGATION_READS {
                let _ = FalconEngine::read(&self.bar, base);
            }
        }
    }

    /// Resets the engine into falcon mode (`kflcnReset_TU102`): the chip's pre-reset wait,
    /// the reset pulse, the IMEM/DMEM scrub wait, the core switched to falcon, and
    /// `FALCON_RM` = `NV_PMC_BOOT_0`.
    pub fn reset(&self) -> Result<(), FalconError> {
        self.hal.pre_reset_wait(self);
        self.reset_hw();
        self.wait_scrubbed()?;
        self.hal.select_falcon(self)?;
        FalconRm::from_raw(PmcBoot0::read(&self.bar).raw()).write(&self.bar, self.engine.base());
        Ok(())
    }

    /// Resets the engine ready to run its RISC-V core (`kflcnResetIntoRiscv_*`).
    pub fn reset_into_riscv(&self) -> Result<(), FalconError> {
        self.hal.pre_reset_wait(self);
        self.reset_hw();
        self.wait_scrubbed()?;
        self.hal.select_riscv(self);
        Ok(())
    }

    /// Waits until IMEM and DMEM are scrubbed after a reset.
    pub fn wait_scrubbed(&self) -> Result<(), FalconError> {
        let hal = self.hal;
        self.wait(
            "falcon IMEM/DMEM scrubbing to finish after reset",
            self.timeout_ns,
            |f| hal.scrubbing_done(f),
        )
    }

    /// Writes `BOOTVEC`, the IMEM address the falcon starts at.
    pub fn set_boot_vector(&self, address: u32) {
        self.write(
            crate::regs::falcon::FalconBootvec::address(self.engine.base()),
            address,
        );
    }

    /// Writes `MAILBOX0` and `MAILBOX1`.
    pub fn set_mailboxes(&self, mailbox0: u32, mailbox1: u32) {
        let base = self.engine.base();
        FalconMailbox0::default()
            .with_data(mailbox0)
            .write(&self.bar, base);
        FalconMailbox1::default()
            .with_data(mailbox1)
            .write(&self.bar, base);
    }

    /// Reads `MAILBOX0` and `MAILBOX1`.
    pub fn mailboxes(&self) -> (u32, u32) {
        let base = self.engine.base();
        (
            FalconMailbox0::read(&self.bar, base).data(),
            FalconMailbox1::read(&self.bar, base).data(),
        )
    }

    /// Writes `FALCON_OS` (the RISC-V bootloader's `appVersion`, after the booter).
    pub fn set_os_version(&self, version: u32) {
        FalconOs::default()
            .with_version(version)
            .write(&self.bar, self.engine.base());
    }

    /// Starts the falcon CPU through `CPUCTL_ALIAS` when `CPUCTL.ALIAS_EN` says so, else
    /// `CPUCTL` (`kflcnStartCpu_TU102`).
    pub fn start_cpu(&self) {
        let base = self.engine.base();
        if FalconCpuctl::read(&self.bar, base).alias_en() {
            FalconCpuctlAlias::default()
                .with_startcpu(true)
                .write(&self.bar, base);
        } else {
            FalconCpuctl::default()
                .with_startcpu(true)
                .write(&self.bar, base);
        }
    }

    /// Whether the falcon CPU is halted (`CPUCTL.HALTED`).
    pub fn halted(&self) -> bool {
        FalconCpuctl::read(&self.bar, self.engine.base()).halted()
    }

    /// Waits until the falcon CPU halts (`kflcnWaitForHalt_TU102`), at most `timeout_ns`.
    pub fn wait_halted(&self, timeout_ns: u64) -> Result<(), FalconError> {
        self.wait("the falcon CPU to halt (CPUCTL.HALTED)", timeout_ns, |f| {
            f.halted()
        })
    }

    /// Whether the engine's RISC-V core runs (`kflcnIsRiscvActive_*`).
    pub fn riscv_active(&self) -> bool {
        self.hal.riscv_active(self)
    }

    /// Whether the RISC-V core halted (`RISCV_CPUCTL.HALTED` on GA10x; not active on
    /// TU10x/GA100, which have no such register).
    pub fn riscv_halted_now(&self) -> bool {
        self.hal.riscv_halted(self)
    }

    /// Waits until the RISC-V core halts (`kflcnWaitForHaltRiscv_GA102`).
    pub fn wait_riscv_halted(&self, timeout_ns: u64) -> Result<(), FalconError> {
        let hal = self.hal;
        self.wait("the RISC-V core to halt", timeout_ns, |f| {
            hal.riscv_halted(f)
        })
    }
}
