//! A channel as the submission code sees it: a [`GpFifo`], the GPU-visible memory its
//! pushbuffer segments are copied into, the engine classes bound to its subchannels, and a
//! progress semaphore that tells which segments the front end has consumed.
//!
//! Every submission appends a host semaphore release (without wait-for-idle) of its sequence
//! number to the progress semaphore. The front end performs that release once it has read
//! and dispatched everything before it, so segment memory up to that sequence number can be
//! reused; GPGet alone would not prove this, because the front end prefetches entries.
//!
//! How a backend drives it (the kernel-driver backend and VFIO alike; the flow is exercised end
//! to end in `sim/tests/decode_channel_flow.rs`):
//!
//! ```text
//! // Memory the GPU sees: ring (entries*8), USERD (0x200), pushbuffer, progress semaphore (16).
//! let fifo = GpFifo::new("compute", ring, userd, entries, work_submit_token, USERMODE_DOORBELL)?;
//! let mut ch = Channel::new(fifo, pushbuffer_mem, Semaphore::new(progress_mem)?);
//! let mut pb = PushBuffer::new();
//! ch.bind(&mut pb, Subchannel::COPY, 0xc8b5)?;                       // SET_OBJECT
//! compute::setup(&mut pb, &ComputeSetup { compute_class: 0xcbc0, shared_window, local_window })?;
//! compute::set_local_memory(&mut pb, &LocalMemory { va, bytes_per_tpc, total_bytes })?;
//! ch.submit(&usermode, &clock, timeout_ns, &pb)?;                     // GPPut + doorbell
//! // Per launch: cubin -> image (copy to code_va) -> launch::prepare -> write cbuf0 + QMD.
//! let mut launch = launch::prepare(&ctx, &image, kernel, &cfg, &params, cbuf0_va)?;
//! launch.qmd.set_release(0, timeline.gpu_va(), next_value)?;
//! compute::launch_qmd(&mut pb, qmd_va, PcasAction::PrefetchSchedule)?;
//! ch.submit(&usermode, &clock, timeout_ns, &pb)?;
//! timeline.wait(next_value, &clock, timeout_ns, ch.fifo())?;         // names the stalled channel
//! ```

use super::{ChannelState, GpEntry, GpFifo, GpFifoError};
use crate::hal::{Bar0, Clock, PollError, Wait, try_poll_until};
use crate::push::{PushBuffer, PushError, Subchannel};
use crate::ring::Ring;
use crate::sem::{HostRelease, Semaphore, host_release};
use crate::shared::SharedMem;

/// Words the progress release adds to every submission.
const PROGRESS_WORDS: usize = 6;

/// What one submission became.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubmitTicket {
    /// Sequence number, from 1; the progress semaphore reaches it when host consumed it.
    pub seq: u64,
    /// The GPFIFO slot used.
    pub slot: u32,
    /// GPU VA of the segment.
    pub va: u64,
    /// Segment length in words (including the progress release).
    pub words: u32,
}

/// GPFIFO + pushbuffer memory + subchannel bindings + progress tracking.
#[derive(Debug)]
pub struct Channel {
    fifo: GpFifo,
    pb: SharedMem,
    progress: Semaphore,
    /// Where segments go in `pb`, each freed when the progress semaphore passes its seq.
    ring: Ring,
    next_seq: u64,
    /// GPFIFO entries submitted before this channel took the GPFIFO over.
    entry_base: u64,
    bindings: [Option<u32>; 8],
    /// The progress release appended to every segment (rebuilt in place, so a
    /// submission allocates nothing).
    tail: PushBuffer,
}

impl Channel {
    /// A channel over `fifo`, copying segments into `pushbuffer` and tracking progress in
    /// `progress` (whose payload is reset to 0 here).
    pub fn new(fifo: GpFifo, pushbuffer: SharedMem, progress: Semaphore) -> Self {
        progress.signal_from_cpu(0);
        let entry_base = fifo.submitted();
        Self {
            fifo,
            ring: Ring::new(pushbuffer.len()),
            pb: pushbuffer,
            progress,
            next_seq: 1,
            entry_base,
            bindings: [None; 8],
            tail: PushBuffer::with_capacity(PROGRESS_WORDS),
        }
    }

    /// The underlying GPFIFO.
    pub fn fifo(&self) -> &GpFifo {
        &self.fifo
    }

    /// The channel's identity and GPGet/GPPut now.
    pub fn state(&self) -> ChannelState {
        self.fifo.state()
    }

    /// The progress semaphore.
    pub fn progress(&self) -> &Semaphore {
        &self.progress
    }

    /// Appends `SET_OBJECT(class)` on `subchannel` to `pb` and records the binding.
    pub fn bind(
        &mut self,
        pb: &mut PushBuffer,
        subchannel: Subchannel,
        class: u32,
    ) -> Result<(), PushError> {
        pb.set_object(subchannel, class)?;
        self.bindings[subchannel.index() as usize] = Some(class);
        Ok(())
    }

    /// The class bound to `subchannel`, if any.
    pub fn binding(&self, subchannel: Subchannel) -> Option<u32> {
        self.bindings[subchannel.index() as usize]
    }

    fn reclaim(&mut self) {
        let done = self.progress.value().min(self.next_seq - 1);
        // Submission `seq` is GPFIFO entry `entry_base + seq`: the progress release proves the
        // front end fetched it even if USERD's GPGet has not been written back yet.
        self.fifo.note_completed(self.entry_base + done);
        self.ring.reclaim(done);
    }

