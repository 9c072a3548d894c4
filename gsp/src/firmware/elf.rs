//! The little of ELF the firmware files need: the section table of a little-endian ELF32
//! (FMC) or ELF64 (GSP-RM) file, with every section's bytes bounds-checked at parse time.

use super::{FirmwareError, slice};
use alloc::vec::Vec;

const ELF_MAGIC: u32 = u32::from_le_bytes(*b"\x7fELF");
const CLASS_32: u8 = 1;
const CLASS_64: u8 = 2;
const DATA_LITTLE_ENDIAN: u8 = 1;
/// `SHT_NOBITS`: a section that occupies no file bytes.
const SECTION_NO_BITS: u32 = 8;

/// One section: its name (from `.shstrtab`) and its bytes in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElfSection<'a> {
    pub name: &'a [u8],
    pub kind: u32,
    pub offset: u64,
    pub data: &'a [u8],
}

/// A parsed section table.
#[derive(Debug, Clone)]
pub struct ElfFile<'a> {
    /// 32 or 64.
    pub class_bits: u8,
    pub sections: Vec<ElfSection<'a>>,
}

/// Fixed-width little-endian field reads, bounds already checked by the caller's slice.
fn field(bytes: &[u8], offset: usize, width: usize) -> u64 {
    let mut v = [0u8; 8];
    v[..width].copy_from_slice(&bytes[offset..offset + width]);
    u64::from_le_bytes(v)
}

/// Where the header fields sit, by class.
struct Layout {
    header_len: u64,
    word: usize,
    shoff: usize,
    shentsize: usize,
    section_header_len: u64,
}

const LAYOUT_32: Layout = Layout {
    header_len: 52,
    word: 4,
    shoff: 32,
    shentsize: 46,
    section_header_len: 40,
};
const LAYOUT_64: Layout = Layout {
    header_len: 64,
    word: 8,
    shoff: 40,
    shentsize: 58,
    section_header_len: 64,
};

/// A section header's fields, before the name is looked up.
struct RawSection {
    name_offset: u32,
    kind: u32,
    offset: u64,
    size: u64,
}

fn raw_section(header: &[u8], l: &Layout) -> RawSection {
    // name u32 @0, type u32 @4, flags word @8, addr word, offset word, size word.
    let offset_at = 8 + 2 * l.word;
    RawSection {
        name_offset: field(header, 0, 4) as u32,
        kind: field(header, 4, 4) as u32,
        offset: field(header, offset_at, l.word),
        size: field(header, offset_at + l.word, l.word),
    }
}

impl<'a> ElfFile<'a> {
    /// Parses the header and the whole section table.
    pub fn parse(bytes: &'a [u8]) -> Result<ElfFile<'a>, FirmwareError> {
        let ident = slice(bytes, 0, 16, "ELF identification")?;
        let magic = u32::from_le_bytes([ident[0], ident[1], ident[2], ident[3]]);
        if magic != ELF_MAGIC {
            return Err(FirmwareError::BadMagic {
                what: "ELF magic",
                found: magic,
                expected: ELF_MAGIC,
            });
        }
        let (layout, class_bits) = match ident[4] {
            CLASS_32 => (&LAYOUT_32, 32),
            CLASS_64 => (&LAYOUT_64, 64),
            _ => {
                return Err(FirmwareError::UnsupportedElf {
                    reason: "class is neither 32- nor 64-bit",
                });
            }
        };
        if ident[5] != DATA_LITTLE_ENDIAN {
            return Err(FirmwareError::UnsupportedElf {
                reason: "not little-endian",
            });
        }
        let header = slice(bytes, 0, layout.header_len, "ELF header")?;
        let shoff = field(header, layout.shoff, layout.word);
        let shentsize = field(header, layout.shentsize, 2);
        let shnum = field(header, layout.shentsize + 2, 2);
        let shstrndx = field(header, layout.shentsize + 4, 2);
        if shnum == 0 {
            return Err(FirmwareError::UnsupportedElf {
                reason: "no section headers",
            });
        }
        if shentsize != layout.section_header_len {
            return Err(FirmwareError::BadField {
                what: "ELF e_shentsize",
                value: shentsize,
                reason: "not the section header size of this ELF class",
            });
        }
        if shstrndx >= shnum {
            return Err(FirmwareError::BadField {
                what: "ELF e_shstrndx",
                value: shstrndx,
                reason: "names no section",
            });
        }
        let table = slice(bytes, shoff, shnum * shentsize, "ELF section header table")?;
        let headers: Vec<RawSection> = table
            .chunks_exact(shentsize as usize)
            .map(|h| raw_section(h, layout))
            .collect();
        let section_bytes = |raw: &RawSection| -> Result<&'a [u8], FirmwareError> {
            if raw.kind == SECTION_NO_BITS {
                return Ok(&[]);
            }
            slice(bytes, raw.offset, raw.size, "ELF section data")
        };
        let names = section_bytes(&headers[shstrndx as usize])?;
        let mut sections = Vec::with_capacity(headers.len());
        for raw in &headers {
            let start = raw.name_offset as usize;
            let name = match names.get(start..) {
                Some(rest) => {
                    let end = rest
                        .iter()
                        .position(|&b| b == 0)
                        .ok_or(FirmwareError::BadField {
                            what: "ELF section name",
                            value: raw.name_offset.into(),
                            reason: "not NUL-terminated inside .shstrtab",
                        })?;
                    &rest[..end]
                }
                None => {
                    return Err(FirmwareError::BadField {
                        what: "ELF section sh_name",
                        value: raw.name_offset.into(),
                        reason: "points past the end of .shstrtab",
                    });
                }
            };
            sections.push(ElfSection {
                name,
                kind: raw.kind,
                offset: raw.offset,
                data: section_bytes(raw)?,
            });
        }
        Ok(ElfFile {
            class_bits,
            sections,
        })
    }

    /// The first section called `name`.
    pub fn section(&self, name: &str) -> Option<&ElfSection<'a>> {
        self.sections.iter().find(|s| s.name == name.as_bytes())
    }

    /// The bytes of section `name`, or [`FirmwareError::MissingSection`].
    pub fn require(&self, name: &'static str) -> Result<&'a [u8], FirmwareError> {
        self.section(name)
            .map(|s| s.data)
            .ok_or(FirmwareError::MissingSection { name })
    }
}
