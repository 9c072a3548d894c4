//! PhysAllocator and VaAllocator: random alloc/free sequences against a model of live ranges
//! (no overlap, inside the managed range, aligned, exact free-byte accounting, full coalescing
//! once everything is freed), plus the typed errors and the fragmentation behaviour.
//!
//! Cases: `PROPTEST_CASES` (default 256) sequences of up to 200 operations per allocator.

use std::collections::BTreeMap;

use nvbare_mmu::{MmuError, PhysAllocator, VaAllocator};
use proptest::prelude::*;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

#[derive(Clone, Debug)]
enum Op {
    Alloc { size: u64, align_shift: u32 },
    Free { pick: usize },
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (prop_oneof![1u64..5 * 4096, 4096u64..4 * MIB, Just(2 * MIB), Just(64 << 10), Just(512 * MIB)], 0u32..30)
            .prop_map(|(size, align_shift)| Op::Alloc { size, align_shift }),
        2 => any::<usize>().prop_map(|pick| Op::Free { pick }),
    ];
    prop::collection::vec(op, 1..200)
}

/// Live allocations: start -> size (4 KiB rounded).
fn assert_disjoint(live: &BTreeMap<u64, u64>, base: u64, end: u64) {
    let mut prev_end = base;
    for (&a, &s) in live {
        assert!(
            a >= prev_end,
            "allocation {a:#x} overlaps the previous one (ends {prev_end:#x})"
        );
        prev_end = a + s;
    }
    assert!(prev_end <= end, "allocation ends past the managed range");
}

fn round4k(x: u64) -> u64 {
    x.div_ceil(4096) * 4096
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256), ..ProptestConfig::default() })]

    #[test]
    fn phys_allocator_matches_model(ops in ops(), base_units in 0u64..4, size_sel in 0usize..3) {
        let base = base_units * 4096 * 3;
        let size = [GIB, 3 * GIB + 12 * MIB + 4096 * 5, 8 * MIB][size_sel];
        let mut a = PhysAllocator::new(base, size).unwrap();
        let mut live: BTreeMap<u64, u64> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Alloc { size: want, align_shift } => {
                    let align = 1u64 << align_shift;
                    let free_before = a.free_bytes();
                    match a.alloc(want, align) {
                        Ok(addr) => {
                            prop_assert_eq!(addr % align.max(4096), 0, "alignment");
                            live.insert(addr, round4k(want));
                            prop_assert_eq!(a.free_bytes(), free_before - round4k(want));
                        }
                        Err(MmuError::OutOfMemory { free, .. }) => {
                            prop_assert_eq!(free, free_before);
                            prop_assert_eq!(a.free_bytes(), free_before, "failed alloc changes nothing");
                            // Exhaustion is real: no free block could hold it.
                            prop_assert!(a.largest_free_block() < round4k(want).max(align));
                        }
                        Err(e) => prop_assert!(false, "unexpected {e}"),
                    }
                }
                Op::Free { pick } => {
                    if live.is_empty() { continue; }
                    let (&addr, &sz) = live.iter().nth(pick % live.len()).unwrap();
                    a.free(addr, sz).unwrap();
                    live.remove(&addr);
                    // A second free is caught.
                    prop_assert!(matches!(a.free(addr, sz), Err(MmuError::RangeAlreadyFree { .. })), "double free not caught");
                }
            }
            assert_disjoint(&live, base, base + size);
            prop_assert_eq!(a.free_bytes(), size - live.values().sum::<u64>());
        }
        for (addr, sz) in std::mem::take(&mut live) {
            a.free(addr, sz).unwrap();
        }
        prop_assert_eq!(a.free_bytes(), size);
        // Everything merged back: the largest block is what the fresh allocator had.
        prop_assert_eq!(a.largest_free_block(), PhysAllocator::new(base, size).unwrap().largest_free_block());
    }

    #[test]
    fn va_allocator_matches_model(ops in ops(), base_units in 1u64..4) {
        let base = base_units << 32;
        let size = 16 * GIB;
        let mut a = VaAllocator::new(base, size).unwrap();
        let mut live: BTreeMap<u64, u64> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Alloc { size: want, align_shift } => {
                    let align = 1u64 << align_shift;
                    match a.alloc(want, align) {
                        Ok(va) => {
                            prop_assert_eq!(va % align.max(4096), 0);
                            live.insert(va, round4k(want));
                        }
                        Err(MmuError::OutOfMemory { .. }) => {}
                        Err(e) => prop_assert!(false, "unexpected {e}"),
                    }
                }
                Op::Free { pick } => {
                    if live.is_empty() { continue; }
                    let (&va, &sz) = live.iter().nth(pick % live.len()).unwrap();
                    a.free(va, sz).unwrap();
                    live.remove(&va);
                    prop_assert!(matches!(a.free(va, sz), Err(MmuError::RangeAlreadyFree { .. })), "double free not caught");
                }
            }
            assert_disjoint(&live, base, base + size);
            prop_assert_eq!(a.free_bytes(), size - live.values().sum::<u64>());
        }
        for (va, sz) in std::mem::take(&mut live) {
            a.free(va, sz).unwrap();
        }
        // Fully merged: the whole range is one free run again.
        prop_assert_eq!(a.alloc(size, 4096), Ok(base));
    }
}

