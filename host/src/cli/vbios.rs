//! `nvbare vbios FILE | --device BDF [--sysfs] [--save FILE] [--json]`: what a VBIOS holds —
//! its images (code type, size), the BIT's tokens, the falcon ucode table's entries, FWSEC's
//! descriptor, its signatures and where its DMEM mapper sits. Parsed by
//! [`nvbare_gsp::vbios`]; read by [`crate::vbios`].

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use nvbare_gsp::vbios::{FwsecDesc, Vbios};
use serde_json::{Value, json};

use super::error::CliError;

/// `nvbare vbios` options.
#[derive(Args, Debug)]
pub struct VbiosArgs {
    /// A VBIOS file (a ROM dump: sysfs's `rom`, nvflash, `--save`).
    #[arg(required_unless_present = "device", conflicts_with = "device")]
    pub file: Option<PathBuf>,
    /// Read the VBIOS of the GPU at this PCI address (0000:41:00.0) instead: through BAR0's
    /// PROM window over VFIO (the GPU bound to vfio-pci), or with --sysfs from sysfs.
    #[arg(long, value_name = "BDF")]
    pub device: Option<String>,
    /// With --device: read sysfs's `rom` attribute (needs root; any driver may hold the GPU).
    #[arg(long, requires = "device")]
    pub sysfs: bool,
    /// With --device: also write the bytes read to FILE.
    #[arg(long, value_name = "FILE", requires = "device")]
    pub save: Option<PathBuf>,
    /// Print one JSON object instead of the text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `nvbare vbios`: the text (or JSON) to print.
pub fn run(a: &VbiosArgs) -> Result<String, CliError> {
    let (bytes, from) = read(a)?;
    if let Some(path) = &a.save {
        std::fs::write(path, &bytes).map_err(|e| CliError::Write {
            path: path.clone(),
            why: e.to_string(),
            source: Some(e),
        })?;
    }
    let v = nvbare_gsp::vbios::parse(&bytes).map_err(|source| CliError::Vbios {
        from: from.clone(),
        source,
    })?;
    Ok(if a.json {
        to_json(&v, &from, bytes.len()).to_string() + "\n"
    } else {
        to_text(&v, &from, bytes.len())
    })
}

fn read(a: &VbiosArgs) -> Result<(Vec<u8>, String), CliError> {
    if let Some(path) = &a.file {
        let bytes = crate::vbios::read_file(path).map_err(|source| CliError::Read {
            what: "VBIOS",
            path: path.clone(),
            source,
        })?;
        return Ok((bytes, path.display().to_string()));
    }
    // PANIC-free: clap requires FILE or --device.
    let d = a.device.as_deref().unwrap_or_default();
    let addr = crate::pci::parse_address(d)
        .map_err(|e| CliError::Setup(crate::setup::SetupError::BadAddress(e)))?;
    let sysfs = crate::pci::Sysfs::system();
    if a.sysfs {
        let bytes =
            crate::vbios::read_sysfs_rom(&sysfs, addr).map_err(|source| CliError::Read {
                what: "VBIOS (sysfs rom)",
                path: sysfs.device_dir(addr).join("rom"),
                source,
            })?;
        return Ok((bytes, format!("{addr} (sysfs rom)")));
    }
    let vfio = crate::vfio::Vfio::open(addr, &crate::vfio::VfioOptions::default())?;
    let bytes = crate::vbios::read_prom(&vfio).map_err(|source| CliError::Vbios {
        from: format!("{addr} (PROM window)"),
        source,
    })?;
    Ok((bytes, format!("{addr} (PROM window)")))
}

fn hex(v: impl Into<u64>) -> String {
    format!("{:#x}", v.into())
}

fn desc_text(desc: Option<(u8, u16)>) -> String {
    desc.map_or("-".into(), |(v, s)| format!("v{v}, {s:#x} bytes"))
}

/// The text `nvbare vbios` prints.
pub fn to_text(v: &Vbios, from: &str, len: usize) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail (here and below).
    let _ = writeln!(
        s,
        "VBIOS of {from}: {len:#x} bytes, the ROM at {:#x}, {:#x} bytes in {} images (offsets below from the ROM's start)",
        v.rom_start,
        v.rom_len,
        v.images.len()
    );
    if let Some(ver) = v.bit.bios_version {
        let _ = writeln!(s, "BIOS version {ver}");
    }
    let _ = writeln!(
        s,
        "\nimages:\n  #  offset    size      type    id         last"
    );
    for (i, im) in v.images.iter().enumerate() {
        let _ = writeln!(
            s,
            "  {i}  {:<8}  {:<8}  {:<6}  {:04x}:{:04x}  {}{}",
            hex(im.offset as u64),
            hex(im.size as u64),
            im.code_type.name(),
            im.vendor_id,
            im.device_id,
            if im.last { "yes" } else { "no" },
            im.npde_revision
                .map_or(String::new(), |r| format!("  (NPDE {r:#x})")),
        );
    }
    let b = &v.bit;
    let _ = writeln!(
        s,
        "\nBIT at {:#x} (version {:x}.{:02x}), {} tokens of {} bytes:\n  id    name            ver  size    ptr",
        b.offset,
        b.bcd_version >> 8,
        b.bcd_version & 0xFF,
        b.tokens.len(),
        b.token_size
    );
    for t in &b.tokens {
        let outside = if t.ptr != 0 && !t.in_rom(v.rom_len) {
            "  (outside the ROM)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "  {:#04x}  {:<14}  {:<3}  {:<6}  {}{outside}",
            t.id,
            t.name(),
            t.version,
            hex(t.size),
            hex(t.ptr)
        );
    }
    match &v.ucode_table {
        None => s.push_str("\nno falcon ucode table (no falcon-data BIT token)\n"),
        Some(t) => {
            let _ = writeln!(
                s,
                "\nfalcon ucode table at {:#x} (pointers from {:#x}), {} entries:\n  app   target  desc ptr    descriptor",
                t.offset,
                v.expansion_rom_offset,
                t.entries.len()
            );
            for e in &t.entries {
                let row = format!(
                    "  {:#04x}  {:#04x}    {:<10}  {:<18}  {}",
                    e.app_id,
                    e.target_id,
                    hex(e.desc_ptr),
                    desc_text(e.desc),
                    e.app_name()
                );
                let _ = writeln!(s, "{}", row.trim_end());
            }
        }
    }
    match &v.fwsec {
        // OpenRM boots Hopper and later through FSP (`kgspBootstrap_GH100`: "Starting to boot
        // GSP via FSP"), which runs FWSEC itself; the one such ROM read, a GB206's, has none
        // of these ids (docs/vbios/README.md).
        None => s.push_str(
            "\nno FWSEC in the ucode table (no application 0x85, 0x45 or 0x05): this ROM cannot \
             run FWSEC-FRTS, which nvbare's booter path (Turing to Ada) needs; Hopper and later \
             boot GSP through FSP, which nvbare does not do\n",
        ),
        Some(f) => {
            let _ = writeln!(
                s,
                "\nFWSEC: entry {} ({:#04x}), descriptor at {:#x} ({:#x} bytes), ucode at {:#x}",
                f.entry, f.app_id, f.desc_offset, f.desc_size, f.ucode_offset
            );
            match f.desc {
                FwsecDesc::V3(d) => {
                    let _ = writeln!(
                        s,
                        "  descriptor v3: stored {:#x} bytes, IMEM {:#x} (phys {:#x}, virt {:#x}), DMEM {:#x} (phys {:#x}), interface at DMEM+{:#x}\n  \
                         engine id mask {:#x}, ucode id {}, PKC data (signature slot) at DMEM+{:#x}\n  \
                         signatures: {} of 384 bytes (versions {:#b}) at {:#x}",
                        d.stored_size,
                        d.imem_load_size,
                        d.imem_phys_base,
                        d.imem_virt_base,
                        d.dmem_load_size,
                        d.dmem_phys_base,
                        d.interface_offset,
                        d.engine_id_mask,
                        d.ucode_id,
                        d.pkc_data_offset,
                        d.signature_count,
                        d.signature_versions,
                        f.signatures.map_or(0, |(at, _)| at),
                    );
                }
                FwsecDesc::V2(d) => {
                    let _ = writeln!(
                        s,
                        "  descriptor v2: stored {:#x} bytes, IMEM {:#x} (phys {:#x}, virt {:#x}, secure {:#x} at {:#x}), entry {:#x}\n  \
                         DMEM {:#x} at ucode+{:#x} (phys {:#x}), interface at DMEM+{:#x}; no signatures (v2)",
                        d.stored_size,
                        d.imem_load_size,
                        d.imem_phys_base,
                        d.imem_virt_base,
                        d.imem_sec_size,
                        d.imem_sec_base,
                        d.virtual_entry,
                        d.dmem_load_size,
                        d.dmem_offset,
                        d.dmem_phys_base,
                        d.interface_offset,
                    );
                }
            }
            let m = f.dmem_mapper;
            let _ = writeln!(
                s,
                "  DMEM mapper (\"DMAP\" v{}) at DMEM+{:#x} (ROM {:#x}): command-in buffer {:#x} bytes at DMEM+{:#x}, init_cmd {:#x}, command mask {:#x}",
                m.version,
                m.dmem_offset,
                m.rom_offset,
                m.cmd_in_buffer_size,
                m.cmd_in_buffer_offset,
                m.init_cmd,
                m.cmd_mask0
            );
        }
    }
    s
}

/// The JSON object `nvbare vbios --json` prints.
pub fn to_json(v: &Vbios, from: &str, len: usize) -> Value {
    let images: Vec<Value> = v
        .images
        .iter()
        .map(|i| {
            json!({
                "offset": i.offset, "size": i.size, "code_type": i.code_type.byte(),
                "type": i.code_type.name(), "vendor_id": i.vendor_id, "device_id": i.device_id,
                "npde_revision": i.npde_revision, "last": i.last,
            })
        })
        .collect();
    let tokens: Vec<Value> = v
        .bit
        .tokens
        .iter()
        .map(|t| {
            json!({
                "id": t.id, "name": t.name(), "version": t.version, "size": t.size, "ptr": t.ptr,
                "in_rom": t.in_rom(v.rom_len),
            })
        })
        .collect();
    let table = v.ucode_table.as_ref().map(|t| {
        json!({
            "offset": t.offset, "version": t.version, "header_size": t.header_size,
            "entry_size": t.entry_size,
            "entries": t.entries.iter().map(|e| json!({
                "app_id": e.app_id, "app": e.app_name(), "target_id": e.target_id,
                "desc_ptr": e.desc_ptr, "desc_version": e.desc.map(|d| d.0),
                "desc_size": e.desc.map(|d| d.1),
            })).collect::<Vec<_>>(),
        })
    });
    let fwsec = v.fwsec.as_ref().map(|f| {
        let desc = match f.desc {
            FwsecDesc::V3(d) => json!({
                "version": 3, "stored_size": d.stored_size, "pkc_data_offset": d.pkc_data_offset,
                "interface_offset": d.interface_offset, "imem_phys_base": d.imem_phys_base,
                "imem_load_size": d.imem_load_size, "imem_virt_base": d.imem_virt_base,
                "dmem_phys_base": d.dmem_phys_base, "dmem_load_size": d.dmem_load_size,
                "engine_id_mask": d.engine_id_mask, "ucode_id": d.ucode_id,
                "signature_count": d.signature_count, "signature_versions": d.signature_versions,
            }),
            FwsecDesc::V2(d) => json!({
                "version": 2, "stored_size": d.stored_size, "uncompressed_size": d.uncompressed_size,
                "virtual_entry": d.virtual_entry, "interface_offset": d.interface_offset,
                "imem_phys_base": d.imem_phys_base, "imem_load_size": d.imem_load_size,
                "imem_virt_base": d.imem_virt_base, "imem_sec_base": d.imem_sec_base,
                "imem_sec_size": d.imem_sec_size, "dmem_offset": d.dmem_offset,
                "dmem_phys_base": d.dmem_phys_base, "dmem_load_size": d.dmem_load_size,
            }),
        };
        let m = f.dmem_mapper;
        json!({
            "entry": f.entry, "app_id": f.app_id, "desc_offset": f.desc_offset,
            "desc_size": f.desc_size, "desc": desc,
            "signatures": f.signatures.map(|(at, n)| json!({"offset": at, "bytes": n})),
            "ucode_offset": f.ucode_offset, "dmem_offset": f.dmem.0, "dmem_size": f.dmem.1,
            "dmem_mapper": {
                "dmem_offset": m.dmem_offset, "rom_offset": m.rom_offset, "version": m.version,
                "size": m.size, "cmd_in_buffer_offset": m.cmd_in_buffer_offset,
                "cmd_in_buffer_size": m.cmd_in_buffer_size, "init_cmd": m.init_cmd,
                "cmd_mask0": m.cmd_mask0,
            },
        })
    });
    json!({
        "from": from, "bytes": len, "rom_start": v.rom_start, "rom_len": v.rom_len,
        "bios_version": v.bit.bios_version.map(|b| b.to_string()),
        "images": images,
        "bit": { "offset": v.bit.offset, "bcd_version": v.bit.bcd_version, "tokens": tokens },
        "expansion_rom_offset": v.expansion_rom_offset,
        "ucode_table": table,
        "fwsec": fwsec,
    })
}

#[cfg(test)]
mod tests {
    use nvbare_gsp::vbios::build::{self, Spec};

