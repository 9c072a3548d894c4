//! Checks every register address and field position that `nvbare_core::regs` claims against
//! NVIDIA's published hwref headers (open-gpu-kernel-modules 570.144,
//! `src/common/inc/swref/published/<arch>/<chip>/dev_*.h` plus the chip-independent
//! `nv_ref.h`), per chip, and the chip ids of `nvbare_core::chip` against `nv_ref.h` and
//! `ctrl2080mc.h`.
//!
//! The headers are found at `$NVBARE_REFERENCE` or `<CARGO_MANIFEST_DIR>/../../shared/reference`.
//! Without them the test prints that it skipped (it never passes silently), or fails when
//! `NVBARE_REQUIRE_REFERENCE` is set.

#[path = "regs_hwref/headers.rs"]
mod headers;

use std::fs;
use std::path::{Path, PathBuf};

use nvbare_core::chip::{Arch, Chip};
use nvbare_core::regs::{HwrefAddress, HwrefRegister, hwref_bases, hwref_table};

use headers::{ChipHeaders, Lookup, load_dir, load_file, split_range};

const OGKM: &str = "open-gpu-kernel-modules-570.144";

/// The chips whose headers are checked, with their directory under `published/`.
const CHECKED_CHIPS: &[(Chip, &str)] = &[
    (Chip::TU102, "turing/tu102"),
    (Chip::GA100, "ampere/ga100"),
    (Chip::GA102, "ampere/ga102"),
    (Chip::AD102, "ada/ad102"),
    (Chip::GH100, "hopper/gh100"),
    (Chip::GB100, "blackwell/gb100"),
    (Chip::GB202, "blackwell/gb202"),
];

fn reference_dir() -> PathBuf {
    match std::env::var_os("NVBARE_REFERENCE") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference"),
    }
}

fn published_dir() -> Option<PathBuf> {
    let dir = reference_dir()
        .join(OGKM)
        .join("src/common/inc/swref/published");
    if dir.join("nv_ref.h").is_file() {
        Some(dir)
    } else {
        let message = format!(
            "regs-hwref: SKIPPED: hwref headers not found under {} (set NVBARE_REFERENCE)",
            dir.display()
        );
        // Where the headers must be there (CI), a missing directory is a failure.
        assert!(
            std::env::var_os("NVBARE_REQUIRE_REFERENCE").is_none(),
            "{message}"
        );
        println!("{message}");
        None
    }
}

/// Tallies of one run.
#[derive(Default)]
struct Tally {
    registers: usize,
    fields: usize,
    absent_registers: Vec<String>,
    absent_fields: usize,
    narrower_fields: usize,
    bases: usize,
    failures: Vec<String>,
}

