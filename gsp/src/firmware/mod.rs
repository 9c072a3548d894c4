//! Parsers for the GSP-RM 570.144 firmware files, as plain functions over byte slices.
//!
//! | file | parser |
//! |---|---|
//! | `gsp-570.144.bin` (GSP-RM ELF) | [`GspRmImage`] |
//! | `bootloader-570.144.bin` (RISC-V bootloader) | [`RiscvBootloader`] |
//! | `booter_load`/`booter_unload`/`scrubber-570.144.bin` (HS falcon ucode) | [`HsUcode`] |
//! | `gen_bootloader-570.144.bin` (falcon generic bootloader) | [`GenericBootloader`] |
//! | `fmc-570.144.bin` (Hopper/Blackwell FMC) | [`FmcImage`] |
//!
//! Every offset and size read from a file is checked before it is used: a truncated or
//! tampered file gives a [`FirmwareError`], never a panic.

mod elf;
mod error;
mod fmc;
mod generic_bootloader;
mod gsp_image;
mod hs_ucode;
mod riscv_bootloader;

pub use elf::{ElfFile, ElfSection};
pub use error::FirmwareError;
pub use fmc::{FMC_HASH_LEN, FmcImage, FmcSignatureScheme};
pub use generic_bootloader::{FalconBootloaderDesc, GenericBootloader};
pub use gsp_image::{GspRmImage, GspSignatureTarget};
pub use hs_ucode::{HsPatchMeta, HsUcode, HsUcodeApp};
pub use riscv_bootloader::RiscvBootloader;

use crate::abi::fw::{NVFW_BIN_MAGIC, NvfwBinHdr};
use zerocopy::{FromBytes, Immutable, KnownLayout};

/// The firmware version every parser expects.
pub const FIRMWARE_VERSION: &str = "570.144";

/// `bytes[offset..offset + len]`, or a [`FirmwareError::OutOfBounds`] naming `what`.
pub(crate) fn slice<'a>(
    bytes: &'a [u8],
    offset: u64,
    len: u64,
    what: &'static str,
) -> Result<&'a [u8], FirmwareError> {
    let out_of_bounds = FirmwareError::OutOfBounds {
        what,
        offset,
        len,
        file_len: bytes.len() as u64,
    };
    let end = offset.checked_add(len).ok_or(out_of_bounds.clone())?;
    if end > bytes.len() as u64 {
        return Err(out_of_bounds);
    }
    Ok(&bytes[offset as usize..end as usize])
}

/// Reads a `T` at `offset`.
pub(crate) fn read<T: FromBytes + KnownLayout + Immutable>(
    bytes: &[u8],
    offset: u64,
    what: &'static str,
) -> Result<T, FirmwareError> {
    let raw = slice(bytes, offset, core::mem::size_of::<T>() as u64, what)?;
    T::read_from_bytes(raw).map_err(|_| FirmwareError::OutOfBounds {
        what,
        offset,
        len: core::mem::size_of::<T>() as u64,
        file_len: bytes.len() as u64,
    })
}

/// Reads a little-endian `u32` at `offset`.
pub(crate) fn read_u32(
    bytes: &[u8],
    offset: u64,
    what: &'static str,
) -> Result<u32, FirmwareError> {
    let raw = slice(bytes, offset, 4, what)?;
    Ok(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]))
}

/// The nvfw binary header at offset 0, with its magic checked, and the ucode image it
/// names (`data_offset..data_offset + data_size`, checked to lie inside `bytes`).
pub(crate) fn read_bin_header(bytes: &[u8]) -> Result<(NvfwBinHdr, &[u8]), FirmwareError> {
    let hdr: NvfwBinHdr = read(bytes, 0, "nvfw binary header")?;
    if hdr.bin_magic != NVFW_BIN_MAGIC {
        return Err(FirmwareError::BadMagic {
            what: "nvfw binary header bin_magic",
            found: hdr.bin_magic,
            expected: NVFW_BIN_MAGIC,
        });
    }
    let data = slice(
        bytes,
        hdr.data_offset.into(),
        hdr.data_size.into(),
        "ucode image (bin header data_offset/data_size)",
    )?;
    Ok((hdr, data))
}

/// Checks that `[offset, offset + size)` lies inside a region of `region_len` bytes.
pub(crate) fn check_within(
    what: &'static str,
    offset: u32,
    size: u32,
    region_len: usize,
) -> Result<(), FirmwareError> {
    let end = u64::from(offset) + u64::from(size);
    if end > region_len as u64 {
        return Err(FirmwareError::OutOfBounds {
            what,
            offset: offset.into(),
            len: size.into(),
            file_len: region_len as u64,
        });
    }
    Ok(())
}
