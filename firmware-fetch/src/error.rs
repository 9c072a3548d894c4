//! The one error type of firmware fetching: each variant names the problem and the remedy.

use crate::digest::{Measured, Offered, to_hex};
use std::path::PathBuf;

/// Why fetching firmware failed. `Display` gives one line meant for the user.
#[derive(Debug)]
pub enum FetchError {
    /// `--chip` named nothing we know.
    UnknownChip { given: String },
    /// `--from` cannot be used at all (missing path, unsupported URL scheme, not a .deb).
    UnusableSource { source: String, reason: String },
    /// Neither `XDG_CACHE_HOME` nor `HOME` names a directory, and no `--cache` was given.
    NoCacheDir,
    /// The only source offered a file with the wrong bytes; that file was not kept.
    HashMismatch(Box<WrongFile>),
    /// The only source has `file` but cannot read it (permissions, a truncated `.xz`, a bad
    /// `.zst`).
    Unreadable {
        file: String,
        path: PathBuf,
        error: std::io::Error,
        /// Other files that source gave right (verified and cached).
        kept: usize,
    },
    /// No source supplied every file.
    NotFound {
        missing: Vec<String>,
        tried: Vec<(String, String)>,
    },
    /// Writing the cache failed at `path` (disk full, read-only, permissions).
    Cache {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A cached file a loader asked for no longer holds its pinned bytes.
    CachedFileAltered {
        path: PathBuf,
        expected: Measured,
        found: Measured,
    },
    /// After every store, these cached names still do not hold their pinned bytes: a link
    /// made by hand (e.g. a linked directory) makes them one file with names that need
    /// different bytes.
    LinkedInCache { dir: PathBuf, files: Vec<String> },
}

/// What [`FetchError::HashMismatch`] reports.
#[derive(Debug)]
pub struct WrongFile {
    pub file: String,
    pub source: String,
    pub expected: Measured,
    /// What the source had, measured whole.
    pub offered: Offered,
    /// Other files that source gave right (verified and cached).
    pub kept: usize,
    /// Other files it offered wrong as well.
    pub also_wrong: usize,
}

/// `", and the 5 other files were verified and cached"`, or nothing.
fn kept_clause(kept: usize) -> String {
    match kept {
        0 => String::new(),
        1 => ", but the 1 other file was verified and cached".into(),
        n => format!(", but the {n} other files were verified and cached"),
    }
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::UnknownChip { given } => write!(
                f,
                "unknown chip '{given}'; known: {}",
                crate::chip::known_chip_names()
            ),
            FetchError::UnusableSource { source, reason } => write!(
                f,
                "--from {source}: {reason}; give a directory holding nvidia/<chip>/gsp/*-570.144.bin, \
                 a firmware-nvidia-graphics .deb, or an http(s):// URL of a linux-firmware tree"
            ),
            FetchError::NoCacheDir => write!(
                f,
                "no place for the firmware cache: neither XDG_CACHE_HOME nor HOME is set to an \
                 absolute directory; give one with --cache DIR"
            ),
            FetchError::HashMismatch(wrong) => {
                let WrongFile {
                    file,
                    source,
                    expected,
                    offered,
                    kept,
                    also_wrong,
                } = &**wrong;
                let others = match also_wrong {
                    0 => String::new(),
                    n => format!(" (nor {n} other file(s) with wrong bytes)"),
                };
                write!(
                    f,
                    "{file} from {source} is not the pinned 570.144 file: it has {offered}, expected \
                     sha256 {} ({} bytes); it was not kept{others}{}; fetch it from another source \
                     (e.g. --from a firmware-nvidia-graphics .deb)",
                    to_hex(&expected.sha256),
                    expected.size,
                    kept_clause(*kept)
                )
            }
            FetchError::Unreadable {
                file,
                path,
                error,
                kept,
            } => write!(
                f,
                "cannot read {} (for {file}): {error}{}; make it readable or replace it with a good \
                 copy (or fetch from another source), then run again",
                path.display(),
                kept_clause(*kept)
            ),
            FetchError::NotFound { missing, tried } => {
                let tried: Vec<String> = tried
                    .iter()
                    .map(|(s, why)| format!("{s} ({why})"))
                    .collect();
                write!(
                    f,
                    "could not get {}; tried: {}; supply the files by hand: copy nvidia/<chip>/gsp/*-570.144.bin \
                     from linux-firmware (or Debian's firmware-nvidia-graphics .deb) and run again with --from DIR|FILE.deb",
                    missing.join(", "),
                    tried.join("; ")
                )
            }
            FetchError::Cache { path, error } => write!(
                f,
                "cannot write the firmware cache at {}: {error}; free space there, make it writable, \
                 or choose another cache with --cache DIR",
                path.display()
            ),
            FetchError::CachedFileAltered {
                path,
                expected,
                found,
            } => write!(
                f,
                "cached firmware {} was altered: sha256 {} ({} bytes), expected sha256 {} ({} bytes); \
                 run `nvbare firmware fetch` to replace it",
                path.display(),
                to_hex(&found.sha256),
                found.size,
                to_hex(&expected.sha256),
                expected.size
            ),
            FetchError::LinkedInCache { dir, files } => write!(
                f,
                "{} in the firmware cache {} still do not hold their pinned bytes after fetching: \
                 a link made by hand (a linked directory, a symbolic link) makes them one file \
                 with names that need other bytes; remove those links (the cache itself only \
                 hard-links identical files) and run again",
                files.join(", "),
                dir.display()
            ),
        }
    }
}

impl std::error::Error for FetchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FetchError::Unreadable { error, .. } | FetchError::Cache { error, .. } => Some(error),
            _ => None,
        }
    }
}