fn check_register(chip: Chip, headers: &ChipHeaders, reg: &HwrefRegister, tally: &mut Tally) {
    let marked_absent = reg.absent_in.contains(&chip);
    let function_like = !matches!(reg.address, HwrefAddress::Value(_));
    let define = match headers.define(reg.name, function_like) {
        Ok(define) => define,
        Err(err) => {
            tally.failures.push(format!("{chip}: {err}"));
            return;
        }
    };
    let Some(define) = define else {
        if marked_absent {
            tally
                .absent_registers
                .push(format!("{}@{}", reg.name, chip.name().to_lowercase()));
        } else {
            tally.failures.push(format!(
                "{chip}: {}{} is not in the {chip} headers: fix the definition or mark it \
                 `absent [{chip:?}]`",
                reg.name,
                if function_like { "(i)" } else { "" }
            ));
        }
        return;
    };
    if marked_absent {
        tally.failures.push(format!(
            "{chip}: {} is marked absent but {} defines it ({})",
            reg.name, define.file, define.body
        ));
        return;
    }
    let address_ok = match reg.address {
        HwrefAddress::Value(value) => compare(
            chip,
            reg.name,
            headers.eval(&define.body, &[]),
            u64::from(value),
            tally,
        ),
        HwrefAddress::Element { index, value } => compare(
            chip,
            &format!("{}({index})", reg.name),
            headers.call(reg.name, u64::from(index)),
            u64::from(value),
            tally,
        ),
        HwrefAddress::Indexed {
            base,
            stride,
            count,
        } => {
            let mut ok = true;
            for i in 0..count {
                ok &= compare(
                    chip,
                    &format!("{}({i})", reg.name),
                    headers.call(reg.name, u64::from(i)),
                    u64::from(base) + u64::from(stride) * u64::from(i),
                    tally,
                );
            }
            let size_name = format!("{}__SIZE_1", reg.name);
            if headers.has(&size_name) {
                ok &= compare(
                    chip,
                    &size_name,
                    headers.value(&size_name),
                    u64::from(count),
                    tally,
                );
            }
            ok
        }
    };
    if address_ok {
        tally.registers += 1;
    }
    for field in reg.fields {
        let name = format!("{}_{}", reg.name, field.name);
        let field_absent = field.absent_in.contains(&chip);
        match headers.field(&name) {
            Err(err) => tally.failures.push(format!("{chip}: {err}")),
            Ok(None) if field_absent => tally.absent_fields += 1,
            Ok(None) => tally.failures.push(format!(
                "{chip}: field {name} is not in the {chip} headers: fix it or mark it \
                 `absent [{chip:?}]`"
            )),
            Ok(Some(found)) if field_absent => tally.failures.push(format!(
                "{chip}: field {name} is marked absent but the headers define it as {}:{}",
                found.0, found.1
            )),
            Ok(Some((hi, lo))) => {
                let (claimed_hi, claimed_lo) = (u64::from(field.hi), u64::from(field.lo));
                let ok = if field.narrower_in.contains(&chip) {
                    // Marked narrower on this chip: same low bit, fewer bits.
                    lo == claimed_lo && hi < claimed_hi
                } else {
                    (hi, lo) == (claimed_hi, claimed_lo)
                };
                if ok {
                    tally.fields += 1;
                    if field.narrower_in.contains(&chip) {
                        tally.narrower_fields += 1;
                    }
                } else {
                    tally.failures.push(format!(
                        "{chip}: field {name}: we claim {}:{}, the header says {hi}:{lo}",
                        field.hi, field.lo
                    ));
                }
            }
        }
    }
}

fn compare(
    chip: Chip,
    what: &str,
    found: Result<u64, String>,
    claimed: u64,
    tally: &mut Tally,
) -> bool {
    match found {
        Ok(found) if found == claimed => true,
        Ok(found) => {
            tally.failures.push(format!(
                "{chip}: {what}: we claim {claimed:#x}, the header says {found:#x}"
            ));
            false
        }
        Err(err) => {
            tally.failures.push(format!("{chip}: {what}: {err}"));
            false
        }
    }
}

fn check_bases(chip: Chip, headers: &ChipHeaders, tally: &mut Tally) {
    for base in hwref_bases() {
        let marked_absent = base.absent_in.contains(&chip);
        let define = headers
            .define(base.name, false)
            .ok()
            .flatten()
            .map(|d| (d, false))
            .or_else(|| {
                headers
                    .define(base.name, true)
                    .ok()
                    .flatten()
                    .map(|d| (d, true))
            });
        match (define, marked_absent) {
            (None, true) => {
                tally
                    .absent_registers
                    .push(format!("{}@{}", base.name, chip.name().to_lowercase()))
            }
            (None, false) => tally.failures.push(format!(
                "{chip}: base {} is not in the {chip} headers: fix it or mark it absent",
                base.name
            )),
            (Some((define, _)), true) => tally.failures.push(format!(
                "{chip}: base {} is marked absent but {} defines it",
                base.name, define.file
            )),
            (Some((define, function_like)), false) => {
                let found = if function_like {
                    headers.call(base.name, 0)
                } else if let Some((_, lo)) = split_range(&define.body) {
                    headers.eval(lo, &[])
                } else {
                    headers.eval(&define.body, &[])
                };
                if compare(chip, base.name, found, u64::from(base.value), tally) {
                    tally.bases += 1;
                }
            }
        }
    }
}

