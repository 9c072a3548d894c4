//! The GSP firmware, from the boot module: a `newc` cpio archive (what `cpio -H newc` and
//! every initramfs tool write) holding `nvidia/<chip>/gsp/{fmc,gsp,bootloader}-570.144.bin`.
//! The files are used where the loader put them; nothing is copied.

use alloc::format;
use alloc::string::String;

use nvbare_core::boot::{Firmware, FirmwareFile};
use nvbare_core::chip::Chip;

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

/// The chip's three files from `archive`.
pub fn for_chip(archive: &'static [u8], chip: Chip) -> Result<Firmware<'static>, String> {
    let dir = format!("nvidia/{}/gsp/", chip.firmware_dir());
    let find = |file: FirmwareFile| -> Result<&'static [u8], String> {
        for e in entries(archive) {
            let e = e.map_err(|at| {
                format!("the firmware module is not a newc cpio archive (bad header at byte {at})")
            })?;
            let name = e.name.strip_prefix(b"./").unwrap_or(e.name);
            if name.strip_prefix(dir.as_bytes()) == Some(file.file_name().as_bytes()) {
                return Ok(e.data);
            }
        }
        Err(format!(
            "the firmware module has no {dir}{}: build it from the firmware cache \
             (`cpio -H newc` of nvidia/{}/gsp, as tests/vm/embed does)",
            file.file_name(),
            chip.firmware_dir()
        ))
    };
    Ok(Firmware {
        fmc: find(FirmwareFile::Fmc)?,
        gsp: find(FirmwareFile::GspRm)?,
        bootloader: find(FirmwareFile::Bootloader)?,
    })
}
