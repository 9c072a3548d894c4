//! The GPFIFO: a ring of 8-byte entries, each pointing at a pushbuffer segment by GPU virtual
//! address, plus the USERD control block whose `GPPut` the host advances and whose `GPGet` the
//! GPU advances as it fetches entries. After writing `GPPut` the host rings the doorbell: a
//! 32-bit write of the channel's work-submit token to the usermode region (`NV_USERMODE`,
//! class C661 on Hopper; BAR0 0xBB0000 on a VFIO-owned GPU), offset 0x90.
//!
//! Entry format (`NVC86F_GP_ENTRY*`): word 0 bits 31:2 hold VA bits 31:2 (bit 0 `FETCH`);
//! word 1 bits 7:0 hold VA bits 39:32, bit 9 `LEVEL`, bits 30:10 the length in 32-bit words,
//! bit 31 `SYNC`.

pub mod channel;

use crate::hal::{Bar0, Clock, PollError, Wait, try_poll_until};
use crate::shared::{SharedMem, SharedMemError};
use core::cell::Cell;
use core::fmt;
use core::sync::atomic::{Ordering, fence};

pub use channel::{Channel, SubmitTicket};

/// Size of one GPFIFO entry in bytes (`NVC86F_GP_ENTRY__SIZE`).
pub const GP_ENTRY_SIZE: usize = 8;
/// Byte offset of `GPGet` in USERD (`HopperAControlGPFifo.GPGet`, clc86f.h).
pub const USERD_GP_GET: usize = 0x88;
/// Byte offset of `GPPut` in USERD (`HopperAControlGPFifo.GPPut`, clc86f.h).
pub const USERD_GP_PUT: usize = 0x8c;
/// Size of the USERD control block (`HopperAControlGPFifo`: 0x90 + 0x5c words).
pub const USERD_SIZE: usize = 0x200;
/// Offset of the doorbell (`NV_USERMODE_NOTIFY_CHANNEL_PENDING`) in the usermode region.
pub const USERMODE_DOORBELL: u32 = 0x90;
/// Offsets of the GPU timer's low and high words (`NVC361_TIME_0` / `TIME_1`) in the
/// usermode region: the clock of semaphore timestamps, in ns.
pub const USERMODE_TIME_0: u32 = 0x80;
/// See [`USERMODE_TIME_0`].
pub const USERMODE_TIME_1: u32 = 0x84;

/// Reads the GPU timer through the usermode region at `base` (high, low, high again,
/// so a carry between the two words is never seen half-done).
pub fn gpu_time_ns(usermode: &impl Bar0, base: u32) -> u64 {
    loop {
        let hi = usermode.read32(base + USERMODE_TIME_1);
        let lo = usermode.read32(base + USERMODE_TIME_0);
        if usermode.read32(base + USERMODE_TIME_1) == hi {
            return (u64::from(hi) << 32) | u64::from(lo);
        }
    }
}
/// Where the usermode region sits in BAR0 on Ampere..Blackwell (VFIO path): the one
/// definition is `regs::vm::USERMODE_BASE` (hwref `NV_VIRTUAL_FUNCTION`, checked against the
/// headers).
pub const BAR0_USERMODE_BASE: u32 = crate::regs::vm::USERMODE_BASE;
/// Largest pushbuffer segment one entry can describe, in 32-bit words (21-bit length).
pub const MAX_SEGMENT_WORDS: u32 = (1 << 21) - 1;
/// One past the highest GPU VA an entry can point at (40 bits).
pub const MAX_SEGMENT_VA: u64 = 1 << 40;

/// How the front end treats a segment (`GP_ENTRY1_LEVEL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentLevel {
    /// `LEVEL_MAIN` (0).
    Main,
    /// `LEVEL_SUBROUTINE` (1); what tinygrad's driver uses for every segment.
    Subroutine,
}

/// A decoded or to-be-encoded GPFIFO entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpEntry {
    /// GPU VA of the segment (4-byte aligned, below 2^40).
    pub va: u64,
    /// Length in 32-bit words (1 to 2^21 - 1).
    pub words: u32,
    /// `LEVEL` bit.
    pub level: SegmentLevel,
    /// `SYNC_WAIT`: wait for the previous segment's methods to finish before fetching.
    pub sync_wait: bool,
}

impl GpEntry {
    /// A subroutine-level, non-syncing entry for `words` words at `va` (as tinygrad submits).
    pub fn new(va: u64, words: u32) -> Self {
        Self {
            va,
            words,
            level: SegmentLevel::Subroutine,
            sync_wait: false,
        }
    }

