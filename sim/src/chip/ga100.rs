//! Ampere GA100 as an A100-PCIE-40GB (issue 19): the booter path with Turing's falcons.
//!
//! Identity: `NV_PMC_BOOT_42` architecture 0x17 (GA100), implementation 0 (nv_ref.h;
//! `GPU_IMPLEMENTATION_GA100`, which `nv_firmware_get_chip_family` maps to
//! `NV_FIRMWARE_CHIP_FAMILY_GA100`). Device and subsystem id from OpenRM 570.144's README
//! ("NVIDIA A100-PCIE-40GB | 20F1 10DE 145F"). 108 SMs enabled of a design of 8 GPCs x 8 TPCs
//! x 2 SMs, 64 warps per SM (the CUDA guide's compute capability 8.0), `sm_version` 0x800
//! (`NV2080_CTRL_GR_INFO_SM_VERSION_8_00`, ctrl2080gr.h). 40 GiB of HBM2; BAR1 is taken to be
//! 64 GiB (unconfirmed; only "at least the VRAM" matters to the simulator).
//!
//! Boot: FWSEC and the booter as on GA102, but with the falcons of Turing
//! ([`FalconGen::Tu102`](super::FalconGen::Tu102)): the GSP and SEC2 configs say `bBootFromHs = NV_FALSE`
//! (kernel_sec2_ga100.c line 49), so `kgspExecuteHsFalcon_TU102` runs FWSEC through the
//! generic bootloader and the booter by PIO (`KGSP_FLCN_UCODE_BOOT_WITH_LOADER` /
//! `_DIRECT`, kernel_gsp_falcon_tu102.c). That path takes only a version-2 FWSEC descriptor
//! (`s_vbiosFillFlcnUcodeFromDescV2` makes the WITH_LOADER ucode; v3 makes FROM_HS, which
//! `kgspExecuteHsFalcon_TU102` refuses), hence the simulated VBIOS holds a v2 FWSEC, which
//! carries no signature and no ucode id: OpenRM reads the GSP ucode fuse only for FROM_HS
//! (kernel_gsp_frts_tu102.c lines 341-357). The SEC2 ucode fuses are Ampere's
//! (`ksec2ReadUcodeFuseVersion_GA100`, ga100 `dev_fuse.h`); GA100's `booter_load` and
//! `booter_unload` carry one signature each (patch meta: fuse version 0, engine mask 1, ucode
//! id 3), so `s_patchBooterUcodeSignature` takes signature 0 whatever the fuse says; the
//! simulated fuse reads version 0. The GSP-RM image is Turing's libos2 one (`gsp-570.144.bin`
//! of ga100 is tu102's file) with the `.fwsignature_ga100` section (the prefix and
//! `nv_firmware_chip_family_to_string(NV_FIRMWARE_CHIP_FAMILY_GA100)`,
//! `_kgspGetSectionNameForPrefix`).
//!
//! Classes: those of `gpuGetClassDescriptorList_GA100` (OpenRM 570.144, `g_gpu_class_list.c`)
//! that the simulator serves: AMPERE_CHANNEL_GPFIFO_A (0xc56f), AMPERE_A (0xc697),
//! AMPERE_COMPUTE_A (0xc6c0, QMD V03_00), AMPERE_DMA_COPY_A (0xc6b5), the usermode classes
//! (GA100 lists VOLTA_, TURING_ and AMPERE_USERMODE_A) and the generic objects. GA100 has
//! ten copy engines (CE0..CE9 in that list); the simulator models GR0 and four.

use super::booter::cot;
use super::turing::TURING_FALCON_BOOTER;
use super::{BootModel, ChipSpec, HOPPER_ENGINES};

const GIB: u64 = 1 << 30;

/// GA100 as an A100-PCIE-40GB.
pub static GA100: ChipSpec = ChipSpec {
    name: "ga100",
    product: "NVIDIA A100-PCIE-40GB (simulated GA100)",
    device_id: 0x20f1,
    subsystem: (0x10de, 0x145f),
    revision: 0xa1,
    pmc_boot_0: 0x1700_00a1,
    pmc_boot_42: 0x1700_00a1,
    vram_bytes: 40 * GIB,
    bar0_size: 16 << 20,
    bar1_size: 64 * GIB,
    bar3_size: 32 << 20,
    sm_count: 108,
    gpcs: 8,
    tpcs_per_gpc: 8,
    sms_per_tpc: 2,
    max_warps_per_sm: 64,
    sm_version: 0x800,
    fsp_ready_scratch: 0,
    // NV_PFB_NISO_FLUSH_SYSMEM_ADDR_HI / _ADDR (ga100 dev_fb.h; kmemsysProgramSysmemFlushBuffer_GA100).
    sysmem_flush: &[(0x0010_0c40, 0x0010_0c10)],
    sysmem_flush_shifted: true,
    bar_firewall: false,
    boot: BootModel::Booter,
    booter: Some(TURING_FALCON_BOOTER),
    pci_config_mirror: 0x8_8000,
    classes: GA100_CLASSES,
    cot: cot(".fwsignature_ga100"),
    engines: HOPPER_ENGINES,
};

/// The generic objects every GPU has, the usermode classes, then GA100's own.
const GA100_CLASSES: &[u32] = classes_after_generic_objects![
    0xc361, // VOLTA_USERMODE_A
    0xc461, // TURING_USERMODE_A
    0xc561, // AMPERE_USERMODE_A
    0xc46f, // TURING_CHANNEL_GPFIFO_A
    0xc56f, // AMPERE_CHANNEL_GPFIFO_A
    0xc697, // AMPERE_A
    0xc6c0, // AMPERE_COMPUTE_A
    0xc6b5, // AMPERE_DMA_COPY_A
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip::FalconGen;

    #[test]
    fn ga100_identifies_as_openrm_expects() {
        // NV_PMC_BOOT_42_ARCHITECTURE (29:24) GA100 0x17, implementation (23:20) 0: the
        // GA100 firmware family, not GA10x.
        assert_eq!(GA100.pmc_boot_42 >> 24 & 0x3f, 0x17);
        assert_eq!(GA100.pmc_boot_42 >> 20 & 0xf, 0);
        assert_eq!(GA100.boot, BootModel::Booter);
        assert_eq!(GA100.cot.gsp_signature_section, ".fwsignature_ga100");
        let b = GA100
            .booter
            .as_ref()
            .map(|b| (b.falcons, b.fwsec_desc_version));
        assert_eq!(b, Some((FalconGen::Tu102, 2)));
        assert!(GA100.sm_count <= GA100.gpcs * GA100.tpcs_per_gpc * GA100.sms_per_tpc);
        // The compute and copy classes of gpuGetClassDescriptorList_GA100.
        for class in [0xc56f, 0xc6c0, 0xc6b5, 0xc561] {
            assert!(GA100.classes.contains(&class), "{class:#x}");
        }
        assert!(
            !GA100.classes.contains(&0xc7c0),
            "AMPERE_COMPUTE_B is GA10x's"
        );
    }
}
