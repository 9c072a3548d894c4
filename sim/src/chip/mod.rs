//! The chip table: everything that differs between simulated chips, as data, so that a new
//! chip (GB100 was; with the booter issue GA102/AD102) is one more entry.
//!
//! Values come from NVIDIA's hwref headers (`dev_*.h` of each chip), OpenRM's sources and, for
//! GH100, what the H200 behind the `device` tool reports (`shared/notes/h200-machine.md`); for
//! GB100, what nvidia-smi reports of a B200.

/// A chip's class list: the objects every GPU has (root, device, subdevice, memory, VA space,
/// context share, channel group, debugger), then `$class`, the chip's own.
macro_rules! classes_after_generic_objects {
    ($($class:expr),* $(,)?) => {
        &[
            0x0000, // NV01_ROOT
            0x0080, // NV01_DEVICE_0
            0x2080, // NV20_SUBDEVICE_0
            0x0040, // NV01_MEMORY_LOCAL_USER
            0x003e, // NV01_MEMORY_SYSTEM
            0x0071, // NV01_MEMORY_SYSTEM_OS_DESCRIPTOR
            0x0070, // NV01_MEMORY_VIRTUAL
            0x90f1, // FERMI_VASPACE_A
            0x9067, // FERMI_CONTEXT_SHARE_A
            0xa06c, // KEPLER_CHANNEL_GROUP_A
            0x83de, // GT200_DEBUGGER
            $($class),*
        ]
    };
}

mod booter;
mod ga100;
mod turing;
pub use booter::{AD102, GA102};
pub use ga100::GA100;
pub use turing::TU102;

/// How the GPU's firmware is started on this chip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootModel {
    /// FSP verifies the GSP FMC (chain of trust), which starts GSP-RM (Hopper, Blackwell).
    FspChainOfTrust,
    /// FWSEC from the VBIOS carves out FRTS and raises WPR2; the booter on SEC2 starts GSP-RM
    /// on the GSP's RISC-V core (Turing to Ada; `kgspBootstrap_TU102`).
    Booter,
}

/// The generation of a booter-path chip's GSP and SEC2 falcons (what OpenRM's falcon HAL
/// picks: `kflcn*_TU102` or `kflcn*_GA102`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FalconGen {
    /// TU10x and GA100: no core switch (the core runs RISC-V after a reset,
    /// `kflcnResetIntoRiscv_TU102`: "Turing and GA100 do not have an explicit core switch"),
    /// no boot-ROM parameter registers (GA100's hwref has no `dev_falcon_second_pri.h`, its
    /// `dev_riscv_pri.h` only `CORE_SWITCH_RISCV_STATUS`, IRQMASK and IRQDEST), scrubbing in
    /// `DMACTL`; HS ucode loads by PIO or through the generic bootloader
    /// (`bBootFromHs = NV_FALSE`, kernel_sec2_ga100.c and kernel_gsp_tu102.c).
    Tu102,
    /// GA10x and AD10x: `RISCV_BCR_CTRL` core select, boot-ROM parameters, scrubbing in
    /// `HWCFG2`, HS ucode by DMA (`bBootFromHs = NV_TRUE`, kernel_gsp_ga102.c,
    /// kernel_sec2_ga102.c).
    Ga102,
}

/// Booter-path facts of one chip: its VBIOS's FWSEC and the ucode-version fuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BooterFacts {
    /// The falcons' generation.
    pub falcons: FalconGen,
    /// FWSEC's descriptor version in the VBIOS (3 on GA10x/AD10x: `FALCON_UCODE_DESC_V3`,
    /// what `kgspParseFwsecUcodeFromVbiosImg` expects there and tinygrad parses; 2 on GA100 and
    /// TU102: `FALCON_UCODE_DESC_V2`, run through the generic bootloader).
    pub fwsec_desc_version: u8,
    /// FWSEC's signatures (one per fuse version it supports).
    pub fwsec_signature_count: u8,
    /// FWSEC's ucode id (the built descriptor's `UcodeId`).
    pub fwsec_ucode_id: u32,
    /// The GSP ucode fuse version for FWSEC's ucode id: 1 selects the last of two
    /// signatures (`SignatureVersions` 0b11), the one tinygrad patches in.
    pub fwsec_fuse_version: u32,
    /// The booter's ucode id (its file's patch metadata: 3 on GA102/AD102).
    pub sec2_ucode_id: u32,
    /// The SEC2 ucode fuse version for it: 1 selects signature 0 of two
    /// (`sigIndex = numSigs - 1 - fuseVer`), the one the files' `patch_sig` names.
    pub sec2_fuse_version: u32,
}

