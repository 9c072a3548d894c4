//! `GspFwWprMeta`: where the GSP-RM images are in sysmem and how the write-protected region
//! (WPR2) at the end of VRAM is laid out; plus the FB-heap sizing of `gsp_fw_heap.h`.
//!
//! Two layouts:
//! - Ampere/Ada (booter path): the CPU computes every offset from the VRAM size, top down
//!   (VGA workspace, FRTS, boot binary, ELF, heap, WPR start, non-WPR heap), mirroring
//!   `kgspCalculateFbLayout_TU102` (`arch/turing/kernel_gsp_tu102.c`). The FRTS offset must
//!   equal the region FWSEC-FRTS is told to create.
//! - Hopper/Blackwell (FSP path): only sizes; the ACR in GSP-FMC fills the offsets, mirroring
//!   `kgspCalculateFbLayout_GH100` (`arch/hopper/kernel_gsp_gh100.c`).

use crate::abi::{GSP_FW_WPR_META_MAGIC, GSP_FW_WPR_META_REVISION, GspFwWprMeta};
use zerocopy::FromZeros;

const MB: u64 = 1 << 20;
const GB: u64 = 1 << 30;

/// Which set of `gsp_fw_heap.h` parameters a chip uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapFamily {
    /// Turing and GA100 (libos2: no OS carveout, base RM 8 MiB "Turing thru Ada", at least
    /// `GSP_FW_HEAP_SIZE_OVERRIDE_LIBOS2_MIN_MB` = 64 MiB). Which libos these chips' 570.144
    /// GSP-RM uses is UNCONFIRMED on silicon.
    Libos2,
    /// Ampere GA10x and Ada (libos3 baremetal carveout 22 MiB, base RM 8 MiB "Turing thru
    /// Ada"). Cross-check: 24 GiB gives 0x8100000, tinygrad's hard-coded AD102 value.
    AmpereAda,
    /// Hopper and Blackwell (22 MiB carveout, base RM 14 MiB "Hopper+"). Cross-check: 32 GiB
    /// gives 0x8700000, tinygrad's hard-coded GB202 value.
    HopperBlackwell,
}

/// `GSP_FW_HEAP_PARAM_OS_SIZE_LIBOS3_BAREMETAL`.
pub const HEAP_OS_CARVEOUT: u64 = 22 * MB;
/// `GSP_FW_HEAP_PARAM_SIZE_PER_GB_FB`.
pub const HEAP_SIZE_PER_GB_FB: u64 = 96 << 10;
/// `GSP_FW_HEAP_PARAM_CLIENT_ALLOC_SIZE`: 48 KiB for each of 2048 channels.
pub const HEAP_CLIENT_ALLOC: u64 = (48 << 10) * 2048;
/// `GSP_FW_HEAP_SIZE_OVERRIDE_LIBOS3_BAREMETAL_MIN_MB` (`kgspGetMinWprHeapSizeMB`): the
/// floor of the calculated heap. Its `_MAX_MB` (280) caps only a registry override, not the
/// calculated size.
pub const HEAP_MIN_MB: u64 = 88;

/// The GSP-RM FB heap size for a GPU with `fb_size` bytes of usable VRAM (baremetal, no
/// registry override, no pre-scrubbed-region limit): `_kgspCalculateFwHeapSize`
/// (`kernel_gsp.c`) with the constants of `gsp_fw_heap.h`:
/// `carveout + base + align_up(96 KiB * ceil_GiB(fb), 1 MiB) + align_up(96 MiB, 1 MiB)`,
/// at least 88 MiB. OpenRM caps it only by `maxScrubbedHeapSizeMB`, the pre-scrubbed top
/// of FB on chips without scrubber ucode (`kgspGetFwHeapSize`; unlimited as GH100+ call it,
/// with no anterior/posterior size); the 280 MiB `_MAX_MB` applies to registry overrides.
pub fn gsp_fw_heap_size(family: HeapFamily, fb_size: u64) -> u64 {
    let (carveout, base, min_mb) = match family {
        HeapFamily::Libos2 => (0, 8 * MB, 64),
        HeapFamily::AmpereAda => (HEAP_OS_CARVEOUT, 8 * MB, HEAP_MIN_MB),
        HeapFamily::HopperBlackwell => (HEAP_OS_CARVEOUT, 14 * MB, HEAP_MIN_MB),
    };
    let fb_gb = fb_size.div_ceil(GB);
    let heap = carveout
        + base
        + (HEAP_SIZE_PER_GB_FB * fb_gb).next_multiple_of(MB)
        + HEAP_CLIENT_ALLOC.next_multiple_of(MB);
    heap.max(min_mb * MB)
}

