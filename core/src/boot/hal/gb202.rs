//! Blackwell GB20x (GB202 to GB207): the FSP boot status moved to 0xad00bc, a 5 s FSP
//! boot wait, COT version 2 with an ECDSA P-384 FMC signature, and a PMU reservation at the
//! end of FB that pushes FRTS down to 0x1C00000 from the end.
//!
//! Sources: `kern_fsp_gb202.c` (`kfspWaitForSecureBoot_GB202`: 5 s "for WS SKUs"),
//! `dev_therm.h` of gb202 (`NV_THERM_I2CS_SCRATCH`), `kfspPrepareBootCommands_GH100` (the
//! FRTS arithmetic, with Blackwell's 0x220000 end-of-FB estimate and GB20x's PMU reserve of
//! 0x1820000, as nouveau's `r570_wpr_libos3_gb20x` and tinygrad send it).

use nvbare_gsp::boot::wpr_meta::FmcWprSizes;
use nvbare_gsp::firmware::{FmcSignatureScheme, GspSignatureTarget};
use nvbare_gsp::fsp::CotParams;

use super::{FbHal, FirmwareHal, FspHal, PinnedDigests, sha256_hex};
use crate::chip::Arch;
use crate::regs::fsp::ThermI2csScratch;

/// The GB20x boot blocks.
#[derive(Clone, Copy, Debug)]
pub struct Gb20x;

// TIMEOUT: kfspWaitForSecureBoot_GB202 waits 5 s ("Increase to 5 seconds for WS SKUs
// especially needed for SKU's with larger VRAM"), and so do we.
/// How long the FSP may take to boot after a reset on GB20x.
pub const FSP_BOOT_TIMEOUT_NS: u64 = 5_000_000_000;

impl FspHal for Gb20x {
    fn boot_status_register(&self) -> u32 {
        // PANIC: ThermI2csScratch has an address on GB20x (its match names the arch).
        ThermI2csScratch::address(Arch::BlackwellGb20x)
            .expect("NV_THERM_I2CS_SCRATCH exists on GB20x")
    }

    fn boot_timeout_ns(&self) -> u64 {
        FSP_BOOT_TIMEOUT_NS
    }

    fn cot_params(&self, fmc_addr: u64, boot_args_addr: u64) -> CotParams {
        CotParams::gb20x(fmc_addr, boot_args_addr)
    }
}

impl FbHal for Gb20x {
    fn wpr_sizes(&self, fb_size: u64) -> FmcWprSizes {
        FmcWprSizes::gb20x(fb_size)
    }

    fn frts_offset_from_end(&self) -> u64 {
        CotParams::gb20x(0, 0).frts_vidmem_offset
    }
}

impl FirmwareHal for Gb20x {
    fn signature_target(&self) -> GspSignatureTarget {
        GspSignatureTarget::Gb20x
    }

    fn fmc_scheme(&self) -> FmcSignatureScheme {
        FmcSignatureScheme::EcdsaP384
    }

    fn pinned_digests(&self) -> PinnedDigests {
        PinnedDigests {
            bootloader: sha256_hex(
                "d40b48e431d1707dc77af3605db358ed7a32ebfc2830eb74de2eddb4d3025071",
            ),
            fmc: sha256_hex("cb59a35c1d4bd1274d7267fd10243c29f843ff41c851b9cbd59f5af2ddd7fece"),
        }
    }
}
