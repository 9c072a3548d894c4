//! Every field position in `nvbare_mmu::format` against NVIDIA's hwref `dev_mmu.h`.
//!
//! ver3: `open-gpu-kernel-modules-570.144/src/common/inc/swref/published/hopper/gh100/dev_mmu.h`.
//! ver2: `open-gpu-kernel-modules-570.144/kernel-open/nvidia-uvm/hwref/turing/tu102/dev_mmu.h`
//! (the published tu102 header lacks the VER2 layouts); when the reference tree does not carry
//! it, `tests/fixtures/hwref_ver2_tu102.txt` (its VER2 defines, `scripts/extract_hwref_fields.py`).
//!
//! Reference root: `$NVBARE_REFERENCE`, else `<CARGO_MANIFEST_DIR>/../../shared/reference`.
//! A missing header prints a SKIP line; it never passes silently. Every VER2/VER3 PTE, PDE and
//! dual-PDE field of the header must be either checked here or listed as deliberately unused.

use std::collections::BTreeMap;
use std::path::PathBuf;

use nvbare_hwref::{Headers, Lookup, split_range};

use nvbare_mmu::format::ADDRESS_BIG_SHIFT;
use nvbare_mmu::format::ADDRESS_SHIFT;
use nvbare_mmu::{
    Aperture, DualPde, Field, Format, Pde, Pte, PteAttributes, TableAddr, TableAperture,
};

/// `#define NAME hi:lo` and `#define NAME value` lines of a header.
#[derive(Default)]
struct Header {
    fields: BTreeMap<String, Field>,
    values: BTreeMap<String, u64>,
}

/// The `NAME hi:lo` fields and `NAME value` values of a header whose names start with
/// `prefix`, read with nvbare's one header reader (`nvbare-hwref`).
fn parse(text: &str, prefix: &str) -> Header {
    let mut defs = Headers::first_wins();
    defs.add_text(text, "dev_mmu.h");
    let mut h = Header::default();
    for name in defs.names().filter(|n| n.starts_with(prefix)) {
        let Ok(Some(d)) = defs.define(name, false) else {
            continue;
        };
        if split_range(&d.body).is_some() {
            if let Ok(Some((hi, lo))) = defs.field(name) {
                // CAST: entry bit positions are below 128.
                h.fields
                    .insert(name.to_string(), Field::new(hi as u32, lo as u32));
            }
        } else if let Ok(v) = defs.value(name) {
            h.values.insert(name.to_string(), v);
        }
    }
    h
}

fn reference_root() -> PathBuf {
    nvbare_hwref::reference_root(env!("CARGO_MANIFEST_DIR"))
}

fn load(version: u32) -> Option<(Header, String)> {
    let ogkm = reference_root().join("open-gpu-kernel-modules-570.144");
    let (path, prefix) = match version {
        3 => (
            ogkm.join("src/common/inc/swref/published/hopper/gh100/dev_mmu.h"),
            "NV_MMU_VER3_",
        ),
        _ => (
            ogkm.join("kernel-open/nvidia-uvm/hwref/turing/tu102/dev_mmu.h"),
            "NV_MMU_VER2_",
        ),
    };
    if let Ok(text) = std::fs::read_to_string(&path) {
        return Some((parse(&text, prefix), path.display().to_string()));
    }
    if version == 2 {
        let fixture =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hwref_ver2_tu102.txt");
        println!(
            "NOTE: {} absent; checking ver2 against the extract {}",
            path.display(),
            fixture.display()
        );
        let text = std::fs::read_to_string(&fixture).expect("ver2 fixture is committed");
        return Some((parse(&text, prefix), fixture.display().to_string()));
    }
    println!(
        "SKIP: hwref header {} not found; set NVBARE_REFERENCE to the reference tree",
        path.display()
    );
    None
}

fn opt(f: Option<Field>) -> Field {
    f.expect("format has this field")
}

