//! The page-table formats as data: levels, virtual-address split, entry sizes and the bit
//! position of every field. Encoders ([`crate::entry`]) and the independent walker
//! ([`crate::walk`]) both read this description; neither derives it from the other.
//!
//! Sources: hwref `dev_mmu.h` for tu102 (`NV_MMU_VER2_*`, Turing–Ada) and gh100
//! (`NV_MMU_VER3_*`, Hopper–Blackwell); `tests/hwref_fields.rs` checks every constant here
//! against those headers.

/// A bit field inside a page-table entry: bits `hi..=lo`, counted from bit 0 of the entry's
/// first little-endian byte (entries are 8 or 16 bytes, so `hi` is at most 127). nvbare's one
/// bit-range type (`nvbare_bits::BitRange`), read with `get`/`place`/`limit` on a 128-bit
/// entry.
pub use nvbare_bits::BitRange as Field;

/// Which MMU format a GPU uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MmuVersion {
    /// Turing, Ampere, Ada: 5 levels, 49-bit virtual addresses.
    Ver2,
    /// Hopper, Blackwell: 6 levels, 57-bit virtual addresses.
    Ver3,
}

/// Page sizes the GPU maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PageSize {
    /// 4 KiB, in a small page table under a dual PDE.
    Size4K,
    /// 64 KiB, in a big page table under a dual PDE.
    Size64K,
    /// 2 MiB, a PTE in PD0.
    Size2M,
    /// 512 MiB, a PTE in PD1.
    Size512M,
}

impl PageSize {
    /// All page sizes, largest first.
    pub const ALL_DESCENDING: [PageSize; 4] = [
        PageSize::Size512M,
        PageSize::Size2M,
        PageSize::Size64K,
        PageSize::Size4K,
    ];
    /// log2 of the size in bytes.
    pub const fn shift(self) -> u32 {
        match self {
            PageSize::Size4K => 12,
            PageSize::Size64K => 16,
            PageSize::Size2M => 21,
            PageSize::Size512M => 29,
        }
    }
    /// Size in bytes.
    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }
    /// Bit of this size in a [`PageSizes`] mask.
    const fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of enabled page sizes. 4 KiB is always present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageSizes(u8);

impl PageSizes {
    /// 4 KiB, 64 KiB, 2 MiB and 512 MiB.
    pub const ALL: PageSizes = PageSizes(0b1111);
    /// 4 KiB only.
    pub const SMALL_ONLY: PageSizes = PageSizes(0b0001);
    /// 4 KiB, 2 MiB and 512 MiB: the sizes tinygrad uses (no 64 KiB big page tables).
    pub const NO_64K: PageSizes = PageSizes(0b1101);
    /// 4 KiB and 64 KiB.
    pub const UP_TO_64K: PageSizes = PageSizes(0b0011);
    /// Turing has no 512 MiB pages: 4 KiB, 64 KiB and 2 MiB.
    pub const NO_512M: PageSizes = PageSizes(0b0111);

    /// Whether `size` is in the set.
    pub const fn contains(self, size: PageSize) -> bool {
        self.0 & size.bit() != 0
    }
}

/// What the entries of a level are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelKind {
    /// 8-byte PDEs pointing at the next level; `leaf` is the page size of a PTE placed here
    /// instead (IS_PTE set), if the level allows one.
    Directory {
        /// Page size of a PTE at this level, if allowed.
        leaf: Option<PageSize>,
    },
    /// PD0: 16-byte dual PDEs (a big and a small page table), or a 2 MiB PTE in the low 8 bytes.
    DualDirectory,
    /// A last-level page table of 8-byte PTEs for `PageSize`.
    Table(PageSize),
}

/// One level of the page-table tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    /// Name as the hwref manuals use it ("PD3", "PD0", "PT").
    pub name: &'static str,
    /// Lowest virtual-address bit this level indexes.
    pub va_shift: u32,
    /// Number of virtual-address bits this level indexes.
    pub index_bits: u32,
    /// Bytes per entry.
    pub entry_bytes: u64,
    /// Entry type.
    pub kind: LevelKind,
}

impl Level {
    /// Number of entries in a table of this level.
    pub const fn entries(&self) -> u64 {
        1 << self.index_bits
    }
    /// Bytes a table of this level occupies.
    pub const fn table_bytes(&self) -> u64 {
        self.entries() * self.entry_bytes
    }
    /// Index of `va` in a table of this level.
    pub const fn index_of(&self, va: u64) -> u64 {
        (va >> self.va_shift) & (self.entries() - 1)
    }
}

const fn dir(name: &'static str, va_shift: u32, index_bits: u32, leaf: Option<PageSize>) -> Level {
    Level {
        name,
        va_shift,
        index_bits,
        entry_bytes: 8,
        kind: LevelKind::Directory { leaf },
    }
}

