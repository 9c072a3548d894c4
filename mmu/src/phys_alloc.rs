//! [`PhysAllocator`]: a buddy allocator for VRAM (page tables and user memory).
//!
//! Blocks are powers of two from 4 KiB up, naturally aligned, so a 2 MiB or 512 MiB run comes
//! out aligned to its size. Free buddies merge at once, and the unused tail of a rounded-up
//! block goes straight back, so odd sizes do not waste the rest of their power of two.
//! Allocation takes the lowest-addressed block of the smallest order that fits, which keeps
//! large blocks whole for as long as possible.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use crate::error::{MmuError, check_aligned};

/// Smallest block: 4 KiB.
pub const MIN_BLOCK_SHIFT: u32 = 12;
const MIN_BLOCK: u64 = 1 << MIN_BLOCK_SHIFT;
const ORDERS: usize = 64 - MIN_BLOCK_SHIFT as usize;

/// A buddy allocator over one range of physical addresses.
#[derive(Clone, Debug)]
pub struct PhysAllocator {
    base: u64,
    end: u64,
    /// Free block start addresses, by order (block size = 4 KiB << order).
    free: Vec<BTreeSet<u64>>,
    free_bytes: u64,
}

fn order_of(size: u64) -> usize {
    (size.next_power_of_two().trailing_zeros() - MIN_BLOCK_SHIFT) as usize
}

fn block_size(order: usize) -> u64 {
    MIN_BLOCK << order
}

impl PhysAllocator {
    /// An allocator handing out `[base, base + size)`; both must be 4 KiB aligned.
    pub fn new(base: u64, size: u64) -> Result<Self, MmuError> {
        check_aligned("allocator base", base, MIN_BLOCK)?;
        check_aligned("allocator size", size, MIN_BLOCK)?;
        if size == 0 {
            return Err(MmuError::ZeroSize {
                what: "allocator size",
            });
        }
        let end = base
            .checked_add(size)
            .ok_or(MmuError::OutsideAllocator { addr: base, size })?;
        let mut a = PhysAllocator {
            base,
            end,
            free: (0..ORDERS).map(|_| BTreeSet::new()).collect(),
            free_bytes: 0,
        };
        a.release(base, size);
        Ok(a)
    }

    /// Bytes currently free.
    pub fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    /// Size of the largest free block (the largest naturally aligned run available).
    pub fn largest_free_block(&self) -> u64 {
        (0..ORDERS)
            .rev()
            .find(|&o| !self.free[o].is_empty())
            .map_or(0, block_size)
    }

    /// Allocates `size` bytes (rounded up to 4 KiB) aligned to `align` (a power of two; below
    /// 4 KiB counts as 4 KiB). Returns the start address.
    pub fn alloc(&mut self, size: u64, align: u64) -> Result<u64, MmuError> {
        if size == 0 {
            return Err(MmuError::ZeroSize {
                what: "allocation size",
            });
        }
        if !align.is_power_of_two() {
            return Err(MmuError::BadAlignment { align });
        }
        let oom = MmuError::OutOfMemory {
            allocator: "physical",
            requested: size,
            align,
            free: self.free_bytes,
        };
        let rounded = size.checked_next_multiple_of(MIN_BLOCK).ok_or(oom)?;
        let need = rounded.max(align);
        if need > 1 << 63 {
            return Err(oom);
        }
        let order = order_of(need);
        let found = (order..ORDERS)
            .find(|&o| !self.free[o].is_empty())
            .ok_or(oom)?;
        let start = self.free[found].pop_first().ok_or(oom)?;
        self.free_bytes -= block_size(found);
        // Split down: the upper halves go back as free blocks of each lower order.
        for o in (order..found).rev() {
            self.free[o].insert(start + block_size(o));
            self.free_bytes += block_size(o);
        }
        // Give back the tail of the block beyond the rounded request.
        let tail = block_size(order) - rounded;
        if tail > 0 {
            self.release(start + rounded, tail);
        }
        Ok(start)
    }

    /// Frees `size` bytes (rounded up to 4 KiB) at `addr`. Any sub-range of an allocation may
    /// be freed on its own.
    pub fn free(&mut self, addr: u64, size: u64) -> Result<(), MmuError> {
        let size = self.check_range(addr, size)?;
        if self.free_overlap(addr, size) > 0 {
            return Err(MmuError::RangeAlreadyFree { addr, size });
        }
        self.release(addr, size);
        Ok(())
    }

    /// Takes the fixed range `[addr, addr + size)` out of the free pool (firmware regions,
    /// reserved VRAM). All of it must be free.
    pub fn reserve(&mut self, addr: u64, size: u64) -> Result<(), MmuError> {
        let size = self.check_range(addr, size)?;
        let end = addr + size;
        if self.free_overlap(addr, size) != size {
            return Err(MmuError::RangeInUse { addr, size });
        }
        for o in 0..ORDERS {
            let bs = block_size(o);
            let lo = addr.saturating_sub(bs - 1);
            let hits: Vec<u64> = self.free[o].range(lo..end).copied().collect();
            for b in hits {
                self.free[o].remove(&b);
                self.free_bytes -= bs;
                if b < addr {
                    self.release(b, addr - b);
                }
                if b + bs > end {
                    self.release(end, b + bs - end);
                }
            }
        }
        Ok(())
    }

    fn check_range(&self, addr: u64, size: u64) -> Result<u64, MmuError> {
        if size == 0 {
            return Err(MmuError::ZeroSize { what: "range size" });
        }
        check_aligned("physical address", addr, MIN_BLOCK)?;
        let outside = MmuError::OutsideAllocator { addr, size };
        let size = size.checked_next_multiple_of(MIN_BLOCK).ok_or(outside)?;
        let end = addr.checked_add(size).ok_or(outside)?;
        if addr < self.base || end > self.end {
            return Err(outside);
        }
        Ok(size)
    }

    /// Bytes of `[addr, addr + size)` that are free.
    fn free_overlap(&self, addr: u64, size: u64) -> u64 {
        let end = addr + size;
        let mut total = 0;
        for o in 0..ORDERS {
            let bs = block_size(o);
            for &b in self.free[o].range(addr.saturating_sub(bs - 1)..end) {
                total += (b + bs).min(end) - b.max(addr);
            }
        }
        total
    }

    /// Puts `[addr, addr + size)` (4 KiB aligned, not free) back as maximal aligned blocks,
    /// merging each with free buddies.
    fn release(&mut self, mut addr: u64, size: u64) {
        let end = addr + size;
        while addr < end {
            let align_order = (addr.trailing_zeros().min(63) - MIN_BLOCK_SHIFT) as usize;
            let fit_order = ((end - addr).ilog2() - MIN_BLOCK_SHIFT) as usize;
            let order = align_order.min(fit_order).min(ORDERS - 1);
            self.insert_merging(addr, order);
            addr += block_size(order);
        }
    }

    fn insert_merging(&mut self, mut addr: u64, mut order: usize) {
        self.free_bytes += block_size(order);
        while order + 1 < ORDERS {
            let buddy = addr ^ block_size(order);
            if !self.free[order].remove(&buddy) {
                break;
            }
            addr = addr.min(buddy);
            order += 1;
        }
        self.free[order].insert(addr);
    }
}
