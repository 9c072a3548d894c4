//! The global allocator: a bump allocator over a static heap that takes back the most
//! recent allocation when it is freed (enough for nvbare, which allocates at open and frees
//! at close in about that order, and allocates nothing per launch).

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

/// Heap bytes.
const HEAP_BYTES: usize = 128 << 20;

#[repr(C, align(4096))]
struct Arena(UnsafeCell<[u8; HEAP_BYTES]>);

// SAFETY: the arena is only reached through `BumpHeap`, which hands out disjoint ranges.
unsafe impl Sync for Arena {}

static ARENA: Arena = Arena(UnsafeCell::new([0; HEAP_BYTES]));

/// A bump allocator (one CPU; the atomics keep it sound should interrupts allocate).
pub struct BumpHeap {
    next: AtomicUsize,
}

impl BumpHeap {
    /// An empty heap.
    pub const fn new() -> Self {
        Self {
            next: AtomicUsize::new(0),
        }
    }
}

// SAFETY: every range handed out lies inside the arena, aligned as asked, and is handed out
// at most once until freed (a freed range is reused only when it was the last one).
unsafe impl GlobalAlloc for BumpHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = ARENA.0.get() as usize;
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            let start = (base + cur).next_multiple_of(layout.align()) - base;
            let Some(end) = start.checked_add(layout.size()) else {
                return core::ptr::null_mut();
            };
            if end > HEAP_BYTES {
                return core::ptr::null_mut();
            }
            match self
                .next
                .compare_exchange(cur, end, Ordering::AcqRel, Ordering::Relaxed)
            {
                // CAST: `start` is inside the arena.
                Ok(_) => return (base + start) as *mut u8,
                Err(now) => cur = now,
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let base = ARENA.0.get() as usize;
        let start = ptr as usize - base;
        // Only the last allocation goes back; the rest stays until the program ends.
        let _ = self.next.compare_exchange(
            start + layout.size(),
            start,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }
}
