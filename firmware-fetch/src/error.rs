//! The one error type of firmware fetching: each variant names the problem and the remedy.

use std::path::PathBuf;

/// Why fetching firmware failed. `Display` gives one line meant for the user.
#[derive(Debug)]
pub enum FetchError {
    /// `--chip` named nothing we know.
    UnknownChip { given: String },
    /// `--from` cannot be used at all (missing path, unsupported URL scheme, not a .deb).
    UnusableSource { source: String, reason: String },
    /// A file's bytes did not match the pinned SHA-256; nothing of it was kept.
    HashMismatch {
        file: String,
        source: String,
        expected: String,
        actual: String,
        actual_size: u64,
    },
    /// No source supplied every file.
    NotFound {
        missing: Vec<String>,
        tried: Vec<(String, String)>,
    },
    /// The cache directory could not be created or written.
    Cache { dir: PathBuf, error: std::io::Error },
    /// After every store, these cached names still do not hold their pinned bytes: a link
    /// made by hand (e.g. a linked directory) makes them one file with names that need
    /// different bytes.
    LinkedInCache { dir: PathBuf, files: Vec<String> },
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
            FetchError::HashMismatch {
                file,
                source,
                expected,
                actual,
                actual_size,
            } => write!(
                f,
                "{file} from {source} is not the pinned 570.144 file: sha256 {actual} ({actual_size} bytes), \
                 expected {expected}; nothing was kept; fetch it from another source (e.g. --from a \
                 firmware-nvidia-graphics .deb)"
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
            FetchError::LinkedInCache { dir, files } => write!(
                f,
                "{} in the firmware cache {} still do not hold their pinned bytes after fetching: \
                 a link made by hand (a linked directory, a symbolic link) makes them one file \
                 with names that need other bytes; remove those links (the cache itself only \
                 hard-links identical files) and run again",
                files.join(", "),
                dir.display()
            ),
            FetchError::Cache { dir, error } => write!(
                f,
                "cannot write the firmware cache {}: {error}; choose a writable one with --cache DIR",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for FetchError {}
