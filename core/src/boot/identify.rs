//! Which chip, whether it is ready to be touched, and whether a previous boot left it in
//! secure state.
//!
//! The order is OpenRM's after a function-level reset (`kbifDoFunctionLevelReset_GH100`),
//! which is where every VFIO run starts: vfio-pci resets the function when the device is
//! opened (`vfio_pci_core_enable`). So before any BAR0 read:
//! 1. config space must answer with NVIDIA's vendor id (`kbifConfigAccessWait_GH100` polls
//!    `NV_EP_PCFG_GPU_ID` for up to `BIF_FLR_DEVINIT_COMPLETION_TIMEOUT_DEFAULT`, 900 ms);
//! 2. on GB20x the BAR firewall must be disengaged: config 0x2b8
//!    (`NV_EP_PCFG_GPU_VSEC_DEBUG_SEC_2`) bit 24 `_BAR_FIREWALL_ENGAGE` reads 0
//!    (`kbifPollBarFirewallDisengage_GB202`; blackwell/gb202/dev_xtl_ep_pcfg_gpu.h);
//! 3. the FSP must report its secure boot done (`kfspWaitForSecureBoot_GH100`/`_GB202`):
//!    `kgspWaitForGfwBootOk` runs before `kgspCalculateFbLayout` ("requires knowing FB size
//!    which depends on GFW_BOOT", kernel_gsp.c).
//!
//! Only then are `NV_PMC_BOOT_0`/`_42`, WPR2 and the FB size read. The chip family needed
//! for steps 2 and 3 comes from the PCI device id ([`Chip::from_pci_device_id`]), and
//! `NV_PMC_BOOT_42` must agree with it. While the GPU reboots BAR0 legitimately reads all
//! ones, so "the GPU is gone" is judged from config space ([`Platform::is_present`]), never
//! from a BAR0 read. `NV_PFB_PRI_MMU_WPR2_ADDR_HI` non-zero means WPR2 is still up from an
//! earlier boot (`kgspIsWpr2Up_TU102`, used by `kgspIsWpr2Up_GH100`): GSP-FMC cannot boot
//! again until a reset clears it.

use super::Timeouts;
use super::error::BootErrorKind;
use super::hal::{self, BootHal};
use super::report::Timeline;
use crate::chip::{Arch, Chip};
use crate::hal::{Deadline, Platform, PlatformError, PollError, Wait};
use crate::regs::fb::{PfbWpr2AddrHi, PfbWpr2AddrLo};
use crate::regs::fsp::ThermI2csScratch;
use crate::regs::{PmcBoot0, PmcBoot42};

/// `PCI_VENDOR_ID` and NVIDIA's (`NV_EP_PCFG_GPU_ID_VENDOR_NVIDIA`).
const PCI_VENDOR_ID: u16 = 0x00;
/// NVIDIA's PCI vendor id.
pub const NVIDIA_VENDOR_ID: u32 = 0x10de;
/// `PCI_DEVICE_ID`.
const PCI_DEVICE_ID: u16 = 0x02;
/// `NV_EP_PCFG_GPU_VSEC_DEBUG_SEC_2` (GB20x config space).
pub const VSEC_DEBUG_SEC_2: u16 = 0x2b8;
/// `NV_EP_PCFG_GPU_VSEC_DEBUG_SEC_2_BAR_FIREWALL_ENGAGE` (24:24); `_INIT` (0) is disengaged.
pub const BAR_FIREWALL_ENGAGE: u32 = 1 << 24;

// TIMEOUT: kbifDoFunctionLevelReset_GH100 waits 10 ms after an FLR before the first config
// access ("we do expect at least 10ms for it to be ready").
/// Settle time after a reset before config space is read.
pub const AFTER_RESET_NS: u64 = 10_000_000;
/// Pause between polls of config space and of the FSP's boot status.
const PAUSE_NS: u64 = 100_000;

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

