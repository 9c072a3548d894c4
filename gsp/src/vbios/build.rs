//! A VBIOS built from the documented structures, laid out as NVIDIA's boards lay theirs out:
//! a PC-AT image holding the BIT (at 0x1B0, where tinygrad looks for it), an EFI image whose
//! PCIR says "last" while its NPDE says more follow, then two FWSEC images (code type 0xE0):
//! the first holds the falcon ucode table, the second FWSEC's descriptor (v2 or v3), its
//! signatures and its ucode, whose DMEM holds the application interface and a "DMAP" DMEM
//! mapper. For the parser's tests, `nvbare vbios` on a simulated image and the simulator.
//!
//! Every structure is written field by field from the layouts cited in [`super::pci_rom`],
//! [`super::bit`] and [`super::falcon_ucode`]; nothing here is NVIDIA's data.

use alloc::vec;
use alloc::vec::Vec;

use super::falcon_ucode::{APPID_FWSEC_DBG, APPID_FWSEC_PROD, DMAP_SIGNATURE, SIGNATURE_SIZE};
use super::pci_rom::BLOCK;

/// What to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The PCI device id in every PCIR (0x2684: AD102).
    pub device_id: u16,
    /// FWSEC's descriptor version: 2 (Turing, GA100) or 3 (GA10x, AD10x).
    pub desc_version: u8,
    /// v3: how many signatures follow the descriptor.
    pub signature_count: u8,
    /// Bytes before the ROM (a firmware file's IFR section), a multiple of 512.
    pub prefix: usize,
    /// The BIOS version in the BIOS data token.
    pub bios_version: u32,
    /// Sizes of the PC-AT, EFI and first FWSEC images and the least size of the second,
    /// multiples of 512 (`None`: 4 KiB, 2 KiB, 1 KiB and what FWSEC needs).
    pub image_sizes: Option<[usize; 4]>,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            device_id: 0x2684,
            desc_version: 3,
            signature_count: 2,
            prefix: 0,
            bios_version: 0x9502_4000,
            image_sizes: None,
        }
    }
}

/// Where the builder put things, from the ROM's start (add `prefix` for file offsets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Built {
    /// The bytes (prefix included).
    pub bytes: Vec<u8>,
    /// The images: (offset, size, code type).
    pub images: Vec<(usize, usize, u8)>,
    /// The BIT header.
    pub bit: usize,
    /// The BIT's falcon-data token's entry.
    pub falcon_token: usize,
    /// The falcon ucode table.
    pub ucode_table: usize,
    /// FWSEC's descriptor.
    pub desc: usize,
    /// FWSEC's ucode (after the descriptor and signatures).
    pub ucode: usize,
    /// FWSEC's DMEM image.
    pub dmem: usize,
    /// FWSEC's DMEM mapper, in DMEM.
    pub mapper_in_dmem: usize,
    /// The expansion-ROM offset the pointers are relative to.
    pub expansion: usize,
}

/// IMEM bytes of the built ucode.
pub const IMEM: usize = 0x100;
/// DMEM bytes of the built ucode.
pub const DMEM: usize = 0x600;
/// The application interface's DMEM offset.
pub const INTERFACE: usize = 0x10;
/// The DMEM mapper's DMEM offset.
pub const MAPPER: usize = 0x100;
/// The command-in buffer's DMEM offset and size.
pub const CMD_IN: (u32, u32) = (0x200, 0x100);
/// The signature slot (v3 PKCDataOffset), in DMEM.
pub const PKC_DATA: usize = 0x400;
/// Where each image's PCIR is (from the image's start).
const PCIR: usize = 0x160;
/// Where the BIT header is in the PC-AT image.
pub const BIT_AT: usize = 0x1B0;

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

// CAST (this file): every value built here is far below u16/u32 range.

