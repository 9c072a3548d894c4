//! An independent page-table walker: resolves a virtual address by reading raw table memory
//! the way the GPU's MMU does. It shares only the format description ([`crate::format`]) with
//! the mapping code; it extracts fields bit by bit from the entry's bytes itself and never
//! calls the encoders or the address space's bookkeeping. The simulator's MMU is to use it
//! once the simulator models one.
//!
//! Bounded by construction: one read per level (two at PD0's page tables), no recursion, so it
//! terminates on any memory contents, and every memory access goes through
//! [`TableMemory::read_u64`], which reports a bad address as an error.

use core::fmt;

use crate::entry::Aperture;
use crate::error::AccessError;
use crate::format::{
    ADDRESS_BIG_SHIFT, ADDRESS_SHIFT, Field, Format, LevelKind, MmuVersion, PT_4K, PT_64K, PageSize,
};
use crate::memory::{TableAddr, TableAperture, TableMemory};

/// Where a virtual address leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Translation {
    /// Physical address of the byte `va` names (page base plus offset).
    pub pa: u64,
    /// Memory the page is in.
    pub aperture: Aperture,
    /// Size of the page that maps it.
    pub page_size: PageSize,
    /// PTE kind field.
    pub kind: u8,
    /// The raw PTE.
    pub pte: u64,
    /// Where the PTE sits.
    pub pte_at: TableAddr,
}

/// A walk that could not complete the way the hardware would (the GPU would raise a fault).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkError {
    /// The virtual address is beyond the format's address bits.
    VaOutOfRange {
        /// The address.
        va: u64,
    },
    /// A directory entry has IS_PTE set at a level that cannot hold pages.
    PteAtDirectory {
        /// Level name.
        level: &'static str,
    },
    /// Table memory could not be read.
    Access(AccessError),
}

impl From<AccessError> for WalkError {
    fn from(e: AccessError) -> Self {
        WalkError::Access(e)
    }
}

impl fmt::Display for WalkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WalkError::VaOutOfRange { va } => write!(
                f,
                "virtual address {va:#x} is beyond the address space; use an address below the format's VA limit"
            ),
            WalkError::PteAtDirectory { level } => write!(
                f,
                "a {level} entry has IS_PTE set but {level} cannot hold pages; the tables are corrupt, rebuild them"
            ),
            WalkError::Access(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for WalkError {}

/// An entry's bytes, little-endian, as the MMU fetches them.
struct RawEntry {
    bytes: [u8; 16],
}

impl RawEntry {
    fn read(mem: &impl TableMemory, at: TableAddr, entry_bytes: u64) -> Result<Self, AccessError> {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&mem.read_u64(at)?.to_le_bytes());
        if entry_bytes == 16 {
            bytes[8..].copy_from_slice(&mem.read_u64(at.offset(8))?.to_le_bytes());
        }
        Ok(RawEntry { bytes })
    }

    /// The value of bits `hi..=lo`, gathered one bit at a time.
    fn bits(&self, field: Field) -> u64 {
        let mut value = 0u64;
        for (n, bit) in (field.lo..=field.hi).enumerate() {
            // CAST: a bit index below 128.
            let byte = self.bytes[(bit / 8) as usize % 16];
            value |= u64::from((byte >> (bit % 8)) & 1) << n;
        }
        value
    }

    fn low_word(&self) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.bytes[..8]);
        u64::from_le_bytes(w)
    }
}

fn table_in(aperture_value: u64) -> Option<TableAperture> {
    match aperture_value {
        1 => Some(TableAperture::Video),
        2 => Some(TableAperture::SystemCoherent),
        3 => Some(TableAperture::SystemNonCoherent),
        _ => None,
    }
}

