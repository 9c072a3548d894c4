//! [`VaAllocator`]: hands out GPU virtual address ranges with a requested alignment.
//!
//! Free space is a set of disjoint ranges keyed by start address. Allocation takes the
//! lowest range that holds the request once aligned; freeing merges with both neighbours.

use alloc::collections::BTreeMap;

use crate::error::{MmuError, check_aligned};

/// Granule of virtual allocations: 4 KiB.
pub const VA_GRANULE: u64 = 1 << 12;

/// A virtual address range allocator.
#[derive(Clone, Debug)]
pub struct VaAllocator {
    base: u64,
    end: u64,
    /// Free ranges: start -> end (exclusive).
    free: BTreeMap<u64, u64>,
    free_bytes: u64,
}

impl VaAllocator {
    /// An allocator over `[base, base + size)`; both 4 KiB aligned. Keep address 0 out of the
    /// range if a null GPU pointer must fault.
    pub fn new(base: u64, size: u64) -> Result<Self, MmuError> {
        check_aligned("VA allocator base", base, VA_GRANULE)?;
        check_aligned("VA allocator size", size, VA_GRANULE)?;
        if size == 0 {
            return Err(MmuError::ZeroSize {
                what: "VA allocator size",
            });
        }
        let end = base
            .checked_add(size)
            .ok_or(MmuError::OutsideAllocator { addr: base, size })?;
        let mut free = BTreeMap::new();
        free.insert(base, end);
        Ok(VaAllocator {
            base,
            end,
            free,
            free_bytes: size,
        })
    }

    /// Bytes currently free.
    pub fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    /// Allocates `size` bytes (rounded up to 4 KiB) starting at a multiple of `align` (a power
    /// of two; at least 4 KiB is used).
    pub fn alloc(&mut self, size: u64, align: u64) -> Result<u64, MmuError> {
        if size == 0 {
            return Err(MmuError::ZeroSize {
                what: "VA allocation size",
            });
        }
        if !align.is_power_of_two() {
            return Err(MmuError::BadAlignment { align });
        }
        let oom = MmuError::OutOfMemory {
            allocator: "virtual",
            requested: size,
            align,
            free: self.free_bytes,
        };
        let size = size.checked_next_multiple_of(VA_GRANULE).ok_or(oom)?;
        let align = align.max(VA_GRANULE);
        let (start, end, at) = self
            .free
            .iter()
            .find_map(|(&start, &end)| {
                let at = start.checked_next_multiple_of(align)?;
                (at.checked_add(size)? <= end).then_some((start, end, at))
            })
            .ok_or(oom)?;
        self.take(start, end, at, size);
        Ok(at)
    }

    /// Takes the fixed range `[va, va + size)` out of the free space; all of it must be free.
    pub fn reserve(&mut self, va: u64, size: u64) -> Result<(), MmuError> {
        let size = self.check_range(va, size)?;
        let (start, end) = self
            .free
            .range(..=va)
            .next_back()
            .map(|(&s, &e)| (s, e))
            .filter(|&(_, e)| e >= va + size)
            .ok_or(MmuError::RangeInUse { addr: va, size })?;
        self.take(start, end, va, size);
        Ok(())
    }

    /// Frees `[va, va + size)`; none of it may be free already.
    pub fn free(&mut self, va: u64, size: u64) -> Result<(), MmuError> {
        let size = self.check_range(va, size)?;
        let end = va + size;
        let overlaps_prev = self
            .free
            .range(..end)
            .next_back()
            .is_some_and(|(_, &e)| e > va);
        if overlaps_prev {
            return Err(MmuError::RangeAlreadyFree { addr: va, size });
        }
        let mut start = va;
        let mut stop = end;
        if let Some((&s, &e)) = self.free.range(..va).next_back()
            && e == va
        {
            self.free.remove(&s);
            start = s;
        }
        if let Some(e) = self.free.remove(&end) {
            stop = e;
        }
        self.free.insert(start, stop);
        self.free_bytes += size;
        Ok(())
    }

    fn check_range(&self, va: u64, size: u64) -> Result<u64, MmuError> {
        if size == 0 {
            return Err(MmuError::ZeroSize {
                what: "VA range size",
            });
        }
        check_aligned("virtual address", va, VA_GRANULE)?;
        let outside = MmuError::OutsideAllocator { addr: va, size };
        let size = size.checked_next_multiple_of(VA_GRANULE).ok_or(outside)?;
        let end = va.checked_add(size).ok_or(outside)?;
        if va < self.base || end > self.end {
            return Err(outside);
        }
        Ok(size)
    }

    /// Removes `[at, at + size)` from the free range `[start, end)`.
    fn take(&mut self, start: u64, end: u64, at: u64, size: u64) {
        self.free.remove(&start);
        if at > start {
            self.free.insert(start, at);
        }
        if at + size < end {
            self.free.insert(at + size, end);
        }
        self.free_bytes -= size;
    }
}
