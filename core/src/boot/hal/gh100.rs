//! Hopper GH100 (H100, H200): the chip the FSP boot path was written for.
//!
//! Sources: `kern_fsp_gh100.c` (`kfspWaitForSecureBoot_GH100`: `NV_THERM_I2CS_SCRATCH` and
//! its 4 s wait; `kfspPrepareBootCommands_GH100`: the COT payload), `kernel_gsp_gh100.c`
//! (`kgspCalculateFbLayout_GH100`: the WPR sizes), the notes' GH100 section.

use nvbare_gsp::boot::wpr_meta::FmcWprSizes;
use nvbare_gsp::firmware::{FmcSignatureScheme, GspSignatureTarget};
use nvbare_gsp::fsp::CotParams;

use super::{FbHal, FirmwareHal, FspHal, PinnedDigests, sha256_hex};
use crate::chip::Arch;
use crate::regs::fsp::ThermI2csScratch;

/// The GH100 boot blocks.
#[derive(Clone, Copy, Debug)]
pub struct Gh100;

// TIMEOUT: kfspWaitForSecureBoot_GH100 waits 4 s ("FBFalcon training during devinit alone
// takes 2 seconds, up to 3 on HBM3"), and so do we.
/// How long the FSP may take to boot after a reset on GH100 and GB100.
pub const FSP_BOOT_TIMEOUT_NS: u64 = 4_000_000_000;

/// The FSP boot-status register of GH100 (shared by GB100): `NV_THERM_I2CS_SCRATCH`, as
/// [`ThermI2csScratch`] places it.
pub fn boot_status_register() -> u32 {
    // PANIC: ThermI2csScratch has an address on Hopper (its match names Arch::Hopper).
    ThermI2csScratch::address(Arch::Hopper).expect("NV_THERM_I2CS_SCRATCH exists on Hopper")
}

/// GH100's FRTS offset from the end of FB: the 2 MiB end-of-FB reserve estimate
/// (`memmgrGetFBEndReserveSizeEstimate_GM107`), no PMU reserve
/// (`kfspPrepareBootCommands_GH100`).
pub fn frts_offset_from_end() -> u64 {
    nvbare_gsp::fsp::frts_vidmem_offset(nvbare_gsp::fsp::FB_END_RESERVE_ESTIMATE, 0, 0)
}

impl FspHal for Gh100 {
    fn boot_status_register(&self) -> u32 {
        boot_status_register()
    }

    fn boot_timeout_ns(&self) -> u64 {
        FSP_BOOT_TIMEOUT_NS
    }

    fn cot_params(&self, fmc_addr: u64, boot_args_addr: u64) -> CotParams {
        CotParams::gh100(fmc_addr, boot_args_addr)
    }
}

impl FbHal for Gh100 {
    fn wpr_sizes(&self, fb_size: u64) -> FmcWprSizes {
        FmcWprSizes::gh100(fb_size)
    }

    fn frts_offset_from_end(&self) -> u64 {
        frts_offset_from_end()
    }
}

impl FirmwareHal for Gh100 {
    fn signature_target(&self) -> GspSignatureTarget {
        GspSignatureTarget::Gh100
    }

    fn fmc_scheme(&self) -> FmcSignatureScheme {
        FmcSignatureScheme::Rsa3072
    }

    fn pinned_digests(&self) -> PinnedDigests {
        PinnedDigests {
            bootloader: sha256_hex(
                "2176e42f05729ac4dd93ed6cd1b4c6c5650b6aa79c115dfcd9f26a71c1d8d82e",
            ),
            fmc: sha256_hex("f3ce25f3897c860e4cdde183ebf09b254d94a5d8191d666c12afb33cc7121107"),
        }
    }
}
