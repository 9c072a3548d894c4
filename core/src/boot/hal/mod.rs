//! What differs by chip, nova-core's way: one small trait per block that differs, one file
//! per chip family, newer chips calling older chips' functions where they behave the same,
//! and one `match` ([`for_chip`]) that picks a chip's blocks and with them its boot path.
//!
//! FSP path ([`ChipHal`]): [`FspHal`] (the FSP boot-status register and the chain-of-trust
//! payload), [`FbHal`] (the WPR2 sizes requested from GSP-FMC and where FRTS goes),
//! [`FirmwareHal`] (the GSP-RM image's signature and the pinned files); [`gh100`],
//! [`gb100`] (GH100's FSP), [`gb202`].
//!
//! Booter path ([`BooterChipHal`]): [`BooterHal`] (the falcon generation, the ucode fuses,
//! the FB layout sizes, the GSP-RM image's signature); [`tu102`], [`ga100`] (Turing's
//! falcons, Ampere's fuses), [`ga102`], [`ad102`] (GA10x's everything).

pub mod ad102;
pub mod ga100;
pub mod ga102;
pub mod gb100;
pub mod gb202;
pub mod gh100;
pub mod tu102;

use nvbare_gsp::boot::wpr_meta::FmcWprSizes;
use nvbare_gsp::firmware::{FmcSignatureScheme, GspSignatureTarget};
use nvbare_gsp::fsp::CotParams;

use nvbare_gsp::boot::wpr_meta::FbLayoutSizes;

use crate::chip::{Arch, Chip};
use crate::falcon::FalconHal;
use crate::regs::secure_boot::FuseEngine;

/// The FSP block: how to tell the FSP finished its own boot, and what the COT payload says.
pub trait FspHal: Sync {
    /// BAR0 address of `NV_THERM_I2CS_SCRATCH`, which reads 0xff once the FSP booted.
    fn boot_status_register(&self) -> u32;
    /// How long the FSP may take to report its boot complete after a reset, in ns.
    fn boot_timeout_ns(&self) -> u64;
    /// The COT payload's numbers for a boot with GSP-FMC at `fmc_addr` and
    /// `GSP_FMC_BOOT_PARAMS` at `boot_args_addr` (bus addresses).
    fn cot_params(&self, fmc_addr: u64, boot_args_addr: u64) -> CotParams;
}

/// The framebuffer block: the sizes the WPR metadata asks GSP-FMC to reserve, and the
/// FRTS region FSP carves out.
pub trait FbHal: Sync {
    /// `GspFwWprMeta`'s size fields for a GPU with `fb_size` bytes of usable VRAM
    /// (`kgspCalculateFbLayout_GH100`).
    fn wpr_sizes(&self, fb_size: u64) -> FmcWprSizes;
    /// Distance of FRTS from the end of FB (`frtsVidmemOffset` of the COT payload).
    fn frts_offset_from_end(&self) -> u64;
}

/// The firmware block: which files are this chip's.
pub trait FirmwareHal: Sync {
    /// The signature section of `gsp-570.144.bin` the chip's boot ROM checks.
    fn signature_target(&self) -> GspSignatureTarget;
    /// The signature scheme FSP checks the FMC with (fixes the COT key and signature sizes).
    fn fmc_scheme(&self) -> FmcSignatureScheme;
    /// SHA-256 of the chip's `bootloader-570.144.bin` and `fmc-570.144.bin` as NVIDIA ships
    /// them (`shared/firmware/570.144.sha256`).
    fn pinned_digests(&self) -> PinnedDigests;
}

/// SHA-256 digests of the 570.144 files of one chip family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinnedDigests {
    /// `bootloader-570.144.bin`.
    pub bootloader: [u8; 32],
    /// `fmc-570.144.bin`.
    pub fmc: [u8; 32],
}

/// The blocks of one chip.
#[derive(Clone, Copy)]
pub struct ChipHal {
    /// The chip.
    pub chip: Chip,
    /// FSP.
    pub fsp: &'static dyn FspHal,
    /// Framebuffer layout.
    pub fb: &'static dyn FbHal,
    /// Firmware files.
    pub firmware: &'static dyn FirmwareHal,
}

impl core::fmt::Debug for ChipHal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ChipHal({})", self.chip)
    }
}

/// The booter block (Turing to Ada): what FWSEC, the booter and the layout need.
pub trait BooterHal: Sync {
    /// The generation of the chip's GSP and SEC2 falcons.
    fn falcon(&self) -> &'static dyn FalconHal;
    /// The BAR0 address of the fuse holding the version of `engine`'s ucode `ucode_id`, or
    /// `None` where the chip reads version 0 (Turing).
    fn ucode_fuse_address(&self, engine: FuseEngine, ucode_id: u32) -> Option<u32>;
    /// The FB layout's sizes for `fb_size` bytes of usable VRAM.
    fn layout_sizes(&self, fb_size: u64) -> FbLayoutSizes;
    /// The signature section of `gsp-570.144.bin` the booter checks for `chip`.
    fn signature_target(&self, chip: Chip) -> nvbare_gsp::firmware::GspSignatureTarget;
}

