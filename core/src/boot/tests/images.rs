//! Small firmware files of the real formats, built for the tests: an ELF64 GSP-RM image,
//! an ELF32 FMC whose `hash` is the SHA-384 of its `image`, and an nvfw bootloader with an
//! `RM_RISCV_UCODE_DESC` v5.

extern crate std;

use std::vec;
use std::vec::Vec;

use sha2::{Digest, Sha384};

/// An ELF of class `bits` with these sections (after the null section and `.shstrtab`).
pub fn elf(bits: u8, sections: &[(&str, &[u8])]) -> Vec<u8> {
    let (ehsize, shentsize) = if bits == 64 { (64, 64) } else { (52, 40) };
    let mut names = vec![0u8];
    let mut name_off = Vec::new();
    for (n, _) in sections {
        name_off.push(names.len() as u32);
        names.extend_from_slice(n.as_bytes());
        names.push(0);
    }
    let shstr_name = names.len() as u32;
    names.extend_from_slice(b".shstrtab\0");
    let mut out = vec![0u8; ehsize];
    let mut offs = Vec::new();
    for (_, data) in sections {
        offs.push(out.len() as u64);
        out.extend_from_slice(data);
    }
    let names_off = out.len() as u64;
    out.extend_from_slice(&names);
    while out.len() % 8 != 0 {
        out.push(0);
    }
    let shoff = out.len() as u64;
    let mut header = |name: u32, kind: u32, off: u64, size: u64| {
        let mut h = vec![0u8; shentsize];
        h[0..4].copy_from_slice(&name.to_le_bytes());
        h[4..8].copy_from_slice(&kind.to_le_bytes());
        if bits == 64 {
            h[24..32].copy_from_slice(&off.to_le_bytes());
            h[32..40].copy_from_slice(&size.to_le_bytes());
        } else {
            h[16..20].copy_from_slice(&(off as u32).to_le_bytes());
            h[20..24].copy_from_slice(&(size as u32).to_le_bytes());
        }
        out.extend_from_slice(&h);
    };
    header(0, 0, 0, 0);
    for (i, (_, data)) in sections.iter().enumerate() {
        header(name_off[i], 1, offs[i], data.len() as u64);
    }
    header(shstr_name, 3, names_off, names.len() as u64);
    let shnum = sections.len() as u16 + 2;
    out[0..4].copy_from_slice(b"\x7fELF");
    out[4] = if bits == 64 { 2 } else { 1 };
    out[5] = 1;
    out[6] = 1;
    let (shoff_at, shent_at) = if bits == 64 { (40, 58) } else { (32, 46) };
    if bits == 64 {
        out[shoff_at..shoff_at + 8].copy_from_slice(&shoff.to_le_bytes());
    } else {
        out[shoff_at..shoff_at + 4].copy_from_slice(&(shoff as u32).to_le_bytes());
    }
    out[shent_at..shent_at + 2].copy_from_slice(&(shentsize as u16).to_le_bytes());
    out[shent_at + 2..shent_at + 4].copy_from_slice(&shnum.to_le_bytes());
    out[shent_at + 4..shent_at + 6].copy_from_slice(&(shnum - 1).to_le_bytes());
    out
}

/// A GSP-RM image of `image_len` bytes with GH100's and GB20x's signature sections.
pub fn gsp_rm(image_len: usize) -> Vec<u8> {
    let image: Vec<u8> = (0..image_len).map(|i| (i * 31 % 251) as u8).collect();
    elf(
        64,
        &[
            (".fwimage", &image),
            (".fwversion", b"570.144\0"),
            (".fwsignature_gb20x", &[0x20; 4096]),
            (".fwsignature_gh100", &[0x10; 4096]),
            (".fwsignature_ad10x", &[0x30; 4096]),
            (".fwsignature_ga10x", &[0x40; 4096]),
            (".fwsignature_tu10x", &[0x50; 4096]),
        ],
    )
}

/// An FMC whose keys have the sizes of the scheme (RSA-3K on GH100, ECDSA on GB20x).
pub fn fmc(rsa: bool) -> Vec<u8> {
    let image: Vec<u8> = (0..8192u32).map(|i| (i % 13) as u8).collect();
    let hash = Sha384::digest(&image);
    let (sig, key) = if rsa { (384, 384) } else { (96, 97) };
    elf(
        32,
        &[
            ("image", &image),
            ("hash", &hash),
            ("signature", &vec![0x5a; sig]),
            ("publickey", &vec![0xa5; key]),
        ],
    )
}

/// An nvfw bootloader: bin header, `RM_RISCV_UCODE_DESC` v5, a 12 KiB image.
pub fn bootloader() -> Vec<u8> {
    let mut out = vec![0u8; 0x100];
    let words = |v: &[u32]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    // bin_magic, bin_ver, bin_size, header_offset, data_offset, data_size
    out[..24].copy_from_slice(&words(&[0x10de, 1, 0x3100, 0x40, 0x100, 0x3000]));
    let mut desc = [0u32; 21];
    desc[0] = 5; // version
    desc[7] = 0x1234_5678; // appVersion
    desc[8] = 0x2000; // manifestOffset
    desc[9] = 0x400; // manifestSize
    desc[10] = 0x1000; // monitorDataOffset
    desc[11] = 0x800; // monitorDataSize
    desc[12] = 0; // monitorCodeOffset
    desc[13] = 0x1000; // monitorCodeSize
    out[0x40..0x40 + 84].copy_from_slice(&words(&desc));
    out.extend((0..0x3000u32).map(|i| (i % 7) as u8));
    out
}

/// An HS ucode laid out like `booter_load`: bin header, HS header v2 at 0x18, two 16-byte
/// signatures at 0x100, patch location 0x300 in the image, metadata (fuse version 0, engine
/// mask 1, `ucode_id`), a load header with one application (OS code 0..0x100, application
/// 0x100..0x200, OS data 0x200..0x400), a 0x400-byte image at 0x200.
pub fn hs_ucode(ucode_id: u32) -> Vec<u8> {
    let mut f = vec![0u8; 0x600];
    let mut put = |offset: usize, words: &[u32]| {
        for (i, w) in words.iter().enumerate() {
            f[offset + 4 * i..offset + 4 * i + 4].copy_from_slice(&w.to_le_bytes());
        }
    };
    put(0, &[0x10de, 1, 0x600, 0x18, 0x200, 0x400]);
    put(
        0x18,
        &[0x100, 32, 0x120, 0x124, 0x128, 12, 0x134, 0x140, 28],
    );
    put(0x100, &[0x1111_1111; 4]);
    put(0x110, &[0x2222_2222; 4]);
    put(0x120, &[0x300, 0]);
    put(0x128, &[0, 1, ucode_id]);
    put(0x134, &[2]);
    put(0x140, &[0, 0x100, 0x200, 0x200, 1, 0x100, 0x100]);
    f
}