/// A simulated chip's fixed facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChipSpec {
    /// Lower-case chip name, as firmware directories spell it (`"gh100"`).
    pub name: &'static str,
    /// The product it models ("NVIDIA H200").
    pub product: &'static str,
    /// PCI device id (vendor is 0x10de).
    pub device_id: u16,
    /// PCI subsystem vendor and subsystem id.
    pub subsystem: (u16, u16),
    /// PCI revision id.
    pub revision: u8,
    /// `NV_PMC_BOOT_0`.
    pub pmc_boot_0: u32,
    /// `NV_PMC_BOOT_42` (architecture 29:24, implementation 23:20).
    pub pmc_boot_42: u32,
    /// VRAM in bytes (also what `NV_USABLE_FB_SIZE_IN_MB` reports, in MiB).
    pub vram_bytes: u64,
    /// BAR0 size (registers).
    pub bar0_size: u64,
    /// BAR1 size (the VRAM aperture; at least the VRAM size, so tinygrad takes its large-BAR
    /// paths).
    pub bar1_size: u64,
    /// BAR3 size (instance memory aperture).
    pub bar3_size: u64,
    /// SMs enabled, and the design's GPC/TPC/SM counts.
    pub sm_count: u32,
    /// GPCs in the design.
    pub gpcs: u32,
    /// TPCs per GPC in the design.
    pub tpcs_per_gpc: u32,
    /// SMs per TPC.
    pub sms_per_tpc: u32,
    /// Warps per SM.
    pub max_warps_per_sm: u32,
    /// `sm_version` as RM reports it (0x900 on Hopper).
    pub sm_version: u32,
    /// BAR0 address of `NV_THERM_I2CS_SCRATCH`, which reads 0xff once the FSP is ready.
    pub fsp_ready_scratch: u32,
    /// The sysmem flush buffer's `(HI, LO)` register pairs, every pair of which holds the
    /// bus address as it is (`kmemsysProgramSysmemFlushBuffer_GH100`: FBHUB 0x100a38/0x100a34;
    /// `_GB100`: HSHUB0's pair and its egress copy; `_GB10B` for GB20x: FBHUB0
    /// 0x8a1d5c/0x8a1d58, nouveau's `gb10b/dev_fbhub.h`).
    pub sysmem_flush: &'static [(u32, u32)],
    /// Whether the chip has the config-space BAR firewall (`NV_EP_PCFG_GPU_VSEC_DEBUG_SEC_2`
    /// 0x2b8 bit 24, blackwell/gb202/dev_xtl_ep_pcfg_gpu.h), engaged while the GPU reboots.
    pub bar_firewall: bool,
    /// The sysmem flush registers hold the address >> 8 (LO, bits 39:8) and bits 63:40 (HI),
    /// `NV_PFB_NISO_FLUSH_SYSMEM_ADDR{,_HI}` of GA100..AD10x (ga100 `dev_fb.h`), instead of
    /// the address as it is (Hopper on).
    pub sysmem_flush_shifted: bool,
    /// How firmware starts.
    pub boot: BootModel,
    /// The booter path's facts (`BootModel::Booter` chips).
    pub booter: Option<BooterFacts>,
    /// `GspSystemInfo.pciConfigMirrorBase`: the BAR0 mirror of PCI config space
    /// (`NV_PCFG` 0x88000 on Turing..Ada, tu102 `dev_nv_xve.h` and tinygrad's `[0x88000,
    /// 0x92000][fmc_boot]`; 0x92000 from Hopper on, `NV_EP_PCFG_GPU`).
    pub pci_config_mirror: u32,
    /// The classes GSP-RM offers (NV0080_CTRL_CMD_GPU_GET_CLASSLIST), in RM's order.
    pub classes: &'static [u32],
    /// What the FSP's chain of trust and the GSP-FMC expect of this chip.
    pub cot: CotFacts,
    /// The engines GSP-RM reports (`NV2080_CTRL_CMD_FIFO_GET_DEVICE_INFO_TABLE`).
    pub engines: &'static [EngineSpec],
}

impl ChipSpec {
    /// The generation of the booter path's falcons (GA102's where the chip has none).
    pub fn falcon_gen(&self) -> FalconGen {
        self.booter.as_ref().map_or(FalconGen::Ga102, |b| b.falcons)
    }
}

