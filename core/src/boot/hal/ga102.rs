//! Ampere GA10x: HS ucode boots from sysmem by DMA with BROM parameters, the core switch is
//! `RISCV_BCR_CTRL`, scrubbing is in `HWCFG2` ([`falcon::hal::Ga102`]); ucode fuses as
//! GA100; libos3's heap and the layout tinygrad hard-codes.
//!
//! Sources: `kernel_falcon_ga102.c`, `kernel_gsp_falcon_ga102.c`
//! (`kgspExecuteHsFalcon_GA102`), `kernel_gsp_ga100.c` (`kgspReadUcodeFuseVersion_GA100`),
//! `kernel_gsp_tu102.c` (`kgspCalculateFbLayout_TU102`).

use nvbare_gsp::boot::wpr_meta::FbLayoutSizes;
use nvbare_gsp::firmware::GspSignatureTarget;

use super::{BooterHal, ga100};
use crate::chip::Chip;
use crate::falcon::{self, FalconHal};
use crate::regs::secure_boot::FuseEngine;

/// The GA10x booter block.
#[derive(Clone, Copy, Debug)]
pub struct Ga10x;

impl BooterHal for Ga10x {
    fn falcon(&self) -> &'static dyn FalconHal {
        &falcon::hal::Ga102
    }

    fn ucode_fuse_address(&self, engine: FuseEngine, ucode_id: u32) -> Option<u32> {
        ga100::Ga100.ucode_fuse_address(engine, ucode_id)
    }

    fn layout_sizes(&self, fb_size: u64) -> FbLayoutSizes {
        FbLayoutSizes::ampere_ada(fb_size)
    }

    fn signature_target(&self, _chip: Chip) -> GspSignatureTarget {
        GspSignatureTarget::Ga10x
    }
}
