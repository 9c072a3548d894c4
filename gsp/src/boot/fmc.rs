//! `GSP_FMC_BOOT_PARAMS` (`gspifpub.h`): what GSP-FMC reads on the FSP boot path
//! (Hopper, Blackwell) to find the WPR metadata and the libos arguments.
//!
//! Mirrors `kgspSetupGspFmcArgs_GH100` (`arch/hopper/kernel_gsp_gh100.c`) for a normal
//! (non-confidential-computing) boot: both descriptors in coherent sysmem,
//! `gspRmDescSize = sizeof(GspFwWprMeta)`, `bIsGspRmBoot = 1`.

use crate::abi::{
    GSP_DMA_TARGET_COHERENT_SYSTEM, GspAcrBootGspRmParams, GspFmcBootParams, GspFwWprMeta,
    GspRmParams,
};
use zerocopy::FromZeros;

/// The FMC boot parameters: `wpr_meta_pa` is the bus address of the `GspFwWprMeta`,
/// `libos_args_pa` that of the libos init-argument page.
pub fn fmc_boot_params(wpr_meta_pa: u64, libos_args_pa: u64) -> GspFmcBootParams {
    let mut p = GspFmcBootParams::new_zeroed();
    p.boot_gsp_rm_params = GspAcrBootGspRmParams {
        target: GSP_DMA_TARGET_COHERENT_SYSTEM,
        gsp_rm_desc_size: core::mem::size_of::<GspFwWprMeta>() as u32,
        gsp_rm_desc_offset: wpr_meta_pa,
        wpr_carveout_offset: 0,
        wpr_carveout_size: 0,
        b_is_gsp_rm_boot: 1,
        _pad0: [0; 3],
    };
    p.gsp_rm_params = GspRmParams {
        target: GSP_DMA_TARGET_COHERENT_SYSTEM,
        _pad0: 0,
        boot_args_offset: libos_args_pa,
    };
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    #[test]
    fn descriptors_point_at_meta_and_libos_args() {
        let p = fmc_boot_params(0x1234_5000, 0x6789_a000);
        assert_eq!(p.boot_gsp_rm_params.gsp_rm_desc_size, 256);
        assert_eq!(p.boot_gsp_rm_params.b_is_gsp_rm_boot, 1);
        assert_eq!(p.gsp_rm_params.boot_args_offset, 0x6789_a000);
        assert!(p.as_bytes().len() >= 40);
    }
}
