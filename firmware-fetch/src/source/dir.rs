//! A firmware tree on disk: `/lib/firmware` as distributions ship it (plain, `.zst` or
//! `.xz`, with symlinks the file system follows), or a linux-firmware checkout whose links
//! live in its WHENCE file.

use super::{SourceError, Supplied, Unreadable};
use crate::PinnedFile;
use crate::cache::{Cache, StoreError, StoreOutcome};
use crate::links::LinkTable;
use crate::progress::Progress;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

/// A source file found: its path (with its extension) and its bytes, decompressed.
pub(super) type Opened = (PathBuf, Box<dyn Read>);

/// Opens `path`, or `path.zst` / `path.xz` decompressed on the fly.
/// `Ok(None)` when none of the three exists; `Err` names the one that exists but cannot be
/// opened or is not a zstd stream.
pub(super) fn open_maybe_compressed(path: &Path) -> Result<Option<Opened>, (PathBuf, io::Error)> {
    let with_ext = |ext: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(ext);
        PathBuf::from(p)
    };
    for (candidate, kind) in [
        (path.to_owned(), ""),
        (with_ext(".zst"), "zst"),
        (with_ext(".xz"), "xz"),
    ] {
        let file = match File::open(&candidate) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err((candidate, e)),
        };
        let reader = BufReader::new(file);
        let boxed: Box<dyn Read> = match kind {
            "zst" => match ruzstd::decoding::StreamingDecoder::new(reader) {
                Ok(decoder) => Box::new(decoder),
                Err(e) => {
                    let error = io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("not a zstd stream: {e}"),
                    );
                    return Err((candidate, error));
                }
            },
            "xz" => Box::new(lzma_rust2::XzReader::new(reader, true)),
            _ => Box::new(reader),
        };
        return Ok(Some((candidate, boxed)));
    }
    Ok(None)
}

pub(super) fn supply_from_dir(
    root: &Path,
    wanted: &[&'static PinnedFile],
    cache: &Cache,
    progress: &Progress,
) -> Result<Supplied, SourceError> {
    if !root.is_dir() {
        return Err("no such directory".into());
    }
    let whence_links = std::fs::read_to_string(root.join("WHENCE"))
        .map(|text| LinkTable::from_whence(&text))
        .unwrap_or_default();
    let mut supplied = Supplied::default();
    let total: u64 = wanted.iter().map(|f| f.size).sum();
    let bar = progress.bytes(total, format!("reading {}", root.display()));
    for &file in wanted {
        let mut opened = open_maybe_compressed(&root.join(file.path));
        if matches!(opened, Ok(None))
            && let Some(target) = whence_links.resolve(file.path)
        {
            opened = open_maybe_compressed(&root.join(target));
        }
        let (path, reader) = match opened {
            Ok(Some(found)) => found,
            Ok(None) => continue,
            Err((path, error)) => {
                supplied.unreadable.push(Unreadable { file, path, error });
                continue;
            }
        };
        let mut reader = bar.wrap_read(reader);
        match cache.store(file, &mut reader) {
            Ok(StoreOutcome::Stored) => supplied.stored.push(file),
            Ok(StoreOutcome::Mismatch(m)) => supplied.mismatched.push((file, m)),
            // This copy is unusable (a truncated .xz, an I/O error); the others are still taken.
            Err(StoreError::Read(error)) => {
                // Decompressors say "failed to fill whole buffer" for a cut-off stream.
                let error = if error.kind() == io::ErrorKind::UnexpectedEof {
                    io::Error::new(error.kind(), format!("it ends early, truncated ({error})"))
                } else {
                    error
                };
                supplied.unreadable.push(Unreadable { file, path, error })
            }
            Err(StoreError::Write { path, error }) => {
                bar.finish_and_clear();
                return Err(SourceError::CacheWrite { path, error });
            }
        }
    }
    bar.finish_and_clear();
    Ok(supplied)
}
