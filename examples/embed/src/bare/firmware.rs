//! The GSP firmware, from the boot module: a `newc` cpio archive (what `cpio -H newc` and
//! every initramfs tool write) holding `nvidia/<chip>/gsp/{fmc,gsp,bootloader}-570.144.bin`
//! on the FSP path's chips, `nvidia/<chip>/gsp/{booter_load,booter_unload,gsp,bootloader}
//! -570.144.bin` (and `gen_bootloader` on Turing and GA100) on the booter path's. The VBIOS
//! comes from BAR0's PROM window. The files are used where the loader put them; nothing is
//! copied.

use alloc::format;
use alloc::string::String;

use nvbare_core::boot::booter::BooterFirmware;
use nvbare_core::boot::{Firmware, FirmwareFile};
use nvbare_core::chip::{BootPath, Chip};

/// `newc` header: the magic and 13 eight-digit hex fields.
const HEADER: usize = 110;
const MAGIC: &[u8] = b"070701";

/// One file of the archive.
struct Entry<'a> {
    name: &'a [u8],
    data: &'a [u8],
}

fn hex_field(header: &[u8], index: usize) -> Option<usize> {
    // PANIC: none; `get` bounds the field (6 bytes of magic, then 8 per field).
    let digits = header.get(6 + 8 * index..14 + 8 * index)?;
    let s = core::str::from_utf8(digits).ok()?;
    usize::from_str_radix(s, 16).ok()
}

/// The archive's entries up to its trailer; `Err` names the byte offset of a broken header.
fn entries(archive: &[u8]) -> impl Iterator<Item = Result<Entry<'_>, usize>> {
    let mut at = 0usize;
    core::iter::from_fn(move || {
        let header = archive.get(at..at + HEADER)?;
        if !header.starts_with(MAGIC) {
            return Some(Err(at));
        }
        let (Some(size), Some(name_len)) = (hex_field(header, 6), hex_field(header, 11)) else {
            return Some(Err(at));
        };
        let name_at = at + HEADER;
        let data_at = (name_at + name_len).next_multiple_of(4);
        let (Some(name), Some(data)) = (
            archive.get(name_at..(name_at + name_len).saturating_sub(1)),
            archive.get(data_at..data_at + size),
        ) else {
            return Some(Err(at));
        };
        if name == b"TRAILER!!!" {
            return None;
        }
        at = (data_at + size).next_multiple_of(4);
        Some(Ok(Entry { name, data }))
    })
}

