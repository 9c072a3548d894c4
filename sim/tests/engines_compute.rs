//! Compute: QMDs built here from clcbc0qmd.h / clcec0qmd.h, launched with the committed test
//! kernels' real code (read from the cubins with this test's own ELF reader), checked per
//! chip, and run by the simulator's native models; unknown kernels complete unexecuted and
//! are reported.

mod engines_rig;

use engines_rig::cubin::Cubin;
use engines_rig::qmd::{Layout, Qmd, V2, V3, V4, V5};
use engines_rig::*;
use nvbare_core::rm::GrInfo;
use nvbare_sim::device::Engine;
use nvbare_sim::memory::Access;
use nvbare_sim::units::compute::kernels::{KNOWN, code_hash};
use nvbare_sim::units::compute::known::KNOWN_SM8X;
use nvbare_sim::units::compute::limits;
use nvbare_sim::units::mmu::FAULT_PTE;
use nvbare_sim::{FaultPlan, SimChip};

/// The compute object's subchannel (tinygrad's and nvbare's choice).
const GR: u32 = 1;
/// clcbc0.h: `SEND_PCAS_A` (QMD address >> 8), `SEND_SIGNALING_PCAS2_B` (PCAS_ACTION 3:0;
/// PREFETCH_SCHEDULE 9).
const SEND_PCAS_A: u32 = 0x2b4;
const SEND_SIGNALING_PCAS2_B: u32 = 0x2c0;
/// clc5c0.h: `SEND_SIGNALING_PCAS_B` (INVALIDATE 0:0, SCHEDULE 1:1).
const SEND_SIGNALING_PCAS_B: u32 = 0x2bc;
const PREFETCH_SCHEDULE: u32 = 9;

struct Setup {
    chip: SimChip,
    class: u32,
    layout: &'static Layout,
    /// The committed test kernels for the chip's SM (their repository path).
    cubin: &'static str,
    /// Constant bank 0 offset of the parameters (EIATTR_PARAM_CBANK in the cuobjdump notes).
    param_base: u64,
}

/// The repository path of the committed test kernels for `sm` (the table every user shares).
const fn test_kernels(sm: u32) -> &'static str {
    nvbare_test_kernels::for_sm(sm)
        .expect("committed test kernels")
        .path
}

const HOPPER: Setup = Setup {
    chip: SimChip::Gh100,
    class: 0xcbc0,
    layout: &V4,
    cubin: test_kernels(90),
    param_base: 0x210,
};

const BLACKWELL: Setup = Setup {
    chip: SimChip::Gb202,
    class: 0xcec0,
    layout: &V5,
    cubin: test_kernels(120),
    param_base: 0x380,
};

/// GB100: BLACKWELL_COMPUTE_A launches QMD V05_00 too (clcdc0qmd.h), sm_100 code.
const GB100: Setup = Setup {
    chip: SimChip::Gb100,
    class: 0xcdc0,
    layout: &V5,
    cubin: test_kernels(100),
    param_base: 0x380,
};

/// GA102: AMPERE_COMPUTE_B launches QMD V03_00 (clc6c0qmd.h), sm_86 code, parameters at
/// cbuf0 0x160 (EIATTR_PARAM_CBANK 0x80160 in kernels.sm_86.cuobjdump-elf.txt).
const AMPERE: Setup = Setup {
    chip: SimChip::Ga102,
    class: 0xc7c0,
    layout: &V3,
    cubin: test_kernels(86),
    param_base: 0x160,
};

/// TU102: TURING_COMPUTE_A launches QMD V02_03 (clc5c0qmd.h), sm_75 code, parameters at cbuf0
/// 0x160 (EIATTR_PARAM_CBANK 0x80160 in kernels.sm_75.cuobjdump-elf.txt), launched with
/// SEND_SIGNALING_PCAS_B (clc5c0.h has no PCAS2_B).
const TURING: Setup = Setup {
    chip: SimChip::Tu102,
    class: 0xc5c0,
    layout: &V2,
    cubin: test_kernels(75),
    param_base: 0x160,
};

