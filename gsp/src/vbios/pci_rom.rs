//! The PCI expansion-ROM image chain (PCI Firmware Specification, with NVIDIA's extensions
//! from OpenRM `platform/pci_exp_table.h`): each image starts with a ROM header (signature
//! 0xAA55 at 0x00, the PCI data structure's offset at 0x18); the PCI data structure ("PCIR")
//! gives the image's length in 512-byte blocks (0x10), its code type (0x14) and the
//! last-image flag (bit 7 of 0x15). NVIDIA's PCI data extension ("NPDE"), at the PCIR's end
//! rounded up to 16 bytes, overrides both: its sub-image length (0x08) and private last-image
//! flag (0x0A) are what carry the chain past the image the PCIR calls last, to the FWSEC
//! images (code type 0xE0). The walk is OpenRM's `s_locateExpansionRoms`.

use alloc::vec::Vec;

use super::{Bytes, MAX_IMAGES, MAX_SIZE, VbiosError};

/// One 512-byte block: the unit of image lengths (`PCI_ROM_IMAGE_BLOCK_SIZE`).
pub const BLOCK: usize = 512;

/// ROM header signatures (`PCI_EXP_ROM_SIGNATURE`, `_NV` "VN", `_NV2`).
pub const ROM_SIGNATURES: [u16; 3] = [0xAA55, 0x4E56, 0xBB77];
/// Offset of the PCI data structure pointer in the ROM header
/// (`OFFSETOF_PCI_EXP_ROM_PCI_DATA_STRUCT_PTR`).
pub const ROM_PCIR_PTR: usize = 0x18;
/// PCI data structure signatures ("PCIR", NVIDIA's "NPDS" and "RGIS").
pub const PCIR_SIGNATURES: [&[u8; 4]; 3] = [b"PCIR", b"NPDS", b"RGIS"];
/// Bytes of the PCI data structure (`PCI_DATA_STRUCT`, packed: up to maxRunTimeImageLen).
pub const PCIR_SIZE: usize = 0x18;
/// Offset of the code type in the PCI data structure (`OFFSETOF_PCI_DATA_STRUCT_CODE_TYPE`).
pub const PCIR_CODE_TYPE: usize = 0x14;
/// NPDE signature (`NV_PCI_DATA_EXT_SIG`).
pub const NPDE_SIGNATURE: &[u8; 4] = b"NPDE";
/// NPDE revisions whose sub-image length OpenRM uses (`NV_PCI_DATA_EXT_REV_10`, `_11`).
pub const NPDE_REVISIONS: [u16; 2] = [0x100, 0x101];
/// Bytes of the NPDE up to its last-image byte (`OFFSETOF_PCI_DATA_EXT_STRUCT_LAST_IMAGE` + 1).
pub const NPDE_LAST_IMAGE_END: usize = 0x0B;
/// The last-image bit (`PCI_LAST_IMAGE`, bit 7).
pub const LAST_IMAGE: u8 = 0x80;

/// An image's code type (PCIR 0x14).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeType {
    /// 0x00: PC-AT (legacy x86) image; holds the BIT.
    PcAt,
    /// 0x03: UEFI driver.
    Efi,
    /// 0x70: NBSI (notebook system information).
    Nbsi,
    /// 0xE0: NVIDIA's FWSEC / extended image (`NV_BCRT_HASH_INFO_BASE_CODE_TYPE_VBIOS_EXT`).
    Fwsec,
    /// Any other.
    Other(u8),
}

impl CodeType {
    /// From the PCIR byte.
    pub fn from_byte(b: u8) -> CodeType {
        match b {
            0x00 => CodeType::PcAt,
            0x03 => CodeType::Efi,
            0x70 => CodeType::Nbsi,
            0xE0 => CodeType::Fwsec,
            o => CodeType::Other(o),
        }
    }

    /// The PCIR byte.
    pub fn byte(self) -> u8 {
        match self {
            CodeType::PcAt => 0x00,
            CodeType::Efi => 0x03,
            CodeType::Nbsi => 0x70,
            CodeType::Fwsec => 0xE0,
            CodeType::Other(o) => o,
        }
    }

