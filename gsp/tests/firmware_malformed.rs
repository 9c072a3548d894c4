//! Malformed firmware gives one typed error, never a panic: synthetic files built here
//! (valid ones first, then broken one field at a time), plus truncations of the real files.

mod firmware_common;

use nvbare_gsp::firmware::{
    FirmwareError, FmcImage, FmcSignatureScheme, GenericBootloader, GspRmImage, GspSignatureTarget,
    HsUcode, RiscvBootloader,
};
use proptest::prelude::*;
use sha2::{Digest, Sha384};

fn put(buf: &mut Vec<u8>, offset: usize, words: &[u32]) {
    if buf.len() < offset + 4 * words.len() {
        buf.resize(offset + 4 * words.len(), 0);
    }
    for (i, w) in words.iter().enumerate() {
        buf[offset + 4 * i..][..4].copy_from_slice(&w.to_le_bytes());
    }
}

/// An HS ucode laid out like booter_load: bin header, HS header v2 at 0x18, signatures at
/// 0x100 (2 × 16 bytes), patch_loc/patch_sig/num_sig words, metadata, load header with one
/// app, then a 0x400-byte image at 0x200.
fn synthetic_hs_ucode() -> Vec<u8> {
    let mut f = vec![0u8; 0x600];
    put(&mut f, 0, &[0x10de, 1, 0x600, 0x18, 0x200, 0x400]);
    // sig_prod_offset, sig_prod_size, patch_loc, patch_sig, meta_off, meta_size, num_sig, hdr_off, hdr_size
    put(
        &mut f,
        0x18,
        &[0x100, 32, 0x120, 0x124, 0x128, 12, 0x134, 0x140, 28],
    );
    put(&mut f, 0x120, &[0x300, 0]); // patch location in image, patch signature offset
    put(&mut f, 0x128, &[0, 0x2, 0x7]); // fuse version, engine mask, ucode id
    put(&mut f, 0x134, &[2]); // num_sig
    put(&mut f, 0x140, &[0, 0x100, 0x200, 0x200, 1, 0x100, 0x100]);
    f
}

fn synthetic_riscv_bootloader(version: u32) -> Vec<u8> {
    let mut f = vec![0u8; 0x6c + 0x100];
    let len = f.len() as u32;
    put(&mut f, 0, &[0x10de, 1, len, 0x18, 0x6c, 0x100]);
    let mut desc = [0u32; 21];
    desc[0] = version;
    desc[8] = 0x80; // manifestOffset
    desc[9] = 0x10; // manifestSize
    desc[10] = 0x40; // monitorDataOffset
    desc[11] = 0x20;
    desc[12] = 0x0; // monitorCodeOffset
    desc[13] = 0x40;
    put(&mut f, 0x18, &desc);
    f
}