/// Where the images are and how big they are: the fields common to both layouts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WprMetaInputs {
    /// Bus address of page 0 of the radix3 buffer (`sysmemAddrOfRadix3Elf`).
    pub radix3_sysmem_addr: u64,
    /// Bytes of the GSP-RM ELF image (`sizeOfRadix3Elf`).
    pub radix3_image_size: u64,
    /// Bus address of the boot loader image (`sysmemAddrOfBootloader`).
    pub bootloader_sysmem_addr: u64,
    /// Bytes of the boot loader image (`sizeOfBootloader`).
    pub bootloader_size: u64,
    /// `RM_RISCV_UCODE_DESC.monitorCodeOffset`.
    pub bootloader_code_offset: u64,
    /// `RM_RISCV_UCODE_DESC.monitorDataOffset`.
    pub bootloader_data_offset: u64,
    /// `RM_RISCV_UCODE_DESC.manifestOffset`.
    pub bootloader_manifest_offset: u64,
    /// Bus address of the GSP-RM signature (`sysmemAddrOfSignature`).
    pub signature_sysmem_addr: u64,
    /// Bytes of the signature buffer (`sizeOfSignature`).
    pub signature_size: u64,
}

impl WprMetaInputs {
    fn base(&self) -> GspFwWprMeta {
        let mut m = GspFwWprMeta::new_zeroed();
        m.magic = GSP_FW_WPR_META_MAGIC;
        m.revision = GSP_FW_WPR_META_REVISION;
        m.sysmem_addr_of_radix3_elf = self.radix3_sysmem_addr;
        m.size_of_radix3_elf = self.radix3_image_size;
        m.sysmem_addr_of_bootloader = self.bootloader_sysmem_addr;
        m.size_of_bootloader = self.bootloader_size;
        m.bootloader_code_offset = self.bootloader_code_offset;
        m.bootloader_data_offset = self.bootloader_data_offset;
        m.bootloader_manifest_offset = self.bootloader_manifest_offset;
        m.sysmem_addr_of_signature = self.signature_sysmem_addr;
        m.size_of_signature = self.signature_size;
        m
    }
}

/// The sizes that shape the Ampere/Ada layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FbLayoutSizes {
    /// Usable VRAM bytes (`fbSize`).
    pub fb_size: u64,
    /// VGA workspace at the very end of FB: 1 MiB (`DRF_SIZE(NV_PRAMIN)`) when the VBIOS
    /// workspace is not relocated, 128 KiB when display relocates it.
    pub vga_workspace_size: u64,
    /// FRTS region (`kgspGetFrtsSize_TU102`: 1 MiB).
    pub frts_size: u64,
    /// Non-WPR heap (`kgspGetNonWprHeapSize`: 1 MiB on Ampere/Ada), aligned up to 1 MiB.
    pub non_wpr_heap_size: u64,
    /// GSP-RM heap (see [`gsp_fw_heap_size`]).
    pub heap_size: u64,
}

impl FbLayoutSizes {
    /// The values OpenRM uses on a headless Ampere/Ada board and tinygrad hard-codes.
    pub fn ampere_ada(fb_size: u64) -> Self {
        Self::for_family(HeapFamily::AmpereAda, fb_size)
    }

    /// The same layout with `family`'s heap (Turing and GA100: [`HeapFamily::Libos2`]).
    pub fn for_family(family: HeapFamily, fb_size: u64) -> Self {
        Self {
            fb_size,
            vga_workspace_size: MB,
            frts_size: MB,
            non_wpr_heap_size: MB,
            heap_size: gsp_fw_heap_size(family, fb_size),
        }
    }
}

