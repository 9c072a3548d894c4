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

/// Copies at most `limit` bytes from `reader` to `writer`, hashing them on the way.
/// Reading stops at `limit` so that a source that sends too much cannot fill the disk;
/// the caller compares the returned size with the size it expected.
pub fn copy_hashing(
    reader: &mut dyn Read,
    writer: &mut dyn Write,
    limit: u64,
) -> io::Result<Measured> {
    let mut hasher = Sha256::new();
    let mut limited = reader.take(limit);
    let mut buf = vec![0u8; 256 * 1024];
    let mut size = 0u64;
    loop {
        let n = match limited.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        writer.write_all(&buf[..n])?;
        size += n as u64;
    }
    Ok(Measured {
        size,
        sha256: hasher.finalize().into(),
    })
}

/// Hashes everything `reader` yields.
pub fn measure(reader: &mut dyn Read) -> io::Result<Measured> {
    copy_hashing(reader, &mut io::sink(), u64::MAX)
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
}
