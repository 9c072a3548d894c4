//! The walker on arbitrary table memory: it must return (a translation, "not mapped" or an
//! error), never panic and never loop. Memory is random words, half of them rewritten so their
//! address fields point back into the memory, which sends walks deep and into cycles.
//! The coverage-guided version of this is `mmu/fuzz` (cargo fuzz run walk).
//!
//! Cases: `PROPTEST_CASES` (default 1024) memories, each walked at 16 addresses.

use nvbare_mmu::walk::{WalkError, walk};
use nvbare_mmu::{Format, TableAddr, TableAperture, TableMemory, VecMemory};
use proptest::prelude::*;

const WORDS: usize = 4096; // 32 KiB of table memory at 0

fn memory_from(words: Vec<u64>, pointers: Vec<(usize, u64, u8)>, fmt: &Format) -> VecMemory {
    let mut words = words;
    for (i, target, which) in pointers {
        let i = i % WORDS;
        let target = target % (WORDS as u64 * 8);
        // Place `target` in one of the address fields, the way a PDE, a dual PDE's small half
        // or its big half would hold it.
        let (word, lo, shift) = match which % 3 {
            0 => (i, fmt.pde.address_sys.lo, 12),
            1 => (i, fmt.dual_pde.address_big_sys.lo, 8),
            _ => (i | 1, fmt.dual_pde.address_small_sys.lo - 64, 12),
        };
        let word = word % WORDS;
        let field_mask = ((1u64 << 28) - 1) << lo;
        words[word] = (words[word] & !field_mask) | ((target >> shift) << lo);
    }
    VecMemory::from_words(TableAperture::Video, 0, words)
}

fn check(fmt: &Format, mem: &VecMemory, root: u64, va: u64) {
    match walk(fmt, mem, TableAddr::video(root), va) {
        Ok(Some(t)) => {
            let offset_mask = t.page_size.bytes() - 1;
            assert_eq!(t.pa & offset_mask, va & offset_mask, "page offset survives");
            assert_eq!(
                mem.read_u64(t.pte_at).unwrap(),
                t.pte,
                "pte read back where reported"
            );
            assert_eq!(t.pte & 1, 1, "a translation comes from a valid PTE");
        }
        Ok(None) => {}
        Err(WalkError::VaOutOfRange { .. }) => assert!(va >= fmt.va_limit()),
        Err(WalkError::Access(_)) | Err(WalkError::PteAtDirectory { .. }) => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(1024), ..ProptestConfig::default() })]

    #[test]
    fn walker_terminates_on_random_memory(
        ver3 in any::<bool>(),
        words in prop::collection::vec(any::<u64>(), WORDS),
        pointers in prop::collection::vec((any::<usize>(), any::<u64>(), any::<u8>()), 0..2048),
        root in 0u64..(WORDS as u64 * 8 + 64),
        vas in prop::collection::vec(any::<u64>(), 16),
    ) {
        let fmt = if ver3 { &Format::VER3 } else { &Format::VER2 };
        let mem = memory_from(words, pointers, fmt);
        for va in vas {
            check(fmt, &mem, root & !7, va);
            check(fmt, &mem, root & !7, va & (fmt.va_limit() - 1));
        }
    }
}

#[test]
fn self_referencing_tables_terminate() {
    // Every entry of every level points at the table itself: the walk must still end.
    for fmt in [&Format::VER2, &Format::VER3] {
        // PDE: aperture video (1) in bits 2:1, address 0 -> the table at 0 again. Odd words
        // are also the upper halves of dual PDEs: small aperture video, address 0.
        let words = vec![1u64 << 1; 512];
        let mem = VecMemory::from_words(TableAperture::Video, 0, words);
        for va in [
            0u64,
            0x1234_5678_9000 & (fmt.va_limit() - 1),
            fmt.va_limit() - 1,
        ] {
            let r = walk(fmt, &mem, TableAddr::video(0), va);
            // Nothing valid anywhere: every PTE read is word 0 or 1 (bit 0 clear) -> unmapped.
            assert_eq!(r, Ok(None), "{:?} va {va:#x}", fmt.version);
        }
    }
}

#[test]
fn walker_reports_out_of_window_tables() {
    let mut words = vec![0u64; 512];
    // Root entry 0: a PDE to a table far outside the memory.
    words[0] = (1 << 1) | 0xdead_0000;
    let mem = VecMemory::from_words(TableAperture::Video, 0, words);
    let r = walk(&Format::VER3, &mem, TableAddr::video(0), 0);
    assert!(matches!(r, Err(WalkError::Access(_))), "{r:?}");
}
