//! The cubin loader against nvcc's real cubins for sm_80..sm_120, checked field by field against
//! NVIDIA's own reading of the same files (`cuobjdump -elf`, committed beside them).

use nvbare_core::cubin::{Cubin, CubinError, R_CUDA_64};
use std::collections::HashMap;
use std::path::PathBuf;

const ARCHS: [u32; 7] = [75, 80, 86, 89, 90, 100, 120];
const KERNELS: [&str; 8] = [
    "empty_kernel",
    "vector_add",
    "reverse_block",
    "local_array",
    "store_value",
    "count_launches",
    "window_addresses",
    "dims",
];

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/cubin")
        .join(name)
}

fn cubin_bytes(sm: u32) -> Vec<u8> {
    std::fs::read(data(&format!("kernels.sm_{sm}.cubin"))).expect("test cubin")
}

/// What cuobjdump says about one cubin.
#[derive(Default, Debug)]
struct Dump {
    sm: u32,
    /// section name -> size
    sections: HashMap<String, u64>,
    /// (kernel, attribute) -> value, from `.nv.info` ("function: k(0x..)\t<what>: <v>")
    module: HashMap<(String, String), u64>,
    /// kernel -> [(attribute, value text)] from `.nv.info.<k>`
    kernel: HashMap<String, Vec<(String, String)>>,
}

fn hex(s: &str) -> u64 {
    let s = s.trim();
    u64::from_str_radix(
        s.trim_start_matches("0x"),
        if s.starts_with("0x") { 16 } else { 10 },
    )
    .unwrap_or_else(|_| panic!("number {s:?}"))
}

