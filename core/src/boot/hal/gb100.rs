//! Blackwell GB10x (GB100, GB102): GH100's FSP registers and FSP boot wait, Blackwell's COT
//! payload (version 2, ECDSA P-384 FMC signature) and Blackwell's PMU reservation at the end
//! of FB, which pushes FRTS down to 0x1C00000 from the end as on GB20x.
//!
//! Sources: `kern_fsp_gb100.c` (`kfspWaitForSecureBoot_GB100`: the same register and 4 s
//! wait as GH100); nouveau's `r570_wpr_libos3_gb10x` (nvkm/subdev/gsp/rm/r570/rm.c:
//! `heap_size_non_wpr = 0x200000`, `rsvd_size_pmu = ALIGN(0x800000 + 0x1000000 + 0x1000,
//! 0x20000)` = 0x1820000) and its FMC boot (`rsvd_size = ALIGN(heap.size + rsvd_size_pmu,
//! 2 MiB)` = 0x1C00000 as `frtsVidmemOffset`); OpenRM's `kfspPrepareBootCommands_GH100`
//! (`memmgrGetFBEndReserveSizeEstimate_GB100` = 0x220000, + 4 KiB + the PMU reserve, aligned
//! to 2 MiB = 0x1C00000), `kgspCalculateFbLayout_GH100` (`pWprMeta->pmuReservedSize =
//! kpmuReservedMemorySizeGet(..)`), and the generated HAL tables, which give GB100/GB102
//! `kgspCalculateFbLayout_GH100` and GH100's 2 MiB `kgspGetNonWprHeapSize`.

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
        CotParams::gb10x(fmc_addr, boot_args_addr)
    }
}

impl FbHal for Gb10x {
    fn wpr_sizes(&self, fb_size: u64) -> FmcWprSizes {
        FmcWprSizes::gb10x(fb_size)
    }

    fn frts_offset_from_end(&self) -> u64 {
        CotParams::gb10x(0, 0).frts_vidmem_offset
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