#[test]
fn registers_match_hwref_headers() {
    let Some(published) = published_dir() else {
        return;
    };
    let common = load_file(&published.join("nv_ref.h"));
    let mut tally = Tally::default();
    let mut all_names: Vec<&str> = Arch::ALL
        .iter()
        .flat_map(|&arch| hwref_table(arch))
        .map(|reg| reg.name)
        .collect();
    all_names.sort_unstable();
    all_names.dedup();
    let mut not_on_arch = 0;
    for &(chip, dir) in CHECKED_CHIPS {
        let headers = ChipHeaders {
            own: load_dir(&published.join(dir)),
            common: &common,
        };
        let table = hwref_table(chip.arch());
        assert!(!table.is_empty(), "{chip}: empty register table");
        for reg in &table {
            check_register(chip, &headers, reg, &mut tally);
        }
        check_bases(chip, &headers, &mut tally);
        // Registers that do not exist on this architecture are counted, not hidden.
        not_on_arch += all_names.len() - table.len();
    }
    let chips: Vec<String> = CHECKED_CHIPS
        .iter()
        .map(|(c, _)| c.name().to_lowercase())
        .collect();
    println!(
        "regs-hwref: checked {} registers, {} fields across {}",
        tally.registers,
        tally.fields,
        chips.join(" ")
    );
    println!(
        "regs-hwref: also {} engine/window bases; {} register and {} field defines marked \
         absent from a chip's published headers (each verified absent); {not_on_arch} \
         (register, chip) pairs not checked because the register does not exist on that \
         chip's architecture; {} fields verified narrower on a chip as marked",
        tally.bases,
        tally.absent_registers.len(),
        tally.absent_fields,
        tally.narrower_fields
    );
    // Group the absent marks by define, so a reader sees which chips lack what.
    let mut grouped: Vec<(String, Vec<String>)> = Vec::new();
    for entry in &tally.absent_registers {
        let (name, chip) = entry.split_once('@').unwrap_or((entry, "?"));
        match grouped.iter_mut().find(|(n, _)| n == name) {
            Some((_, chips)) => chips.push(chip.to_string()),
            None => grouped.push((name.to_string(), vec![chip.to_string()])),
        }
    }
    for (name, chips) in &grouped {
        println!(
            "regs-hwref:   absent from published headers: {name}: {}",
            chips.join(" ")
        );
    }
    assert!(
        tally.failures.is_empty(),
        "{} hwref mismatches:\n  {}",
        tally.failures.len(),
        tally.failures.join("\n  ")
    );
    assert!(tally.registers > 0 && tally.fields > 0);
}