/// PCI vendor and device id from config space (`NotAnNvidiaGpu` for another vendor's, gone
/// when config space reads all ones).
pub fn pci_ids(p: &impl Platform) -> Result<(u32, u16), BootErrorKind> {
    let step = "reading the PCI vendor id in config space";
    let vendor = p
        .config_read(PCI_VENDOR_ID, 2)
        .map_err(|source| BootErrorKind::Platform { step, source })?;
    // A vanished function reads all ones (some platforms give the whole dword).
    if vendor == 0xffff || vendor == u32::MAX {
        return Err(BootErrorKind::gone(step));
    }
    let device = p
        .config_read(PCI_DEVICE_ID, 2)
        .map_err(|source| BootErrorKind::Platform { step, source })?;
    if vendor != NVIDIA_VENDOR_ID {
        return Err(BootErrorKind::NotAnNvidiaGpu { vendor, device });
    }
    // CAST: a 2-byte config read.
    Ok((vendor, device as u16))
}

/// Waits until config space answers with NVIDIA's vendor id again after a reset
/// (`kbifConfigAccessWait_GH100`).
pub fn wait_config_space(
    p: &impl Platform,
    tl: &mut Timeline,
    timeout_ns: u64,
) -> Result<(), BootErrorKind> {
    let wait = Wait::pausing(
        "config space to answer after the reset",
        timeout_ns,
        PAUSE_NS,
    );
    tl.try_poll(p.clock(), wait, || {
        Ok::<_, BootErrorKind>(
            matches!(p.config_read(PCI_VENDOR_ID, 2), Ok(v) if v == NVIDIA_VENDOR_ID).then_some(()),
        )
    })
    .map_err(|e| match e {
        PollError::Failed(e) => e,
        PollError::TimedOut(timed_out) => BootErrorKind::ConfigSpaceNotBack { timed_out },
    })
}

/// Waits until GB20x's BAR firewall is disengaged (`kbifPollBarFirewallDisengage_GB202`).
pub fn wait_bar_firewall(
    p: &impl Platform,
    tl: &mut Timeline,
    timeout_ns: u64,
) -> Result<(), BootErrorKind> {
    let step = "reading the BAR firewall (config 0x2b8)";
    let mut value = 0;
    let wait = Wait::pausing("the BAR firewall to disengage", timeout_ns, PAUSE_NS);
    tl.try_poll(p.clock(), wait, || {
        value = p
            .config_read(VSEC_DEBUG_SEC_2, 4)
            .map_err(|source| BootErrorKind::Platform { step, source })?;
        if value == u32::MAX && !p.is_present() {
            return Err(BootErrorKind::gone(step));
        }
        Ok((value & BAR_FIREWALL_ENGAGE == 0).then_some(()))
    })
    .map_err(|e| match e {
        PollError::Failed(e) => e,
        PollError::TimedOut(timed_out) => BootErrorKind::BarFirewall { value, timed_out },
    })
}

/// Waits for the FSP of a chip of `arch` to report its secure boot done
/// (`kfspWaitForSecureBoot_*`: `NV_THERM_I2CS_SCRATCH` reads exactly 0xff; an all-ones read
/// while the GPU reboots is not that).
pub fn wait_fsp_boot(
    p: &impl Platform,
    arch: Arch,
    tl: &mut Timeline,
    timeout_ns: u64,
) -> Result<(), BootErrorKind> {
    let register = match ThermI2csScratch::address(arch) {
        Ok(r) => r,
        // Booter chips have no FSP: nothing to wait for here.
        Err(_) => return Ok(()),
    };
    let mut value = 0;
    let wait = Wait::pausing("the FSP's boot complete", timeout_ns, PAUSE_NS);
    tl.try_poll(p.clock(), wait, || {
        value = p.read32(register);
        if value == u32::MAX && !p.is_present() {
            return Err(BootErrorKind::gone("polling the FSP's boot status"));
        }
        Ok(ThermI2csScratch::from_raw(value)
            .fsp_boot_complete()
            .then_some(()))
    })
    .map_err(|e| match e {
        PollError::Failed(e) => e,
        PollError::TimedOut(timed_out) => BootErrorKind::FspNotReady {
            register,
            value,
            timed_out,
        },
    })
}

