//! What GSP-RM said before something went wrong: the `OS_ERROR_LOG` messages it sent and
//! the tail of each libos log buffer, so that a failure is never a bare timeout.
//!
//! The log buffers (`LOGINIT`, `LOGINTR`, `LOGRM`, `LOGMNOC`, `LOGKRNL`) are DMA memory
//! GSP-RM writes; they are read with volatile copies and decoded by
//! [`nvbare_gsp::libos`]. The record metadata lives in the firmware's `.fwlogging_*`
//! sections, which NVIDIA's linux-firmware files do not carry: without a [`LoggingImage`]
//! the tail is the last raw words of each ring, which still shows whether GSP-RM ran.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use nvbare_gsp::libos::{LoggingImage, decode_records, raw_log};

use crate::shared::SharedMem;

/// Records (decoded) or words (raw) kept of each log buffer's tail.
pub const LOG_TAIL: usize = 12;
/// `OS_ERROR_LOG` messages remembered.
pub const OS_ERRORS_KEPT: usize = 16;

/// One `OS_ERROR_LOG` event (`rpc_os_error_log_v17_00`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OsErrorLog {
    /// `exceptType`: the Xid.
    pub xid: u32,
    /// `runlistId`.
    pub runlist_id: u32,
    /// `chid`.
    pub chid: u32,
    /// `errString`.
    pub message: String,
}

impl fmt::Display for OsErrorLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Xid {} (runlist {}, channel {}): {}",
            self.xid,
            self.runlist_id,
            self.chid,
            self.message.trim_end()
        )
    }
}

/// The tail of one libos log buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogTail {
    /// The buffer's libos name (`"LOGRM"`).
    pub name: &'static str,
    /// Its put pointer: how many words GSP-RM ever wrote to it.
    pub put: u64,
    /// Whether `lines` are decoded records (else raw words).
    pub decoded: bool,
    /// The last records or words, oldest first.
    pub lines: Vec<String>,
}

impl fmt::Display for LogTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.put == 0 {
            return write!(f, "{}: empty (GSP-RM wrote nothing)", self.name);
        }
        let what = if self.decoded { "records" } else { "raw words" };
        write!(
            f,
            "{} ({} words written, last {} {what}):",
            self.name,
            self.put,
            self.lines.len()
        )?;
        for l in &self.lines {
            write!(f, "\n      {l}")?;
        }
        Ok(())
    }
}

/// OS_ERROR_LOG text and libos log tails, attached to boot and RPC errors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GspDiagnostics {
    /// `OS_ERROR_LOG` messages GSP-RM sent, oldest first.
    pub os_errors: Vec<OsErrorLog>,
    /// The tail of each libos log buffer.
    pub logs: Vec<LogTail>,
}

impl GspDiagnostics {
    /// Whether there is nothing to show (no buffers known yet).
    pub fn is_empty(&self) -> bool {
        self.os_errors.is_empty() && self.logs.is_empty()
    }

    /// Whether GSP-RM wrote anything at all: an error log or a log word.
    pub fn gsp_spoke(&self) -> bool {
        !self.os_errors.is_empty() || self.logs.iter().any(|l| l.put != 0)
    }
}

impl fmt::Display for GspDiagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.os_errors.is_empty() {
            f.write_str("GSP-RM sent no OS_ERROR_LOG")?;
        } else {
            f.write_str("GSP-RM OS_ERROR_LOG:")?;
            for e in &self.os_errors {
                write!(f, "\n    {e}")?;
            }
        }
        if !self.logs.is_empty() {
            f.write_str("\n  libos logs:")?;
            for l in &self.logs {
                write!(f, "\n    {l}")?;
            }
        }
        Ok(())
    }
}

/// A libos log buffer GSP-RM writes.
#[derive(Clone, Debug)]
pub struct LogBuffer {
    /// The libos name.
    pub name: &'static str,
    /// Its memory.
    pub mem: SharedMem,
}

/// The firmware's logging sections, owned: `(virtual address, bytes)`.
#[derive(Clone, Debug, Default)]
pub struct LoggingSections(pub Vec<(u64, Vec<u8>)>);

impl LoggingSections {
    fn image(&self) -> LoggingImage<'_> {
        LoggingImage::new(self.0.iter().map(|(va, b)| (*va, &b[..])).collect())
    }
}

/// Where diagnostics come from: the log buffers and the `OS_ERROR_LOG`s seen so far.
#[derive(Clone, Debug, Default)]
pub struct DiagnosticsSource {
    logs: Vec<LogBuffer>,
    logging: Option<LoggingSections>,
    os_errors: VecDeque<OsErrorLog>,
}

