//! Ampere GA100: Turing's falcons (PIO loads, no core switch: `kflcnResetIntoRiscv_TU102`
//! serves "Turing and GA100"), Ampere's ucode fuses (`kgspReadUcodeFuseVersion_GA100`,
//! `ksec2ReadUcodeFuseVersion_GA100`), Turing's libos2 heap.

use nvbare_gsp::boot::wpr_meta::FbLayoutSizes;
use nvbare_gsp::firmware::GspSignatureTarget;

use super::{BooterHal, tu102};
use crate::chip::{Arch, Chip};
use crate::falcon::FalconHal;
use crate::regs::secure_boot::{FuseEngine, ucode_fuse_address};

/// The GA100 booter block.
#[derive(Clone, Copy, Debug)]
pub struct Ga100;

impl BooterHal for Ga100 {
    fn falcon(&self) -> &'static dyn FalconHal {
        tu102::Tu10x.falcon()
    }

    fn ucode_fuse_address(&self, engine: FuseEngine, ucode_id: u32) -> Option<u32> {
        ucode_fuse_address(Arch::Ampere, engine, ucode_id)
    }

    fn layout_sizes(&self, fb_size: u64) -> FbLayoutSizes {
        tu102::Tu10x.layout_sizes(fb_size)
    }

    fn signature_target(&self, _chip: Chip) -> GspSignatureTarget {
        GspSignatureTarget::Ga100
    }
}