/// The chip's files from `archive` (see the module documentation).
pub fn for_chip(archive: &'static [u8], chip: Chip) -> Result<Firmware<'static>, String> {
    let dir = format!("nvidia/{}/gsp/", chip.firmware_dir());
    let lookup = |file: &str| -> Result<Option<&'static [u8]>, String> {
        for e in entries(archive) {
            let e = e.map_err(|at| {
                format!("the firmware module is not a newc cpio archive (bad header at byte {at})")
            })?;
            let name = e.name.strip_prefix(b"./").unwrap_or(e.name);
            if name.strip_prefix(dir.as_bytes()) == Some(file.as_bytes()) {
                return Ok(Some(e.data));
            }
        }
        Ok(None)
    };
    let find = |file: &str| -> Result<&'static [u8], String> {
        lookup(file)?.ok_or_else(|| {
            format!(
                "the firmware module has no {dir}{file}: build it from the firmware cache \
                 (`cpio -H newc` of nvidia/{}/gsp, as tests/vm/embed does)",
                chip.firmware_dir()
            )
        })
    };
    let gsp = find(FirmwareFile::GspRm.file_name())?;
    let bootloader = find(FirmwareFile::Bootloader.file_name())?;
    Ok(match chip.arch().boot_path() {
        BootPath::FspChainOfTrust => Firmware {
            fmc: find(FirmwareFile::Fmc.file_name())?,
            gsp,
            bootloader,
            booter: Default::default(),
        },
        BootPath::Sec2Booter => Firmware {
            fmc: &[],
            gsp,
            bootloader,
            booter: BooterFirmware {
                booter_load: find("booter_load-570.144.bin")?,
                booter_unload: find("booter_unload-570.144.bin")?,
                vbios: None,
                // Only Turing's and GA100's FWSEC needs it; the boot names it when missing.
                generic_bootloader: lookup("gen_bootloader-570.144.bin")?.unwrap_or(&[]),
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use super::*;

    /// A newc archive of `files`, as `cpio -o -H newc` writes it, with its trailer.
    fn newc(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, (name, data)) in files.iter().chain(&[("TRAILER!!!", &[][..])]).enumerate() {
            let fields = [
                i + 1,
                0o100644,
                0,
                0,
                1,
                0,
                data.len(),
                0,
                0,
                0,
                0,
                name.len() + 1,
                0,
            ];
            out.extend_from_slice(MAGIC);
            for f in fields {
                out.extend_from_slice(format!("{f:08x}").as_bytes());
            }
            out.extend_from_slice(name.as_bytes());
            out.push(0);
            out.resize(out.len().next_multiple_of(4), 0);
            out.extend_from_slice(data);
            out.resize(out.len().next_multiple_of(4), 0);
        }
        out
    }

    fn leak(v: Vec<u8>) -> &'static [u8] {
        Vec::leak(v)
    }

    #[test]
    fn the_chips_three_files_are_found_in_place() {
        let a = leak(newc(&[
            ("nvidia", b""),
            ("nvidia/gb202/gsp/fmc-570.144.bin", b"wrong chip"),
            ("./nvidia/gh100/gsp/fmc-570.144.bin", b"fmc"),
            ("nvidia/gh100/gsp/gsp-570.144.bin", b"gsp-rm image"),
            ("nvidia/gh100/gsp/bootloader-570.144.bin", b"boot"),
        ]));
        let fw = for_chip(a, Chip::GH100).unwrap();
        assert_eq!(
            (fw.fmc, fw.gsp, fw.bootloader),
            (&b"fmc"[..], &b"gsp-rm image"[..], &b"boot"[..])
        );
        // Borrowed from the archive, not copied.
        assert!(a.as_ptr_range().contains(&fw.gsp.as_ptr()));
    }

    #[test]
    fn the_booter_paths_files_are_found_without_an_fmc() {
        let a = leak(newc(&[
            ("nvidia/ad102/gsp/booter_load-570.144.bin", b"load"),
            ("nvidia/ad102/gsp/booter_unload-570.144.bin", b"unload"),
            ("nvidia/ad102/gsp/gsp-570.144.bin", b"gsp-rm image"),
            ("nvidia/ad102/gsp/bootloader-570.144.bin", b"boot"),
        ]));
        let fw = for_chip(a, Chip::AD102).unwrap();
        assert!(fw.fmc.is_empty());
        assert_eq!(
            (fw.booter.booter_load, fw.booter.booter_unload, fw.gsp),
            (&b"load"[..], &b"unload"[..], &b"gsp-rm image"[..])
        );
        assert!(fw.booter.generic_bootloader.is_empty());
        let e = for_chip(
            leak(newc(&[("nvidia/ad102/gsp/gsp-570.144.bin", b"gsp")])),
            Chip::AD102,
        )
        .unwrap_err();
        assert!(
            e.contains("no nvidia/ad102/gsp/bootloader-570.144.bin"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_file_is_named_with_the_remedy() {
        let a = leak(newc(&[
            ("nvidia/gh100/gsp/fmc-570.144.bin", b"fmc"),
            ("nvidia/gh100/gsp/gsp-570.144.bin", b"gsp"),
        ]));
        let e = for_chip(a, Chip::GH100).unwrap_err();
        assert!(
            e.contains("no nvidia/gh100/gsp/bootloader-570.144.bin"),
            "{e}"
        );
        assert!(e.contains("cpio -H newc"), "{e}");
    }

    #[test]
    fn broken_or_truncated_archives_are_errors_not_panics() {
        let good = newc(&[("nvidia/gh100/gsp/fmc-570.144.bin", b"fmc")]);
        let mut bad_magic = good.clone();
        bad_magic[..6].copy_from_slice(b"070707");
        let e = for_chip(leak(bad_magic), Chip::GH100).unwrap_err();
        assert!(
            e.contains("not a newc cpio archive (bad header at byte 0)"),
            "{e}"
        );
        for cut in [0, 50, 110, 130, good.len() - 1] {
            let e = for_chip(leak(good[..cut].to_vec()), Chip::GH100).unwrap_err();
            assert!(
                e.contains("has no nvidia/gh100/gsp/") || e.contains("bad header"),
                "cut at {cut}: {e}"
            );
        }
        let mut bad_size = good.clone();
        bad_size[6 + 8 * 6..6 + 8 * 7].copy_from_slice(b"ffffffff");
        let e = for_chip(leak(bad_size), Chip::GH100).unwrap_err();
        assert!(e.contains("bad header at byte 0"), "{e}");
    }
}
