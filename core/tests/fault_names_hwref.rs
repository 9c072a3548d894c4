//! Checks every name and value of `nvbare_core::fault_names` against the headers they come
//! from, in both directions (each table entry is in the header, each header code is in the
//! table), so a typo or a missed code cannot pass:
//! - SM warp and global ESR codes against NVIDIA's nvgpu `hw_gr_ga100.h` / `hw_gr_tu104.h`
//!   (MIT-licensed, kept in `core/tests/data/hwref-nvgpu/`, from NVIDIA's linux-nvgpu tree
//!   at commit 6ecfb593d), since OpenRM publishes no graphics hwref;
//! - MMU fault and access types against OpenRM 570.144's Blackwell `dev_fault.h` (gb100 and
//!   gb202), found at `$NVBARE_REFERENCE` or `../../shared/reference` (skipped with a
//!   message when absent, a failure when `NVBARE_REQUIRE_REFERENCE` is set).
//!
//! It also checks the facts the module's notes rest on: no published `dev_gr.h` /
//! `dev_graphics_nobundle.h` for Hopper or Blackwell, no fault types in Hopper's `dev_fault.h`.

// Shared with regs_hwref.rs, which uses the rest of it.
#[allow(dead_code, unused_imports)]
#[path = "regs_hwref/headers.rs"]
mod headers;

use headers::{Defines, Lookup, load_file};
use nvbare_core::chip::Arch;
use nvbare_core::fault_names::{
    self, CodeName, MMU_ACCESS_TYPES_GB100, MMU_FAULT_TYPES_GB100, SM_GLOBAL_ERRORS_GA100,
    SM_GLOBAL_ERRORS_TU104, SM_WARP_ERRORS_GA100, SM_WARP_ERRORS_TU104,
};
use nvbare_hwref::Define;
use std::path::{Path, PathBuf};

const WARP: &str = "gr_gpc0_tpc0_sm0_hww_warp_esr_error_";
const GLOBAL: &str = "gr_gpc0_tpc0_sm0_hww_global_esr_";
const GLOBAL_REPORT: &str = "gr_gpc0_tpc0_sm0_hww_global_esr_report_mask_";

fn nvgpu_header(chip: &str) -> Defines {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/hwref-nvgpu")
        .join(format!("hw_gr_{chip}.h"));
    load_file(&path)
}

/// The value of a define's body (numbers, parentheses, `+ - *`; no other define).
fn eval(define: &Define) -> u64 {
    Defines::new()
        .eval(&define.body, &[])
        .unwrap_or_else(|e| panic!("{}: {e}", define.body))
}

/// `(name suffix, value)` of every define `<prefix><suffix><ending>()` in `defines`.
fn codes(defines: &Defines, prefix: &str, ending: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = defines
        .names()
        .map(|name| (name, defines.definitions(name)))
        .filter_map(|(name, all)| {
            let suffix = name.strip_prefix(prefix)?.strip_suffix(ending)?;
            let define = all.iter().find(|d| d.param.as_deref() == Some(""))?;
            Some((suffix.to_uppercase(), eval(define)))
        })
        .collect();
    out.sort();
    out
}

fn table(t: &[CodeName]) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = t
        .iter()
        .map(|c| (c.name.to_owned(), u64::from(c.value)))
        .collect();
    out.sort();
    out
}

fn check_sm(chip: &str, warp: &[CodeName], global: &[CodeName]) {
    let defines = nvgpu_header(chip);
    // Warp errors: `_f()` values (NONE also as `_v()`), shift 0, so both are the field value.
    let mut from_header = codes(&defines, WARP, "_f");
    for (name, value) in codes(&defines, WARP, "_v") {
        if !from_header.iter().any(|(n, _)| *n == name) {
            from_header.push((name, value));
        }
    }
    from_header.sort();
    assert_eq!(table(warp), from_header, "{chip} warp ESR errors");

    // The error field is bits 15:0.
    let field = defines
        .definitions("gr_gpc0_tpc0_sm0_hww_warp_esr_error_v")
        .iter()
        .find(|d| d.param.as_deref() == Some("r"))
        .unwrap_or_else(|| panic!("{chip}: no warp_esr_error_v(r)"));
    let body: String = field.body.split_whitespace().collect();
    assert_eq!(body, "(((r)>>0U)&0xffffU)", "{chip}");
    assert_eq!(fault_names::WARP_ESR_ERROR_MASK, 0xffff);

    // Global bits: `_pending_f()`, and the report mask's `_report_f()` (same bit layout;
    // where a bit has both they must agree).
    let pending = codes(&defines, GLOBAL, "_pending_f");
    let reported = codes(&defines, GLOBAL_REPORT, "_report_f");
    let mut from_header = reported.clone();
    for (name, value) in &pending {
        match reported.iter().find(|(n, _)| n == name) {
            Some((_, v)) => assert_eq!(v, value, "{chip} {name}: pending vs report mask"),
            None => from_header.push((name.clone(), *value)),
        }
    }
    from_header.sort();
    assert_eq!(table(global), from_header, "{chip} global ESR bits");
}

