//! The simulator's own reader of the real firmware files: it finds them, reads their ELF
//! sections and hashes them, so that the simulated FSP and GSP-FMC can check what a driver
//! hands them against NVIDIA's bytes rather than against nvbare's own parsers.
//!
//! Files are `nvidia/<chip>/gsp/<name>-570.144.bin` under a firmware directory: the one
//! given to [`crate::SimGpu::set_firmware_dir`], else `$NVBARE_FIRMWARE_DIR`, else
//! `~/.cache/nvbare/firmware` (the layout `nvbare firmware fetch` writes). A file is read
//! once per process and shared (the GSP-RM image is 63 MB).
//!
//! Formats:
//! - `fmc`: a 32-bit ELF with sections `image`, `hash` (SHA-384 of `image`), `signature`
//!   and `publickey` (what `kfspSetupGspImages`, `kern_fsp_gh100.c`, calls `ucode_image`,
//!   `ucode_hash`, `ucode_sig` and `ucode_pkey`).
//! - `gsp`: a 64-bit ELF with `.fwimage` (the image the radix3 tree carries) and one
//!   `.fwsignature_<family>` per chip family.
//! - `bootloader`: `nvfw_bin_hdr` (nouveau's `nvfw/fw.h`), an `RM_RISCV_UCODE_DESC`
//!   (`rmRiscvUcode.h`) at `header_offset` and the image at `data_offset`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use nvbare_gsp::abi::{NvfwBinHdr, RmRiscvUcodeDesc};
use sha2::{Digest, Sha384};
use zerocopy::FromBytes;

/// The firmware release the simulator models (GSP-RM 570.144).
pub const FIRMWARE_VERSION: &str = "570.144";

/// Why a firmware file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FirmwareError {
    /// The file is not there.
    #[error(
        "firmware file {path} could not be read: {source}; run `nvbare firmware fetch --chip \
         all --cache DIR` and point $NVBARE_FIRMWARE_DIR (or SimGpu::set_firmware_dir) at DIR"
    )]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not the ELF it should be.
    #[error("firmware file {path} is not a little-endian ELF: {why}")]
    BadElf {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: &'static str,
    },
    /// A section the simulator needs is absent or runs past the end of the file.
    #[error("firmware file {path} has no usable section {section}")]
    NoSection {
        /// The file.
        path: PathBuf,
        /// The section name.
        section: String,
    },
    /// The bootloader file's headers are malformed.
    #[error("bootloader file {path} is malformed: {why}")]
    BadBootloader {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: &'static str,
    },
}

/// One section of an ELF file: its name and where its bytes are in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// Section name.
    pub name: String,
    /// File offset of the bytes.
    pub offset: usize,
    /// Byte count.
    pub size: usize,
}