impl DiagnosticsSource {
    /// Diagnostics over these buffers, decoded with `logging` when given.
    pub fn new(logs: Vec<LogBuffer>, logging: Option<LoggingSections>) -> Self {
        Self {
            logs,
            logging,
            os_errors: VecDeque::new(),
        }
    }

    /// Remembers an `OS_ERROR_LOG` (the last [`OS_ERRORS_KEPT`]).
    pub fn record_os_error(&mut self, e: OsErrorLog) {
        if self.os_errors.len() == OS_ERRORS_KEPT {
            self.os_errors.pop_front();
        }
        self.os_errors.push_back(e);
    }

    /// The `OS_ERROR_LOG`s remembered, oldest first.
    pub fn os_errors(&self) -> impl Iterator<Item = &OsErrorLog> {
        self.os_errors.iter()
    }

    /// Reads the log buffers now and puts everything together.
    pub fn collect(&self) -> GspDiagnostics {
        GspDiagnostics {
            os_errors: self.os_errors.iter().cloned().collect(),
            logs: self.logs.iter().map(|b| self.tail(b)).collect(),
        }
    }

    fn tail(&self, b: &LogBuffer) -> LogTail {
        let mut bytes = alloc::vec![0u8; b.mem.len()];
        if let Err(e) = b.mem.read_bytes(0, &mut bytes) {
            return LogTail {
                name: b.name,
                put: 0,
                decoded: false,
                lines: alloc::vec![alloc::format!("unreadable: {e}")],
            };
        }
        if let Some(sections) = &self.logging {
            let image = sections.image();
            let records = decode_records(&bytes, &image).unwrap_or_default();
            if !records.is_empty() {
                let skip = records.len().saturating_sub(LOG_TAIL);
                return LogTail {
                    name: b.name,
                    put: put_pointer(&bytes),
                    decoded: true,
                    lines: records[skip..]
                        .iter()
                        .map(|r| String::from(r.render(&image).trim_end()))
                        .collect(),
                };
            }
        }
        match raw_log(&bytes) {
            Ok(raw) => {
                let skip = raw.words.len().saturating_sub(LOG_TAIL);
                let mut lines = Vec::with_capacity(LOG_TAIL);
                for (i, w) in raw.words.iter().enumerate().skip(skip) {
                    let mut s = String::new();
                    // CAST: an index into a buffer of at most a few MiB.
                    let _ = write!(s, "[{:6}] {w:#018x}", raw.lost + i as u64);
                    lines.push(s);
                }
                LogTail {
                    name: b.name,
                    put: raw.put,
                    decoded: false,
                    lines,
                }
            }
            Err(e) => LogTail {
                name: b.name,
                put: 0,
                decoded: false,
                lines: alloc::vec![alloc::format!("{e}")],
            },
        }
    }
}

fn put_pointer(buf: &[u8]) -> u64 {
    buf.get(..8)
        .and_then(|w| w.try_into().ok())
        .map(u64::from_le_bytes)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn mem(buf: &mut [u64]) -> SharedMem {
        // SAFETY: the test's buffer outlives the SharedMem and is only accessed through it.
        unsafe { SharedMem::from_raw(buf.as_mut_ptr() as *mut u8, buf.len() * 8, 0) }
    }

    #[test]
    fn raw_tails_show_the_last_words_and_empty_buffers_say_so() {
        let mut a = vec![0u64; 64];
        let mut b = vec![0u64; 64];
        a[0] = 20;
        for (i, w) in a.iter_mut().enumerate().take(21).skip(1) {
            *w = 0x1000 + i as u64;
        }
        let mut src = DiagnosticsSource::new(
            vec![
                LogBuffer {
                    name: "LOGRM",
                    mem: mem(&mut a),
                },
                LogBuffer {
                    name: "LOGINIT",
                    mem: mem(&mut b),
                },
            ],
            None,
        );
        src.record_os_error(OsErrorLog {
            xid: 119,
            runlist_id: 0,
            chid: 0,
            message: String::from("GSP RPC timeout\n"),
        });
        let d = src.collect();
        assert!(d.gsp_spoke());
        assert_eq!(d.logs[0].put, 20);
        assert_eq!(d.logs[0].lines.len(), LOG_TAIL);
        assert!(d.logs[0].lines[LOG_TAIL - 1].ends_with("0x0000000000001014"));
        let text = alloc::format!("{d}");
        assert!(text.contains("Xid 119"), "{text}");
        assert!(text.contains("GSP RPC timeout"), "{text}");
        assert!(text.contains("LOGINIT: empty"), "{text}");
        for _ in 0..20 {
            src.record_os_error(OsErrorLog {
                xid: 1,
                runlist_id: 0,
                chid: 0,
                message: String::new(),
            });
        }
        assert_eq!(src.os_errors().count(), OS_ERRORS_KEPT);
    }
}
