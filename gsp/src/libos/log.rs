//! Decoding of the libos log buffers (`LOGINIT`, `LOGINTR`, `LOGRM`, ...) so that a failed
//! boot can show GSP-RM's own log.
//!
//! A buffer is an array of little-endian `u64`: word 0 is the put pointer (the number of
//! words ever written), words 1.. are a ring of `size / 8 - 1` words. A record is written
//! as its arguments, then the VA of its `libosLogMetadata`, then a timestamp; decoding walks
//! backwards from put (`libosExtractLog_ReadRecord`, OpenRM's `logdecode.c`, which is not
//! part of the 570.144 reference tree; layout of the metadata from `libos_log.h`).
//!
//! The metadata (format string, file, line, argument count) lives in the firmware ELF's
//! logging sections (`.fwlogging_*`), not in the buffer: without them the record
//! boundaries are unknown, so [`raw_log`] returns the words in order and says so; with them
//! ([`LoggingImage`]) [`decode_records`] splits and formats the records.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};
use zerocopy::FromBytes;

use crate::abi::LibosLogMetadata;

/// The most arguments a record may have (`LIBOS_LOG_MAX_ARGS`).
pub const LOG_MAX_ARGS: u8 = 20;

/// Why a log buffer could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogDecodeError {
    /// Fewer than two words, or not a whole number of words.
    BadBufferSize { len: usize },
}

impl fmt::Display for LogDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadBufferSize { len } => {
                write!(f, "libos log buffer of {len} bytes is malformed")
            }
        }
    }
}

/// The words of a log buffer that are still present, oldest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawLog {
    /// The put pointer.
    pub put: u64,
    /// Words overwritten since the start (`put - ring size`, when the ring wrapped).
    pub lost: u64,
    /// The surviving words, oldest first.
    pub words: Vec<u64>,
}

impl fmt::Display for RawLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "raw libos log (no logging metadata from the firmware ELF, so records cannot be \
             split or formatted): put={} lost={} words",
            self.put, self.lost
        )?;
        for (i, w) in self.words.iter().enumerate() {
            writeln!(f, "  [{:5}] {w:#018x}", self.lost + i as u64)?;
        }
        Ok(())
    }
}

fn ring(buf: &[u8]) -> Result<(u64, u64, impl Fn(u64) -> u64 + '_), LogDecodeError> {
    if buf.len() < 16 || buf.len() & 7 != 0 {
        return Err(LogDecodeError::BadBufferSize { len: buf.len() });
    }
    let word = |i: usize| u64::from_le_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    let entries = (buf.len() / 8 - 1) as u64;
    let put = word(0);
    Ok((put, entries, move |k: u64| word(1 + (k % entries) as usize)))
}

/// The surviving words of a log buffer in order (no metadata needed).
pub fn raw_log(buf: &[u8]) -> Result<RawLog, LogDecodeError> {
    let (put, entries, at) = ring(buf)?;
    let first = put.saturating_sub(entries);
    Ok(RawLog {
        put,
        lost: first,
        words: (first..put).map(at).collect(),
    })
}

/// `libosLogMetadata` resolved from the firmware's logging sections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogMetadata {
    /// The printf format string.
    pub format: String,
    /// Source file (path stripped).
    pub file: String,
    /// Source line.
    pub line: u32,
    /// Arguments the record carries.
    pub arg_count: u8,
    /// `printLevel`.
    pub level: u8,
}

/// Memory of the firmware's logging sections: `(virtual address, bytes)` pairs from the
/// GSP-RM ELF (`.fwlogging_*`), in which metadata and strings are looked up by VA.
#[derive(Clone, Debug, Default)]
pub struct LoggingImage<'a> {
    sections: Vec<(u64, &'a [u8])>,
}