/// hwref name (without the `NV_MMU_VERn_` prefix) -> our field.
fn our_fields(format: &Format) -> Vec<(&'static str, Field)> {
    let (p, d, t) = (&format.pte, &format.pde, &format.dual_pde);
    let mut v = vec![
        ("PTE_VALID", p.valid),
        ("PTE_APERTURE", p.aperture),
        ("PTE_KIND", p.kind),
        ("PTE_ADDRESS_SYS", p.address_sys),
        ("PTE_ADDRESS_VID", p.address_vid),
        ("PDE_IS_PTE", d.is_pte),
        ("PDE_VALID", d.is_pte),
        ("PDE_APERTURE", d.aperture),
        ("DUAL_PDE_IS_PTE", t.is_pte),
        ("DUAL_PDE_VALID", t.is_pte),
        ("DUAL_PDE_APERTURE_BIG", t.aperture_big),
        ("DUAL_PDE_APERTURE_SMALL", t.aperture_small),
    ];
    if format.version == nvbare_mmu::MmuVersion::Ver2 {
        v.extend([
            ("PTE_VOL", opt(p.vol)),
            ("PTE_PRIVILEGE", opt(p.privilege)),
            ("PTE_READ_ONLY", opt(p.read_only)),
            ("PTE_ATOMIC_DISABLE", opt(p.atomic_disable)),
            ("PTE_ADDRESS_VID_PEER", p.peer_id),
            ("PDE_IS_PDE", d.is_pte),
            ("PDE_VOL", opt(d.vol)),
            ("PDE_NO_ATS", opt(d.no_ats)),
            ("PDE_ADDRESS_SYS", d.address_sys),
            ("PDE_ADDRESS_VID", d.address_vid),
            ("DUAL_PDE_IS_PDE", t.is_pte),
            ("DUAL_PDE_VOL_BIG", opt(t.vol_big)),
            ("DUAL_PDE_NO_ATS", opt(t.no_ats)),
            ("DUAL_PDE_ADDRESS_BIG_SYS", t.address_big_sys),
            ("DUAL_PDE_ADDRESS_BIG_VID", t.address_big_vid),
            ("DUAL_PDE_VOL_SMALL", opt(t.vol_small)),
            ("DUAL_PDE_ADDRESS_SMALL_SYS", t.address_small_sys),
            ("DUAL_PDE_ADDRESS_SMALL_VID", t.address_small_vid),
        ]);
    } else {
        v.extend([
            ("PTE_PCF", opt(p.pcf)),
            ("PTE_ADDRESS", p.address_sys),
            ("PTE_ADDRESS_PEER", p.address_sys),
            ("PTE_PEER_ID", p.peer_id),
            ("PDE_PCF", opt(d.pcf)),
            ("PDE_ADDRESS", d.address_sys),
            ("PDE_ADDRESS", d.address_vid),
            ("DUAL_PDE_PCF_BIG", opt(t.pcf_big)),
            ("DUAL_PDE_ADDRESS_BIG", t.address_big_sys),
            ("DUAL_PDE_ADDRESS_BIG", t.address_big_vid),
            ("DUAL_PDE_PCF_SMALL", opt(t.pcf_small)),
            ("DUAL_PDE_ADDRESS_SMALL", t.address_small_sys),
            ("DUAL_PDE_ADDRESS_SMALL", t.address_small_vid),
        ]);
    }
    v
}

/// Header fields we deliberately do not use, with the reason.
const UNUSED: &[(&str, &str)] = &[
    ("PTE_ENCRYPTED", "read-only status bit"),
    ("PTE_COMPTAGLINE", "compression is not supported"),
    (
        "PDE_ADDRESS_VID_PEER",
        "page tables are never placed in peer memory",
    ),
    (
        "DUAL_PDE_ADDRESS_BIG_VID_PEER",
        "page tables are never placed in peer memory",
    ),
    (
        "DUAL_PDE_ADDRESS_SMALL_VID_PEER",
        "page tables are never placed in peer memory",
    ),
];

