//! tinygrad's FWSEC parser (0.14.0, unmodified, in the venv `sim/tests/tinygrad.rs` installs)
//! reads nvbare's built VBIOS to the same descriptor and DMEM mapper nvbare's parser finds:
//! an independent check of the layout the builder and the parser share. It also shows the
//! hang nvbare's parser avoids: on a zeroed ROM tinygrad's image walk never advances (killed
//! by its alarm), where nvbare returns `VbiosError::Zeroed`. Skips, saying so, without the
//! venv.

use std::path::PathBuf;
use std::process::Command;

use nvbare_gsp::vbios::build::{self, Spec};
use nvbare_gsp::vbios::{FwsecDesc, VbiosError, parse};

fn python() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../sim/.venv-tinygrad/bin/python");
    p.is_file().then_some(p)
}

fn run(python: &PathBuf, image: &[u8], name: &str) -> (Option<i32>, String) {
    let dir = tempfile_dir(name);
    let path = dir.join("vbios.rom");
    std::fs::write(&path, image).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/tinygrad/vbios_check.py");
    let out = Command::new(python)
        .arg(script)
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn tempfile_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nvbare-vbios-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn value(out: &str, key: &str) -> u64 {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key} missing from tinygrad's output:\n{out}"))
        .parse()
        .unwrap()
}

#[test]
fn tinygrad_reads_the_built_image_as_nvbare_does() {
    let Some(python) = python() else {
        println!(
            "SKIPPED: no sim/.venv-tinygrad (cargo test -p nvbare-sim --test tinygrad makes it)"
        );
        return;
    };
    let b = build::build(&Spec::default());
    let v = parse(&b.bytes).unwrap();
    let f = v.fwsec.unwrap();
    let FwsecDesc::V3(d) = f.desc else {
        panic!("v3 expected")
    };
    let (code, out) = run(&python, &b.bytes, "built");
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(value(&out, "StoredSize"), u64::from(d.stored_size));
    assert_eq!(value(&out, "PKCDataOffset"), u64::from(d.pkc_data_offset));
    assert_eq!(
        value(&out, "InterfaceOffset"),
        u64::from(d.interface_offset)
    );
    assert_eq!(value(&out, "IMEMLoadSize"), u64::from(d.imem_load_size));
    assert_eq!(value(&out, "DMEMLoadSize"), u64::from(d.dmem_load_size));
    assert_eq!(value(&out, "EngineIdMask"), u64::from(d.engine_id_mask));
    assert_eq!(value(&out, "UcodeId"), u64::from(d.ucode_id));
    assert_eq!(value(&out, "SignatureCount"), u64::from(d.signature_count));
    assert_eq!(
        value(&out, "SignatureVersions"),
        u64::from(d.signature_versions)
    );
    // The DMEM mapper tinygrad patched FRTS into is the one nvbare found.
    assert_eq!(
        value(&out, "dmap_in_ucode") as usize,
        f.dmem_mapper.rom_offset - f.ucode_offset
    );
}

#[test]
fn tinygrad_loops_on_a_zeroed_rom_where_nvbare_returns_an_error() {
    let Some(python) = python() else {
        println!("SKIPPED: no sim/.venv-tinygrad");
        return;
    };
    let zero = vec![0u8; 0x10000];
    assert_eq!(parse(&zero), Err(VbiosError::Zeroed { len: 0x10000 }));
    let (code, out) = run(&python, &zero, "zero");
    // SIGALRM after 5 s: Python dies of the signal (no exit code) or exits 142 through a shell.
    assert!(
        code.is_none() || code == Some(142),
        "tinygrad ended: {code:?}\n{out}"
    );
}
