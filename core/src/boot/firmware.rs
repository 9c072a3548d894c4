//! The firmware a boot needs, handed in as bytes (no files in `no_std`) and parsed with
//! [`nvbare_gsp::firmware`]: the FMC (`fmc-570.144.bin`), the GSP-RM image
//! (`gsp-570.144.bin`, with the chip's `.fwsignature_*` section: `.fwsignature_gh100` on
//! GH100) and the RISC-V bootloader (`bootloader-570.144.bin`).
//!
//! A truncated or tampered file fails its parser; a file of another chip fails the chip's
//! FMC signature scheme, the GSP-RM image's signature section, or the SHA-256 NVIDIA ships
//! for the chip's FMC and bootloader ([`FirmwareCheck::Pinned`]).

use nvbare_gsp::firmware::{FmcImage, GspRmImage, RiscvBootloader};
use sha2::{Digest, Sha256};

use super::error::{BootErrorKind, FirmwareFile};
use super::hal::ChipHal;

/// The bytes of one chip's firmware files.
#[derive(Clone, Copy, Debug)]
pub struct Firmware<'a> {
    /// `fmc-570.144.bin`.
    pub fmc: &'a [u8],
    /// `gsp-570.144.bin`.
    pub gsp: &'a [u8],
    /// `bootloader-570.144.bin`.
    pub bootloader: &'a [u8],
    /// The booter path's files (Turing, Ampere, Ada; empty for the FSP path).
    pub booter: super::booter::BooterFirmware<'a>,
}

/// How strictly the files are checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FirmwareCheck {
    /// Structure, sizes and hashes inside the files, and the FMC and bootloader must be the
    /// files NVIDIA ships for the chip (SHA-256). The default.
    #[default]
    Pinned,
    /// Structure, sizes and hashes inside the files only (for files built by tests).
    StructureOnly,
}

/// The parsed firmware.
#[derive(Clone, Debug)]
pub struct BootImages<'a> {
    /// The FMC.
    pub fmc: FmcImage<'a>,
    /// The GSP-RM image.
    pub gsp: GspRmImage<'a>,
    /// The bootloader.
    pub bootloader: RiscvBootloader<'a>,
}

impl<'a> BootImages<'a> {
    /// Parses and checks `fw` for `hal`'s chip.
    pub fn parse(
        fw: &Firmware<'a>,
        hal: &ChipHal,
        check: FirmwareCheck,
    ) -> Result<Self, BootErrorKind> {
        let chip = hal.chip;
        let bad = |file| move |source| BootErrorKind::Firmware { file, chip, source };
        let fmc =
            FmcImage::parse(fw.fmc, hal.firmware.fmc_scheme()).map_err(bad(FirmwareFile::Fmc))?;
        let gsp = GspRmImage::parse(fw.gsp, hal.firmware.signature_target())
            .map_err(bad(FirmwareFile::GspRm))?;
        let bootloader =
            RiscvBootloader::parse(fw.bootloader).map_err(bad(FirmwareFile::Bootloader))?;
        if check == FirmwareCheck::Pinned {
            let pinned = hal.firmware.pinned_digests();
            for (file, bytes, want) in [
                (FirmwareFile::Fmc, fw.fmc, pinned.fmc),
                (FirmwareFile::Bootloader, fw.bootloader, pinned.bootloader),
            ] {
                let got: [u8; 32] = Sha256::digest(bytes).into();
                if got != want {
                    return Err(BootErrorKind::FirmwareNotForChip { file, chip });
                }
            }
        }
        Ok(Self {
            fmc,
            gsp,
            bootloader,
        })
    }
}
