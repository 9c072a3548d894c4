//! Firmware image headers: the RISC-V ucode descriptor of the GSP-RM image and the
//! "nvfw" binary and heavy-secure (HS) headers of the falcon ucodes (booter, FWSEC, ...).
//!
//! `RM_RISCV_UCODE_DESC` is in OpenRM's `src/nvidia/arch/nvalloc/common/inc/rmRiscvUcode.h`.
//! The nvfw headers are not in OpenRM (its build embeds ucodes as bindata); the layouts
//! here follow Linux's `drivers/gpu/drm/nouveau/include/nvfw/fw.h` and `nvfw/hs.h`
//! (MIT), which describe the same files NVIDIA ships in `linux-firmware`/the driver.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Mirrors `RM_RISCV_UCODE_DESC`, `rmRiscvUcode.h`: the descriptor of a RISC-V image
/// (GSP bootloader), giving offsets of the code, data and manifest inside the image.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct RmRiscvUcodeDesc {
    /// `version`: structure version (1..=5).
    pub version: u32,
    /// `bootloaderOffset`.
    pub bootloader_offset: u32,
    /// `bootloaderSize`.
    pub bootloader_size: u32,
    /// `bootloaderParamOffset`.
    pub bootloader_param_offset: u32,
    /// `bootloaderParamSize`.
    pub bootloader_param_size: u32,
    /// `riscvElfOffset`.
    pub riscv_elf_offset: u32,
    /// `riscvElfSize`.
    pub riscv_elf_size: u32,
    /// `appVersion`: changelist number of the image.
    pub app_version: u32,
    /// `manifestOffset`.
    pub manifest_offset: u32,
    /// `manifestSize`.
    pub manifest_size: u32,
    /// `monitorDataOffset`.
    pub monitor_data_offset: u32,
    /// `monitorDataSize`.
    pub monitor_data_size: u32,
    /// `monitorCodeOffset`.
    pub monitor_code_offset: u32,
    /// `monitorCodeSize`.
    pub monitor_code_size: u32,
    /// `bIsMonitorEnabled`.
    pub b_is_monitor_enabled: u32,
    /// `swbromCodeOffset`.
    pub swbrom_code_offset: u32,
    /// `swbromCodeSize`.
    pub swbrom_code_size: u32,
    /// `swbromDataOffset`.
    pub swbrom_data_offset: u32,
    /// `swbromDataSize`.
    pub swbrom_data_size: u32,
    /// `fbReservedSize`: total size of the FB carveout (image and reserved space).
    pub fb_reserved_size: u32,
    /// `bSignedAsCode`: the whole image is signed as "code" (Hopper and later).
    pub b_signed_as_code: u32,
}

/// The `bin_magic` of an nvfw binary (the NVIDIA PCI vendor id), as nouveau and
/// nova-core check it.
pub const NVFW_BIN_MAGIC: u32 = 0x10de;

/// Mirrors `struct nvfw_bin_hdr`, nouveau `include/nvfw/fw.h`: the header at offset 0 of
/// a falcon firmware file.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct NvfwBinHdr {
    /// `bin_magic`: [`NVFW_BIN_MAGIC`].
    pub bin_magic: u32,
    /// `bin_ver`.
    pub bin_ver: u32,
    /// `bin_size`: size of the whole file.
    pub bin_size: u32,
    /// `header_offset`: offset of the format-specific header (e.g. [`NvfwHsHeaderV2`]).
    pub header_offset: u32,
    /// `data_offset`: offset of the ucode image.
    pub data_offset: u32,
    /// `data_size`: size of the ucode image.
    pub data_size: u32,
}

/// Mirrors `struct nvfw_hs_header_v2`, nouveau `include/nvfw/hs.h`: the heavy-secure
/// header of booter-style ucodes, pointed to by [`NvfwBinHdr::header_offset`].
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct NvfwHsHeaderV2 {
    /// `sig_prod_offset`: offset of the production signatures.
    pub sig_prod_offset: u32,
    /// `sig_prod_size`: size of all production signatures.
    pub sig_prod_size: u32,
    /// `patch_loc`: offset of a `u32` holding where in the image to patch the signature.
    pub patch_loc: u32,
    /// `patch_sig`: offset of a `u32` holding the index of the signature to patch in.
    pub patch_sig: u32,
    /// `meta_data_offset`.
    pub meta_data_offset: u32,
    /// `meta_data_size`.
    pub meta_data_size: u32,
    /// `num_sig`: number of signatures.
    pub num_sig: u32,
    /// `header_offset`: offset of the [`NvfwHsLoadHeaderV2`].
    pub header_offset: u32,
    /// `header_size`.
    pub header_size: u32,
}

/// Mirrors `struct nvfw_hs_load_header_v2`, nouveau `include/nvfw/hs.h`, without its
/// trailing `app[num_apps]` array of [`NvfwHsLoadHeaderV2App`].
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct NvfwHsLoadHeaderV2 {
    /// `os_code_offset`.
    pub os_code_offset: u32,
    /// `os_code_size`.
    pub os_code_size: u32,
    /// `os_data_offset`.
    pub os_data_offset: u32,
    /// `os_data_size`.
    pub os_data_size: u32,
    /// `num_apps`: number of [`NvfwHsLoadHeaderV2App`] entries that follow.
    pub num_apps: u32,
}

/// Mirrors the anonymous element type of `nvfw_hs_load_header_v2::app[]`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct NvfwHsLoadHeaderV2App {
    /// `offset`.
    pub offset: u32,
    /// `size`.
    pub size: u32,
}
