//! Turing TU10x: the booter path's first chips. FWSEC and the booter load by PIO (no boot
//! from HS), no core switch, scrubbing in `DMACTL` ([`falcon::hal::Tu102`]); no ucode
//! fuses (`kgspReadUcodeFuseVersion` is the stub returning 0 on Turing, so signature 0 of
//! every signature list); libos2's heap.
//!
//! Sources: `kernel_falcon_tu102.c`, `kernel_gsp_falcon_tu102.c` (`s_prepareHsFalconDirect`),
//! `kernel_gsp_tu102.c` (`kgspBootstrap_TU102`, `kgspTeardown_TU102`), the generated HAL
//! table (`kgspReadUcodeFuseVersion_b2b553` for TU10x), `gsp_fw_heap.h`.

use nvbare_gsp::boot::wpr_meta::{FbLayoutSizes, HeapFamily};
use nvbare_gsp::firmware::GspSignatureTarget;

use super::BooterHal;
use crate::chip::Chip;
use crate::falcon::{self, FalconHal};
use crate::regs::secure_boot::FuseEngine;

/// The TU10x booter block.
#[derive(Clone, Copy, Debug)]
pub struct Tu10x;

impl BooterHal for Tu10x {
    fn falcon(&self) -> &'static dyn FalconHal {
        &falcon::hal::Tu102
    }

    fn ucode_fuse_address(&self, _engine: FuseEngine, _ucode_id: u32) -> Option<u32> {
        None
    }

    fn layout_sizes(&self, fb_size: u64) -> FbLayoutSizes {
        FbLayoutSizes::for_family(HeapFamily::Libos2, fb_size)
    }

    fn signature_target(&self, chip: Chip) -> GspSignatureTarget {
        match chip {
            Chip::TU116 | Chip::TU117 => GspSignatureTarget::Tu11x,
            _ => GspSignatureTarget::Tu10x,
        }
    }
}
