//! The VBIOS parser's layouts against OpenRM 570.144's own definitions in the reference
//! tree: the packed sizes its format strings give (`BIT_HEADER_V1_00_FMT "1w1d1w4b"` and the
//! rest, `kernel_gsp_fwsec.c`), the size defines beside them, the DMEM mapper's struct
//! (`kernel_gsp_frts_tu102.c`), the ids and commands, and the PROM window's base
//! (`dev_ext_devices.h`). `pci_exp_table.h` (ROM header, PCIR, NPDE) is not in the reference
//! tree; its offsets are cited in `pci_rom.rs` and checked by the builder round trip.
//! Skips, saying so, when the reference tree is absent.

use nvbare_gsp::vbios::{bit, falcon_ucode as fu};

fn read(rel: &str) -> Option<String> {
    let root = nvbare_hwref::reference_root(env!("CARGO_MANIFEST_DIR"))
        .join("open-gpu-kernel-modules-570.144/src");
    std::fs::read_to_string(root.join(rel)).ok()
}

/// The body of `#define NAME BODY` in `src`.
fn define<'a>(src: &'a str, name: &str) -> &'a str {
    src.lines()
        .find_map(|l| {
            let rest = l.trim().strip_prefix("#define ")?.trim_start();
            let rest = rest.strip_prefix(name)?;
            rest.starts_with([' ', '\t']).then(|| rest.trim())
        })
        .unwrap_or_else(|| panic!("#define {name} not found"))
}

fn number(body: &str) -> u64 {
    let b = body
        .split("//")
        .next()
        .unwrap()
        .trim()
        .trim_matches(['(', ')']);
    let b = b.trim_end_matches('U');
    match b.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => b.parse().unwrap(),
    }
}

/// Packed bytes of an OpenRM BIOS format string ("1w1d1w4b"): b and s 1, w 2, d 4.
fn packed(fmt: &str) -> usize {
    let fmt = fmt.trim().trim_matches('"');
    let (mut n, mut total) = (0usize, 0usize);
    for c in fmt.chars() {
        if let Some(d) = c.to_digit(10) {
            n = n * 10 + d as usize;
            continue;
        }
        let each = match c {
            'b' | 's' => 1,
            'w' => 2,
            'd' => 4,
            _ => panic!("format {fmt:?}: {c:?}"),
        };
        total += n.max(1) * each;
        n = 0;
    }
    total
}

/// Bytes of the packed struct `name` (NvU8/16/32/64 members only) in `src`.
fn struct_size(src: &str, name: &str) -> usize {
    let end = src.find(&format!("}} {name};")).expect("the struct");
    let start = src[..end].rfind('{').unwrap();
    src[start + 1..end]
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|ty| match ty {
            "NvU8" => 1,
            "NvU16" => 2,
            "NvU32" => 4,
            "NvU64" => 8,
            other => panic!("{name}: member type {other}"),
        })
        .sum()
}

