//! Which asynchronous copy engine the copy channel gets: the one with the most physical copy
//! units RM reports, as `NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK` (ctrl2080ce.h) tells them.

use nvbare_gsp::rm::alloc_flags::engine_type;
use nvbare_gsp::rm::ctrl::ce::CePceMaskParams;
use nvbare_gsp::rm::ctrl::cmd;

use super::Handle;
use crate::gpu::Backend;

/// The asynchronous copy engines tried for the copy channel's own group (in this order
/// where RM reports no physical copy units for them; see [`copy_engine_order`]).
pub const COPY_ENGINES: [u32; 4] = [2, 1, 3, 4];

/// The copy engines to try for the copy channel, each with the physical copy units (PCEs)
/// RM reports behind it (`NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK`; 0 where RM does not answer):
/// `prefer` first, then [`COPY_ENGINES`] with the most PCEs first (ties keep their order).
///
/// A logical copy engine moves data only as fast as its PCEs: on the H200 COPY2 and COPY3
/// have 2 PCEs each (shared with the graphics copy engines) and copy VRAM to VRAM at
/// 94.5 GB/s, while COPY4 has 12 and copies at 560 GB/s (issue 20, item 6, run 34).
pub fn copy_engine_order<B: Backend>(
    b: &mut B,
    subdevice: Handle,
    prefer: Option<u32>,
) -> heapless::Vec<(u32, u32), { COPY_ENGINES.len() + 1 }> {
    let mut pces = |ce: u32| {
        let Some(et) = engine_type::copy(ce) else {
            return 0;
        };
        let mut p = CePceMaskParams {
            ce_engine_type: et,
            pce_mask: 0,
        };
        match b.control(subdevice, cmd::NV2080_CE_GET_CE_PCE_MASK, &mut p) {
            Ok(()) => p.pce_mask.count_ones(),
            Err(_) => 0,
        }
    };
    let mut rest: heapless::Vec<(u32, u32), { COPY_ENGINES.len() }> = COPY_ENGINES
        .into_iter()
        .filter(|&ce| Some(ce) != prefer)
        .map(|ce| (ce, pces(ce)))
        .collect();
    // Stable: engines with as many PCEs keep COPY_ENGINES' order.
    rest.sort_by_key(|&(_, n)| core::cmp::Reverse(n));
    let mut order = heapless::Vec::new();
    if let Some(ce) = prefer {
        // Cannot overflow: one more than COPY_ENGINES holds.
        let _ = order.push((ce, pces(ce)));
    }
    for e in rest {
        let _ = order.push(e);
    }
    order
}
