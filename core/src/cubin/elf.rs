//! A bounds-checked reader for the 64-bit little-endian ELF files nvcc writes as cubins.
//! Only what the loader needs: section headers, names, symbols, relocations.

use super::CubinError;
use alloc::vec::Vec;

/// `EM_CUDA`.
pub const EM_CUDA: u16 = 190;
/// `SHT_PROGBITS`.
pub const SHT_PROGBITS: u32 = 1;
/// `SHT_SYMTAB`.
pub const SHT_SYMTAB: u32 = 2;
/// `SHT_RELA`.
pub const SHT_RELA: u32 = 4;
/// `SHT_NOBITS`.
pub const SHT_NOBITS: u32 = 8;
/// `SHT_REL`.
pub const SHT_REL: u32 = 9;
/// `SHT_CUDA_INFO`.
pub const SHT_CUDA_INFO: u32 = 0x7000_0000;
/// `SHF_ALLOC`.
pub const SHF_ALLOC: u64 = 2;
/// `STO_CUDA_ENTRY`: the symbol is a kernel entry point (`st_other`).
pub const STO_CUDA_ENTRY: u8 = 0x10;
/// `STT_FUNC`.
pub const STT_FUNC: u8 = 2;

pub(crate) fn u16_at(d: &[u8], off: usize, what: &'static str) -> Result<u16, CubinError> {
    let b = bytes(d, off, 2, what)?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}

pub(crate) fn u32_at(d: &[u8], off: usize, what: &'static str) -> Result<u32, CubinError> {
    let b = bytes(d, off, 4, what)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

pub(crate) fn u64_at(d: &[u8], off: usize, what: &'static str) -> Result<u64, CubinError> {
    let b = bytes(d, off, 8, what)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Ok(u64::from_le_bytes(a))
}

/// `len` bytes at `off`, or a `Truncated` error naming `what`.
pub(crate) fn bytes<'a>(
    d: &'a [u8],
    off: usize,
    len: usize,
    what: &'static str,
) -> Result<&'a [u8], CubinError> {
    off.checked_add(len)
        .and_then(|end| d.get(off..end))
        .ok_or(CubinError::Truncated {
            what,
            offset: off as u64,
            len: len as u64,
        })
}

fn to_usize(v: u64, what: &'static str) -> Result<usize, CubinError> {
    usize::try_from(v).map_err(|_| CubinError::Truncated {
        what,
        offset: v,
        len: 0,
    })
}

/// One section header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionHeader {
    /// Offset of the name in `.shstrtab`.
    pub name_off: u32,
    /// `sh_type`.
    pub kind: u32,
    /// `sh_flags`.
    pub flags: u64,
    /// File offset.
    pub offset: u64,
    /// Size in bytes (in memory; in the file too unless NOBITS).
    pub size: u64,
    /// `sh_link`.
    pub link: u32,
    /// `sh_info`.
    pub info: u32,
    /// `sh_addralign`.
    pub align: u64,
    /// `sh_entsize`.
    pub entsize: u64,
}

/// One symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// Name (empty for section symbols).
    pub name: &'a str,
    /// `st_info & 0xf`.
    pub kind: u8,
    /// `st_other`.
    pub other: u8,
    /// Section index (0: undefined).
    pub section: u16,
    /// Value (offset in its section).
    pub value: u64,
    /// Size.
    pub size: u64,
}

/// One relocation, REL or RELA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relocation {
    /// Offset in the target section.
    pub offset: u64,
    /// Symbol index.
    pub symbol: u32,
    /// Relocation type (`R_CUDA_*`).
    pub kind: u32,
    /// Explicit addend (RELA), or `None` (REL: the addend is in place).
    pub addend: Option<i64>,
}

/// A parsed ELF file: header fields and section headers, all in bounds.
#[derive(Clone, Debug)]
pub struct Elf<'a> {
    /// The whole file.
    pub data: &'a [u8],
    /// `e_flags` (the SM version lives here).
    pub flags: u32,
    /// Section headers.
    pub sections: Vec<SectionHeader>,
    shstrtab: usize,
}

