//! A second, independent check of the layout entries: the layouts clang computed for
//! tinygrad's ctypes bindings (`tinygrad/runtime/autogen/nv/nv.py` and `nv_gpu.py`,
//! tinygrad 0.11.0), dumped by `tests/fixtures/abi-layout/tinygrad_layouts.py` (for every
//! C type an entry names) into a committed fixture.
//! Unlike `abi_layout` this needs no C compiler or reference tree, and it also covers
//! `PACKED_REGISTRY_*`, whose C declarations `abi_layout` has to restate.

use super::Struct;
use std::collections::HashMap;

/// The fixture: `S <module> <c_type> <size>` and `F <module> <c_type> <member> <offset>
/// <size>` lines (`<c_type>` may be `struct foo`).
const FIXTURE: &str = include_str!("../../fixtures/abi-layout/tinygrad_0.11.0.txt");

/// Differences from tinygrad that are tinygrad's own choices, not errors: (C type,
/// what differs, why). Each must still occur, so a stale entry is noticed.
const KNOWN_DIFFERENCES: &[(&str, &str, &str)] = &[
    (
        "GSP_MSG_QUEUE_ELEMENT",
        "sizeof",
        "tinygrad's binding ends the struct with `padding` instead of the header's `rpc` member \
         (it reads the RPC header separately); abi_layout checks the real 80 bytes",
    ),
    (
        "rpc_os_error_log_v17_00",
        "sizeof",
        "tinygrad's bindings come from an earlier 570 header without the trailing \
         `preemptiveRemovalPreviousXid`; abi_layout checks 570.144's 272 bytes",
    ),
];

/// One struct's layout as the fixture gives it.
#[derive(Default)]
struct Layout {
    size: usize,
    members: HashMap<String, (usize, usize)>,
}

/// Parses the fixture; panics with the line on malformed input (it is our own file).
fn parse(text: &str) -> HashMap<String, Layout> {
    let mut out: HashMap<String, Layout> = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let words: Vec<&str> = line.split_whitespace().collect();
        let number = |w: &str| {
            w.parse::<usize>()
                .unwrap_or_else(|_| panic!("bad line `{line}`"))
        };
        match words.as_slice() {
            ["S", _module, name @ .., size] => {
                out.entry(name.join(" ")).or_default().size = number(size);
            }
            ["F", _module, rest @ ..] if rest.len() >= 4 => {
                let (name, tail) = rest.split_at(rest.len() - 3);
                let entry = out.entry(name.join(" ")).or_default();
                entry
                    .members
                    .insert(tail[0].to_string(), (number(tail[1]), number(tail[2])));
            }
            _ => panic!("bad fixture line `{line}`"),
        }
    }
    out
}

fn known(c_type: &str, what: &str) -> bool {
    KNOWN_DIFFERENCES
        .iter()
        .any(|&(t, w, _)| t == c_type && w == what)
}

/// Compares the entries with the fixture; returns (structs compared, fields compared,
/// mismatch descriptions).
fn compare(structs: &[Struct], fixture: &HashMap<String, Layout>) -> (usize, usize, Vec<String>) {
    let (mut n_structs, mut n_fields, mut bad) = (0, 0, Vec::new());
    for s in structs {
        let Some(theirs) = fixture.get(s.c_type) else {
            continue;
        };
        n_structs += 1;
        if theirs.size != s.size && !known(s.c_type, "sizeof") {
            bad.push(format!(
                "{} ({}): sizeof tinygrad {} != Rust {}",
                s.c_type, s.rust, theirs.size, s.size
            ));
        }
        for f in &s.fields {
            // A flexible array's first element (`name[0]`) is, for tinygrad, a zero-size
            // member `name`: compare where it starts.
            let (name, offset_only) = match f.c.strip_suffix("[0]") {
                Some(array) => (array, true),
                None => (f.c, false),
            };
            let Some(&(offset, size)) = theirs.members.get(name) else {
                continue;
            };
            n_fields += 1;
            let size = if offset_only { f.size } else { size };
            if (offset, size) != (f.offset, f.size) {
                bad.push(format!(
                    "{}.{} ({}): tinygrad offset {offset} size {size} != Rust offset {} size {}",
                    s.c_type, f.c, s.rust, f.offset, f.size
                ));
            }
        }
    }
    (n_structs, n_fields, bad)
}

/// The entries of the 570 groups (GSP-RM 570.144 and the RM API of 570.144), which is
/// what tinygrad 0.11.0's bindings describe; the 580.142 kernel-driver groups differ from
/// them by design (e.g. `NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE` 100 → 200).
fn entries_570() -> Vec<Struct> {
    super::all_groups()
        .into_iter()
        .filter(|g| g.name.starts_with("gsp") || g.name.contains("570"))
        .flat_map(|g| g.structs)
        .collect()
}

#[test]
fn gsp_entries_match_tinygrad_clang_layouts() {
    let fixture = parse(FIXTURE);
    let structs: Vec<Struct> = super::gsp::groups()
        .into_iter()
        .flat_map(|g| g.structs)
        .collect();
    let (n_structs, n_fields, bad) = compare(&structs, &fixture);
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
    for &(c_type, what, why) in KNOWN_DIFFERENCES {
        let ours = structs
            .iter()
            .find(|s| s.c_type == c_type)
            .expect("known difference names an entry");
        let theirs = fixture
            .get(c_type)
            .expect("known difference names a fixture struct");
        assert_ne!(
            theirs.size, ours.size,
            "{c_type} {what} no longer differs ({why}); drop the entry"
        );
    }
    // 51 of the 63 GSP entries have a tinygrad counterpart; most of their fields do.
    assert!(
        n_structs >= 50 && n_fields >= 390,
        "only {n_structs} structs, {n_fields} fields compared"
    );
    println!("tinygrad cross-check (GSP): {n_structs} structs, {n_fields} fields");
}

#[test]
fn all_570_entries_match_tinygrad_clang_layouts() {
    let fixture = parse(FIXTURE);
    let (n_structs, n_fields, bad) = compare(&entries_570(), &fixture);
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
    println!("tinygrad cross-check (all 570 groups): {n_structs} structs, {n_fields} fields");
}

#[test]
fn a_wrong_entry_is_caught_by_the_cross_check() {
    let fixture = parse(FIXTURE);
    let mut s = super::gsp::groups()
        .into_iter()
        .flat_map(|g| g.structs)
        .find(|s| s.c_type == "PACKED_REGISTRY_ENTRY")
        .expect("entry present");
    // As if the 3 padding bytes after `type` had been forgotten.
    for f in &mut s.fields {
        if f.c == "data" {
            f.offset = 5;
        }
    }
    let (_, _, bad) = compare(&[s], &fixture);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].contains("PACKED_REGISTRY_ENTRY.data"), "{}", bad[0]);
}