/// Chain-of-trust facts of one chip: the `NVDM_PAYLOAD_COT` the FSP accepts and the
/// `GspFwWprMeta` sizes the GSP-FMC accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CotFacts {
    /// `NVDM_PAYLOAD_COT.version` (`pKernelFsp->cotPayloadVersion`: 1 on Hopper, 2 on
    /// Blackwell, as tinygrad sends it for GB20x).
    pub version: u16,
    /// Bytes of the FMC signature in `signature[]` (`cotPayloadSignatureSize`; the rest of
    /// the 384-byte array is zero): RSA-3K on GH100, ECDSA-P384 on GB20x (the sizes of the
    /// `signature` and `publickey` sections of each chip's `fmc-570.144.bin`).
    pub signature_bytes: usize,
    /// Bytes of the public key in `publicKey[]` (`cotPayloadPublicKeySize`).
    pub public_key_bytes: usize,
    /// `frtsVidmemOffset` of a first boot: `memmgrGetFBEndReserveSizeEstimate` (0x200000
    /// on GM107..GH100, `_GB100`'s 0x220000 on GB10x/GB20x: mem_mgr_gb100.c, installed for
    /// GB100/GB102/GB20x by OpenRM's generated `g_mem_mgr_nvoc.c`), plus, when the PMU
    /// reserves memory, `kfspGetExtraReservedMemorySize` (4 KiB) and the PMU reservation,
    /// aligned up to 2 MiB (`kfspPrepareBootCommands_GH100`). A boot retry adds 2 MiB
    /// multiples.
    pub frts_vidmem_offset: u64,
    /// `GspFwWprMeta.pmuReservedSize` (`kpmuReservedMemorySizeGet`: 0 without a self-init
    /// PMU; on Blackwell 8 MiB backing store + 16 MiB surfaces + 4 KiB, aligned to 128 KiB
    /// = 0x1820000: nouveau's `r570_wpr_libos3_gb10x` and `_gb20x`, `rsvd_size_pmu`).
    pub pmu_reserved_size: u64,
    /// `GspFwWprMeta.nonWprHeapSize` (`kgspGetNonWprHeapSize`: 2 MiB on GH100/GB100/GB102,
    /// GB20x 0x220000; `g_kernel_gsp_nvoc.h`, nouveau's `heap_size_non_wpr`).
    pub non_wpr_heap_size: u64,
    /// The section of `gsp-570.144.bin` holding this chip's GSP-RM signature.
    pub gsp_signature_section: &'static str,
}

/// One engine of the device-info table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineSpec {
    /// `NV2080_ENGINE_TYPE_*` (`cl2080_notification.h`).
    pub rm_engine_type: u32,
    /// Runlist id.
    pub runlist: u32,
    /// Name as RM prints it.
    pub name: &'static str,
}

/// The chips the simulator models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimChip {
    /// Hopper GH100 as an H200 (device id 0x2335, 141 GiB, 132 SMs).
    Gh100,
    /// Blackwell GB202 (RTX 5090: device id 0x2b85, 32 GiB, 170 SMs).
    Gb202,
    /// Blackwell GB100 as a B200 (device id 0x2901, 179 GiB, 148 SMs).
    Gb100,
    /// Ampere GA102 (RTX 3090: device id 0x2204, 24 GiB, 82 SMs), booter path.
    Ga102,
    /// Ada AD102 (RTX 4090: device id 0x2684, 24 GiB, 128 SMs), booter path.
    Ad102,
    /// Ampere GA100 (A100-PCIE-40GB: device id 0x20f1, 40 GiB, 108 SMs), booter path with
    /// Turing's falcons.
    Ga100,
    /// Turing TU102 (RTX 2080 Ti: device id 0x1e04, 11 GiB, 68 SMs), booter path.
    Tu102,
}

impl SimChip {
    /// Every simulated chip.
    pub const ALL: [SimChip; 7] = [
        SimChip::Gh100,
        SimChip::Gb100,
        SimChip::Gb202,
        SimChip::Ga102,
        SimChip::Ad102,
        SimChip::Ga100,
        SimChip::Tu102,
    ];

