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
use crate::cache::{Cache, StoreOutcome};
use crate::digest::Measured;
use crate::progress::Progress;
use std::io::{self, Read};
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
    /// Offered with the wrong bytes; nothing was kept.
    pub mismatched: Vec<(&'static PinnedFile, Measured)>,
}

/// Why [`store_from`] failed: the source's bytes could not be read, or the cache could not
/// take them.
#[derive(Debug)]
pub(crate) enum StoreError {
    /// Reading (or decompressing) the source failed: this copy is unusable, the cache is fine.
    /// (Only the HTTP source reports the error itself; a directory skips the file.)
    Read(#[cfg_attr(not(feature = "http"), allow(dead_code))] io::Error),
    /// Writing the cache failed (disk full, permissions): a message naming the cache path
    /// and what to do. No other source can do better, so this is not a reason to skip a file.
    Cache(String),
}

/// A reader that keeps the first error its inner reader returned, so a failed
/// [`Cache::store`] can tell a bad source from a bad cache.
struct TrackedReader<'a> {
    inner: &'a mut dyn Read,
    error: Option<io::ErrorKind>,
}

impl Read for TrackedReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).inspect_err(|e| {
            if e.kind() != io::ErrorKind::Interrupted {
                self.error.get_or_insert(e.kind());
            }
        })
    }
}

/// [`Cache::store`] of `file` from `reader`, with the failure sorted into a source read error
/// and a cache write error.
pub(crate) fn store_from(
    cache: &Cache,
    file: &'static PinnedFile,
    reader: &mut dyn Read,
) -> Result<StoreOutcome, StoreError> {
    let mut tracked = TrackedReader {
        inner: reader,
        error: None,
    };
    match cache.store(file, &mut tracked) {
        Ok(outcome) => Ok(outcome),
        Err(e) if tracked.error.is_some() => Err(StoreError::Read(e)),
        Err(e) => Err(StoreError::Cache(format!(
            "cannot write {} into the firmware cache: {e}; free space there, make {} writable, \
             or choose another cache with --cache DIR",
            cache.path_of(file).display(),
            cache.root().display()
        ))),
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

    /// Asks this source for `wanted`. `Err` says why the source could not be used at all.
    pub fn supply(
        &self,
        wanted: &[&'static PinnedFile],
        cache: &Cache,
        progress: &Progress,
    ) -> Result<Supplied, String> {
        match self {
            Source::Dir(root) => dir::supply_from_dir(root, wanted, cache, progress),
            Source::Deb(path) => deb::supply_from_deb(path, wanted, cache, progress),
            Source::Apt(apt) => apt.supply(wanted, cache, progress),
            #[cfg(feature = "http")]
            Source::Http(base) => http::supply_from_http(base, wanted, cache, progress),
            #[cfg(not(feature = "http"))]
            Source::Http(_) => Err("built without the http feature".into()),
        }
    }
}