    /// The 64-bit entry (word 0 in the low half), or why it cannot be encoded.
    pub fn encode(&self) -> Result<u64, GpFifoError> {
        if !self.va.is_multiple_of(4) || self.va >= MAX_SEGMENT_VA {
            return Err(GpFifoError::BadSegmentAddress(self.va));
        }
        if self.words == 0 || self.words > MAX_SEGMENT_WORDS {
            return Err(GpFifoError::BadSegmentLength(self.words));
        }
        // CAST: VA bits 31:2 and 39:32 after the checks above.
        Ok(GpEntryBits::new()
            .with_get((self.va as u32) >> 2)
            .with_get_hi((self.va >> 32) as u8)
            .with_subroutine(self.level == SegmentLevel::Subroutine)
            .with_length(self.words)
            .with_sync_wait(self.sync_wait)
            .into_bits())
    }

    /// Decodes an entry; `None` for control entries (length 0, e.g. NOP/CRC opcodes).
    pub fn decode(raw: u64) -> Option<Self> {
        let e = GpEntryBits::from_bits(raw);
        if e.length() == 0 {
            return None;
        }
        Some(Self {
            va: u64::from(e.get()) << 2 | u64::from(e.get_hi()) << 32,
            words: e.length(),
            level: if e.subroutine() {
                SegmentLevel::Subroutine
            } else {
                SegmentLevel::Main
            },
            sync_wait: e.sync_wait(),
        })
    }
}

/// A GPFIFO entry's fields (`NVC86F_GP_ENTRY0_*` in bits 31:0, `GP_ENTRY1_*` in 63:32).
#[bitfield_struct::bitfield(u64)]
#[derive(PartialEq, Eq)]
pub struct GpEntryBits {
    /// `ENTRY0_FETCH` (0: unconditional).
    pub fetch_conditional: bool,
    /// Bit 1 (unused).
    #[bits(1)]
    __: u8,
    /// `ENTRY0_GET` 31:2: segment VA bits 31:2.
    #[bits(30)]
    pub get: u32,
    /// `ENTRY1_GET_HI` 7:0: segment VA bits 39:32.
    pub get_hi: u8,
    /// Bit 8 (unused in `clc86f.h`).
    #[bits(1)]
    __: u8,
    /// `ENTRY1_LEVEL` (bit 9): 1 subroutine.
    pub subroutine: bool,
    /// `ENTRY1_LENGTH` 30:10: segment length in words.
    #[bits(21)]
    pub length: u32,
    /// `ENTRY1_SYNC` (bit 31): wait for the previous segment first.
    pub sync_wait: bool,
}

/// What went wrong with a GPFIFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpFifoError {
    /// Segment VA not 4-byte aligned or not below 2^40.
    BadSegmentAddress(u64),
    /// Segment length 0 or above 2^21 - 1 words.
    BadSegmentLength(u32),
    /// Ring memory smaller than `entries * 8`, fewer than 2 entries, or USERD smaller than 0x90.
    BadRing {
        /// Entries asked for.
        entries: u32,
        /// Ring bytes given.
        ring_bytes: usize,
        /// USERD bytes given.
        userd_bytes: usize,
    },
    /// Every slot holds an entry the GPU has not fetched yet.
    Full(ChannelState),
    /// The GPU made no progress before the deadline.
    Timeout(ChannelState),
    /// USERD reported a `GPGet` outside the ring: the channel is broken or USERD is wrong.
    CorruptGpGet(ChannelState),
    /// A pushbuffer segment does not fit the channel's pushbuffer memory.
    SegmentTooLarge {
        /// Bytes needed.
        bytes: usize,
        /// Pushbuffer memory in bytes.
        capacity: usize,
    },
    /// Shared-memory access failed.
    Memory(SharedMemError),
}

impl From<SharedMemError> for GpFifoError {
    fn from(e: SharedMemError) -> Self {
        Self::Memory(e)
    }
}

/// A channel's identity and ring pointers, reported with every stall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelState {
    /// The channel's label (e.g. "compute", "copy").
    pub channel: &'static str,
    /// Its work-submit token (runlist << 16 | channel id on GH100).
    pub token: u32,
    /// `GPGet` as last read from USERD.
    pub gp_get: u32,
    /// `GPPut` as last written by the host.
    pub gp_put: u32,
    /// Ring size in entries.
    pub entries: u32,
}

impl fmt::Display for ChannelState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "channel {} (token {:#x}) GPGet {} GPPut {} of {} entries",
            self.channel, self.token, self.gp_get, self.gp_put, self.entries
        )
    }
}