    /// The chip's facts.
    pub fn spec(self) -> &'static ChipSpec {
        match self {
            SimChip::Gh100 => &GH100_H200,
            SimChip::Gb202 => &GB202,
            SimChip::Gb100 => &GB100_B200,
            SimChip::Ga102 => &booter::GA102,
            SimChip::Ad102 => &booter::AD102,
            SimChip::Ga100 => &ga100::GA100,
            SimChip::Tu102 => &turing::TU102,
        }
    }

    /// The chip named `name` (one of [`SimChip::names`]; case-insensitive).
    pub fn from_name(name: &str) -> Option<SimChip> {
        SimChip::ALL
            .into_iter()
            .find(|c| c.spec().name.eq_ignore_ascii_case(name))
    }

    /// Every simulated chip's name, in [`SimChip::ALL`]'s order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        SimChip::ALL.into_iter().map(|c| c.spec().name)
    }
}

const GIB: u64 = 1 << 30;

/// The H200 as the `device` tool's machine reports it (`h200-machine.md`): 143,771 MiB of
/// HBM3e of which nvidia-smi shows 141 GiB usable, 8 GPCs x 9 TPCs x 2 SMs in the design and
/// 132 SMs enabled, sm_version 0x900.
pub static GH100_H200: ChipSpec = ChipSpec {
    name: "gh100",
    product: "NVIDIA H200 (simulated)",
    device_id: 0x2335,
    subsystem: (0x10de, 0x18be),
    revision: 0xa1,
    pmc_boot_0: 0x1800_00a1,
    pmc_boot_42: 0x1800_00a1,
    vram_bytes: 143_771 << 20,
    bar0_size: 16 << 20,
    bar1_size: 256 * GIB,
    bar3_size: 32 << 20,
    sm_count: 132,
    gpcs: 8,
    tpcs_per_gpc: 9,
    sms_per_tpc: 2,
    max_warps_per_sm: 64,
    sm_version: 0x900,
    fsp_ready_scratch: 0x0002_00bc,
    sysmem_flush: &[(0x0010_0a38, 0x0010_0a34)],
    bar_firewall: false,
    sysmem_flush_shifted: false,
    boot: BootModel::FspChainOfTrust,
    booter: None,
    pci_config_mirror: 0x9_2000,
    classes: GH100_CLASSES,
    cot: CotFacts {
        version: 1,
        signature_bytes: 384,
        public_key_bytes: 384,
        frts_vidmem_offset: 0x20_0000,
        pmu_reserved_size: 0,
        non_wpr_heap_size: 0x20_0000,
        gsp_signature_section: ".fwsignature_gh100",
    },
    engines: HOPPER_ENGINES,
};

/// GB202 (GeForce RTX 5090): 32 GiB GDDR7, 12 GPCs x 8 TPCs x 2 SMs, 170 SMs enabled,
/// sm_version 0xa04 (`NV2080_CTRL_GR_INFO_SM_VERSION_10_04`, what RM reports on GB20x, whose ISA
/// is sm_120: tinygrad maps it so; ctrl2080gr.h has no 12.x value).
pub static GB202: ChipSpec = ChipSpec {
    name: "gb202",
    product: "NVIDIA GeForce RTX 5090 (simulated GB202)",
    device_id: 0x2b85,
    subsystem: (0x10de, 0x2057),
    revision: 0xa1,
    pmc_boot_0: 0x1b20_00a1,
    pmc_boot_42: 0x1b20_00a1,
    vram_bytes: 32 * GIB,
    bar0_size: 64 << 20,
    bar1_size: 32 * GIB,
    bar3_size: 32 << 20,
    sm_count: 170,
    gpcs: 12,
    tpcs_per_gpc: 8,
    sms_per_tpc: 2,
    max_warps_per_sm: 48,
    sm_version: 0xa04,
    fsp_ready_scratch: 0x00ad_00bc,
    sysmem_flush: &[(0x008a_1d5c, 0x008a_1d58)],
    bar_firewall: true,
    sysmem_flush_shifted: false,
    boot: BootModel::FspChainOfTrust,
    booter: None,
    pci_config_mirror: 0x9_2000,
    classes: GB202_CLASSES,
    cot: CotFacts {
        version: 2,
        signature_bytes: 96,
        public_key_bytes: 97,
        frts_vidmem_offset: 0x1c0_0000,
        pmu_reserved_size: 0x182_0000,
        non_wpr_heap_size: 0x22_0000,
        gsp_signature_section: ".fwsignature_gb20x",
    },
    engines: BLACKWELL_ENGINES,
};

