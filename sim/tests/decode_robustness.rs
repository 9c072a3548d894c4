//! The decoder on arbitrary input (it reads whatever a driver put in memory): typed errors or
//! values, never a panic; and GPFIFO entries round-trip between core's encoder and the decoder.

use nvbare_core::gpfifo::{GpEntry, SegmentLevel};
use nvbare_sim::decode::qmd::decode_qmd;
use nvbare_sim::decode::{Decoder, gp_entry, method_writes};
use proptest::prelude::*;

proptest! {
    #[test]
    fn arbitrary_pushbuffers_never_panic(words in proptest::collection::vec(any::<u32>(), 0..200), class in any::<u32>()) {
        let _ = method_writes(&words);
        let mut d = Decoder::new();
        d.bind(1, class);
        d.bind(4, 0xc8b5);
        let _ = d.decode(&words);
    }

    #[test]
    fn arbitrary_qmds_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), major in 0u32..8) {
        let _ = decode_qmd(&bytes, major);
    }

    #[test]
    fn gp_entries_round_trip(va in (0u64..1 << 40).prop_map(|v| v & !3), words in 1u32..(1 << 21), sub in any::<bool>(), sync in any::<bool>()) {
        let e = GpEntry { va, words, level: if sub { SegmentLevel::Subroutine } else { SegmentLevel::Main }, sync_wait: sync };
        let s = gp_entry(e.encode().unwrap()).unwrap();
        prop_assert_eq!((s.va, s.words, s.subroutine, s.sync_wait), (va, words, sub, sync));
    }
}