impl<'a> LoggingImage<'a> {
    /// An image made of these sections.
    pub fn new(sections: Vec<(u64, &'a [u8])>) -> Self {
        Self { sections }
    }

    fn slice(&self, va: u64, len: usize) -> Option<&'a [u8]> {
        self.sections.iter().find_map(|&(base, bytes)| {
            let off = usize::try_from(va.checked_sub(base)?).ok()?;
            bytes.get(off..off.checked_add(len)?)
        })
    }

    /// The NUL-terminated string at `va` (at most 512 bytes).
    pub fn string(&self, va: u64) -> Option<String> {
        let (base, bytes) = *self
            .sections
            .iter()
            .find(|(b, s)| va >= *b && va - b < s.len() as u64)?;
        let rest = &bytes[(va - base) as usize..];
        let end = rest.iter().take(512).position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(&rest[..end]).into_owned())
    }

    /// The metadata at `va`: a [`LibosLogMetadata`] (`libos_log.h`, layout-checked).
    pub fn metadata(&self, va: u64) -> Option<LogMetadata> {
        let m = self.slice(va, size_of::<LibosLogMetadata>())?;
        let m = LibosLogMetadata::read_from_bytes(m).ok()?;
        let arg_count = m.argument_count;
        if arg_count > LOG_MAX_ARGS {
            return None;
        }
        let file = self
            .string(m.filename)
            .unwrap_or_else(|| String::from("unknown"));
        let file = String::from(file.rsplit('/').next().unwrap_or(""));
        Some(LogMetadata {
            format: self.string(m.format)?,
            file,
            line: m.line_number,
            arg_count,
            level: m.print_level,
        })
    }
}

/// One decoded record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// The GSP timestamp.
    pub timestamp: u64,
    /// Its metadata.
    pub meta: LogMetadata,
    /// Its arguments.
    pub args: Vec<u64>,
}

impl LogRecord {
    /// `file:line: formatted message`, with `%s` arguments looked up in `image`.
    pub fn render(&self, image: &LoggingImage<'_>) -> String {
        let mut s = String::new();
        let _ = write!(s, "{}:{}: ", self.meta.file, self.meta.line);
        format_printf(&mut s, &self.meta.format, &self.args, image);
        s
    }
}

/// Splits a log buffer into records, newest last, stopping at the first word that is not a
/// valid record (lost to wrapping, or garbage). Never reads outside `buf`.
pub fn decode_records(
    buf: &[u8],
    image: &LoggingImage<'_>,
) -> Result<Vec<LogRecord>, LogDecodeError> {
    let (put, entries, at) = ring(buf)?;
    let oldest = put.saturating_sub(entries);
    let mut i = put;
    let mut out = Vec::new();
    // `i - oldest` is the number of words still readable below `i`; written this way so a
    // hostile put pointer near u64::MAX cannot overflow the arithmetic.
    while i - oldest >= 2 {
        let timestamp = at(i - 1);
        let Some(meta) = image.metadata(at(i - 2)) else {
            break;
        };
        let argc = u64::from(meta.arg_count);
        if i - 2 - oldest < argc {
            break;
        }
        let start = i - 2 - argc;
        let args = (start..i - 2).map(&at).collect();
        out.push(LogRecord {
            timestamp,
            meta,
            args,
        });
        i = start;
    }
    out.reverse();
    Ok(out)
}

/// The widest printf field rendered; the firmware's own formats use at most 16 (`%016llx`).
/// The width comes from the log's metadata, outside data, so it is never trusted to size an
/// allocation.
pub const MAX_FIELD_WIDTH: usize = 64;

/// The most bytes [`format_printf`] appends for one record; what would follow is replaced by
/// [`TRUNCATED_MARK`].
pub const MAX_MESSAGE_LEN: usize = 4096;

/// Appended to a message cut at [`MAX_MESSAGE_LEN`].
pub const TRUNCATED_MARK: &str = "...(truncated)";