    use super::*;

    fn args(file: PathBuf, json: bool) -> VbiosArgs {
        VbiosArgs {
            file: Some(file),
            device: None,
            sysfs: false,
            save: None,
            json,
        }
    }

    #[test]
    fn prints_a_built_image() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ad102.rom");
        let b = build::build(&Spec::default());
        std::fs::write(&path, &b.bytes).unwrap();
        let text = run(&args(path.clone(), false)).unwrap();
        println!("{text}");
        for want in [
            "4 images",
            "BIOS version 95.02.40.00.0A",
            "  3  0x1c00    0xe00     fwsec   10de:2684  yes  (NPDE 0x101)",
            "0x70  FALCON_DATA",
            "0x85  0x07",
            "FWSEC (prod)",
            "descriptor v3",
            "signatures: 2 of 384 bytes (versions 0b11)",
            "DMEM mapper (\"DMAP\" v3) at DMEM+0x100",
        ] {
            assert!(text.contains(want), "{want:?} missing from:\n{text}");
        }
        let j: Value = serde_json::from_str(&run(&args(path, true)).unwrap()).unwrap();
        assert_eq!(j["images"].as_array().unwrap().len(), 4);
        assert_eq!(j["fwsec"]["desc"]["signature_count"], 2);
        assert_eq!(
            j["fwsec"]["dmem_mapper"]["rom_offset"],
            b.dmem + build::MAPPER
        );
    }

