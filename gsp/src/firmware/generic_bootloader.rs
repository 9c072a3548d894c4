//! The falcon generic bootloader `gen_bootloader-570.144.bin` (Turing, GA100): an nvfw
//! binary header whose `header_offset` points at the bootloader descriptor (nouveau
//! `struct nvfw_bl_desc`, `include/nvfw/fw.h`) and whose data is the bootloader image.

use super::{FirmwareError, check_within, read, read_bin_header};
use crate::abi::fw::NvfwBinHdr;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Mirrors `struct nvfw_bl_desc` (nouveau `include/nvfw/fw.h`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct FalconBootloaderDesc {
    /// `start_tag`: IMEM tag (256-byte block) the code is loaded at.
    pub start_tag: u32,
    /// `dmem_load_off`.
    pub dmem_load_off: u32,
    /// `code_off`, `code_size`: code inside the image.
    pub code_off: u32,
    pub code_size: u32,
    /// `data_off`, `data_size`: data inside the image.
    pub data_off: u32,
    pub data_size: u32,
}

#[derive(Debug, Clone)]
pub struct GenericBootloader<'a> {
    pub bin_header: NvfwBinHdr,
    pub desc: FalconBootloaderDesc,
    pub image: &'a [u8],
}

impl<'a> GenericBootloader<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<GenericBootloader<'a>, FirmwareError> {
        let (bin_header, image) = read_bin_header(bytes)?;
        let desc: FalconBootloaderDesc = read(
            bytes,
            bin_header.header_offset.into(),
            "falcon bootloader descriptor (bin header header_offset)",
        )?;
        check_within(
            "bootloader code (code_off/code_size)",
            desc.code_off,
            desc.code_size,
            image.len(),
        )?;
        check_within(
            "bootloader data (data_off/data_size)",
            desc.data_off,
            desc.data_size,
            image.len(),
        )?;
        Ok(GenericBootloader {
            bin_header,
            desc,
            image,
        })
    }

    pub fn code(&self) -> &'a [u8] {
        &self.image[self.desc.code_off as usize..][..self.desc.code_size as usize]
    }

    pub fn data(&self) -> &'a [u8] {
        &self.image[self.desc.data_off as usize..][..self.desc.data_size as usize]
    }
}