#[test]
fn sm_codes_match_nvgpu_ga100_and_tu104() {
    check_sm("ga100", SM_WARP_ERRORS_GA100, SM_GLOBAL_ERRORS_GA100);
    check_sm("tu104", SM_WARP_ERRORS_TU104, SM_GLOBAL_ERRORS_TU104);
    // Where the two generations share a name, they share its value.
    for c in SM_WARP_ERRORS_GA100 {
        if let Some(d) = SM_WARP_ERRORS_TU104.iter().find(|d| d.name == c.name) {
            assert_eq!(c.value, d.value, "{}", c.name);
        }
    }
    // And the functions serve those tables.
    assert_eq!(
        fault_names::sm_warp_errors(Arch::Hopper),
        SM_WARP_ERRORS_GA100
    );
    assert_eq!(
        fault_names::sm_warp_errors(Arch::BlackwellGb10x),
        SM_WARP_ERRORS_GA100
    );
    assert_eq!(
        fault_names::sm_warp_errors(Arch::Turing),
        SM_WARP_ERRORS_TU104
    );
}

#[test]
fn warp_field_matches_tu104_and_ga100_lists_none() {
    let tu104 = nvgpu_header("tu104");
    let define = tu104
        .definitions("gr_gpc0_tpc0_sm0_hww_warp_esr_wrap_id_m")
        .iter()
        .find(|d| d.param.as_deref() == Some(""))
        .expect("tu104: wrap_id_m()");
    let body: String = define.body.split_whitespace().collect();
    assert_eq!(body, "(U32(0xffU)<<16U)");
    assert_eq!(fault_names::WARP_ESR_WARP_ID_SHIFT, 16);
    assert_eq!(fault_names::WARP_ESR_WARP_ID_MASK, 0xff);
    assert_eq!(fault_names::sm_warp_id(0x0305_000e), 5);
    // The note on the constant rests on this: GA100's header has no such field.
    let ga100 = nvgpu_header("ga100");
    assert!(
        ga100
            .names()
            .all(|n| !n.starts_with("gr_gpc0_tpc0_sm0_hww_warp_esr_wrap_id"))
    );
}

fn published_dir() -> Option<PathBuf> {
    let reference = match std::env::var_os("NVBARE_REFERENCE") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference"),
    };
    let dir = reference.join("open-gpu-kernel-modules-570.144/src/common/inc/swref/published");
    if dir.join("nv_ref.h").is_file() {
        return Some(dir);
    }
    let message = format!(
        "fault-names-hwref: SKIPPED: hwref headers not found under {} (set NVBARE_REFERENCE)",
        dir.display()
    );
    assert!(
        std::env::var_os("NVBARE_REQUIRE_REFERENCE").is_none(),
        "{message}"
    );
    println!("{message}");
    None
}

/// `(suffix, value)` of every object-like `<prefix><suffix>` whose value is a number.
fn object_codes(defines: &Defines, prefix: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = defines
        .names()
        .map(|name| (name, defines.definitions(name)))
        .filter_map(|(name, all)| {
            let suffix = name.strip_prefix(prefix)?;
            let define = all.iter().find(|d| d.param.is_none())?;
            // Field ranges (`hi:lo`) are not codes.
            if define.body.contains(':') {
                return None;
            }
            Some((suffix.to_owned(), eval(define)))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn mmu_codes_match_blackwell_dev_fault_h() {
    let Some(published) = published_dir() else {
        return;
    };
    for chip in ["blackwell/gb100", "blackwell/gb202"] {
        let defines = load_file(&published.join(chip).join("dev_fault.h"));
        assert_eq!(
            table(MMU_FAULT_TYPES_GB100),
            object_codes(&defines, "NV_PFAULT_FAULT_TYPE_"),
            "{chip} fault types"
        );
        // The 4-bit VIRT_/PHYS_ encoding; VIRT_ATOMIC is VIRT_ATOMIC_STRONG's other name.
        let mut access = object_codes(&defines, "NV_PFAULT_ACCESS_TYPE_");
        let alias = access
            .iter()
            .position(|(n, _)| n == "VIRT_ATOMIC")
            .expect("VIRT_ATOMIC");
        let (_, alias_value) = access.remove(alias);
        assert!(
            access
                .iter()
                .any(|(n, v)| n == "VIRT_ATOMIC_STRONG" && *v == alias_value)
        );
        access.retain(|(n, _)| n.starts_with("VIRT_") || n.starts_with("PHYS_"));
        assert_eq!(table(MMU_ACCESS_TYPES_GB100), access, "{chip} access types");
    }
    for arch in [Arch::Hopper, Arch::BlackwellGb10x, Arch::BlackwellGb20x] {
        assert_eq!(
            fault_names::mmu_fault_types(arch),
            Some(MMU_FAULT_TYPES_GB100)
        );
    }
}

#[test]
fn the_sources_noted_in_the_module_are_still_the_nearest() {
    let Some(published) = published_dir() else {
        return;
    };
    // No graphics hwref published for Hopper or Blackwell (nor any family).
    for family in ["turing", "ampere", "ada", "hopper", "blackwell"] {
        for chip in std::fs::read_dir(published.join(family)).unwrap() {
            let dir = chip.unwrap().path();
            for header in ["dev_gr.h", "dev_graphics_nobundle.h"] {
                assert!(
                    !dir.join(header).exists(),
                    "{} is published now: take the SM codes from it",
                    dir.join(header).display()
                );
            }
        }
    }
    // Hopper's dev_fault.h names no fault or access types (so gb100's serve).
    let gh100 = load_file(&published.join("hopper/gh100/dev_fault.h"));
    assert!(
        !gh100
            .names()
            .any(|k| k.starts_with("NV_PFAULT_FAULT_TYPE_")
                || k.starts_with("NV_PFAULT_ACCESS_TYPE_")),
        "gh100's dev_fault.h names fault types now: check Hopper against it"
    );
}
