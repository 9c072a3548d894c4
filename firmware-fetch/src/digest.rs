//! SHA-256 helpers: hex formatting and hashing while copying.

use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};

/// Lowercase hex of a digest.
pub fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// What a copy saw: how many bytes and their SHA-256.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    pub size: u64,
    pub sha256: [u8; 32],
}

/// Why [`copy_hashing`] stopped: the source could not be read, or the destination not written.
#[derive(Debug)]
pub enum CopyError {
    Read(io::Error),
    Write(io::Error),
}

/// Copies at most `limit` bytes from `reader` to `writer`, hashing them on the way.
/// Reading stops at `limit` so that a source that sends too much cannot fill the disk;
/// the caller compares the returned size with the size it expected.
pub fn copy_hashing(
    reader: &mut dyn Read,
    writer: &mut dyn Write,
    limit: u64,
) -> Result<Measured, CopyError> {
    let mut hasher = Sha256::new();
    let size = feed(reader, &mut hasher, writer, limit)?;
    Ok(Measured {
        size,
        sha256: hasher.finalize().into(),
    })
}

/// What a source offered for a file, measured whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    /// Exactly these bytes.
    Bytes(Measured),
    /// More than this many bytes: measuring stopped there.
    MoreThan(u64),
}

impl std::fmt::Display for Offered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Offered::Bytes(m) => write!(f, "sha256 {} ({} bytes)", to_hex(&m.sha256), m.size),
            Offered::MoreThan(n) => write!(f, "more than {n} bytes"),
        }
    }
}

/// Writes the first `write_limit` bytes of `reader` to `writer` and keeps reading (and
/// hashing) the rest, without writing it, up to `measure_limit` bytes in all: a wrong file
/// is then reported with its own size and hash, not those of a prefix.
pub fn copy_prefix_measuring_all(
    reader: &mut dyn Read,
    writer: &mut dyn Write,
    write_limit: u64,
    measure_limit: u64,
) -> Result<Offered, CopyError> {
    let mut hasher = Sha256::new();
    let mut size = feed(reader, &mut hasher, writer, write_limit)?;
    if size == write_limit {
        let rest = measure_limit.saturating_sub(size).saturating_add(1);
        size += feed(reader, &mut hasher, &mut io::sink(), rest)?;
        if size > measure_limit {
            return Ok(Offered::MoreThan(measure_limit));
        }
    }
    Ok(Offered::Bytes(Measured {
        size,
        sha256: hasher.finalize().into(),
    }))
}

/// Feeds at most `limit` bytes of `reader` to `hasher` and `writer`; returns the count.
fn feed(
    reader: &mut dyn Read,
    hasher: &mut Sha256,
    writer: &mut dyn Write,
    limit: u64,
) -> Result<u64, CopyError> {
    let mut limited = reader.take(limit);
    let mut buf = vec![0u8; 256 * 1024];
    let mut size = 0u64;
    loop {
        let n = match limited.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CopyError::Read(e)),
        };
        hasher.update(&buf[..n]);
        writer.write_all(&buf[..n]).map_err(CopyError::Write)?;
        size += n as u64;
    }
    Ok(size)
}

/// Hashes everything `reader` yields.
pub fn measure(reader: &mut dyn Read) -> io::Result<Measured> {
    copy_hashing(reader, &mut io::sink(), u64::MAX).map_err(|e| match e {
        CopyError::Read(e) | CopyError::Write(e) => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_abc_matches_fips_180_example() {
        let m = measure(&mut &b"abc"[..]).unwrap();
        assert_eq!(
            to_hex(&m.sha256),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(m.size, 3);
    }

    #[test]
    fn copy_stops_at_limit() {
        let mut out = Vec::new();
        let m = copy_hashing(&mut &[7u8; 100][..], &mut out, 10).unwrap();
        assert_eq!(m.size, 10);
        assert_eq!(out.len(), 10);
    }

    #[test]
    fn a_longer_source_is_measured_whole_but_only_its_prefix_written() {
        let data = [7u8; 100];
        let mut out = Vec::new();
        let offered = copy_prefix_measuring_all(&mut &data[..], &mut out, 11, 1000).unwrap();
        assert_eq!(offered, Offered::Bytes(measure(&mut &data[..]).unwrap()));
        assert_eq!(out.len(), 11);
        let mut out = Vec::new();
        let offered = copy_prefix_measuring_all(&mut &data[..], &mut out, 11, 50).unwrap();
        assert_eq!(offered, Offered::MoreThan(50));
        assert_eq!(offered.to_string(), "more than 50 bytes");
        let offered = copy_prefix_measuring_all(&mut &data[..], &mut io::sink(), 11, 100).unwrap();
        assert!(matches!(offered, Offered::Bytes(m) if m.size == 100));
    }
}