    /// The simulated GA100's VBIOS, read through its PROM window as a driver reads it (what
    /// `sim/examples/vbios_dump.rs` writes): a v2 FWSEC with no signatures, the A100's id.
    #[test]
    fn prints_the_simulated_ga100_image() {
        use nvbare_sim::units::gfw::{PROM, PROM_SIZE};
        let gpu = nvbare_sim::SimGpu::new(nvbare_sim::SimChip::Ga100).unwrap();
        let window: Vec<u8> = (0..PROM_SIZE)
            .step_by(4)
            .flat_map(|o| gpu.bar0_read(PROM + o).to_le_bytes())
            .collect();
        let end = nvbare_gsp::vbios::rom_extent(&window).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ga100.rom");
        std::fs::write(&path, &window[..end]).unwrap();
        let text = run(&args(path.clone(), false)).unwrap();
        println!("{text}");
        for want in [
            "4 images",
            "fwsec   10de:20f1",
            "FWSEC (prod)",
            "descriptor v2",
            "no signatures (v2)",
            "DMEM mapper (\"DMAP\" v3)",
        ] {
            assert!(text.contains(want), "{want:?} missing from:\n{text}");
        }
        let j: Value = serde_json::from_str(&run(&args(path, true)).unwrap()).unwrap();
        assert_eq!(j["fwsec"]["signatures"], Value::Null);
    }

