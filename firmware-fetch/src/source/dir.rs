//! A firmware tree on disk: `/lib/firmware` as distributions ship it (plain, `.zst` or
//! `.xz`, with symlinks the file system follows), or a linux-firmware checkout whose links
//! live in its WHENCE file.

use super::{StoreError, Supplied, store_from};
use crate::PinnedFile;
use crate::cache::{Cache, StoreOutcome};
use crate::links::LinkTable;
use crate::progress::Progress;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

/// Opens `path`, or `path.zst` / `path.xz` decompressed on the fly.
/// `Ok(None)` when none of the three exists.
pub(super) fn open_maybe_compressed(path: &Path) -> io::Result<Option<(PathBuf, Box<dyn Read>)>> {
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
            Err(e) => return Err(e),
        };
        let reader = BufReader::new(file);
        let boxed: Box<dyn Read> = match kind {
            "zst" => Box::new(
                ruzstd::decoding::StreamingDecoder::new(reader)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?,
            ),
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
) -> Result<Supplied, String> {
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
        let Ok(Some((_, reader))) = opened else {
            continue;
        };
        let mut reader = bar.wrap_read(reader);
        match store_from(cache, file, &mut reader) {
            Ok(StoreOutcome::Stored) => supplied.stored.push(file),
            Ok(StoreOutcome::Mismatch(m)) => supplied.mismatched.push((file, m)),
            // A file that cannot be read or decompressed counts as absent here.
            Err(StoreError::Read(_)) => {}
            // The cache cannot take it: say so rather than report the file as not found.
            Err(StoreError::Cache(message)) => {
                bar.finish_and_clear();
                return Err(message);
            }
        }
    }
    bar.finish_and_clear();
    Ok(supplied)
}
