//! The VBIOS parser against hostile ROMs. Must never panic, never loop, never read out of
//! bounds; what it returns must lie within the bytes given.
//!
//! Input: [0] bit 0 clear: the rest is the ROM as it is. Bit 0 set: the rest is edits,
//! (offset u16 LE, value) triples, applied to an image `vbios::build` makes (bit 1: FWSEC
//! descriptor v2 instead of v3), so that the fuzzer starts past the signatures and
//! checksums and reaches the BIT, ucode-table, descriptor and DMEM-mapper checks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvbare_gsp::vbios::{self, build};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        let spec = build::Spec {
            desc_version: if mode & 2 != 0 { 2 } else { 3 },
            ..build::Spec::default()
        };
        let mut b = build::build(&spec).bytes;
        for e in rest.chunks_exact(3) {
            let at = usize::from(u16::from_le_bytes([e[0], e[1]])) % b.len();
            b[at] = e[2];
        }
        b
    };
    if let Ok(v) = vbios::parse(&bytes) {
        let len = bytes.len();
        assert!(v.rom_start + v.rom_len <= len);
        for i in &v.images {
            assert!(i.size > 0 && i.offset + i.size <= v.rom_len);
        }
        assert!(v.bit.offset < v.rom_len);
        if let Some(f) = &v.fwsec {
            assert!(f.dmem.0 + f.dmem.1 <= v.rom_len);
            assert!(f.dmem_mapper.rom_offset + 64 <= v.rom_len);
        }
    }
    if let Ok(end) = vbios::rom_extent(&bytes) {
        assert!(end <= bytes.len());
    }
});