impl<'a> Elf<'a> {
    /// Parses and validates the header and every section header.
    pub fn parse(data: &'a [u8]) -> Result<Self, CubinError> {
        if data.get(..4) != Some(b"\x7fELF".as_slice()) {
            return Err(CubinError::NotElf);
        }
        let ident = bytes(data, 0, 16, "ELF identification")?;
        if ident[4] != 2 || ident[5] != 1 {
            return Err(CubinError::NotElf64LittleEndian {
                class: ident[4],
                data: ident[5],
            });
        }
        let machine = u16_at(data, 18, "ELF header")?;
        if machine != EM_CUDA {
            return Err(CubinError::NotCuda { machine });
        }
        let flags = u32_at(data, 48, "ELF header")?;
        let shoff = to_usize(u64_at(data, 40, "ELF header")?, "section header table")?;
        let shentsize = u16_at(data, 58, "ELF header")? as usize;
        let shnum = u16_at(data, 60, "ELF header")? as usize;
        let shstrndx = u16_at(data, 62, "ELF header")? as usize;
        let phoff = to_usize(u64_at(data, 32, "ELF header")?, "program header table")?;
        let phnum = u16_at(data, 56, "ELF header")? as usize;
        let phentsize = u16_at(data, 54, "ELF header")? as usize;
        bytes(data, phoff, phnum * phentsize, "program header table")?;
        if shentsize != 64 {
            return Err(CubinError::Malformed {
                what: "section header size is not 64",
            });
        }
        let table = shnum.checked_mul(64).ok_or(CubinError::Malformed {
            what: "section count",
        })?;
        bytes(data, shoff, table, "section header table")?;
        let mut sections = Vec::with_capacity(shnum);
        for i in 0..shnum {
            let h = shoff + i * 64;
            let s = SectionHeader {
                name_off: u32_at(data, h, "section header")?,
                kind: u32_at(data, h + 4, "section header")?,
                flags: u64_at(data, h + 8, "section header")?,
                offset: u64_at(data, h + 24, "section header")?,
                size: u64_at(data, h + 32, "section header")?,
                link: u32_at(data, h + 40, "section header")?,
                info: u32_at(data, h + 44, "section header")?,
                align: u64_at(data, h + 48, "section header")?,
                entsize: u64_at(data, h + 56, "section header")?,
            };
            if s.kind != SHT_NOBITS && s.kind != 0 {
                let off = to_usize(s.offset, "section contents")?;
                let len = to_usize(s.size, "section contents")?;
                bytes(data, off, len, "section contents")?;
            }
            sections.push(s);
        }
        if shstrndx >= sections.len() {
            return Err(CubinError::Malformed {
                what: "section name table index out of range",
            });
        }
        Ok(Self {
            data,
            flags,
            sections,
            shstrtab: shstrndx,
        })
    }

    /// The contents of section `i` (empty for NOBITS).
    pub fn contents(&self, i: usize) -> Result<&'a [u8], CubinError> {
        let s = self.sections.get(i).ok_or(CubinError::Malformed {
            what: "section index out of range",
        })?;
        if s.kind == SHT_NOBITS || s.kind == 0 {
            return Ok(&[]);
        }
        // Checked in `parse`.
        bytes(
            self.data,
            s.offset as usize,
            s.size as usize,
            "section contents",
        )
    }

    /// A NUL-terminated string at `off` of string-table section `table`.
    pub fn string(&self, table: usize, off: u32) -> Result<&'a str, CubinError> {
        let t = self.contents(table)?;
        let rest = t.get(off as usize..).ok_or(CubinError::Malformed {
            what: "string offset past its table",
        })?;
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(CubinError::Malformed {
                what: "unterminated string",
            })?;
        core::str::from_utf8(&rest[..end]).map_err(|_| CubinError::Malformed {
            what: "name is not UTF-8",
        })
    }

    /// The name of section `i`.
    pub fn section_name(&self, i: usize) -> Result<&'a str, CubinError> {
        let s = self.sections.get(i).ok_or(CubinError::Malformed {
            what: "section index out of range",
        })?;
        self.string(self.shstrtab, s.name_off)
    }

    /// The index of the section named `name`.
    pub fn find_section(&self, name: &str) -> Option<usize> {
        (0..self.sections.len()).find(|&i| self.section_name(i).is_ok_and(|n| n == name))
    }

    /// All symbols of the (first) symbol table.
    pub fn symbols(&self) -> Result<Vec<Symbol<'a>>, CubinError> {
        let Some(idx) = self.sections.iter().position(|s| s.kind == SHT_SYMTAB) else {
            return Ok(Vec::new());
        };
        let sh = self.sections[idx];
        let strtab = sh.link as usize;
        let data = self.contents(idx)?;
        let mut out = Vec::with_capacity(data.len() / 24);
        for e in data.chunks_exact(24) {
            let info = e[4];
            let name_off = u32_at(e, 0, "symbol")?;
            out.push(Symbol {
                name: self.string(strtab, name_off)?,
                kind: info & 0xf,
                other: e[5],
                section: u16_at(e, 6, "symbol")?,
                value: u64_at(e, 8, "symbol")?,
                size: u64_at(e, 16, "symbol")?,
            });
        }
        Ok(out)
    }

    /// The relocations of REL or RELA section `i`.
    pub fn relocations(&self, i: usize) -> Result<Vec<Relocation>, CubinError> {
        let sh = self.sections[i];
        let rela = sh.kind == SHT_RELA;
        let size = if rela { 24 } else { 16 };
        let data = self.contents(i)?;
        if data.len() % size != 0 {
            return Err(CubinError::Malformed {
                what: "relocation section size is not a multiple of its entry size",
            });
        }
        data.chunks_exact(size)
            .map(|e| {
                let info = u64_at(e, 8, "relocation")?;
                Ok(Relocation {
                    offset: u64_at(e, 0, "relocation")?,
                    symbol: (info >> 32) as u32,
                    kind: info as u32,
                    addend: if rela {
                        Some(u64_at(e, 16, "relocation")? as i64)
                    } else {
                        None
                    },
                })
            })
            .collect()
    }
}
