//! Any 8-byte GPFIFO entry: what decodes as a segment re-encodes to the same entry.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvbare_core::gpfifo::GpEntry;

fuzz_target!(|data: &[u8]| {
    for c in data.chunks_exact(8) {
        let raw = u64::from_le_bytes(c.try_into().unwrap());
        if let Some(e) = GpEntry::decode(raw) {
            // Whatever decodes re-encodes to the same entry (control bits aside).
            let again = e.encode().expect("decoded entries are encodable");
            assert_eq!(GpEntry::decode(again), Some(e));
        }
    }
});
