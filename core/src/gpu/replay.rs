//! Recorded sequences, part 3: patching and replaying a [`Sequence`] (made by
//! [`Gpu::finish`](super::Gpu::finish) from a [`Recording`](super::Recording)).
//!
//! A patch ([`Sequence::set_args`], [`Sequence::set_dims`], [`Sequence::set_copy`]) changes the
//! sequence's CPU copy at once and is written to GPU memory by the next [`Gpu::replay`], after
//! that replay has waited for the previous replay of the same sequence to finish: patching can
//! never change what a replay in flight reads. A replay then writes the per-replay words (the
//! timeline values its signals, waits and final releases use, and each channel's progress
//! number) and submits one GPFIFO entry per queue that has ops, pointing at the segment already
//! in GPU memory: nothing is copied into the channels' pushbuffers.
//!
//! What a replay guarantees is [`Sequence`]'s documentation.

use alloc::vec::Vec;
use core::marker::PhantomData;

use super::record::{SequenceError, check_copy};
use super::{Backend, Buffer, Engine, Fence, Gpu, GpuError, LaunchConfig, queue_index};
use crate::cubin::Kernel as CubinKernel;
use crate::launch::{Cbuf0Slots, LaunchError, LaunchLimits, check_limits};
use crate::qmd::Qmd;
use crate::shared::SharedMem;

/// Words from a linear copy's first method header to its values (see `copy::copy_linear`:
/// `OFFSET_IN_UPPER` header, source high/low, destination high/low, `LINE_LENGTH_IN` header,
/// length).
const COPY_SRC_WORD: usize = 1;
const COPY_LEN_WORD: usize = 6;

/// A per-replay word pair (the low word's index in its segment names it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dyn {
    /// This queue's `n`th signal: its timeline's value base + 1 + n.
    Signal(u32),
    /// A wait for `engine`'s `index`th signal.
    Wait { engine: Engine, index: u32 },
    /// The queue's last release: base + signals + 1.
    Final,
    /// The channel's progress release: its next sequence number.
    Progress,
}

/// What of a launch's slot a patch changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Site {
    Clean,
    /// The parameter bytes of bank 0.
    Params,
    /// The QMD and the whole of bank 0 (new dimensions).
    Whole,
}

/// One launch's slot and the CPU copy of what is in it.
#[derive(Debug)]
pub(super) struct LaunchPatch {
    /// Offset of the QMD in the sequence's buffer; bank 0 follows at `at + qmd_len`.
    pub(super) at: u64,
    pub(super) qmd_len: u64,
    pub(super) qmd: Qmd,
    pub(super) cbuf0: Vec<u8>,
    pub(super) cfg: LaunchConfig,
    pub(super) info: CubinKernel<'static>,
    pub(super) dirty: Site,
}

impl LaunchPatch {
    /// Writes the QMD and bank 0 into the slot.
    pub(super) fn write(&self, mem: &SharedMem) -> Result<(), crate::shared::SharedMemError> {
        // CAST: offsets inside the mapped buffer fit usize.
        mem.write_words(self.at as usize, self.qmd.words())?;
        mem.write_bytes((self.at + self.qmd_len) as usize, &self.cbuf0)
    }

    /// Writes what a patch changed.
    fn flush(&mut self, mem: &SharedMem) -> Result<(), crate::shared::SharedMemError> {
        match self.dirty {
            Site::Clean => {}
            Site::Params => {
                let off = self.info.param_offset as usize;
                let end = off + self.info.param_size as usize;
                // PANIC: bank 0 spans the parameters (`launch::cbuf0_size`).
                mem.write_bytes(
                    (self.at + self.qmd_len) as usize + off,
                    &self.cbuf0[off..end],
                )?;
            }
            Site::Whole => self.write(mem)?,
        }
        self.dirty = Site::Clean;
        Ok(())
    }
}

/// One recorded copy: where its methods are in the copy segment.
#[derive(Debug)]
pub(super) struct CopyPatch {
    pub(super) word: usize,
    pub(super) dst: u64,
    pub(super) src: u64,
    pub(super) len: u64,
    pub(super) dirty: bool,
}

/// What an op of the recording became.
#[derive(Clone, Copy, Debug)]
pub(super) enum OpRef {
    Launch(u32),
    Copy(u32),
    Other,
}

/// One queue's segment in the sequence's buffer.
#[derive(Debug)]
pub(super) struct Segment {
    /// Offset in the buffer.
    pub(super) at: u64,
    pub(super) words: u32,
    /// The per-replay words: (word index, what goes there).
    pub(super) dyns: Vec<(usize, Dyn)>,
}

