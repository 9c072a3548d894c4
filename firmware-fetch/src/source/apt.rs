//! Debian's package through `apt-get download`, with a private sources list, lists and
//! cache directory, so the system's apt configuration is never touched.

use super::{SourceError, Supplied};
use crate::PinnedFile;
use crate::cache::Cache;
use crate::progress::Progress;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The package that carries the GSP firmware in Debian.
pub const PACKAGE: &str = "firmware-nvidia-graphics";

/// Keyring Debian's archive is signed with (package `debian-archive-keyring`).
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Suites that carry 570.144 (trixie-backports, and sid as a fallback).
const SUITES: &[&str] = &["trixie-backports", "sid"];

/// Debian's mirror; `NVBARE_DEBIAN_MIRROR` overrides it.
const DEFAULT_MIRROR: &str = "http://deb.debian.org/debian";

#[derive(Debug, Clone)]
pub struct AptSource {
    /// Private state: sources list, lists, archives.
    work_dir: PathBuf,
    /// The program run as apt-get.
    apt_get: PathBuf,
}

/// The directory a download goes to, emptied before it and removed after it whatever
/// happened, so a download that failed half-way leaves nothing in the cache.
struct DownloadDir(PathBuf);

impl DownloadDir {
    fn fresh(path: PathBuf) -> std::io::Result<DownloadDir> {
        match std::fs::remove_dir_all(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        std::fs::create_dir_all(&path)?;
        Ok(DownloadDir(path))
    }
}

impl Drop for DownloadDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl AptSource {
    pub fn new(work_dir: PathBuf) -> AptSource {
        AptSource {
            work_dir,
            apt_get: PathBuf::from("apt-get"),
        }
    }

    /// The same source running `program` instead of `apt-get` from `PATH` (a wrapper, or a
    /// stand-in in tests).
    pub fn with_apt_get(mut self, program: PathBuf) -> AptSource {
        self.apt_get = program;
        self
    }

    fn options(&self) -> Vec<String> {
        let w = &self.work_dir;
        vec![
            format!(
                "-oDir::Etc::SourceList={}",
                w.join("sources.list").display()
            ),
            "-oDir::Etc::SourceParts=/nonexistent".into(),
            format!("-oDir::State::Lists={}", w.join("lists").display()),
            format!("-oDir::Cache={}", w.join("cache").display()),
            "-oAPT::Get::List-Cleanup=0".into(),
            "-qq".into(),
        ]
    }

    fn run_apt(&self, args: &[&str], cwd: &Path) -> Result<(), String> {
        let output = Command::new(&self.apt_get)
            .args(self.options())
            .args(args)
            .current_dir(cwd)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.apt_get.display()))?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .lines()
            .find(|l| l.starts_with("E:"))
            .or_else(|| stderr.lines().last())
            .unwrap_or("no message");
        Err(format!("apt-get {} failed: {}", args[0], last.trim()))
    }

    /// Downloads the package into a private directory and unpacks what is wanted.
    pub(super) fn supply(
        &self,
        wanted: &[&'static PinnedFile],
        cache: &Cache,
        progress: &Progress,
    ) -> Result<Supplied, SourceError> {
        if !Path::new(KEYRING).exists() {
            return Err(format!("not a Debian system ({KEYRING} missing)").into());
        }
        let mirror =
            std::env::var("NVBARE_DEBIAN_MIRROR").unwrap_or_else(|_| DEFAULT_MIRROR.into());
        // The work directory lives in the cache: failing to write it is a cache failure.
        let cache_write = |path: &Path| {
            let path = path.to_owned();
            move |error| SourceError::CacheWrite { path, error }
        };
        for dir in [
            self.work_dir.join("lists/partial"),
            self.work_dir.join("cache/archives/partial"),
        ] {
            std::fs::create_dir_all(&dir).map_err(cache_write(&dir))?;
        }
        let download_path = self.work_dir.join("download");
        let download =
            DownloadDir::fresh(download_path.clone()).map_err(cache_write(&download_path))?;
        let sources: String = SUITES
            .iter()
            .map(|s| format!("deb [signed-by={KEYRING}] {mirror} {s} non-free-firmware\n"))
            .collect();
        let list = self.work_dir.join("sources.list");
        std::fs::write(&list, sources).map_err(cache_write(&list))?;

        progress.note(&format!(
            "apt-get update (private lists in {})",
            self.work_dir.display()
        ));
        // Without --error-on=any an unreachable mirror is only a warning, and the download
        // then fails with a less helpful "Unable to locate package".
        self.run_apt(&["update", "--error-on=any"], &self.work_dir)?;
        progress.note(&format!("apt-get download {PACKAGE}"));
        self.run_apt(&["download", PACKAGE], &download.0)?;
        let deb = std::fs::read_dir(&download.0)
            .map_err(|e| format!("{}: {e}", download.0.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "deb"))
            .ok_or("apt-get download produced no .deb")?;
        // The package is large and every file we need is verified in the cache once this
        // returns: `download` is removed with it either way.
        super::supply_from_deb(&deb, wanted, cache, progress)
    }
}
