//! The VBIOS: the GPU's expansion ROM, parsed for what the booter path (Turing, Ampere, Ada)
//! needs of it — the image chain, the BIOS Information Table (BIT), the falcon ucode table
//! and FWSEC's descriptor with its DMEM mapper.
//!
//! Pure parsing of bytes, `no_std`: reading them (BAR0's PROM window, sysfs `rom`, a file)
//! is `nvbare-host`'s (`host::vbios`). Every offset and length is checked before it is used,
//! every walk is bounded (at most [`MAX_IMAGES`] images, each a whole number of 512-byte
//! blocks, at least one; at most 255 BIT tokens and 255 ucode-table entries, the counts being
//! bytes) and a malformed image is one [`VbiosError`] naming the failed check, never a panic
//! or an endless loop (tinygrad's parser loops forever on an image of length 0).
//!
//! - [`pci_rom`]: the PCI expansion-ROM image chain (ROM header, PCIR, NVIDIA's NPDE, which
//!   extends the chain past the image the PCIR calls last);
//! - [`bit`]: the BIT header and its tokens;
//! - [`falcon_ucode`]: the falcon ucode table, FWSEC's descriptor (v2, v3), its signatures and
//!   the DMEM mapper ("DMAP") FWSEC-FRTS is patched through;
//! - [`build`]: an image built from the documented structures, for tests and the simulator.
//!
//! Sources: open-gpu-doc's BIOS-Information-Table (`BIOS-Information-Table.html`); OpenRM
//! 570.144 `kernel_gsp_vbios_tu102.c` (image chain), `kernel_gsp_fwsec.c` (BIT, ucode table,
//! descriptors), `kernel_gsp_frts_tu102.c` (application interface, DMEM mapper),
//! `platform/pci_exp_table.h` (ROM header, PCIR, NPDE); nova-core's `vbios.rs`.

pub mod bit;
pub mod build;
pub mod falcon_ucode;
pub mod fwsec;
pub mod pci_rom;

use alloc::vec::Vec;
use core::fmt;

pub use bit::{BiosVersion, Bit, BitToken};
pub use falcon_ucode::{
    DmemMapper, FwsecDesc, FwsecDescV2, FwsecDescV3, FwsecInfo, UcodeEntry, UcodeTable,
};
pub use pci_rom::{CodeType, RomImage};

/// The most images the chain may hold. Real boards carry four or five (PC-AT, EFI, two or
/// three FWSEC/NVIDIA images); 32 leaves room and stops a chain of 1-block images early.
pub const MAX_IMAGES: usize = 32;

/// The most bytes a VBIOS may span: the PROM window (`NV_PROM_DATA`, BAR0 0x300000..0x3fffff)
/// is 1 MiB, and OpenRM refuses a larger chain (`s_getBaseBiosMaxSize_TU102`, 0x100000).
pub const MAX_SIZE: usize = 0x10_0000;

/// What a VBIOS holds, as parsed by [`parse`]. Offsets are from the start of the bytes given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vbios {
    /// Where the first image's 0x55AA is (0 unless a firmware file has data before it).
    pub rom_start: usize,
    /// The images, in chain order.
    pub images: Vec<RomImage>,
    /// Bytes from `rom_start` to the end of the last image.
    pub rom_len: usize,
    /// The BIT.
    pub bit: Bit,
    /// What pointers into the FWSEC images are relative to: the first FWSEC (code type 0xE0)
    /// image's offset minus the PC-AT image's size (OpenRM `s_locateExpansionRoms`), from
    /// `rom_start`. 0 when there is no FWSEC image.
    pub expansion_rom_offset: usize,
    /// The falcon ucode table the BIT's falcon-data token points to, if it has one.
    pub ucode_table: Option<UcodeTable>,
    /// FWSEC (production, else debug, else the license ucode) from the table, if there.
    pub fwsec: Option<FwsecInfo>,
}

