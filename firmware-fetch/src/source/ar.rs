//! The `ar` archive a Debian binary package is (deb(5)): the magic `!<arch>\n`, then members,
//! each a 60-byte header (name 16, mtime 12, uid 6, gid 6, mode 8, size 10, "`\n") followed
//! by `size` bytes and a padding byte when `size` is odd.
//!
//! Read here rather than with a general `ar` library: a package is outside data, and only
//! the plain member names Debian uses (`debian-binary`, `control.tar.xz`, `data.tar.xz`,
//! optionally with a GNU-style trailing `/`) are needed. GNU long-name tables (`//`, `/N`)
//! and BSD `#1/N` names are never interpreted: such members are only names that match
//! nothing, so no index into a table can be out of range and no size in a header is ever
//! allocated. Members are streamed; nothing but the 60-byte header is buffered.

use std::fmt;
use std::io::{self, Read};

/// The global header of every `ar` archive.
const MAGIC: &[u8; 8] = b"!<arch>\n";
/// Length of a member header.
const HEADER_LEN: usize = 60;
/// The two bytes that end a member header.
const HEADER_END: &[u8; 2] = b"`\n";

/// Why an archive could not be read.
#[derive(Debug)]
pub enum ArError {
    /// The file does not start with `!<arch>\n`.
    NotAnArchive,
    /// The archive ends inside a member header.
    TruncatedHeader { offset: u64 },
    /// A member header is malformed (bad terminator or size field).
    BadHeader { offset: u64, reason: &'static str },
    /// The archive ends inside member `name`, which its header says is `size` bytes.
    TruncatedMember { name: String, size: u64 },
    /// Reading the file failed.
    Read(io::Error),
}

impl fmt::Display for ArError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArError::NotAnArchive => write!(f, "not an ar archive (no !<arch> header)"),
            ArError::TruncatedHeader { offset } => {
                write!(
                    f,
                    "ar archive ends inside the member header at byte {offset}"
                )
            }
            ArError::BadHeader { offset, reason } => {
                write!(f, "malformed ar member header at byte {offset}: {reason}")
            }
            ArError::TruncatedMember { name, size } => {
                write!(f, "ar archive ends inside member {name} ({size} bytes)")
            }
            ArError::Read(e) => write!(f, "cannot read: {e}"),
        }
    }
}

impl std::error::Error for ArError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ArError::Read(e) => Some(e),
            _ => None,
        }
    }
}

/// A member's name and size, from its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberHeader {
    /// The name with trailing spaces and one GNU-style trailing `/` removed.
    pub name: String,
    /// Bytes of data that follow the header.
    pub size: u64,
}

/// Reads an archive's members in order, as streams.
pub struct ArchiveReader<R> {
    reader: R,
    /// Bytes consumed so far (for messages).
    offset: u64,
    /// Data bytes of the current member not yet read or skipped.
    left: u64,
    /// Whether the current member is followed by a padding byte.
    padded: bool,
    /// The current member (for messages).
    current: MemberHeader,
}

impl<R: Read> ArchiveReader<R> {
    /// Checks the global header.
    pub fn new(mut reader: R) -> Result<Self, ArError> {
        let mut magic = [0u8; 8];
        match read_full(&mut reader, &mut magic) {
            Ok(8) if &magic == MAGIC => {}
            Ok(_) => return Err(ArError::NotAnArchive),
            Err(e) => return Err(ArError::Read(e)),
        }
        Ok(ArchiveReader {
            reader,
            offset: 8,
            left: 0,
            padded: false,
            current: MemberHeader {
                name: String::new(),
                size: 0,
            },
        })
    }

    /// The next member's header, having skipped what is left of the current one; `None` at
    /// the end of the archive. Its data is then read through [`ArchiveReader::data`].
    pub fn next_member(&mut self) -> Result<Option<MemberHeader>, ArError> {
        self.skip_rest()?;
        let mut header = [0u8; HEADER_LEN];
        let got = read_full(&mut self.reader, &mut header).map_err(ArError::Read)?;
        if got == 0 {
            return Ok(None);
        }
        if got < HEADER_LEN {
            return Err(ArError::TruncatedHeader {
                offset: self.offset,
            });
        }
        let at = self.offset;
        // PANIC: the ranges are inside the 60-byte array.
        if &header[58..60] != HEADER_END {
            return Err(ArError::BadHeader {
                offset: at,
                reason: "no \"`\\n\" terminator",
            });
        }
        let size = parse_decimal(&header[48..58]).ok_or(ArError::BadHeader {
            offset: at,
            reason: "size is not a decimal number",
        })?;
        let raw_name = String::from_utf8_lossy(&header[..16]);
        let trimmed = raw_name.trim_end_matches(' ');
        // GNU ar ends plain names with '/'; "/" and "//" are its tables, left as they are.
        let name = match trimmed.strip_suffix('/') {
            Some(plain) if !plain.is_empty() && !plain.starts_with('/') => plain,
            _ => trimmed,
        };
        self.offset += HEADER_LEN as u64;
        self.left = size;
        self.padded = size % 2 == 1;
        self.current = MemberHeader {
            name: name.to_owned(),
            size,
        };
        Ok(Some(self.current.clone()))
    }

