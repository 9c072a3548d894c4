//! Getting a chip's firmware into the cache: the cache first, then each source in order,
//! every file verified against its pinned SHA-256 before it gets its name.

use crate::cache::{Cache, CacheState};
use crate::chip::FirmwareChip;
use crate::digest::{Measured, Offered, to_hex};
use crate::error::WrongFile;
use crate::progress::Progress;
use crate::source::{Source, SourceError, Unreadable};
use crate::{FetchError, PinnedFile};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Where to look and where to keep.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    pub cache: Cache,
    /// Tried in order for files the cache lacks.
    pub sources: Vec<Source>,
    pub progress: Progress,
}

/// Where a file of the result came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Cache,
    Source(String),
}

/// What a successful fetch did.
#[derive(Debug, Clone)]
pub struct FetchReport {
    pub chips: Vec<FirmwareChip>,
    /// Every wanted file, now verified in the cache, and where it came from.
    pub files: Vec<(&'static PinnedFile, Origin)>,
    /// Cached files whose bytes had changed; they were removed and fetched again.
    pub replaced: Vec<(&'static PinnedFile, Measured)>,
    pub cache_root: std::path::PathBuf,
    pub elapsed: Duration,
}

impl FetchReport {
    /// The one-line summary printed at the end.
    pub fn summary(&self) -> String {
        let chips: Vec<&str> = self.chips.iter().map(|c| c.dir_name()).collect();
        let bytes: u64 = self.files.iter().map(|(f, _)| f.size).sum();
        let mut by_origin: Vec<(String, usize)> = Vec::new();
        for (_, origin) in &self.files {
            let name = match origin {
                Origin::Cache => "cache".to_owned(),
                Origin::Source(s) => s.clone(),
            };
            match by_origin.iter_mut().find(|(n, _)| *n == name) {
                Some((_, count)) => *count += 1,
                None => by_origin.push((name, 1)),
            }
        }
        let origins: Vec<String> = by_origin
            .iter()
            .map(|(n, c)| format!("{c} from {n}"))
            .collect();
        let replaced = if self.replaced.is_empty() {
            String::new()
        } else {
            format!(", {} altered cached file(s) replaced", self.replaced.len())
        };
        format!(
            "firmware {} for {}: {} files, {:.1} MB verified ({}{}) in {:.2} s; cache {}",
            crate::FIRMWARE_VERSION,
            chips.join(" "),
            self.files.len(),
            bytes as f64 / 1e6,
            origins.join(", "),
            replaced,
            self.elapsed.as_secs_f64(),
            self.cache_root.display()
        )
    }
}

/// The pinned files of `chips`, each path once.
pub fn wanted_files(chips: &[FirmwareChip]) -> Vec<&'static PinnedFile> {
    let mut files: Vec<&'static PinnedFile> = Vec::new();
    for chip in chips {
        for f in chip.pinned_files() {
            if !files.iter().any(|g| g.path == f.path) {
                files.push(f);
            }
        }
    }
    files
}

/// Makes sure every pinned file of `chips` is verified in the cache.
pub fn fetch(chips: &[FirmwareChip], options: &FetchOptions) -> Result<FetchReport, FetchError> {
    let mut report = fetch_files(&wanted_files(chips), options)?;
    report.chips = chips.to_vec();
    Ok(report)
}

/// The bytes found under each cached name this run, hashed once per inode: one gsp image
/// is hard-linked under several chips. A name is always judged against its own pinned
/// hash: two names can be one inode (a link made by hand) while their pins differ.
#[derive(Default)]
struct Measurements {
    by_inode: HashMap<(u64, u64), Measured>,
}

impl Measurements {
    fn state(&mut self, cache: &Cache, file: &PinnedFile) -> std::io::Result<CacheState> {
        let identity = cache.file_identity(file);
        let measured = match identity.and_then(|id| self.by_inode.get(&id)) {
            Some(m) => Some(*m),
            None => cache.measure(file)?,
        };
        if let (Some(id), Some(m)) = (identity, measured) {
            self.by_inode.insert(id, m);
        }
        Ok(CacheState::judge(file, measured))
    }

