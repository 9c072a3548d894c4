//! Every `--arg`, `--out` and `--dump` form and each of their errors, the parameter packing,
//! and the checks `nvbare run` makes before it opens a GPU.

use nvbare_core::gpu::Placement;

use super::super::args::{
    ArgError, ArgValue, BufferArg, Contents, KernelArg, PackError, check_names, pack, parse_arg,
    parse_dump, parse_out,
};
use super::super::run::RunPlan;
use super::super::transfer::Init;
use super::super::values::{DumpFormat, ElemType, parse_bytes};
use super::{cli_cubin, plan, plan_error, run_args, run_args_with};

fn scalar(text: &str) -> (ElemType, Vec<u8>) {
    match parse_arg(text).expect(text).value {
        ArgValue::Scalar(t, b) => (t, b),
        v => panic!("{text}: {v:?}"),
    }
}

fn buffer(text: &str) -> BufferArg {
    match parse_arg(text).expect(text).value {
        ArgValue::Buffer(b) => b,
        v => panic!("{text}: {v:?}"),
    }
}

fn arg_error(text: &str) -> ArgError {
    parse_arg(text).expect_err(text)
}

#[test]
fn scalars_of_every_type_encode_little_endian() {
    assert_eq!(scalar("u8:255"), (ElemType::U8, vec![0xff]));
    assert_eq!(scalar("u16:0x1234"), (ElemType::U16, vec![0x34, 0x12]));
    assert_eq!(
        scalar("u32:7"),
        (ElemType::U32, 7u32.to_le_bytes().to_vec())
    );
    assert_eq!(
        scalar("i32:-2"),
        (ElemType::I32, (-2i32).to_le_bytes().to_vec())
    );
    // Hex is the bit pattern, whatever the signedness.
    assert_eq!(scalar("i32:0xffffffff").1, (-1i32).to_le_bytes());
    assert_eq!(scalar("u64:1_000_000").1, 1_000_000u64.to_le_bytes());
    assert_eq!(scalar("i64:-9223372036854775808").1, i64::MIN.to_le_bytes());
    assert_eq!(scalar("f32:1.5").1, 1.5f32.to_le_bytes());
    assert_eq!(scalar("f64:-2e-3").1, (-2e-3f64).to_le_bytes());
    assert_eq!(scalar("f32:inf").1, f32::INFINITY.to_le_bytes());
}

#[test]
fn scalar_errors_name_the_type_and_its_range() {
    for (text, why) in [
        ("u8:256", "is not a u8 (0..=255)"),
        ("u16:-1", "is not a u16"),
        ("u32:0x1_0000_0000", "is not a u32"),
        ("i32:2147483648", "is not a i32"),
        ("u64:x", "is not a u64"),
        ("f32:one", "is not a f32 (a number such as 1.5"),
    ] {
        let e = arg_error(text);
        assert!(matches!(e, ArgError::Value { .. }), "{text}: {e:?}");
        assert!(e.to_string().contains(why), "{text}: {e}");
    }
    for text in ["u32", "int:3", "3", ""] {
        let e = arg_error(text);
        assert!(matches!(e, ArgError::Form { .. }), "{text}: {e:?}");
        assert!(e.to_string().contains("write TYPE:VALUE"), "{e}");
    }
}

#[test]
fn names_are_c_identifiers_before_the_spec() {
    let a = parse_arg("n=u32:4").unwrap();
    assert_eq!(a.name.as_deref(), Some("n"));
    assert_eq!(a.spec, "u32:4");
    assert_eq!(parse_arg("_x1=buf:8").unwrap().name.as_deref(), Some("_x1"));
    // Not a name: the whole text is the spec (and is then malformed).
    assert!(matches!(arg_error("1x=u32:4"), ArgError::Form { .. }));
    assert!(matches!(arg_error("x=5"), ArgError::Form { .. }));
    let args: Vec<KernelArg> = ["x=u32:1", "x=buf:4"]
        .iter()
        .map(|t| parse_arg(t).unwrap())
        .collect();
    assert_eq!(
        check_names(&args),
        Err(ArgError::DuplicateName { name: "x".into() })
    );
}

