//! Page-table entries: [`Pte`], [`Pde`] and [`DualPde`], encoded to and decoded from raw
//! words using the field positions in [`crate::format`].

use crate::error::{MmuError, check_aligned};
use crate::format::{ADDRESS_BIG_SHIFT, ADDRESS_SHIFT, Field, Format, MmuVersion};
use crate::memory::{TableAddr, TableAperture};

/// Memory a PTE points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Aperture {
    /// Local video memory.
    Video,
    /// Another GPU's video memory, by peer id (0..=7).
    Peer(u8),
    /// System memory, snooped.
    SystemCoherent,
    /// System memory, not snooped.
    SystemNonCoherent,
}

impl Aperture {
    /// The value of the PTE APERTURE field.
    pub const fn pte_value(self) -> u128 {
        match self {
            Aperture::Video => 0,
            Aperture::Peer(_) => 1,
            Aperture::SystemCoherent => 2,
            Aperture::SystemNonCoherent => 3,
        }
    }
}

/// PTE kind for generic (pitch, uncompressed) memory.
pub const KIND_GENERIC_MEMORY: u8 = 6;

/// How a page is mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PteAttributes {
    /// Memory the page is in.
    pub aperture: Aperture,
    /// Memory kind (ver2: 8 bits, ver3: 4 bits); [`KIND_GENERIC_MEMORY`] for ordinary memory.
    pub kind: u8,
    /// Cached in the GPU L2 (ver2 VOL = 0, ver3 PCF bit 0 = 0).
    pub cached: bool,
    /// Writes fault.
    pub read_only: bool,
    /// Only privileged engines may access it.
    pub privileged: bool,
    /// Atomics allowed.
    pub atomics: bool,
}

impl PteAttributes {
    /// Cached, writable, atomics allowed, generic kind, in `aperture`.
    pub const fn new(aperture: Aperture) -> Self {
        PteAttributes {
            aperture,
            kind: KIND_GENERIC_MEMORY,
            cached: true,
            read_only: false,
            privileged: false,
            atomics: true,
        }
    }
    /// The same attributes, uncached.
    pub const fn uncached(mut self) -> Self {
        self.cached = false;
        self
    }
}

impl Default for PteAttributes {
    fn default() -> Self {
        PteAttributes::new(Aperture::Video)
    }
}

fn set_flag(entry: &mut u128, field: Option<Field>, on: bool) {
    if let Some(f) = field {
        *entry |= f.place(on as u128);
    }
}

fn flag(entry: u128, field: Option<Field>) -> bool {
    field.is_some_and(|f| f.get(entry) != 0)
}

fn place_address(field: Field, addr: u64, shift: u32) -> Result<u128, MmuError> {
    let value = (addr >> shift) as u128;
    if value >= field.limit() {
        return Err(MmuError::AddressTooLarge {
            addr,
            limit: u64::try_from(field.limit() << shift).unwrap_or(u64::MAX),
        });
    }
    Ok(field.place(value))
}

/// A valid page-table entry: a page's base address and its attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pte {
    /// Physical address of the page (4 KiB aligned; the page size decides further alignment).
    pub addr: u64,
    /// How it is mapped.
    pub attrs: PteAttributes,
}

impl Pte {
    /// The raw 8-byte entry.
    pub fn encode(&self, format: &Format) -> Result<u64, MmuError> {
        let f = &format.pte;
        let a = &self.attrs;
        check_aligned("page address", self.addr, 1 << ADDRESS_SHIFT)?;
        let max_kind = (f.kind.limit() - 1) as u8;
        if u128::from(a.kind) > u128::from(max_kind) {
            return Err(MmuError::KindOutOfRange {
                kind: a.kind,
                max: max_kind,
            });
        }
        let mut e = f.valid.place(1) | f.aperture.place(a.aperture.pte_value());
        e |= f.kind.place(a.kind.into());
        e |= match (a.aperture, format.version) {
            (Aperture::Video, _) => place_address(f.address_vid, self.addr, ADDRESS_SHIFT)?,
            (Aperture::Peer(id), version) => {
                if id > 7 {
                    return Err(MmuError::PeerIdOutOfRange { id });
                }
                let addr_field = match version {
                    MmuVersion::Ver2 => f.address_vid,
                    MmuVersion::Ver3 => f.address_sys,
                };
                place_address(addr_field, self.addr, ADDRESS_SHIFT)? | f.peer_id.place(id.into())
            }
            _ => place_address(f.address_sys, self.addr, ADDRESS_SHIFT)?,
        };
        if let Some(pcf) = f.pcf {
            let bits = (!a.cached as u128)
                | (a.privileged as u128) << 1
                | (a.read_only as u128) << 2
                | (!a.atomics as u128) << 3;
            e |= pcf.place(bits);
        }
        set_flag(&mut e, f.vol, !a.cached);
        set_flag(&mut e, f.privilege, a.privileged);
        set_flag(&mut e, f.read_only, a.read_only);
        set_flag(&mut e, f.atomic_disable, !a.atomics);
        Ok(e as u64)
    }

    /// The entry `raw` decodes to, or `None` if it is not valid.
    pub fn decode(format: &Format, raw: u64) -> Option<Pte> {
        let f = &format.pte;
        let e = u128::from(raw);
        if f.valid.get(e) == 0 {
            return None;
        }
        let peer = f.peer_id.get(e) as u8;
        let aperture = match f.aperture.get(e) {
            0 => Aperture::Video,
            1 => Aperture::Peer(peer),
            2 => Aperture::SystemCoherent,
            _ => Aperture::SystemNonCoherent,
        };
        let addr_field = match (aperture, format.version) {
            (Aperture::Video, _) | (Aperture::Peer(_), MmuVersion::Ver2) => f.address_vid,
            _ => f.address_sys,
        };
        let pcf = f.pcf.map_or(0, |p| p.get(e));
        let attrs = PteAttributes {
            aperture,
            kind: f.kind.get(e) as u8,
            cached: !(flag(e, f.vol) || pcf & 1 != 0),
            privileged: flag(e, f.privilege) || pcf & 2 != 0,
            read_only: flag(e, f.read_only) || pcf & 4 != 0,
            atomics: !(flag(e, f.atomic_disable) || pcf & 8 != 0),
        };
        Some(Pte {
            addr: (addr_field.get(e) as u64) << ADDRESS_SHIFT,
            attrs,
        })
    }
}

