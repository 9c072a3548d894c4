//! The GSP RISC-V bootloader `bootloader-570.144.bin`: an nvfw binary header whose
//! `header_offset` points at an `RM_RISCV_UCODE_DESC` and whose data range is the image
//! GSP's boot ROM loads (monitor code, monitor data and manifest at the descriptor's offsets).

use super::{FirmwareError, check_within, read, read_bin_header, slice};
use crate::abi::fw::{NvfwBinHdr, RmRiscvUcodeDesc};

/// Size of `RM_RISCV_UCODE_DESC` version 5 (21 `u32`).
const DESC_V5_LEN: u64 = core::mem::size_of::<RmRiscvUcodeDesc>() as u64;
/// Size of versions 1 to 4, which lack `fbReservedSize` and `bSignedAsCode`.
const DESC_V4_LEN: u64 = DESC_V5_LEN - 8;

/// A parsed RISC-V bootloader.
#[derive(Debug, Clone)]
pub struct RiscvBootloader<'a> {
    pub bin_header: NvfwBinHdr,
    pub desc: RmRiscvUcodeDesc,
    /// The loadable image: `data_offset..data_offset + data_size` of the file.
    pub image: &'a [u8],
}

impl<'a> RiscvBootloader<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<RiscvBootloader<'a>, FirmwareError> {
        let (bin_header, image) = read_bin_header(bytes)?;
        let desc_offset = u64::from(bin_header.header_offset);
        let version = super::read_u32(bytes, desc_offset, "RM_RISCV_UCODE_DESC version")?;
        if !(1..=5).contains(&version) {
            return Err(FirmwareError::BadField {
                what: "RM_RISCV_UCODE_DESC version",
                value: version.into(),
                reason: "known versions are 1 to 5",
            });
        }
        // Versions before 5 end after swbromDataSize: the Turing/GA100 file puts its image
        // right after those 76 bytes, so the two v5 fields must not be read from it.
        let desc_len = if version >= 5 {
            DESC_V5_LEN
        } else {
            DESC_V4_LEN
        };
        let raw = slice(
            bytes,
            desc_offset,
            desc_len,
            "RM_RISCV_UCODE_DESC (bin header header_offset)",
        )?;
        let mut full = [0u8; DESC_V5_LEN as usize];
        full[..raw.len()].copy_from_slice(raw);
        let desc: RmRiscvUcodeDesc = read(&full, 0, "RM_RISCV_UCODE_DESC")?;
        check_within(
            "RISC-V monitor code (monitorCodeOffset/Size)",
            desc.monitor_code_offset,
            desc.monitor_code_size,
            image.len(),
        )?;
        check_within(
            "RISC-V monitor data (monitorDataOffset/Size)",
            desc.monitor_data_offset,
            desc.monitor_data_size,
            image.len(),
        )?;
        check_within(
            "RISC-V manifest (manifestOffset/Size)",
            desc.manifest_offset,
            desc.manifest_size,
            image.len(),
        )?;
        Ok(RiscvBootloader {
            bin_header,
            desc,
            image,
        })
    }

    /// The monitor code inside the image.
    pub fn monitor_code(&self) -> &'a [u8] {
        let d = &self.desc;
        &self.image[d.monitor_code_offset as usize..][..d.monitor_code_size as usize]
    }

    /// The manifest inside the image (input to the boot ROM).
    pub fn manifest(&self) -> &'a [u8] {
        let d = &self.desc;
        &self.image[d.manifest_offset as usize..][..d.manifest_size as usize]
    }
}