    /// Records that the cache now holds `file`'s pinned bytes under its name (just stored
    /// or linked, so verified), replacing whatever that name's inode was known to hold.
    fn verified(&mut self, cache: &Cache, file: &PinnedFile) {
        if let Some(id) = cache.file_identity(file) {
            self.by_inode.insert(
                id,
                Measured {
                    size: file.size,
                    sha256: file.sha256,
                },
            );
        }
    }
}

/// Makes sure each of `wanted` is verified in the cache (the work of [`fetch`], for any set
/// of pinned files; the report's `chips` is empty).
pub fn fetch_files(
    wanted: &[&'static PinnedFile],
    options: &FetchOptions,
) -> Result<FetchReport, FetchError> {
    let start = Instant::now();
    let cache = &options.cache;
    let progress = &options.progress;
    let cache_error = |error: std::io::Error| FetchError::Cache {
        path: cache.root().to_owned(),
        error,
    };
    std::fs::create_dir_all(cache.root()).map_err(cache_error)?;
    cache.remove_leftovers();

    let mut origin: HashMap<&'static str, Origin> = HashMap::new();
    let mut replaced = Vec::new();
    let mut valid_by_hash: HashMap<[u8; 32], &'static PinnedFile> = HashMap::new();
    let mut missing: Vec<&'static PinnedFile> = Vec::new();
    let mut measurements = Measurements::default();
    for &file in wanted {
        match measurements.state(cache, file).map_err(cache_error)? {
            CacheState::Valid => {
                origin.insert(file.path, Origin::Cache);
                valid_by_hash.insert(file.sha256, file);
            }
            CacheState::Altered(m) => {
                progress.note(&format!(
                    "cached {} was altered (sha256 {}, {} bytes; expected sha256 {}, {} bytes): \
                     removing it and fetching it again",
                    file.path,
                    to_hex(&m.sha256),
                    m.size,
                    file.sha256_hex(),
                    file.size
                ));
                cache.remove(file).map_err(cache_error)?;
                replaced.push((file, m));
                missing.push(file);
            }
            CacheState::Missing => missing.push(file),
        }
    }
    // Same bytes under another chip's name (ad102's gsp is ga102's): link, do not fetch.
    missing.retain(|&file| match valid_by_hash.get(&file.sha256) {
        Some(have) if cache.install_verified(file, &cache.path_of(have)).is_ok() => {
            measurements.verified(cache, file);
            origin.insert(file.path, Origin::Cache);
            false
        }
        _ => true,
    });

    let mut tried: Vec<(String, String)> = Vec::new();
    // What the sources said about files they could not give, to report the one that stays
    // missing precisely.
    let mut mismatches: Vec<(&'static PinnedFile, String, Offered)> = Vec::new();
    let mut unreadable: Vec<Unreadable> = Vec::new();
    let mut kept_from_source = 0;
    for source in &options.sources {
        if missing.is_empty() {
            break;
        }
        let name = source.describe();
        // Ask for each distinct content once; the other names get a link to it.
        let mut distinct: Vec<&'static PinnedFile> = Vec::new();
        for &f in &missing {
            if !distinct.iter().any(|d| d.sha256 == f.sha256) {
                distinct.push(f);
            }
        }
        let supplied = match source.supply(&distinct, cache, progress) {
            Ok(supplied) => supplied,
            // The one source (`--from`) unusable: that is the error, not "could not get".
            Err(SourceError::Unusable(reason)) if options.sources.len() == 1 => {
                return Err(FetchError::UnusableSource {
                    source: name,
                    reason,
                });
            }
            Err(SourceError::Unusable(reason)) => {
                tried.push((name, reason));
                continue;
            }
            // No other source can fix a cache that cannot be written.
            Err(SourceError::CacheWrite { path, error }) => {
                return Err(FetchError::Cache { path, error });
            }
        };
        for (file, offered) in &supplied.mismatched {
            progress.note(&format!(
                "{} from {name} does not match the pinned hash (it has {offered}, expected sha256 {}, \
                 {} bytes): not kept",
                file.path,
                file.sha256_hex(),
                file.size
            ));
            mismatches.push((file, name.clone(), *offered));
        }
        for u in &supplied.unreadable {
            progress.note(&format!(
                "cannot read {} (for {}): {}: skipped",
                u.path.display(),
                u.file.path,
                u.error
            ));
        }
        let mut stored: Vec<&'static PinnedFile> = Vec::new();
        for &have in &supplied.stored {
            measurements.verified(cache, have);
            for &file in missing.iter().filter(|f| f.sha256 == have.sha256) {
                cache
                    .install_verified(file, &cache.path_of(have))
                    .map_err(|error| FetchError::Cache {
                        path: cache.path_of(file),
                        error,
                    })?;
                measurements.verified(cache, file);
                origin.insert(file.path, Origin::Source(name.clone()));
                stored.push(file);
            }
        }
        kept_from_source += stored.len();
        missing.retain(|f| !stored.iter().any(|s| s.path == f.path));
        let mut reason = if stored.is_empty() {
            "has none of the missing files".to_owned()
        } else if missing.is_empty() {
            "ok".to_owned()
        } else {
            format!("has {} of them", stored.len())
        };
        if !supplied.mismatched.is_empty() {
            reason += &format!("; {} with wrong bytes", supplied.mismatched.len());
        }
        for u in &supplied.unreadable {
            reason += &format!("; cannot read {}: {}", u.path.display(), u.error);
        }
        tried.push((name, reason));
        unreadable.extend(supplied.unreadable);
    }

    if !missing.is_empty() {
        // With a single source its own word on the file is the whole story: report it
        // precisely, with what was kept.
        if options.sources.len() == 1 {
            let wrong = mismatches
                .iter()
                .filter(|(f, _, _)| missing.contains(f))
                .count();
            if let Some((file, source, offered)) =
                mismatches.into_iter().find(|(f, _, _)| missing.contains(f))
            {
                return Err(FetchError::HashMismatch(Box::new(WrongFile {
                    file: file.path.to_owned(),
                    source,
                    expected: Measured {
                        size: file.size,
                        sha256: file.sha256,
                    },
                    offered,
                    kept: kept_from_source,
                    also_wrong: wrong - 1,
                })));
            }
            if let Some(u) = unreadable.into_iter().find(|u| missing.contains(&u.file)) {
                return Err(FetchError::Unreadable {
                    file: u.file.path.to_owned(),
                    path: u.path,
                    error: u.error,
                    kept: kept_from_source,
                });
            }
        }
        return Err(FetchError::NotFound {
            missing: missing.iter().map(|f| f.path.to_owned()).collect(),
            tried,
        });
    }

    // Each name once more against its own pin, from what this run measured and stored
    // (no file is hashed again): storing one name of a hand-made symbolic link changes
    // what the other name reads, and then no order of stores can satisfy both.
    let mut linked: Vec<String> = Vec::new();
    for &file in wanted {
        if measurements.state(cache, file).map_err(cache_error)? != CacheState::Valid {
            linked.push(file.path.to_owned());
        }
    }
    if !linked.is_empty() {
        return Err(FetchError::LinkedInCache {
            dir: cache.root().to_owned(),
            files: linked,
        });
    }

    let files = wanted
        .iter()
        .map(|f| (*f, origin.get(f.path).cloned().unwrap_or(Origin::Cache)))
        .collect();
    Ok(FetchReport {
        chips: Vec::new(),
        files,
        replaced,
        cache_root: cache.root().to_owned(),
        elapsed: start.elapsed(),
    })
}