/// Writes an image's ROM header, PCIR and NPDE at `at`.
fn image_header(
    b: &mut [u8],
    at: usize,
    blocks: u16,
    code: u8,
    device: u16,
    pcir_last: bool,
    last: bool,
) {
    put16(b, at, 0xAA55);
    b[at + 2] = blocks.min(0xFF) as u8;
    put16(b, at + 0x18, PCIR as u16);
    let p = at + PCIR;
    b[p..p + 4].copy_from_slice(b"PCIR");
    put16(b, p + 4, 0x10DE);
    put16(b, p + 6, device);
    put16(b, p + 0x0A, 0x18);
    b[p + 0x0C] = 3;
    b[p + 0x0D..p + 0x10].copy_from_slice(&[0x00, 0x00, 0x03]);
    put16(b, p + 0x10, blocks);
    b[p + 0x14] = code;
    b[p + 0x15] = if pcir_last { 0x80 } else { 0 };
    // NPDE at the PCIR's end rounded up to 16: 0x178 -> 0x180.
    let n = p + 0x20;
    b[n..n + 4].copy_from_slice(b"NPDE");
    put16(b, n + 4, 0x101);
    put16(b, n + 6, 0x0C);
    put16(b, n + 8, blocks);
    b[n + 0x0A] = if last { 0x80 } else { 0 };
}

/// Sets the BIT header's checksum byte so its bytes sum to 0 (after editing it).
pub fn fix_bit_checksum(rom: &mut [u8], bit: usize) {
    let size = usize::from(rom[bit + 8]);
    rom[bit + 11] = 0;
    let sum = rom[bit..bit + size]
        .iter()
        .fold(0u8, |s, &x| s.wrapping_add(x));
    rom[bit + 11] = sum.wrapping_neg();
}