impl fmt::Display for GpFifoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadSegmentAddress(va) => write!(
                f,
                "pushbuffer segment at {va:#x} is not 4-byte aligned below 2^40; place pushbuffers in low, aligned GPU VA"
            ),
            Self::BadSegmentLength(n) => write!(
                f,
                "pushbuffer segment of {n} words cannot be described (1..={MAX_SEGMENT_WORDS}); split it"
            ),
            Self::BadRing {
                entries,
                ring_bytes,
                userd_bytes,
            } => write!(
                f,
                "GPFIFO of {entries} entries needs >= 2 entries, {} ring bytes (got {ring_bytes}) and {:#x} USERD bytes (got {userd_bytes:#x}); allocate them",
                *entries as usize * GP_ENTRY_SIZE,
                USERD_GP_PUT + 4
            ),
            Self::Full(s) => write!(f, "GPFIFO full: {s}; wait for the GPU or use a larger ring"),
            Self::Timeout(s) => write!(
                f,
                "GPU made no progress: {s}; the channel is stalled (check for MMU faults or an unsatisfied semaphore acquire)"
            ),
            Self::CorruptGpGet(s) => write!(
                f,
                "USERD GPGet out of range: {s}; the USERD mapping is wrong or the channel was torn down"
            ),
            Self::SegmentTooLarge { bytes, capacity } => write!(
                f,
                "pushbuffer segment of {bytes} bytes does not fit {capacity} bytes of pushbuffer memory; allocate more or submit in parts"
            ),
            Self::Memory(e) => write!(f, "GPFIFO memory: {e}"),
        }
    }
}

impl core::error::Error for GpFifoError {}

/// A GPFIFO ring with its USERD, and the work-submit token that starts it.
#[derive(Debug)]
pub struct GpFifo {
    label: &'static str,
    ring: SharedMem,
    userd: SharedMem,
    entries: u32,
    put: u32,
    submitted: u64,
    /// Entries fetched, as far as USERD's GPGet has shown (monotonic).
    gp_completed: Cell<u64>,
    /// Entries fetched, as far as other evidence (a semaphore) has shown.
    known_completed: u64,
    token: u32,
    doorbell: u32,
}

impl GpFifo {
    /// A GPFIFO over `ring` (`entries` * 8 bytes) and `userd` (the channel's USERD page),
    /// rung with `token` at byte offset `doorbell` of the usermode writer
    /// ([`USERMODE_DOORBELL`] on a mapping of the usermode object,
    /// [`BAR0_USERMODE_BASE`] + [`USERMODE_DOORBELL`] on BAR0).
    ///
    /// The channel must be freshly created (GPGet = GPPut = 0).
    pub fn new(
        label: &'static str,
        ring: SharedMem,
        userd: SharedMem,
        entries: u32,
        token: u32,
        doorbell: u32,
    ) -> Result<Self, GpFifoError> {
        if entries < 2
            || ring.len() < entries as usize * GP_ENTRY_SIZE
            || userd.len() < USERD_GP_PUT + 4
        {
            return Err(GpFifoError::BadRing {
                entries,
                ring_bytes: ring.len(),
                userd_bytes: userd.len(),
            });
        }
        Ok(Self {
            label,
            ring,
            userd,
            entries,
            put: 0,
            submitted: 0,
            gp_completed: Cell::new(0),
            known_completed: 0,
            token,
            doorbell,
        })
    }

    /// The work-submit token.
    pub fn token(&self) -> u32 {
        self.token
    }

    /// Ring size in entries.
    pub fn entries(&self) -> u32 {
        self.entries
    }

    /// The next slot the host writes (= `GPPut` after the last kick).
    pub fn gp_put(&self) -> u32 {
        self.put
    }

    /// Entries submitted since creation.
    pub fn submitted(&self) -> u64 {
        self.submitted
    }

    /// `GPGet` read (volatile) from USERD.
    pub fn gp_get(&self) -> Result<u32, GpFifoError> {
        let get = self.userd.read_u32(USERD_GP_GET)?;
        if get >= self.entries {
            return Err(GpFifoError::CorruptGpGet(self.state_with(get)));
        }
        Ok(get)
    }

    fn state_with(&self, gp_get: u32) -> ChannelState {
        ChannelState {
            channel: self.label,
            token: self.token,
            gp_get,
            gp_put: self.put,
            entries: self.entries,
        }
    }

    /// The channel's identity and pointers now (GPGet read from USERD, unchecked).
    pub fn state(&self) -> ChannelState {
        let get = self.userd.read_u32(USERD_GP_GET).unwrap_or(u32::MAX);
        self.state_with(get)
    }

