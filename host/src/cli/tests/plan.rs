//! `nvbare run`'s plan: what it reads, places and checks before it opens a GPU; the
//! initial contents of buffers a chunk at a time.

use nvbare_core::gpu::Placement;

use super::super::run::RunPlan;
use super::super::transfer::Init;
use super::super::values::{DumpFormat, ElemType};
use super::{cli_cubin, plan, plan_error, run_args, run_args_with};

#[test]
fn a_run_is_planned_before_any_gpu_with_fills_offsets_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("a.bin");
    let a: Vec<u8> = (0..16u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    std::fs::write(&input, &a).unwrap();
    let out = dir.path().join("c.bin");
    let p = plan(&[
        "--kernel",
        "vector_add",
        "--grid",
        "1",
        "--block",
        "16",
        "--shared",
        "1K",
        "--arg",
        &format!("a=buf:@{}:f32", input.display()),
        "--arg",
        "b=buf:64:f32:fill=iota:vram",
        "--arg",
        "c=buf:64:f32",
        "--arg",
        "n=i32:16",
        "--out",
        &format!("c={}", out.display()),
        "--dump",
        "b",
    ])
    .unwrap();
    assert_eq!(p.cfg.dynamic_shared, 1024);
    assert_eq!(p.cfg.block, [16, 1, 1]);
    assert_eq!(p.params.len(), 28);
    assert_eq!(&p.params[24..28], &16i32.to_le_bytes());
    assert_eq!(p.buffers.len(), 3);
    assert_eq!(p.buffers[0].init.bytes(64), a);
    assert_eq!(p.buffers[0].size, 64);
    let iota: Vec<u8> = (0..16u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    assert_eq!(p.buffers[1].init.bytes(64), iota);
    assert_eq!(p.buffers[1].placement, Placement::Vram);
    assert_eq!(p.buffers[2].init, Init::Zeros);
    let offsets: Vec<_> = p.buffers.iter().map(|b| b.param_offset).collect();
    assert_eq!(offsets, [Some(0), Some(8), Some(16)]);
    assert_eq!(p.outs, [(2, out)]);
    assert_eq!(p.dumps, [(1, DumpFormat::Elem(ElemType::F32))]);
    assert!(p.warnings.is_empty());
    assert_eq!(p.timeout_ns, 10_000_000_000);
    // With neither --dump nor --out every buffer is shown.
    let p = plan(&[
        "--kernel",
        "store_value",
        "--arg",
        "buf:64",
        "--arg",
        "u64:1",
    ])
    .unwrap();
    assert_eq!(p.dumps, [(0, DumpFormat::Hex)]);
}

#[test]
fn every_mistake_is_reported_before_a_gpu_is_opened() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.bin");
    std::fs::write(&empty, b"").unwrap();
    let cases: Vec<(Vec<String>, &str, &str)> = vec![
        (vec!["--arg".into(), "u32".into()], "NVB-E002", "no ':'"),
        (
            vec!["--arg".into(), "u8:999".into()],
            "NVB-E003",
            "not a u8",
        ),
        (
            vec!["--arg".into(), "buf:0".into()],
            "NVB-E004",
            "buffer size",
        ),
        (
            vec![
                "--arg".into(),
                format!("buf:@{}", empty.display()),
                "--arg".into(),
                "u64:1".into(),
            ],
            "NVB-E004",
            "is empty",
        ),
        (
            vec![
                "--arg".into(),
                "x=buf:4".into(),
                "--arg".into(),
                "x=buf:4".into(),
            ],
            "NVB-E005",
            "twice",
        ),
        (
            vec!["--arg".into(), "u64:1".into(), "--out".into(), "0=x".into()],
            "NVB-E006",
            "scalar",
        ),
        (
            vec!["--arg".into(), "buf:4".into()],
            "NVB-E007",
            "takes 16 bytes",
        ),
        (
            vec![
                "--arg".into(),
                "buf:@/nonexistent/in.bin".into(),
                "--arg".into(),
                "u64:1".into(),
            ],
            "NVB-E008",
            "cannot read the buffer input",
        ),
        (
            vec![
                "--arg".into(),
                "buf:8".into(),
                "--arg".into(),
                "u64:1".into(),
                "--out".into(),
                "0=/nonexistent/dir/out.bin".into(),
            ],
            "NVB-E009",
            "is not a directory",
        ),
        (
            vec![
                "--arg".into(),
                "buf:8".into(),
                "--arg".into(),
                "u64:1".into(),
                "--block".into(),
                "2048".into(),
            ],
            "NVB-E012",
            "block x = 2048 exceeds the limit 1024",
        ),
        (
            vec![
                "--arg".into(),
                "buf:8".into(),
                "--arg".into(),
                "u64:1".into(),
                "--shared".into(),
                "300K".into(),
            ],
            "NVB-E012",
            "shared memory per block exceed",
        ),
    ];
    for (extra, code, text) in cases {
        let mut argv = vec!["--kernel", "store_value"];
        argv.extend(extra.iter().map(String::as_str));
        let (got, message) = plan_error(&argv);
        assert_eq!(got, code, "{argv:?}: {message}");
        assert!(message.contains(text), "{argv:?}: {message}");
    }
    let (code, message) = plan_error(&["--kernel", "no_such"]);
    assert_eq!(code, "NVB-E011", "{message}");
    let not_a_cubin = dir.path().join("k.cubin");
    std::fs::write(&not_a_cubin, b"PTX text, not an ELF").unwrap();
    let mut a = run_args(&["--kernel", "store_value"]);
    a.cubin = not_a_cubin;
    let e = super::super::run::RunPlan::new(&a).unwrap_err();
    assert_eq!(e.code().code, "NVB-E010", "{e}");
    assert!(e.to_string().contains("not a cubin: no ELF magic"), "{e}");
}

