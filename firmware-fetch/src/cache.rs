//! The verified firmware cache: a linux-firmware-shaped tree (`<root>/nvidia/<chip>/gsp/...`)
//! holding only files whose SHA-256 matched the pinned value. Files enter it by writing a
//! temporary file next to their destination, verifying it, and renaming it into place, so a
//! crash or a bad source never leaves a half-written or unverified file under the real name.

use crate::PinnedFile;
use crate::digest::{self, CopyError, Measured, Offered};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where verified firmware lives.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

/// What the cache holds for one pinned file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheState {
    /// Present and its bytes hash to the pinned value.
    Valid,
    /// Not present.
    Missing,
    /// Present but altered: these are the bytes found.
    Altered(Measured),
}

impl CacheState {
    /// What `measured` (the bytes found under `file`'s name, if any) means for `file`.
    pub fn judge(file: &PinnedFile, measured: Option<Measured>) -> CacheState {
        match measured {
            None => CacheState::Missing,
            Some(m) if m.sha256 == file.sha256 && m.size == file.size => CacheState::Valid,
            Some(m) => CacheState::Altered(m),
        }
    }
}

/// The result of offering bytes for a pinned file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreOutcome {
    /// Verified and renamed into place.
    Stored,
    /// Not the pinned bytes (measured whole, up to `MEASURE_LIMIT`); the temporary copy
    /// was deleted.
    Mismatch(Offered),
}

/// How much of a wrong source [`Cache::store`] reads to report its real size and hash (the
/// largest pinned file is 75 MB); a source longer than this is reported as "more than".
pub const MEASURE_LIMIT: u64 = 1 << 30;

/// Why [`Cache::store`] failed.
#[derive(Debug)]
pub enum StoreError {
    /// Reading (or decompressing) the source failed: this copy is unusable, the cache is fine.
    Read(io::Error),
    /// Writing `path` in the cache failed (disk full, read-only, permissions): no other
    /// source can do better.
    Write { path: PathBuf, error: io::Error },
}

impl StoreError {
    fn write(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
        move |error| StoreError::Write {
            path: path.to_owned(),
            error,
        }
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary file that is deleted unless it was renamed into place.
struct TempFile {
    path: PathBuf,
    keep: bool,
}

impl TempFile {
    fn beside(dest: &Path) -> TempFile {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = dest
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("firmware");
        let path = dest.with_file_name(format!(".{name}.partial-{}-{n}", std::process::id()));
        TempFile { path, keep: false }
    }

    fn rename_to(mut self, dest: &Path) -> io::Result<()> {
        fs::rename(&self.path, dest)?;
        self.keep = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_file(&self.path);
        }
    }
}

impl Cache {
    /// A cache rooted at `root` (created on first store).
    pub fn new(root: impl Into<PathBuf>) -> Cache {
        Cache { root: root.into() }
    }

    /// `$XDG_CACHE_HOME/nvbare/firmware`, else `$HOME/.cache/nvbare/firmware`; an error when
    /// neither is set to an absolute path (never a directory relative to wherever the
    /// command happens to run).
    pub fn default_root() -> Result<PathBuf, crate::FetchError> {
        default_root_from(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))
    }

    /// The cache's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `file` lives in the cache.
    pub fn path_of(&self, file: &PinnedFile) -> PathBuf {
        self.root.join(file.path)
    }

    /// Hashes the cached copy of `file` and compares it with `file`'s pinned hash.
    pub fn check(&self, file: &PinnedFile) -> io::Result<CacheState> {
        Ok(CacheState::judge(file, self.measure(file)?))
    }

    /// Hashes the cached copy of `file`; `None` when there is none.
    pub fn measure(&self, file: &PinnedFile) -> io::Result<Option<Measured>> {
        let mut f = match File::open(self.path_of(file)) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        digest::measure(&mut f).map(Some)
    }