/// The blocks of one booter-path chip.
#[derive(Clone, Copy)]
pub struct BooterChipHal {
    /// The chip.
    pub chip: Chip,
    /// Its booter block.
    pub booter: &'static dyn BooterHal,
}

impl core::fmt::Debug for BooterChipHal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "BooterChipHal({})", self.chip)
    }
}

/// A chip's boot HAL: its blocks, which say its boot path.
#[derive(Clone, Copy, Debug)]
pub enum BootHal {
    /// Hopper and Blackwell: the FSP chain of trust.
    Fsp(ChipHal),
    /// Turing, Ampere, Ada: FWSEC and the SEC2 booter.
    Booter(BooterChipHal),
}

impl BootHal {
    /// The chip.
    pub fn chip(&self) -> Chip {
        match self {
            BootHal::Fsp(h) => h.chip,
            BootHal::Booter(h) => h.chip,
        }
    }

    /// The FSP-path blocks, if the chip boots that way.
    pub fn fsp(self) -> Option<ChipHal> {
        match self {
            BootHal::Fsp(h) => Some(h),
            BootHal::Booter(_) => None,
        }
    }

    /// The booter-path blocks, if the chip boots that way.
    pub fn booter(self) -> Option<BooterChipHal> {
        match self {
            BootHal::Booter(h) => Some(h),
            BootHal::Fsp(_) => None,
        }
    }
}

/// The boot HAL of `chip`: the one `match` that picks every chip's blocks.
pub fn for_chip(chip: Chip) -> BootHal {
    let fsp = |fsp: &'static dyn FspHal, fb: &'static dyn FbHal, firmware| {
        BootHal::Fsp(ChipHal {
            chip,
            fsp,
            fb,
            firmware,
        })
    };
    let booter = |booter| BootHal::Booter(BooterChipHal { chip, booter });
    match (chip.arch(), chip) {
        (Arch::Turing, _) => booter(&tu102::Tu10x),
        (Arch::Ampere, Chip::GA100) => booter(&ga100::Ga100),
        (Arch::Ampere, _) => booter(&ga102::Ga10x),
        (Arch::Ada, _) => booter(&ad102::Ad10x),
        (Arch::Hopper, _) => fsp(&gh100::Gh100, &gh100::Gh100, &gh100::Gh100),
        (Arch::BlackwellGb10x, _) => fsp(&gb100::Gb10x, &gb100::Gb10x, &gb100::Gb10x),
        (Arch::BlackwellGb20x, _) => fsp(&gb202::Gb20x, &gb202::Gb20x, &gb202::Gb20x),
    }
}

/// The FSP block of an architecture, before the exact chip is known (the readiness waits
/// that come before `NV_PMC_BOOT_42` may be read); `None` for the booter architectures.
pub fn for_arch(arch: Arch) -> Option<&'static dyn FspHal> {
    match arch {
        Arch::Hopper => Some(&gh100::Gh100),
        Arch::BlackwellGb10x => Some(&gb100::Gb10x),
        Arch::BlackwellGb20x => Some(&gb202::Gb20x),
        Arch::Turing | Arch::Ampere | Arch::Ada => None,
    }
}

