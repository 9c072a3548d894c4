//! Physical memory: reading what the loader left (its tables, the firmware module, ACPI), and
//! splitting the RAM nobody uses into the heap and the DMA region. Everything is identity
//! mapped (virtual = physical, [`super::boot`]).

use super::pvh::{Boot, RAM};

/// Heap bytes: nvbare's own structures (the GPU layer, RPC buffers, parsed firmware
/// metadata); the firmware itself stays in the module and GPU-visible memory comes from the
/// DMA region.
pub const HEAP_BYTES: u64 = 64 << 20;
/// Nothing below 1 MiB is used (real-mode leftovers, the BIOS, option ROMs).
const LOW: u64 = 1 << 20;
/// 2 MiB: the heap and DMA region start on a large-page boundary.
const ALIGN: u64 = 2 << 20;

unsafe extern "C" {
    /// The image's bounds (`link.ld`).
    static __image_start: u8;
    static __image_end: u8;
}

/// A reference to a `T` the loader wrote at `paddr`.
///
/// # Safety
/// `paddr` holds a valid, aligned `T` in identity-mapped memory that nothing writes for the
/// rest of the program.
pub unsafe fn loader_struct<T>(paddr: u64) -> &'static T {
    // SAFETY: the caller's contract.
    unsafe { &*(paddr as *const T) }
}

/// A slice of `n` `T`s the loader (or the firmware: ACPI tables) wrote at `paddr`.
///
/// # Safety
/// As for [`loader_struct`], for all `n` elements (nothing is read when `n` is 0).
pub unsafe fn loader_slice<T>(paddr: u64, n: usize) -> &'static [T] {
    if n == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { core::slice::from_raw_parts(paddr as *const T, n) }
}

/// The program image's physical range.
pub fn image() -> (u64, u64) {
    // The symbols' addresses only; nothing is read through them.
    // CAST: identity mapped: the addresses are physical.
    let start = &raw const __image_start as u64;
    let end = &raw const __image_end as u64;
    (start, end)
}

/// Where the heap and the DMA memory go.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// The heap: start, length.
    pub heap: (u64, u64),
    /// The DMA region: start, length (bus address = physical: there is no IOMMU).
    pub dma: (u64, u64),
}

/// The largest free stretch of RAM: the heap takes its first [`HEAP_BYTES`], DMA the rest.
pub fn layout(boot: &Boot) -> Result<Layout, &'static str> {
    let (img_start, img_end) = image();
    // CAST: identity mapped: pointers are physical addresses; usize is 64 bits.
    let table = |paddr: u64, bytes: usize| (paddr, paddr + bytes as u64);
    let mut taken = [(0u64, 0u64); 8];
    taken[0] = (img_start, img_end);
    taken[1] = table(boot.at, 0x38);
    taken[2] = table(
        boot.memory_map.as_ptr() as u64,
        size_of_val(boot.memory_map),
    );
    taken[3] = table(boot.modules.as_ptr() as u64, size_of_val(boot.modules));
    for (slot, m) in taken[4..].iter_mut().zip(boot.modules) {
        *slot = (m.paddr, m.paddr + m.size);
    }
    let mut best = (0, 0);
    for r in boot.memory_map.iter().filter(|r| r.kind == RAM) {
        let (start, end) = (r.addr.max(LOW), r.addr.saturating_add(r.size));
        // A free stretch starts at the range's start or where something taken ends.
        for from in core::iter::once(start).chain(taken.iter().map(|t| t.1)) {
            let from = from.next_multiple_of(ALIGN);
            if from < start || from >= end || taken.iter().any(|t| t.0 <= from && from < t.1) {
                continue;
            }
            let to = taken
                .iter()
                .filter(|t| t.0 > from)
                .map(|t| t.0)
                .fold(end, u64::min);
            if to - from > best.1 - best.0 {
                best = (from, to);
            }
        }
    }
    let (from, to) = best;
    if to - from < HEAP_BYTES + (256 << 20) {
        return Err("less than 320 MiB of free RAM for the heap and DMA: give QEMU more (-m 1G)");
    }
    Ok(Layout {
        heap: (from, HEAP_BYTES),
        dma: (from + HEAP_BYTES, to - from - HEAP_BYTES),
    })
}