    /// A short name ("pc-at", "efi", "nbsi", "fwsec", "0x??").
    pub fn name(self) -> alloc::string::String {
        use alloc::string::ToString;
        match self {
            CodeType::PcAt => "pc-at".to_string(),
            CodeType::Efi => "efi".to_string(),
            CodeType::Nbsi => "nbsi".to_string(),
            CodeType::Fwsec => "fwsec".to_string(),
            CodeType::Other(o) => alloc::format!("{o:#04x}"),
        }
    }
}

/// One image of the chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RomImage {
    /// Where it starts, from the ROM's start.
    pub offset: usize,
    /// Its size in bytes (the NPDE's sub-image length when there is one, else the PCIR's).
    pub size: usize,
    /// Its code type.
    pub code_type: CodeType,
    /// The PCIR's vendor id.
    pub vendor_id: u16,
    /// The PCIR's device id.
    pub device_id: u16,
    /// Where its PCIR is, from the image's start.
    pub pcir_offset: usize,
    /// The NPDE's revision, if the image has one.
    pub npde_revision: Option<u16>,
    /// Whether the chain ends with it.
    pub last: bool,
}

/// The code type of the image at `offset`, if one starts there: a ROM signature, a PCIR where
/// it points, and the PCIR's code-type byte within `data`.
fn image_at(data: &[u8], offset: usize) -> Option<CodeType> {
    let b = Bytes(data.get(offset..)?);
    let sig = b.u16("ROM header", 0).ok()?;
    let ptr = usize::from(b.u16("ROM header", ROM_PCIR_PTR).ok()?);
    let pcir = b.slice("PCIR", ptr, PCIR_CODE_TYPE + 1).ok()?;
    // PANIC: `pcir` is PCIR_CODE_TYPE + 1 (0x15) bytes long.
    (ROM_SIGNATURES.contains(&sig) && PCIR_SIGNATURES.iter().any(|p| p[..] == pcir[..4]))
        .then(|| CodeType::from_byte(pcir[PCIR_CODE_TYPE]))
}

/// Where the ROM starts: the first 512-byte boundary with a ROM header, a PCIR and code type
/// 0x00 (PC-AT).
///
/// The boundary scan is the BIT document's (BIOS-Information-Table: "checking 512 byte
/// boundaries for the {055h,0AAh} PCI Expansion ROM signature ... checked for the "PCIR" ...
/// signature"). The code type is what OpenRM and nova-core assume of the image they start
/// from:
/// - OpenRM 570.144 `kernel_gsp_vbios_tu102.c` starts at offset 0 if it holds a ROM
///   signature, else where the IFR's ROM directory points (`kgspExtractVbiosFromRom_TU102`,
///   lines 493-510; `s_romImgFindPciHeader_TU102`, line 253: `imageOffset` at
///   `romDirectoryOffset + 8`), the PC-AT image on every real ROM read
///   (docs/vbios/README.md). `s_locateExpansionRoms` takes block offsets from there, and its
///   `extRomOffset - baseRomSize` (line 409) is the pointer base only with the PC-AT image
///   at offset 0.
/// - nova-core (`vbios.rs`) reads from the PROM window's start ("The PciAt BIOS image is
///   typically the first BIOS image type found in the BIOS image chain") and rebases the
///   BIT's pointers on the PC-AT image's length (`setup_falcon_data`).
///
/// A file can hold other images before it: a Blackwell GB206 flash file has two
/// code-type-0xE0 images at 0x34200 and 0x34c00, chaining into its PC-AT image at 0x35400;
/// started from, they put a FWSEC image at offset 0, "within the PC-AT image".
pub fn find_rom_start(data: &[u8]) -> Result<usize, VbiosError> {
    if !data.is_empty() && data.iter().all(|&b| b == 0) {
        return Err(VbiosError::Zeroed { len: data.len() });
    }
    let mut first_other = None;
    // Bounded: one step per 512-byte block of `data`.
    for offset in (0..data.len()).step_by(BLOCK) {
        match image_at(data, offset) {
            Some(CodeType::PcAt) => return Ok(offset),
            Some(other) if first_other.is_none() => first_other = Some((offset, other)),
            _ => {}
        }
    }
    Err(match first_other {
        Some((offset, code_type)) => VbiosError::NoPcAtImage {
            scanned: data.len(),
            offset,
            code_type: code_type.byte(),
        },
        None => VbiosError::NoRom {
            scanned: data.len(),
        },
    })
}

