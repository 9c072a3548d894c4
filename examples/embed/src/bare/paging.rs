//! The page tables after boot: the stub identity maps the first 512 GiB with 1 GiB pages,
//! all write-back. Here every 1 GiB page that holds no RAM becomes uncached (PCD|PWT: the PCI
//! holes, ECAM, the BARs), and a BAR above 512 GiB (SeaBIOS may put the 64-bit window at the
//! top of the physical address space) gets its pages mapped, uncached, from a spare table.
//! MMIO that shares a 1 GiB page with RAM (the legacy areas below 1 MiB, a 32-bit BAR next to
//! RAM) keeps its uncached type from the firmware's MTRRs.

use core::cell::UnsafeCell;

use super::pvh::{MemoryRange, RAM};

/// Page-table entry bits (Intel SDM vol. 3, 4.5): present, writable, page-level
/// write-through, cache disable, page size (a 1 GiB page in a PDPT).
const PRESENT: u64 = 1 << 0;
const WRITABLE: u64 = 1 << 1;
const PWT: u64 = 1 << 3;
const PCD: u64 = 1 << 4;
const HUGE: u64 = 1 << 7;
const GIB: u64 = 1 << 30;
/// Bytes one PDPT maps.
const PDPT_SPAN: u64 = 512 * GIB;

#[repr(C, align(4096))]
struct Table(UnsafeCell<[u64; 512]>);

// SAFETY: one CPU; the tables are written only by `Paging`, which `kmain` owns.
unsafe impl Sync for Table {}

/// PDPTs for BARs beyond the first 512 GiB.
static SPARE: [Table; 2] = [
    Table(UnsafeCell::new([0; 512])),
    Table(UnsafeCell::new([0; 512])),
];

unsafe extern "C" {
    /// The stub's tables (`boot.rs`).
    static mut pvh_pml4: [u64; 512];
    static mut pvh_pdpt: [u64; 512];
}

/// The live page tables.
pub struct Paging {
    spares_used: usize,
}

impl Paging {
    /// Takes over the stub's tables and makes every 1 GiB page without RAM uncached.
    ///
    /// # Safety
    /// Called once, with the stub's tables live in CR3 and `map` the machine's memory map.
    pub unsafe fn take_over(map: &[MemoryRange]) -> Self {
        let pdpt = &raw mut pvh_pdpt;
        for g in 0..512u64 {
            let (start, end) = (g * GIB, (g + 1) * GIB);
            let ram = map
                .iter()
                .any(|r| r.kind == RAM && r.addr < end && r.addr + r.size > start);
            if !ram {
                // SAFETY: `pdpt` is the stub's live PDPT; entry `g` maps [start, end).
                // CAST: g < 512.
                unsafe { (*pdpt)[g as usize] = start | PRESENT | WRITABLE | HUGE | PCD | PWT };
            }
        }
        flush();
        Self { spares_used: 0 }
    }

    /// Maps [start, start + len) identity, uncached, where the stub's map did not reach.
    pub fn map_mmio(&mut self, start: u64, len: u64) -> Result<(), &'static str> {
        let pml4 = &raw mut pvh_pml4;
        for g in start / GIB..(start + len).div_ceil(GIB) {
            // CAST: the PML4 index of a 52-bit address is below 2^13 (checked below 512).
            let i = (g * GIB / PDPT_SPAN) as usize;
            if i == 0 {
                continue; // The stub mapped it; `take_over` set its type.
            }
            if i >= 512 {
                return Err("a BAR beyond 256 TiB (4-level paging's reach)");
            }
            // SAFETY: `pml4` is the live PML4; entry `i` is ours to fill (the stub set only 0).
            let entry = unsafe { (*pml4)[i] };
            let table = if entry & PRESENT != 0 {
                // CAST: identity mapped: the entry holds the table's physical address.
                (entry & !0xfff) as *mut [u64; 512]
            } else {
                let spare = SPARE
                    .get(self.spares_used)
                    .ok_or("the BARs span more 512 GiB regions than there are spare tables")?;
                self.spares_used += 1;
                let t = spare.0.get();
                // SAFETY: as above; a spare table is zeroed .bss, identity mapped.
                // CAST: identity mapped: the pointer is the physical address.
                unsafe { (*pml4)[i] = t as u64 | PRESENT | WRITABLE };
                t
            };
            // CAST: below 512.
            // SAFETY: `table` is one of the spare PDPTs linked above (only they are linked
            // beyond entry 0); its entry maps the 1 GiB page `g`.
            unsafe {
                (*table)[(g % 512) as usize] = (g * GIB) | PRESENT | WRITABLE | HUGE | PCD | PWT
            };
        }
        flush();
        Ok(())
    }
}

/// Reloads CR3: the TLB forgets the old entries.
fn flush() {
    // SAFETY: writing CR3 back with its own value only flushes the TLB; the tables it names
    // still map this code, its stack and data identically.
    unsafe {
        core::arch::asm!("mov {t}, cr3", "mov cr3, {t}", t = out(reg) _, options(nostack));
    }
}