/// Why a VBIOS image cannot be used: one variant per check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VbiosError {
    /// The bytes are all zero (an unread or disabled ROM).
    Zeroed {
        /// How many bytes were given.
        len: usize,
    },
    /// No PCI expansion ROM (0x55AA with a PCIR) at any 512-byte boundary.
    NoRom {
        /// How many bytes were scanned.
        scanned: usize,
    },
    /// Images (0x55AA with a PCIR) at 512-byte boundaries, but none of code type 0x00
    /// (PC-AT), the image the ROM starts with and the BIT lives in.
    NoPcAtImage {
        /// How many bytes were scanned.
        scanned: usize,
        /// Where the first image of another code type is.
        offset: usize,
        /// Its code type.
        code_type: u8,
    },
    /// A structure does not fit in the bytes given.
    Truncated {
        /// Which structure.
        what: &'static str,
        /// Where it starts.
        offset: usize,
        /// Bytes it needs from there.
        need: usize,
        /// Bytes given.
        len: usize,
    },
    /// An image of the chain does not start with a ROM signature (0xAA55, "VN", 0xBB77).
    RomSignature {
        /// Image index.
        index: usize,
        /// Where.
        offset: usize,
        /// What is there.
        found: u16,
    },
    /// An image's PCI data structure has no PCIR/NPDS/RGIS signature.
    PcirSignature {
        /// Image index.
        index: usize,
        /// Where the PCIR pointer leads.
        offset: usize,
        /// What is there.
        found: [u8; 4],
    },
    /// An image says it is 0 blocks long: the chain would not advance.
    ZeroLengthImage {
        /// Image index.
        index: usize,
        /// Where.
        offset: usize,
    },
    /// The chain has more than [`MAX_IMAGES`] images without a last one.
    TooManyImages,
    /// The chain ends past [`MAX_SIZE`].
    TooLarge {
        /// Where it ends.
        end: usize,
    },
    /// No BIT header ("\xff\xb8BIT\0") in the ROM.
    NoBit,
    /// The BIT header's bytes do not sum to 0.
    BitChecksum {
        /// Where the header is.
        offset: usize,
        /// The byte sum.
        sum: u8,
    },
    /// The BIT header gives a header size below 12 or a token size below 6.
    BitSizes {
        /// Header size.
        header_size: u8,
        /// Token size.
        token_size: u8,
    },
    /// A BIT token nvbare follows points outside the ROM.
    TokenOutside {
        /// The token id.
        id: u8,
        /// Its data pointer.
        ptr: u32,
        /// Its data size.
        size: u16,
        /// Bytes of ROM.
        len: usize,
    },
    /// The falcon-data token (0x70) is not version 2 with at least 4 bytes.
    FalconDataToken {
        /// Its version.
        version: u8,
        /// Its size.
        size: u16,
    },
    /// The first FWSEC image lies before the end of the PC-AT image.
    ExpansionOffset {
        /// The first FWSEC image's offset.
        fwsec: usize,
        /// The PC-AT image's size.
        pc_at: usize,
    },
    /// The falcon ucode table's header is not version 1 with header and entries of at least 6
    /// bytes.
    UcodeTableHeader {
        /// Version.
        version: u8,
        /// Header size.
        header_size: u8,
        /// Entry size.
        entry_size: u8,
    },
    /// The ucode table's entries run past the ROM.
    UcodeTableOutside {
        /// Where the table is.
        offset: usize,
        /// How many entries it claims.
        count: u8,
        /// Bytes per entry.
        entry_size: u8,
        /// Bytes of ROM.
        len: usize,
    },
    /// FWSEC's descriptor header says no version is available.
    DescVersionUnavailable {
        /// Where the descriptor is.
        offset: usize,
    },
    /// FWSEC's descriptor is not v2 (60 bytes or more) or v3 (44 bytes or more).
    DescVersion {
        /// The version.
        version: u8,
        /// The size it gives.
        size: u16,
    },
    /// The v3 descriptor's signatures do not fit in its size.
    Signatures {
        /// SignatureCount.
        count: u8,
        /// Bytes for them (descriptor size - 44).
        room: usize,
    },
    /// A range inside the FWSEC ucode (its DMEM, the signature slot, the interface table, the
    /// DMEM mapper, the command buffer) falls outside what holds it.
    UcodeRange {
        /// Which range.
        what: &'static str,
        /// Its start.
        offset: u64,
        /// Its length.
        len: u64,
        /// The size it must stay within.
        limit: u64,
    },
    /// FWSEC's application interface table has fewer than 2 entries (OpenRM requires 2).
    InterfaceHeader {
        /// Version.
        version: u8,
        /// Entry count.
        count: u8,
    },
    /// FWSEC's application interface has no DMEM-mapper entry (id 4).
    NoDmemMapper,
    /// The DMEM mapper does not start with "DMAP".
    DmapSignature {
        /// What is there.
        found: u32,
    },
}

