//! Turing TU102 (issue 19): the booter path's first chip.
//!
//! Identity: `NV_PMC_BOOT_42` architecture 0x16 (TU100), implementation 2 (nv_ref.h); device
//! id 0x1e04 from OpenRM 570.144's README ("NVIDIA GeForce RTX 2080 Ti | 1E04"); the subsystem
//! id is the simulator's choice. 68 SMs enabled (the RTX 2080 Ti) of a design of 6 GPCs x 6
//! TPCs x 2 SMs (72, the Quadro RTX 6000's full chip); 32 warps per SM (the CUDA guide's
//! compute capability 7.5); `sm_version` 0x705 (`NV2080_CTRL_GR_INFO_SM_VERSION_7_05`,
//! ctrl2080gr.h). 11 GiB. BAR1 is made 16 GiB so tinygrad takes its large-BAR paths as on the
//! other chips (a stock 2080 Ti shows a 256 MiB BAR1: unconfirmed here).
//!
//! Classes: the ones of `gpuGetClassDescriptorList_TU102` (OpenRM 570.144,
//! `g_gpu_class_list.c`) that the simulator serves: VOLTA/TURING_USERMODE_A (no
//! AMPERE_USERMODE_A), VOLTA/TURING_CHANNEL_GPFIFO_A, TURING_A, TURING_COMPUTE_A (0xc5c0, QMD
//! V02_03) and TURING_DMA_COPY_A (0xc5b5, 32-bit semaphores).
//!
//! Booter facts: Turing's falcons ([`FalconGen::Tu102`]: no core switch, no boot-ROM
//! parameters; FWSEC through the generic bootloader, the booter by PIO). FWSEC's descriptor is
//! version 2 (`FALCON_UCODE_DESC_V2`, run through the
//! generic bootloader: `kgspExecuteFwsec_TU102` → `s_prepareHsFalconWithLoader`); no ucode
//! fuses (`kgspReadUcodeFuseVersion` and `ksec2ReadUcodeFuseVersion` are the stubs returning 0
//! on TU10x, `_b2b553`), so every signature choice is the one for fuse version 0. The GSP-RM
//! signature section is `.fwsignature_tu10x` (`kgspGetSignatureSectionName_TU102`).

use super::booter::cot;
use super::{BLACKWELL_ENGINES, BootModel, BooterFacts, ChipSpec, FalconGen};

const GIB: u64 = 1 << 30;

/// TU102 as an RTX 2080 Ti.
pub static TU102: ChipSpec = ChipSpec {
    name: "tu102",
    product: "NVIDIA GeForce RTX 2080 Ti (simulated TU102)",
    device_id: 0x1e04,
    subsystem: (0x10de, 0x12fa),
    revision: 0xa1,
    pmc_boot_0: 0x1620_00a1,
    pmc_boot_42: 0x1620_00a1,
    vram_bytes: 11 * GIB,
    bar0_size: 16 << 20,
    bar1_size: 16 * GIB,
    bar3_size: 32 << 20,
    sm_count: 68,
    gpcs: 6,
    tpcs_per_gpc: 6,
    sms_per_tpc: 2,
    max_warps_per_sm: 32,
    sm_version: 0x705,
    fsp_ready_scratch: 0,
    // NV_PFB_NISO_FLUSH_SYSMEM_ADDR (39:8) as on GA10x (kmemsysProgramSysmemFlushBuffer_GM107
    // writes only the low register on Turing; the high one reads back 0 for a 40-bit page).
    sysmem_flush: &[(0x0010_0c40, 0x0010_0c10)],
    sysmem_flush_shifted: true,
    bar_firewall: false,
    boot: BootModel::Booter,
    booter: Some(TURING_FALCON_BOOTER),
    // NV_PCFG (tu102 dev_nv_xve.h).
    pci_config_mirror: 0x8_8000,
    classes: TU102_CLASSES,
    cot: cot(".fwsignature_tu10x"),
    engines: BLACKWELL_ENGINES,
};

/// FWSEC and booter facts of the chips with Turing's falcons (TU10x and GA100): FWSEC's
/// `FALCON_UCODE_DESC_V2`, which carries no signature list and no ucode id (so no GSP fuse is
/// read for it), and booter files with one signature each for ucode id 3, fuse version 0.
pub(super) const TURING_FALCON_BOOTER: BooterFacts = BooterFacts {
    falcons: FalconGen::Tu102,
    fwsec_desc_version: 2,
    fwsec_signature_count: 0,
    fwsec_ucode_id: 0,
    fwsec_fuse_version: 0,
    sec2_ucode_id: 3,
    sec2_fuse_version: 0,
};

/// The generic objects every GPU has, then TU102's own classes.
const TU102_CLASSES: &[u32] = classes_after_generic_objects![
    0xc361, // VOLTA_USERMODE_A
    0xc461, // TURING_USERMODE_A
    0xc36f, // VOLTA_CHANNEL_GPFIFO_A
    0xc46f, // TURING_CHANNEL_GPFIFO_A
    0xc597, // TURING_A
    0xc5c0, // TURING_COMPUTE_A
    0xc5b5, // TURING_DMA_COPY_A
];

impl ChipSpec {
    /// A Turing chip (`NV_PMC_BOOT_42` architecture 0x16, TU100): no ucode-version fuses
    /// (tu102 `dev_fuse.h`). Its falcons' differences are [`FalconGen::Tu102`]'s, which GA100
    /// shares.
    pub fn is_turing(&self) -> bool {
        self.pmc_boot_42 >> 24 & 0x3f == 0x16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tu102_identifies_as_openrm_expects() {
        // NV_PMC_BOOT_42_ARCHITECTURE (29:24) TU100 0x16; implementation 2 (TU102).
        assert_eq!(TU102.pmc_boot_42 >> 24 & 0x3f, 0x16);
        assert_eq!(TU102.pmc_boot_42 >> 20 & 0xf, 2);
        assert_eq!(TU102.boot, BootModel::Booter);
        assert!(TU102.bar1_size >= TU102.vram_bytes);
        assert_eq!(TU102.gpcs * TU102.tpcs_per_gpc * TU102.sms_per_tpc, 72);
        let b = TU102.booter.as_ref().unwrap();
        assert_eq!((b.fwsec_fuse_version, b.sec2_fuse_version), (0, 0));
        assert_eq!((b.falcons, b.fwsec_desc_version), (FalconGen::Tu102, 2));
        assert!(TU102.is_turing() && !super::super::GA100.is_turing());
        assert!(
            !TU102.classes.contains(&0xc561),
            "no AMPERE_USERMODE_A on TU102"
        );
    }
}