/// The Ampere/Ada WPR metadata with all offsets, top of FB down
/// (`kgspCalculateFbLayout_TU102`, no MMU-locked range, no WPR end margin):
///
/// | field | value |
/// |---|---|
/// | vgaWorkspaceOffset | fbSize - vgaWorkspaceSize |
/// | gspFwWprEnd | align_down(vgaWorkspaceOffset, 128 KiB) |
/// | frtsOffset | gspFwWprEnd - frtsSize |
/// | bootBinOffset | align_down(frtsOffset - sizeOfBootloader, 4 KiB) |
/// | gspFwOffset | align_down(bootBinOffset - sizeOfRadix3Elf, 64 KiB) |
/// | gspFwHeapOffset | align_down(gspFwOffset - heap, 1 MiB) |
/// | gspFwHeapSize | align_down(gspFwOffset - gspFwHeapOffset, 1 MiB) |
/// | gspFwWprStart | gspFwHeapOffset - align_up(sizeof(meta), 1 MiB) |
/// | nonWprHeapOffset | gspFwWprStart - nonWprHeapSize |
/// | gspFwRsvdStart | nonWprHeapOffset |
///
/// tinygrad differs in one place: it does not align `bootBinOffset` down to 4 KiB.
/// Returns `None` if the images and heap do not fit in `fb_size`.
pub fn wpr_meta_ampere_ada(inputs: &WprMetaInputs, sizes: &FbLayoutSizes) -> Option<GspFwWprMeta> {
    let mut m = inputs.base();
    m.fb_size = sizes.fb_size;
    m.vga_workspace_offset = sizes.fb_size.checked_sub(sizes.vga_workspace_size)?;
    m.vga_workspace_size = sizes.vga_workspace_size;
    m.gsp_fw_wpr_end = align_down(m.vga_workspace_offset, 0x20000);
    m.frts_size = sizes.frts_size;
    m.frts_offset = m.gsp_fw_wpr_end.checked_sub(sizes.frts_size)?;
    m.boot_bin_offset = align_down(m.frts_offset.checked_sub(inputs.bootloader_size)?, 0x1000);
    m.gsp_fw_offset = align_down(
        m.boot_bin_offset.checked_sub(inputs.radix3_image_size)?,
        0x10000,
    );
    let non_wpr = sizes.non_wpr_heap_size.next_multiple_of(MB);
    let meta_size = (core::mem::size_of::<GspFwWprMeta>() as u64).next_multiple_of(MB);
    m.gsp_fw_heap_offset = align_down(m.gsp_fw_offset.checked_sub(sizes.heap_size)?, MB);
    m.gsp_fw_heap_size = align_down(m.gsp_fw_offset - m.gsp_fw_heap_offset, MB);
    m.gsp_fw_wpr_start = m.gsp_fw_heap_offset.checked_sub(meta_size)?;
    m.non_wpr_heap_size = non_wpr;
    m.non_wpr_heap_offset = m.gsp_fw_wpr_start.checked_sub(non_wpr)?;
    m.gsp_fw_rsvd_start = m.non_wpr_heap_offset;
    Some(m)
}

/// The sizes the Hopper/Blackwell layout requests from GSP-FMC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FmcWprSizes {
    /// `vgaWorkspaceSize`: 128 KiB.
    pub vga_workspace_size: u64,
    /// `pmuReservedSize` (`kpmuReservedMemorySizeGet`).
    pub pmu_reserved_size: u32,
    /// `nonWprHeapSize` (`kgspGetNonWprHeapSize`).
    pub non_wpr_heap_size: u64,
    /// `frtsSize`.
    pub frts_size: u64,
    /// `gspFwHeapSize` ([`gsp_fw_heap_size`]).
    pub heap_size: u64,
}

impl FmcWprSizes {
    /// GH100 (H100/H200): PMU reserve 0, non-WPR heap 2 MiB, FRTS 1 MiB (notes,
    /// `kgspGetNonWprHeapSize` 2097152 variant).
    pub fn gh100(fb_size: u64) -> Self {
        Self {
            vga_workspace_size: 0x20000,
            pmu_reserved_size: 0,
            non_wpr_heap_size: 0x200000,
            frts_size: MB,
            heap_size: gsp_fw_heap_size(HeapFamily::HopperBlackwell, fb_size),
        }
    }

    /// GB10x (GB100, GB102): GH100's 2 MiB non-WPR heap (`kgspGetNonWprHeapSize_d505ea`,
    /// which OpenRM's generated HAL table gives "GH100 | GB100 | GB102"; nouveau's
    /// `r570_wpr_libos3_gb10x`: `heap_size_non_wpr = 0x200000`) but Blackwell's PMU reserve,
    /// 0x1820000 (`r570_wpr_libos3_gb10x.rsvd_size_pmu`;
    /// [`PMU_RESERVED_BLACKWELL`](crate::fsp::PMU_RESERVED_BLACKWELL)), FRTS 1 MiB.
    pub fn gb10x(fb_size: u64) -> Self {
        Self {
            pmu_reserved_size: crate::fsp::PMU_RESERVED_BLACKWELL,
            ..Self::gh100(fb_size)
        }
    }