/// GB100 as a B200: PCI id 0x2901 with subsystem 10de:1999 (OpenRM 570.144's README lists
/// "NVIDIA B200 | 2901 10DE 1999"); `BOOT_42` architecture 0x1a (`GB100`), implementation 0
/// (core's chip table, nv_ref.h); 183,359 MiB, what nvidia-smi reports for a B200 ("0MiB /
/// 183359MiB"), of its 192 GB of HBM3e; 148 SMs enabled (deviceQuery's "multiprocessors:
/// 148") of a design counted here as 8 GPCs x 10 TPCs x 2 SMs (not in the reference tree;
/// only the bound matters to the simulator); sm_version 0xa00
/// (`NV2080_CTRL_GR_INFO_SM_VERSION_10_00`, ctrl2080gr.h: sm_100); 64 warps per SM (the CUDA
/// guide's compute capability 10.0). FSP: GH100's `NV_THERM_I2CS_SCRATCH` (0x200bc;
/// `kfspWaitForSecureBoot_GB100` reads the same register as GH100), COT version 2 with
/// the ECDSA P-384 signature of gb100's `fmc-570.144.bin` (its `signature` section is 96 bytes,
/// `publickey` 97), Blackwell's PMU reserve and FRTS (see [`CotFacts`]) and GH100's 2 MiB
/// non-WPR heap. BAR0 is taken to be 64 MiB as on GB202 (unconfirmed for GB100).
pub static GB100_B200: ChipSpec = ChipSpec {
    name: "gb100",
    product: "NVIDIA B200 (simulated GB100)",
    device_id: 0x2901,
    subsystem: (0x10de, 0x1999),
    revision: 0xa1,
    pmc_boot_0: 0x1a00_00a1,
    pmc_boot_42: 0x1a00_00a1,
    vram_bytes: 183_359 << 20,
    bar0_size: 64 << 20,
    bar1_size: 256 * GIB,
    bar3_size: 32 << 20,
    sm_count: 148,
    gpcs: 8,
    tpcs_per_gpc: 10,
    sms_per_tpc: 2,
    max_warps_per_sm: 64,
    sm_version: 0xa00,
    fsp_ready_scratch: 0x0002_00bc,
    // GB10x: HSHUB0 (0x870000) holds the flush address twice, the primary pair and its
    // egress copy (kmemsysProgramSysmemFlushBuffer_GB100; dev_hshub_base.h offsets).
    sysmem_flush: &[(0x0087_0e54, 0x0087_0e50), (0x0087_06c4, 0x0087_06c0)],
    bar_firewall: false,
    sysmem_flush_shifted: false,
    boot: BootModel::FspChainOfTrust,
    booter: None,
    pci_config_mirror: 0x9_2000,
    classes: GB100_CLASSES,
    cot: CotFacts {
        version: 2,
        signature_bytes: 96,
        public_key_bytes: 97,
        frts_vidmem_offset: 0x1c0_0000,
        pmu_reserved_size: 0x182_0000,
        non_wpr_heap_size: 0x20_0000,
        gsp_signature_section: ".fwsignature_gb10x",
    },
    engines: HOPPER_ENGINES,
};

/// Hopper's engines: GR0 on runlist 0 (tinygrad's PCI path, which works on silicon, rings
/// its channels' doorbells with the runlist of engine type 0, i.e. 0) and copy engines on
/// their own runlists. `NV2080_ENGINE_TYPE_GRAPHICS` = 1, `_COPY(i)` = 9 + i.
const HOPPER_ENGINES: &[EngineSpec] = &[
    EngineSpec {
        rm_engine_type: 0x01,
        runlist: 0,
        name: "GR0",
    },
    EngineSpec {
        rm_engine_type: 0x09,
        runlist: 1,
        name: "CE0",
    },
    EngineSpec {
        rm_engine_type: 0x0a,
        runlist: 2,
        name: "CE1",
    },
    EngineSpec {
        rm_engine_type: 0x0b,
        runlist: 3,
        name: "CE2",
    },
    EngineSpec {
        rm_engine_type: 0x0c,
        runlist: 4,
        name: "CE3",
    },
];

/// Blackwell GB20x's engines: Hopper's GR0, CE0 and CE1 (fewer copy engines).
pub(crate) const BLACKWELL_ENGINES: &[EngineSpec] = HOPPER_ENGINES.split_at(3).0;