const PD0: Level = Level {
    name: "PD0",
    va_shift: 21,
    index_bits: 8,
    entry_bytes: 16,
    kind: LevelKind::DualDirectory,
};

/// The 4 KiB page table (PT, indexed by VA bits 20:12).
pub const PT_4K: Level = Level {
    name: "PT_4K",
    va_shift: 12,
    index_bits: 9,
    entry_bytes: 8,
    kind: LevelKind::Table(PageSize::Size4K),
};

/// The 64 KiB page table (PT, indexed by VA bits 20:16).
pub const PT_64K: Level = Level {
    name: "PT_64K",
    va_shift: 16,
    index_bits: 5,
    entry_bytes: 8,
    kind: LevelKind::Table(PageSize::Size64K),
};

const VER2_LEVELS: [Level; 4] = [
    dir("PD3", 47, 2, None),
    dir("PD2", 38, 9, None),
    dir("PD1", 29, 9, Some(PageSize::Size512M)),
    PD0,
];

const VER3_LEVELS: [Level; 5] = [
    dir("PD4", 56, 1, None),
    dir("PD3", 47, 9, None),
    dir("PD2", 38, 9, None),
    dir("PD1", 29, 9, Some(PageSize::Size512M)),
    PD0,
];

/// Field positions of a PTE (8 bytes; also the low half of a PD0 slot holding a 2 MiB PTE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PteFields {
    /// VALID.
    pub valid: Field,
    /// APERTURE: 0 video, 1 peer, 2 system coherent, 3 system non-coherent.
    pub aperture: Field,
    /// VOL (ver2): 1 = uncached.
    pub vol: Option<Field>,
    /// PRIVILEGE (ver2).
    pub privilege: Option<Field>,
    /// READ_ONLY (ver2).
    pub read_only: Option<Field>,
    /// ATOMIC_DISABLE (ver2).
    pub atomic_disable: Option<Field>,
    /// PCF (ver3): bit 0 uncached, 1 privileged, 2 read-only, 3 no atomics, 4 no access counting.
    pub pcf: Option<Field>,
    /// KIND.
    pub kind: Field,
    /// ADDRESS_SYS: system-memory (and ver3 peer) page number, address >> 12.
    pub address_sys: Field,
    /// ADDRESS_VID: video-memory page number, address >> 12.
    pub address_vid: Field,
    /// Peer id of a peer-aperture PTE.
    pub peer_id: Field,
}

/// Field positions of an 8-byte PDE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PdeFields {
    /// IS_PTE (shares bit 0 with a PTE's VALID).
    pub is_pte: Field,
    /// APERTURE: 0 invalid, 1 video, 2 system coherent, 3 system non-coherent.
    pub aperture: Field,
    /// VOL (ver2).
    pub vol: Option<Field>,
    /// NO_ATS (ver2).
    pub no_ats: Option<Field>,
    /// PCF (ver3): bit 0 uncached, bit 1 ATS not allowed.
    pub pcf: Option<Field>,
    /// ADDRESS for a system-memory table, address >> 12.
    pub address_sys: Field,
    /// ADDRESS for a video-memory table, address >> 12.
    pub address_vid: Field,
}

/// Field positions of a 16-byte dual PDE: a big (64 KiB) and a small (4 KiB) page table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DualPdeFields {
    /// IS_PTE.
    pub is_pte: Field,
    /// APERTURE_BIG.
    pub aperture_big: Field,
    /// VOL_BIG (ver2).
    pub vol_big: Option<Field>,
    /// PCF_BIG (ver3).
    pub pcf_big: Option<Field>,
    /// NO_ATS (ver2; one bit for the whole entry).
    pub no_ats: Option<Field>,
    /// ADDRESS_BIG for a system-memory table, address >> 8.
    pub address_big_sys: Field,
    /// ADDRESS_BIG for a video-memory table, address >> 8.
    pub address_big_vid: Field,
    /// APERTURE_SMALL.
    pub aperture_small: Field,
    /// VOL_SMALL (ver2).
    pub vol_small: Option<Field>,
    /// PCF_SMALL (ver3).
    pub pcf_small: Option<Field>,
    /// ADDRESS_SMALL for a system-memory table, address >> 12.
    pub address_small_sys: Field,
    /// ADDRESS_SMALL for a video-memory table, address >> 12.
    pub address_small_vid: Field,
}

/// Shift of every address field except the dual PDE's big-table address.
pub const ADDRESS_SHIFT: u32 = 12;
/// Shift of the dual PDE's big-table address field.
pub const ADDRESS_BIG_SHIFT: u32 = 8;

