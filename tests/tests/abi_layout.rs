//! Checks every Rust mirror of an NVIDIA struct against NVIDIA's C headers: compiles one
//! C program per group with the system C compiler (`$CC`, else `cc`), runs it, and
//! compares `sizeof`, `_Alignof`, and each member's `offsetof` and `sizeof`.
//!
//! Runs without the libtest harness so its one-line verdict is always printed. Reference
//! headers: `$NVBARE_REFERENCE`, else `shared/reference` beside the checkout; when they
//! are absent it says SKIPPED (and why), never a silent pass.
//!
//! `NVBARE_ABI_LAYOUT_ONLY=gsp,rm` limits the run to groups whose names start with one
//! of the given prefixes (the verdict line then names the filter).

use nvbare_tests::layout::{all_groups, all_stub_headers, check};
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = check::reference_root();
    if !root.is_dir() {
        println!(
            "abi-layout: SKIPPED, reference headers not found at {} (set NVBARE_REFERENCE to shared/reference)",
            root.display()
        );
        return ExitCode::SUCCESS;
    }
    let work_dir = std::env::temp_dir().join(format!("nvbare-abi-layout-{}", std::process::id()));
    let only = std::env::var("NVBARE_ABI_LAYOUT_ONLY").unwrap_or_default();
    let prefixes: Vec<&str> = only
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let groups: Vec<_> = all_groups()
        .into_iter()
        .filter(|g| prefixes.is_empty() || prefixes.iter().any(|p| g.name.starts_with(p)))
        .collect();
    let filter_note = if prefixes.is_empty() {
        String::new()
    } else {
        format!(" (only groups {only})")
    };
    let result = check::check(&groups, &all_stub_headers(), &root, &work_dir);
    match result {
        Ok(summary) => {
            let _ = std::fs::remove_dir_all(&work_dir);
            println!(
                "abi-layout: checked {} structs, {} fields against {}{filter_note}",
                summary.structs,
                summary.fields,
                root.display()
            );
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!(
                "abi-layout: FAILED against {} (C sources kept in {})",
                root.display(),
                work_dir.display()
            );
            eprintln!("{failure}");
            ExitCode::FAILURE
        }
    }
}
