//! The VBIOS parser on an image laid out as a real board's is reported to be (no real VBIOS
//! is in the repository: NVIDIA's are not redistributable).

use nvbare_gsp::vbios::build::{self, Spec};
use nvbare_gsp::vbios::falcon_ucode::{APPID_FWSEC_PROD, SIGNATURE_SIZE};
use nvbare_gsp::vbios::{FwsecDesc, parse};

/// An image laid out as a public teardown of a real GA104 board's VBIOS reports it
/// (github.com/nvlight/cmp70hx-unlock, `docs/70HX-VBIOS-ANALYSIS.md`, §1-§5: a GPU-Z dump
/// whose ROM starts at 0x9200 behind an "NVGI" header; BIT at ROM 0x1B2 with 18 six-byte
/// tokens; the falcon-data token (#14) at 0x401 holding 0x736CB; the ucode table 0x14800
/// further, v1, 16 entries; FWSEC prod (0x85) and debug (0x45) descriptors v3 of 0x4AC bytes
/// with 3 signatures, IMEM 0xE200, DMEM 0x800, PKC 0x5A4, interface at DMEM+0x1C holding
/// (1, 4, 8, 2), (4, 0x560), (5, 0x7AC); "DMAP" v3 at DMEM+0x560, command-in buffer 0x40 bytes
/// at 0x7C0). The dump itself is NVIDIA's and not redistributable: not fetched, not here. The
/// image boundaries are not in the teardown; they are the GA102's nova-core logged (PC-AT
/// 0xFE00, EFI 0x14800), the FWSEC images cut to hold what the pointers reach.
fn ga104_as_reported() -> Vec<u8> {
    const ROM: usize = 0x9200;
    let mut f = vec![0xFFu8; 0xF4000];
    f[..5].copy_from_slice(b"NVGIP");
    let r = &mut f[ROM..];
    let p16 = |r: &mut [u8], at: usize, v: u16| r[at..at + 2].copy_from_slice(&v.to_le_bytes());
    let p32 = |r: &mut [u8], at: usize, v: u32| r[at..at + 4].copy_from_slice(&v.to_le_bytes());
    // Images: PC-AT, EFI (PCIR last, NPDE not), FWSEC, FWSEC.
    let images = [
        (0usize, 0xFE00usize, 0u8, false),
        (0xFE00, 0x14800, 3, false),
        (0x24600, 0x2B600, 0xE0, false),
        (0x4FC00, 0x40000, 0xE0, true),
    ];
    for (at, size, code, last) in images {
        r[at..at + size].fill(0);
        p16(r, at, 0xAA55);
        p16(r, at + 0x18, 0x1C);
        let p = at + 0x1C;
        r[p..p + 4].copy_from_slice(b"PCIR");
        p16(r, p + 4, 0x10DE);
        p16(r, p + 6, 0x248A);
        p16(r, p + 0x0A, 0x18);
        p16(r, p + 0x10, (size / 512) as u16);
        r[p + 0x14] = code;
        r[p + 0x15] = if code == 3 { 0x80 } else { 0 };
        let n = (p + 0x18 + 0xF) & !0xF;
        r[n..n + 4].copy_from_slice(b"NPDE");
        p16(r, n + 4, 0x101);
        p16(r, n + 6, 0x0C);
        p16(r, n + 8, (size / 512) as u16);
        r[n + 0x0A] = if last { 0x80 } else { 0 };
    }
    // The BIT and its 18 tokens as the teardown lists them.
    let bit = 0x1B2;
    let tokens: [(u8, u8, u16, u16); 18] = [
        (0x32, 1, 0x04, 0x238),
        (0x42, 2, 0x25, 0x244),
        (0x43, 2, 0x2C, 0x269),
        (0x44, 1, 0x04, 0x295),
        (0x49, 1, 0x24, 0x299),
        (0x4D, 2, 0x29, 0x2BD),
        (0x4E, 0, 0, 0),
        (0x50, 2, 0xE8, 0x2E6),
        (0x53, 2, 0x18, 0x3CE),
        (0x54, 1, 0x02, 0x3E6),
        (0x55, 1, 0x05, 0x3EC),
        (0x56, 1, 0x06, 0x3F1),
        (0x78, 1, 0x08, 0x3F7),
        (0x64, 1, 0x02, 0x3FF),
        (0x70, 2, 0x04, 0x401),
        (0x75, 1, 0x11, 0x405),
        (0x69, 2, 0x6E, 0x418),
        (0x45, 1, 0x04, 0x3E8),
    ];
    p16(r, bit, 0xB8FF);
    r[bit + 2..bit + 6].copy_from_slice(b"BIT\0");
    p16(r, bit + 6, 0x0100);
    r[bit + 8..bit + 11].copy_from_slice(&[12, 6, 18]);
    for (i, (id, ver, size, ptr)) in tokens.into_iter().enumerate() {
        let t = bit + 12 + 6 * i;
        r[t] = id;
        r[t + 1] = ver;
        p16(r, t + 2, size);
        p16(r, t + 4, ptr);
    }
    build::fix_bit_checksum(r, bit);
    p32(r, 0x401, 0x736CB);
    // The ucode table: 16 entries, four used.
    let exp = 0x14800;
    let table = exp + 0x736CB;
    r[table..table + 6].copy_from_slice(&[1, 6, 6, 16, 3, 0]);
    let prod = 0x4A408 - ROM;
    let dbg = 0x3B55C - ROM;
    for (i, (app, desc)) in [(0x45u8, dbg), (0x85, prod)].into_iter().enumerate() {
        let e = table + 6 + 6 * i;
        r[e] = app;
        r[e + 1] = 7;
        p32(r, e + 2, (desc - exp) as u32);
    }
    for desc in [dbg, prod] {
        p32(r, desc, 1 | (3 << 8) | (0x4AC << 16));
        // stored, PKC, interface, IMEM phys/load/virt, DMEM phys/load
        for (k, w) in [0xEA00u32, 0x5A4, 0x1C, 0, 0xE200, 0, 0, 0x800]
            .into_iter()
            .enumerate()
        {
            p32(r, desc + 4 + 4 * k, w);
        }
        p16(r, desc + 36, 0x400);
        r[desc + 38] = 9;
        r[desc + 39] = 3;
        p16(r, desc + 40, 0x7);
        let dmem = desc + 0x4AC + 0xE200;
        p32(r, dmem + 0x1C, 0x0208_0401);
        for (k, w) in [4u32, 0x560, 5, 0x7AC].into_iter().enumerate() {
            p32(r, dmem + 0x20 + 4 * k, w);
        }
        for (k, w) in [
            0x5041_4D44u32,
            0x0040_0003,
            0x7C0,
            0x40,
            0x0100_0000,
            0x100,
            0x900,
            0x2600,
            0,
            0x4C8,
            0x4D0,
            0,
            4,
            0x44000,
            0,
            0x7AC,
        ]
        .into_iter()
        .enumerate()
        {
            p32(r, dmem + 0x560 + 4 * k, w);
        }
    }
    f
}

