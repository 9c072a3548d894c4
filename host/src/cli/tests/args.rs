//! Every `--arg`, `--out` and `--dump` form and each of their errors, the parameter packing,
//! and command lines clap refuses.

use nvbare_core::gpu::Placement;

use super::super::args::{
    ArgError, ArgValue, BufferArg, Contents, KernelArg, PackError, check_names, pack, parse_arg,
    parse_dump, parse_out,
};
use super::super::values::{DumpFormat, ElemType, parse_bytes};

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
