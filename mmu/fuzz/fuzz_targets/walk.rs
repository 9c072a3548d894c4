//! Fuzz the page-table walker on arbitrary table memory: it must never panic or loop.
//!
//! Input: byte 0 picks the format, bytes 1..9 the virtual address, bytes 9..11 the root
//! (8-byte units), the rest is table memory (little-endian words at address 0).
//! Run: cd mmu/fuzz && cargo +nightly fuzz run walk -- -max_total_time=60
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvbare_mmu::walk::walk;
use nvbare_mmu::{Format, TableAddr, TableAperture, TableMemory, VecMemory};

fuzz_target!(|data: &[u8]| {
    if data.len() < 11 {
        return;
    }
    let fmt = if data[0] & 1 == 0 {
        &Format::VER2
    } else {
        &Format::VER3
    };
    let va = u64::from_le_bytes(data[1..9].try_into().unwrap());
    let root = u64::from(u16::from_le_bytes([data[9], data[10]])) * 8;
    let words: Vec<u64> = data[11..]
        .chunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect();
    let mem = VecMemory::from_words(TableAperture::Video, 0, words);
    for va in [va, va & (fmt.va_limit() - 1)] {
        if let Ok(Some(t)) = walk(fmt, &mem, TableAddr::video(root), va) {
            let mask = t.page_size.bytes() - 1;
            assert_eq!(t.pa & mask, va & mask);
            assert_eq!(mem.read_u64(t.pte_at).ok(), Some(t.pte));
        }
    }
});