    /// Entries written but not yet fetched by the GPU (an upper bound: never too small).
    pub fn pending(&self) -> Result<u32, GpFifoError> {
        Ok((self.submitted - self.completed()?) as u32)
    }

    /// Entries fetched by the GPU since creation (a lower bound: never too large).
    ///
    /// GPGet only moves forward, so the new count is the old one plus GPGet's forward distance
    /// from it around the ring; a GPGet that lags by a whole lap can only make this smaller.
    pub fn completed(&self) -> Result<u64, GpFifoError> {
        let get = self.gp_get()? as u64;
        let n = self.entries as u64;
        let prev = self.gp_completed.get();
        let candidate = prev + (get + n - prev % n) % n;
        if candidate <= self.submitted {
            self.gp_completed.set(candidate);
        }
        Ok(self.gp_completed.get().max(self.known_completed))
    }

    /// Records that the GPU has fetched at least the first `n` entries ever submitted (known
    /// from a semaphore the front end released after them), in case USERD's GPGet lags.
    pub fn note_completed(&mut self, n: u64) {
        self.known_completed = self.known_completed.max(n.min(self.submitted));
    }

    /// Slots free for new entries (one slot always stays empty so full != empty).
    pub fn free_slots(&self) -> Result<u32, GpFifoError> {
        Ok(self.entries - 1 - self.pending()?)
    }

    /// Whether `n` slots are free, reading USERD only when what is already known
    /// does not prove it: on the kernel-driver path USERD sits in video memory
    /// behind BAR1, where every CPU read is a PCIe round trip (2.8 µs in the H200 VM).
    fn has_slots(&self, n: u32) -> Result<bool, GpFifoError> {
        if self.has_known_slots(n) {
            return Ok(true);
        }
        Ok(self.free_slots()? >= n)
    }

    /// Whether what is already known (no read of USERD) proves `n` slots free.
    pub fn has_known_slots(&self, n: u32) -> bool {
        let known = self.gp_completed.get().max(self.known_completed);
        let free_known = self.entries as u64 - 1 - (self.submitted - known);
        free_known >= n as u64
    }

    /// Writes `entry` into the next slot without publishing it. Fails with
    /// [`GpFifoError::Full`] when no slot is free.
    pub fn push_entry(&mut self, entry: GpEntry) -> Result<u32, GpFifoError> {
        let raw = entry.encode()?;
        if !self.has_slots(1)? {
            return Err(GpFifoError::Full(self.state()));
        }
        let slot = self.put;
        self.ring.write_u64(slot as usize * GP_ENTRY_SIZE, raw)?;
        self.put = (self.put + 1) % self.entries;
        self.submitted += 1;
        Ok(slot)
    }

    /// Publishes the written entries: stores `GPPut` to USERD, then rings the doorbell.
    pub fn kick(&self, usermode: &impl Bar0) -> Result<(), GpFifoError> {
        // Entries must be globally visible before GPPut, and GPPut before the doorbell; a full
        // fence also drains write-combining buffers on x86.
        fence(Ordering::SeqCst);
        self.userd.write_u32(USERD_GP_PUT, self.put)?;
        fence(Ordering::SeqCst);
        usermode.write32(self.doorbell, self.token);
        Ok(())
    }

    /// Pushes one entry and kicks, waiting up to `timeout_ns` for a free slot.
    pub fn submit(
        &mut self,
        usermode: &impl Bar0,
        clock: &impl Clock,
        timeout_ns: u64,
        entry: GpEntry,
    ) -> Result<u32, GpFifoError> {
        entry.encode()?;
        self.wait_for_slots(clock, timeout_ns, 1)?;
        let slot = self.push_entry(entry)?;
        self.kick(usermode)?;
        Ok(slot)
    }

    /// Waits until at least `n` slots are free, pausing 1 µs between reads of USERD.
    pub fn wait_for_slots(
        &self,
        clock: &impl Clock,
        timeout_ns: u64,
        n: u32,
    ) -> Result<(), GpFifoError> {
        // TIMEOUT: the caller's: the front end frees slots as fast as it fetches entries, so
        // only a stalled channel makes this wait long.
        let wait = Wait::pausing("free GPFIFO slots", timeout_ns, 1_000);
        try_poll_until(clock, wait, || Ok(self.has_slots(n)?.then_some(()))).map_err(|e| match e {
            PollError::TimedOut(_) => GpFifoError::Timeout(self.state()),
            PollError::Failed(e) => e,
        })
    }
}

#[cfg(test)]
mod tests;
