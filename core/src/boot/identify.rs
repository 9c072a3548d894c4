//! Which chip, and whether a previous boot left it in secure state.
//!
//! `NV_PMC_BOOT_0` all ones means the device is gone; `NV_PMC_BOOT_42` names the chip
//! (`core::chip`). `NV_PFB_PRI_MMU_WPR2_ADDR_HI` non-zero means WPR2 is still up from an
//! earlier boot (`kgspIsWpr2Up_TU102`, used by `kgspIsWpr2Up_GH100`): GSP-FMC cannot boot
//! again until a reset clears it.

use super::error::BootErrorKind;
use super::hal::{self, ChipHal};
use super::report::Timeline;
use crate::chip::Chip;
use crate::hal::{Platform, PlatformError};
use crate::regs::fb::{PfbWpr2AddrHi, PfbWpr2AddrLo};
use crate::regs::{PmcBoot0, PmcBoot42};

/// `PCI_COMMAND` (PCI spec): memory space (bit 1) and bus master (bit 2) enables.
const PCI_COMMAND: u16 = 0x04;
const PCI_COMMAND_MEMORY: u32 = 1 << 1;
const PCI_COMMAND_MASTER: u32 = 1 << 2;

/// Turns the `set` bits of `PCI_COMMAND` on and its `clear` bits off (written only if it changes).
fn pci_command(
    p: &impl Platform,
    step: &'static str,
    set: u32,
    clear: u32,
) -> Result<(), BootErrorKind> {
    let platform = |source| BootErrorKind::Platform { step, source };
    let cmd = p.config_read(PCI_COMMAND, 2).map_err(platform)?;
    let want = (cmd | set) & !clear;
    if want != cmd {
        p.config_write(PCI_COMMAND, 2, want).map_err(platform)?;
    }
    Ok(())
}

/// Turns on memory decoding (BAR0/BAR1) in `PCI_COMMAND` and keeps bus mastering off: until
/// WPR2 is known down (or the GPU reset), a GSP-FMC or GSP-RM of an earlier boot may still
/// run, and with bus mastering on it could write host memory that is no longer its own.
pub fn enable_memory(p: &impl Platform) -> Result<(), BootErrorKind> {
    pci_command(
        p,
        "enabling memory decoding (bus mastering off) in PCI_COMMAND",
        PCI_COMMAND_MEMORY,
        PCI_COMMAND_MASTER,
    )
}

/// Turns on bus mastering (the GPU's DMA: FSP reads the FMC, GSP-RM its image and queues)
/// with memory decoding in `PCI_COMMAND`, once nothing of an earlier boot runs; a
/// function-level reset clears both.
pub fn enable_bus_master(p: &impl Platform) -> Result<(), BootErrorKind> {
    pci_command(
        p,
        "enabling memory decoding and bus mastering in PCI_COMMAND",
        PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER,
        0,
    )
}

/// Stops the GPU's DMA and resets it: bus mastering off first (so nothing reaches host
/// memory even where the reset is not available, as tinygrad does before its reset), then
/// the platform's reset. The next boot turns bus mastering back on ([`enable_bus_master`]).
pub fn quiesce_and_reset(p: &mut impl Platform) -> Result<(), PlatformError> {
    if let Ok(cmd) = p.config_read(PCI_COMMAND, 2) {
        let _ = p.config_write(PCI_COMMAND, 2, cmd & !PCI_COMMAND_MASTER);
    }
    p.reset()
}

/// Identifies the chip and picks its boot HAL (memory decoding on, bus mastering off).
pub fn identify(p: &impl Platform) -> Result<ChipHal, BootErrorKind> {
    enable_memory(p)?;
    if PmcBoot0::read(p).raw() == u32::MAX {
        return Err(BootErrorKind::gone("reading NV_PMC_BOOT_0"));
    }
    let boot42 = PmcBoot42::read(p);
    let chip = Chip::identify(boot42).map_err(BootErrorKind::UnknownChip)?;
    hal::for_chip(chip).ok_or(BootErrorKind::BootPathNotImplemented { chip })
}

/// WPR2's registers: `(ADDR_LO, ADDR_HI)`.
pub fn wpr2(p: &impl Platform) -> (u32, u32) {
    (PfbWpr2AddrLo::read(p).raw(), PfbWpr2AddrHi::read(p).raw())
}

/// WPR2's bounds in VRAM: `ADDR_LO.VAL << 12` and `ADDR_HI.VAL << 12` (`_ALIGNMENT` 12).
pub fn wpr2_bounds(p: &impl Platform) -> (u64, u64) {
    (
        u64::from(PfbWpr2AddrLo::read(p).val()) << 12,
        u64::from(PfbWpr2AddrHi::read(p).val()) << 12,
    )
}

/// Whether WPR2 is up.
pub fn wpr2_up(p: &impl Platform) -> bool {
    PfbWpr2AddrHi::read(p).val() != 0
}

/// Resets the GPU if WPR2 is up, then waits for the FSP and checks WPR2 came down; then
/// turns bus mastering on (nothing of an earlier boot runs any more). Returns whether a
/// reset was made.
pub fn reset_if_wpr2_up<P: Platform>(
    p: &mut P,
    hal: &ChipHal,
    tl: &mut Timeline,
    fsp_timeout_ns: u64,
) -> Result<bool, BootErrorKind> {
    let (_, hi) = wpr2(p);
    if hi == u32::MAX {
        return Err(BootErrorKind::gone("reading NV_PFB_PRI_MMU_WPR2_ADDR_HI"));
    }
    if !wpr2_up(p) {
        enable_bus_master(&*p)?;
        return Ok(false);
    }
    quiesce_and_reset(p).map_err(|source| BootErrorKind::Wpr2UpNoReset {
        wpr2_hi: hi,
        source,
    })?;
    enable_memory(&*p)?;
    // After a reset the FSP boots again before anything else may happen.
    super::fsp::wait_ready(&*p, hal, tl, fsp_timeout_ns)?;
    let (lo, hi) = wpr2(p);
    if wpr2_up(p) {
        return Err(BootErrorKind::Wpr2StillUp {
            wpr2_lo: lo,
            wpr2_hi: hi,
        });
    }
    enable_bus_master(&*p)?;
    Ok(true)
}