/// Waits until the GPU of family `arch` may be touched through BAR0: GB20x's BAR firewall
/// down, then the FSP booted.
pub fn wait_ready(
    p: &impl Platform,
    arch: Arch,
    tl: &mut Timeline,
    t: &Timeouts,
) -> Result<(), BootErrorKind> {
    if arch == Arch::BlackwellGb20x {
        wait_bar_firewall(p, tl, t.bar_firewall_ns)?;
    }
    if arch.boot_path() == crate::chip::BootPath::Sec2Booter {
        return wait_gfw_boot(p, tl, t.fsp_boot_ns.unwrap_or(GFW_BOOT_TIMEOUT_NS));
    }
    wait_fsp_boot(p, arch, tl, t.fsp_boot_ns.unwrap_or(fsp_boot_timeout(arch)))
}

// TIMEOUT: gpuWaitForGfwBootComplete_TU102 (kern_gpu_tu102.c) gives the VBIOS's FWSEC
// GPU_GFW_BOOT_COMPLETION_TIMEOUT_US = FWSECLIC_PROG_START_TIMEOUT (50 ms) +
// FWSECLIC_PROG_COMPLETE_TIMEOUT (2 s) for the GSP falcon to halt (kflcnWaitForHalt_HAL with
// that timeout), then reads the progress once; we give the two waits this budget together.
/// How long devinit's FWSEC may take to halt and report GFW boot complete (booter-path chips).
pub const GFW_BOOT_TIMEOUT_NS: u64 = 2_050_000_000;

/// Waits for the booter-path chip's GFW boot as `gpuWaitForGfwBootComplete_TU102`
/// (kern_gpu_tu102.c) does: first for the GSP falcon, on which devinit runs the VBIOS's
/// FWSEC, to halt (`kflcnWaitForHalt_TU102`: `NV_PFALCON_FALCON_CPUCTL.HALTED`), then for
/// the GFW scratch's privilege mask to let level 0 read and its progress to read
/// `COMPLETED` (`_gpuIsGfwBootCompleted_TU102`). The progress may read `COMPLETED` while
/// FWSEC still runs; the booter path resets the GSP falcon for FWSEC-FRTS next, which must
/// not cut devinit's FWSEC short. One budget bounds both waits; OpenRM reads the progress
/// once after the halt, we poll it for what is left of the budget.
pub fn wait_gfw_boot(
    p: &impl Platform,
    tl: &mut Timeline,
    timeout_ns: u64,
) -> Result<(), BootErrorKind> {
    use crate::boot::booter::BooterError;
    use crate::regs::FalconBase;
    use crate::regs::falcon::FalconCpuctl;
    use crate::regs::fb::GfwBootProgress;
    use crate::regs::secure_boot::Gc6SecureScratch05PrivLevelMask;
    let read_progress = || {
        let plm = Gc6SecureScratch05PrivLevelMask::read(p);
        if plm.raw() == u32::MAX {
            // Not answering yet (a GPU rebooting after a reset), or gone: an all-ones read
            // would pass for an unlocked scratch reading COMPLETED.
            if !p.is_present() {
                return Err(BootErrorKind::gone("polling the GFW boot progress"));
            }
            return Ok(0);
        }
        Ok(if plm.read_protection_level0() {
            GfwBootProgress::read(p).progress()
        } else {
            0
        })
    };
    let deadline = Deadline::after(p.clock(), timeout_ns);
    let mut cpuctl = 0;
    let wait = Wait::pausing(
        "the GSP falcon to halt after devinit's FWSEC",
        timeout_ns,
        PAUSE_NS,
    );
    tl.try_poll(p.clock(), wait, || {
        let c = FalconCpuctl::read(p, FalconBase::GSP);
        cpuctl = c.raw();
        if cpuctl == u32::MAX {
            // All ones is a GPU not answering (rebooting, or gone), not a halted falcon.
            if !p.is_present() {
                return Err(BootErrorKind::gone("polling the GSP falcon's CPUCTL"));
            }
            return Ok(None);
        }
        Ok(c.halted().then_some(()))
    })
    .map_err(|e| match e {
        PollError::Failed(e) => e,
        PollError::TimedOut(timed_out) => match read_progress() {
            Err(gone) => gone,
            Ok(progress) => BootErrorKind::Booter(BooterError::DevinitFalconNotHalted {
                cpuctl,
                progress,
                waited_ns: timed_out.waited_ns,
            }),
        },
    })?;
    let mut progress = 0;
    let wait = Wait::pausing(
        "GFW boot (devinit's FWSEC) to complete",
        deadline.remaining_ns(p.clock()),
        PAUSE_NS,
    );
    tl.try_poll(p.clock(), wait, || {
        progress = read_progress()?;
        Ok((progress == GfwBootProgress::COMPLETED).then_some(()))
    })
    .map_err(|e| match e {
        PollError::Failed(e) => e,
        PollError::TimedOut(_) => BootErrorKind::Booter(BooterError::GfwBootNotDone {
            progress,
            waited_ns: deadline.elapsed_ns(p.clock()),
        }),
    })
}