#[test]
fn layouts_match_openrm() {
    let (Some(fwsec), Some(frts), Some(ext)) = (
        read("nvidia/src/kernel/gpu/gsp/kernel_gsp_fwsec.c"),
        read("nvidia/src/kernel/gpu/gsp/arch/turing/kernel_gsp_frts_tu102.c"),
        read("common/inc/swref/published/turing/tu102/dev_ext_devices.h"),
    ) else {
        println!(
            "SKIPPED: OpenRM 570.144 not under {} (set NVBARE_REFERENCE)",
            nvbare_hwref::reference_root(env!("CARGO_MANIFEST_DIR")).display()
        );
        return;
    };
    let f = |n: &str| packed(define(&fwsec, n));
    let v = |n: &str| number(define(&fwsec, n));
    assert_eq!(f("BIT_HEADER_V1_00_FMT"), bit::HEADER_SIZE);
    assert_eq!(f("BIT_TOKEN_V1_00_FMT_SIZE_6"), bit::TOKEN_SIZE_6);
    assert_eq!(f("BIT_TOKEN_V1_00_FMT_SIZE_8"), bit::TOKEN_SIZE_8);
    assert_eq!(v("BIT_HEADER_ID"), 0xB8FF);
    assert_eq!(v("BIT_HEADER_SIGNATURE").to_le_bytes()[..4], *b"BIT\0");
    assert_eq!(bit::BIT_MAGIC[..2], 0xB8FFu16.to_le_bytes());
    assert_eq!(
        v("BIT_TOKEN_FALCON_DATA"),
        u64::from(bit::TOKEN_FALCON_DATA)
    );
    assert_eq!(v("BIT_TOKEN_BIOSDATA"), u64::from(bit::TOKEN_BIOSDATA));
    assert_eq!(f("BIT_DATA_FALCON_DATA_V2_4_FMT"), 4);
    assert_eq!(f("FALCON_UCODE_TABLE_HDR_V1_6_FMT"), fu::TABLE_HEADER_SIZE);
    assert_eq!(
        v("FALCON_UCODE_TABLE_HDR_V1_SIZE_6") as usize,
        fu::TABLE_HEADER_SIZE
    );
    assert_eq!(
        v("FALCON_UCODE_TABLE_HDR_V1_VERSION"),
        u64::from(fu::TABLE_VERSION)
    );
    assert_eq!(f("FALCON_UCODE_TABLE_ENTRY_V1_6_FMT"), fu::ENTRY_SIZE);
    assert_eq!(f("FALCON_UCODE_DESC_V2_60_FMT"), fu::DESC_V2_SIZE);
    assert_eq!(v("FALCON_UCODE_DESC_V2_SIZE_60") as usize, fu::DESC_V2_SIZE);
    assert_eq!(f("FALCON_UCODE_DESC_V3_44_FMT"), fu::DESC_V3_SIZE);
    assert_eq!(v("FALCON_UCODE_DESC_V3_SIZE_44") as usize, fu::DESC_V3_SIZE);
    assert_eq!(v("BCRT30_RSA3K_SIG_SIZE") as usize, fu::SIGNATURE_SIZE);
    assert_eq!(
        v("FALCON_UCODE_ENTRY_APPID_FIRMWARE_SEC_LIC"),
        u64::from(fu::APPID_FWSEC_LIC)
    );
    assert_eq!(
        v("FALCON_UCODE_ENTRY_APPID_FWSEC_DBG"),
        u64::from(fu::APPID_FWSEC_DBG)
    );
    assert_eq!(
        v("FALCON_UCODE_ENTRY_APPID_FWSEC_PROD"),
        u64::from(fu::APPID_FWSEC_PROD)
    );

    let r = |n: &str| number(define(&frts, n));
    assert_eq!(
        struct_size(&frts, "FALCON_APPLICATION_INTERFACE_HEADER_V1"),
        fu::INTERFACE_HEADER_SIZE
    );
    assert_eq!(
        struct_size(&frts, "FALCON_APPLICATION_INTERFACE_ENTRY_V1"),
        fu::INTERFACE_ENTRY_SIZE
    );
    assert_eq!(
        struct_size(&frts, "FALCON_APPLICATION_INTERFACE_DMEM_MAPPER_V3"),
        fu::DMEM_MAPPER_SIZE
    );
    assert_eq!(
        r("FALCON_APPLICATION_INTERFACE_ENTRY_ID_DMEMMAPPER"),
        u64::from(fu::INTERFACE_ID_DMEM_MAPPER)
    );
    assert_eq!(
        r("FALCON_APPLICATION_INTERFACE_DMEM_MAPPER_V3_CMD_FRTS"),
        u64::from(fu::CMD_FRTS)
    );
    assert_eq!(
        r("FALCON_APPLICATION_INTERFACE_DMEM_MAPPER_V3_CMD_SB"),
        u64::from(fu::CMD_SB)
    );
    // init_cmd is the 12th u32 after signature (u32), version and size (u16 each).
    let body = &frts[frts.find("NvU32 signature;").unwrap()..frts.find("NvU32 init_cmd;").unwrap()];
    let before: usize = body
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|t| if t == "NvU16" { 2 } else { 4 })
        .sum();
    assert_eq!(before, fu::DMEM_MAPPER_INIT_CMD);

    assert!(define(&ext, "NV_PROM_DATA(i)").starts_with("(0x00300000+(i))"));
}