    /// The (device, inode) of the cached copy, so hard links to one content are hashed
    /// once per run (each name is still judged against its own pinned hash). `None` where
    /// the platform has no inodes or the file is absent.
    pub fn file_identity(&self, file: &PinnedFile) -> Option<(u64, u64)> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let m = fs::metadata(self.path_of(file)).ok()?;
            Some((m.dev(), m.ino()))
        }
        #[cfg(not(unix))]
        {
            let _ = file;
            None
        }
    }

    /// Removes the cached copy of `file` (used for an altered one).
    pub fn remove(&self, file: &PinnedFile) -> io::Result<()> {
        match fs::remove_file(self.path_of(file)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    fn prepare_dir(&self, dest: &Path) -> io::Result<()> {
        match dest.parent() {
            Some(dir) => fs::create_dir_all(dir),
            None => Ok(()),
        }
    }

    /// Streams `reader` into a temporary file, and renames it to `file`'s place only when
    /// its size and SHA-256 equal the pinned ones. Writes at most one byte more than the
    /// pinned size; a longer source is read on (up to `MEASURE_LIMIT`) only to be measured.
    pub fn store(
        &self,
        file: &PinnedFile,
        reader: &mut dyn Read,
    ) -> Result<StoreOutcome, StoreError> {
        let dest = self.path_of(file);
        self.prepare_dir(&dest)
            .map_err(StoreError::write(dest.parent().unwrap_or(&self.root)))?;
        let temp = TempFile::beside(&dest);
        let mut out = File::create(&temp.path).map_err(StoreError::write(&temp.path))?;
        let offered =
            digest::copy_prefix_measuring_all(reader, &mut out, file.size + 1, MEASURE_LIMIT)
                .map_err(|e| match e {
                    CopyError::Read(e) => StoreError::Read(e),
                    CopyError::Write(error) => StoreError::Write {
                        path: temp.path.clone(),
                        error,
                    },
                })?;
        match offered {
            Offered::Bytes(m) if m.size == file.size && m.sha256 == file.sha256 => {}
            _ => return Ok(StoreOutcome::Mismatch(offered)),
        }
        out.sync_all().map_err(StoreError::write(&temp.path))?;
        drop(out);
        temp.rename_to(&dest).map_err(StoreError::write(&dest))?;
        Ok(StoreOutcome::Stored)
    }

    /// Installs `file` from `existing`, a file already verified to hold its bytes (another
    /// cached file with the same hash, or a staged extract): a hard link where the file
    /// system allows it, else a copy; either way through a temporary name and a rename.
    pub fn install_verified(&self, file: &PinnedFile, existing: &Path) -> io::Result<()> {
        let dest = self.path_of(file);
        if dest == existing {
            return Ok(());
        }
        self.prepare_dir(&dest)?;
        let temp = TempFile::beside(&dest);
        if fs::hard_link(existing, &temp.path).is_err() {
            fs::copy(existing, &temp.path)?;
        }
        temp.rename_to(&dest)
    }

    /// Deletes temporary files and staging directories left by runs that were killed
    /// (their process no longer exists); those of live runs are left alone.
    pub fn remove_leftovers(&self) {
        let dead = |name: &str, marker: &str| -> bool {
            let Some(rest) = name.split(marker).nth(1) else {
                return false;
            };
            let pid = rest.split('-').next().unwrap_or("");
            !pid.is_empty()
                && pid.bytes().all(|b| b.is_ascii_digit())
                && !Path::new("/proc").join(pid).exists()
        };
        let Ok(top) = fs::read_dir(&self.root) else {
            return;
        };
        for entry in top.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(".staging-") && dead(&name, ".staging-") {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
        let Ok(chips) = fs::read_dir(self.root.join("nvidia")) else {
            return;
        };
        for chip in chips.flatten() {
            let Ok(files) = fs::read_dir(chip.path().join("gsp")) else {
                continue;
            };
            for file in files.flatten() {
                let name = file.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') && dead(&name, ".partial-") {
                    let _ = fs::remove_file(file.path());
                }
            }
        }
    }

    /// A private directory for extracts that are not verified yet; deleted when dropped.
    pub fn staging_dir(&self) -> io::Result<StagingDir> {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = self
            .root
            .join(format!(".staging-{}-{n}", std::process::id()));
        fs::create_dir_all(&path)?;
        Ok(StagingDir { path })
    }
}

/// [`Cache::default_root`] from the two variables' values. A relative `XDG_CACHE_HOME` is
/// ignored, as the XDG base directory specification says.
fn default_root_from(
    xdg_cache_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Result<PathBuf, crate::FetchError> {
    let absolute = |v: Option<std::ffi::OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    let base = absolute(xdg_cache_home)
        .or_else(|| absolute(home).map(|h| h.join(".cache")))
        .ok_or(crate::FetchError::NoCacheDir)?;
    Ok(base.join("nvbare").join("firmware"))
}

/// A directory removed with everything in it when dropped.
#[derive(Debug)]
pub struct StagingDir {
    path: PathBuf,
}

impl StagingDir {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn pinned_for(bytes: &[u8]) -> PinnedFile {
        PinnedFile {
            path: "nvidia/test/gsp/x-570.144.bin",
            size: bytes.len() as u64,
            sha256: Sha256::digest(bytes).into(),
        }
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn store_keeps_only_verified_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        let file = pinned_for(b"firmware bytes");
        assert_eq!(cache.check(&file).unwrap(), CacheState::Missing);

        let out = cache.store(&file, &mut &b"firmware bytez"[..]).unwrap();
        assert!(matches!(out, StoreOutcome::Mismatch(Offered::Bytes(m)) if m.size == 14));
        let dir = cache.path_of(&file).parent().unwrap().to_owned();
        assert!(entries(&dir).is_empty(), "no temp file may remain");

        let out = cache
            .store(&file, &mut &b"firmware bytes and more"[..])
            .unwrap();
        // Measured whole, not as the 15-byte prefix that was written.
        assert!(matches!(out, StoreOutcome::Mismatch(Offered::Bytes(m)) if m.size == 23));
        assert!(entries(&dir).is_empty());

        assert_eq!(
            cache.store(&file, &mut &b"firmware bytes"[..]).unwrap(),
            StoreOutcome::Stored
        );
        assert_eq!(entries(&dir), ["x-570.144.bin"]);
        assert_eq!(cache.check(&file).unwrap(), CacheState::Valid);
    }

    #[test]
    fn one_flipped_byte_is_seen_as_altered() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        let file = pinned_for(b"0123456789");
        cache.store(&file, &mut &b"0123456789"[..]).unwrap();
        let path = cache.path_of(&file);
        let mut bytes = fs::read(&path).unwrap();
        bytes[4] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(matches!(cache.check(&file).unwrap(), CacheState::Altered(m) if m.size == 10));
    }

    #[test]
    fn leftovers_of_dead_runs_are_removed_and_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        let gsp_dir = tmp.path().join("nvidia/gh100/gsp");
        fs::create_dir_all(&gsp_dir).unwrap();
        // No process has pid 4194305 (above Linux's pid_max limit).
        fs::create_dir_all(tmp.path().join(".staging-4194305-0")).unwrap();
        fs::write(gsp_dir.join(".fmc-570.144.bin.partial-4194305-3"), b"half").unwrap();
        let live = format!(".gsp-570.144.bin.partial-{}-0", std::process::id());
        fs::write(gsp_dir.join(&live), b"in progress").unwrap();
        fs::write(gsp_dir.join("fmc-570.144.bin"), b"kept").unwrap();
        cache.remove_leftovers();
        assert_eq!(entries(tmp.path()), ["nvidia"]);
        assert_eq!(entries(&gsp_dir), [live.as_str(), "fmc-570.144.bin"]);
    }

    #[test]
    fn the_default_cache_is_never_relative_to_the_current_directory() {
        let root = |xdg: Option<&str>, home: Option<&str>| {
            default_root_from(xdg.map(Into::into), home.map(Into::into))
        };
        assert_eq!(
            root(Some("/x/cache"), Some("/home/u")).unwrap(),
            Path::new("/x/cache/nvbare/firmware")
        );
        assert_eq!(
            root(None, Some("/home/u")).unwrap(),
            Path::new("/home/u/.cache/nvbare/firmware")
        );
        // Empty or relative XDG_CACHE_HOME is ignored.
        for xdg in ["", "rel/cache"] {
            assert_eq!(
                root(Some(xdg), Some("/home/u")).unwrap(),
                Path::new("/home/u/.cache/nvbare/firmware")
            );
        }
        // Issue 14: with HOME unset the cache landed in ./.cache; now it is an error.
        for home in [None, Some(""), Some("relative")] {
            let err = root(None, home).unwrap_err();
            assert!(matches!(err, crate::FetchError::NoCacheDir), "{home:?}");
            assert!(err.to_string().contains("--cache DIR"), "{err}");
        }
    }

    #[test]
    fn staging_dir_disappears_on_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        let staging = cache.staging_dir().unwrap();
        let p = staging.path().to_owned();
        fs::write(p.join("a"), b"x").unwrap();
        drop(staging);
        assert!(!p.exists());
    }
}