/// A small printf: `%d %i %u %x %X %p %s %c %%` with flags `-0`, width (at most
/// [`MAX_FIELD_WIDTH`]), and `l`/`ll`/`z` length modifiers (all arguments are 64-bit words
/// in libos logs). Appends at most [`MAX_MESSAGE_LEN`] bytes plus [`TRUNCATED_MARK`].
pub fn format_printf(out: &mut String, format: &str, args: &[u64], image: &LoggingImage<'_>) {
    let limit = out.len().saturating_add(MAX_MESSAGE_LEN);
    let mut args = args.iter().copied();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if cut_at(out, limit) {
            return;
        }
        if c != '%' {
            out.push(c);
            continue;
        }
        let (mut zero, mut left, mut width) = (false, false, 0usize);
        while let Some(&f) = chars.peek() {
            match f {
                '0' if width == 0 => zero = true,
                '-' => left = true,
                '0'..='9' => {
                    let digit = f as usize - '0' as usize;
                    width = width
                        .saturating_mul(10)
                        .saturating_add(digit)
                        .min(MAX_FIELD_WIDTH);
                }
                'l' | 'h' | 'z' | 'j' | 't' => {}
                _ => break,
            }
            chars.next();
        }
        let Some(conv) = chars.next() else { break };
        let mut piece = String::new();
        match conv {
            '%' => piece.push('%'),
            'd' | 'i' => {
                let _ = write!(piece, "{}", args.next().unwrap_or(0) as i64);
            }
            'u' => {
                let _ = write!(piece, "{}", args.next().unwrap_or(0));
            }
            'x' => {
                let _ = write!(piece, "{:x}", args.next().unwrap_or(0));
            }
            'X' => {
                let _ = write!(piece, "{:X}", args.next().unwrap_or(0));
            }
            'p' => {
                let _ = write!(piece, "{:#x}", args.next().unwrap_or(0));
            }
            'c' => piece.push(char::from(args.next().unwrap_or(0) as u8)),
            's' => {
                let va = args.next().unwrap_or(0);
                match image.string(va) {
                    Some(s) => piece.push_str(&s),
                    None => {
                        let _ = write!(piece, "<str@{va:#x}>");
                    }
                }
            }
            other => {
                piece.push('%');
                piece.push(other);
            }
        }
        let pad = width.saturating_sub(piece.chars().count());
        let fill = if zero && !left { '0' } else { ' ' };
        if left {
            out.push_str(&piece);
            out.extend(core::iter::repeat_n(' ', pad));
        } else {
            out.extend(core::iter::repeat_n(fill, pad));
            out.push_str(&piece);
        }
    }
    cut_at(out, limit);
}

