//! BAR0 register and config-space names for a trace, from NVIDIA's published hwref headers
//! (`open-gpu-kernel-modules/src/common/inc/swref/published/<family>/<chip>/*.h`), read at
//! run time: the simulator compiles in no names and uses no header reader of nvbare's
//! (`nvbare-hwref` is test-only), so this is a small reader of its own for the one thing it
//! needs, the address of each register define.
//!
//! A register define is one whose access comment ends in `4R` (a 32-bit register) or `4A` (an
//! array of them, `NAME(i) (BASE+(i)*STRIDE)` with `NAME__SIZE_1` elements), e.g.
//! `#define NV_THERM_I2CS_SCRATCH 0x00ad00bc /* RW-4R */`. Most are absolute BAR0 addresses;
//! some headers are relative and are placed here:
//! - `dev_vm.h` (`NV_VIRTUAL_FUNCTION_*`): at `NV_VIRTUAL_FUNCTION_FULL_PHYS_OFFSET`'s low end
//!   (0xb80000: the doorbell `NV_VIRTUAL_FUNCTION_DOORBELL` 0x30090 is BAR0 0xbb0090);
//! - `dev_falcon_v4.h` (`NV_PFALCON_*`) at `NV_PGSP`'s low end and `dev_riscv_pri.h`
//!   (`NV_PRISCV_*`) at `NV_FALCON2_GSP_BASE`, named with an `@gsp` suffix;
//! - config-space headers (`dev_nv_xve*.h`, `dev_xtl_ep_pcfg_gpu.h`, `dev_pcfg_pf0.h`) name
//!   config offsets, not BAR0;
//! - headers relative to something a trace does not see (runlist, FBIF, context images,
//!   instance memory, page tables, the XTL window) are left out.
//!
//! Names come from the chip's own directory first, then the chip-independent `nv_ref.h`, then
//! older chips' (a GB202 register only
//! Hopper's headers publish is still the same register: NVIDIA keeps addresses across
//! families). A name from another chip's headers carries that chip: `NAME (gh100)`.

use std::collections::BTreeMap;
use std::path::Path;

/// Chips whose published headers are searched, newest first.
pub const CHIPS: &[(&str, &str)] = &[
    ("blackwell", "gb202"),
    ("blackwell", "gb100"),
    ("hopper", "gh100"),
    ("ada", "ad102"),
    ("ampere", "ga102"),
    ("ampere", "ga100"),
    ("turing", "tu102"),
];

/// Headers whose register defines are offsets relative to something a trace does not see.
const SKIPPED: &[&str] = &[
    "dev_runlist.h",
    "dev_fbif_v4.h",
    "dev_ctxsw_prog.h",
    "dev_ram.h",
    "dev_mmu.h",
    "dev_xtl_ep_pri.h",
    "dev_nv_xve3g_vf.h",
    "dev_falcon_second_pri.h",
];

/// Headers of config-space registers.
const CONFIG: &[&str] = &[
    "dev_nv_xve.h",
    "dev_nv_xve_addendum.h",
    "dev_xtl_ep_pcfg_gpu.h",
    "dev_pcfg_pf0.h",
];

/// Names by offset, for BAR0 and config space.
#[derive(Clone, Debug, Default)]
pub struct RegisterNames {
    bar0: BTreeMap<u32, String>,
    config: BTreeMap<u32, String>,
}

/// One register define: name, address (relative to its header's base), and for an array
/// `(stride, count)`.
struct RegDefine {
    name: String,
    value: u32,
    array: Option<(u32, u32)>,
}

