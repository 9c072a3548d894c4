//! The FSP chain-of-trust payload (Hopper and later boot through the FSP).
//!
//! Header: `src/nvidia/inc/kernel/gpu/fsp/kern_fsp_cot_payload.h` (`#pragma pack(1)`).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Mirrors `MCTP_HEADER`, `kern_fsp_cot_payload.h` (packed, 7 bytes).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    FromBytes,
    IntoBytes,
    KnownLayout,
    Immutable,
    Unaligned,
)]
#[repr(C, packed)]
pub struct MctpHeader {
    /// `constBlob`.
    pub const_blob: u32,
    /// `msgType`.
    pub msg_type: u8,
    /// `vendorId`.
    pub vendor_id: u16,
}

/// Mirrors `NVDM_PAYLOAD_COT`, `kern_fsp_cot_payload.h` (packed, 860 bytes): the
/// chain-of-trust message that tells the FSP where GSP's FMC, FRTS and boot args are.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C, packed)]
pub struct NvdmPayloadCot {
    /// `version`.
    pub version: u16,
    /// `size`: `sizeof(NVDM_PAYLOAD_COT)`.
    pub size: u16,
    /// `gspFmcSysmemOffset`.
    pub gsp_fmc_sysmem_offset: u64,
    /// `frtsSysmemOffset`.
    pub frts_sysmem_offset: u64,
    /// `frtsSysmemSize`.
    pub frts_sysmem_size: u32,
    /// `frtsVidmemOffset`: an offset from the end of FB.
    pub frts_vidmem_offset: u64,
    /// `frtsVidmemSize`.
    pub frts_vidmem_size: u32,
    /// `hash384[12]`: SHA-384 of the FMC image.
    pub hash384: [u32; 12],
    /// `publicKey[96]`.
    pub public_key: [u32; 96],
    /// `signature[96]`.
    pub signature: [u32; 96],
    /// `gspBootArgsSysmemOffset`.
    pub gsp_boot_args_sysmem_offset: u64,
}

impl Default for NvdmPayloadCot {
    fn default() -> Self {
        zerocopy::FromZeros::new_zeroed()
    }
}