const VER2_PTE: PteFields = PteFields {
    valid: Field::new(0, 0),
    aperture: Field::new(2, 1),
    vol: Some(Field::new(3, 3)),
    privilege: Some(Field::new(5, 5)),
    read_only: Some(Field::new(6, 6)),
    atomic_disable: Some(Field::new(7, 7)),
    pcf: None,
    kind: Field::new(63, 56),
    address_sys: Field::new(53, 8),
    address_vid: Field::new(32, 8),
    peer_id: Field::new(35, 33),
};

const VER3_PTE: PteFields = PteFields {
    valid: Field::new(0, 0),
    aperture: Field::new(2, 1),
    vol: None,
    privilege: None,
    read_only: None,
    atomic_disable: None,
    pcf: Some(Field::new(7, 3)),
    kind: Field::new(11, 8),
    address_sys: Field::new(51, 12),
    address_vid: Field::new(39, 12),
    peer_id: Field::new(63, 61),
};

const VER2_PDE: PdeFields = PdeFields {
    is_pte: Field::new(0, 0),
    aperture: Field::new(2, 1),
    vol: Some(Field::new(3, 3)),
    no_ats: Some(Field::new(5, 5)),
    pcf: None,
    address_sys: Field::new(53, 8),
    address_vid: Field::new(32, 8),
};

const VER3_PDE: PdeFields = PdeFields {
    is_pte: Field::new(0, 0),
    aperture: Field::new(2, 1),
    vol: None,
    no_ats: None,
    pcf: Some(Field::new(5, 3)),
    address_sys: Field::new(51, 12),
    address_vid: Field::new(51, 12),
};

const VER2_DUAL_PDE: DualPdeFields = DualPdeFields {
    is_pte: Field::new(0, 0),
    aperture_big: Field::new(2, 1),
    vol_big: Some(Field::new(3, 3)),
    pcf_big: None,
    no_ats: Some(Field::new(5, 5)),
    address_big_sys: Field::new(53, 4),
    address_big_vid: Field::new(32, 4),
    aperture_small: Field::new(66, 65),
    vol_small: Some(Field::new(67, 67)),
    pcf_small: None,
    address_small_sys: Field::new(117, 72),
    address_small_vid: Field::new(96, 72),
};

const VER3_DUAL_PDE: DualPdeFields = DualPdeFields {
    is_pte: Field::new(0, 0),
    aperture_big: Field::new(2, 1),
    vol_big: None,
    pcf_big: Some(Field::new(5, 3)),
    no_ats: None,
    address_big_sys: Field::new(51, 8),
    address_big_vid: Field::new(51, 8),
    aperture_small: Field::new(66, 65),
    vol_small: None,
    pcf_small: Some(Field::new(69, 67)),
    address_small_sys: Field::new(115, 76),
    address_small_vid: Field::new(115, 76),
};

/// Everything about one MMU format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    /// Which format.
    pub version: MmuVersion,
    /// Directory levels from the root down to PD0 (page tables below are [`PT_4K`], [`PT_64K`]).
    pub directories: &'static [Level],
    /// Virtual-address bits.
    pub va_bits: u32,
    /// PTE fields.
    pub pte: PteFields,
    /// PDE fields.
    pub pde: PdeFields,
    /// Dual PDE fields.
    pub dual_pde: DualPdeFields,
}

impl Format {
    /// The ver2 format (Turing, Ampere, Ada).
    pub const VER2: Format = Format {
        version: MmuVersion::Ver2,
        directories: &VER2_LEVELS,
        va_bits: 49,
        pte: VER2_PTE,
        pde: VER2_PDE,
        dual_pde: VER2_DUAL_PDE,
    };
    /// The ver3 format (Hopper, Blackwell).
    pub const VER3: Format = Format {
        version: MmuVersion::Ver3,
        directories: &VER3_LEVELS,
        va_bits: 57,
        pte: VER3_PTE,
        pde: VER3_PDE,
        dual_pde: VER3_DUAL_PDE,
    };

    /// The format for `version`.
    pub const fn of(version: MmuVersion) -> &'static Format {
        match version {
            MmuVersion::Ver2 => &Format::VER2,
            MmuVersion::Ver3 => &Format::VER3,
        }
    }
    /// First virtual address past the address space.
    pub const fn va_limit(&self) -> u64 {
        1 << self.va_bits
    }
    /// Index of PD1 (holds 512 MiB PTEs) in [`Format::directories`].
    pub const fn pd1_index(&self) -> usize {
        self.directories.len() - 2
    }
    /// Index of PD0 (dual PDEs, 2 MiB PTEs) in [`Format::directories`].
    pub const fn pd0_index(&self) -> usize {
        self.directories.len() - 1
    }
}