/// The FSP boot wait of `arch` (`kfspWaitForSecureBoot_GH100` 4 s, `_GB202` 5 s).
pub fn fsp_boot_timeout(arch: Arch) -> u64 {
    match hal::for_arch(arch) {
        Some(h) => h.boot_timeout_ns(),
        None => hal::gh100::FSP_BOOT_TIMEOUT_NS,
    }
}

/// Identifies the chip and picks its boot HAL, in OpenRM's order: config space, memory
/// decoding on (bus mastering off), the family's readiness waits, then `NV_PMC_BOOT_0`/`_42`,
/// which must name the family the device id did.
pub fn identify(
    p: &impl Platform,
    tl: &mut Timeline,
    t: &Timeouts,
) -> Result<BootHal, BootErrorKind> {
    let (_, device_id) = pci_ids(p)?;
    enable_memory(p)?;
    let by_id = Chip::from_pci_device_id(device_id);
    if let Some(family) = by_id {
        wait_ready(p, family.arch(), tl, t)?;
    }
    if PmcBoot0::read(p).raw() == u32::MAX {
        return Err(if p.is_present() {
            BootErrorKind::Bar0Dead { device_id }
        } else {
            BootErrorKind::gone("reading NV_PMC_BOOT_0")
        });
    }
    let boot42 = PmcBoot42::read(p);
    let chip = Chip::identify(boot42).map_err(BootErrorKind::UnknownChip)?;
    match by_id {
        Some(family) if family.arch() != chip.arch() => {
            return Err(BootErrorKind::ChipMismatch {
                device_id,
                by_id: family,
                boot42: chip,
            });
        }
        Some(_) => {}
        // A device id outside the known blocks: the readiness waits come now, by BOOT_42.
        None => wait_ready(p, chip.arch(), tl, t)?,
    }
    Ok(hal::for_chip(chip))
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

/// Resets the GPU if WPR2 is up, then waits as OpenRM does after an FLR (10 ms, config
/// space, the firewall, the FSP) and checks WPR2 came down; then turns bus mastering on
/// (nothing of an earlier boot runs any more). Returns whether a reset was made.
pub fn reset_if_wpr2_up<P: Platform>(
    p: &mut P,
    arch: Arch,
    tl: &mut Timeline,
    t: &Timeouts,
) -> Result<bool, BootErrorKind> {
    let (_, hi) = wpr2(p);
    if hi == u32::MAX && !p.is_present() {
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
    wait_after_reset(&*p, arch, tl, t)?;
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

/// What follows a reset before BAR0 may be read (`kbifDoFunctionLevelReset_GH100`): 10 ms,
/// config space answering, memory decoding back on, then the family's readiness waits.
pub fn wait_after_reset(
    p: &impl Platform,
    arch: Arch,
    tl: &mut Timeline,
    t: &Timeouts,
) -> Result<(), BootErrorKind> {
    tl.delay(p.clock(), AFTER_RESET_NS);
    wait_config_space(p, tl, t.config_space_ns)?;
    enable_memory(p)?;
    wait_ready(p, arch, tl, t)
}