    /// Copies `push` (plus a progress release) into pushbuffer memory, writes a GPFIFO entry,
    /// publishes GPPut and rings the doorbell. Waits up to `timeout_ns` for pushbuffer space
    /// and a free GPFIFO slot.
    pub fn submit(
        &mut self,
        usermode: &impl Bar0,
        clock: &impl Clock,
        timeout_ns: u64,
        push: &PushBuffer,
    ) -> Result<SubmitTicket, GpFifoError> {
        let seq = self.next_seq;
        let mut tail = core::mem::take(&mut self.tail);
        tail.clear();
        let made = host_release(
            &mut tail,
            self.progress.gpu_va(),
            seq,
            HostRelease::ON_FETCH,
        );
        let result = made
            .map_err(|_| GpFifoError::BadSegmentAddress(self.progress.gpu_va()))
            .and_then(|()| self.submit_with_tail(usermode, clock, timeout_ns, push, &tail, seq));
        self.tail = tail;
        result
    }

    fn submit_with_tail(
        &mut self,
        usermode: &impl Bar0,
        clock: &impl Clock,
        timeout_ns: u64,
        push: &PushBuffer,
        tail: &PushBuffer,
        seq: u64,
    ) -> Result<SubmitTicket, GpFifoError> {
        let words = push.len() + tail.len();
        let bytes = words * 4;
        if bytes > self.pb.len() {
            return Err(GpFifoError::SegmentTooLarge {
                bytes,
                capacity: self.pb.len(),
            });
        }
        let entry = GpEntry::new(self.pb.gpu_va(), words as u32);
        entry.encode().map(|_| ())?;

        // Place with what is already known first: reading the progress semaphore is a
        // cache miss (the GPU wrote it since), so it is read only when the pushbuffer
        // ring or the known-free GPFIFO slots have run out.
        let known = self
            .ring
            .place(bytes)
            .filter(|_| self.fifo.has_known_slots(1));
        let at = match known {
            Some(at) => at,
            None => {
                // TIMEOUT: the caller's: space comes back as the front end consumes earlier
                // submissions (microseconds each), so only a stalled channel makes this long.
                let wait = Wait::spin("pushbuffer space and a free GPFIFO slot", timeout_ns);
                let r = try_poll_until(clock, wait, || {
                    self.reclaim();
                    match self.ring.place(bytes) {
                        Some(at) if self.fifo.has_slots(1)? => Ok(Some(at)),
                        _ => Ok(None),
                    }
                });
                match r {
                    Ok(at) => at,
                    Err(PollError::TimedOut(_)) => {
                        return Err(GpFifoError::Timeout(self.fifo.state()));
                    }
                    Err(PollError::Failed(e)) => return Err(e),
                }
            }
        };

        self.pb.write_words(at, push.words())?;
        self.pb.write_words(at + push.byte_len(), tail.words())?;
        let entry = GpEntry::new(self.pb.gpu_va() + at as u64, words as u32);
        let slot = self.fifo.push_entry(entry)?;
        self.fifo.kick(usermode)?;

        self.ring.commit(at, bytes, seq);
        self.next_seq += 1;
        Ok(SubmitTicket {
            seq,
            slot,
            va: entry.va,
            words: words as u32,
        })
    }

    /// The sequence number the next submission carries (what a resident segment's progress
    /// release must write: see [`Self::submit_resident`]).
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Writes a GPFIFO entry for `words` words already in GPU memory at `va` (a recorded
    /// sequence's segment), publishes GPPut and rings the doorbell, with nothing copied into
    /// the channel's pushbuffer. The segment must end with a host release
    /// ([`HostRelease::ON_FETCH`]) of [`Self::next_seq`] to [`Self::progress`], as every
    /// submission's does, and its memory must stay unchanged until the progress semaphore
    /// passes that value. Waits up to `timeout_ns` for a free GPFIFO slot.
    pub fn submit_resident(
        &mut self,
        usermode: &impl Bar0,
        clock: &impl Clock,
        timeout_ns: u64,
        va: u64,
        words: u32,
    ) -> Result<SubmitTicket, GpFifoError> {
        let entry = GpEntry::new(va, words);
        entry.encode()?;
        if !self.fifo.has_known_slots(1) {
            // TIMEOUT: the caller's, as for `submit`'s free slot.
            let wait = Wait::spin("a free GPFIFO slot", timeout_ns);
            let r = try_poll_until(clock, wait, || {
                self.reclaim();
                Ok(self.fifo.has_slots(1)?.then_some(()))
            });
            match r {
                Ok(()) => {}
                Err(PollError::TimedOut(_)) => {
                    return Err(GpFifoError::Timeout(self.fifo.state()));
                }
                Err(PollError::Failed(e)) => return Err(e),
            }
        }
        let seq = self.next_seq;
        let slot = self.fifo.push_entry(entry)?;
        self.fifo.kick(usermode)?;
        self.next_seq += 1;
        Ok(SubmitTicket {
            seq,
            slot,
            va,
            words,
        })
    }

    /// Waits until the front end consumed submission `seq` (the progress semaphore reached it).
    pub fn wait_consumed(
        &self,
        seq: u64,
        clock: &impl Clock,
        timeout_ns: u64,
    ) -> Result<(), crate::sem::SemaphoreError> {
        self.progress.wait(seq, clock, timeout_ns, &self.fifo)
    }

    /// Bytes of pushbuffer memory held by submissions not yet consumed.
    pub fn bytes_in_flight(&self) -> usize {
        self.ring.bytes_live()
    }
}