impl fmt::Display for VbiosError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use VbiosError::*;
        match self {
            Zeroed { len } => write!(f, "all {len} bytes are zero (an unread or disabled ROM)"),
            NoRom { scanned } => write!(
                f,
                "no PCI expansion ROM (0x55AA with a PCIR) at any 512-byte boundary of {scanned} bytes"
            ),
            NoPcAtImage {
                scanned,
                offset,
                code_type,
            } => write!(
                f,
                "no PC-AT image (code type 0x00, which holds the BIT) at any 512-byte boundary of \
                 {scanned} bytes; the first image, at {offset:#x}, has code type {code_type:#04x}: \
                 give the whole ROM, starting at or before its PC-AT image"
            ),
            Truncated {
                what,
                offset,
                need,
                len,
            } => write!(
                f,
                "the {what} at {offset:#x} needs {need:#x} bytes, but the image has {len:#x}"
            ),
            RomSignature {
                index,
                offset,
                found,
            } => write!(
                f,
                "image {index} at {offset:#x}: ROM signature {found:#06x}, not 0xaa55"
            ),
            PcirSignature {
                index,
                offset,
                found,
            } => write!(
                f,
                "image {index}: no PCIR at {offset:#x} (found {found:02x?})"
            ),
            ZeroLengthImage { index, offset } => write!(
                f,
                "image {index} at {offset:#x} is 0 blocks long: the chain would not advance"
            ),
            TooManyImages => write!(f, "more than {MAX_IMAGES} images and none marked last"),
            TooLarge { end } => write!(f, "the image chain ends at {end:#x}, past 1 MiB"),
            NoBit => write!(f, "no BIT header (0xB8FF, \"BIT\\0\") in the ROM"),
            BitChecksum { offset, sum } => {
                write!(f, "the BIT header at {offset:#x} sums to {sum:#04x}, not 0")
            }
            BitSizes {
                header_size,
                token_size,
            } => write!(
                f,
                "the BIT header gives header size {header_size} (< 12) or token size {token_size} (< 6)"
            ),
            TokenOutside { id, ptr, size, len } => write!(
                f,
                "BIT token {id:#04x} points to {size:#x} bytes at {ptr:#x}, outside the {len:#x}-byte ROM"
            ),
            FalconDataToken { version, size } => write!(
                f,
                "the falcon-data BIT token is version {version}, {size} bytes (need version 2, 4 bytes)"
            ),
            ExpansionOffset { fwsec, pc_at } => write!(
                f,
                "the first FWSEC image at {fwsec:#x} lies within the {pc_at:#x}-byte PC-AT image"
            ),
            UcodeTableHeader {
                version,
                header_size,
                entry_size,
            } => write!(
                f,
                "falcon ucode table header: version {version}, header {header_size} bytes, entries \
                 {entry_size} bytes (need version 1, at least 6 and 6)"
            ),
            UcodeTableOutside {
                offset,
                count,
                entry_size,
                len,
            } => write!(
                f,
                "the falcon ucode table at {offset:#x} claims {count} entries of {entry_size} bytes, \
                 past the {len:#x}-byte ROM"
            ),
            DescVersionUnavailable { offset } => {
                write!(f, "FWSEC's descriptor at {offset:#x} has no version")
            }
            DescVersion { version, size } => write!(
                f,
                "FWSEC's descriptor is version {version}, {size} bytes (need v2 of 60 or v3 of 44)"
            ),
            Signatures { count, room } => write!(
                f,
                "FWSEC's descriptor claims {count} signatures of 384 bytes in {room} bytes"
            ),
            UcodeRange {
                what,
                offset,
                len,
                limit,
            } => write!(
                f,
                "FWSEC's {what} ({len:#x} bytes at {offset:#x}) is outside its {limit:#x} bytes"
            ),
            InterfaceHeader { version, count } => write!(
                f,
                "FWSEC's application interface (version {version}) has {count} entries (need at least 2)"
            ),
            NoDmemMapper => write!(f, "FWSEC's application interface has no DMEM mapper (id 4)"),
            DmapSignature { found } => {
                write!(
                    f,
                    "FWSEC's DMEM mapper starts with {found:#010x}, not \"DMAP\""
                )
            }
        }
    }
}

