//! Debian's `firmware-nvidia-graphics` package, unpacked in Rust: the `ar` archive's (read by
//! [`super::ar`]) `data.tar.xz` member is decompressed and read as a stream, in one pass; only the files
//! that can be wanted ones are written (to a staging directory), and the package's links
//! (`gh100/gsp/gsp-570.144.bin -> ../../ga102/gsp/gsp-570.144.bin`, whole-directory links)
//! are followed once the whole archive has been seen.

use super::ar::ArchiveReader;
use super::{SourceError, Supplied};
use crate::PinnedFile;
use crate::cache::{Cache, StoreError};
use crate::digest::{self, CopyError, Measured, Offered};
use crate::links::{LinkTable, strip_firmware_root};
use crate::progress::Progress;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// A regular file of the package's firmware tree, as seen while streaming.
struct SeenFile {
    measured: Measured,
    /// Where its bytes were staged, when its size was one we wanted.
    staged: Option<PathBuf>,
}

pub fn supply_from_deb(
    deb: &Path,
    wanted: &[&'static PinnedFile],
    cache: &Cache,
    progress: &Progress,
) -> Result<Supplied, SourceError> {
    let file = File::open(deb).map_err(|e| format!("cannot open: {e}"))?;
    let mut archive = ArchiveReader::new(BufReader::new(file))
        .map_err(|e| format!("not a Debian package: {e}"))?;
    let first = archive
        .next_member()
        .map_err(|e| format!("not a Debian package: {e}"))?;
    if first.as_ref().map(|m| m.name.as_str()) != Some("debian-binary") {
        return Err("not a Debian package: its first member is not debian-binary".into());
    }
    while let Some(member) = archive
        .next_member()
        .map_err(|e| format!("broken Debian package: {e}"))?
    {
        let name = member.name;
        if !name.starts_with("data.tar") {
            continue;
        }
        let bar = progress.bytes(member.size, format!("unpacking {name}"));
        let compressed = BufReader::new(bar.wrap_read(archive.data()));
        let tar_stream: Box<dyn Read + '_> = match name.as_str() {
            "data.tar.xz" => Box::new(lzma_rust2::XzReader::new(compressed, true)),
            "data.tar.zst" => Box::new(
                ruzstd::decoding::StreamingDecoder::new(compressed)
                    .map_err(|e| format!("{name}: {e}"))?,
            ),
            "data.tar" => Box::new(compressed),
            other => return Err(format!("unsupported package member {other}").into()),
        };
        let result = extract_wanted(tar_stream, wanted, cache);
        bar.finish_and_clear();
        // A failed write is the cache's problem (a full disk), not a broken package.
        return result.map_err(|e| match e {
            StoreError::Read(e) => SourceError::Unusable(format!("{name}: {e}")),
            StoreError::Write { path, error } => SourceError::CacheWrite { path, error },
        });
    }
    Err("no data.tar member: not a Debian binary package".into())
}

fn extract_wanted(
    tar_stream: Box<dyn Read + '_>,
    wanted: &[&'static PinnedFile],
    cache: &Cache,
) -> Result<Supplied, StoreError> {
    let wanted_sizes: HashSet<u64> = wanted.iter().map(|f| f.size).collect();
    let staging = cache.staging_dir().map_err(|error| StoreError::Write {
        path: cache.root().to_owned(),
        error,
    })?;
    let mut links = LinkTable::new();
    let mut seen: HashMap<String, SeenFile> = HashMap::new();

    let mut archive = tar::Archive::new(tar_stream);
    for entry in archive.entries().map_err(StoreError::Read)? {
        let mut entry = entry.map_err(StoreError::Read)?;
        let raw_path = entry
            .path()
            .map_err(StoreError::Read)?
            .to_string_lossy()
            .into_owned();
        let Some(path) = strip_firmware_root(&raw_path).map(str::to_owned) else {
            continue;
        };
        if !path.starts_with("nvidia/") {
            continue;
        }
        let kind = entry.header().entry_type();
        if kind.is_symlink() || kind.is_hard_link() {
            let Some(target) = entry.link_name().map_err(StoreError::Read)? else {
                continue;
            };
            let target = target.to_string_lossy().into_owned();
            if kind.is_hard_link() {
                // Hard-link names are archive paths, not relative to the link.
                links.insert(&path, &format!("/{}", target.trim_start_matches("./")));
            } else {
                links.insert(&path, &target);
            }
        } else if kind.is_file() && path.contains("/gsp/") {
            let size = entry.size();
            let seen_file = if wanted_sizes.contains(&size) {
                let staged = staging.path().join(format!("{}", seen.len()));
                let write_error = |error| StoreError::Write {
                    path: staged.clone(),
                    error,
                };
                let mut out = File::create(&staged).map_err(write_error)?;
                let measured =
                    digest::copy_hashing(&mut entry, &mut out, size).map_err(|e| match e {
                        CopyError::Read(e) => StoreError::Read(e),
                        CopyError::Write(e) => write_error(e),
                    })?;
                SeenFile {
                    measured,
                    staged: Some(staged),
                }
            } else {
                SeenFile {
                    measured: digest::measure(&mut entry).map_err(StoreError::Read)?,
                    staged: None,
                }
            };
            seen.insert(path, seen_file);
        }
    }

    let mut supplied = Supplied::default();
    for &file in wanted {
        let Some(real) = links.resolve(file.path) else {
            continue;
        };
        let Some(seen_file) = seen.get(&real) else {
            continue;
        };
        let m = seen_file.measured;
        match &seen_file.staged {
            Some(staged) if m.sha256 == file.sha256 && m.size == file.size => {
                cache
                    .install_verified(file, staged)
                    .map_err(|error| StoreError::Write {
                        path: cache.path_of(file),
                        error,
                    })?;
                supplied.stored.push(file);
            }
            _ => supplied.mismatched.push((file, Offered::Bytes(m))),
        }
    }
    drop(staging);
    Ok(supplied)
}
