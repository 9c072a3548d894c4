//! Errors. Every variant names what was wrong and, in its `Display`, what to do about it.

use core::fmt;

use crate::memory::TableAddr;

/// A page-table memory access that could not be carried out (address outside the window the
/// [`TableMemory`](crate::TableMemory) implementation reaches, or not 8-byte aligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessError {
    /// The location that could not be read or written.
    pub at: TableAddr,
    /// How many bytes the access covered.
    pub len: u64,
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "page-table memory access of {} bytes at {:?} {:#x} is outside the memory window or unaligned; \
             place page tables inside the window the TableMemory implementation covers",
            self.len, self.at.aperture, self.at.addr
        )
    }
}

impl core::error::Error for AccessError {}

/// Everything that can go wrong in this crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmuError {
    /// An address or size is not a multiple of the alignment the operation needs.
    Misaligned {
        /// Which argument.
        what: &'static str,
        /// Its value.
        value: u64,
        /// The alignment it needs.
        align: u64,
    },
    /// A size of zero was given where a non-empty range is required.
    ZeroSize {
        /// Which argument.
        what: &'static str,
    },
    /// An alignment that is not a power of two.
    BadAlignment {
        /// The alignment given.
        align: u64,
    },
    /// A virtual range reaches past the end of the address space.
    VaOutOfRange {
        /// Start of the range.
        va: u64,
        /// Its size.
        size: u64,
        /// First virtual address past the address space.
        limit: u64,
    },
    /// A physical address does not fit the entry's address field.
    AddressTooLarge {
        /// The address.
        addr: u64,
        /// The largest encodable address (exclusive).
        limit: u64,
    },
    /// A PTE kind that does not fit the format's kind field.
    KindOutOfRange {
        /// The kind given.
        kind: u8,
        /// The largest kind the format encodes.
        max: u8,
    },
    /// A peer id above 7.
    PeerIdOutOfRange {
        /// The id given.
        id: u8,
    },
    /// The address space has no page size enabled that the operation needs.
    PageSizeNotEnabled {
        /// The page size, in bytes.
        page_size: u64,
    },
    /// Part of the virtual range is already mapped.
    AlreadyMapped {
        /// A virtual address inside the range that is mapped.
        va: u64,
    },
    /// Part of the virtual range is not mapped.
    NotMapped {
        /// The first unmapped virtual address found.
        va: u64,
    },
    /// The range cuts through a larger page.
    PartialPage {
        /// Start of the page that would be cut.
        page_va: u64,
        /// Its size in bytes.
        page_size: u64,
    },
    /// An allocator cannot satisfy a request.
    OutOfMemory {
        /// Which allocator ("physical" or "virtual").
        allocator: &'static str,
        /// Bytes requested.
        requested: u64,
        /// Alignment requested.
        align: u64,
        /// Bytes still free in total (possibly fragmented).
        free: u64,
    },
    /// A range handed to an allocator lies (partly) outside the range it manages.
    OutsideAllocator {
        /// Start of the range.
        addr: u64,
        /// Its size.
        size: u64,
    },
    /// A range freed or reserved is (partly) free already.
    RangeAlreadyFree {
        /// Start of the range.
        addr: u64,
        /// Its size.
        size: u64,
    },
    /// A range to reserve is (partly) in use already.
    RangeInUse {
        /// Start of the range.
        addr: u64,
        /// Its size.
        size: u64,
    },
    /// A number of directory levels the format does not have.
    NoSuchLevels {
        /// Levels asked for.
        levels: usize,
        /// The most the operation takes.
        max: usize,
    },
    /// Page-table memory could not be accessed.
    Access(AccessError),
}

/// `Ok` if `value` is a multiple of `align`, else [`MmuError::Misaligned`] naming `what`.
pub(crate) fn check_aligned(what: &'static str, value: u64, align: u64) -> Result<(), MmuError> {
    if !value.is_multiple_of(align) {
        return Err(MmuError::Misaligned { what, value, align });
    }
    Ok(())
}

impl From<AccessError> for MmuError {
    fn from(e: AccessError) -> Self {
        MmuError::Access(e)
    }
}

impl fmt::Display for MmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use MmuError::*;
        match *self {
            Misaligned { what, value, align } => write!(
                f,
                "{what} {value:#x} is not a multiple of {align:#x}; round it to a {align:#x} boundary"
            ),
            ZeroSize { what } => write!(f, "{what} is zero; pass a non-empty range"),
            BadAlignment { align } => write!(
                f,
                "alignment {align:#x} is not a power of two; use 4 KiB, 64 KiB, 2 MiB or another power of two"
            ),
            VaOutOfRange { va, size, limit } => write!(
                f,
                "virtual range {va:#x}+{size:#x} ends past the address space limit {limit:#x}; use a lower address or a smaller size"
            ),
            AddressTooLarge { addr, limit } => write!(
                f,
                "physical address {addr:#x} does not fit the entry's address field (limit {limit:#x}); use memory below the limit"
            ),
            KindOutOfRange { kind, max } => write!(
                f,
                "PTE kind {kind:#x} does not fit this format (max {max:#x}); use a kind the format defines, e.g. 6 (generic memory)"
            ),
            PeerIdOutOfRange { id } => {
                write!(
                    f,
                    "peer id {id} is above 7; the PTE peer field holds ids 0..=7"
                )
            }
            PageSizeNotEnabled { page_size } => write!(
                f,
                "page size {page_size:#x} is not enabled for this address space; enable it or map 4 KiB-aligned memory"
            ),
            AlreadyMapped { va } => write!(
                f,
                "virtual address {va:#x} is already mapped; unmap it first or pick a free range (VaAllocator)"
            ),
            NotMapped { va } => write!(
                f,
                "virtual address {va:#x} is not mapped; unmap only ranges that map() mapped"
            ),
            PartialPage { page_va, page_size } => write!(
                f,
                "the range cuts the {page_size:#x}-byte page at {page_va:#x}; unmap whole pages (the range map() was given)"
            ),
            OutOfMemory {
                allocator,
                requested,
                align,
                free,
            } => write!(
                f,
                "{allocator} allocator cannot provide {requested:#x} bytes aligned to {align:#x} ({free:#x} bytes free, fragmented or too few); free memory or request less"
            ),
            OutsideAllocator { addr, size } => write!(
                f,
                "range {addr:#x}+{size:#x} lies outside the allocator's range; pass an address it handed out"
            ),
            RangeAlreadyFree { addr, size } => write!(
                f,
                "range {addr:#x}+{size:#x} is already free (double free?); free each allocation once, with its size"
            ),
            RangeInUse { addr, size } => write!(
                f,
                "range {addr:#x}+{size:#x} is already in use; reserve ranges before allocating from them"
            ),
            NoSuchLevels { levels, max } => write!(
                f,
                "{levels} directory levels asked for; this format has 1..={max} that hold PDEs"
            ),
            Access(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for MmuError {}
