//! The GSP-RM image `gsp-570.144.bin`: an ELF64 whose `.fwimage` section is the RISC-V
//! image loaded into GSP memory, `.fwversion` the release string, and one
//! `.fwsignature_<chip>` section per chip family (the boot ROM checks the one for its chip).

use super::{ElfFile, FIRMWARE_VERSION, FirmwareError};
use alloc::string::String;

/// Which signature section a chip's boot uses. The names are the section suffixes in the
/// 570.144 files: GH100 has its own (`.fwsignature_gh100`, not "gh10x").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GspSignatureTarget {
    /// TU102/TU104/TU106.
    Tu10x,
    /// TU116/TU117.
    Tu11x,
    Ga100,
    /// GA102..GA107.
    Ga10x,
    /// AD102..AD107.
    Ad10x,
    Gh100,
    /// GB100/GB102.
    Gb10x,
    /// GB202..GB207.
    Gb20x,
}

impl GspSignatureTarget {
    /// The ELF section holding this chip's signature.
    pub fn section_name(self, confidential_computing: bool) -> &'static str {
        match (self, confidential_computing) {
            (GspSignatureTarget::Tu10x, _) => ".fwsignature_tu10x",
            (GspSignatureTarget::Tu11x, _) => ".fwsignature_tu11x",
            (GspSignatureTarget::Ga100, _) => ".fwsignature_ga100",
            (GspSignatureTarget::Ga10x, _) => ".fwsignature_ga10x",
            (GspSignatureTarget::Ad10x, _) => ".fwsignature_ad10x",
            (GspSignatureTarget::Gh100, false) => ".fwsignature_gh100",
            (GspSignatureTarget::Gh100, true) => ".fwsignature_cc_gh100",
            (GspSignatureTarget::Gb10x, false) => ".fwsignature_gb10x",
            (GspSignatureTarget::Gb10x, true) => ".fwsignature_cc_gb10x",
            (GspSignatureTarget::Gb20x, _) => ".fwsignature_gb20x",
        }
    }

    /// The target for a linux-firmware directory name (`nvidia/<dir>/gsp/`).
    pub fn for_firmware_dir(dir: &str) -> Option<GspSignatureTarget> {
        Some(match dir {
            "tu102" | "tu104" | "tu106" => GspSignatureTarget::Tu10x,
            "tu116" | "tu117" => GspSignatureTarget::Tu11x,
            "ga100" => GspSignatureTarget::Ga100,
            "ga102" | "ga103" | "ga104" | "ga106" | "ga107" => GspSignatureTarget::Ga10x,
            "ad102" | "ad103" | "ad104" | "ad106" | "ad107" => GspSignatureTarget::Ad10x,
            "gh100" => GspSignatureTarget::Gh100,
            "gb100" | "gb102" => GspSignatureTarget::Gb10x,
            "gb202" | "gb203" | "gb205" | "gb206" | "gb207" => GspSignatureTarget::Gb20x,
            _ => return None,
        })
    }
}

/// The parts of `gsp-570.144.bin` a boot needs, for one chip.
#[derive(Debug, Clone)]
pub struct GspRmImage<'a> {
    /// `.fwimage`: the image the radix-3 page table maps for GSP.
    pub image: &'a [u8],
    /// `.fwversion`, without its trailing NULs: `570.144`.
    pub version: String,
    /// This chip's `.fwsignature_*` section.
    pub signature: &'a [u8],
    /// The signature section's name.
    pub signature_section: &'static str,
}

impl<'a> GspRmImage<'a> {
    /// Parses the image for `target` (not confidential-computing).
    pub fn parse(
        bytes: &'a [u8],
        target: GspSignatureTarget,
    ) -> Result<GspRmImage<'a>, FirmwareError> {
        Self::parse_with(bytes, target, false)
    }

    /// Parses the image for `target`, choosing the confidential-computing signature when
    /// `confidential_computing` is set and the chip has one.
    pub fn parse_with(
        bytes: &'a [u8],
        target: GspSignatureTarget,
        confidential_computing: bool,
    ) -> Result<GspRmImage<'a>, FirmwareError> {
        let elf = ElfFile::parse(bytes)?;
        if elf.class_bits != 64 {
            return Err(FirmwareError::UnsupportedElf {
                reason: "the GSP-RM image must be ELF64",
            });
        }
        let image = elf.require(".fwimage")?;
        if image.is_empty() {
            return Err(FirmwareError::WrongSize {
                what: ".fwimage",
                found: 0,
                expected: 1,
            });
        }
        let raw_version = elf.require(".fwversion")?;
        let version = String::from_utf8_lossy(crate::until_nul(raw_version)).into_owned();
        if version != FIRMWARE_VERSION {
            return Err(FirmwareError::WrongVersion { found: version });
        }
        let signature_section = target.section_name(confidential_computing);
        let signature = elf.require(signature_section)?;
        if signature.is_empty() {
            return Err(FirmwareError::WrongSize {
                what: "GSP-RM signature section",
                found: 0,
                expected: 4096,
            });
        }
        Ok(GspRmImage {
            image,
            version,
            signature,
            signature_section,
        })
    }
}