/// Parses a 64-digit hex string at compile time (for the pinned digests).
pub(crate) const fn sha256_hex(s: &str) -> [u8; 32] {
    const fn nibble(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            // PANIC: only reached at compile time, for a malformed literal in this crate.
            _ => panic!("not a lower-case hex digit"),
        }
    }
    let b = s.as_bytes();
    assert!(b.len() == 64, "a SHA-256 is 64 hex digits");
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = nibble(b[2 * i]) << 4 | nibble(b[2 * i + 1]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_chip_has_the_hal_of_its_boot_path() {
        use crate::chip::BootPath;
        for chip in Chip::ALL {
            let hal = for_chip(*chip);
            assert_eq!(hal.chip(), *chip);
            match chip.arch().boot_path() {
                BootPath::Sec2Booter => assert!(hal.booter().is_some(), "{chip}"),
                BootPath::FspChainOfTrust => assert!(hal.fsp().is_some(), "{chip}"),
            }
        }
    }

    #[test]
    fn booter_chips_differ_where_openrm_says() {
        let tu = for_chip(Chip::TU102).booter().unwrap().booter;
        let ga100 = for_chip(Chip::GA100).booter().unwrap().booter;
        let ga = for_chip(Chip::GA104).booter().unwrap().booter;
        let ad = for_chip(Chip::AD102).booter().unwrap().booter;
        assert!(!tu.falcon().boots_from_hs());
        assert!(!ga100.falcon().boots_from_hs());
        assert!(ga.falcon().boots_from_hs() && ad.falcon().boots_from_hs());
        assert_eq!(tu.ucode_fuse_address(FuseEngine::Sec2, 1), None);
        assert_eq!(
            ga100.ucode_fuse_address(FuseEngine::Sec2, 1),
            Some(0x824140)
        );
        assert_eq!(ad.ucode_fuse_address(FuseEngine::Gsp, 2), Some(0x8241c4));
        assert_eq!(
            tu.signature_target(Chip::TU117).section_name(false),
            ".fwsignature_tu11x"
        );
        assert_eq!(
            ad.signature_target(Chip::AD104).section_name(false),
            ".fwsignature_ad10x"
        );
        // tinygrad's AD102 heap for 24 GiB.
        assert_eq!(ad.layout_sizes(24 << 30).heap_size, 0x8100000);
        assert!(tu.layout_sizes(24 << 30).heap_size < ad.layout_sizes(24 << 30).heap_size);
    }

    #[test]
    fn chips_differ_where_the_notes_say() {
        let gh = for_chip(Chip::GH100).fsp().unwrap();
        let gb = for_chip(Chip::GB202).fsp().unwrap();
        let gb1 = for_chip(Chip::GB100).fsp().unwrap();
        assert_eq!(gh.fsp.boot_status_register(), 0x200bc);
        assert_eq!(gb1.fsp.boot_status_register(), 0x200bc);
        assert_eq!(gb.fsp.boot_status_register(), 0xad00bc);
        assert_eq!(gh.fsp.cot_params(1, 2).version, 1);
        assert_eq!(gb.fsp.cot_params(1, 2).version, 2);
        assert_eq!(gh.fb.frts_offset_from_end(), 0x200000);
        assert_eq!(gb.fb.frts_offset_from_end(), 0x1C00000);
        assert_eq!(
            gh.fsp.cot_params(1, 2).frts_vidmem_offset,
            gh.fb.frts_offset_from_end()
        );
        assert_eq!(
            gb.fsp.cot_params(1, 2).frts_vidmem_offset,
            gb.fb.frts_offset_from_end()
        );
        assert_eq!(gh.firmware.fmc_scheme(), FmcSignatureScheme::Rsa3072);
        assert_eq!(gb.firmware.fmc_scheme(), FmcSignatureScheme::EcdsaP384);
        assert_eq!(
            gh.firmware.signature_target().section_name(false),
            ".fwsignature_gh100"
        );
        assert_ne!(gh.firmware.pinned_digests(), gb.firmware.pinned_digests());
    }

    #[test]
    fn gh100_wpr_sizes_are_the_notes_figures() {
        let gh = for_chip(Chip::GH100).fsp().unwrap();
        // The H200: 143771 MiB usable -> 141 GiB -> a 146 MiB heap.
        let s = gh.fb.wpr_sizes(143_771 << 20);
        assert_eq!(s.vga_workspace_size, 0x20000);
        assert_eq!(s.pmu_reserved_size, 0);
        assert_eq!(s.non_wpr_heap_size, 0x200000);
        assert_eq!(s.frts_size, 0x100000);
        assert_eq!(s.heap_size, 0x9200000);
    }

    #[test]
    fn gb10x_reserves_the_pmu_memory_and_moves_frts_down() {
        // nouveau r570_wpr_libos3_gb10x: rsvd_size_pmu = ALIGN(0x800000 + 0x1000000 + 0x1000,
        // 0x20000), heap_size_non_wpr = 0x200000; FRTS at ALIGN(0x200000 + 0x1820000, 2 MiB).
        // OpenRM: 0x220000 (memmgrGetFBEndReserveSizeEstimate_GB100) + 4 KiB + 0x1820000,
        // aligned to 2 MiB: the same 0x1C00000.
        let gb1 = for_chip(Chip::GB100).fsp().unwrap();
        let gb = for_chip(Chip::GB202).fsp().unwrap();
        let s = gb1.fb.wpr_sizes(180 << 30);
        assert_eq!(s.pmu_reserved_size, 0x1820000);
        assert_eq!(s.non_wpr_heap_size, 0x200000);
        assert_eq!(s.vga_workspace_size, 0x20000);
        assert_eq!(s.frts_size, 0x100000);
        assert_eq!(gb1.fb.frts_offset_from_end(), 0x1C00000);
        assert_eq!(gb1.fsp.cot_params(1, 2).frts_vidmem_offset, 0x1C00000);
        assert_eq!(gb1.fsp.cot_params(1, 2).version, 2);
        // GB10x and GB20x share the PMU reserve and FRTS offset; only the non-WPR heap
        // differs (GB20x: kgspGetNonWprHeapSize's 2228224 variant).
        assert_eq!(
            gb1.fb.wpr_sizes(32 << 30).pmu_reserved_size,
            gb.fb.wpr_sizes(32 << 30).pmu_reserved_size
        );
        assert_eq!(gb.fb.wpr_sizes(32 << 30).non_wpr_heap_size, 0x220000);
        assert_eq!(gb1.firmware.fmc_scheme(), FmcSignatureScheme::EcdsaP384);
    }

    #[test]
    fn hex_digests_parse() {
        let d = sha256_hex("00ff10a0000000000000000000000000000000000000000000000000000000fe");
        assert_eq!((d[0], d[1], d[2], d[3], d[31]), (0, 0xff, 0x10, 0xa0, 0xfe));
    }
}
