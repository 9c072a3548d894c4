//! Generates, compiles and runs the C side of the layout check, and compares.

use super::{Group, StubHeader};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the C compiler says about one struct or field, next to what Rust says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The group the struct is in.
    pub group: &'static str,
    /// The C type.
    pub c_type: &'static str,
    /// The Rust type.
    pub rust: &'static str,
    /// `"sizeof"`, `"_Alignof"`, or `"<member> offset"` / `"<member> size"`.
    pub what: String,
    /// The C value.
    pub c_value: usize,
    /// The Rust value.
    pub rust_value: usize,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}] {} (Rust {}): {}: C {} != Rust {}",
            self.group, self.c_type, self.rust, self.what, self.c_value, self.rust_value
        )
    }
}

/// Why the check failed.
#[derive(Clone, Debug, Default)]
pub struct Failure {
    /// Values that differ.
    pub mismatches: Vec<Mismatch>,
    /// Groups whose C program did not compile or run, with the compiler's words.
    pub broken_groups: Vec<(String, String)>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (group, why) in &self.broken_groups {
            writeln!(f, "group {group}: {why}")?;
        }
        for m in &self.mismatches {
            writeln!(f, "{m}")?;
        }
        write!(
            f,
            "{} mismatches, {} groups that did not build",
            self.mismatches.len(),
            self.broken_groups.len()
        )
    }
}

/// Counts of what was compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Structs compared.
    pub structs: usize,
    /// Fields compared.
    pub fields: usize,
}

/// The reference root: `$NVBARE_REFERENCE`, else `shared/reference` next to the checkout (the
/// one definition, `nvbare_hwref::reference_root`). The headers themselves are read by the C
/// compiler here, the most independent reader of their layouts there is.
pub fn reference_root() -> PathBuf {
    let root = nvbare_hwref::reference_root(env!("CARGO_MANIFEST_DIR"));
    root.canonicalize().unwrap_or(root)
}

/// The C program for one group: prints `S <struct> <size> <align>` and
/// `F <struct> <field> <offset> <size>` lines.
pub fn c_program(group: &Group) -> String {
    let mut c = String::from("#include <stddef.h>\n#include <stdio.h>\n");
    c.push_str(group.prelude);
    c.push('\n');
    for header in &group.headers {
        c.push_str(&format!("#include \"{header}\"\n"));
    }
    c.push_str("\nint main(void)\n{\n");
    for (si, s) in group.structs.iter().enumerate() {
        let t = s.c_type;
        c.push_str(&format!(
            "    printf(\"S {si} %zu %zu\\n\", sizeof({t}), (size_t)_Alignof({t}));\n"
        ));
        for (fi, field) in s.fields.iter().enumerate() {
            let m = field.c;
            c.push_str(&format!(
                "    printf(\"F {si} {fi} %zu %zu\\n\", offsetof({t}, {m}), sizeof((({t} *)0)->{m}));\n"
            ));
        }
    }
    c.push_str("    return 0;\n}\n");
    c
}

/// Compiles and runs every group's C program under `work_dir` and compares the values
/// with the Rust ones. Every mismatch of every group is collected before failing.
pub fn check(
    groups: &[Group],
    stubs: &[StubHeader],
    root: &Path,
    work_dir: &Path,
) -> Result<Summary, Failure> {
    let mut failure = Failure::default();
    let mut summary = Summary {
        structs: 0,
        fields: 0,
    };
    let stub_dir = work_dir.join("stubs");
    for stub in stubs {
        let path = stub_dir.join(stub.path);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, stub.text));
        if let Err(e) = written {
            failure.broken_groups.push((
                "<stubs>".into(),
                format!("cannot write {}: {e}", path.display()),
            ));
        }
    }
    for group in groups {
        match run_group(group, root, &stub_dir, work_dir) {
            Ok(output) => compare(group, &output, &mut failure, &mut summary),
            Err(why) => failure.broken_groups.push((group.name.to_string(), why)),
        }
    }
    if failure.mismatches.is_empty() && failure.broken_groups.is_empty() {
        Ok(summary)
    } else {
        Err(failure)
    }
}