#[test]
fn arguments_the_kernel_does_not_take_are_warned_about_not_dropped_silently() {
    let p = plan(&[
        "--kernel",
        "store_value",
        "--arg",
        "buf:8",
        "--arg",
        "u64:1",
        "--arg",
        "extra=f32:2",
        "--arg",
        "buf:4",
    ])
    .unwrap();
    assert_eq!(p.warnings.len(), 1);
    assert!(
        p.warnings[0].contains(
            "takes 16 bytes of parameters (2 arguments); 2 more given and not passed: extra \
             (f32:2), #3 (buf:4)"
        ),
        "{}",
        p.warnings[0]
    );
    // A buffer past the parameters is still made (its address goes nowhere).
    assert_eq!(p.buffers[1].param_offset, None);
}

#[test]
fn the_transcripts_kernels_plan_with_the_cubins_parameter_layout() {
    // saxpy_shared(unsigned n, float a, const float *x, float *y): 4, 4, 8, 8 bytes.
    let args = run_args_with(
        &cli_cubin(),
        &[
            "--kernel",
            "saxpy_shared",
            "--grid",
            "16",
            "--block",
            "256",
            "--shared",
            "1K",
            "--arg",
            "n=u32:4096",
            "--arg",
            "a=f32:2.5",
            "--arg",
            "x=buf:16K:f32:fill=iota",
            "--arg",
            "y=buf:16K:f32:fill=1:vram",
        ],
    );
    let p = RunPlan::new(&args).unwrap();
    assert_eq!(p.params.len(), 24);
    assert_eq!(
        &p.params[..8],
        &[4096u32.to_le_bytes(), 2.5f32.to_le_bytes()].concat()[..]
    );
    let offsets: Vec<_> = p.buffers.iter().map(|b| b.param_offset).collect();
    assert_eq!(offsets, [Some(8), Some(16)]);
    assert_eq!(
        p.buffers[1].init,
        Init::Repeat(1.0f32.to_le_bytes().to_vec())
    );
    // Its argument list is checked against the cubin's: a 4-byte x is refused.
    let mut bad = args;
    bad.args[2] = "x=u32:0".into();
    let e = RunPlan::new(&bad).unwrap_err();
    assert_eq!(e.code().code, "NVB-E007", "{e}");
    // oob_shared's static array counts against --shared's limit; trap_in_warp takes a u32.
    let (code, _) = {
        let e = RunPlan::new(&run_args_with(
            &cli_cubin(),
            &[
                "--kernel",
                "oob_shared",
                "--arg",
                "u32:1",
                "--shared",
                "227K",
            ],
        ))
        .unwrap_err();
        (e.code().code, e.to_string())
    };
    assert_eq!(code, "NVB-E012");
    RunPlan::new(&run_args_with(
        &cli_cubin(),
        &[
            "--kernel",
            "trap_in_warp",
            "--block",
            "256",
            "--arg",
            "u32:3",
        ],
    ))
    .unwrap();
}

#[test]
fn initial_contents_come_a_chunk_at_a_time_at_any_offset() {
    let iota = Init::Iota(ElemType::U16);
    let mut out = [0u8; 6];
    iota.fill(8, &mut out);
    assert_eq!(out, [4, 0, 5, 0, 6, 0]);
    let rep = Init::Repeat(vec![1, 2, 3, 4]);
    let mut out = [0u8; 6];
    rep.fill(8, &mut out);
    assert_eq!(out, [1, 2, 3, 4, 1, 2]);
    // A file shorter than the chunk: the rest is zeros.
    let file = Init::Bytes(vec![9; 10]);
    let mut out = [7u8; 8];
    file.fill(8, &mut out);
    assert_eq!(out, [9, 9, 0, 0, 0, 0, 0, 0]);
    let mut out = [7u8; 4];
    file.fill(64, &mut out);
    assert_eq!(out, [0; 4]);
    assert_eq!(Init::Zeros.bytes(3), [0, 0, 0]);
    // The chunked result is the whole one.
    let f32s = Init::Iota(ElemType::F32);
    let whole = f32s.bytes(64);
    let mut pieces = vec![0u8; 64];
    for at in (0..64).step_by(16) {
        f32s.fill(at as u64, &mut pieces[at..at + 16]);
    }
    assert_eq!(pieces, whole);
}

#[test]
fn the_example_under_run_help_is_a_valid_run() {
    let help = super::super::run::ARG_HELP;
    let example = &help[help.find("Example").expect("an example")..];
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.bin");
    std::fs::write(&x, vec![0u8; 4096 * 4]).unwrap();
    let y = dir.path().join("y.bin");
    let words: Vec<String> = example
        .lines()
        .skip(1)
        .flat_map(|l| l.split_whitespace())
        .filter(|w| *w != "\\")
        .map(|w| {
            w.replace("@x.bin", &format!("@{}", x.display()))
                .replace("y=y.bin", &format!("y={}", y.display()))
        })
        .collect();
    assert_eq!(
        &words[..3],
        ["nvbare", "run", "host/data/cli_kernels.sm_90.cubin"]
    );
    let rest: Vec<&str> = words[3..].iter().map(String::as_str).collect();
    let p = RunPlan::new(&run_args_with(&cli_cubin(), &rest)).unwrap();
    assert_eq!(p.cfg.dynamic_shared, 1024);
    assert!(p.warnings.is_empty());
    assert_eq!(p.outs.len(), 1);
}
