//! The decoder's own QMD field table, checked against NVIDIA's QMD headers (parsed here).

use nvbare_sim::decode::qmd::{Bits, Table, V2, V3, V4, V5};
use std::collections::HashMap;
use std::path::PathBuf;

fn shared(rel: &str) -> PathBuf {
    let base = std::env::var_os("NVBARE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    base.join(rel)
}

/// Evaluates `a+(i)*s`-style expressions after `(i)` was replaced by a number.
fn eval(e: &str) -> u32 {
    let e: String = e
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '(' && *c != ')')
        .collect();
    e.split('+')
        .map(|term| {
            term.split('*')
                .map(|f| f.parse::<u32>().unwrap())
                .product::<u32>()
        })
        .sum()
}

fn header(file: &str, prefix: &str) -> HashMap<String, String> {
    let text = std::fs::read_to_string(shared(&format!(
        "reference/open-gpu-doc/classes/compute/{file}"
    )))
    .unwrap_or_else(|e| panic!("{file}: {e}; set NVBARE_SHARED to the shared/ folder"));
    let mut out = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line
            .strip_prefix("#define ")
            .and_then(|r| r.strip_prefix(prefix))
        else {
            continue;
        };
        let Some(mw) = rest.find("MW(") else { continue };
        let name = rest[..mw].trim().trim_end_matches("(i)").to_string();
        out.insert(
            name,
            rest[mw + 3..].trim().trim_end_matches(')').to_string(),
        );
    }
    out
}

fn position(body: &str, index: u32) -> (u32, u32) {
    let body = body.replace("(i)", &index.to_string());
    // The separating ':' is the one outside parentheses.
    let mut depth = 0i32;
    let k = body
        .char_indices()
        .find(|&(_, c)| {
            depth += (c == '(') as i32 - (c == ')') as i32;
            c == ':' && depth == 0
        })
        .unwrap()
        .0;
    (eval(&body[..k]), eval(&body[k + 1..]))
}

fn check_bits(h: &HashMap<String, String>, b: Bits, index: u32, file: &str) {
    let body = h
        .get(b.name)
        .unwrap_or_else(|| panic!("{file}: no {}", b.name));
    let indexed = body.contains("(i)");
    assert_eq!(indexed, b.stride != 0, "{file}: {} indexing", b.name);
    let (hi, lo) = position(body, index);
    let (bhi, blo) = (b.hi + index * b.stride, b.lo + index * b.stride);
    assert_eq!((bhi, blo), (hi, lo), "{file}: {}({index})", b.name);
}

fn check(t: &Table, file: &str, prefix: &str) -> usize {
    let h = header(file, prefix);
    let mut n = 0;
    for &f in t.fields {
        check_bits(&h, f, 0, file);
        n += 1;
    }
    for f in t.cbuf {
        for i in 0..8 {
            check_bits(&h, f, i, file);
            n += 1;
        }
    }
    for (slot, r) in t.releases.iter().enumerate() {
        for f in r {
            // Families hold element 0's bits plus a slot offset already; check the element.
            let elem = if f.stride != 0 {
                Bits {
                    hi: f.hi - slot as u32 * f.stride,
                    lo: f.lo - slot as u32 * f.stride,
                    ..*f
                }
            } else {
                *f
            };
            check_bits(&h, elem, if f.stride != 0 { slot as u32 } else { 0 }, file);
            n += 1;
        }
    }
    for r in t.releases32 {
        for f in r.fields() {
            check_bits(&h, f, 0, file);
            n += 1;
        }
    }
    n
}

#[test]
fn decoder_tables_match_headers() {
    let n2 = check(&V2, "clc5c0qmd.h", "NVC5C0_QMDV02_03_");
    let n3 = check(&V3, "clc6c0qmd.h", "NVC6C0_QMDV03_00_");
    let n4 = check(&V4, "clcbc0qmd.h", "NVCBC0_QMDV04_00_");
    let n5 = check(&V5, "clcec0qmd.h", "NVCEC0_QMDV05_00_");
    eprintln!("decoder QMD fields checked: v2 {n2}, v3 {n3}, v4 {n4}, v5 {n5}");
    assert!(n2 >= 66 && n3 >= 68 && n4 >= 68 && n5 >= 68);
}
