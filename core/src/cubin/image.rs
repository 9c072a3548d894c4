//! The loadable image of a cubin: code, constant banks and global data laid out at one GPU
//! address, with relocations applied.

use super::CubinError;
use super::elf::{Elf, SHF_ALLOC, SHT_NOBITS, SHT_REL, SHT_RELA};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// `R_CUDA_64`: the 64-bit address of the symbol.
pub const R_CUDA_64: u32 = 2;
/// `R_CUDA_ABS32_LO_32`: low 32 bits of the address into the instruction's upper word.
pub const R_CUDA_ABS32_LO_32: u32 = 0x38;
/// `R_CUDA_ABS32_HI_32`: high 32 bits of the address into the instruction's upper word.
pub const R_CUDA_ABS32_HI_32: u32 = 0x39;

/// Every loadable section is placed at least this aligned (code wants 128 bytes; constant
/// banks 64 for the QMD's shifted addresses).
pub const SECTION_ALIGN: u64 = 128;
/// Largest image this loader builds.
pub const MAX_IMAGE: u64 = 1 << 30;

/// Loadable sections at a base address, relocated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleImage {
    /// GPU VA the image was laid out for.
    pub base_va: u64,
    /// The bytes to copy to `base_va`.
    pub bytes: Vec<u8>,
    /// Offset of each ELF section in `bytes` (`None`: not loaded).
    pub section_offsets: Vec<Option<u64>>,
}

impl ModuleImage {
    /// The GPU VA of section `i`, if loaded.
    pub fn section_va(&self, i: usize) -> Option<u64> {
        self.section_offsets
            .get(i)
            .copied()
            .flatten()
            .map(|o| self.base_va + o)
    }

    pub(super) fn build(elf: &Elf<'_>, base_va: u64) -> Result<Self, CubinError> {
        let n = elf.sections.len();
        let mut offsets = vec![None; n];
        let mut end = 0u64;
        for (i, sh) in elf.sections.iter().enumerate() {
            let name = elf.section_name(i)?;
            if sh.flags & SHF_ALLOC == 0 || name.starts_with(".nv.shared") || sh.kind >= 0x7000_0000
            {
                continue;
            }
            let align = sh.align.max(SECTION_ALIGN);
            if !align.is_power_of_two() {
                return Err(CubinError::Malformed {
                    what: "section alignment is not a power of two",
                });
            }
            let at = end
                .checked_next_multiple_of(align)
                .ok_or(CubinError::Malformed {
                    what: "image too large",
                })?;
            end = at.checked_add(sh.size).filter(|&e| e <= MAX_IMAGE).ok_or(
                CubinError::Malformed {
                    what: "image larger than 1 GiB",
                },
            )?;
            offsets[i] = Some(at);
        }
        let mut bytes = vec![0u8; end as usize];
        for (i, off) in offsets.iter().enumerate() {
            if let Some(off) = *off
                && elf.sections[i].kind != SHT_NOBITS
            {
                let data = elf.contents(i)?;
                bytes[off as usize..off as usize + data.len()].copy_from_slice(data);
            }
        }
        let mut image = Self {
            base_va,
            bytes,
            section_offsets: offsets,
        };
        image.relocate(elf)?;
        Ok(image)
    }

    fn relocate(&mut self, elf: &Elf<'_>) -> Result<(), CubinError> {
        let symbols = elf.symbols()?;
        for i in 0..elf.sections.len() {
            let sh = elf.sections[i];
            if sh.kind != SHT_REL && sh.kind != SHT_RELA {
                continue;
            }
            let target = sh.info as usize;
            let Some(Some(target_off)) = self.section_offsets.get(target).copied() else {
                continue; // relocations of sections that are not loaded (e.g. .debug_frame)
            };
            let target_size = elf.sections[target].size;
            for r in elf.relocations(i)? {
                let sym = symbols
                    .get(r.symbol as usize)
                    .ok_or(CubinError::Malformed {
                        what: "relocation names a symbol that does not exist",
                    })?;
                let sym_va = match self.section_va(sym.section as usize) {
                    Some(va) if sym.section != 0 => va.wrapping_add(sym.value),
                    _ => return Err(CubinError::UndefinedSymbol(String::from(sym.name))),
                };
                let width = if r.kind == R_CUDA_64 { 8 } else { 4 };
                let field_at = if r.kind == R_CUDA_64 {
                    r.offset
                } else {
                    r.offset.wrapping_add(4)
                };
                if field_at.checked_add(width).is_none_or(|e| e > target_size) {
                    return Err(CubinError::Malformed {
                        what: "relocation outside its section",
                    });
                }
                let p = (target_off + field_at) as usize;
                let place = &mut self.bytes[p..p + width as usize];
                let implicit = match width {
                    8 => u64::from_le_bytes(place.try_into().unwrap_or([0; 8])),
                    _ => 0,
                };
                let value = sym_va.wrapping_add(r.addend.map_or(implicit, |a| a as u64));
                match r.kind {
                    R_CUDA_64 => place.copy_from_slice(&value.to_le_bytes()),
                    R_CUDA_ABS32_LO_32 => place.copy_from_slice(&(value as u32).to_le_bytes()),
                    R_CUDA_ABS32_HI_32 => {
                        place.copy_from_slice(&((value >> 32) as u32).to_le_bytes())
                    }
                    kind => {
                        return Err(CubinError::UnsupportedRelocation {
                            kind,
                            section: String::from(elf.section_name(target)?),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}
