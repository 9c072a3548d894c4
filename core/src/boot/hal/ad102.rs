//! Ada AD10x: GA10x's falcons, fuses and layout (the generated HAL tables give AD10x the
//! GA102 falcon functions and `kgspReadUcodeFuseVersion_GA100`); its own signature section.

use nvbare_gsp::boot::wpr_meta::FbLayoutSizes;
use nvbare_gsp::firmware::GspSignatureTarget;

use super::{BooterHal, ga102};
use crate::chip::Chip;
use crate::falcon::FalconHal;
use crate::regs::secure_boot::FuseEngine;

/// The AD10x booter block.
#[derive(Clone, Copy, Debug)]
pub struct Ad10x;

impl BooterHal for Ad10x {
    fn falcon(&self) -> &'static dyn FalconHal {
        ga102::Ga10x.falcon()
    }

    fn ucode_fuse_address(&self, engine: FuseEngine, ucode_id: u32) -> Option<u32> {
        ga102::Ga10x.ucode_fuse_address(engine, ucode_id)
    }

    fn layout_sizes(&self, fb_size: u64) -> FbLayoutSizes {
        ga102::Ga10x.layout_sizes(fb_size)
    }

    fn signature_target(&self, _chip: Chip) -> GspSignatureTarget {
        GspSignatureTarget::Ad10x
    }
}