/// Decodes the PTE in the first 8 bytes of `e`, mapping `va` with `page_size`.
fn leaf(
    format: &Format,
    e: &RawEntry,
    at: TableAddr,
    va: u64,
    page_size: PageSize,
) -> Option<Translation> {
    let f = &format.pte;
    if e.bits(f.valid) == 0 {
        return None;
    }
    let (aperture, number) = match e.bits(f.aperture) {
        0 => (Aperture::Video, e.bits(f.address_vid)),
        1 => {
            let id = e.bits(f.peer_id) as u8;
            let number = match format.version {
                MmuVersion::Ver2 => e.bits(f.address_vid),
                MmuVersion::Ver3 => e.bits(f.address_sys),
            };
            (Aperture::Peer(id), number)
        }
        2 => (Aperture::SystemCoherent, e.bits(f.address_sys)),
        _ => (Aperture::SystemNonCoherent, e.bits(f.address_sys)),
    };
    let offset_mask = page_size.bytes() - 1;
    let base = (number << ADDRESS_SHIFT) & !offset_mask;
    Some(Translation {
        pa: base | (va & offset_mask),
        aperture,
        page_size,
        kind: e.bits(f.kind) as u8,
        pte: e.low_word(),
        pte_at: at,
    })
}

/// Resolves `va` in the tables rooted at `root`. `Ok(None)` means not mapped.
pub fn walk(
    format: &Format,
    mem: &impl TableMemory,
    root: TableAddr,
    va: u64,
) -> Result<Option<Translation>, WalkError> {
    if va >> format.va_bits != 0 {
        return Err(WalkError::VaOutOfRange { va });
    }
    let mut table = root;
    for level in format.directories {
        let index = level.index_of(va);
        let at = table.offset(index * level.entry_bytes);
        let e = RawEntry::read(mem, at, level.entry_bytes)?;
        match level.kind {
            LevelKind::Directory { leaf: page } => {
                let pde = &format.pde;
                if e.bits(pde.is_pte) == 1 {
                    return match page {
                        Some(size) => Ok(leaf(format, &e, at, va, size)),
                        None => Err(WalkError::PteAtDirectory { level: level.name }),
                    };
                }
                let Some(aperture) = table_in(e.bits(pde.aperture)) else {
                    return Ok(None);
                };
                let field = match aperture {
                    TableAperture::Video => pde.address_vid,
                    _ => pde.address_sys,
                };
                table = TableAddr {
                    aperture,
                    addr: e.bits(field) << ADDRESS_SHIFT,
                };
            }
            LevelKind::DualDirectory => {
                let d = &format.dual_pde;
                if e.bits(d.is_pte) == 1 {
                    return Ok(leaf(format, &e, at, va, PageSize::Size2M));
                }
                // The big page table answers first; an invalid big PTE falls through to the
                // small table.
                if let Some(aperture) = table_in(e.bits(d.aperture_big)) {
                    let field = match aperture {
                        TableAperture::Video => d.address_big_vid,
                        _ => d.address_big_sys,
                    };
                    let pt = TableAddr {
                        aperture,
                        addr: e.bits(field) << ADDRESS_BIG_SHIFT,
                    };
                    let at = pt.offset(PT_64K.index_of(va) * PT_64K.entry_bytes);
                    let pte = RawEntry::read(mem, at, PT_64K.entry_bytes)?;
                    if let Some(t) = leaf(format, &pte, at, va, PageSize::Size64K) {
                        return Ok(Some(t));
                    }
                }
                let Some(aperture) = table_in(e.bits(d.aperture_small)) else {
                    return Ok(None);
                };
                let field = match aperture {
                    TableAperture::Video => d.address_small_vid,
                    _ => d.address_small_sys,
                };
                let pt = TableAddr {
                    aperture,
                    addr: e.bits(field) << ADDRESS_SHIFT,
                };
                let at = pt.offset(PT_4K.index_of(va) * PT_4K.entry_bytes);
                let pte = RawEntry::read(mem, at, PT_4K.entry_bytes)?;
                return Ok(leaf(format, &pte, at, va, PageSize::Size4K));
            }
            LevelKind::Table(_) => break,
        }
    }
    // Directories always end in PD0, which returns above.
    Ok(None)
}
