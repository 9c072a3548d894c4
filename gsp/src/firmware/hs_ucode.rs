//! Heavy-secure falcon ucodes run on SEC2: `booter_load`, `booter_unload` and `scrubber`.
//! Layout: nvfw binary header → HS header v2 (signatures, patch location, metadata) →
//! HS load header v2 (OS code/data, applications). Before loading, the driver copies the
//! signature matching the chip's fuse version into the image at the patch location.

use super::{FirmwareError, check_within, read, read_bin_header, read_u32, slice};
use crate::abi::fw::{NvfwBinHdr, NvfwHsHeaderV2, NvfwHsLoadHeaderV2, NvfwHsLoadHeaderV2App};
use alloc::vec::Vec;

/// The 12-byte metadata block (`meta_data_offset`) OpenRM reads as `patchMeta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HsPatchMeta {
    pub fuse_version: u32,
    pub engine_id_mask: u32,
    pub ucode_id: u32,
}

/// One application of the load header (code offset and size inside the image).
pub type HsUcodeApp = NvfwHsLoadHeaderV2App;

/// A parsed HS ucode.
#[derive(Debug, Clone)]
pub struct HsUcode<'a> {
    pub bin_header: NvfwBinHdr,
    pub hs_header: NvfwHsHeaderV2,
    pub load_header: NvfwHsLoadHeaderV2,
    pub apps: Vec<HsUcodeApp>,
    pub meta: HsPatchMeta,
    /// The ucode image (`data_offset..data_offset + data_size`), unpatched.
    pub image: &'a [u8],
    /// All production signatures (`sig_prod_offset..+sig_prod_size`).
    pub signatures: &'a [u8],
    /// How many signatures `signatures` holds.
    pub signature_count: u32,
    /// Offset inside `image` where a signature is copied (value at `patch_loc`).
    pub patch_location: u32,
    /// Byte offset inside `signatures` named by the file (value at `patch_sig`).
    pub patch_signature_offset: u32,
}

/// Upper bound on applications, far above any real file, to bound allocation.
const MAX_APPS: u32 = 64;

impl<'a> HsUcode<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<HsUcode<'a>, FirmwareError> {
        let (bin_header, image) = read_bin_header(bytes)?;
        let hs: NvfwHsHeaderV2 = read(
            bytes,
            bin_header.header_offset.into(),
            "HS header v2 (bin header header_offset)",
        )?;
        let load: NvfwHsLoadHeaderV2 = read(
            bytes,
            hs.header_offset.into(),
            "HS load header v2 (HS header header_offset)",
        )?;
        if load.num_apps > MAX_APPS {
            return Err(FirmwareError::BadField {
                what: "HS load header num_apps",
                value: load.num_apps.into(),
                reason: "more applications than any ucode has",
            });
        }
        let apps_offset =
            u64::from(hs.header_offset) + core::mem::size_of::<NvfwHsLoadHeaderV2>() as u64;
        let app_len = core::mem::size_of::<HsUcodeApp>() as u64;
        let apps = (0..u64::from(load.num_apps))
            .map(|i| {
                read::<HsUcodeApp>(bytes, apps_offset + i * app_len, "HS load header app entry")
            })
            .collect::<Result<Vec<_>, _>>()?;

        check_within(
            "HS OS code (os_code_offset/size)",
            load.os_code_offset,
            load.os_code_size,
            image.len(),
        )?;
        check_within(
            "HS OS data (os_data_offset/size)",
            load.os_data_offset,
            load.os_data_size,
            image.len(),
        )?;
        for app in &apps {
            check_within(
                "HS application code (app offset/size)",
                app.offset,
                app.size,
                image.len(),
            )?;
        }

        let signatures = slice(
            bytes,
            hs.sig_prod_offset.into(),
            hs.sig_prod_size.into(),
            "HS production signatures (sig_prod_offset/size)",
        )?;
        let signature_count = read_u32(bytes, hs.num_sig.into(), "HS signature count (num_sig)")?;
        if signature_count == 0
            || !hs.sig_prod_size.is_multiple_of(signature_count)
            || hs.sig_prod_size == 0
        {
            return Err(FirmwareError::BadField {
                what: "HS signature count",
                value: signature_count.into(),
                reason: "must be non-zero and divide sig_prod_size",
            });
        }
        let signature_size = hs.sig_prod_size / signature_count;
        let patch_location = read_u32(bytes, hs.patch_loc.into(), "HS patch location (patch_loc)")?;
        // OpenRM requires room for a whole signature after the patch location.
        check_within(
            "HS signature patch (patch location + signature size)",
            patch_location,
            signature_size,
            image.len(),
        )?;
        let patch_signature_offset =
            read_u32(bytes, hs.patch_sig.into(), "HS patch signature (patch_sig)")?;
        check_within(
            "HS patch signature offset (patch_sig value + signature size)",
            patch_signature_offset,
            signature_size,
            signatures.len(),
        )?;

        if hs.meta_data_size < 12 {
            return Err(FirmwareError::WrongSize {
                what: "HS metadata (meta_data_size)",
                found: hs.meta_data_size.into(),
                expected: 12,
            });
        }
        let meta_offset = u64::from(hs.meta_data_offset);
        let meta = HsPatchMeta {
            fuse_version: read_u32(bytes, meta_offset, "HS metadata fuse version")?,
            engine_id_mask: read_u32(bytes, meta_offset + 4, "HS metadata engine id")?,
            ucode_id: read_u32(bytes, meta_offset + 8, "HS metadata ucode id")?,
        };

        Ok(HsUcode {
            bin_header,
            hs_header: hs,
            load_header: load,
            apps,
            meta,
            image,
            signatures,
            signature_count,
            patch_location,
            patch_signature_offset,
        })
    }

    /// Size of one signature.
    pub fn signature_size(&self) -> u32 {
        self.hs_header.sig_prod_size / self.signature_count
    }

    /// The signature for fuse version `fuse_version`, chosen as OpenRM does
    /// (`index = count - 1 - fuse_version` when there are several).
    pub fn signature_for_fuse_version(&self, fuse_version: u32) -> Option<&'a [u8]> {
        let index = if self.signature_count > 1 {
            self.signature_count
                .checked_sub(1)?
                .checked_sub(fuse_version)?
        } else {
            0
        };
        let size = self.signature_size() as usize;
        self.signatures.get(index as usize * size..)?.get(..size)
    }

    /// The image with `signature` copied in at the patch location.
    pub fn patched_image(&self, signature: &[u8]) -> Option<Vec<u8>> {
        let mut image = self.image.to_vec();
        let start = self.patch_location as usize;
        image
            .get_mut(start..start.checked_add(signature.len())?)?
            .copy_from_slice(signature);
        Some(image)
    }
}