/// Builds the image `spec` describes.
pub fn build(spec: &Spec) -> Built {
    let v3 = spec.desc_version != 2;
    let sizes = spec
        .image_sizes
        .unwrap_or([8 * BLOCK, 4 * BLOCK, 2 * BLOCK, 0]);
    let pc_at = (0usize, sizes[0]);
    let efi = (pc_at.1, sizes[1]);
    let fw1 = (efi.0 + efi.1, sizes[2]);
    let fw2_at = fw1.0 + fw1.1;
    // The second FWSEC image: headers to 0x200, the descriptor, signatures, ucode.
    let desc = fw2_at + 0x200;
    let desc_size = if v3 {
        super::falcon_ucode::DESC_V3_SIZE + usize::from(spec.signature_count) * SIGNATURE_SIZE
    } else {
        super::falcon_ucode::DESC_V2_SIZE
    };
    let ucode = desc + desc_size;
    let stored = IMEM + DMEM;
    let fw2_size = ((ucode + stored - fw2_at).div_ceil(BLOCK) * BLOCK).max(sizes[3]);
    let fw2 = (fw2_at, fw2_size);
    let total = fw2.0 + fw2.1;
    let mut r = vec![0u8; total];
    let expansion = fw1.0 - pc_at.1;

    let blocks = |s: usize| (s / BLOCK) as u16;
    image_header(
        &mut r,
        pc_at.0,
        blocks(pc_at.1),
        0x00,
        spec.device_id,
        false,
        false,
    );
    image_header(
        &mut r,
        efi.0,
        blocks(efi.1),
        0x03,
        spec.device_id,
        true,
        false,
    );
    image_header(
        &mut r,
        fw1.0,
        blocks(fw1.1),
        0xE0,
        spec.device_id,
        false,
        false,
    );
    image_header(
        &mut r,
        fw2.0,
        blocks(fw2.1),
        0xE0,
        spec.device_id,
        true,
        true,
    );

    // The BIT: header, then 6-byte tokens: BIOSDATA, NOP (null), FALCON_DATA, STRING_PTRS.
    let tokens: [(u8, u8, u16, u16); 4] = [
        (0x42, 2, 8, 0x300),
        (0x4E, 0, 0, 0),
        (0x70, 2, 4, 0x320),
        (0x53, 2, 4, 0x330),
    ];
    let bit = BIT_AT;
    put16(&mut r, bit, 0xB8FF);
    r[bit + 2..bit + 6].copy_from_slice(b"BIT\0");
    put16(&mut r, bit + 6, 0x0100);
    r[bit + 8] = 12;
    r[bit + 9] = 6;
    r[bit + 10] = tokens.len() as u8;
    for (i, &(id, ver, size, ptr)) in tokens.iter().enumerate() {
        let t = bit + 12 + 6 * i;
        r[t] = id;
        r[t + 1] = ver;
        put16(&mut r, t + 2, size);
        put16(&mut r, t + 4, ptr);
    }
    fix_bit_checksum(&mut r, bit);
    put32(&mut r, 0x300, spec.bios_version);
    r[0x304] = 0x0A;
    let ucode_table = fw1.0 + 0x200;
    put32(&mut r, 0x320, (ucode_table - expansion) as u32);

    // The falcon ucode table: v1, 6-byte header and entries; an unrelated entry, FWSEC prod,
    // FWSEC debug (same descriptor).
    let entries: [(u8, u8, usize); 3] = [
        (0x01, 0x01, fw1.0 + 0x300),
        (APPID_FWSEC_PROD, 0x07, desc),
        (APPID_FWSEC_DBG, 0x07, desc),
    ];
    r[ucode_table..ucode_table + 6].copy_from_slice(&[
        1,
        6,
        6,
        entries.len() as u8,
        spec.desc_version,
        desc_size.min(0xFF) as u8,
    ]);
    for (i, &(app, target, at)) in entries.iter().enumerate() {
        let e = ucode_table + 6 + 6 * i;
        r[e] = app;
        r[e + 1] = target;
        put32(&mut r, e + 2, (at - expansion) as u32);
    }
    // The unrelated entry's descriptor: version 1, no more (the parser only reads its header).
    put32(&mut r, fw1.0 + 0x300, 1 | (1 << 8) | (0x20 << 16));

    // FWSEC's descriptor.
    let version = if v3 { 3u32 } else { 2 };
    put32(
        &mut r,
        desc,
        1 | (version << 8) | ((desc_size as u32) << 16),
    );
    let dmem = ucode + IMEM;
    if v3 {
        let words = [
            stored as u32,
            PKC_DATA as u32,
            INTERFACE as u32,
            0,
            IMEM as u32,
            0,
            0,
            DMEM as u32,
        ];
        for (i, w) in words.iter().enumerate() {
            put32(&mut r, desc + 4 + 4 * i, *w);
        }
        put16(&mut r, desc + 36, 0x0400); // engine id mask: GSP
        r[desc + 38] = 0x09; // ucode id
        r[desc + 39] = spec.signature_count;
        put16(&mut r, desc + 40, (1u16 << spec.signature_count) - 1);
        for s in 0..usize::from(spec.signature_count) {
            let at = desc + 44 + s * SIGNATURE_SIZE;
            r[at..at + SIGNATURE_SIZE].fill(0xA0 + s as u8);
        }
    } else {
        // stored, uncompressed, virtual entry, interface, IMEM phys/load/virt, IMEM sec
        // base/size, DMEM offset, DMEM phys/load, alt IMEM/DMEM load.
        let words = [
            stored as u32,
            stored as u32,
            0,
            INTERFACE as u32,
            0,
            IMEM as u32,
            0,
            0,
            IMEM as u32,
            IMEM as u32,
            0,
            DMEM as u32,
            0,
            0,
        ];
        for (i, w) in words.iter().enumerate() {
            put32(&mut r, desc + 4 + 4 * i, *w);
        }
    }
    r[ucode..ucode + IMEM].fill(0xCC);
    // DMEM: the application interface (v1, 3 entries), the DMEM mapper.
    let i = dmem + INTERFACE;
    r[i..i + 4].copy_from_slice(&[1, 4, 8, 3]);
    for (n, (id, off)) in [(1u32, 0x80u32), (4, MAPPER as u32), (2, 0x90)]
        .iter()
        .enumerate()
    {
        put32(&mut r, i + 4 + 8 * n, *id);
        put32(&mut r, i + 8 + 8 * n, *off);
    }
    let m = dmem + MAPPER;
    put32(&mut r, m, DMAP_SIGNATURE);
    put16(&mut r, m + 4, 3);
    put16(&mut r, m + 6, 64);
    put32(&mut r, m + 8, CMD_IN.0);
    put32(&mut r, m + 12, CMD_IN.1);
    put32(&mut r, m + 16, 0x300);
    put32(&mut r, m + 20, 0x80);
    put32(&mut r, m + 52, 0x44000); // ucode_cmd_mask0 as a real GA104's

    let mut bytes = vec![0xFFu8; spec.prefix];
    bytes.extend_from_slice(&r);
    Built {
        bytes,
        images: vec![
            (pc_at.0, pc_at.1, 0x00),
            (efi.0, efi.1, 0x03),
            (fw1.0, fw1.1, 0xE0),
            (fw2.0, fw2.1, 0xE0),
        ],
        bit,
        falcon_token: bit + 12 + 6 * 2,
        ucode_table,
        desc,
        ucode,
        dmem,
        mapper_in_dmem: MAPPER,
        expansion,
    }
}
