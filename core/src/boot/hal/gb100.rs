//! Blackwell GB10x (GB100, GB102): GH100's FSP registers and FB layout, Blackwell's COT
//! payload (version 2, ECDSA P-384 FMC signature).
//!
//! Sources: `kern_fsp_gb100.c` (`kfspWaitForSecureBoot_GB100`: the same register and 4 s
//! wait as GH100). UNCONFIRMED: GB10x's `kpmuReservedMemorySizeGet` and
//! `kgspGetNonWprHeapSize` variants are not in the reference tree; GH100's values (no PMU
//! reserve, 2 MiB non-WPR heap) are used. No simulated GB10x exists to test against.

use nvbare_gsp::boot::wpr_meta::FmcWprSizes;
use nvbare_gsp::firmware::{FmcSignatureScheme, GspSignatureTarget};
use nvbare_gsp::fsp::CotParams;

use super::{FbHal, FirmwareHal, FspHal, PinnedDigests, gh100, sha256_hex};

/// The GB10x boot blocks.
#[derive(Clone, Copy, Debug)]
pub struct Gb10x;

impl FspHal for Gb10x {
    fn boot_status_register(&self) -> u32 {
        gh100::boot_status_register()
    }

    fn boot_timeout_ns(&self) -> u64 {
        gh100::FSP_BOOT_TIMEOUT_NS
    }

    fn cot_params(&self, fmc_addr: u64, boot_args_addr: u64) -> CotParams {
        CotParams {
            version: 2,
            ..CotParams::gh100(fmc_addr, boot_args_addr)
        }
    }
}

impl FbHal for Gb10x {
    fn wpr_sizes(&self, fb_size: u64) -> FmcWprSizes {
        FmcWprSizes::gh100(fb_size)
    }

    fn frts_offset_from_end(&self) -> u64 {
        gh100::frts_offset_from_end()
    }
}

impl FirmwareHal for Gb10x {
    fn signature_target(&self) -> GspSignatureTarget {
        GspSignatureTarget::Gb10x
    }

    fn fmc_scheme(&self) -> FmcSignatureScheme {
        FmcSignatureScheme::EcdsaP384
    }

    fn pinned_digests(&self) -> PinnedDigests {
        PinnedDigests {
            bootloader: sha256_hex(
                "daebc2235c9756f2418c2116815a4bb94fc330506f5af60d883e4a740d397062",
            ),
            fmc: sha256_hex("bc7497c2d8116cceec2fe5638081d60b8f9c0e3dceb0b57dc93950c84909ce21"),
        }
    }
}