/// Reads the section table of a little-endian ELF32 or ELF64 file. Every section returned
/// lies inside `bytes`; malformed tables give an error, never a panic.
pub fn elf_sections(bytes: &[u8]) -> Result<Vec<Section>, &'static str> {
    let u16_at = |o: usize| -> Option<u16> {
        Some(u16::from_le_bytes(bytes.get(o..o + 2)?.try_into().ok()?))
    };
    let u32_at = |o: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(o..o + 4)?.try_into().ok()?))
    };
    let u64_at = |o: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(o..o + 8)?.try_into().ok()?))
    };
    if bytes.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err("no ELF magic");
    }
    if bytes.get(5) != Some(&1) {
        return Err("not little-endian");
    }
    let wide = match bytes.get(4) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err("unknown ELF class"),
    };
    // e_shoff, e_shentsize, e_shnum, e_shstrndx (ELF spec, "ELF Header").
    let (shoff, entsize, num, strndx) = if wide {
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e))
    } else {
        (
            u32_at(0x20).map(u64::from),
            u16_at(0x2e),
            u16_at(0x30),
            u16_at(0x32),
        )
    };
    let (Some(shoff), Some(entsize), Some(num), Some(strndx)) = (shoff, entsize, num, strndx)
    else {
        return Err("truncated ELF header");
    };
    let shoff = usize::try_from(shoff).map_err(|_| "section table offset out of range")?;
    let (entsize, num) = (usize::from(entsize), usize::from(num));
    if entsize < if wide { 64 } else { 40 } {
        return Err("section header entries too small");
    }
    // (name, offset, size) of section `i`.
    let header = |i: usize| -> Option<(u32, u64, u64)> {
        let at = shoff.checked_add(i.checked_mul(entsize)?)?;
        if wide {
            Some((u32_at(at)?, u64_at(at + 24)?, u64_at(at + 32)?))
        } else {
            Some((
                u32_at(at)?,
                u64::from(u32_at(at + 16)?),
                u64::from(u32_at(at + 20)?),
            ))
        }
    };
    let in_file = |off: u64, size: u64| -> Option<(usize, usize)> {
        let off = usize::try_from(off).ok()?;
        let size = usize::try_from(size).ok()?;
        (off.checked_add(size)? <= bytes.len()).then_some((off, size))
    };
    let (_, str_off, str_size) = header(usize::from(strndx)).ok_or("no string table")?;
    let (str_off, str_size) = in_file(str_off, str_size).ok_or("string table out of range")?;
    let strings = &bytes[str_off..str_off + str_size];
    let mut out = Vec::with_capacity(num);
    for i in 0..num {
        let (name, off, size) = header(i).ok_or("section table out of range")?;
        let Some((offset, size)) = in_file(off, size) else {
            continue;
        };
        let name = usize::try_from(name).ok().and_then(|n| strings.get(n..));
        let name = name.map(|s| &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())]);
        out.push(Section {
            name: String::from_utf8_lossy(name.unwrap_or_default()).into_owned(),
            offset,
            size,
        });
    }
    Ok(out)
}

/// SHA-384 of `bytes`.
pub fn sha384(bytes: &[u8]) -> [u8; 48] {
    Sha384::digest(bytes).into()
}

/// A firmware file read into memory.
#[derive(Debug)]
pub struct FirmwareFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

impl FirmwareFile {
    /// The bytes of ELF section `name`.
    pub fn section(&self, name: &str) -> Result<&[u8], FirmwareError> {
        let sections = elf_sections(&self.bytes).map_err(|why| FirmwareError::BadElf {
            path: self.path.clone(),
            why,
        })?;
        sections
            .iter()
            .find(|s| s.name == name)
            .map(|s| &self.bytes[s.offset..s.offset + s.size])
            .ok_or_else(|| FirmwareError::NoSection {
                path: self.path.clone(),
                section: name.into(),
            })
    }
}

/// The GSP-FMC as the FSP checks it.
#[derive(Clone, Copy, Debug)]
pub struct Fmc<'a> {
    /// `image`: what the driver copies to DMA memory and the FSP hashes.
    pub image: &'a [u8],
    /// `hash`: SHA-384 of `image`.
    pub hash: &'a [u8],
    /// `signature`.
    pub signature: &'a [u8],
    /// `publickey`.
    pub public_key: &'a [u8],
}

impl FirmwareFile {
    /// This file as a GSP-FMC.
    pub fn fmc(&self) -> Result<Fmc<'_>, FirmwareError> {
        Ok(Fmc {
            image: self.section("image")?,
            hash: self.section("hash")?,
            signature: self.section("signature")?,
            public_key: self.section("publickey")?,
        })
    }

    /// This file as the GSP-RM bootloader: its descriptor and its image.
    pub fn bootloader(&self) -> Result<(RmRiscvUcodeDesc, &[u8]), FirmwareError> {
        let bad = |why| FirmwareError::BadBootloader {
            path: self.path.clone(),
            why,
        };
        let (hdr, _) = NvfwBinHdr::read_from_prefix(&self.bytes).map_err(|_| bad("truncated"))?;
        // `NVFW_BIN_MAGIC` (nouveau nvfw/fw.h) is 0x10de.
        if hdr.bin_magic != 0x10de {
            return Err(bad("no 0x10de magic"));
        }
        let at = |o: u32| usize::try_from(o).map_err(|_| bad("offset out of range"));
        let desc_bytes = self
            .bytes
            .get(at(hdr.header_offset)?..)
            .ok_or(bad("descriptor out of range"))?;
        let (desc, _) =
            RmRiscvUcodeDesc::read_from_prefix(desc_bytes).map_err(|_| bad("short descriptor"))?;
        let start = at(hdr.data_offset)?;
        let end = start
            .checked_add(at(hdr.data_size)?)
            .ok_or(bad("data out of range"))?;
        let image = self.bytes.get(start..end).ok_or(bad("data out of range"))?;
        Ok((desc, image))
    }
}