#[test]
fn buffers_take_sizes_types_placements_and_fills() {
    let b = buffer("buf:4096");
    assert_eq!(
        b,
        BufferArg {
            size: Some(4096),
            contents: Contents::Zeroed,
            elem: None,
            placement: Placement::Host,
        }
    );
    assert_eq!(buffer("buf:0x1000").size, Some(4096));
    assert_eq!(buffer("buf:64K").size, Some(64 << 10));
    assert_eq!(buffer("buf:2MiB").size, Some(2 << 20));
    assert_eq!(buffer("buf:1G").size, Some(1 << 30));
    let b = buffer("buf:4K:vram:f32:fill=iota");
    assert_eq!(
        (b.elem, b.placement, b.contents),
        (Some(ElemType::F32), Placement::Vram, Contents::Iota)
    );
    // Options in any order; a fill value is read as the element type (u32 by default).
    let b = buffer("buf:16:fill=-1:i32:host");
    assert_eq!(b.contents, Contents::Value((-1i32).to_le_bytes().to_vec()));
    assert_eq!(
        buffer("buf:8:fill=7").contents,
        Contents::Value(7u32.to_le_bytes().to_vec())
    );
    // A file's buffer: its path may hold ':' (options are read from the end).
    let b = buffer("buf:@data/a:b.bin:f32:vram");
    assert_eq!(b.contents, Contents::File("data/a:b.bin".into()));
    assert_eq!((b.size, b.elem), (None, Some(ElemType::F32)));
}

#[test]
fn buffer_errors_say_what_is_wrong() {
    for (text, why) in [
        ("buf:0", "is not a buffer size"),
        ("buf:-4", "is not a buffer size"),
        ("buf:4X", "is not a buffer size"),
        ("buf:10:f32:fill=1", "not a whole number of f32 elements"),
    ] {
        let e = arg_error(text);
        assert!(matches!(e, ArgError::Size { .. }), "{text}: {e:?}");
        assert!(e.to_string().contains(why), "{text}: {e}");
    }
    for (text, why) in [
        ("buf:16:f32:u32", "two element types"),
        ("buf:16:host:vram", "two placements"),
        ("buf:16:fill=1:fill=2", "two fills"),
        ("buf:16:gpu", "\"gpu\" is not a buffer option"),
        ("buf:@x.bin:fill=1", "not both"),
        ("buf:@", "no file after '@'"),
    ] {
        let e = arg_error(text);
        assert!(matches!(e, ArgError::Form { .. }), "{text}: {e:?}");
        assert!(e.to_string().contains(why), "{text}: {e}");
    }
    assert!(matches!(
        arg_error("buf:4:u8:fill=300"),
        ArgError::Value { .. }
    ));
}

fn args(texts: &[&str]) -> Vec<KernelArg> {
    texts.iter().map(|t| parse_arg(t).unwrap()).collect()
}

#[test]
fn out_and_dump_name_buffers_by_name_or_position() {
    let a = args(&["n=u32:4", "x=buf:16:f32", "buf:8"]);
    assert_eq!(parse_out(&a, "x=out.bin").unwrap(), (1, "out.bin".into()));
    assert_eq!(parse_out(&a, "2=o").unwrap(), (2, "o".into()));
    assert_eq!(
        parse_dump(&a, "x").unwrap(),
        (1, DumpFormat::Elem(ElemType::F32))
    );
    assert_eq!(parse_dump(&a, "2").unwrap(), (2, DumpFormat::Hex));
    assert_eq!(
        parse_dump(&a, "x:i32").unwrap(),
        (1, DumpFormat::Elem(ElemType::I32))
    );
    assert_eq!(parse_dump(&a, "1:hex").unwrap(), (1, DumpFormat::Hex));
    for (result, why) in [
        (parse_out(&a, "n=o").map(|_| ()), "is a scalar"),
        (parse_out(&a, "y=o").map(|_| ()), "named: n, x"),
        (
            parse_out(&a, "7=o").map(|_| ()),
            "no argument #7: 3 --arg given",
        ),
        (parse_out(&a, "x").map(|_| ()), "write ARG=FILE"),
        (parse_out(&a, "=o").map(|_| ()), "write ARG=FILE"),
        (parse_dump(&a, "x:f16").map(|_| ()), "\"f16\" is not a type"),
    ] {
        let e = result.expect_err(why);
        assert!(matches!(e, ArgError::Reference { .. }), "{e:?}");
        assert!(e.to_string().contains(why), "{e}");
    }
}