/// What [`Sequence::new`] is made of.
pub(super) struct Parts<M> {
    pub(super) gpu: u64,
    pub(super) recording: u32,
    pub(super) sm: u32,
    pub(super) mem: SharedMem,
    pub(super) buf: Buffer<M>,
    pub(super) launches: Vec<LaunchPatch>,
    pub(super) copies: Vec<CopyPatch>,
    pub(super) ops: Vec<OpRef>,
    pub(super) segments: [Option<Segment>; 2],
    pub(super) signals: [u32; 2],
}

/// A recording laid out in GPU memory, ready to replay with [`Gpu::replay`] and to patch
/// between replays. Borrows the kernels it launches (they cannot be unloaded while it lives).
/// Give its memory back with [`Gpu::free_sequence`].
///
/// What a replay guarantees:
/// - **Order.** A recording made with [`Recording::new`](super::Recording::new) runs each op
///   after the one recorded before it has finished (launches chained as dependent QMDs, queue
///   switches through a signal and a wait); one made with
///   [`Recording::concurrent`](super::Recording::concurrent) orders only what its signals and
///   waits say. A launch recorded with
///   [`Recording::launch_programmatic`](super::Recording::launch_programmatic) may start
///   before the one before it has finished; its kernel's `griddepcontrol.wait` returns only
///   once that one has, with its writes visible (so order holds up to what the kernel does
///   before its wait).
/// - **Patches.** A patch is kept on the CPU and written by the next replay once the previous
///   replay of the same sequence has finished, so a replay in flight never sees it.
/// - **Visibility.** Each grid sees every earlier grid's and copy's writes (chained grids end
///   with a GPU-scope membar, the last of a chain and copies with a system one). When a
///   replay's fences ([`Replayed`]) are reached, its grids' and copies' writes are visible to
///   the host (the final releases come after wait-for-idle on compute, after a flush on copy,
///   as every submission's).
/// - **Ordering with other work.** Each queue runs a replay after what was submitted to it
///   before and before what is submitted after, as any submission; the two queues are not
///   ordered against each other's earlier work (use [`Gpu::wait_on`] first).
/// - **Faults.** A fault in a replayed grid or copy is reported by the wait on its fence (a
///   [`GpuError::Fault`] naming the address), as for a single launch; the next replay of the
///   sequence waits for the faulted one first and so returns that error too.
#[derive(Debug)]
pub struct Sequence<'k, M> {
    gpu: u64,
    recording: u32,
    sm: u32,
    mem: SharedMem,
    buf: Buffer<M>,
    launches: Vec<LaunchPatch>,
    copies: Vec<CopyPatch>,
    ops: Vec<OpRef>,
    segments: [Option<Segment>; 2],
    signals: [u32; 2],
    /// Ops patched since the last replay.
    dirty: Vec<OpRef>,
    /// The fences of the last replay.
    last: Replayed,
    /// Its channel submissions' sequence numbers (compute, copy): the segments may be
    /// rewritten once the progress semaphores pass them.
    consumed: [Option<u64>; 2],
    _kernels: PhantomData<&'k ()>,
}

/// The fences of one replay: one per queue the sequence uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Replayed {
    /// The compute queue's, if the sequence launches anything.
    pub compute: Option<Fence>,
    /// The copy queue's, if the sequence copies or signals there.
    pub copy: Option<Fence>,
}

impl Replayed {
    /// Both fences (those there are).
    pub fn fences(&self) -> impl Iterator<Item = Fence> {
        self.compute.into_iter().chain(self.copy)
    }
}

impl<'k, M> Sequence<'k, M> {
    pub(super) fn new(p: Parts<M>) -> Self {
        Self {
            gpu: p.gpu,
            recording: p.recording,
            sm: p.sm,
            mem: p.mem,
            buf: p.buf,
            launches: p.launches,
            copies: p.copies,
            ops: p.ops,
            segments: p.segments,
            signals: p.signals,
            dirty: Vec::new(),
            last: Replayed::default(),
            consumed: [None; 2],
            _kernels: PhantomData,
        }
    }

    /// Launches in the sequence.
    pub fn launches(&self) -> usize {
        self.launches.len()
    }

    /// Bytes of GPU memory the sequence holds.
    pub fn bytes(&self) -> u64 {
        self.buf.size()
    }

    /// The fences of the last replay (none before the first).
    pub fn last_replay(&self) -> Replayed {
        self.last
    }

    fn op(&self, id: super::OpId) -> Result<OpRef, SequenceError> {
        if id.recording != self.recording {
            return Err(SequenceError::OtherRecording {
                theirs: id.recording,
                ours: self.recording,
            });
        }
        // PANIC: an OpId of this recording indexes its ops.
        Ok(self.ops[id.index as usize])
    }