#[test]
fn phys_allocator_hands_out_aligned_large_runs_after_fragmentation() {
    let mut a = PhysAllocator::new(0, 2 * GIB).unwrap();
    // Interleave 4 KiB page-table pages with 2 MiB user allocations, then free the small ones.
    let mut small = Vec::new();
    let mut big = Vec::new();
    for _ in 0..200 {
        small.push(a.alloc(4096, 4096).unwrap());
        big.push(a.alloc(2 * MIB, 2 * MIB).unwrap());
    }
    assert!(big.iter().all(|b| b % (2 * MIB) == 0));
    for s in small {
        a.free(s, 4096).unwrap();
    }
    // 4 KiB pages packed into one 2 MiB block: the rest of the space is still whole.
    let run = a.alloc(512 * MIB, 512 * MIB).unwrap();
    assert_eq!(run % (512 * MIB), 0);
    let run2 = a.alloc(512 * MIB, 512 * MIB).unwrap();
    assert_ne!(run, run2);
}

#[test]
fn phys_allocator_typed_errors() {
    assert_eq!(
        PhysAllocator::new(100, 4096).unwrap_err(),
        MmuError::Misaligned {
            what: "allocator base",
            value: 100,
            align: 4096
        }
    );
    assert_eq!(
        PhysAllocator::new(0, 0).unwrap_err(),
        MmuError::ZeroSize {
            what: "allocator size"
        }
    );
    let mut a = PhysAllocator::new(0, 8 * MIB).unwrap();
    assert_eq!(
        a.alloc(0, 4096),
        Err(MmuError::ZeroSize {
            what: "allocation size"
        })
    );
    assert_eq!(a.alloc(4096, 3), Err(MmuError::BadAlignment { align: 3 }));
    assert!(
        matches!(a.alloc(16 * MIB, 4096), Err(MmuError::OutOfMemory { requested, free, .. }) if requested == 16 * MIB && free == 8 * MIB)
    );
    assert!(matches!(
        a.alloc(u64::MAX, 4096),
        Err(MmuError::OutOfMemory { .. })
    ));
    assert_eq!(
        a.free(9 * MIB, 4096),
        Err(MmuError::OutsideAllocator {
            addr: 9 * MIB,
            size: 4096
        })
    );
    assert_eq!(
        a.free(0, 4096),
        Err(MmuError::RangeAlreadyFree {
            addr: 0,
            size: 4096
        })
    );
    // Reserving a fixed region, then allocating around it.
    a.reserve(MIB, 12 * 4096).unwrap();
    assert_eq!(
        a.reserve(MIB + 4096, 4096),
        Err(MmuError::RangeInUse {
            addr: MIB + 4096,
            size: 4096
        })
    );
    assert_eq!(a.free_bytes(), 8 * MIB - 12 * 4096);
    let x = a.alloc(2 * MIB, 2 * MIB).unwrap();
    assert!(x >= 2 * MIB);
    a.free(MIB, 12 * 4096).unwrap();
    a.free(x, 2 * MIB).unwrap();
    assert_eq!(a.largest_free_block(), 8 * MIB);
    // Errors print the problem and the remedy.
    let msg = a.alloc(64 * MIB, 4096).unwrap_err().to_string();
    assert!(
        msg.contains("cannot provide") && msg.contains("free memory or request less"),
        "{msg}"
    );
}

#[test]
fn va_allocator_typed_errors_and_reserve() {
    let mut a = VaAllocator::new(1 << 32, 64 * MIB).unwrap();
    a.reserve((1 << 32) + 4 * MIB, 2 * MIB).unwrap();
    assert_eq!(
        a.reserve((1 << 32) + 5 * MIB, 4096),
        Err(MmuError::RangeInUse {
            addr: (1 << 32) + 5 * MIB,
            size: 4096
        })
    );
    let v = a.alloc(2 * MIB, 2 * MIB).unwrap();
    assert_eq!(v % (2 * MIB), 0);
    assert_ne!(v, (1 << 32) + 4 * MIB);
    assert!(matches!(
        a.alloc(128 * MIB, 4096),
        Err(MmuError::OutOfMemory {
            allocator: "virtual",
            ..
        })
    ));
    assert_eq!(
        a.free(0, 4096),
        Err(MmuError::OutsideAllocator {
            addr: 0,
            size: 4096
        })
    );
    assert_eq!(a.alloc(4096, 6), Err(MmuError::BadAlignment { align: 6 }));
}