#[test]
fn packing_follows_the_kernels_parameter_list() {
    // vector_add(float *a, float *b, float *c, int n): 8, 8, 8, 4 bytes.
    let layout = [(0, 8), (8, 8), (16, 8), (24, 4)];
    let a = args(&["buf:4", "buf:4", "buf:4", "u32:1"]);
    let p = pack("vector_add", 28, &layout, &a).unwrap();
    assert_eq!((p.offsets, p.extra), (vec![0, 8, 16, 24], 0));
    let a = args(&["buf:4", "buf:4", "buf:4", "u32:1", "f64:2", "u8:1"]);
    assert_eq!(pack("vector_add", 28, &layout, &a).unwrap().extra, 2);
    let e = pack("vector_add", 28, &layout, &args(&["buf:4", "u32:1"])).unwrap_err();
    assert!(matches!(
        e,
        PackError::SizeMismatch {
            index: 1,
            expected: 8,
            ..
        }
    ));
    assert!(
        e.to_string().contains("give it as u64, i64, f64 or a buf"),
        "{e}"
    );
    let e = pack("vector_add", 28, &layout, &args(&["buf:4"])).unwrap_err();
    assert!(
        e.to_string()
            .contains("takes 28 bytes of parameters (4 parameters of 8, 8, 8, 4 bytes)"),
        "{e}"
    );
    // A list that runs past the block is the cubin's fault, not the arguments'.
    let e = pack("k", 8, &[(0, 8), (8, 8)], &args(&["u64:1", "u64:2"])).unwrap_err();
    assert!(matches!(e, PackError::BadLayout { index: 1, .. }), "{e}");
    // Without the cubin's list: as C lays out the types (u8 at 0, u64 at 8, u16 at 16).
    let a = args(&["u8:1", "u64:2", "u16:3"]);
    let p = pack("k", 18, &[], &a).unwrap();
    assert_eq!((p.offsets, p.extra), (vec![0, 8, 16], 0));
    assert_eq!(pack("k", 4, &[], &a).unwrap().extra, 2);
    assert!(matches!(
        pack("k", 24, &[], &args(&["u32:1"])),
        Err(PackError::TooFew { .. })
    ));
}

#[test]
fn values_show_and_sizes_read_as_a_person_writes_them() {
    assert_eq!(ElemType::F32.show(&1.5f32.to_le_bytes()), "1.5");
    assert_eq!(ElemType::F64.show(&2.0f64.to_le_bytes()), "2.0");
    assert_eq!(ElemType::I32.show(&(-3i32).to_le_bytes()), "-3");
    assert_eq!(ElemType::U16.show(&[0x34, 0x12]), "4660");
    assert_eq!(ElemType::F32.iota(3), 3.0f32.to_le_bytes());
    assert_eq!(ElemType::U8.iota(257), [1]);
    let words: Vec<u8> = (0u32..4).flat_map(|i| (i * 0x11).to_le_bytes()).collect();
    assert_eq!(
        DumpFormat::Hex.head(&words, 100),
        "00000000 00000011 00000022 00000033 ... (96 more)"
    );
    assert_eq!(
        DumpFormat::Elem(ElemType::U32).head(&words, 4),
        "0 17 34 51"
    );
    for (text, bytes) in [("1", 1), ("0x10", 16), ("4k", 4096), ("3M", 3 << 20)] {
        assert_eq!(parse_bytes(text), Some(bytes), "{text}");
    }
    for text in ["0", "", "1T", "-1", "0x", "k"] {
        assert_eq!(parse_bytes(text), None, "{text}");
    }
}

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
fn bad_command_lines_are_usage_errors_before_anything_runs() {
    use clap::Parser;
    for argv in [
        &["nvbare", "run", "x.cubin", "--kernel", "k", "--grid", "0"][..],
        &[
            "nvbare", "run", "x.cubin", "--kernel", "k", "--block", "1,2,3,4",
        ],
        &[
            "nvbare", "run", "x.cubin", "--kernel", "k", "--shared", "lots",
        ],
        &[
            "nvbare",
            "run",
            "x.cubin",
            "--kernel",
            "k",
            "--timeout",
            "0",
        ],
        &["nvbare", "run", "x.cubin"],
        &["nvbare", "sim", "serve", "--chip", "gx100"],
        &[
            "nvbare", "sim", "serve", "--chip", "gh100", "--listen", "here",
        ],
    ] {
        assert!(super::Cli::try_parse_from(argv).is_err(), "{argv:?}");
    }
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