impl core::error::Error for VbiosError {}

/// Parses a VBIOS: the image chain, the BIT, the falcon ucode table and FWSEC.
///
/// The bytes may have data before the ROM (a firmware file's IFR section): the ROM starts at
/// the first 512-byte boundary holding 0x55AA with a PCIR, as the BIT document says, whose
/// image is the PC-AT one ([`pci_rom::find_rom_start`]).
pub fn parse(data: &[u8]) -> Result<Vbios, VbiosError> {
    let rom_start = pci_rom::find_rom_start(data)?;
    // PANIC: find_rom_start returns an offset inside `data`.
    let rom = &data[rom_start..];
    let images = pci_rom::images(rom)?;
    let rom_len = images.last().map_or(0, |i| i.offset + i.size);
    // PANIC: images() checked that every image lies within `rom`.
    let rom = &rom[..rom_len];
    let bit = bit::find(rom)?;
    let expansion_rom_offset = pci_rom::expansion_rom_offset(&images)?;
    let (ucode_table, fwsec) = match bit.falcon_ucode_table_ptr(rom)? {
        Some(ptr) => {
            let table = falcon_ucode::table(rom, expansion_rom_offset, ptr)?;
            let fwsec = falcon_ucode::fwsec(rom, expansion_rom_offset, &table)?;
            (Some(table), fwsec)
        }
        None => (None, None),
    };
    Ok(Vbios {
        rom_start,
        images,
        rom_len,
        bit,
        expansion_rom_offset,
        ucode_table,
        fwsec,
    })
}

/// Where the ROM in `data` ends (its start plus its image chain): what a reader of the PROM
/// window must have read. A [`VbiosError::Truncated`] says how far to read to learn more;
/// its offset is from the start of `data`.
pub fn rom_extent(data: &[u8]) -> Result<usize, VbiosError> {
    let rom_start = pci_rom::find_rom_start(data)?;
    // PANIC: find_rom_start returns an offset inside `data`.
    match pci_rom::images(&data[rom_start..]) {
        Ok(images) => Ok(rom_start + images.last().map_or(0, |i| i.offset + i.size)),
        Err(VbiosError::Truncated {
            what,
            offset,
            need,
            len,
        }) => Err(VbiosError::Truncated {
            what,
            offset: rom_start + offset,
            need,
            len: rom_start + len,
        }),
        Err(e) => Err(e),
    }
}

/// Little-endian reads with bounds checks: each names what it reads for the error.
pub(crate) struct Bytes<'a>(pub &'a [u8]);

impl<'a> Bytes<'a> {
    /// `n` bytes at `offset`, or [`VbiosError::Truncated`] naming `what`.
    pub(crate) fn slice(
        &self,
        what: &'static str,
        offset: usize,
        n: usize,
    ) -> Result<&'a [u8], VbiosError> {
        let end = offset.checked_add(n);
        match end {
            Some(end) if end <= self.0.len() => Ok(&self.0[offset..end]),
            _ => Err(VbiosError::Truncated {
                what,
                offset,
                need: n,
                len: self.0.len(),
            }),
        }
    }

    pub(crate) fn u8(&self, what: &'static str, offset: usize) -> Result<u8, VbiosError> {
        Ok(self.slice(what, offset, 1)?[0])
    }

    pub(crate) fn u16(&self, what: &'static str, offset: usize) -> Result<u16, VbiosError> {
        let b = self.slice(what, offset, 2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&self, what: &'static str, offset: usize) -> Result<u32, VbiosError> {
        let b = self.slice(what, offset, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// `a + b` for offsets, [`VbiosError::Truncated`] naming `what` if it overflows.
pub(crate) fn add(what: &'static str, a: usize, b: usize, len: usize) -> Result<usize, VbiosError> {
    a.checked_add(b).ok_or(VbiosError::Truncated {
        what,
        offset: a,
        need: b,
        len,
    })
}

/// A u32 from the image as an offset (usize is at least 32 bits on every target nvbare runs on).
pub(crate) fn usize_of(v: u32) -> usize {
    // CAST: u32 fits usize on 32- and 64-bit targets.
    v as usize
}