    /// The simulator's TU102 image: a version-2 FWSEC descriptor (Turing), no signatures.
    #[test]
    fn prints_the_simulated_tu102_image() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tu102.rom");
        let spec = nvbare_sim::SimChip::Tu102.spec();
        let b = build::build(&nvbare_sim::units::falcon::fwsec::build_spec(spec));
        std::fs::write(&path, &b.bytes).unwrap();
        let text = run(&args(path.clone(), false)).unwrap();
        println!("{text}");
        for want in ["10de:1e04", "descriptor v2", "no signatures (v2)"] {
            assert!(text.contains(want), "{want:?} missing from:\n{text}");
        }
        let j: Value = serde_json::from_str(&run(&args(path, true)).unwrap()).unwrap();
        assert_eq!(j["fwsec"]["desc"]["version"], 2);
        assert!(j["fwsec"]["signatures"].is_null());
    }

    #[test]
    fn a_malformed_file_is_named_with_its_code() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zero.rom");
        std::fs::write(&path, [0u8; 512]).unwrap();
        let e = run(&args(path, false)).unwrap_err();
        assert_eq!(e.code().code, "NVB-E020");
        assert!(
            e.to_string()
                .ends_with("all 512 bytes are zero (an unread or disabled ROM)")
        );
    }
}
