//! Checks the constants of this module (status codes, class ids, escape and command
//! numbers, flag fields and values) against NVIDIA's headers of both branches.
//!
//! The headers are read from `$NVBARE_REFERENCE`, else `shared/reference` beside the
//! checkout. When they are absent each test prints that it skipped and why.

extern crate std;

use std::path::{Path, PathBuf};
use std::string::{String, ToString};
use std::vec::Vec;
use std::{format, fs, println};

use nvbare_hwref::{Headers, Lookup};

use super::field::BitField;

const BRANCHES: [&str; 2] = [
    "open-gpu-kernel-modules-570.144",
    "open-gpu-kernel-modules-580.142",
];
const SDK_INC: &str = "src/common/sdk/nvidia/inc";
const ESCAPE_H: &str = "src/nvidia/arch/nvalloc/unix/include/nv_escape.h";

fn reference_root() -> PathBuf {
    nvbare_hwref::reference_root(env!("CARGO_MANIFEST_DIR"))
}

/// The branch directory, or `None` (after saying so) when the reference is absent.
fn branch_dir(branch: &str, test: &str) -> Option<PathBuf> {
    let dir = reference_root().join(branch);
    if dir.join(SDK_INC).is_dir() {
        Some(dir)
    } else {
        println!(
            "{test}: SKIPPED, {} not found (set NVBARE_REFERENCE)",
            dir.display()
        );
        None
    }
}

/// Every `#define` of the headers loaded (nvbare's one header reader, `nvbare-hwref`); the
/// first definition of a name wins.
struct Defines(Headers);

impl Default for Defines {
    fn default() -> Self {
        Self(Headers::first_wins())
    }
}

impl Defines {
    fn load(dirs: &[PathBuf], files: &[PathBuf]) -> Self {
        let mut d = Defines::default();
        for dir in dirs {
            d.0.add_dir(dir, true)
                .expect("reference directory is readable");
        }
        for f in files {
            let _ = d.0.add_file(f);
        }
        d
    }

    fn add_text(&mut self, text: &str) {
        self.0.add_text(text, "header");
    }

    /// A `high:low` field definition.
    fn field(&self, name: &str) -> Result<BitField, String> {
        let (hi, lo) = self
            .0
            .field(name)?
            .ok_or(format!("{name} is not defined"))?;
        let bits = |v: u64| u32::try_from(v).map_err(|e| format!("{name}: {e}"));
        BitField::try_word32(bits(hi)?, bits(lo)?).ok_or(format!(
            "{name} = {hi}:{lo} is not a field of a 32-bit word"
        ))
    }

    /// The value of an object-like macro made of numbers, other macros, `BIT(n)`, parens
    /// and C operators.
    fn value(&self, name: &str) -> Result<u64, String> {
        self.0.value(name)
    }
}