fn parse_int(s: &str) -> Option<u32> {
    let s = s.trim().trim_start_matches('(').trim_end_matches(')');
    let s = s.trim_end_matches(['U', 'u', 'L', 'l']);
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// `(BASE+(i)*STRIDE)` → (BASE, STRIDE).
fn parse_array(body: &str) -> Option<(u32, u32)> {
    let b: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    let inner = b.strip_prefix('(')?.strip_suffix(')')?;
    let (base, rest) = inner.split_once("+(i)*")?;
    Some((parse_int(base)?, parse_int(rest)?))
}

/// The register defines, sizes and range lows (`NAME hi:lo`) of one header's text.
fn scan(text: &str) -> (Vec<RegDefine>, BTreeMap<String, u32>) {
    let mut regs = Vec::new();
    let mut values = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("#define") else {
            continue;
        };
        let (code, comment) = match rest.split_once("/*") {
            Some((c, m)) => (c.trim(), m.trim_end().trim_end_matches("*/").trim()),
            None => (rest.trim(), ""),
        };
        let Some((head, body)) = code.split_once(char::is_whitespace) else {
            continue;
        };
        let body = body.trim();
        let is_reg = comment.ends_with("4R") || comment.ends_with("4A");
        if let Some(name) = head.strip_suffix("(i)") {
            if is_reg && let Some((base, stride)) = parse_array(body) {
                regs.push(RegDefine {
                    name: name.to_string(),
                    value: base,
                    array: Some((stride, 1)),
                });
            }
            continue;
        }
        if head.contains('(') {
            continue;
        }
        if let Some((_, lo)) = body.split_once(':')
            && let Some(v) = parse_int(lo)
        {
            values.insert(head.to_string(), v);
            continue;
        }
        if let Some(v) = parse_int(body) {
            if is_reg {
                regs.push(RegDefine {
                    name: head.to_string(),
                    value: v,
                    array: None,
                });
            } else {
                values.insert(head.to_string(), v);
            }
        }
    }
    for r in &mut regs {
        if let Some((_, count)) = &mut r.array {
            // A missing size names element 0 only; 256 bounds a malformed one.
            *count = values
                .get(&format!("{}__SIZE_1", r.name))
                .copied()
                .unwrap_or(1)
                .min(256);
        }
    }
    (regs, values)
}

impl RegisterNames {
    /// No names (a trace then shows offsets only).
    pub fn none() -> RegisterNames {
        RegisterNames::default()
    }

    /// The names `published` (a `swref/published` directory) gives `chip` ("gb202"), its own
    /// headers first, then older chips'. Unreadable or missing directories give fewer names,
    /// not an error (naming is a convenience; the offsets are the record).
    pub fn from_published(published: &Path, chip: &str) -> RegisterNames {
        let mut names = RegisterNames::default();
        let start = CHIPS.iter().position(|(_, c)| *c == chip).unwrap_or(0);
        // Every chip's headers first: a window base one chip's headers lack (GH100's
        // dev_vm.h has no NV_VIRTUAL_FUNCTION_FULL_PHYS_OFFSET) comes from another's.
        let mut chips = Vec::new();
        let mut any_bases: BTreeMap<String, u32> = BTreeMap::new();
        for (family, c) in &CHIPS[start..] {
            let dir = published.join(family).join(c);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
            files.sort();
            // Bases any header of this chip defines (for the relative headers).
            let mut scanned = Vec::new();
            let mut bases = BTreeMap::new();
            for f in files {
                let Ok(text) = std::fs::read_to_string(&f) else {
                    continue;
                };
                let file = f
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let (regs, values) = scan(&text);
                bases.extend(values);
                scanned.push((file, regs));
            }
            for (k, v) in &bases {
                any_bases.entry(k.clone()).or_insert(*v);
            }
            chips.push((*c, scanned, bases));
            if chips.len() == 1 {
                // The chip-independent `nv_ref.h` (NV_PMC_BOOT_42 is defined only there) right
                // after the chip's own headers, named as its own.
                if let Ok(text) = std::fs::read_to_string(published.join("nv_ref.h")) {
                    let (regs, _) = scan(&text);
                    chips.push(("", vec![("nv_ref.h".to_string(), regs)], BTreeMap::new()));
                }
            }
        }
        for (i, (c, scanned, mut bases)) in chips.into_iter().enumerate() {
            for (k, v) in &any_bases {
                bases.entry(k.clone()).or_insert(*v);
            }
            let suffix = if i == 0 || c.is_empty() {
                String::new()
            } else {
                format!(" ({c})")
            };
            for (file, regs) in scanned {
                if SKIPPED.contains(&file.as_str()) {
                    continue;
                }
                let (map, base, tag) = if CONFIG.contains(&file.as_str()) {
                    (&mut names.config, Some(0), "")
                } else if file == "dev_vm.h" {
                    let b = bases.get("NV_VIRTUAL_FUNCTION_FULL_PHYS_OFFSET").copied();
                    (&mut names.bar0, b, "")
                } else if file == "dev_falcon_v4.h" {
                    (&mut names.bar0, bases.get("NV_PGSP").copied(), " @gsp")
                } else if file == "dev_riscv_pri.h" {
                    let b = bases.get("NV_FALCON2_GSP_BASE").copied();
                    (&mut names.bar0, b, " @gsp")
                } else {
                    (&mut names.bar0, Some(0), "")
                };
                let Some(base) = base else { continue };
                for r in regs {
                    let (stride, count) = r.array.unwrap_or((0, 1));
                    for k in 0..count {
                        let at = base.wrapping_add(r.value).wrapping_add(k * stride);
                        let name = match r.array {
                            Some(_) => format!("{}({k}){tag}{suffix}", r.name),
                            None => format!("{}{tag}{suffix}", r.name),
                        };
                        map.entry(at).or_insert(name);
                    }
                }
            }
        }
        names
    }

