//! The two services an [`AddressSpace`](crate::AddressSpace) needs besides table memory:
//! somewhere to get page-table pages from, and a way to invalidate the GPU's TLBs.

use crate::error::MmuError;
use crate::memory::TableAddr;
use crate::phys_alloc::PhysAllocator;

/// Hands out and takes back memory for page tables (4 KiB aligned).
pub trait TableAllocator {
    /// `bytes` bytes, 4 KiB aligned; the address in the address space's table aperture.
    fn alloc_table(&mut self, bytes: u64) -> Result<u64, MmuError>;
    /// Gives back a table from [`TableAllocator::alloc_table`].
    fn free_table(&mut self, addr: u64, bytes: u64) -> Result<(), MmuError>;
}

impl TableAllocator for PhysAllocator {
    fn alloc_table(&mut self, bytes: u64) -> Result<u64, MmuError> {
        self.alloc(bytes, 1 << 12)
    }
    fn free_table(&mut self, addr: u64, bytes: u64) -> Result<(), MmuError> {
        self.free(addr, bytes)
    }
}

impl<T: TableAllocator + ?Sized> TableAllocator for &mut T {
    fn alloc_table(&mut self, bytes: u64) -> Result<u64, MmuError> {
        (**self).alloc_table(bytes)
    }
    fn free_table(&mut self, addr: u64, bytes: u64) -> Result<(), MmuError> {
        (**self).free_table(addr, bytes)
    }
}

/// Invalidates GPU TLB entries after page tables change. An address space calls it once per
/// `map` or `unmap` that wrote table memory, with the whole range, never once per page.
pub trait TlbInvalidate {
    /// Entries for `[va, va + size)` under the page directory at `root` may be stale.
    fn invalidate(&mut self, root: TableAddr, va: u64, size: u64);
}

/// A TLB hook that does nothing (tables nobody's MMU reads yet, or tests).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTlb;

impl TlbInvalidate for NoTlb {
    fn invalidate(&mut self, _root: TableAddr, _va: u64, _size: u64) {}
}

/// A TLB hook that counts its calls (tests, benchmarks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountingTlb {
    /// Number of invalidations requested.
    pub calls: u64,
}

impl TlbInvalidate for CountingTlb {
    fn invalidate(&mut self, _root: TableAddr, _va: u64, _size: u64) {
        self.calls += 1;
    }
}

impl<T: TlbInvalidate + ?Sized> TlbInvalidate for &mut T {
    fn invalidate(&mut self, root: TableAddr, va: u64, size: u64) {
        (**self).invalidate(root, va, size)
    }
}