    /// The data of the member [`ArchiveReader::next_member`] returned last: at most its
    /// size; an archive that ends early is an `UnexpectedEof` error naming the member.
    pub fn data(&mut self) -> MemberData<'_, R> {
        MemberData { archive: self }
    }

    /// Skips the unread data of the current member and its padding byte.
    fn skip_rest(&mut self) -> Result<(), ArError> {
        if self.left > 0 {
            let want = self.left;
            let skipped = io::copy(&mut (&mut self.reader).take(want), &mut io::sink())
                .map_err(ArError::Read)?;
            self.offset += skipped;
            self.left -= skipped;
            if skipped < want {
                return Err(ArError::TruncatedMember {
                    name: self.current.name.clone(),
                    size: self.current.size,
                });
            }
        }
        if self.padded {
            self.padded = false;
            // The padding byte of the last member may be missing; ar tools accept that.
            let mut pad = [0u8; 1];
            self.offset += read_full(&mut self.reader, &mut pad).map_err(ArError::Read)? as u64;
        }
        Ok(())
    }
}

/// The data of one member, as a stream.
pub struct MemberData<'a, R> {
    archive: &'a mut ArchiveReader<R>,
}

impl<R: Read> Read for MemberData<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let a = &mut *self.archive;
        if a.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        // CAST: `min` with the buffer's length keeps it within usize.
        let n = (buf.len() as u64).min(a.left) as usize;
        let got = a.reader.read(&mut buf[..n])?;
        if got == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                ArError::TruncatedMember {
                    name: a.current.name.clone(),
                    size: a.current.size,
                },
            ));
        }
        a.left -= got as u64;
        a.offset += got as u64;
        Ok(got)
    }
}

/// Reads until `buf` is full or the stream ends; returns how many bytes were read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A space-padded decimal field (`"1234      "`); `None` if empty or not decimal.
fn parse_decimal(field: &[u8]) -> Option<u64> {
    let digits = field.trim_ascii();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Ten digits always fit in a u64.
    std::str::from_utf8(digits).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, size: &str) -> Vec<u8> {
        format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644).into_bytes()
    }

    fn members(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, ArError> {
        let mut archive = ArchiveReader::new(bytes)?;
        let mut out = Vec::new();
        while let Some(m) = archive.next_member()? {
            let mut data = Vec::new();
            archive
                .data()
                .read_to_end(&mut data)
                .map_err(ArError::Read)?;
            out.push((m.name, data));
        }
        Ok(out)
    }

    #[test]
    fn reads_what_the_ar_crate_writes_with_padding_and_gnu_names() {
        // An independent writer: the `ar` crate, in both of its formats.
        let items: [(&str, &[u8]); 3] = [
            ("debian-binary", b"2.0\n"),
            ("control.tar.xz", b"odd"),
            ("data.tar.xz", b"data bytes!"),
        ];
        let mut common = ar::Builder::new(Vec::new());
        for (name, data) in items {
            let h = ar::Header::new(name.as_bytes().to_vec(), data.len() as u64);
            common.append(&h, data).unwrap();
        }
        let names: Vec<Vec<u8>> = items.iter().map(|(n, _)| n.as_bytes().to_vec()).collect();
        let mut gnu = ar::GnuBuilder::new(Vec::new(), names);
        for (name, data) in items {
            let h = ar::Header::new(name.as_bytes().to_vec(), data.len() as u64);
            gnu.append(&h, data).unwrap();
        }
        let expected: Vec<(String, Vec<u8>)> = items
            .iter()
            .map(|(n, d)| ((*n).to_owned(), d.to_vec()))
            .collect();
        assert_eq!(members(&common.into_inner().unwrap()).unwrap(), expected);
        // GNU names end in '/'.
        assert_eq!(members(&gnu.into_inner().unwrap()).unwrap(), expected);
    }

    #[test]
    fn a_long_name_index_past_the_name_table_is_only_a_name() {
        // The 68-byte archive of issue 14: `/99` with no name table (the ar crate panicked).
        let mut bytes = MAGIC.to_vec();
        bytes.extend(header("/99", "0"));
        assert_eq!(bytes.len(), 68);
        assert_eq!(members(&bytes).unwrap(), [("/99".to_owned(), vec![])]);
    }

    #[test]
    fn a_huge_size_is_never_allocated() {
        // A name table claiming 9999999999 bytes: skipped as a stream, found truncated.
        let mut bytes = MAGIC.to_vec();
        bytes.extend(header("//", "9999999999"));
        bytes.extend(b"short");
        let mut archive = ArchiveReader::new(&bytes[..]).unwrap();
        assert_eq!(archive.next_member().unwrap().unwrap().size, 9_999_999_999);
        let err = archive.next_member().unwrap_err();
        assert!(matches!(err, ArError::TruncatedMember { .. }), "{err}");
    }

    #[test]
    fn malformed_archives_are_errors() {
        assert!(matches!(members(b"!<arch"), Err(ArError::NotAnArchive)));
        assert!(matches!(members(b"<arch>!\n"), Err(ArError::NotAnArchive)));
        let mut short = MAGIC.to_vec();
        short.extend(&header("data.tar.xz", "4")[..30]);
        assert!(matches!(
            members(&short),
            Err(ArError::TruncatedHeader { offset: 8 })
        ));
        for size in ["", "-1", "12a", "0x10"] {
            let mut bad = MAGIC.to_vec();
            bad.extend(header("data.tar.xz", size));
            assert!(
                matches!(members(&bad), Err(ArError::BadHeader { .. })),
                "{size:?}"
            );
        }
        let mut no_end = MAGIC.to_vec();
        no_end.extend(header("data.tar.xz", "0"));
        no_end[8 + 58] = b'X';
        assert!(matches!(members(&no_end), Err(ArError::BadHeader { .. })));
        // Data cut short: reading the member says so instead of returning fewer bytes.
        let mut cut = MAGIC.to_vec();
        cut.extend(header("data.tar.xz", "10"));
        cut.extend(b"12345");
        let err = members(&cut).unwrap_err();
        assert!(
            err.to_string().contains("inside member data.tar.xz"),
            "{err}"
        );
    }
}