/// GH100's class list: the classes the H200 lists (`h200-machine.md`) that the simulator
/// serves. Not AMPERE_COMPUTE_B / AMPERE_DMA_COPY_B: the H200 does not list them.
const GH100_CLASSES: &[u32] = classes_after_generic_objects![
    0xc361, // VOLTA_USERMODE_A
    0xc461, // TURING_USERMODE_A
    0xc561, // AMPERE_USERMODE_A
    0xc661, // HOPPER_USERMODE_A
    0xc46f, // TURING_CHANNEL_GPFIFO_A
    0xc56f, // AMPERE_CHANNEL_GPFIFO_A
    0xc86f, // HOPPER_CHANNEL_GPFIFO_A
    0xcb97, // HOPPER_A
    0xcbc0, // HOPPER_COMPUTE_A
    0xc8b5, // HOPPER_DMA_COPY_A
    0xcba2, // HOPPER_SEC2_WORK_LAUNCH_A
];

/// GB100's class list: the classes of `gpuGetClassDescriptorList_GB100` (OpenRM 570.144,
/// `g_gpu_class_list.c`) that the simulator serves, after the objects every GPU has. GB100
/// lists HOPPER_USERMODE_A but no BLACKWELL_USERMODE_A, BLACKWELL_COMPUTE_A (0xcdc0, QMD
/// V05_00, clcdc0qmd.h) and BLACKWELL_DMA_COPY_A (0xc9b5), not the _B classes of GB20x.
const GB100_CLASSES: &[u32] = classes_after_generic_objects![
    0xc361, // VOLTA_USERMODE_A
    0xc461, // TURING_USERMODE_A
    0xc561, // AMPERE_USERMODE_A
    0xc661, // HOPPER_USERMODE_A
    0xc46f, // TURING_CHANNEL_GPFIFO_A
    0xc56f, // AMPERE_CHANNEL_GPFIFO_A
    0xc86f, // HOPPER_CHANNEL_GPFIFO_A
    0xc96f, // BLACKWELL_CHANNEL_GPFIFO_A
    0xcd97, // BLACKWELL_A
    0xcdc0, // BLACKWELL_COMPUTE_A
    0xc9b5, // BLACKWELL_DMA_COPY_A
    0xcba2, // HOPPER_SEC2_WORK_LAUNCH_A
];

/// GB202's class list (the classes tinygrad and nvbare use on GB20x).
const GB202_CLASSES: &[u32] = classes_after_generic_objects![
    0xc361, 0xc461, 0xc561, 0xc661, 0xc761, // usermode A (Volta..Blackwell)
    0xc96f, // BLACKWELL_CHANNEL_GPFIFO_A
    0xca6f, // BLACKWELL_CHANNEL_GPFIFO_B
    0xce97, // BLACKWELL_B
    0xcec0, // BLACKWELL_COMPUTE_B
    0xcab5, // BLACKWELL_DMA_COPY_B
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chips_are_found_by_name_and_identify_themselves() {
        for chip in SimChip::ALL {
            let s = chip.spec();
            assert_eq!(SimChip::from_name(&s.name.to_uppercase()), Some(chip));
            assert!(s.bar1_size >= s.vram_bytes, "{}: large BAR1", s.name);
            assert!(s.sm_count <= s.gpcs * s.tpcs_per_gpc * s.sms_per_tpc);
        }
        // NV_PMC_BOOT_42_ARCHITECTURE (29:24): GH100 0x18, GB200 0x1b (nv_ref.h).
        assert_eq!(GH100_H200.pmc_boot_42 >> 24 & 0x3f, 0x18);
        assert_eq!(GB202.pmc_boot_42 >> 24 & 0x3f, 0x1b);
        assert_eq!(GB202.pmc_boot_42 >> 20 & 0xf, 0x2);
        assert_eq!(GB100_B200.pmc_boot_42 >> 24 & 0x3f, 0x1a);
        assert_eq!(GB100_B200.pmc_boot_42 >> 20 & 0xf, 0x0);
    }

    #[test]
    fn blackwell_shares_the_pmu_reserve_and_frts_offset() {
        // kfspPrepareBootCommands_GH100 with memmgrGetFBEndReserveSizeEstimate_GB100.
        for s in [&GB100_B200, &GB202] {
            let frts = (0x22_0000 + 0x1000 + s.cot.pmu_reserved_size).next_multiple_of(0x20_0000);
            assert_eq!(s.cot.frts_vidmem_offset, frts, "{}", s.name);
            assert_eq!(s.cot.pmu_reserved_size, 0x182_0000, "{}", s.name);
        }
        assert_eq!(
            GB100_B200.cot.non_wpr_heap_size,
            GH100_H200.cot.non_wpr_heap_size
        );
    }
}
