//! Where firmware comes from. Each source is asked for the files still missing and stores
//! the ones it has into the cache, where they are verified before they get their name.

mod apt;
mod ar;
mod deb;
mod dir;
#[cfg(feature = "http")]
mod http;

pub use apt::AptSource;
pub(crate) use deb::supply_from_deb;

use crate::PinnedFile;
use crate::cache::Cache;
use crate::digest::Offered;
use crate::progress::Progress;
use std::io;
use std::path::PathBuf;

/// Upstream linux-firmware, for machines with internet.
pub const UPSTREAM_URL: &str =
    "https://git.kernel.org/pub/scm/linux/kernel/git/firmware/linux-firmware.git/plain";

/// The directory distributions install firmware into.
pub const SYSTEM_FIRMWARE_DIR: &str = "/lib/firmware";

/// One place firmware can come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A firmware tree on disk (`/lib/firmware`, a linux-firmware checkout, an unpacked
    /// package); files may be plain, `.zst` or `.xz`.
    Dir(PathBuf),
    /// A `firmware-nvidia-graphics` Debian package file.
    Deb(PathBuf),
    /// Debian's package, downloaded with `apt-get download` through a private sources list.
    Apt(AptSource),
    /// A linux-firmware tree over HTTP(S): `<base>/nvidia/<chip>/gsp/<file>`, links from
    /// `<base>/WHENCE`.
    Http(String),
}

/// What one source did for the files asked of it.
#[derive(Debug, Default)]
pub struct Supplied {
    /// Verified and now in the cache.
    pub stored: Vec<&'static PinnedFile>,
    /// Offered with the wrong bytes; nothing of them was kept.
    pub mismatched: Vec<(&'static PinnedFile, Offered)>,
    /// Present in the source but unreadable there (permissions, a truncated `.xz`, a bad
    /// `.zst`); the other files were still taken.
    pub unreadable: Vec<Unreadable>,
}

/// A file a source has but could not read.
#[derive(Debug)]
pub struct Unreadable {
    pub file: &'static PinnedFile,
    /// The source's copy (with its `.zst` / `.xz` extension, if any).
    pub path: PathBuf,
    pub error: io::Error,
}

/// Why a source gave nothing.
#[derive(Debug)]
pub enum SourceError {
    /// The source cannot be used at all (unreachable, not a package, no apt-get): why.
    Unusable(String),
    /// Writing `path` in the cache failed (disk full, read-only, permissions): no other
    /// source can do better, so fetching stops here.
    CacheWrite { path: PathBuf, error: io::Error },
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceError::Unusable(why) => f.write_str(why),
            SourceError::CacheWrite { path, error } => {
                write!(f, "cannot write {} in the cache: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for SourceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SourceError::Unusable(_) => None,
            SourceError::CacheWrite { error, .. } => Some(error),
        }
    }
}

impl From<String> for SourceError {
    fn from(why: String) -> SourceError {
        SourceError::Unusable(why)
    }
}

impl From<&str> for SourceError {
    fn from(why: &str) -> SourceError {
        SourceError::Unusable(why.to_owned())
    }
}

impl Source {
    /// Parses `--from`: an `http://` or `https://` URL, a `.deb` file, or a directory.
    pub fn from_argument(arg: &str) -> Result<Source, crate::FetchError> {
        let unusable = |reason: &str| crate::FetchError::UnusableSource {
            source: arg.to_owned(),
            reason: reason.to_owned(),
        };
        if arg.starts_with("http://") || arg.starts_with("https://") {
            return Ok(Source::Http(arg.trim_end_matches('/').to_owned()));
        }
        if arg.contains("://") {
            return Err(unusable("only http:// and https:// URLs are supported"));
        }
        let path = PathBuf::from(arg);
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(unusable("no such file or directory"))
            }
            Err(e) => Err(unusable(&e.to_string())),
            Ok(m) if m.is_dir() => Ok(Source::Dir(path)),
            Ok(_) if arg.ends_with(".deb") => Ok(Source::Deb(path)),
            Ok(_) => Err(unusable("not a directory and not a .deb file")),
        }
    }

    /// The sources tried when `--from` is not given, after the cache.
    pub fn defaults(cache: &Cache) -> Vec<Source> {
        vec![
            Source::Dir(PathBuf::from(SYSTEM_FIRMWARE_DIR)),
            Source::Apt(AptSource::new(cache.root().join(".apt"))),
            Source::Http(UPSTREAM_URL.to_owned()),
        ]
    }

    /// A short name for messages and the summary.
    pub fn describe(&self) -> String {
        match self {
            Source::Dir(p) => p.display().to_string(),
            Source::Deb(p) => p.display().to_string(),
            Source::Apt(_) => "Debian package firmware-nvidia-graphics (apt-get download)".into(),
            Source::Http(url) => url.clone(),
        }
    }

    /// Asks this source for `wanted`. `Err` says why the source could not be used at all,
    /// or that the cache could not take what it gave.
    pub fn supply(
        &self,
        wanted: &[&'static PinnedFile],
        cache: &Cache,
        progress: &Progress,
    ) -> Result<Supplied, SourceError> {
        match self {
            Source::Dir(root) => dir::supply_from_dir(root, wanted, cache, progress),
            Source::Deb(path) => deb::supply_from_deb(path, wanted, cache, progress),
            Source::Apt(apt) => apt.supply(wanted, cache, progress),
            #[cfg(feature = "http")]
            Source::Http(base) => http::supply_from_http(base, wanted, cache, progress),
            #[cfg(not(feature = "http"))]
            Source::Http(_) => Err(SourceError::Unusable(
                "built without the http feature".into(),
            )),
        }
    }
}
