//! The VBIOS parser against images built from the documented structures
//! (`nvbare_gsp::vbios::build`): well-formed ones parse to what was built; zeroed, truncated
//! (at every length), looping, out-of-bounds and absurd ones give one specific error each,
//! never a panic or a hang. No real VBIOS is in the repository (NVIDIA's are not
//! redistributable); beyond these images, `vbios_ga104.rs` lays one out as a real board's is
//! reported, `vbios_layout.rs` checks the layouts against OpenRM and `vbios_tinygrad.rs` has
//! tinygrad's own parser read the built image.

use nvbare_gsp::vbios::build::{self, Built, Spec};
use nvbare_gsp::vbios::falcon_ucode::{
    APPID_FWSEC_PROD, DESC_V3_SIZE, DMAP_SIGNATURE, SIGNATURE_SIZE,
};
use nvbare_gsp::vbios::{self, CodeType, FwsecDesc, VbiosError, parse};
use proptest::prelude::*;

fn built(spec: Spec) -> Built {
    build::build(&spec)
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn v3_image_parses_to_what_was_built() {
    let b = built(Spec::default());
    let v = parse(&b.bytes).unwrap();
    assert_eq!(v.rom_start, 0);
    let images: Vec<_> = v
        .images
        .iter()
        .map(|i| (i.offset, i.size, i.code_type.byte()))
        .collect();
    assert_eq!(images, b.images);
    assert_eq!(v.images[1].code_type, CodeType::Efi);
    // The EFI image's PCIR says last; its NPDE carries the chain on to the FWSEC images.
    assert!(!v.images[1].last && v.images[3].last);
    assert_eq!(v.images[0].device_id, 0x2684);
    assert_eq!(v.rom_len, b.bytes.len());
    assert_eq!(v.bit.offset, build::BIT_AT);
    assert_eq!(v.bit.bcd_version, 0x0100);
    let ids: Vec<u8> = v.bit.tokens.iter().map(|t| t.id).collect();
    assert_eq!(ids, [0x42, 0x4E, 0x70, 0x53]);
    assert_eq!(v.bit.tokens[2].name(), "FALCON_DATA");
    assert_eq!(v.bit.bios_version.unwrap().to_string(), "95.02.40.00.0A");
    assert_eq!(v.expansion_rom_offset, b.expansion);
    assert_eq!(v.expansion_rom_offset, 0x1800 - 0x1000);
    let t = v.ucode_table.as_ref().unwrap();
    assert_eq!(t.offset, b.ucode_table);
    assert_eq!(t.entries.len(), 3);
    assert_eq!(t.entries[1].app_id, APPID_FWSEC_PROD);
    assert_eq!(
        t.entries[1].desc,
        Some((3, (DESC_V3_SIZE + 2 * SIGNATURE_SIZE) as u16))
    );
    assert_eq!(t.entries[0].desc, Some((1, 0x20)));
    let f = v.fwsec.as_ref().unwrap();
    assert_eq!(f.entry, 1);
    assert_eq!(f.desc_offset, b.desc);
    assert_eq!(f.ucode_offset, b.ucode);
    assert_eq!(
        f.signatures,
        Some((b.desc + DESC_V3_SIZE, 2 * SIGNATURE_SIZE))
    );
    let FwsecDesc::V3(d) = f.desc else {
        panic!("not v3: {:?}", f.desc)
    };
    assert_eq!(d.signature_count, 2);
    assert_eq!(d.signature_versions, 0b11);
    assert_eq!(d.imem_load_size as usize, build::IMEM);
    assert_eq!(d.dmem_load_size as usize, build::DMEM);
    assert_eq!(d.pkc_data_offset as usize, build::PKC_DATA);
    assert_eq!(d.engine_id_mask, 0x400);
    assert_eq!(d.ucode_id, 9);
    assert_eq!(f.dmem, (b.dmem, build::DMEM));
    let m = f.dmem_mapper;
    assert_eq!(m.dmem_offset as usize, build::MAPPER);
    assert_eq!(m.rom_offset, b.dmem + build::MAPPER);
    assert_eq!(
        u32::from_le_bytes(b.bytes[m.rom_offset..m.rom_offset + 4].try_into().unwrap()),
        DMAP_SIGNATURE
    );
    assert_eq!(
        (m.cmd_in_buffer_offset, m.cmd_in_buffer_size),
        build::CMD_IN
    );
    assert_eq!((m.version, m.size, m.init_cmd), (3, 64, 0));
}

#[test]
fn v2_image_parses_to_what_was_built() {
    let b = built(Spec {
        desc_version: 2,
        ..Spec::default()
    });
    let v = parse(&b.bytes).unwrap();
    let f = v.fwsec.unwrap();
    let FwsecDesc::V2(d) = f.desc else {
        panic!("not v2: {:?}", f.desc)
    };
    assert_eq!(f.desc_size, 60);
    assert_eq!(f.signatures, None);
    assert_eq!(d.dmem_offset as usize, build::IMEM);
    assert_eq!(d.interface_offset as usize, build::INTERFACE);
    assert_eq!(f.dmem, (b.dmem, build::DMEM));
    assert_eq!(f.dmem_mapper.rom_offset, b.dmem + build::MAPPER);
}

#[test]
fn a_ga102_sized_chain_parses() {
    // The image chain nova-core logged on a GA102 (commit "gpu: nova-core: vbios: Add base
    // support for VBIOS construction and iteration"): PC-AT 0xfe00, EFI 0x14800, FWSEC
    // 0x5600 and 0x60800 bytes. Here the pointers must skip the EFI image (0x14800).
    let b = built(Spec {
        image_sizes: Some([0xfe00, 0x14800, 0x5600, 0x60800]),
        ..Spec::default()
    });
    let v = parse(&b.bytes).unwrap();
    let images: Vec<_> = v.images.iter().map(|i| (i.offset, i.size)).collect();
    assert_eq!(
        images,
        [
            (0, 0xfe00),
            (0xfe00, 0x14800),
            (0x24600, 0x5600),
            (0x29c00, 0x60800)
        ]
    );
    assert_eq!(v.expansion_rom_offset, 0x14800);
    assert_eq!(v.fwsec.unwrap().desc_offset, b.desc);
}

#[test]
fn data_before_the_rom_is_skipped_on_512_byte_boundaries() {
    let b = built(Spec {
        prefix: 0x1200,
        ..Spec::default()
    });
    let v = parse(&b.bytes).unwrap();
    assert_eq!(v.rom_start, 0x1200);
    assert_eq!(v.fwsec.unwrap().desc_offset, b.desc);
}

/// Writes a ROM header and a PCIR without an NPDE, as the GB206 file's leading images have.
fn bare_image(b: &mut [u8], at: usize, blocks: u16, code_type: u8) {
    b[at..at + 2].copy_from_slice(&0xAA55u16.to_le_bytes());
    b[at + 0x18..at + 0x1A].copy_from_slice(&0x20u16.to_le_bytes());
    let p = at + 0x20;
    b[p..p + 4].copy_from_slice(b"PCIR");
    b[p + 4..p + 6].copy_from_slice(&0x10DEu16.to_le_bytes());
    b[p + 0x0A..p + 0x0C].copy_from_slice(&0x18u16.to_le_bytes());
    b[p + 0x10..p + 0x12].copy_from_slice(&blocks.to_le_bytes());
    b[p + 0x14] = code_type;
}

/// The layout of a real GB206 (RTX 5060 Ti) flash file (docs/vbios/README.md): two
/// code-type-0xE0 images (5 and 4 blocks, no NPDE, not last) on 512-byte boundaries just
/// ahead of the PC-AT image, chaining into it. Taking the first of them as the ROM's start
/// put the FWSEC image at offset 0, "within the PC-AT image"; the ROM starts at the PC-AT
/// image, as OpenRM's ROM directory and nova-core's PROM window have it.
#[test]
fn fwsec_images_ahead_of_the_pc_at_image_are_not_the_rom_start() {
    let b = built(Spec {
        prefix: 0x1400,
        ..Spec::default()
    });
    let mut bytes = b.bytes.clone();
    bytes[..0x1400].fill(0xFF);
    bare_image(&mut bytes, 0x200, 5, 0xE0);
    bare_image(&mut bytes, 0xC00, 4, 0xE0);
    let v = parse(&bytes).unwrap();
    assert_eq!(v.rom_start, 0x1400);
    assert_eq!(v.images[0].code_type, CodeType::PcAt);
    assert_eq!(v.images.len(), b.images.len());
    assert_eq!(v.expansion_rom_offset, b.expansion);
    assert_eq!(v.fwsec.unwrap().desc_offset, b.desc);
    assert_eq!(vbios::rom_extent(&bytes), Ok(bytes.len()));
}

/// Images but no PC-AT one: the error says so and where the first image is, not that a
/// FWSEC image "lies within the PC-AT image".
#[test]
fn a_rom_without_a_pc_at_image_is_named() {
    let mut bytes = vec![0xFF; 0x2000];
    bare_image(&mut bytes, 0x400, 5, 0xE0);
    bare_image(&mut bytes, 0xE00, 4, 0x03);
    let e = parse(&bytes).unwrap_err();
    assert_eq!(
        e,
        VbiosError::NoPcAtImage {
            scanned: 0x2000,
            offset: 0x400,
            code_type: 0xE0
        }
    );
    assert_eq!(
        e.to_string(),
        "no PC-AT image (code type 0x00, which holds the BIT) at any 512-byte boundary of 8192 \
         bytes; the first image, at 0x400, has code type 0xe0: give the whole ROM, starting at \
         or before its PC-AT image"
    );
    assert_eq!(vbios::rom_extent(&bytes), Err(e));
}

#[test]
fn zeroed_empty_and_erased_images_are_errors() {
    assert_eq!(
        parse(&[0; 0x10000]),
        Err(VbiosError::Zeroed { len: 0x10000 })
    );
    assert_eq!(parse(&[]), Err(VbiosError::NoRom { scanned: 0 }));
    assert_eq!(
        parse(&[0xFF; 4096]),
        Err(VbiosError::NoRom { scanned: 4096 })
    );
}

#[test]
fn every_truncation_is_an_error_never_a_panic() {
    for spec in [
        Spec::default(),
        Spec {
            desc_version: 2,
            ..Spec::default()
        },
    ] {
        let b = built(spec);
        for n in 0..b.bytes.len() {
            let r = parse(&b.bytes[..n]);
            assert!(r.is_err(), "a {n}-byte prefix parsed: {r:?}");
        }
    }
}

#[test]
fn an_image_of_length_zero_stops_the_walk() {
    // What tinygrad's loop spins on: an image whose length is 0 never advances.
    let mut b = built(Spec::default());
    let npde = 0x1000 + 0x160 + 0x20;
    b.bytes[npde + 8..npde + 10].copy_from_slice(&0u16.to_le_bytes());
    assert_eq!(
        parse(&b.bytes),
        Err(VbiosError::ZeroLengthImage {
            index: 1,
            offset: 0x1000
        })
    );
}

#[test]
fn a_chain_that_never_ends_stops_at_the_image_limit() {
    // 40 one-block images, none last: a chain that would go on as long as the data does.
    let mut r = vec![0u8; 40 * 512];
    for i in 0..40 {
        let at = i * 512;
        r[at..at + 2].copy_from_slice(&0xAA55u16.to_le_bytes());
        r[at + 0x18..at + 0x1A].copy_from_slice(&0x20u16.to_le_bytes());
        r[at + 0x20..at + 0x24].copy_from_slice(b"PCIR");
        r[at + 0x20 + 0x10..at + 0x20 + 0x12].copy_from_slice(&1u16.to_le_bytes());
    }
    assert_eq!(parse(&r), Err(VbiosError::TooManyImages));
    assert_eq!(vbios::MAX_IMAGES, 32);
}

#[test]
fn a_later_image_without_its_signatures_is_named() {
    let mut b = built(Spec::default());
    b.bytes[0x1800] = 0;
    assert!(matches!(
        parse(&b.bytes),
        Err(VbiosError::RomSignature {
            index: 2,
            offset: 0x1800,
            ..
        })
    ));
    let mut b = built(Spec::default());
    b.bytes[0x1800 + 0x160] = b'X';
    assert!(matches!(
        parse(&b.bytes),
        Err(VbiosError::PcirSignature { index: 2, .. })
    ));
}

#[test]
fn bit_checks() {
    let mut b = built(Spec::default());
    b.bytes[b.bit + 11] ^= 1;
    assert!(matches!(
        parse(&b.bytes),
        Err(VbiosError::BitChecksum { .. })
    ));
    let mut b = built(Spec::default());
    b.bytes[b.bit + 2] = b'X';
    assert_eq!(parse(&b.bytes), Err(VbiosError::NoBit));
    let mut b = built(Spec::default());
    b.bytes[b.bit + 9] = 4;
    build::fix_bit_checksum(&mut b.bytes, b.bit);
    assert_eq!(
        parse(&b.bytes),
        Err(VbiosError::BitSizes {
            header_size: 12,
            token_size: 4
        })
    );
    // 255 tokens from a header near the end: the tokens run past the ROM.
    let mut b = built(Spec::default());
    b.bytes[b.bit + 10] = 255;
    build::fix_bit_checksum(&mut b.bytes, b.bit);
    let r = parse(&b.bytes);
    assert!(r.is_ok(), "255 6-byte tokens still fit in the ROM: {r:?}");
}

#[test]
fn a_falcon_token_pointing_outside_is_named() {
    let mut b = built(Spec::default());
    b.bytes[b.falcon_token + 4..b.falcon_token + 6].copy_from_slice(&0xFFF0u16.to_le_bytes());
    assert_eq!(
        parse(&b.bytes),
        Err(VbiosError::TokenOutside {
            id: 0x70,
            ptr: 0xFFF0,
            size: 4,
            len: b.bytes.len()
        })
    );
    let mut b = built(Spec::default());
    b.bytes[b.falcon_token + 1] = 1;
    assert_eq!(
        parse(&b.bytes),
        Err(VbiosError::FalconDataToken {
            version: 1,
            size: 4
        })
    );
    // The ucode table pointer itself pointing past the ROM.
    let mut b = built(Spec::default());
    put32(&mut b.bytes, 0x320, 0xFFFF_FFF0);
    assert!(matches!(
        parse(&b.bytes),
        Err(VbiosError::Truncated {
            what: "falcon ucode table header",
            ..
        })
    ));
}

#[test]
fn an_absurd_ucode_table_is_named() {
    let mut b = built(Spec::default());
    b.bytes[b.ucode_table + 3] = 255;
    b.bytes[b.ucode_table + 2] = 255;
    assert_eq!(
        parse(&b.bytes),
        Err(VbiosError::UcodeTableOutside {
            offset: b.ucode_table,
            count: 255,
            entry_size: 255,
            len: b.bytes.len()
        })
    );
    let mut b = built(Spec::default());
    b.bytes[b.ucode_table] = 2;
    assert!(matches!(
        parse(&b.bytes),
        Err(VbiosError::UcodeTableHeader { version: 2, .. })
    ));
}

#[test]
fn fwsec_descriptor_checks() {
    let desc_word = |b: &Built| u32::from_le_bytes(b.bytes[b.desc..b.desc + 4].try_into().unwrap());
    let mut b = built(Spec::default());
    let w = desc_word(&b);
    put32(&mut b.bytes, b.desc, w & !1);
    assert_eq!(
        parse(&b.bytes),
        Err(VbiosError::DescVersionUnavailable { offset: b.desc })
    );
    let mut b = built(Spec::default());
    put32(&mut b.bytes, b.desc, (w & 0xFFFF_00FF) | (4 << 8));
    assert!(matches!(
        parse(&b.bytes),
        Err(VbiosError::DescVersion { version: 4, .. })
    ));
    // More signatures than the descriptor has room for.
    let mut b = built(Spec::default());
    b.bytes[b.desc + 39] = 3;
    assert_eq!(
        parse(&b.bytes),
        Err(VbiosError::Signatures {
            count: 3,
            room: 768
        })
    );
    // A signature slot past the ucode.
    let mut b = built(Spec::default());
    put32(&mut b.bytes, b.desc + 8, 0x600);
    assert!(matches!(
        parse(&b.bytes),
        Err(VbiosError::UcodeRange {
            what: "signature slot (PKCDataOffset)",
            ..
        })
    ));
    // A stored size past the ROM.
    let mut b = built(Spec::default());
    put32(&mut b.bytes, b.desc + 4, 0xFFFF_FFFF);
    assert!(matches!(
        parse(&b.bytes),
        Err(VbiosError::Truncated {
            what: "FWSEC ucode",
            ..
        })
    ));
}

#[test]
fn dmem_mapper_checks() {
    let iface = |b: &Built| b.dmem + build::INTERFACE;
    let mut b = built(Spec::default());
    let i = iface(&b);
    b.bytes[i + 3] = 1;
    assert_eq!(
        parse(&b.bytes),
        Err(VbiosError::InterfaceHeader {
            version: 1,
            count: 1
        })
    );
    let mut b = built(Spec::default());
    let i = iface(&b);
    put32(&mut b.bytes, i + 4 + 8, 5);
    assert_eq!(parse(&b.bytes), Err(VbiosError::NoDmemMapper));
    let mut b = built(Spec::default());
    let m = b.dmem + build::MAPPER;
    b.bytes[m] = b'X';
    assert!(matches!(
        parse(&b.bytes),
        Err(VbiosError::DmapSignature { .. })
    ));
    let mut b = built(Spec::default());
    let i = iface(&b);
    put32(&mut b.bytes, i + 4 + 8 + 4, 0x5F0);
    assert!(matches!(
        parse(&b.bytes),
        Err(VbiosError::UcodeRange {
            what: "DMEM mapper",
            ..
        })
    ));
    let mut b = built(Spec::default());
    let i = iface(&b);
    b.bytes[i + 3] = 255;
    assert!(matches!(
        parse(&b.bytes),
        Err(VbiosError::UcodeRange {
            what: "application interface entries",
            ..
        })
    ));
}

#[test]
fn every_error_has_words() {
    let b = built(Spec::default());
    let e = parse(&b.bytes[..0x1100]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the PCI data structure at 0x1160 needs 0x18 bytes, but the image has 0x1100"
    );
    let e = parse(&[0; 8]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "all 8 bytes are zero (an unread or disabled ROM)"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any byte flipped anywhere: an answer or an error, never a panic.
    #[test]
    fn corrupted_images_never_panic(edits in prop::collection::vec((0usize..0x4000, any::<u8>()), 1..8)) {
        let mut b = built(Spec::default());
        for (at, v) in edits {
            let n = b.bytes.len();
            b.bytes[at % n] = v;
        }
        let _ = parse(&b.bytes);
    }

    /// Arbitrary bytes behind a valid ROM header.
    #[test]
    fn random_images_never_panic(mut bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        if bytes.len() >= 0x24 {
            bytes[0] = 0x55;
            bytes[1] = 0xAA;
            bytes[0x18] = 0x20;
            bytes[0x19] = 0;
            bytes[0x20..0x24].copy_from_slice(b"PCIR");
        }
        let _ = parse(&bytes);
    }
}

/// An unused ucode-table slot (application id 0, descriptor pointer 0), as real TU10x to
/// AD10x ROMs carry (docs/vbios/README.md, "Real VBIOS images"), has no descriptor: reading
/// one at `expansion + 0` showed the expansion ROM's first bytes as "v170, 0xeb79".
#[test]
fn an_unused_ucode_table_slot_has_no_descriptor() {
    let mut b = built(Spec::default());
    let t = b.ucode_table;
    let (header, entry) = (usize::from(b.bytes[t + 1]), usize::from(b.bytes[t + 2]));
    let last = t + header + 2 * entry;
    b.bytes[last] = 0;
    put32(&mut b.bytes, last + 2, 0);
    let v = parse(&b.bytes).unwrap();
    let table = v.ucode_table.as_ref().unwrap();
    assert_eq!((table.entries[2].app_id, table.entries[2].desc_ptr), (0, 0));
    assert_eq!(table.entries[2].desc, None);
    assert_eq!(v.fwsec.as_ref().unwrap().entry, 1, "FWSEC is still found");
}
