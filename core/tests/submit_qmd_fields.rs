//! Every QMD field position this crate uses, checked against NVIDIA's published QMD headers
//! (`open-gpu-doc/classes/compute/cl{c6c0,cbc0,cec0}qmd.h`), which this test parses.

mod submit_common;
use submit_common as common;

use nvbare_core::qmd::{QmdField, QmdVersion};
use std::collections::HashMap;

/// Evaluates the integer expressions NVIDIA writes inside `MW(...)`: digits, `+`, `*`, parens.
fn eval(expr: &str) -> u32 {
    fn sum(s: &[u8], i: &mut usize) -> u32 {
        let mut v = product(s, i);
        while *i < s.len() && s[*i] == b'+' {
            *i += 1;
            v += product(s, i);
        }
        v
    }
    fn product(s: &[u8], i: &mut usize) -> u32 {
        let mut v = atom(s, i);
        while *i < s.len() && s[*i] == b'*' {
            *i += 1;
            v *= atom(s, i);
        }
        v
    }
    fn atom(s: &[u8], i: &mut usize) -> u32 {
        if s[*i] == b'(' {
            *i += 1;
            let v = sum(s, i);
            assert_eq!(s[*i], b')');
            *i += 1;
            v
        } else {
            let start = *i;
            while *i < s.len() && s[*i].is_ascii_digit() {
                *i += 1;
            }
            std::str::from_utf8(&s[start..*i]).unwrap().parse().unwrap()
        }
    }
    let s: Vec<u8> = expr.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let mut i = 0;
    let v = sum(&s, &mut i);
    assert_eq!(i, s.len(), "unparsed rest in {expr}");
    v
}

/// `NAME` -> the `MW(...)` body, for every `#define <prefix>NAME[(i)] MW(...)` in the header.
fn header_fields(file: &str, prefix: &str) -> HashMap<String, String> {
    let text = std::fs::read_to_string(common::shared_path(&format!(
        "reference/open-gpu-doc/classes/compute/{file}"
    )))
    .expect("QMD header");
    let mut out = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("#define ") else {
            continue;
        };
        let Some(rest) = rest.strip_prefix(prefix) else {
            continue;
        };
        let Some(mw) = rest.find("MW(") else { continue };
        let name = rest[..mw].trim().trim_end_matches("(i)").to_string();
        let body = rest[mw + 3..].trim().strip_suffix(')').unwrap().to_string();
        out.insert(name, body);
    }
    out
}

/// The `(hi, lo)` of header field `body` for element `index`.
fn position(body: &str, index: Option<u32>) -> (u32, u32) {
    let body = match index {
        Some(i) => body.replace("(i)", &format!("({i})")),
        None => body.to_string(),
    };
    // Split at the ':' outside parentheses.
    let mut depth = 0;
    let mut split = None;
    for (k, c) in body.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ':' if depth == 0 => split = Some(k),
            _ => {}
        }
    }
    let k = split.expect("hi:lo");
    (eval(&body[..k]), eval(&body[k + 1..]))
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
        let indexed = body.contains("(i)");
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
    for v in [QmdVersion::V3, QmdVersion::V4, QmdVersion::V5] {
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
