//! The booter-path chips: Ampere GA102 and Ada AD102 (issue 19).
//!
//! Identity: `NV_PMC_BOOT_42` architecture 0x17 (GA100 family) / 0x19 (AD100), implementation
//! 2 (nv_ref.h; tinygrad names the chip `GA1` / `AD1` + the implementation). Device ids from
//! OpenRM 570.144's README ("NVIDIA GeForce RTX 3090 | 2204", "NVIDIA GeForce RTX 4090 |
//! 2684"); the subsystem ids are the simulator's choice. SM counts as NVIDIA lists them for
//! the boards (82 of 7 GPCs x 6 TPCs x 2 SMs on GA102, 128 of 12 x 6 x 2 on AD102), 48 warps per
//! SM (the CUDA guide's compute capabilities 8.6 and 8.9), `sm_version` 0x806 / 0x809
//! (`NV2080_CTRL_GR_INFO_SM_VERSION_8_06` / `_8_09`, ctrl2080gr.h). 24 GiB each; BAR1 is made
//! 32 GiB (resizable BAR), so tinygrad takes its large-BAR paths as on GB202.
//!
//! Classes: the ones of `gpuGetClassDescriptorList_GA102` / `_AD102` (OpenRM 570.144,
//! `g_gpu_class_list.c`) that the simulator serves: AMPERE_CHANNEL_GPFIFO_A (0xc56f),
//! AMPERE_COMPUTE_B (0xc7c0) / ADA_COMPUTE_A (0xc9c0), AMPERE_DMA_COPY_B (0xc7b5), the
//! usermode classes and the generic objects (class headers in open-gpu-doc `classes/`).

use super::{BLACKWELL_ENGINES, BootModel, BooterFacts, ChipSpec, CotFacts, FalconGen};

const GIB: u64 = 1 << 30;

/// FWSEC and booter facts shared by GA102 and AD102 (see [`BooterFacts`]).
const BOOTER: BooterFacts = BooterFacts {
    falcons: FalconGen::Ga102,
    fwsec_desc_version: 3,
    fwsec_signature_count: 2,
    fwsec_ucode_id: 9,
    fwsec_fuse_version: 1,
    sec2_ucode_id: 3,
    sec2_fuse_version: 1,
};

/// No FSP on the booter path: of [`CotFacts`] only the GSP-RM signature section is used
/// (`.fwsignature_ga10x` / `_ad10x` of `gsp-570.144.bin`, what `kgspGetSignatureSectionName`
/// picks and tinygrad's `chip[:4] + "x"` names).
pub(super) const fn cot(section: &'static str) -> CotFacts {
    CotFacts {
        version: 0,
        signature_bytes: 0,
        public_key_bytes: 0,
        frts_vidmem_offset: 0,
        pmu_reserved_size: 0,
        non_wpr_heap_size: 0x10_0000,
        gsp_signature_section: section,
    }
}

/// GA102 as an RTX 3090.
pub static GA102: ChipSpec = ChipSpec {
    name: "ga102",
    product: "NVIDIA GeForce RTX 3090 (simulated GA102)",
    device_id: 0x2204,
    subsystem: (0x10de, 0x1454),
    revision: 0xa1,
    pmc_boot_0: 0x1720_00a1,
    pmc_boot_42: 0x1720_00a1,
    vram_bytes: 24 * GIB,
    bar0_size: 16 << 20,
    bar1_size: 32 * GIB,
    bar3_size: 32 << 20,
    sm_count: 82,
    gpcs: 7,
    tpcs_per_gpc: 6,
    sms_per_tpc: 2,
    max_warps_per_sm: 48,
    sm_version: 0x806,
    fsp_ready_scratch: 0,
    // NV_PFB_NISO_FLUSH_SYSMEM_ADDR_HI / _ADDR (ga100 dev_fb.h; kmemsysProgramSysmemFlushBuffer_GA100).
    sysmem_flush: &[(0x0010_0c40, 0x0010_0c10)],
    sysmem_flush_shifted: true,
    bar_firewall: false,
    boot: BootModel::Booter,
    booter: Some(BOOTER),
    pci_config_mirror: 0x8_8000,
    classes: GA102_CLASSES,
    cot: cot(".fwsignature_ga10x"),
    engines: BLACKWELL_ENGINES,
};

/// AD102 as an RTX 4090.
pub static AD102: ChipSpec = ChipSpec {
    name: "ad102",
    product: "NVIDIA GeForce RTX 4090 (simulated AD102)",
    device_id: 0x2684,
    subsystem: (0x10de, 0x165b),
    revision: 0xa1,
    pmc_boot_0: 0x1920_00a1,
    pmc_boot_42: 0x1920_00a1,
    vram_bytes: 24 * GIB,
    bar0_size: 16 << 20,
    bar1_size: 32 * GIB,
    bar3_size: 32 << 20,
    sm_count: 128,
    gpcs: 12,
    tpcs_per_gpc: 6,
    sms_per_tpc: 2,
    max_warps_per_sm: 48,
    sm_version: 0x809,
    fsp_ready_scratch: 0,
    sysmem_flush: &[(0x0010_0c40, 0x0010_0c10)],
    sysmem_flush_shifted: true,
    bar_firewall: false,
    boot: BootModel::Booter,
    booter: Some(BOOTER),
    pci_config_mirror: 0x8_8000,
    classes: AD102_CLASSES,
    cot: cot(".fwsignature_ad10x"),
    engines: BLACKWELL_ENGINES,
};

/// The generic objects every GPU has, then the usermode classes (Volta..Ampere).
const GA102_CLASSES: &[u32] = classes_after_generic_objects![
    0xc361, // VOLTA_USERMODE_A
    0xc461, // TURING_USERMODE_A
    0xc561, // AMPERE_USERMODE_A
    0xc46f, // TURING_CHANNEL_GPFIFO_A
    0xc56f, // AMPERE_CHANNEL_GPFIFO_A
    0xc797, // AMPERE_B
    0xc7c0, // AMPERE_COMPUTE_B
    0xc7b5, // AMPERE_DMA_COPY_B
];

/// AD102's: as GA102's with ADA_A and ADA_COMPUTE_A.
const AD102_CLASSES: &[u32] = classes_after_generic_objects![
    0xc361, 0xc461, 0xc561, // usermode A (Volta..Ampere)
    0xc46f, 0xc56f, // TURING/AMPERE_CHANNEL_GPFIFO_A
    0xc997, // ADA_A
    0xc9c0, // ADA_COMPUTE_A
    0xc7b5, // AMPERE_DMA_COPY_B
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booter_chips_identify_as_tinygrad_and_openrm_expect() {
        // NV_PMC_BOOT_42_ARCHITECTURE (29:24) GA100 0x17, AD100 0x19; implementation 2.
        assert_eq!(GA102.pmc_boot_42 >> 24 & 0x3f, 0x17);
        assert_eq!(AD102.pmc_boot_42 >> 24 & 0x3f, 0x19);
        for s in [&GA102, &AD102] {
            assert_eq!(s.pmc_boot_42 >> 20 & 0xf, 2);
            assert_eq!(s.boot, BootModel::Booter);
            assert!(s.bar1_size >= s.vram_bytes);
            // tinygrad's PCI probe: device id & 0xff00 in its list (0x2200, 0x2600 here).
            assert!([0x2200, 0x2600].contains(&(s.device_id & 0xff00)));
        }
    }
}