/// A minimal little-endian ELF with the given sections (ELF32 or ELF64).
fn elf(is64: bool, sections: &[(&str, &[u8])]) -> Vec<u8> {
    let (ehsize, shentsize) = if is64 { (64usize, 64usize) } else { (52, 40) };
    let mut names = vec![0u8];
    let mut name_offsets = Vec::new();
    for (name, _) in sections.iter().copied().chain([(".shstrtab", &[][..])]) {
        name_offsets.push(names.len() as u64);
        names.extend_from_slice(name.as_bytes());
        names.push(0);
    }
    let mut out = vec![0u8; ehsize];
    let mut placed = Vec::new();
    for (_, data) in sections.iter().copied().chain([(".shstrtab", &names[..])]) {
        placed.push((out.len() as u64, data.len() as u64));
        out.extend_from_slice(data);
    }
    let shoff = out.len() as u64;
    let mut headers = vec![0u8; shentsize]; // the null section
    for (i, (off, size)) in placed.iter().enumerate() {
        let mut h = vec![0u8; shentsize];
        h[0..4].copy_from_slice(&(name_offsets[i] as u32).to_le_bytes());
        h[4..8].copy_from_slice(&1u32.to_le_bytes());
        if is64 {
            h[24..32].copy_from_slice(&off.to_le_bytes());
            h[32..40].copy_from_slice(&size.to_le_bytes());
        } else {
            h[16..20].copy_from_slice(&(*off as u32).to_le_bytes());
            h[20..24].copy_from_slice(&(*size as u32).to_le_bytes());
        }
        headers.extend_from_slice(&h);
    }
    out.extend_from_slice(&headers);
    out[0..4].copy_from_slice(b"\x7fELF");
    out[4] = if is64 { 2 } else { 1 };
    out[5] = 1;
    let shnum = (placed.len() + 1) as u16;
    let shstrndx = placed.len() as u16;
    if is64 {
        out[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        out[0x3A..0x3C].copy_from_slice(&(shentsize as u16).to_le_bytes());
        out[0x3C..0x3E].copy_from_slice(&shnum.to_le_bytes());
        out[0x3E..0x40].copy_from_slice(&shstrndx.to_le_bytes());
    } else {
        out[0x20..0x24].copy_from_slice(&(shoff as u32).to_le_bytes());
        out[0x2E..0x30].copy_from_slice(&(shentsize as u16).to_le_bytes());
        out[0x30..0x32].copy_from_slice(&shnum.to_le_bytes());
        out[0x32..0x34].copy_from_slice(&shstrndx.to_le_bytes());
    }
    out
}

fn synthetic_gsp(version: &[u8]) -> Vec<u8> {
    elf(
        true,
        &[
            (".fwimage", &[0xAA; 256]),
            (".fwversion", version),
            (".fwsignature_gh100", &[0x55; 64]),
        ],
    )
}

fn synthetic_fmc(image: &[u8], hash: &[u8]) -> Vec<u8> {
    elf(
        false,
        &[
            ("hash", hash),
            ("signature", &[1; 96]),
            ("publickey", &[2; 97]),
            ("image", image),
        ],
    )
}

#[test]
fn synthetic_files_parse() {
    let hs_file = synthetic_hs_ucode();
    let hs = HsUcode::parse(&hs_file).unwrap();
    assert_eq!(
        (hs.signature_count, hs.signature_size(), hs.patch_location),
        (2, 16, 0x300)
    );
    assert_eq!(hs.meta.ucode_id, 7);
    assert_eq!(
        hs.signature_for_fuse_version(0).unwrap(),
        &synthetic_hs_ucode()[0x110..0x120]
    );
    assert_eq!(hs.signature_for_fuse_version(2), None);
    let bl_file = synthetic_riscv_bootloader(5);
    let bl = RiscvBootloader::parse(&bl_file).unwrap();
    assert_eq!(bl.manifest().len(), 0x10);
    let gsp_file = synthetic_gsp(b"570.144\0");
    let gsp = GspRmImage::parse(&gsp_file, GspSignatureTarget::Gh100).unwrap();
    assert_eq!(gsp.image.len(), 256);
    let image = [9u8; 300];
    let hash: [u8; 48] = Sha384::digest(image).into();
    FmcImage::parse(&synthetic_fmc(&image, &hash), FmcSignatureScheme::EcdsaP384).unwrap();
}

#[test]
fn wrong_magic_and_empty_input_are_named() {
    let mut f = synthetic_hs_ucode();
    f[0] = 0xde;
    f[1] = 0xad;
    assert!(matches!(
        HsUcode::parse(&f),
        Err(FirmwareError::BadMagic {
            found: 0xadde,
            expected: 0x10de,
            ..
        })
    ));
    for err in [
        HsUcode::parse(&[]).unwrap_err(),
        RiscvBootloader::parse(&[]).unwrap_err(),
        GenericBootloader::parse(&[]).unwrap_err(),
        GspRmImage::parse(&[], GspSignatureTarget::Ga10x).unwrap_err(),
        FmcImage::parse(&[], FmcSignatureScheme::Rsa3072).unwrap_err(),
    ] {
        assert!(
            matches!(
                err,
                FirmwareError::OutOfBounds {
                    offset: 0,
                    file_len: 0,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("nvbare firmware fetch"), "{err}");
    }
}

#[test]
fn hs_ucode_field_errors() {
    let mut f = synthetic_hs_ucode();
    put(&mut f, 0x134, &[0]);
    assert!(matches!(
        HsUcode::parse(&f),
        Err(FirmwareError::BadField {
            what: "HS signature count",
            ..
        })
    ));
    let mut f = synthetic_hs_ucode();
    put(&mut f, 0x134, &[3]); // 32 bytes do not split into 3 signatures
    assert!(matches!(
        HsUcode::parse(&f),
        Err(FirmwareError::BadField { value: 3, .. })
    ));
    let mut f = synthetic_hs_ucode();
    put(&mut f, 0x120, &[0x3f8]); // a 16-byte signature does not fit at 0x3f8 of 0x400
    assert!(matches!(
        HsUcode::parse(&f),
        Err(FirmwareError::OutOfBounds {
            offset: 0x3f8,
            len: 16,
            ..
        })
    ));
    let mut f = synthetic_hs_ucode();
    put(&mut f, 0x140 + 16, &[1_000_000]); // num_apps
    assert!(matches!(
        HsUcode::parse(&f),
        Err(FirmwareError::BadField {
            what: "HS load header num_apps",
            ..
        })
    ));
    let mut f = synthetic_hs_ucode();
    put(&mut f, 0x14, &[0x401]); // data_size past the end of the file
    assert!(matches!(
        HsUcode::parse(&f),
        Err(FirmwareError::OutOfBounds { .. })
    ));
    let mut f = synthetic_hs_ucode();
    put(&mut f, 0x18 + 4 * 7, &[u32::MAX - 2]); // load header offset near u32::MAX: no overflow
    assert!(matches!(
        HsUcode::parse(&f),
        Err(FirmwareError::OutOfBounds { .. })
    ));
}

#[test]
fn riscv_bootloader_field_errors() {
    assert!(matches!(
        RiscvBootloader::parse(&synthetic_riscv_bootloader(9)),
        Err(FirmwareError::BadField { value: 9, .. })
    ));
    let mut f = synthetic_riscv_bootloader(5);
    put(&mut f, 0x18 + 4 * 13, &[0x101]); // monitorCodeSize past the image
    assert!(matches!(
        RiscvBootloader::parse(&f),
        Err(FirmwareError::OutOfBounds { len: 0x101, .. })
    ));
}

#[test]
fn elf_and_gsp_image_errors() {
    assert!(matches!(
        GspRmImage::parse(&synthetic_gsp(b"535.113\0"), GspSignatureTarget::Gh100),
        Err(FirmwareError::WrongVersion { found }) if found == "535.113"
    ));
    assert_eq!(
        GspRmImage::parse(&synthetic_gsp(b"570.144\0"), GspSignatureTarget::Gb20x).unwrap_err(),
        FirmwareError::MissingSection {
            name: ".fwsignature_gb20x"
        }
    );
    let mut f = synthetic_gsp(b"570.144\0");
    f[4] = 3;
    assert!(matches!(
        GspRmImage::parse(&f, GspSignatureTarget::Gh100),
        Err(FirmwareError::UnsupportedElf { .. })
    ));
    let mut f = synthetic_gsp(b"570.144\0");
    f[0x3E] = 0x40; // e_shstrndx past the table
    assert!(matches!(
        GspRmImage::parse(&f, GspSignatureTarget::Gh100),
        Err(FirmwareError::BadField { .. })
    ));
    // A 32-bit file is not a GSP-RM image, a 64-bit one not an FMC.
    let fmc32 = synthetic_fmc(&[0; 4], &[0; 48]);
    assert!(matches!(
        GspRmImage::parse(&fmc32, GspSignatureTarget::Gh100),
        Err(FirmwareError::UnsupportedElf { .. })
    ));
    assert!(matches!(
        FmcImage::parse(&synthetic_gsp(b"570.144\0"), FmcSignatureScheme::Rsa3072),
        Err(FirmwareError::UnsupportedElf { .. })
    ));
}

#[test]
fn fmc_with_a_tampered_image_fails_its_hash() {
    let image = [9u8; 300];
    let hash: [u8; 48] = Sha384::digest(image).into();
    let mut tampered = image;
    tampered[10] ^= 1;
    let err = FmcImage::parse(
        &synthetic_fmc(&tampered, &hash),
        FmcSignatureScheme::EcdsaP384,
    )
    .unwrap_err();
    assert!(matches!(err, FirmwareError::FmcHashMismatch { stored, .. } if stored == hash));
    assert!(err.to_string().contains("SHA-384"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn truncated_or_flipped_synthetic_files_never_panic(cut in 0usize..0x700, flip in 0usize..0x700, bit in 0u8..8) {
        for mut f in [synthetic_hs_ucode(), synthetic_riscv_bootloader(5), synthetic_gsp(b"570.144\0"),
                      synthetic_fmc(&[1; 64], &[0; 48])] {
            if flip < f.len() { f[flip] ^= 1 << bit; }
            f.truncate(cut);
            let _ = HsUcode::parse(&f);
            let _ = RiscvBootloader::parse(&f);
            let _ = GenericBootloader::parse(&f);
            let _ = GspRmImage::parse(&f, GspSignatureTarget::Gh100);
            let _ = FmcImage::parse(&f, FmcSignatureScheme::EcdsaP384);
        }
    }
}

#[test]
fn every_truncation_of_the_real_small_files_is_an_error() {
    for (chip, name) in [
        ("ga102", "booter_load-570.144.bin"),
        ("ad102", "bootloader-570.144.bin"),
        ("gh100", "fmc-570.144.bin"),
        ("tu102", "gen_bootloader-570.144.bin"),
    ] {
        let Some(bytes) = firmware_common::real_file("truncations", chip, name) else {
            continue;
        };
        let parse = |b: &[u8]| -> Result<(), FirmwareError> {
            match name {
                "booter_load-570.144.bin" => HsUcode::parse(b).map(drop),
                "bootloader-570.144.bin" => RiscvBootloader::parse(b).map(drop),
                "fmc-570.144.bin" => FmcImage::parse(b, FmcSignatureScheme::Rsa3072).map(drop),
                _ => GenericBootloader::parse(b).map(drop),
            }
        };
        parse(&bytes).unwrap();
        let step = (bytes.len() / 997).max(1);
        for len in (0..bytes.len()).step_by(step) {
            // Trailing bytes past every region a parser reads may be cut without harm; the
            // loaders need the whole data range, so every real cut before it must fail.
            if let Ok(()) = parse(&bytes[..len]) {
                panic!("{chip}/{name} truncated to {len} bytes was accepted");
            }
        }
    }
}