/// Walks the image chain of the ROM in `rom` (which starts with the first image).
pub fn images(rom: &[u8]) -> Result<Vec<RomImage>, VbiosError> {
    let b = Bytes(rom);
    let mut out = Vec::new();
    let mut offset = 0usize;
    // Bounded: at most MAX_IMAGES steps, each advancing by at least one block.
    for index in 0..MAX_IMAGES {
        let sig = b.u16("ROM header", offset)?;
        if !ROM_SIGNATURES.contains(&sig) {
            return Err(VbiosError::RomSignature {
                index,
                offset,
                found: sig,
            });
        }
        let pcir_rel = usize::from(b.u16("ROM header", offset + ROM_PCIR_PTR)?);
        let pcir = offset + pcir_rel;
        let p = b.slice("PCI data structure", pcir, PCIR_SIZE)?;
        if !PCIR_SIGNATURES.iter().any(|s| s[..] == p[..4]) {
            return Err(VbiosError::PcirSignature {
                index,
                offset: pcir,
                found: [p[0], p[1], p[2], p[3]],
            });
        }
        let le16 = |o: usize| u16::from_le_bytes([p[o], p[o + 1]]);
        let vendor_id = le16(0x04);
        let device_id = le16(0x06);
        let pcir_len = usize::from(le16(0x0A));
        let image_len = le16(0x10);
        let code_type = CodeType::from_byte(p[PCIR_CODE_TYPE]);
        let mut last = p[0x15] & LAST_IMAGE != 0;
        let mut blocks = image_len;

        // The NPDE: at the PCIR's end rounded up to 16 bytes (OpenRM rounds the absolute
        // offset; images start on 512-byte blocks, so the same).
        let npde = (pcir + pcir_len + 0xF) & !0xF;
        let mut npde_revision = None;
        if b.slice("NPDE", npde, 4).is_ok_and(|s| s == NPDE_SIGNATURE) {
            let rev = b.u16("NPDE", npde + 0x04)?;
            npde_revision = Some(rev);
            if NPDE_REVISIONS.contains(&rev) {
                let npde_len = usize::from(b.u16("NPDE", npde + 0x06)?);
                let sub = b.u16("NPDE", npde + 0x08)?;
                if npde_len >= NPDE_LAST_IMAGE_END {
                    last = b.u8("NPDE", npde + 0x0A)? & LAST_IMAGE != 0;
                } else if sub < image_len {
                    last = false;
                }
                blocks = sub;
            }
        }
        if blocks == 0 {
            return Err(VbiosError::ZeroLengthImage { index, offset });
        }
        let size = usize::from(blocks) * BLOCK;
        let end = offset + size;
        if end > MAX_SIZE {
            return Err(VbiosError::TooLarge { end });
        }
        b.slice("image", offset, size)?;
        out.push(RomImage {
            offset,
            size,
            code_type,
            vendor_id,
            device_id,
            pcir_offset: pcir_rel,
            npde_revision,
            last,
        });
        if last {
            return Ok(out);
        }
        offset = end;
    }
    Err(VbiosError::TooManyImages)
}

/// The offset pointers into the FWSEC images are relative to: the first FWSEC image's offset
/// less the first PC-AT image's size (OpenRM `s_locateExpansionRoms`: `extRomOffset -
/// baseRomSize`; nova-core subtracts the PC-AT image's length likewise: the pointers assume
/// the FWSEC images follow the PC-AT image directly, the EFI image sits between). 0 without
/// either image.
pub fn expansion_rom_offset(images: &[RomImage]) -> Result<usize, VbiosError> {
    let fwsec = images.iter().find(|i| i.code_type == CodeType::Fwsec);
    let pc_at = images.iter().find(|i| i.code_type == CodeType::PcAt);
    match (fwsec, pc_at) {
        (Some(f), Some(p)) => f
            .offset
            .checked_sub(p.size)
            .ok_or(VbiosError::ExpansionOffset {
                fwsec: f.offset,
                pc_at: p.size,
            }),
        _ => Ok(0),
    }
}