    fn launch(&mut self, id: super::OpId) -> Result<&mut LaunchPatch, SequenceError> {
        match self.op(id)? {
            OpRef::Launch(i) => {
                // PANIC: `OpRef::Launch` indexes `launches`.
                let l = &mut self.launches[i as usize];
                if l.dirty == Site::Clean {
                    self.dirty.push(OpRef::Launch(i));
                }
                Ok(l)
            }
            _ => Err(SequenceError::WrongOp {
                op: id.index,
                wanted: "launch",
            }),
        }
    }

    /// Sets `bytes` of launch `id`'s parameters from byte `offset` on (a buffer address, a
    /// scalar, or the whole block) for the next replays.
    pub fn set_args(
        &mut self,
        id: super::OpId,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), SequenceError> {
        let op = id.index;
        let l = self.launch(id)?;
        let size = l.info.param_size;
        let end = offset.checked_add(bytes.len());
        if end.is_none_or(|e| e > size as usize) {
            return Err(SequenceError::ArgOutOfRange {
                op,
                offset,
                len: bytes.len(),
                size,
            });
        }
        let at = l.info.param_offset as usize + offset;
        // PANIC: bank 0 spans the parameters, checked against `size` above.
        l.cbuf0[at..at + bytes.len()].copy_from_slice(bytes);
        if l.dirty == Site::Clean {
            l.dirty = Site::Params;
        }
        Ok(())
    }

    /// [`Self::set_args`] of one 64-bit value (a buffer's GPU address).
    pub fn set_arg_u64(
        &mut self,
        id: super::OpId,
        offset: usize,
        value: u64,
    ) -> Result<(), SequenceError> {
        self.set_args(id, offset, &value.to_le_bytes())
    }

    /// [`Self::set_args`] of one 32-bit value.
    pub fn set_arg_u32(
        &mut self,
        id: super::OpId,
        offset: usize,
        value: u32,
    ) -> Result<(), SequenceError> {
        self.set_args(id, offset, &value.to_le_bytes())
    }

    /// Sets launch `id`'s grid and block for the next replays (its dynamic shared memory stays
    /// as recorded), checked against the kernel and the GPU as a launch is.
    pub fn set_dims(
        &mut self,
        id: super::OpId,
        grid: [u32; 3],
        block: [u32; 3],
    ) -> Result<(), SequenceError> {
        let sm = self.sm;
        let limits = LaunchLimits::for_sm(sm).ok_or(LaunchError::UnsupportedSm(sm))?;
        let slots = Cbuf0Slots::for_sm(sm).ok_or(LaunchError::UnsupportedSm(sm))?;
        let l = self.launch(id)?;
        let cfg = LaunchConfig {
            grid,
            block,
            dynamic_shared: l.cfg.dynamic_shared,
        };
        check_limits(&limits, &l.info, &cfg)?;
        let fields = l.qmd.layout();
        for axis in 0..3 {
            l.qmd.set(fields.grid[axis], u64::from(grid[axis]))?;
            l.qmd.set(fields.block[axis], u64::from(block[axis]))?;
            // CAST: axis < 3.
            let (b, g) = (
                (slots.block_dim + 4 * axis as u32) as usize,
                (slots.grid_dim + 4 * axis as u32) as usize,
            );
            // PANIC: bank 0 spans the driver slots (`launch::cbuf0_size`).
            l.cbuf0[b..b + 4].copy_from_slice(&block[axis].to_le_bytes());
            l.cbuf0[g..g + 4].copy_from_slice(&grid[axis].to_le_bytes());
        }
        l.cfg = cfg;
        l.dirty = Site::Whole;
        Ok(())
    }

    /// Sets copy `id`'s destination, source and length (1 to `copy::MAX_COPY_CHUNK` bytes)
    /// for the next replays.
    pub fn set_copy(
        &mut self,
        id: super::OpId,
        dst: u64,
        src: u64,
        len: u64,
    ) -> Result<(), SequenceError> {
        let OpRef::Copy(i) = self.op(id)? else {
            return Err(SequenceError::WrongOp {
                op: id.index,
                wanted: "copy",
            });
        };
        check_copy(dst, src, len)?;
        // PANIC: `OpRef::Copy` indexes `copies`.
        let c = &mut self.copies[i as usize];
        (c.dst, c.src, c.len) = (dst, src, len);
        if !c.dirty {
            c.dirty = true;
            self.dirty.push(OpRef::Copy(i));
        }
        Ok(())
    }