fn run_group(
    group: &Group,
    root: &Path,
    stub_dir: &Path,
    work_dir: &Path,
) -> Result<String, String> {
    std::fs::create_dir_all(work_dir)
        .map_err(|e| format!("cannot create {}: {e}", work_dir.display()))?;
    let source = work_dir.join(format!("{}.c", group.name));
    let binary = work_dir.join(format!("{}.bin", group.name));
    std::fs::write(&source, c_program(group))
        .map_err(|e| format!("cannot write {}: {e}", source.display()))?;
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cc = Command::new(&compiler);
    cc.arg("-std=gnu11")
        .arg("-w")
        .arg("-o")
        .arg(&binary)
        .arg(&source);
    // The stubs come first: they stand for headers that, in OpenRM's tree, pull in its
    // generated nvoc headers (gpu.h -> g_gpu_nvoc.h), which a reference tree holds only in
    // part. Searched after the tree, as they once were, they stop working the day the tree
    // gains such a header without its generated half.
    cc.arg(format!("-I{}", stub_dir.display()));
    for dir in &group.include_dirs {
        cc.arg(format!("-I{}", root.join(dir).display()));
    }
    let out = cc
        .output()
        .map_err(|e| format!("cannot run the C compiler `{compiler}` (set CC): {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("error"))
            .take(12)
            .collect();
        return Err(format!(
            "{} failed on {}:\n  {}",
            compiler,
            source.display(),
            errors.join("\n  ")
        ));
    }
    let run = Command::new(&binary)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    if !run.status.success() {
        return Err(format!("{} exited with {}", binary.display(), run.status));
    }
    Ok(String::from_utf8_lossy(&run.stdout).into_owned())
}

fn compare(group: &Group, output: &str, failure: &mut Failure, summary: &mut Summary) {
    let mut push = |si: usize, what: String, c_value: usize, rust_value: usize| {
        if c_value != rust_value {
            let s = &group.structs[si];
            failure.mismatches.push(Mismatch {
                group: group.name,
                c_type: s.c_type,
                rust: s.rust,
                what,
                c_value,
                rust_value,
            });
        }
    };
    let mut seen_structs = 0;
    let mut seen_fields = 0;
    for line in output.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let n: Vec<usize> = words
            .iter()
            .skip(1)
            .filter_map(|w| w.parse().ok())
            .collect();
        match (words.first(), n.as_slice()) {
            (Some(&"S"), &[si, size, align]) if si < group.structs.len() => {
                let s = &group.structs[si];
                push(si, "sizeof".into(), size, s.size);
                push(si, "_Alignof".into(), align, s.align);
                seen_structs += 1;
            }
            (Some(&"F"), &[si, fi, offset, size])
                if si < group.structs.len() && fi < group.structs[si].fields.len() =>
            {
                let field = &group.structs[si].fields[fi];
                push(si, format!("{} offset", field.c), offset, field.offset);
                push(si, format!("{} size", field.c), size, field.size);
                seen_fields += 1;
            }
            _ => failure.broken_groups.push((
                group.name.to_string(),
                format!("unexpected output line `{line}`"),
            )),
        }
    }
    let want_fields: usize = group.structs.iter().map(|s| s.fields.len()).sum();
    if seen_structs != group.structs.len() || seen_fields != want_fields {
        failure.broken_groups.push((
            group.name.to_string(),
            format!(
                "printed {seen_structs}/{} structs, {seen_fields}/{want_fields} fields",
                group.structs.len()
            ),
        ));
    }
    summary.structs += seen_structs;
    summary.fields += seen_fields;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{Group, Struct};

    /// A C struct declared in the prelude, so the self-test needs no reference tree.
    const PRELUDE: &str = "typedef struct { unsigned int a; unsigned short b; unsigned long long c; } SELFTEST_T;\n\
                           typedef struct __attribute__((packed)) { unsigned char x; unsigned long long y; } SELFTEST_PACKED_T;";

    #[derive(Clone, Copy)]
    #[repr(C)]
    struct Right {
        a: u32,
        b: u16,
        _pad: [u8; 2],
        c: u64,
    }

    /// Claims `b` is a `u32`: only `b`'s size differs (`c` stays at offset 8).
    #[derive(Clone, Copy)]
    #[repr(C)]
    struct WrongSize {
        a: u32,
        b: u32,
        c: u64,
    }

    /// Forgets the alignment of `c`.
    #[derive(Clone, Copy)]
    #[repr(C, packed)]
    struct WrongPacking {
        a: u32,
        b: u16,
        c: u64,
    }

    #[derive(Clone, Copy)]
    #[repr(C, packed)]
    struct RightPacked {
        x: u8,
        y: u64,
    }

    fn group(structs: Vec<Struct>) -> Group {
        Group {
            name: "selftest",
            include_dirs: vec![],
            prelude: PRELUDE,
            headers: vec![],
            structs,
        }
    }

    fn work_dir(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!(
            "nvbare-abi-layout-selftest-{tag}-{}",
            std::process::id()
        ))
    }

    /// Runs `check` in a fresh scratch directory and removes it afterwards.
    fn check_in(tag: &str, groups: &[Group]) -> Result<Summary, Failure> {
        let dir = work_dir(tag);
        let result = check(groups, &[], Path::new("/nonexistent"), &dir);
        let _ = std::fs::remove_dir_all(&dir);
        result
    }

    #[test]
    fn matching_structs_pass_and_are_counted() {
        let g = group(vec![
            crate::layout!("SELFTEST_T" => Right { "a" => a, "b" => b, "c" => c }),
            crate::layout!("SELFTEST_PACKED_T" => RightPacked { "x" => x, "y" => y }),
        ]);
        let summary = check_in("ok", &[g]).expect("layouts match");
        assert_eq!(
            summary,
            Summary {
                structs: 2,
                fields: 5
            }
        );
    }

    #[test]
    fn every_wrong_value_is_reported_with_struct_field_and_both_values() {
        let g = group(vec![
            crate::layout!("SELFTEST_T" => WrongSize { "a" => a, "b" => b, "c" => c }),
            crate::layout!("SELFTEST_T" => WrongPacking { "a" => a, "b" => b, "c" => c }),
        ]);
        let failure = check_in("bad", &[g]).expect_err("must fail");
        assert!(failure.broken_groups.is_empty(), "{failure}");
        let found: Vec<(&str, &str, usize, usize)> = failure
            .mismatches
            .iter()
            .map(|m| (m.rust, m.what.as_str(), m.c_value, m.rust_value))
            .collect();
        assert_eq!(
            found,
            vec![
                ("WrongSize", "b size", 2, 4),
                ("WrongPacking", "sizeof", 16, 14),
                ("WrongPacking", "_Alignof", 8, 1),
                ("WrongPacking", "c offset", 8, 6),
            ]
        );
        let text = failure.to_string();
        assert!(
            text.contains("SELFTEST_T (Rust WrongSize): b size: C 2 != Rust 4"),
            "{text}"
        );
    }

    #[test]
    fn a_group_that_does_not_compile_is_reported_not_skipped() {
        let mut g = group(vec![crate::layout!("NO_SUCH_TYPE_T" => Right { "a" => a })]);
        g.name = "selftest_broken";
        let failure = check_in("broken", &[g]).expect_err("must fail");
        assert_eq!(failure.broken_groups.len(), 1);
        assert!(
            failure.broken_groups[0].1.contains("NO_SUCH_TYPE_T"),
            "{}",
            failure.broken_groups[0].1
        );
    }

    #[test]
    fn c_program_prints_every_struct_and_field() {
        let g = group(vec![
            crate::layout!("SELFTEST_T" => Right { "a" => a, "c" => c }),
        ]);
        let c = c_program(&g);
        assert!(c.contains("sizeof(SELFTEST_T)"));
        assert!(c.contains("offsetof(SELFTEST_T, a)"));
        assert!(c.contains("sizeof(((SELFTEST_T *)0)->c)"));
    }
}