fn check_version(version: u32, format: &Format) {
    let Some((h, source)) = load(version) else {
        return;
    };
    let prefix = format!("NV_MMU_VER{version}_");
    let ours = our_fields(format);
    let mut checked = 0;
    for (name, field) in &ours {
        let full = format!("{prefix}{name}");
        let theirs = h
            .fields
            .get(&full)
            .unwrap_or_else(|| panic!("{full} not in {source}"));
        assert_eq!(field, theirs, "{full}: ours {field:?}, hwref {theirs:?}");
        checked += 1;
    }
    // Completeness: every entry field of the header is checked or deliberately unused.
    for name in h.fields.keys() {
        let short = &name[prefix.len()..];
        let known =
            ours.iter().any(|(n, _)| *n == short) || UNUSED.iter().any(|(n, _)| *n == short);
        assert!(
            known,
            "{name} in {source} is neither checked nor listed as unused"
        );
    }
    // Sizes, shifts and enumerated values.
    let value = |n: &str| {
        *h.values
            .get(&format!("{prefix}{n}"))
            .unwrap_or_else(|| panic!("{prefix}{n} missing"))
    };
    let pd0 = format.directories[format.pd0_index()];
    let pd1 = format.directories[format.pd1_index()];
    assert_eq!(value("PTE__SIZE"), 8);
    assert_eq!(value("PDE__SIZE"), pd1.entry_bytes);
    assert_eq!(value("DUAL_PDE__SIZE"), pd0.entry_bytes);
    assert_eq!(value("PTE_ADDRESS_SHIFT"), ADDRESS_SHIFT as u64);
    assert_eq!(value("PDE_ADDRESS_SHIFT"), ADDRESS_SHIFT as u64);
    assert_eq!(value("DUAL_PDE_ADDRESS_SHIFT"), ADDRESS_SHIFT as u64);
    assert_eq!(
        value("DUAL_PDE_ADDRESS_BIG_SHIFT"),
        ADDRESS_BIG_SHIFT as u64
    );
    for (ap, n) in [
        (Aperture::Video, "PTE_APERTURE_VIDEO_MEMORY"),
        (Aperture::Peer(0), "PTE_APERTURE_PEER_MEMORY"),
        (
            Aperture::SystemCoherent,
            "PTE_APERTURE_SYSTEM_COHERENT_MEMORY",
        ),
        (
            Aperture::SystemNonCoherent,
            "PTE_APERTURE_SYSTEM_NON_COHERENT_MEMORY",
        ),
    ] {
        assert_eq!(ap.pte_value(), value(n) as u128, "{n}");
    }
    for (ap, n) in [
        (TableAperture::Video, "VIDEO_MEMORY"),
        (TableAperture::SystemCoherent, "SYSTEM_COHERENT_MEMORY"),
        (
            TableAperture::SystemNonCoherent,
            "SYSTEM_NON_COHERENT_MEMORY",
        ),
    ] {
        assert_eq!(ap.pde_value(), value(&format!("PDE_APERTURE_{n}")) as u128);
        assert_eq!(
            ap.pde_value(),
            value(&format!("DUAL_PDE_APERTURE_BIG_{n}")) as u128
        );
        assert_eq!(
            ap.pde_value(),
            value(&format!("DUAL_PDE_APERTURE_SMALL_{n}")) as u128
        );
    }
    // Attribute encodings land on the header's named values.
    let pte = |attrs: PteAttributes| {
        u128::from(
            Pte {
                addr: 0x1000,
                attrs,
            }
            .encode(format)
            .unwrap(),
        )
    };
    let base = PteAttributes::new(Aperture::Video);
    if let Some(pcf) = format.pte.pcf {
        for (attrs, n) in [
            (base, "REGULAR_RW_ATOMIC_CACHED_ACE"),
            (base.uncached(), "REGULAR_RW_ATOMIC_UNCACHED_ACE"),
            (
                PteAttributes {
                    privileged: true,
                    ..base
                },
                "PRIVILEGE_RW_ATOMIC_CACHED_ACE",
            ),
            (
                PteAttributes {
                    read_only: true,
                    ..base
                },
                "REGULAR_RO_ATOMIC_CACHED_ACE",
            ),
            (
                PteAttributes {
                    atomics: false,
                    ..base
                },
                "REGULAR_RW_NO_ATOMIC_CACHED_ACE",
            ),
            (
                PteAttributes {
                    atomics: false,
                    read_only: true,
                    privileged: true,
                    cached: false,
                    ..base
                },
                "PRIVILEGE_RO_NO_ATOMIC_UNCACHED_ACE",
            ),
        ] {
            assert_eq!(
                pcf.get(pte(attrs)),
                value(&format!("PTE_PCF_{n}")) as u128,
                "PCF {n}"
            );
        }
        let pde = u128::from(
            Pde {
                table: TableAddr::video(0x1000),
            }
            .encode(format)
            .unwrap(),
        );
        assert_eq!(
            opt(format.pde.pcf).get(pde),
            value("PDE_PCF_VALID_CACHED_ATS_NOT_ALLOWED") as u128
        );
        let dual = DualPde {
            big: Some(TableAddr::video(0x100)),
            small: Some(TableAddr::video(0x1000)),
        };
        let dual = dual.encode(format).unwrap();
        assert_eq!(
            opt(format.dual_pde.pcf_big).get(dual),
            value("DUAL_PDE_PCF_BIG_VALID_CACHED_ATS_NOT_ALLOWED") as u128
        );
        assert_eq!(
            opt(format.dual_pde.pcf_small).get(dual),
            value("DUAL_PDE_PCF_SMALL_VALID_CACHED_ATS_NOT_ALLOWED") as u128
        );
    } else {
        let raw = pte(base.uncached());
        assert_eq!(opt(format.pte.vol).get(raw), value("PTE_VOL_TRUE") as u128);
        let raw = pte(PteAttributes {
            privileged: true,
            read_only: true,
            atomics: false,
            ..base
        });
        assert_eq!(
            opt(format.pte.privilege).get(raw),
            value("PTE_PRIVILEGE_TRUE") as u128
        );
        assert_eq!(
            opt(format.pte.read_only).get(raw),
            value("PTE_READ_ONLY_TRUE") as u128
        );
        assert_eq!(
            opt(format.pte.atomic_disable).get(raw),
            value("PTE_ATOMIC_DISABLE_TRUE") as u128
        );
        let pde = u128::from(
            Pde {
                table: TableAddr::video(0x1000),
            }
            .encode(format)
            .unwrap(),
        );
        assert_eq!(
            opt(format.pde.no_ats).get(pde),
            value("PDE_NO_ATS_TRUE") as u128
        );
    }
    assert_eq!(
        format.pte.valid.get(pte(base)),
        value("PTE_VALID_TRUE") as u128
    );
    println!("ver{version}: {checked} field positions and the enumerated values match {source}");
}

#[test]
fn ver2_fields_match_hwref() {
    check_version(2, &Format::VER2);
}

#[test]
fn ver3_fields_match_hwref() {
    check_version(3, &Format::VER3);
}

#[test]
fn header_expressions_evaluate() {
    let h = Headers::new();
    assert_eq!(h.eval("(1*32+20+11)", &[]), Ok(63));
    assert_eq!(h.eval("(35-3)", &[]), Ok(32));
    assert_eq!(h.eval("63", &[]), Ok(63));
    assert_eq!(h.eval("(64-3)", &[]), Ok(61));
    assert!(h.eval("1+", &[]).is_err());
    let p = parse(
        "#define NV_MMU_VER3_PTE_X (1*32+20+11):(35-3) /* x */\n#define NV_MMU_VER3_PTE_Y 0x4\n",
        "NV_MMU_VER3_",
    );
    assert_eq!(p.fields["NV_MMU_VER3_PTE_X"], Field::new(63, 32));
    assert_eq!(p.values["NV_MMU_VER3_PTE_Y"], 4);
}