/// A Rust constant and the C macro it claims to equal.
enum Claim {
    Value(&'static str, u64),
    Field(&'static str, BitField),
}

fn value(name: &'static str, v: impl Into<u64>) -> Claim {
    Claim::Value(name, v.into())
}

fn field(name: &'static str, f: BitField) -> Claim {
    Claim::Field(name, f)
}

/// Checks every claim against one branch's defines; returns the mismatches.
fn check_claims(defs: &Defines, branch: &str, claims: &[Claim]) -> Vec<String> {
    let mut bad = Vec::new();
    for c in claims {
        match c {
            Claim::Value(name, want) => match defs.value(name) {
                Ok(got) if got == *want => {}
                Ok(got) => bad.push(format!("{branch}: {name}: C 0x{got:x} != Rust 0x{want:x}")),
                Err(e) => bad.push(format!("{branch}: {e}")),
            },
            Claim::Field(name, want) => match defs.field(name) {
                Ok(got) if got == *want => {}
                Ok(got) => bad.push(format!("{branch}: {name}: C {got:?} != Rust {want:?}")),
                Err(e) => bad.push(format!("{branch}: {e}")),
            },
        }
    }
    bad
}

/// The defines of one branch's SDK headers plus `nv_escape.h`.
fn branch_defines(dir: &Path) -> Defines {
    Defines::load(&[dir.join(SDK_INC)], &[dir.join(ESCAPE_H)])
}

#[path = "header_claims.rs"]
mod claims;

#[test]
fn constants_match_both_header_branches() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for branch in BRANCHES {
        let Some(dir) = branch_dir(branch, "constants_match_both_header_branches") else {
            return;
        };
        let defs = branch_defines(&dir);
        let mut claims = claims::common();
        claims.extend(if branch.ends_with("570.144") {
            claims::only_570()
        } else {
            claims::only_580()
        });
        checked += claims.len();
        bad.extend(check_claims(&defs, branch, &claims));
    }
    assert!(
        bad.is_empty(),
        "{} of {checked} claims wrong:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn class_ids_match_their_headers() {
    for branch in BRANCHES {
        let Some(dir) = branch_dir(branch, "class_ids_match_their_headers") else {
            return;
        };
        for c in super::classes::ALL {
            let path = dir.join(SDK_INC).join(c.header);
            let text = fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{branch}: {} for {}: {e}", c.header, c.name));
            let mut defs = Defines::default();
            defs.add_text(&text);
            let got = defs
                .value(c.name)
                .unwrap_or_else(|e| panic!("{branch} {}: {e}", c.header));
            assert_eq!(got, u64::from(c.id), "{branch}: {} in {}", c.name, c.header);
        }
    }
}

#[test]
fn control_commands_match_their_headers() {
    for branch in BRANCHES {
        let Some(dir) = branch_dir(branch, "control_commands_match_their_headers") else {
            return;
        };
        for (name, header, cmd) in super::ctrl::cmd::ALL {
            let path = dir.join(SDK_INC).join("ctrl").join(header);
            let mut defs = Defines::default();
            defs.add_text(&fs::read_to_string(&path).unwrap_or_else(|e| panic!("{header}: {e}")));
            let got = defs
                .value(name)
                .unwrap_or_else(|e| panic!("{branch} {header}: {e}"));
            assert_eq!(got, u64::from(*cmd), "{branch}: {name}");
        }
    }
}

/// `NV_STATUS_CODE(NAME, value, "text")` lines of one branch's `nvstatuscodes.h`.
fn header_status_codes(dir: &Path) -> Vec<(String, u32, String)> {
    let text = fs::read_to_string(dir.join(SDK_INC).join("nvstatuscodes.h")).expect("readable");
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(args) = line.trim().strip_prefix("NV_STATUS_CODE(") else {
            continue;
        };
        let (name, rest) = args.split_once(',').expect("NAME,");
        let (value, rest) = rest.split_once(',').expect("value,");
        // The text is the quoted string; a line may end in a `//` comment after the `)`.
        let text = rest.split('"').nth(1).expect("quoted text");
        let value = u32::from_str_radix(value.trim().trim_start_matches("0x"), 16).expect("hex");
        out.push((name.trim().to_string(), value, text.to_string()));
    }
    out
}

#[test]
fn every_status_code_of_both_headers_is_known_with_its_text() {
    use super::status::{ALL, NvStatus};
    let mut per_branch = Vec::new();
    for branch in BRANCHES {
        let Some(dir) = branch_dir(branch, "every_status_code_of_both_headers") else {
            return;
        };
        let codes = header_status_codes(&dir);
        assert!(
            codes.len() > 100,
            "{branch}: parsed only {} codes",
            codes.len()
        );
        for (name, value, text) in &codes {
            let s = NvStatus(*value);
            assert_eq!(s.name(), Some(name.as_str()), "{branch}: 0x{value:x}");
            assert_eq!(s.text(), Some(text.as_str()), "{branch}: {name}");
        }
        per_branch.push(codes);
    }
    let (r570, r580) = (&per_branch[0], &per_branch[1]);
    assert_eq!(ALL.len(), r580.len(), "the Rust list is exactly 580's");
    let added: Vec<u32> = r580
        .iter()
        .filter(|(n, _, _)| !r570.iter().any(|(m, _, _)| m == n))
        .map(|&(_, v, _)| v)
        .collect();
    let claimed: Vec<u32> = NvStatus::ADDED_IN_580.iter().map(|s| s.0).collect();
    assert_eq!(added, claimed, "codes 580 added over 570");
}

#[test]
fn evaluator_handles_the_header_idioms() {
    let mut d = Defines::default();
    d.add_text(
        "#define A (0x10U)\n#define B A /* c */\n#define C (B << 4) | 0x1\n#define F 7:4\n\
         #define G BIT(3)\n#define H \\\n  (A + 2)\n#define M(x) x\n",
    );
    assert_eq!(d.value("B"), Ok(0x10));
    assert_eq!(d.value("C"), Ok(0x101));
    assert_eq!(d.value("G"), Ok(8));
    assert_eq!(d.value("H"), Ok(0x12));
    assert_eq!(d.field("F"), Ok(BitField { hi: 7, lo: 4 }));
    assert!(d.value("M").is_err(), "function-like macros are not values");
    assert!(d.value("NOPE").is_err());
}
