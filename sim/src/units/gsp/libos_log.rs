//! GSP-RM's libos log buffers, written as libos writes them.
//!
//! A buffer (a `LOG*` region of the libos init arguments) is an array of little-endian
//! `u64`: word 0 is the put pointer (words ever written), words `1..` a ring of
//! `size / 8 - 1` words. A record is its arguments, then the address of its
//! `libosLogMetadata`, then a timestamp: the decoder walks backwards from put reading
//! timestamp, metadata, then `argumentCount` arguments (`libosExtractLog_ReadRecord`,
//! `libos-v3.1.0/lib/liblogdecode.c`, 570.144).
//!
//! The metadata lives in the firmware's logging sections, not in the buffer. The
//! simulator's records point into its own small logging section ([`logging_section`], at
//! [`LOGGING_VA`]), laid out as `libos_log.h` declares `libosLogMetadata`: `filename` and
//! `format` pointers at 0 and 8, `lineNumber` at 16 (`NV_DECLARE_ALIGNED(NvU32, 8)`, a
//! 4-byte field), `argumentCount` at 20, `printLevel` at 21, `specialType` at 22; 24 bytes.

use crate::memory::{Bus, Target};

/// Virtual address of the simulator's logging section.
pub const LOGGING_VA: u64 = 0x5100_0000_0000;
/// Bytes of one metadata slot in the section (a 24-byte `libosLogMetadata`, padded).
const META_SLOT: usize = 64;
/// `LOG_LEVEL_INFO` / `_WARNING` / `_ERROR` (`libos_log.h`).
pub const LEVEL_INFO: u8 = 1;
/// `LOG_LEVEL_WARNING`.
pub const LEVEL_WARNING: u8 = 3;

/// A message the simulated GSP-RM logs: format, argument count, level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum LogMessage {
    /// Boot started.
    Boot,
    /// The queues are linked.
    QueuesLinked,
    /// GSP_INIT_DONE was sent.
    InitDone,
    /// An RPC was handled: function, NV_STATUS.
    Rpc,
    /// A command was dropped.
    BadCommand,
    /// GSP-RM unloaded.
    Unload,
    /// A channel faulted: chid, VA.
    ChannelFault,
}

const MESSAGES: &[(LogMessage, &str, u8, u8)] = &[
    (
        LogMessage::Boot,
        "GSP-RM %s booting on the simulated GPU\n",
        1,
        LEVEL_INFO,
    ),
    (
        LogMessage::QueuesLinked,
        "message queues linked: %u command, %u status entries\n",
        2,
        LEVEL_INFO,
    ),
    (LogMessage::InitDone, "GSP-RM init done\n", 0, LEVEL_INFO),
    (
        LogMessage::Rpc,
        "rpc 0x%x handled, status 0x%x\n",
        2,
        LEVEL_INFO,
    ),
    (
        LogMessage::BadCommand,
        "command dropped\n",
        0,
        LEVEL_WARNING,
    ),
    (LogMessage::Unload, "GSP-RM unloading\n", 0, LEVEL_INFO),
    (
        LogMessage::ChannelFault,
        "channel %u faulted at VA 0x%llx\n",
        2,
        LEVEL_WARNING,
    ),
];

const FILE: &str = "sim/gsp_rm.c";
/// The string `%s` of [`LogMessage::Boot`] points at.
const VERSION_STRING: &str = "570.144";

/// The simulator's logging section: `(virtual address, bytes)`, as a decoder would load it
/// from a firmware's `.fwlogging_*` section.
pub fn logging_section() -> (u64, Vec<u8>) {
    let strings_at = MESSAGES.len() * META_SLOT;
    let mut strings = Vec::new();
    let mut intern = |s: &str| {
        let va = LOGGING_VA + (strings_at + strings.len()) as u64;
        strings.extend_from_slice(s.as_bytes());
        strings.push(0);
        va
    };
    let file_va = intern(FILE);
    let _version_va = intern(VERSION_STRING);
    let mut meta = vec![0u8; strings_at];
    for (i, &(_, format, args, level)) in MESSAGES.iter().enumerate() {
        let format_va = intern(format);
        let m = &mut meta[i * META_SLOT..];
        m[0..8].copy_from_slice(&file_va.to_le_bytes());
        m[8..16].copy_from_slice(&format_va.to_le_bytes());
        // CAST: line numbers are small.
        m[16..20].copy_from_slice(&(100 + i as u32).to_le_bytes());
        m[20] = args;
        m[21] = level;
    }
    meta.extend_from_slice(&strings);
    (LOGGING_VA, meta)
}

fn meta_va(m: LogMessage) -> u64 {
    LOGGING_VA + (m as usize * META_SLOT) as u64
}

/// The address the [`LogMessage::Boot`] record's `%s` argument points at.
pub fn version_string_va() -> u64 {
    let file_len = FILE.len() + 1;
    LOGGING_VA + (MESSAGES.len() * META_SLOT + file_len) as u64
}

/// One log buffer.
#[derive(Clone, Debug)]
pub struct LogBuffer {
    /// `LOGINIT`, `LOGRM`, ...
    pub name: String,
    at: Target,
    /// Words of the ring.
    entries: u64,
    put: u64,
}

impl LogBuffer {
    /// A buffer of `size` bytes at `at` (the put pointer starts at 0: OpenRM zeroes the
    /// buffer, `_setupLogBufferBaremetal`).
    pub fn new(name: String, at: Target, size: u64) -> Option<LogBuffer> {
        (size >= 16).then_some(LogBuffer {
            name,
            at,
            entries: size / 8 - 1,
            put: 0,
        })
    }

    fn word_at(&self, k: u64) -> Target {
        let off = 8 * (1 + k % self.entries);
        match self.at {
            Target::Vram(a) => Target::Vram(a + off),
            Target::Bus(a) => Target::Bus(a + off),
        }
    }

    /// Appends a record; false if the buffer cannot be written.
    pub fn record(&mut self, bus: &Bus, msg: LogMessage, args: &[u64], timestamp: u64) -> bool {
        debug_assert_eq!(MESSAGES[msg as usize].2 as usize, args.len());
        let words = args.iter().copied().chain([meta_va(msg), timestamp]);
        for w in words {
            if bus.write_u64(self.word_at(self.put), w).is_err() {
                return false;
            }
            self.put += 1;
        }
        bus.write_u64(self.at, self.put).is_ok()
    }
}
