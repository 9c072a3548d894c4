//! The global allocator: a bump allocator over a region of RAM given at boot
//! ([`BumpHeap::init`]) that takes back the most recent allocation when it is freed (enough
//! for nvbare, which allocates at open and frees at close in about that order, and allocates
//! nothing per launch). It counts its high-water mark, which the program reports.

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicUsize, Ordering};

/// A bump allocator (one CPU; the atomics keep it sound should interrupts allocate).
pub struct BumpHeap {
    base: AtomicUsize,
    len: AtomicUsize,
    next: AtomicUsize,
    peak: AtomicUsize,
}

impl BumpHeap {
    /// An empty heap: every allocation fails until [`BumpHeap::init`].
    pub const fn new() -> Self {
        Self {
            base: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// Gives the heap `len` bytes at `base`.
    ///
    /// # Safety
    /// The range is mapped RAM that nothing else uses for the rest of the program; called
    /// once, before the first allocation.
    pub unsafe fn init(&self, base: u64, len: u64) {
        // CAST: physical addresses and lengths fit usize on x86_64.
        self.base.store(base as usize, Ordering::Release);
        self.len.store(len as usize, Ordering::Release);
    }

    /// The most bytes ever in use.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }
}

// SAFETY: every range handed out lies inside the region given to `init`, aligned as asked,
// and is handed out at most once until freed (a freed range is reused only when it was the
// last one).
unsafe impl GlobalAlloc for BumpHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = self.base.load(Ordering::Acquire);
        let len = self.len.load(Ordering::Acquire);
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            let start = (base + cur).next_multiple_of(layout.align()) - base;
            let Some(end) = start.checked_add(layout.size()) else {
                return core::ptr::null_mut();
            };
            if end > len {
                return core::ptr::null_mut();
            }
            match self
                .next
                .compare_exchange(cur, end, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.peak.fetch_max(end, Ordering::Relaxed);
                    // CAST: identity mapped: the address is the pointer.
                    return (base + start) as *mut u8;
                }
                Err(now) => cur = now,
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // CAST: the pointer is an address inside the heap.
        let start = ptr as usize - self.base.load(Ordering::Acquire);
        // Only the last allocation goes back; the rest stays until the program ends.
        let _ = self.next.compare_exchange(
            start + layout.size(),
            start,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // CAST: as in `dealloc`.
        let start = ptr as usize - self.base.load(Ordering::Acquire);
        let len = self.len.load(Ordering::Acquire);
        // The last allocation grows or shrinks where it is (a growing Vec copies nothing).
        if let Some(end) = start.checked_add(new_size).filter(|&end| end <= len)
            && self
                .next
                .compare_exchange(
                    start + layout.size(),
                    end,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            self.peak.fetch_max(end, Ordering::Relaxed);
            return ptr;
        }
        // SAFETY: the caller's contract for `realloc` covers `alloc`/`dealloc` with these
        // layouts (`new_size` is valid for `layout.align()`).
        unsafe {
            let new = Layout::from_size_align_unchecked(new_size, layout.align());
            let p = self.alloc(new);
            if !p.is_null() {
                core::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            p
        }
    }
}