/// AD102: ADA_COMPUTE_A, QMD V03_00, sm_89 code.
const ADA: Setup = Setup {
    chip: SimChip::Ad102,
    class: 0xc9c0,
    layout: &V3,
    cubin: test_kernels(89),
    param_base: 0x160,
};

/// GA100: AMPERE_COMPUTE_A (gpuGetClassDescriptorList_GA100) launches QMD V03_00 too
/// (clc6c0qmd.h), sm_80 code, parameters at cbuf0 0x160 (kernels.sm_80.cuobjdump-elf.txt).
const A100: Setup = Setup {
    chip: SimChip::Ga100,
    class: 0xc6c0,
    layout: &V3,
    cubin: test_kernels(80),
    param_base: 0x160,
};

/// A kernel loaded into VRAM, and a constant bank 0 for it.
struct Loaded {
    prog: u64,
    cbuf0: Buffer,
}

struct Gpu {
    rig: Rig,
    ch: Channel,
    sem: Buffer,
    s: &'static Setup,
    next_release: u64,
}

impl Gpu {
    fn new(s: &'static Setup) -> Gpu {
        let mut rig = Rig::new(s.chip, FaultPlan::default());
        let sem = rig.sys_buffer(4096);
        let mut ch = rig.channel(Engine::Graphics, &[s.class]);
        let mut p = Push::new();
        p.inc(GR, SET_OBJECT, &[s.class]);
        rig.submit(&mut ch, p.words());
        Gpu {
            rig,
            ch,
            sem,
            s,
            next_release: 1,
        }
    }

    /// Loads `kernel` of `cubin` (its whole `.text` section) and makes its cbuf0 with
    /// `params` at the chip's parameter offset.
    fn load(&mut self, cubin: &str, kernel: &str, params: &[u8]) -> Loaded {
        let c = Cubin::load(cubin);
        let text = c.section(&format!(".text.{kernel}"));
        let code = self.rig.vram_buffer(text.len() as u64 + 4096);
        self.rig.write(&code, 0, &text);
        let cb = self.rig.vram_buffer(0x1000);
        self.rig.write(&cb, self.s.param_base, params);
        Loaded {
            prog: code.va,
            cbuf0: cb,
        }
    }

    /// Launches `q` and waits for its release.
    fn run(&mut self, q: &mut Qmd) {
        let release = self.next_release;
        self.next_release += 1;
        let sem = self.sem;
        q.release0(sem.va, release);
        self.launch_raw(q);
        self.rig
            .wait("the QMD's release", |r| r.read_u64(&sem, 0) == release);
        assert_eq!(self.rig.error(&self.ch), None);
    }

    /// Writes `q` to VRAM without launching it (a dependent's target); its address.
    fn launch_raw_unlaunched(&mut self, q: &Qmd) -> u64 {
        let buf = self.rig.vram_buffer(4096);
        self.rig.write(&buf, 0, &q.bytes);
        buf.va
    }

    fn launch_raw(&mut self, q: &Qmd) -> u64 {
        let buf = self.rig.vram_buffer(4096);
        self.rig.write(&buf, 0, &q.bytes);
        let mut p = Push::new();
        p.inc(GR, SEND_PCAS_A, &[(buf.va >> 8) as u32]);
        if self.s.class == 0xc5c0 {
            // SEND_SIGNALING_PCAS_B: INVALIDATE | SCHEDULE.
            p.inc(GR, SEND_SIGNALING_PCAS_B, &[0b11]);
        } else {
            p.inc(GR, SEND_SIGNALING_PCAS2_B, &[PREFETCH_SCHEDULE]);
        }
        self.rig.submit(&mut self.ch, p.words());
        buf.va
    }

    fn qmd(&self, k: &Loaded, grid: u32, block: u32) -> Qmd {
        let mut q = Qmd::new(self.s.layout);
        q.launch([grid, 1, 1], [block, 1, 1], 16, k.prog)
            .cbuf(0, k.cbuf0.va, 0x400);
        q
    }
}

