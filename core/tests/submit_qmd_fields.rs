//! Every QMD field position this crate uses, checked against NVIDIA's published QMD headers
//! (`open-gpu-doc/classes/compute/cl{c5c0,c6c0,cbc0,cec0}qmd.h`), which this test parses.

mod submit_common;
use submit_common as common;

use nvbare_core::qmd::{QmdField, QmdVersion};
use nvbare_hwref::Headers;
use std::collections::HashMap;

/// `NAME` -> (its parameter, the `MW(...)` body), for every `#define <prefix>NAME[(i)] MW(...)`
/// of the header, read with nvbare's one header reader (`nvbare-hwref`).
fn header_fields(file: &str, prefix: &str) -> HashMap<String, (Option<String>, String)> {
    let mut h = Headers::new();
    h.add_file(&common::shared_path(&format!(
        "reference/open-gpu-doc/classes/compute/{file}"
    )))
    .expect("QMD header");
    let mut out = HashMap::new();
    for name in h.names() {
        let Some(short) = name.strip_prefix(prefix) else {
            continue;
        };
        for d in h.definitions(name) {
            let Some(body) = d.body.strip_prefix("MW(").and_then(|b| b.strip_suffix(')')) else {
                continue;
            };
            out.insert(short.to_string(), (d.param.clone(), body.to_string()));
        }
    }
    out
}

/// The `(hi, lo)` of header field `(param, body)` for element `index`.
fn position((param, body): &(Option<String>, String), index: Option<u32>) -> (u32, u32) {
    let bindings: Vec<(&str, u64)> = param
        .as_deref()
        .map(|p| (p, u64::from(index.unwrap_or(0))))
        .into_iter()
        .collect();
    let (hi, lo) = nvbare_hwref::range(&Headers::new(), body, &bindings)
        .unwrap_or_else(|e| panic!("{body}: {e}"));
    (hi as u32, lo as u32)
}

fn check(version: QmdVersion, file: &str, prefix: &str) -> usize {
    let header = header_fields(file, prefix);
    assert!(
        header.len() > 100,
        "parsed only {} fields from {file}",
        header.len()
    );
    let fields: Vec<QmdField> = version.layout().fields();
    let mut seen = std::collections::HashSet::new();
    for f in &fields {
        let body = header
            .get(f.name)
            .unwrap_or_else(|| panic!("{file}: no field {prefix}{}", f.name));
        let indexed = body.0.is_some();
        assert_eq!(indexed, f.index.is_some(), "{file}: {} indexing", f.name);
        let (hi, lo) = position(body, f.index);
        assert_eq!(
            (f.bits.hi, f.bits.lo),
            (hi, lo),
            "{file}: {}({:?})",
            f.name,
            f.index
        );
        assert!(
            (f.bits.hi as usize) < version.size_bytes() * 8,
            "{} beyond the QMD",
            f.name
        );
        assert!(seen.insert((f.name, f.index)), "{} listed twice", f.name);
    }
    fields.len()
}

#[test]
fn qmd_v2_fields_match_turing_clc5c0qmd_h() {
    let n = check(QmdVersion::V2, "clc5c0qmd.h", "NVC5C0_QMDV02_03_");
    eprintln!("QMD v2: {n} field positions checked against clc5c0qmd.h");
    assert!(n >= 70);
}

/// The header's title names the version the layout writes (02_03: major 2, minor 3).
#[test]
fn qmd_v2_is_version_02_03() {
    let text = std::fs::read_to_string(common::shared_path(
        "reference/open-gpu-doc/classes/compute/clc5c0qmd.h",
    ))
    .expect("clc5c0qmd.h");
    assert!(text.contains("Queue Meta Data, Version 02_03"));
    let q = nvbare_core::qmd::Qmd::new(QmdVersion::V2);
    let l = QmdVersion::V2.layout();
    assert_eq!((q.get(l.major_version), q.get(l.minor_version)), (2, 3));
    assert_eq!(QmdVersion::for_compute_class(0xc5c0), Some(QmdVersion::V2));
}

#[test]
fn qmd_v3_fields_match_clc6c0qmd_h() {
    let n = check(QmdVersion::V3, "clc6c0qmd.h", "NVC6C0_QMDV03_00_");
    eprintln!("QMD v3: {n} field positions checked against clc6c0qmd.h");
    assert!(n >= 90);
}

#[test]
fn qmd_v3_fields_match_ada_clc9c0qmd_h() {
    let n = check(QmdVersion::V3, "clc9c0qmd.h", "NVC9C0_QMDV03_00_");
    eprintln!("QMD v3: {n} field positions checked against clc9c0qmd.h");
}

#[test]
fn qmd_v4_fields_match_clcbc0qmd_h() {
    let n = check(QmdVersion::V4, "clcbc0qmd.h", "NVCBC0_QMDV04_00_");
    eprintln!("QMD v4: {n} field positions checked against clcbc0qmd.h");
    assert!(n >= 90);
}

#[test]
fn qmd_v5_fields_match_clcec0qmd_h() {
    let n = check(QmdVersion::V5, "clcec0qmd.h", "NVCEC0_QMDV05_00_");
    eprintln!("QMD v5: {n} field positions checked against clcec0qmd.h");
    assert!(n >= 90);
}

#[test]
fn fields_of_one_version_do_not_overlap() {
    for v in [
        QmdVersion::V2,
        QmdVersion::V3,
        QmdVersion::V4,
        QmdVersion::V5,
    ] {
        let fields = v.layout().fields();
        for (i, a) in fields.iter().enumerate() {
            for b in &fields[i + 1..] {
                assert!(
                    a.bits.hi < b.bits.lo || b.bits.hi < a.bits.lo,
                    "{v:?}: {}{:?} overlaps {}{:?}",
                    a.name,
                    a.index,
                    b.name,
                    b.index
                );
            }
        }
    }
}

/// 02_03's releases carry 32-bit payloads (`RELEASE0_PAYLOAD` MW(831:800)) enabled by
/// `SEMAPHORE_RELEASE_ENABLE0`; a 64-bit payload is a typed overflow, not a silent truncation.
#[test]
fn qmd_v2_releases_are_32_bit() {
    use nvbare_core::qmd::{Qmd, QmdError};
    let mut q = Qmd::new(QmdVersion::V2);
    assert_eq!(q.release_slots(), 2);
    q.set_release(1, 0x12_3456_7890, 0xdead_beef).unwrap();
    let r = QmdVersion::V2.layout().releases[1];
    assert_eq!(q.get(r.enable), 1);
    assert_eq!(q.get(r.payload_lower), 0xdead_beef);
    assert_eq!(
        (q.get(r.addr_upper), q.get(r.addr_lower)),
        (0x12, 0x3456_7890)
    );
    assert_eq!(q.free_release_slot(), Some(0));
    let e = q.set_release(0, 0x1000, 1 << 32).unwrap_err();
    assert!(
        matches!(
            e,
            QmdError::FieldOverflow {
                field: "RELEASE0_PAYLOAD",
                ..
            }
        ),
        "{e}"
    );
    q.set_dependent(0x4_0000).unwrap();
    let d = QmdVersion::V2.layout().dependent;
    assert_eq!((q.get(d.enable), q.get(d.action)), (1, 1)); // DEPENDENT_QMD_TYPE_GRID
    assert_eq!(q.get(d.pointer_shifted8), 0x400);
}