/// Cuts `out` to `limit` bytes (on a char boundary) and marks it, if it is longer.
fn cut_at(out: &mut String, limit: usize) -> bool {
    if out.len() <= limit {
        return false;
    }
    let mut cut = limit;
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    out.push_str(TRUNCATED_MARK);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    const BASE: u64 = 0x8000_0000;

    /// A logging section with two metadata entries and their strings.
    fn section() -> Vec<u8> {
        let mut s = vec![0u8; 0x200];
        let meta = |s: &mut Vec<u8>, at: usize, file: u64, fmt: u64, line: u32, argc: u8| {
            s[at..at + 8].copy_from_slice(&(BASE + file).to_le_bytes());
            s[at + 8..at + 16].copy_from_slice(&(BASE + fmt).to_le_bytes());
            s[at + 16..at + 20].copy_from_slice(&line.to_le_bytes());
            s[at + 20] = argc;
        };
        meta(&mut s, 0x00, 0x100, 0x120, 42, 2);
        meta(&mut s, 0x20, 0x100, 0x140, 7, 0);
        s[0x100..0x10e].copy_from_slice(b"src/kern/rm.c\0");
        s[0x120..0x137].copy_from_slice(b"boot %s stage %04x ok\n\0");
        s[0x140..0x145].copy_from_slice(b"done\0");
        s[0x160..0x164].copy_from_slice(b"gsp\0");
        s
    }

    fn buffer(words: &[u64], size_words: usize) -> Vec<u8> {
        let mut b = vec![0u8; size_words * 8];
        let entries = size_words as u64 - 1;
        for (k, w) in words.iter().enumerate() {
            let i = 1 + (k as u64 % entries) as usize;
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        b[..8].copy_from_slice(&(words.len() as u64).to_le_bytes());
        b
    }

    #[test]
    fn decodes_and_formats_records() {
        let sec = section();
        let img = LoggingImage::new(vec![(BASE, &sec[..])]);
        let words = [BASE + 0x160, 0x2a, BASE, 1000, BASE + 0x20, 1001];
        let recs = decode_records(&buffer(&words, 64), &img).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].render(&img), "rm.c:42: boot gsp stage 002a ok\n");
        assert_eq!(
            (recs[1].timestamp, recs[1].render(&img).as_str()),
            (1001, "rm.c:7: done")
        );
    }

    #[test]
    fn wrapped_buffer_keeps_the_newest_whole_records_and_raw_words() {
        let sec = section();
        let img = LoggingImage::new(vec![(BASE, &sec[..])]);
        let mut words = Vec::new();
        for t in 0..10u64 {
            words.extend_from_slice(&[BASE + 0x20, t]);
        }
        // 5-word ring: holds the last 5 words = half a record + 2 records.
        let buf = buffer(&words, 6);
        let recs = decode_records(&buf, &img).unwrap();
        assert_eq!(recs.iter().map(|r| r.timestamp).collect::<Vec<_>>(), [8, 9]);
        let raw = raw_log(&buf).unwrap();
        assert_eq!((raw.put, raw.lost, raw.words.len()), (20, 15, 5));
        assert_eq!(raw.words[4], 9);
        assert!(alloc::format!("{raw}").contains("no logging metadata"));
    }

    #[test]
    fn put_pointer_near_u64_max_does_not_overflow() {
        // Found by the gsp_message_decoder fuzz target.
        let sec = section();
        let img = LoggingImage::new(vec![(BASE, &sec[..])]);
        let mut b = vec![0u8; 32];
        b[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        for w in 1..4 {
            b[w * 8..w * 8 + 8].copy_from_slice(&(BASE + 0x20).to_le_bytes());
        }
        let _ = decode_records(&b, &img).unwrap();
        let b = [0xffu8; 17];
        let _ = decode_records(&b[..16], &img).unwrap();
    }

    #[test]
    fn huge_printf_widths_and_long_formats_stay_bounded() {
        // Found by the gsp_message_decoder fuzz target: the width came from the log and was
        // allocated as padding (and overflowed usize when long enough).
        let img = LoggingImage::default();
        for format in [
            "%999999999d",
            "%18446744073709551616x",
            "%-99999999999999999999999s",
        ] {
            let mut out = String::new();
            format_printf(&mut out, format, &[7], &img);
            assert!(
                out.len() <= MAX_FIELD_WIDTH,
                "{format}: {} bytes",
                out.len()
            );
            assert!(
                out.contains('7') || out.contains("<str@0x7>"),
                "{format}: {out}"
            );
        }
        let mut out = String::new();
        format_printf(&mut out, "%08x|%-4d|", &[0xab, 5], &img);
        assert_eq!(out, "000000ab|5   |");
        // Every field at the widest: the message is cut, on a char boundary, and says so.
        let wide = "%64dé".repeat(200);
        let mut out = String::from("prefix: ");
        format_printf(&mut out, &wide, &[1; 20], &img);
        assert!(
            out.len() <= 8 + MAX_MESSAGE_LEN + TRUNCATED_MARK.len(),
            "{}",
            out.len()
        );
        assert!(out.starts_with("prefix: ") && out.ends_with(TRUNCATED_MARK));
    }

    #[test]
    fn garbage_stops_decoding_without_panicking() {
        let img = LoggingImage::default();
        let mut b = vec![0xffu8; 64];
        b[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_records(&b, &img).unwrap().is_empty());
        assert_eq!(raw_log(&b).unwrap().words.len(), 7);
        assert!(raw_log(&[0; 12]).is_err());
    }
}