    /// The name of BAR0 offset `offset`, if the headers have one.
    pub fn name(&self, offset: u32) -> Option<&str> {
        self.bar0.get(&offset).map(String::as_str)
    }

    /// The name of config-space offset `offset`, if the headers have one.
    pub fn config_name(&self, offset: u32) -> Option<&str> {
        self.config.get(&offset).map(String::as_str)
    }

    /// How many BAR0 offsets have names.
    pub fn len(&self) -> usize {
        self.bar0.len()
    }

    /// Whether no BAR0 offset has a name.
    pub fn is_empty(&self) -> bool {
        self.bar0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chip_is_named_from_its_own_headers_then_nv_ref_then_older_chips() {
        let root = std::env::temp_dir().join(format!("nvbare-names-{}", std::process::id()));
        let file = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        file(
            "blackwell/gb202/dev_therm.h",
            "#define NV_THERM_I2CS_SCRATCH 0x00ad00bc /* RW-4R */\n",
        );
        // GB202's dev_vm.h lacks the window base; GB100's has it.
        file(
            "blackwell/gb202/dev_vm.h",
            "#define NV_VIRTUAL_FUNCTION_DOORBELL 0x30090 /* -W-4R */\n",
        );
        file(
            "blackwell/gb100/dev_vm.h",
            "#define NV_VIRTUAL_FUNCTION_FULL_PHYS_OFFSET 0x00BBFFFF:0x00B80000 /* RW--D */\n",
        );
        file(
            "nv_ref.h",
            "#define NV_PMC_BOOT_42 0x00000A00 /* R--4R */\n#define NV_PMC_BOOT_0 0x0 /* R--4R */\n",
        );
        file(
            "hopper/gh100/dev_pmc.h",
            "#define NV_PMC_BOOT_0 0x00000000 /* R--4R */\n#define NV_PMC_X 0x4 /* R--4R */\n",
        );
        file(
            "hopper/gh100/dev_runlist.h",
            "#define NV_RUNLIST_Y 0x8 /* RW-4R */\n",
        );
        file(
            "blackwell/gb202/dev_xtl_ep_pcfg_gpu.h",
            "#define NV_EP_PCFG_GPU_VSEC_DEBUG_SEC_2 0x000002B8 /* R--4R */\n",
        );
        let n = RegisterNames::from_published(&root, "gb202");
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(n.name(0xad00bc), Some("NV_THERM_I2CS_SCRATCH"));
        assert_eq!(n.name(0xbb0090), Some("NV_VIRTUAL_FUNCTION_DOORBELL"));
        assert_eq!(n.name(0xa00), Some("NV_PMC_BOOT_42"));
        assert_eq!(
            n.name(0x0),
            Some("NV_PMC_BOOT_0"),
            "nv_ref.h before older chips"
        );
        assert_eq!(n.name(0x4), Some("NV_PMC_X (gh100)"));
        assert_eq!(n.name(0x8), None, "runlist-relative headers are left out");
        assert_eq!(n.name(0x2b8), None, "config registers are not BAR0's");
        assert_eq!(
            n.config_name(0x2b8),
            Some("NV_EP_PCFG_GPU_VSEC_DEBUG_SEC_2")
        );
    }

    #[test]
    fn registers_arrays_and_bases_are_read() {
        let text = "\
#define NV_THERM_I2CS_SCRATCH                 0x00ad00bc /* RW-4R */
#define NV_THERM_I2CS_SCRATCH_VALUE            31:0 /* RWIVF */
#define NV_PFSP_QUEUE_HEAD(i)   (0x008f2c00+(i)*8) /* RW-4A */
#define NV_PFSP_QUEUE_HEAD__SIZE_1  8 /*       */
#define NV_VIRTUAL_FUNCTION_FULL_PHYS_OFFSET 0x00BBFFFF:0x00B80000 /* RW--D */
#define NV_X_FIELD_VALUE 0x00000001 /* RW--V */
";
        let (regs, values) = scan(text);
        type Row<'a> = (&'a str, u32, Option<(u32, u32)>);
        let got: Vec<Row> = regs
            .iter()
            .map(|r| (r.name.as_str(), r.value, r.array))
            .collect();
        assert_eq!(
            got,
            [
                ("NV_THERM_I2CS_SCRATCH", 0xad00bc, None),
                ("NV_PFSP_QUEUE_HEAD", 0x8f2c00, Some((8, 8)))
            ]
        );
        assert_eq!(
            values.get("NV_VIRTUAL_FUNCTION_FULL_PHYS_OFFSET"),
            Some(&0xb80000)
        );
    }
}