/// Where the simulator looks for firmware when no directory was given.
pub fn default_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("NVBARE_FIRMWARE_DIR") {
        return Some(PathBuf::from(d));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/nvbare/firmware"))
}

/// The path of `nvidia/<chip>/gsp/<name>-570.144.bin` under `dir` (or [`default_dir`]).
pub fn path_of(dir: Option<&Path>, chip: &str, name: &str) -> PathBuf {
    let base = dir.map(Path::to_path_buf).or_else(default_dir);
    base.unwrap_or_default()
        .join("nvidia")
        .join(chip)
        .join("gsp")
        .join(format!("{name}-{FIRMWARE_VERSION}.bin"))
}

/// Loads (once per process) the file `name` of `chip`.
pub fn load(
    dir: Option<&Path>,
    chip: &str,
    name: &str,
) -> Result<Arc<FirmwareFile>, FirmwareError> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Arc<FirmwareFile>>>> = OnceLock::new();
    let path = path_of(dir, chip, name);
    let cache = CACHE.get_or_init(Default::default);
    if let Some(f) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&path) {
        return Ok(f.clone());
    }
    let bytes = std::fs::read(&path).map_err(|source| FirmwareError::Missing {
        path: path.clone(),
        source,
    })?;
    let file = Arc::new(FirmwareFile {
        path: path.clone(),
        bytes,
    });
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(path, file.clone());
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF32 with one section named `sec` holding `data`.
    fn tiny_elf(data: &[u8]) -> Vec<u8> {
        let strtab = b"\0.shstrtab\0sec\0";
        let mut b = vec![0u8; 0x34];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 1;
        b[5] = 1;
        let data_off = b.len();
        b.extend_from_slice(data);
        let str_off = b.len();
        b.extend_from_slice(strtab);
        let shoff = b.len();
        b[0x20..0x24].copy_from_slice(&(shoff as u32).to_le_bytes());
        b[0x2e..0x30].copy_from_slice(&40u16.to_le_bytes());
        b[0x30..0x32].copy_from_slice(&3u16.to_le_bytes());
        b[0x32..0x34].copy_from_slice(&1u16.to_le_bytes());
        let mut sh = |name: u32, off: usize, size: usize| {
            let mut e = [0u8; 40];
            e[0..4].copy_from_slice(&name.to_le_bytes());
            e[16..20].copy_from_slice(&(off as u32).to_le_bytes());
            e[20..24].copy_from_slice(&(size as u32).to_le_bytes());
            b.extend_from_slice(&e);
        };
        sh(0, 0, 0);
        sh(1, str_off, strtab.len());
        sh(11, data_off, data.len());
        b
    }

    #[test]
    fn reads_sections_and_rejects_garbage() {
        let elf = tiny_elf(b"hello");
        let s = elf_sections(&elf).unwrap();
        let sec = s.iter().find(|s| s.name == "sec").unwrap();
        assert_eq!(&elf[sec.offset..sec.offset + sec.size], b"hello");
        assert!(elf_sections(b"nope").is_err());
        // Truncated section table: an error, not a panic.
        assert!(elf_sections(&elf[..elf.len() - 20]).is_err());
        let mut bad = elf.clone();
        bad[0x20..0x24].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(elf_sections(&bad).is_err());
    }

    #[test]
    fn sha384_of_abc_is_the_fips_vector() {
        // FIPS 180-2, appendix D.1.
        let h = sha384(b"abc");
        assert_eq!(&h[..8], &[0xcb, 0x00, 0x75, 0x3f, 0x45, 0xa3, 0x5e, 0x8b]);
    }
}