    /// GB20x: PMU reserve 0x1820000, non-WPR heap 0x220000 (the 2228224 variant), FRTS 1 MiB,
    /// as tinygrad sends for GB202.
    pub fn gb20x(fb_size: u64) -> Self {
        Self {
            vga_workspace_size: 0x20000,
            pmu_reserved_size: crate::fsp::PMU_RESERVED_BLACKWELL,
            non_wpr_heap_size: 0x220000,
            frts_size: MB,
            heap_size: gsp_fw_heap_size(HeapFamily::HopperBlackwell, fb_size),
        }
    }
}

/// The Hopper/Blackwell WPR metadata: images and sizes only (`kgspCalculateFbLayout_GH100`);
/// offsets stay 0 for the ACR to fill.
pub fn wpr_meta_fmc(inputs: &WprMetaInputs, sizes: &FmcWprSizes) -> GspFwWprMeta {
    let mut m = inputs.base();
    m.vga_workspace_size = sizes.vga_workspace_size;
    m.pmu_reserved_size = sizes.pmu_reserved_size;
    m.non_wpr_heap_size = sizes.non_wpr_heap_size;
    m.gsp_fw_heap_size = sizes.heap_size;
    m.frts_size = sizes.frts_size;
    m
}

fn align_down(x: u64, a: u64) -> u64 {
    x & !(a - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_formula_worked_examples() {
        // AD102 24 GiB: 22 + 8 + align_up(2.25 MiB) = 3 + 96 = 129 MiB (tinygrad: 0x8100000).
        assert_eq!(gsp_fw_heap_size(HeapFamily::AmpereAda, 24 * GB), 0x8100000);
        // GB202 32 GiB: 22 + 14 + 3 + 96 = 135 MiB (tinygrad: 0x8700000).
        assert_eq!(
            gsp_fw_heap_size(HeapFamily::HopperBlackwell, 32 * GB),
            0x8700000
        );
        // H200 141 GiB: 96 KiB * 141 = 13.2 MiB -> 14; 22 + 14 + 14 + 96 = 146 MiB.
        assert_eq!(
            gsp_fw_heap_size(HeapFamily::HopperBlackwell, 141 * GB),
            0x9200000
        );
        // 2 TiB (2048 GiB): 22 + 14 + 192 + 96 = 324 MiB, past the 280 MiB that caps only a
        // registry override (OpenRM's _kgspCalculateFwHeapSize sets no such top).
        assert_eq!(
            gsp_fw_heap_size(HeapFamily::HopperBlackwell, 2048 * GB),
            324 * MB
        );
        // H100 80 GiB: 7.5 MiB -> 8; 22 + 14 + 8 + 96 = 140 MiB.
        assert_eq!(
            gsp_fw_heap_size(HeapFamily::HopperBlackwell, 80 * GB),
            0x8C00000
        );
        // Usable FB is rounded up to whole GiB first.
        assert_eq!(
            gsp_fw_heap_size(HeapFamily::HopperBlackwell, 140 * GB + 1),
            0x9200000
        );
        // No FB at all: 22 + 8 + 96 = 126 MiB (the 88 MiB floor never binds).
        assert_eq!(gsp_fw_heap_size(HeapFamily::AmpereAda, 0), 126 * MB);
    }

    #[test]
    fn ampere_layout_is_ordered_and_aligned() {
        let inputs = WprMetaInputs {
            radix3_image_size: 0x2a0_1234,
            bootloader_size: 0x1_2345,
            ..Default::default()
        };
        let m = wpr_meta_ampere_ada(&inputs, &FbLayoutSizes::ampere_ada(24 * GB)).unwrap();
        assert_eq!(m.frts_offset, 24 * GB - 2 * MB);
        assert_eq!(m.boot_bin_offset % 0x1000, 0);
        assert!(m.boot_bin_offset + inputs.bootloader_size <= m.frts_offset);
        assert!(m.gsp_fw_offset + inputs.radix3_image_size <= m.boot_bin_offset);
        assert_eq!(m.gsp_fw_heap_size, 0x8100000);
        assert!(m.gsp_fw_heap_offset + m.gsp_fw_heap_size <= m.gsp_fw_offset);
        assert_eq!(m.gsp_fw_wpr_start, m.gsp_fw_heap_offset - MB);
        assert_eq!(m.non_wpr_heap_offset, m.gsp_fw_wpr_start - MB);
        assert!(wpr_meta_ampere_ada(&inputs, &FbLayoutSizes::ampere_ada(64 * MB)).is_none());
    }
}