fn params(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn floats(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

#[test]
fn vector_add_runs_on_every_chip() {
    // sm_100's vector_add is the same code as sm_120's: each chip runs it as its own.
    for s in [&HOPPER, &BLACKWELL, &GB100, &AMPERE, &ADA, &A100, &TURING] {
        let mut g = Gpu::new(s);
        let n = 1000u32;
        let (a, b, c) = (
            g.rig.vram_buffer(4096),
            g.rig.sys_buffer(4096),
            g.rig.vram_buffer(4096),
        );
        let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let y: Vec<f32> = (0..n).map(|i| 1.0 / (i as f32 + 1.0)).collect();
        g.rig.write(&a, 0, &floats(&x));
        g.rig.write(&b, 0, &floats(&y));
        let k = g.load(
            s.cubin,
            "vector_add",
            &params(&[a.va, b.va, c.va, u64::from(n)]),
        );
        // One more block than needed: the model honours `i < n`.
        let mut q = g.qmd(&k, n.div_ceil(128) + 1, 128);
        g.run(&mut q);
        let mut out = vec![0u8; 4 * n as usize + 4];
        g.rig.read(&c, 0, &mut out);
        for i in 0..n as usize {
            let got = f32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
            assert_eq!(got, x[i] + y[i], "{} c[{i}]", s.chip.spec().name);
        }
        assert_eq!(out[4 * n as usize..], [0; 4], "nothing past n");
        let cnt = g.rig.gpu.engine_counters();
        assert_eq!(
            (cnt.launches, cnt.kernels_modeled, cnt.kernels_not_executed),
            (1, 1, 0)
        );
    }
}

#[test]
fn the_other_test_kernels_do_what_their_source_says() {
    let mut g = Gpu::new(&HOPPER);
    let cubin = HOPPER.cubin;
    // reverse_block: each block reverses its slice.
    let data = g.rig.vram_buffer(4096);
    let v: Vec<f32> = (0..256).map(|i| i as f32).collect();
    g.rig.write(&data, 0, &floats(&v));
    let k = g.load(cubin, "reverse_block", &params(&[data.va]));
    let mut q = g.qmd(&k, 4, 64);
    g.run(&mut q);
    let mut out = vec![0u8; 1024];
    g.rig.read(&data, 0, &mut out);
    let got: Vec<f32> = out
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for blk in 0..4 {
        for t in 0..64 {
            assert_eq!(got[blk * 64 + t], (blk * 64 + 63 - t) as f32);
        }
    }

    // local_array: out[gid] = ((tid * 7 + k) & 63) * k + tid.
    let out_buf = g.rig.vram_buffer(4096);
    let k = g.load(cubin, "local_array", &params(&[out_buf.va, 5]));
    let mut q = g.qmd(&k, 2, 32);
    g.run(&mut q);
    for gid in 0..64u64 {
        let t = (gid % 32) as u32;
        assert_eq!(
            g.rig.read_u32(&out_buf, 4 * gid),
            ((t * 7 + 5) & 63) * 5 + t
        );
    }

    // dims: blockDim and gridDim.
    let dims = g.rig.sys_buffer(4096);
    let k = g.load(cubin, "dims", &params(&[dims.va]));
    let mut q = Qmd::new(HOPPER.layout);
    q.launch([3, 2, 1], [8, 4, 2], 16, k.prog)
        .cbuf(0, k.cbuf0.va, 0x400);
    g.run(&mut q);
    let got: Vec<u32> = (0..6).map(|i| g.rig.read_u32(&dims, 4 * i)).collect();
    assert_eq!(got, [8, 4, 2, 3, 2, 1]);

    // count_launches: the counter's address is in constant bank 4.
    let counter = g.rig.vram_buffer(4096);
    let slots = g.rig.vram_buffer(4096);
    let k = g.load(cubin, "count_launches", &params(&[slots.va]));
    let cb4 = g.rig.vram_buffer(4096);
    g.rig.write(&cb4, 0, &counter.va.to_le_bytes());
    let mut q = g.qmd(&k, 3, 32);
    q.cbuf(4, cb4.va, 16);
    g.run(&mut q);
    assert_eq!(g.rig.read_u32(&counter, 0), 96);
    assert_eq!(
        (0..3)
            .map(|b| g.rig.read_u32(&slots, 4 * b))
            .collect::<Vec<_>>(),
        [0, 32, 64]
    );

    // copy_flat from the bench cubin: one element per thread of the grid.
    let (src, dst) = (g.rig.vram_buffer(1 << 16), g.rig.sys_buffer(1 << 16));
    let bytes: Vec<u8> = (0..1 << 16).map(|i| (i * 31 % 256) as u8).collect();
    g.rig.write(&src, 0, &bytes);
    let k = g.load(
        "host/data/bench_kernels.sm_90.cubin",
        "copy_flat",
        &params(&[src.va, dst.va, 4096]),
    );
    let mut q = g.qmd(&k, 16, 128); // 2048 threads cover half of the 4096 elements
    g.run(&mut q);
    let mut out = vec![0u8; 1 << 16];
    g.rig.read(&dst, 0, &mut out);
    assert_eq!(out[..2048 * 16], bytes[..2048 * 16]);
    assert!(out[2048 * 16..].iter().all(|&b| b == 0));
    assert_eq!(g.rig.gpu.engine_counters().kernels_modeled, 5);
}

#[test]
fn store_value_to_an_unmapped_address_is_an_mmu_fault() {
    let mut g = Gpu::new(&BLACKWELL);
    let hole = g.rig.vas.alloc(1 << 20, 1 << 20).unwrap();
    let k = g.load(BLACKWELL.cubin, "store_value", &params(&[hole + 8, 42]));
    let q = g.qmd(&k, 1, 32);
    g.launch_raw(&q);
    g.rig.wait_halted(&g.ch);
    let f = g
        .rig
        .gpu
        .with_world(|w| w.mmu_faults.back().cloned())
        .unwrap();
    assert_eq!(
        (f.va, f.access, f.fault_type, f.engine),
        (hole + 8, Access::Write, FAULT_PTE, Engine::Graphics)
    );
}

#[test]
fn an_unknown_kernel_completes_unexecuted_and_is_reported() {
    let mut g = Gpu::new(&HOPPER);
    // Some instructions, then the branch-to-self every kernel ends with.
    let mut code = vec![0x42u8; 0x40];
    code.extend_from_slice(&[
        0x47, 0x79, 0xfc, 0x00, 0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0x83, 0x03, 0x00, 0xc0, 0x0f,
        0x00,
    ]);
    let prog = g.rig.vram_buffer(4096);
    g.rig.write(&prog, 0, &code);
    let cb = g.rig.vram_buffer(4096);
    let mut q = Qmd::new(HOPPER.layout);
    q.launch([1, 1, 1], [32, 1, 1], 8, prog.va)
        .cbuf(0, cb.va, 0x400);
    g.run(&mut q);
    let c = g.rig.gpu.engine_counters();
    assert_eq!((c.kernels_modeled, c.kernels_not_executed), (0, 1));
    let hash = format!("{:#018x}", code_hash(&code));
    assert!(
        g.rig
            .gpu
            .log()
            .warnings()
            .iter()
            .any(|w| w.contains("NOT EXECUTED") && w.contains(&hash)),
        "{:?}",
        g.rig.gpu.log().warnings()
    );
}

#[test]
fn chained_qmds_run_in_order() {
    let mut g = Gpu::new(&BLACKWELL);
    let out = g.rig.sys_buffer(4096);
    let k1 = g.load(BLACKWELL.cubin, "store_value", &params(&[out.va, 1]));
    let k2 = g.load(BLACKWELL.cubin, "store_value", &params(&[out.va + 8, 2]));
    let second = {
        let q = g.qmd(&k2, 1, 32);
        let buf = g.rig.vram_buffer(4096);
        g.rig.write(&buf, 0, &q.bytes);
        buf.va
    };
    let mut first = g.qmd(&k1, 1, 32);
    first.then(second);
    g.run(&mut first);
    assert_eq!((g.rig.read_u64(&out, 0), g.rig.read_u64(&out, 8)), (1, 2));
    assert_eq!(g.rig.gpu.engine_counters().launches, 2);
}

/// A launch the chip refuses: the channel halts, saying why.
fn refused(s: &'static Setup, edit: impl FnOnce(&mut Gpu, &mut Qmd, &Loaded)) -> String {
    let mut g = Gpu::new(s);
    let k = g.load(s.cubin, "empty_kernel", &[]);
    let mut q = g.qmd(&k, 1, 32);
    edit(&mut g, &mut q, &k);
    g.launch_raw(&q);
    g.rig.wait_halted(&g.ch)
}

#[test]
fn qmds_are_checked_against_the_chip() {
    let e = refused(&HOPPER, |_, q, _| {
        q.set(V4.block[0], 1024).set(V4.block[1], 2);
    });
    assert!(e.contains("2048 threads per block"), "{e}");
    let e = refused(&HOPPER, |_, q, _| {
        q.set(V4.major_version, 5);
    });
    assert!(e.contains("major version 5"), "{e}");
    let e = refused(&HOPPER, |_, q, _| {
        q.set(V4.qmd_type.expect("V04 has QMD_TYPE"), 3);
    });
    assert!(e.contains("QMD_TYPE 3"), "{e}");
    let e = refused(&BLACKWELL, |_, q, _| {
        // A 228 KiB carveout: Hopper has it, an sm_120 SM does not.
        q.set(V5.sm_config[1], 58);
    });
    assert!(e.contains("sm_120"), "{e}");
    let e = refused(&BLACKWELL, |_, q, _| {
        q.set(V5.registers, 0);
    });
    assert!(e.contains("REGISTER_COUNT"), "{e}");
    let e = refused(&HOPPER, |_, q, k| {
        // Constant bank 0 not valid.
        let (bit, _) = V4.cbuf_valid;
        q.set((bit, bit), 0).cbuf(1, k.cbuf0.va, 0x400);
    });
    assert!(e.contains("constant buffer 0"), "{e}");
    // sm_90 code on an sm_120 GPU.
    let e = refused(&BLACKWELL, |g, q, _| {
        let k = g.load(HOPPER.cubin, "empty_kernel", &[]);
        let (lo, hi, shift) = V5.program;
        q.set(lo, (k.prog >> shift) & 0xffff_ffff)
            .set(hi, k.prog >> shift >> 32);
    });
    assert!(e.contains("sm_90 code") && e.contains("sm_120"), "{e}");
    // The program must be mapped.
    let e = refused(&HOPPER, |g, q, _| {
        let hole = g.rig.vas.alloc(1 << 20, 1 << 20).unwrap();
        let (lo, hi, _) = V4.program;
        q.set(lo, hole & 0xffff_ffff).set(hi, hole >> 32);
    });
    assert!(e.contains("MMU fault") && e.contains("read"), "{e}");
}

/// Every simulated chip has committed test kernels for the SM the driver reads from its GR
/// info (`GrInfo::sm`, which maps RM's `SM_VERSION` 0xa04 to sm_120), the simulator's compute
/// model checks cubins against that SM (`limits::of`), and this file's setup for the chip
/// loads that cubin.
#[test]
fn every_simulated_chip_has_test_kernels_for_its_sm() {
    let setups = [&HOPPER, &BLACKWELL, &GB100, &AMPERE, &TURING, &ADA, &A100];
    for chip in SimChip::ALL {
        let spec = chip.spec();
        let sm = GrInfo {
            sm_version: spec.sm_version,
            ..GrInfo::default()
        }
        .sm();
        let k = nvbare_test_kernels::for_sm(sm)
            .unwrap_or_else(|| panic!("{}: no test kernels for sm_{sm}", spec.name));
        let limits = limits::of(spec).expect("every simulated chip computes");
        assert_eq!(limits.sm, format!("sm_{sm}"), "{}", spec.name);
        let setup = setups
            .iter()
            .find(|s| s.chip == chip)
            .unwrap_or_else(|| panic!("{}: no setup here", spec.name));
        assert_eq!(setup.cubin, k.path, "{}", spec.name);
    }
}

#[test]
fn the_kernel_table_matches_the_committed_cubins() {
    let mut checked = 0;
    let test_kernels = nvbare_test_kernels::ALL
        .iter()
        .map(|k| (k.path, format!("sm_{}", k.sm)));
    let bench_kernels = [
        ("host/data/bench_kernels.sm_90.cubin", "sm_90".to_string()),
        ("host/data/bench_kernels.sm_100.cubin", "sm_100".to_string()),
        ("host/data/pdl_kernels.sm_90.cubin", "sm_90".to_string()),
        ("host/data/pdl_kernels.sm_100.cubin", "sm_100".to_string()),
    ];
    for (path, sm) in test_kernels.chain(bench_kernels) {
        let c = Cubin::load(path);
        for name in c.kernels() {
            let text = c.section(&format!(".text.{name}"));
            // The code up to and including the branch-to-self (BRA, offset -16).
            let end = text
                .chunks_exact(16)
                .position(|i| {
                    // sm_90 on, and sm_75/sm_8x (Turing, Ampere, Ada).
                    i[..10] == [0x47, 0x79, 0xfc, 0, 0xfc, 0xff, 0xff, 0xff, 0xff, 0xff]
                        || i[..10] == [0x47, 0x79, 0, 0, 0xf0, 0xff, 0xff, 0xff, 0xff, 0xff]
                })
                .expect("every nvcc kernel ends with a branch to itself");
            let h = code_hash(&text[..16 * (end + 1)]);
            // The same code may be known for several SMs (sm_100 and sm_120 share some).
            match KNOWN
                .iter()
                .chain(KNOWN_SM8X.iter().flatten())
                .find(|k| k.hash == h && k.sm == sm)
            {
                Some(k) => {
                    assert_eq!(k.name, name.as_str(), "{path}");
                    checked += 1;
                }
                None => assert_eq!(name, "window_addresses", "{path}: {name} is not modeled"),
            }
        }
    }
    assert!(
        checked >= KNOWN.len() + KNOWN_SM8X.iter().flatten().count(),
        "every table entry was found in a cubin"
    );
}

/// TURING_COMPUTE_A (clc5c0.h) launches with SEND_SIGNALING_PCAS_B and has no
/// SEND_SIGNALING_PCAS2_B; its V02_03 QMD chains a dependent grid with
/// DEPENDENT_QMD_SCHEDULE_ENABLE and refuses a queue dependent (DEPENDENT_QMD_TYPE 0).
#[test]
fn turing_launches_v2_qmds_with_pcas_b_only() {
    let mut g = Gpu::new(&TURING);
    let out = g.rig.sys_buffer(4096);
    let k1 = g.load(TURING.cubin, "store_value", &params(&[out.va, 1]));
    let k2 = g.load(TURING.cubin, "store_value", &params(&[out.va + 8, 2]));
    let second = g.qmd(&k2, 1, 32);
    let second = g.launch_raw_unlaunched(&second);
    let mut first = g.qmd(&k1, 1, 32);
    first.then(second);
    g.run(&mut first);
    assert_eq!((g.rig.read_u64(&out, 0), g.rig.read_u64(&out, 8)), (1, 2));
    assert_eq!(g.rig.gpu.engine_counters().launches, 2);

    // DEPENDENT_QMD_TYPE QUEUE is refused.
    let e = refused(&TURING, |_, q, _| {
        q.then(0x1000).set((142, 142), 0);
    });
    assert!(e.contains("DEPENDENT_QMD_TYPE QUEUE"), "{e}");

    // SEND_SIGNALING_PCAS2_B is not a TURING_COMPUTE_A method.
    let g = Gpu::new(&TURING);
    let mut p = Push::new();
    p.inc(GR, SEND_PCAS_A, &[0x10])
        .inc(GR, SEND_SIGNALING_PCAS2_B, &[PREFETCH_SCHEDULE]);
    let mut ch = g.ch;
    let mut rig = g.rig;
    rig.submit(&mut ch, p.words());
    let e = rig.wait_halted(&ch);
    assert!(e.contains("no SEND_SIGNALING_PCAS2_B"), "{e}");
}