#[test]
fn chip_ids_match_nv_ref_and_ctrl2080mc() {
    let Some(published) = published_dir() else {
        return;
    };
    let nv_ref = load_file(&published.join("nv_ref.h"));
    let ctrl = reference_dir()
        .join(OGKM)
        .join("src/common/sdk/nvidia/inc/ctrl/ctrl2080/ctrl2080mc.h");
    let mc = load_file(&ctrl);
    let headers = ChipHeaders {
        own: mc,
        common: &nv_ref,
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    for arch in Arch::ALL {
        let name = format!("NV_PMC_BOOT_42_ARCHITECTURE_{}", arch.hwref_name());
        match headers.value(&name) {
            Ok(v) if v == u64::from(arch.boot42_architecture()) => checked += 1,
            other => failures.push(format!(
                "{name}: {other:?} vs {:#x}",
                arch.boot42_architecture()
            )),
        }
        let name = format!(
            "NV2080_CTRL_MC_ARCH_INFO_ARCHITECTURE_{}",
            arch.hwref_name()
        );
        match headers.value(&name) {
            Ok(v) if v == u64::from(arch.boot42_architecture()) << 4 => checked += 1,
            other => failures.push(format!("{name}: {other:?}")),
        }
    }
    for &chip in Chip::ALL {
        let name = format!("NV2080_CTRL_MC_ARCH_INFO_IMPLEMENTATION_{}", chip.name());
        match headers.value(&name) {
            Ok(v) if v == u64::from(chip.boot42_implementation()) => checked += 1,
            other => failures.push(format!(
                "{name}: {other:?} vs {:#x}",
                chip.boot42_implementation()
            )),
        }
    }
    println!("regs-hwref: checked {checked} architecture and implementation ids");
    assert!(
        failures.is_empty(),
        "chip id mismatches:\n  {}",
        failures.join("\n  ")
    );
}

/// Whether `headers` define `reg` at the address the definition claims (`None`: not defined).
fn address_agrees(headers: &ChipHeaders, reg: &HwrefRegister) -> Result<Option<bool>, String> {
    let function_like = !matches!(reg.address, HwrefAddress::Value(_));
    let Some(define) = headers.own.define(reg.name, function_like)? else {
        return Ok(None);
    };
    let agrees = match reg.address {
        HwrefAddress::Value(value) => headers.eval(&define.body, &[])? == u64::from(value),
        HwrefAddress::Element { index, value } => {
            headers.call(reg.name, u64::from(index))? == u64::from(value)
        }
        HwrefAddress::Indexed {
            base,
            stride,
            count,
        } => (0..count).all(|i| {
            headers.call(reg.name, u64::from(i)).ok()
                == Some(u64::from(base) + u64::from(stride) * u64::from(i))
        }),
    };
    Ok(Some(agrees))
}

/// A register the checked chip's headers lack is looked up in every other published chip
/// (TU102, GA100, GB100, ...): where one defines it, the address must agree; field positions
/// that differ there are printed (they are another architecture's layout, not a failure).
#[test]
fn absent_registers_agree_with_other_chips_headers() {
    let Some(published) = published_dir() else {
        return;
    };
    let common = load_file(&published.join("nv_ref.h"));
    let mut sibling_dirs: Vec<(String, PathBuf)> = Vec::new();
    for family in fs::read_dir(&published).unwrap() {
        let family = family.unwrap().path();
        if family.is_dir() {
            for chip_dir in fs::read_dir(&family).unwrap() {
                let chip_dir = chip_dir.unwrap().path();
                let name = chip_dir.file_name().unwrap().to_string_lossy().into_owned();
                sibling_dirs.push((name, chip_dir));
            }
        }
    }
    sibling_dirs.sort();
    let siblings: Vec<(String, ChipHeaders)> = sibling_dirs
        .iter()
        .map(|(name, dir)| {
            (
                name.clone(),
                ChipHeaders {
                    own: load_dir(dir),
                    common: &common,
                },
            )
        })
        .collect();

    let (mut marks, mut corroborated) = (0, 0);
    let mut unsourced: Vec<String> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for &(chip, _) in CHECKED_CHIPS {
        let own = chip.name().to_lowercase();
        for reg in hwref_table(chip.arch())
            .iter()
            .filter(|r| r.absent_in.contains(&chip))
        {
            marks += 1;
            let mut agreeing: Vec<&str> = Vec::new();
            for (sibling, headers) in siblings.iter().filter(|(name, _)| *name != own) {
                match address_agrees(headers, reg) {
                    Ok(None) => {}
                    Ok(Some(true)) => agreeing.push(sibling),
                    Ok(Some(false)) => failures.push(format!(
                        "{}: address differs in {sibling} (claimed for {chip})",
                        reg.name
                    )),
                    Err(err) => failures.push(format!("{sibling}: {err}")),
                }
                for field in reg.fields {
                    let name = format!("{}_{}", reg.name, field.name);
                    let marked_narrower = field
                        .narrower_in
                        .iter()
                        .any(|c| c.name().to_lowercase() == *sibling);
                    if let Ok(Some((hi, lo))) = headers.field(&name)
                        && (hi, lo) != (u64::from(field.hi), u64::from(field.lo))
                        && !marked_narrower
                    {
                        let note = format!(
                            "{name} is {hi}:{lo} in {sibling}; claimed {}:{}",
                            field.hi, field.lo
                        );
                        if !notes.contains(&note) {
                            notes.push(note);
                        }
                    }
                }
            }
            if agreeing.is_empty() {
                let entry = format!("{}@{own}", reg.name);
                unsourced.push(entry);
            } else {
                corroborated += 1;
            }
        }
    }
    println!(
        "regs-hwref: {marks} absent marks: {corroborated} corroborated by another chip's \
         header, {} with no published define for any chip",
        unsourced.len()
    );
    println!("regs-hwref:   no published define: {}", unsourced.join(" "));
    for note in &notes {
        println!("regs-hwref:   note: {note}");
    }
    assert!(
        failures.is_empty(),
        "address disagreements:\n  {}",
        failures.join("\n  ")
    );
}