/// Writes the test images into `$NVBARE_VBIOS_DIR` when set, to run `nvbare vbios` on.
fn save(name: &str, bytes: &[u8]) {
    if let Some(dir) = std::env::var_os("NVBARE_VBIOS_DIR") {
        std::fs::write(std::path::Path::new(&dir).join(name), bytes).unwrap();
    }
}

#[test]
fn a_ga104_laid_out_as_a_real_one_is_reported_parses() {
    let f = ga104_as_reported();
    save("ga104_as_reported.rom", &f);
    save("built_v3.rom", &build::build(&Spec::default()).bytes);
    save(
        "built_v2.rom",
        &build::build(&Spec {
            desc_version: 2,
            ..Spec::default()
        })
        .bytes,
    );
    let v = parse(&f).unwrap();
    assert_eq!(v.rom_start, 0x9200);
    assert_eq!(v.bit.offset + v.rom_start, 0x93B2);
    assert_eq!(v.bit.tokens.len(), 18);
    assert_eq!(v.bit.tokens[14].id, 0x70);
    assert_eq!(v.expansion_rom_offset, 0x14800);
    let t = v.ucode_table.unwrap();
    assert_eq!(t.offset + v.rom_start, 0x910CB);
    assert_eq!(t.entries.len(), 16);
    let fw = v.fwsec.unwrap();
    assert_eq!(fw.app_id, APPID_FWSEC_PROD);
    assert_eq!(fw.desc_offset + v.rom_start, 0x4A408);
    assert_eq!(fw.ucode_offset + v.rom_start, 0x4A8B4);
    assert_eq!(fw.signatures.map(|s| s.1), Some(3 * SIGNATURE_SIZE));
    let FwsecDesc::V3(d) = fw.desc else {
        panic!("v3")
    };
    assert_eq!(
        (d.imem_load_size, d.dmem_load_size, d.pkc_data_offset),
        (0xE200, 0x800, 0x5A4)
    );
    let m = fw.dmem_mapper;
    assert_eq!(m.dmem_offset, 0x560);
    assert_eq!(
        (m.cmd_in_buffer_offset, m.cmd_in_buffer_size),
        (0x7C0, 0x40)
    );
    assert_eq!((m.version, m.size, m.init_cmd), (3, 0x40, 0));
}