fn pde_table_flags(entry: &mut u128, vol: Option<Field>, pcf: Option<Field>) {
    // Tables are cached; ATS translation is not used (ver3 PCF 2 = VALID_CACHED_ATS_NOT_ALLOWED).
    set_flag(entry, vol, false);
    if let Some(p) = pcf {
        *entry |= p.place(0b10);
    }
}

fn table_aperture(value: u128) -> Option<TableAperture> {
    match value {
        1 => Some(TableAperture::Video),
        2 => Some(TableAperture::SystemCoherent),
        3 => Some(TableAperture::SystemNonCoherent),
        _ => None,
    }
}

/// An 8-byte PDE pointing at the next level's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pde {
    /// The table it points at (4 KiB aligned).
    pub table: TableAddr,
}

impl Pde {
    /// The raw 8-byte entry.
    pub fn encode(&self, format: &Format) -> Result<u64, MmuError> {
        let f = &format.pde;
        check_aligned("page table address", self.table.addr, 1 << ADDRESS_SHIFT)?;
        let addr_field = match self.table.aperture {
            TableAperture::Video => f.address_vid,
            _ => f.address_sys,
        };
        let mut e = f.aperture.place(self.table.aperture.pde_value())
            | place_address(addr_field, self.table.addr, ADDRESS_SHIFT)?;
        pde_table_flags(&mut e, f.vol, f.pcf);
        set_flag(&mut e, f.no_ats, true);
        Ok(e as u64)
    }

    /// The table `raw` points at, or `None` if it points nowhere. A set IS_PTE bit is not a PDE.
    pub fn decode(format: &Format, raw: u64) -> Option<Pde> {
        let f = &format.pde;
        let e = u128::from(raw);
        if f.is_pte.get(e) != 0 {
            return None;
        }
        let aperture = table_aperture(f.aperture.get(e))?;
        let field = match aperture {
            TableAperture::Video => f.address_vid,
            _ => f.address_sys,
        };
        Some(Pde {
            table: TableAddr {
                aperture,
                addr: (field.get(e) as u64) << ADDRESS_SHIFT,
            },
        })
    }
}

/// A 16-byte PD0 entry pointing at a big (64 KiB) and/or a small (4 KiB) page table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DualPde {
    /// The 64 KiB page table (256-byte aligned), if any.
    pub big: Option<TableAddr>,
    /// The 4 KiB page table (4 KiB aligned), if any.
    pub small: Option<TableAddr>,
}

impl DualPde {
    /// The raw 16-byte entry as a `u128` (low 8 bytes first in memory).
    pub fn encode(&self, format: &Format) -> Result<u128, MmuError> {
        let f = &format.dual_pde;
        let mut e = 0u128;
        if let Some(big) = self.big {
            check_aligned("big page table address", big.addr, 1 << ADDRESS_BIG_SHIFT)?;
            let field = match big.aperture {
                TableAperture::Video => f.address_big_vid,
                _ => f.address_big_sys,
            };
            e |= f.aperture_big.place(big.aperture.pde_value())
                | place_address(field, big.addr, ADDRESS_BIG_SHIFT)?;
            pde_table_flags(&mut e, f.vol_big, f.pcf_big);
        }
        if let Some(small) = self.small {
            check_aligned("small page table address", small.addr, 1 << ADDRESS_SHIFT)?;
            let field = match small.aperture {
                TableAperture::Video => f.address_small_vid,
                _ => f.address_small_sys,
            };
            e |= f.aperture_small.place(small.aperture.pde_value())
                | place_address(field, small.addr, ADDRESS_SHIFT)?;
            pde_table_flags(&mut e, f.vol_small, f.pcf_small);
        }
        // ver2 NO_ATS (bit 5) lies inside ADDRESS_BIG (53:4, the address >> 8): with a big table
        // present that bit is address bit 9 and must stay the address. Only an entry without a
        // big table carries NO_ATS (as tinygrad's small-table-only entries do).
        if e != 0 && self.big.is_none() {
            set_flag(&mut e, f.no_ats, true);
        }
        Ok(e)
    }

    /// The tables `raw` points at. A set IS_PTE bit (a 2 MiB PTE) decodes to no tables.
    pub fn decode(format: &Format, raw: u128) -> DualPde {
        let f = &format.dual_pde;
        if f.is_pte.get(raw) != 0 {
            return DualPde {
                big: None,
                small: None,
            };
        }
        let big = table_aperture(f.aperture_big.get(raw)).map(|aperture| {
            let field = match aperture {
                TableAperture::Video => f.address_big_vid,
                _ => f.address_big_sys,
            };
            TableAddr {
                aperture,
                addr: (field.get(raw) as u64) << ADDRESS_BIG_SHIFT,
            }
        });
        let small = table_aperture(f.aperture_small.get(raw)).map(|aperture| {
            let field = match aperture {
                TableAperture::Video => f.address_small_vid,
                _ => f.address_small_sys,
            };
            TableAddr {
                aperture,
                addr: (field.get(raw) as u64) << ADDRESS_SHIFT,
            }
        });
        DualPde { big, small }
    }
}