    /// Writes every patch made since the last replay.
    fn flush(&mut self) -> Result<(), crate::shared::SharedMemError> {
        for op in core::mem::take(&mut self.dirty) {
            match op {
                // PANIC: dirty entries index their vectors.
                OpRef::Launch(i) => self.launches[i as usize].flush(&self.mem)?,
                OpRef::Copy(i) => {
                    let c = &mut self.copies[i as usize];
                    let seg = self.segments[queue_index(Engine::Copy)]
                        .as_ref()
                        .map_or(0, |s| s.at);
                    let word = |w: usize| (seg as usize) + 4 * (c.word + w);
                    let (s, d) = (c.src, c.dst);
                    self.mem.write_words(
                        word(COPY_SRC_WORD),
                        &[(s >> 32) as u32, s as u32, (d >> 32) as u32, d as u32],
                    )?;
                    // CAST: at most MAX_COPY_CHUNK (2^31), checked by `set_copy`.
                    self.mem.write_u32(word(COPY_LEN_WORD), c.len as u32)?;
                    c.dirty = false;
                }
                OpRef::Other => {}
            }
        }
        Ok(())
    }
}

impl<B: Backend> Gpu<B> {
    /// Replays `seq`: waits for its previous replay to finish, writes the patches made since,
    /// and submits one GPFIFO entry per queue it uses (one doorbell each, nothing copied).
    /// Returns the replay's fences; see the module documentation for what it guarantees.
    pub fn replay(
        &mut self,
        seq: &mut Sequence<'_, B::Memory>,
    ) -> Result<Replayed, GpuError<B::Error>> {
        if seq.gpu != self.id {
            return Err(SequenceError::OtherGpu.into());
        }
        for f in seq.last.fences() {
            self.wait(f)?;
        }
        // The fences pass at each segment's final release; its progress release (after it) is
        // waited for too, so no word is rewritten before the front end has read it.
        for (q, n) in seq.consumed.iter().enumerate() {
            if let Some(n) = n {
                let timeout = self.config.timeout_ns;
                self.queues[q]
                    .channel
                    .wait_consumed(*n, self.backend.clock(), timeout)?;
            }
        }
        seq.flush()?;
        let base = [self.queues[0].submitted, self.queues[1].submitted];
        let mut done = Replayed::default();
        for q in 0..2 {
            let Some(s) = &seq.segments[q] else { continue };
            let progress = self.queues[q].channel.next_seq();
            let last = base[q] + u64::from(seq.signals[q]) + 1;
            for &(w, d) in &s.dyns {
                let v = match d {
                    Dyn::Signal(n) => base[q] + 1 + u64::from(n),
                    Dyn::Wait { engine, index } => base[queue_index(engine)] + 1 + u64::from(index),
                    Dyn::Final => last,
                    Dyn::Progress => progress,
                };
                // A copy-engine release on a copy class with 32-bit payloads (TURING_DMA_COPY_A,
                // AMPERE_DMA_COPY_A: no SET_SEMAPHORE_PAYLOAD_UPPER) has one payload word; the
                // next is LAUNCH_DMA's header.
                let narrow = self.queues[q].engine == Engine::Copy
                    && !crate::copy::has_64bit_semaphore(self.queues[q].copy_class)
                    && matches!(d, Dyn::Signal(_) | Dyn::Final);
                // CAST: offsets inside the mapped buffer fit usize; a narrow payload is the
                // timeline's low word (the copy queue's releases write 32 bits there).
                let words = [v as u32, (v >> 32) as u32];
                let words = if narrow { &words[..1] } else { &words[..] };
                seq.mem.write_words(s.at as usize + 4 * w, words)?;
            }
            let timeout = self.config.timeout_ns;
            let va = seq.buf.gpu_va() + s.at;
            self.queues[q].submit_resident(
                self.backend.usermode(),
                self.backend.clock(),
                timeout,
                (va, s.words),
                last,
            )?;
            seq.consumed[q] = Some(progress);
            let f = Some(Fence {
                engine: self.queues[q].engine,
                value: last,
            });
            if q == queue_index(Engine::Compute) {
                done.compute = f;
            } else {
                done.copy = f;
            }
            seq.last = done;
        }
        Ok(done)
    }

    /// Waits for every fence of a replay.
    pub fn wait_replay(&mut self, r: &Replayed) -> Result<(), GpuError<B::Error>> {
        for f in r.fences() {
            self.wait(f)?;
        }
        Ok(())
    }

    /// Waits for `seq`'s last replay and frees its memory. A failed wait keeps the memory
    /// (the GPU may still read it) until the backend closes.
    pub fn free_sequence(
        &mut self,
        seq: Sequence<'_, B::Memory>,
    ) -> Result<(), GpuError<B::Error>> {
        self.wait_replay(&seq.last)?;
        let Sequence { buf, mem, .. } = seq;
        drop(mem);
        self.free(buf);
        Ok(())
    }
}