fn read_dump(sm: u32) -> Dump {
    let text =
        std::fs::read_to_string(data(&format!("kernels.sm_{sm}.cuobjdump-elf.txt"))).unwrap();
    let mut d = Dump::default();
    let mut lines = text.lines().peekable();
    let mut current: Option<String> = None;
    let mut attr: Option<String> = None;
    while let Some(line) = lines.next() {
        if let Some(i) = line.find(", sm=") {
            d.sm = line[i + 5..]
                .split(',')
                .next()
                .unwrap()
                .trim()
                .parse()
                .unwrap();
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        // Section table rows: Index Offset Size ES Align Type Flags Link Info Name
        if cols.len() == 10 && cols[9].starts_with('.') && u64::from_str_radix(cols[0], 16).is_ok()
        {
            d.sections.insert(
                cols[9].to_string(),
                u64::from_str_radix(cols[2], 16).unwrap(),
            );
        }
        if line.starts_with(".nv.info") {
            current = Some(line.trim().to_string());
        } else if line.starts_with('.') {
            current = None;
        }
        if let Some(a) = line.trim().strip_prefix("Attribute:") {
            attr = Some(a.trim().to_string());
        }
        if let (Some(sec), Some(a), Some(v)) = (&current, &attr, line.trim().strip_prefix("Value:"))
        {
            let v = v.trim();
            if sec == ".nv.info" {
                // "function: vector_add(0x11)\tregister count: 12"
                if let Some(rest) = v.strip_prefix("function: ") {
                    let name = rest.split('(').next().unwrap().to_string();
                    let val = rest.rsplit(':').next().unwrap();
                    d.module.insert((name, a.clone()), hex(val));
                }
            } else if let Some(k) = sec.strip_prefix(".nv.info.") {
                let mut full = v.to_string();
                if a == "EIATTR_KPARAM_INFO" {
                    full.push(' ');
                    full.push_str(lines.peek().copied().unwrap_or(""));
                }
                d.kernel
                    .entry(k.to_string())
                    .or_default()
                    .push((a.clone(), full));
            }
        }
    }
    d
}

fn field(v: &str, name: &str) -> u64 {
    let i = v.find(name).unwrap_or_else(|| panic!("{name} in {v}"));
    let rest = v[i + name.len()..]
        .trim_start()
        .trim_start_matches(':')
        .trim_start();
    hex(rest.split_whitespace().next().unwrap())
}

#[test]
fn kernels_match_cuobjdump_for_every_arch() {
    let mut checks = 0;
    for sm in ARCHS {
        let bytes = cubin_bytes(sm);
        let cubin = Cubin::parse(&bytes).unwrap();
        let dump = read_dump(sm);
        assert_eq!(cubin.sm, sm);
        assert_eq!(dump.sm, sm);
        let mut names: Vec<&str> = cubin.kernels.iter().map(|k| &*k.name).collect();
        names.sort();
        let mut want = KERNELS.to_vec();
        want.sort();
        assert_eq!(names, want, "sm_{sm} kernels");
        for k in &cubin.kernels {
            let m = |a: &str| {
                dump.module
                    .get(&(k.name.to_string(), a.to_string()))
                    .copied()
            };
            assert_eq!(
                Some(k.registers as u64),
                m("EIATTR_REGCOUNT"),
                "sm_{sm} {} registers",
                k.name
            );
            assert_eq!(
                Some(k.frame_size as u64),
                m("EIATTR_FRAME_SIZE"),
                "sm_{sm} {} frame",
                k.name
            );
            assert_eq!(
                Some(k.min_stack_size as u64),
                m("EIATTR_MIN_STACK_SIZE"),
                "sm_{sm} {} stack",
                k.name
            );
            assert_eq!(
                Some(k.code_size),
                dump.sections.get(&format!(".text.{}", k.name)).copied()
            );
            assert_eq!(
                Some(k.cbuf0_size as u64),
                dump.sections
                    .get(&format!(".nv.constant0.{}", k.name))
                    .copied()
            );
            assert_eq!(
                k.shared_size as u64,
                dump.sections
                    .get(&format!(".nv.shared.{}", k.name))
                    .copied()
                    .unwrap_or(0),
                "sm_{sm} {} shared",
                k.name
            );
            let attrs = &dump.kernel[&*k.name];
            let get = |a: &str| {
                attrs
                    .iter()
                    .filter(|(n, _)| n == a)
                    .map(|(_, v)| v.as_str())
                    .collect::<Vec<_>>()
            };
            let params = get("EIATTR_KPARAM_INFO");
            assert_eq!(params.len(), k.params.len(), "sm_{sm} {} params", k.name);
            for p in params {
                let (ord, off, size) = (field(p, "Ordinal"), field(p, "Offset"), field(p, "Size"));
                assert!(
                    k.params
                        .iter()
                        .any(|q| (q.ordinal as u64, q.offset as u64, q.size as u64)
                            == (ord, off, size)),
                    "sm_{sm} {} param {ord}",
                    k.name
                );
            }
            match get("EIATTR_PARAM_CBANK").first() {
                Some(v) => {
                    let packed = hex(v.split_whitespace().nth(1).unwrap());
                    assert_eq!(k.param_offset as u64, packed & 0xffff);
                    assert_eq!(k.param_size as u64, packed >> 16);
                }
                None => assert_eq!(k.param_size, 0),
            }
            if let Some(v) = get("EIATTR_CBANK_PARAM_SIZE").first() {
                assert_eq!(k.param_size as u64, hex(v));
            }
            assert_eq!(
                k.barriers as u64,
                get("EIATTR_NUM_BARRIERS").first().map_or(0, |v| hex(v))
            );
            checks += 11;
        }
    }
    eprintln!(
        "{checks} kernel attributes checked against cuobjdump over {} archs",
        ARCHS.len()
    );
}

#[test]
fn parameter_offsets_follow_the_c_signature() {
    for sm in ARCHS {
        let bytes = cubin_bytes(sm);
        let cubin = Cubin::parse(&bytes).unwrap();
        let k = cubin.kernel("vector_add").unwrap();
        let layout: Vec<(u16, u16)> = k.params.iter().map(|p| (p.offset, p.size)).collect();
        assert_eq!(layout, [(0, 8), (8, 8), (16, 8), (24, 4)]);
        assert_eq!(k.param_size, 28);
        // nvcc 13 for sm_90 puts parameters at 0x210 (h200-machine.md); sm_8x 0x160; sm_1xx 0x380.
        let expect = match sm {
            90 => 0x210,
            100 | 120 => 0x380,
            _ => 0x160,
        };
        assert_eq!(k.param_offset, expect, "sm_{sm}");
        assert_eq!(cubin.kernel("local_array").unwrap().min_stack_size, 0x100);
        assert!(matches!(
            cubin.kernel("nope"),
            Err(CubinError::NoSuchKernel(_))
        ));
    }
}

#[test]
fn relocation_puts_the_global_variable_address_into_bank_4() {
    for sm in ARCHS {
        let bytes = cubin_bytes(sm);
        let cubin = Cubin::parse(&bytes).unwrap();
        let base = 0x7_0000_0000u64;
        let image = cubin.load_image(base).unwrap();
        let elf = cubin.elf();
        let bank4 = elf.find_section(".nv.constant4").unwrap();
        let global = elf.find_section(".nv.global").unwrap();
        let off = image.section_offsets[bank4].unwrap() as usize;
        let got = u64::from_le_bytes(image.bytes[off..off + 8].try_into().unwrap());
        assert_eq!(got, image.section_va(global).unwrap(), "sm_{sm}");
        assert_eq!(R_CUDA_64, 2);
        let k = cubin.kernel("count_launches").unwrap();
        assert!(
            k.constant_banks
                .iter()
                .any(|b| b.bank == 4 && b.section == bank4)
        );
        // Code is copied unchanged and 128-byte aligned.
        let text = k.text_section;
        let t = image.section_offsets[text].unwrap() as usize;
        assert_eq!(t % 128, 0);
        assert_eq!(
            &image.bytes[t..t + k.code_size as usize],
            elf.contents(text).unwrap()
        );
    }
}

#[test]
fn malformed_cubins_are_typed_errors_never_panics() {
    let good = cubin_bytes(90);
    assert_eq!(Cubin::parse(b"not an elf").unwrap_err(), CubinError::NotElf);
    assert_eq!(Cubin::parse(&[]).unwrap_err(), CubinError::NotElf);
    assert_eq!(
        Cubin::parse(&good[..10]).unwrap_err(),
        CubinError::Truncated {
            what: "ELF identification",
            offset: 0,
            len: 16
        }
    );
    let mut x86 = good.clone();
    x86[18] = 62;
    assert_eq!(
        Cubin::parse(&x86).unwrap_err(),
        CubinError::NotCuda { machine: 62 }
    );
    let mut be = good.clone();
    be[5] = 2;
    assert!(matches!(
        Cubin::parse(&be),
        Err(CubinError::NotElf64LittleEndian { .. })
    ));
    // Every truncation point fails cleanly.
    for len in (0..good.len()).step_by(7) {
        assert!(
            Cubin::parse(&good[..len]).is_err(),
            "truncated to {len} parsed"
        );
    }
    // Single-byte corruptions anywhere: Ok or a typed error, and loading never panics.
    for i in (0..good.len()).step_by(3) {
        let mut bad = good.clone();
        bad[i] ^= 0xa5;
        if let Ok(c) = Cubin::parse(&bad) {
            let _ = c.load_image(0x1000_0000);
            let msg = format!("{:?}", c.kernels.first());
            assert!(!msg.is_empty());
        } else if let Err(e) = Cubin::parse(&bad) {
            assert!(!e.to_string().is_empty());
        }
    }
}

/// Inputs the fuzzer (`core/fuzz`, target `cubin_parse`) once crashed on: the same pipeline
/// must now end in values or typed errors.
#[test]
fn fuzz_regressions_do_not_panic() {
    use nvbare_core::launch::{self, ComputeContext, LaunchConfig};
    use nvbare_core::qmd::QmdVersion;
    let dir = data("fuzz-regressions");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        n += 1;
        let Ok(cubin) = Cubin::parse(&bytes) else {
            continue;
        };
        let Ok(image) = cubin.load_image(0x10_0000_0000) else {
            continue;
        };
        for (sm, qmd_version) in [
            (75, QmdVersion::V2),
            (80, QmdVersion::V3),
            (90, QmdVersion::V4),
            (100, QmdVersion::V5),
        ] {
            let ctx = ComputeContext {
                qmd_version,
                sm,
                shared_window: 0x7294_0000_0000,
                local_window: 0x7293_0000_0000,
                local_memory_per_thread: 0x1000,
            };
            for k in &cubin.kernels {
                let params = vec![0u8; (k.param_size as usize).min(1 << 16)];
                let cfg = LaunchConfig {
                    grid: [2, 1, 1],
                    block: [64, 1, 1],
                    dynamic_shared: 0,
                };
                let _ = launch::prepare(&ctx, &image, k, &cfg, &params, 0x20_0000_0000);
            }
        }
    }
    assert!(n >= 1);
}

#[test]
fn an_owned_kernel_record_outlives_the_cubin_bytes() {
    let owned = {
        let bytes = cubin_bytes(90);
        let cubin = Cubin::parse(&bytes).unwrap();
        let k = cubin.kernel("vector_add").unwrap().clone();
        let owned = k.clone().into_owned();
        assert_eq!(owned, k);
        owned
        // `bytes` and `cubin` are gone here.
    };
    assert_eq!(owned.name, "vector_add");
    assert_eq!(owned.param_size, 28);
}
