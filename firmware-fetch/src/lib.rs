//! nvbare-firmware-fetch: locate, download, verify and cache GSP-RM 570.144 firmware.
//!
//! Every file is checked against a SHA-256 compiled into this crate ([`PINNED_FILES`])
//! before it is given its name in the cache, so the driver never feeds the GPU a byte that
//! is not NVIDIA's signed release. Sources, in order: `--from`; the cache
//! (`$XDG_CACHE_HOME/nvbare/firmware`); `/lib/firmware` (plain, `.zst`, `.xz`); Debian's
//! `firmware-nvidia-graphics` package through `apt-get download` with a private sources list;
//! upstream linux-firmware over HTTPS.
//!
//! ```no_run
//! use nvbare_firmware_fetch::{fetch, Cache, FetchOptions, FirmwareChip, Progress, Source};
//! let cache = Cache::new(Cache::default_root()?);
//! let options = FetchOptions { sources: Source::defaults(&cache), cache, progress: Progress::new(true) };
//! let report = fetch(&[FirmwareChip::Gh100], &options)?;
//! println!("{}", report.summary());
//! # Ok::<(), nvbare_firmware_fetch::FetchError>(())
//! ```
#![forbid(unsafe_code)]

mod cache;
mod chip;
mod cli;
pub mod digest;
mod error;
mod fetch;
pub mod links;
mod pinned;
mod progress;
pub mod source;

pub use cache::{Cache, CacheState, StoreOutcome};
pub use chip::{FirmwareChip, known_chip_names, parse_chip_selection};
pub use cli::{FetchArgs, FirmwareCommand, run};
pub use error::{FetchError, WrongFile};
pub use fetch::{FetchOptions, FetchReport, Origin, fetch, fetch_files, wanted_files};
pub use pinned::{FIRMWARE_VERSION, PINNED_FILES, PinnedFile, files_in_dir};
pub use progress::Progress;
pub use source::Source;

/// Reads a cached firmware file and verifies it again, for a loader about to hand it to
/// the GPU: the bytes returned are exactly the pinned ones.
pub fn read_verified(cache: &Cache, file: &PinnedFile) -> Result<Vec<u8>, FetchError> {
    let path = cache.path_of(file);
    let bytes = std::fs::read(&path).map_err(|e| FetchError::NotFound {
        missing: vec![file.path.to_owned()],
        tried: vec![(path.display().to_string(), e.to_string())],
    })?;
    let found = digest::measure(&mut bytes.as_slice()).map_err(|error| FetchError::Cache {
        path: path.clone(),
        error,
    })?;
    if found.sha256 != file.sha256 || found.size != file.size {
        return Err(FetchError::CachedFileAltered {
            path,
            expected: digest::Measured {
                size: file.size,
                sha256: file.sha256,
            },
            found,
        });
    }
    Ok(bytes)
}
