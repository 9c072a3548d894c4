//! The GSP-RM 570.144 firmware a boot needs, from the cache `nvbare firmware fetch` fills:
//! every file read and verified against its pinned SHA-256 again before it is handed to the
//! GPU. When a file is missing (or altered) it is fetched first by the same code
//! `nvbare firmware fetch` runs, with its progress output; with `--offline` that is an error
//! naming the command to run instead.

use std::path::{Path, PathBuf};

use nvbare_core::boot::booter::BooterUcode;
use nvbare_core::boot::{Firmware, FirmwareFile};
use nvbare_core::chip::{Arch, BootPath, Chip};
use nvbare_firmware_fetch::{
    Cache, FetchError, FetchOptions, FirmwareChip, PinnedFile, Progress, Source, fetch,
    read_verified,
};

use super::error::CliError;

/// Where the firmware is, and whether it may be fetched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FirmwareSource {
    /// The cache directory (`nvidia/<chip>/gsp/*-570.144.bin` under it).
    pub dir: PathBuf,
    /// `--offline`: never fetch.
    pub offline: bool,
}

/// A chip's firmware files, verified: the FSP path's three, or the booter path's four.
pub struct FirmwareFiles {
    /// `fmc-570.144.bin` (empty on the booter path).
    pub fmc: Vec<u8>,
    /// `gsp-570.144.bin`.
    pub gsp: Vec<u8>,
    /// `bootloader-570.144.bin`.
    pub bootloader: Vec<u8>,
    /// `booter_load-570.144.bin` (empty on the FSP path).
    pub booter_load: Vec<u8>,
    /// `booter_unload-570.144.bin` (empty on the FSP path).
    pub booter_unload: Vec<u8>,
    /// `gen_bootloader-570.144.bin` (Turing, GA100: their FWSEC runs through it).
    pub generic_bootloader: Vec<u8>,
    /// Whether they were fetched into the cache now.
    pub fetched: bool,
}

impl FirmwareFiles {
    /// The files as the boot takes them.
    pub fn firmware(&self) -> Firmware<'_> {
        Firmware {
            fmc: &self.fmc,
            gsp: &self.gsp,
            bootloader: &self.bootloader,
            booter: nvbare_core::boot::booter::BooterFirmware {
                booter_load: &self.booter_load,
                booter_unload: &self.booter_unload,
                vbios: None,
                generic_bootloader: &self.generic_bootloader,
            },
        }
    }
}

/// The `nvbare firmware fetch` command that fills `dir` with `chip`'s files.
pub fn fetch_command(chip: &str, dir: &Path) -> String {
    let default = Cache::default_root().ok();
    if default.as_deref() == Some(dir) {
        format!("nvbare firmware fetch --chip {chip}")
    } else {
        format!(
            "nvbare firmware fetch --chip {chip} --cache {}",
            dir.display()
        )
    }
}

/// The files a boot may take, in the order of [`FirmwareFiles`]' fields.
const BOOT_FILES: [&str; 6] = [
    FirmwareFile::Fmc.file_name(),
    FirmwareFile::GspRm.file_name(),
    FirmwareFile::Bootloader.file_name(),
    BooterUcode::Load.file_name(),
    BooterUcode::Unload.file_name(),
    "gen_bootloader-570.144.bin",
];

/// Which of [`BOOT_FILES`] a chip's boot path needs.
fn needed(chip: Chip) -> [bool; 6] {
    // Turing and GA100 carry FWSEC v2, which runs through the generic bootloader.
    let generic = chip.arch() == Arch::Turing || chip == Chip::GA100;
    match chip.arch().boot_path() {
        BootPath::FspChainOfTrust => [true, true, true, false, false, false],
        BootPath::Sec2Booter => [false, true, true, true, true, generic],
    }
}

/// Reads `chip`'s files from the cache; `None` when one is missing or altered (a fetch
/// replaces it), any other failure as it is.
fn read_cached(
    cache: &Cache,
    files: &[&'static PinnedFile],
    chip: Chip,
) -> Result<Option<[Vec<u8>; 6]>, FetchError> {
    let mut got: [Option<Vec<u8>>; 6] = Default::default();
    for f in files {
        // Files a boot does not use (none in the pinned set of the chips the VFIO path
        // boots) are not read.
        let Some(slot) = BOOT_FILES.iter().position(|b| *b == f.file_name()) else {
            continue;
        };
        if !needed(chip)[slot] {
            continue;
        }
        match read_verified(cache, f) {
            Ok(bytes) => got[slot] = Some(bytes),
            Err(FetchError::NotFound { .. } | FetchError::CachedFileAltered { .. }) => {
                return Ok(None);
            }
            Err(e) => return Err(e),
        }
    }
    let want = needed(chip);
    if got.iter().zip(want).any(|(g, w)| w && g.is_none()) {
        return Ok(None);
    }
    Ok(Some(got.map(Option::unwrap_or_default)))
}

/// `chip`'s firmware from `source`, fetched into it first when it is not there.
pub fn load(chip: Chip, source: &FirmwareSource) -> Result<FirmwareFiles, CliError> {
    let fw_chip = FirmwareChip::of(chip).ok_or(CliError::ChipNotBootable { chip })?;
    let name = fw_chip.dir_name();
    let dir = source.dir.clone();
    let cache = Cache::new(&dir);
    let files: Vec<&'static PinnedFile> = fw_chip.pinned_files().collect();
    let fetch_err = |source| CliError::FirmwareFetch {
        chip: name,
        dir: dir.clone(),
        source: Box::new(source),
    };
    let mut fetched = false;
    let bytes = match read_cached(&cache, &files, chip).map_err(fetch_err)? {
        Some(b) => b,
        None if source.offline => {
            return Err(CliError::FirmwareNotCached {
                chip: name,
                dir: dir.clone(),
            });
        }
        None => {
            eprintln!(
                "nvbare: the GSP-RM 570.144 firmware for {name} is not in {}: fetching it (as \
                 `{}` does)",
                dir.display(),
                fetch_command(name, &dir)
            );
            let options = FetchOptions {
                sources: Source::defaults(&cache),
                cache: cache.clone(),
                progress: Progress::new(false),
            };
            let report = fetch(&[fw_chip], &options).map_err(fetch_err)?;
            eprintln!("{}", report.summary());
            fetched = true;
            read_cached(&cache, &files, chip)
                .map_err(fetch_err)?
                .ok_or_else(|| CliError::FirmwareNotCached {
                    chip: name,
                    dir: dir.clone(),
                })?
        }
    };
    let [
        fmc,
        gsp,
        bootloader,
        booter_load,
        booter_unload,
        generic_bootloader,
    ] = bytes;
    Ok(FirmwareFiles {
        fmc,
        gsp,
        bootloader,
        booter_load,
        booter_unload,
        generic_bootloader,
        fetched,
    })
}
