//! Recorded sequences, part 1: recording. A [`Recording`] lists launches of any loaded kernels,
//! copies, and signals/waits between the compute and copy queues; [`Gpu::finish`] turns it
//! into a [`Sequence`] whose push data, QMDs and constant banks live in GPU memory, with a
//! patch table of where each replay-time value sits (see `replay.rs`).
//!
//! What [`Gpu::finish`] lays out, in one buffer of video memory with a CPU view:
//!
//! ```text
//! [QMD | bank 0] per launch (256-byte aligned) | compute segment | copy segment
//! ```
//!
//! The compute segment starts each run of back-to-back launches with one `SEND_PCAS`; the
//! other launches of the run are chained as dependent QMDs (`DEPENDENT_QMD0_*`, action
//! `QMD_SCHEDULE`), so the compute engine schedules each grid when the one before it has
//! completed: in order without a CPU or front-end round trip between them. As CUDA 13 chains
//! a graph's nodes on the H200 (the QMDs it leaves in memory, `host/bench-results/probe/
//! graph_qmd_probe.cu`, run 37), a grid with a successor ends with the GPU-scope membar
//! (`L1_MEMBAR`) and `CWD_MEMBAR_TASK_CHASING_ENABLE`, only the last of a chain with the
//! sysmembar; and the segment invalidates the constant caches once, before its first grid,
//! instead of each grid invalidating its bank 0. A signal is the
//! queue's timeline release (compute: host release after wait-for-idle; copy: copy-engine
//! release with flush), a wait a host acquire (`ACQ_CIRC_GEQ`) of the other queue's timeline.
//! Each segment ends with its timeline's release and the channel's progress release; their
//! payloads (and every signal's and wait's) are the patch table's per-replay words.
//!
//! A recording cannot be replayed before it is finished: [`Gpu::replay`] takes a
//! [`Sequence`], which only [`Gpu::finish`] makes (a compile-time error, not a run-time one).
//! What can be wrong at run time is a [`SequenceError`]; a launch shape the GPU refuses is a
//! `GpuError::Launch` from [`Gpu::finish`] or a [`SequenceError::Launch`] from a patch.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

use super::replay::{CopyPatch, Dyn, LaunchPatch, OpRef, Parts, Segment, Sequence, Site};
use super::{Backend, Gpu, GpuError, Kernel, LaunchConfig, MemoryRequest, Placement, queue_index};
use crate::compute::{self, PcasAction};
use crate::copy;
use crate::launch::{self, ComputeContext, LaunchError};
use crate::push::{PushBuffer, PushError};
use crate::qmd::{CWD_MEMBAR_L1_MEMBAR, CWD_MEMBAR_L1_SYSMEMBAR};
use crate::rm::{Engine, Step, tree::at};
use crate::sem::{self, HostRelease};

/// Numbers recordings, so an op or event of one is refused by another.
static NEXT_RECORDING: AtomicU32 = AtomicU32::new(1);

/// Words from the start of a semaphore method group (host `SEM_ADDR_LO..SEM_EXECUTE`, copy
/// `SET_SEMAPHORE_A..PAYLOAD_UPPER`) to its payload's low word: header, two address words.
const PAYLOAD_WORD: usize = 3;

/// A recorded op, named when the sequence is patched ([`Sequence::set_args`] and the rest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpId {
    pub(super) recording: u32,
    pub(super) index: u32,
}

impl OpId {
    /// The op's index in its recording (as errors name it).
    pub fn index(&self) -> u32 {
        self.index
    }
}

/// A point on one queue inside a recording: what [`Recording::wait`] makes the other queue
/// wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    recording: u32,
    engine: Engine,
    index: u32,
}

/// What a recording or a patch got wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SequenceError {
    /// A launch's parameter bytes do not match the kernel's argument layout.
    #[error(
        "kernel {kernel} takes {expected} bytes of parameters, {given} were given: pass the \
         kernel's whole argument block (its layout is in the cubin)"
    )]
    ParamSize {
        /// The kernel.
        kernel: alloc::string::String,
        /// Bytes given.
        given: usize,
        /// Bytes its layout has.
        expected: u32,
    },
    /// A patch of arguments reaches past the kernel's argument block.
    #[error(
        "op {op}: {len} bytes at parameter offset {offset} run past the kernel's {size} \
         bytes of parameters"
    )]
    ArgOutOfRange {
        /// The op's index in its recording.
        op: u32,
        /// Byte offset given.
        offset: usize,
        /// Bytes given.
        len: usize,
        /// The kernel's parameter bytes.
        size: u32,
    },
    /// A patch names an op of another kind (arguments of a copy, addresses of a launch).
    #[error("op {op} is not a {wanted}")]
    WrongOp {
        /// The op's index.
        op: u32,
        /// What the patch needs.
        wanted: &'static str,
    },
    /// An op or event of another recording.
    #[error("op or event of recording {theirs} used with recording {ours}")]
    OtherRecording {
        /// Its recording.
        theirs: u32,
        /// This one.
        ours: u32,
    },
    /// A sequence replayed on another GPU than the one that finished it.
    #[error("this sequence was finished on another Gpu; record it again on this one")]
    OtherGpu,
    /// A recording with nothing in it.
    #[error("the recording has no launch and no copy: nothing to replay")]
    Empty,
    /// A recorded copy must be one copy-engine launch.
    #[error("a recorded copy must be 1..={max:#x} bytes, got {len:#x}; split it into several")]
    CopyLength {
        /// Bytes asked for.
        len: u64,
        /// The largest one launch copies.
        max: u64,
    },
    /// An address that does not fit the method it goes into.
    #[error("{0}")]
    Address(#[from] PushError),
    /// New launch dimensions the kernel or the GPU cannot take.
    #[error("{0}")]
    Launch(#[from] LaunchError),
    /// A QMD field could not take a new value.
    #[error("QMD: {0}")]
    Qmd(#[from] crate::qmd::QmdError),
}

/// One recorded op.
#[derive(Debug)]
pub(super) enum Op<'k, M> {
    Launch {
        kernel: &'k Kernel<M>,
        cfg: LaunchConfig,
        params: Vec<u8>,
    },
    Copy {
        dst: u64,
        src: u64,
        len: u64,
    },
    Signal(Engine),
    Wait {
        engine: Engine,
        on: Event,
    },
}

/// Launches, copies, signals and waits, recorded once to be replayed many times
/// ([`Gpu::finish`], then [`Gpu::replay`]). Borrows its kernels: none can be unloaded while a
/// recording or sequence that launches it lives.
#[derive(Debug)]
pub struct Recording<'k, M> {
    pub(super) id: u32,
    in_order: bool,
    pub(super) ops: Vec<Op<'k, M>>,
    /// Signals recorded per queue (compute, copy).
    signals: [u32; 2],
    last: Option<Engine>,
}

impl<'k, M> Default for Recording<'k, M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'k, M> Recording<'k, M> {
    /// An empty recording whose ops run in the order recorded: where an op goes to the other
    /// queue than the op before it, the recording adds a signal on the first queue and a wait
    /// for it on the second; back-to-back launches are chained so each grid starts when the one
    /// before it has completed.
    pub fn new() -> Self {
        Self::with_order(true)
    }

    /// An empty recording in which only what [`Self::signal`] and [`Self::wait`] say orders
    /// the ops: launches may overlap one another (each is started by the front end), copies
    /// run in order on the copy queue, and the two queues run side by side.
    pub fn concurrent() -> Self {
        Self::with_order(false)
    }

    fn with_order(in_order: bool) -> Self {
        Self {
            id: NEXT_RECORDING.fetch_add(1, Ordering::Relaxed),
            in_order,
            ops: Vec::new(),
            signals: [0; 2],
            last: None,
        }
    }

    /// Whether the recording orders every op after the one recorded before it.
    pub fn in_order(&self) -> bool {
        self.in_order
    }

    fn push(&mut self, engine: Engine, op: Op<'k, M>) -> OpId {
        if self.in_order
            && let Some(prev) = self.last
            && prev != engine
        {
            let e = self.signal(prev);
            // PANIC: `e` was made by this recording just now, the one error `wait` has.
            self.wait(engine, e)
                .unwrap_or_else(|_| unreachable!("an event of this recording"));
        }
        self.last = Some(engine);
        self.ops.push(op);
        OpId {
            recording: self.id,
            // CAST: a recording of more than 2^32 ops does not fit any pushbuffer.
            index: (self.ops.len() - 1) as u32,
        }
    }

    /// Records a launch of `k` as `cfg` says with `params` (the kernel's whole argument block;
    /// patch it per replay with [`Sequence::set_args`]). The shape is checked against the GPU
    /// when the recording is finished.
    pub fn launch(
        &mut self,
        k: &'k Kernel<M>,
        cfg: LaunchConfig,
        params: &[u8],
    ) -> Result<OpId, SequenceError> {
        if params.len() != k.info.param_size as usize {
            return Err(SequenceError::ParamSize {
                kernel: alloc::string::String::from(&*k.info.name),
                given: params.len(),
                expected: k.info.param_size,
            });
        }
        Ok(self.push(
            Engine::Compute,
            Op::Launch {
                kernel: k,
                cfg,
                params: params.to_vec(),
            },
        ))
    }

    /// Records a copy of `len` bytes (1 to [`copy::MAX_COPY_CHUNK`]) between GPU virtual
    /// addresses on the copy queue; patch it per replay with [`Sequence::set_copy`].
    pub fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<OpId, SequenceError> {
        check_copy(dst, src, len)?;
        Ok(self.push(Engine::Copy, Op::Copy { dst, src, len }))
    }

    /// Records a point on `engine`'s queue that the other queue can [`Self::wait`] for: on
    /// compute, all earlier grids completed; on copy, all earlier copies flushed.
    pub fn signal(&mut self, engine: Engine) -> Event {
        let i = queue_index(engine);
        self.signals[i] += 1;
        self.ops.push(Op::Signal(engine));
        Event {
            recording: self.id,
            engine,
            index: self.signals[i] - 1,
        }
    }

    /// Records that `engine`'s queue waits, on the GPU, for `event` before its later ops. An
    /// event of the same queue needs no wait (a queue runs in order) and records nothing.
    pub fn wait(&mut self, engine: Engine, event: Event) -> Result<(), SequenceError> {
        if event.recording != self.id {
            return Err(SequenceError::OtherRecording {
                theirs: event.recording,
                ours: self.id,
            });
        }
        if event.engine != engine {
            self.ops.push(Op::Wait { engine, on: event });
        }
        Ok(())
    }
}

/// Checks a recorded copy's length and addresses.
pub(super) fn check_copy(dst: u64, src: u64, len: u64) -> Result<(), SequenceError> {
    if len == 0 || len > copy::MAX_COPY_CHUNK {
        return Err(SequenceError::CopyLength {
            len,
            max: copy::MAX_COPY_CHUNK,
        });
    }
    for va in [
        dst,
        src,
        dst.saturating_add(len - 1),
        src.saturating_add(len - 1),
    ] {
        crate::push::check_address(va, 1, copy::COPY_VA_BITS)?;
    }
    Ok(())
}

/// Words a segment may take per recorded op (the largest is a copy: 9) and for its tail (the
/// timeline and progress releases: 13).
const WORDS_PER_OP: u64 = 16;
const TAIL_WORDS: u64 = 32;

/// What the one pass over a recording builds.
struct Built {
    segments: [PushBuffer; 2],
    dyns: [Vec<(usize, Dyn)>; 2],
    launches: Vec<LaunchPatch>,
    copies: Vec<CopyPatch>,
    ops: Vec<OpRef>,
}

impl<B: Backend> Gpu<B> {
    /// Lays `rec` out in GPU memory as a [`Sequence`] ready to replay: QMDs and constant banks
    /// built (the launch shapes checked against the kernel and the GPU), push data written,
    /// the patch table made. One buffer of video memory with a CPU view holds it all; give it
    /// back with [`Self::free_sequence`].
    pub fn finish<'k>(
        &mut self,
        rec: Recording<'k, B::Memory>,
    ) -> Result<Sequence<'k, B::Memory>, GpuError<B::Error>> {
        if !rec
            .ops
            .iter()
            .any(|op| matches!(op, Op::Launch { .. } | Op::Copy { .. }))
        {
            return Err(SequenceError::Empty.into());
        }
        let qmd_len = (self.qmd_version.size_bytes() as u64).next_multiple_of(256);
        let slots_end: u64 = rec
            .ops
            .iter()
            .map(|op| match op {
                Op::Launch { kernel, .. } => qmd_len + kernel.cbuf0_len(),
                _ => 0,
            })
            .sum();
        // CAST: a Vec's length fits u64.
        let seg_bytes = 4 * (WORDS_PER_OP * rec.ops.len() as u64 + TAIL_WORDS);
        let seg_at = [slots_end, slots_end + seg_bytes];
        let size = (slots_end + 2 * seg_bytes).next_multiple_of(0x1000);
        let buf = self
            .backend
            .alloc_memory(&MemoryRequest::new(size, Placement::Vram, true))
            .map_err(at(Step::AllocMemory))?;
        let built = self
            .build_sequence(&rec, buf.gpu_va(), qmd_len)
            .and_then(|b| {
                let mem = super::view(&buf, 0, size)?;
                for l in &b.launches {
                    l.write(&mem)?;
                }
                for (q, pb) in b.segments.iter().enumerate() {
                    // CAST: offsets inside the mapped buffer fit usize.
                    mem.write_words(seg_at[q] as usize, pb.words())?;
                }
                Ok((b, mem))
            });
        match built {
            Ok((b, mem)) => {
                let [c, k] = b.segments;
                let [dc, dk] = b.dyns;
                let seg = |pb: PushBuffer, at: u64, dyns| {
                    // CAST: a segment is at most 16 words per op (checked by the GPFIFO entry).
                    (!pb.is_empty()).then(|| Segment {
                        at,
                        words: pb.len() as u32,
                        dyns,
                    })
                };
                Ok(Sequence::new(Parts {
                    gpu: self.id,
                    recording: rec.id,
                    sm: self.sm(),
                    mem,
                    buf,
                    launches: b.launches,
                    copies: b.copies,
                    ops: b.ops,
                    segments: [seg(c, seg_at[0], dc), seg(k, seg_at[1], dk)],
                    signals: count_signals(&rec),
                }))
            }
            Err(e) => {
                self.backend.free_memory(buf);
                Err(e)
            }
        }
    }

    /// The one pass over `rec`: QMDs and banks for slots from `base`, both segments and where
    /// their per-replay words are.
    fn build_sequence(
        &self,
        rec: &Recording<'_, B::Memory>,
        base: u64,
        qmd_len: u64,
    ) -> Result<Built, GpuError<B::Error>> {
        let local = self.local.as_ref().map_or(0, |(_, n)| *n);
        let ctx = ComputeContext {
            qmd_version: self.qmd_version,
            sm: self.sm(),
            shared_window: self.config.shared_window,
            local_window: self.config.local_window,
            local_memory_per_thread: local,
        };
        let mut b = Built {
            segments: [PushBuffer::new(), PushBuffer::new()],
            dyns: [Vec::new(), Vec::new()],
            launches: Vec::new(),
            copies: Vec::new(),
            ops: Vec::with_capacity(rec.ops.len()),
        };
        let mut signals = [0u32; 2];
        let mut slot = 0u64;
        let chained_membar =
            self.tuning
                .chain_membar
                .unwrap_or(if self.tuning.membar == CWD_MEMBAR_L1_SYSMEMBAR {
                    CWD_MEMBAR_L1_MEMBAR
                } else {
                    self.tuning.membar
                });
        // Whether the compute segment invalidated the constant caches yet: once per replay,
        // before its first grid (see the launches' bank 0 below).
        let mut invalidated = false;
        // The launch the next one is chained to (in order only), until a signal or wait.
        let mut chain: Option<usize> = None;
        let (ci, ki) = (queue_index(Engine::Compute), queue_index(Engine::Copy));
        for op in &rec.ops {
            match op {
                Op::Launch {
                    kernel,
                    cfg,
                    params,
                } => {
                    let qmd_va = base + slot;
                    let mut p = launch::prepare(
                        &ctx,
                        kernel.image(),
                        &kernel.info,
                        cfg,
                        params,
                        qmd_va + qmd_len,
                    )
                    .map_err(|source| GpuError::Launch {
                        kernel: alloc::string::String::from(&*kernel.info.name),
                        source,
                    })?;
                    // Bank 0 (the parameters) prefetched before the grid starts, as every
                    // launch: 0.71 -> 0.61 µs per chained grid on the H200 (runs 40, 41).
                    self.tuning.apply(&mut p.qmd)?;
                    let l = self.qmd_version.layout();
                    // Bank 0 is not invalidated per grid: the compute segment starts with
                    // one invalidate of the constant caches (below), which covers every patch
                    // the replay wrote, and each grid has its own bank. CUDA 13's graph nodes
                    // carry no CONSTANT_BUFFER_INVALIDATE either (run 37).
                    for i in 0..l.cbuf_invalidate.count {
                        if let Some(f) = l.cbuf_invalidate.at(i) {
                            p.qmd.set(f, 0)?;
                        }
                    }
                    match chain {
                        Some(prev) if rec.in_order => {
                            // A grid with a successor: the GPU-scope membar and task chasing,
                            // as CUDA 13 chains a graph's nodes on the H200 (run 37: L1_MEMBAR
                            // and CWD_MEMBAR_TASK_CHASING_ENABLE on every node but the last,
                            // which keeps the sysmembar). The host sees the results through
                            // the segment's final release after wait-for-idle.
                            let q = &mut b.launches[prev].qmd;
                            q.set_dependent(qmd_va)?;
                            q.set(l.cwd_membar_type, chained_membar)?;
                            if let Some(f) = l.cwd_membar_task_chasing {
                                q.set(f, 1)?;
                            }
                        }
                        _ => {
                            if !invalidated {
                                compute::invalidate_caches(&mut b.segments[ci])?;
                                invalidated = true;
                            }
                            compute::launch_qmd_for(
                                self.objects.classes.compute,
                                &mut b.segments[ci],
                                qmd_va,
                                PcasAction::PrefetchSchedule,
                            )?
                        }
                    }
                    chain = Some(b.launches.len());
                    // CAST: fewer launches than ops, and ops fit u32.
                    b.ops.push(OpRef::Launch(b.launches.len() as u32));
                    b.launches.push(LaunchPatch {
                        at: slot,
                        qmd_len,
                        qmd: p.qmd,
                        cbuf0: p.cbuf0,
                        cfg: *cfg,
                        info: kernel.info.clone(),
                        dirty: Site::Clean,
                    });
                    slot += qmd_len + kernel.cbuf0_len();
                }
                Op::Copy { dst, src, len } => {
                    let start = b.segments[ki].len();
                    copy::copy_linear(&mut b.segments[ki], *dst, *src, *len)?;
                    // CAST: as above.
                    b.ops.push(OpRef::Copy(b.copies.len() as u32));
                    b.copies.push(CopyPatch {
                        word: start,
                        dst: *dst,
                        src: *src,
                        len: *len,
                        dirty: false,
                    });
                }
                Op::Signal(engine) => {
                    let q = queue_index(*engine);
                    let start = b.segments[q].len();
                    self.queues[q].append_release(&mut b.segments[q], 0)?;
                    b.dyns[q].push((start + PAYLOAD_WORD, Dyn::Signal(signals[q])));
                    signals[q] += 1;
                    if *engine == Engine::Compute {
                        chain = None;
                    }
                    b.ops.push(OpRef::Other);
                }
                Op::Wait { engine, on } => {
                    let q = queue_index(*engine);
                    let va = self.queues[queue_index(on.engine)].timeline.gpu_va();
                    let start = b.segments[q].len();
                    sem::host_acquire(&mut b.segments[q], va, 0)?;
                    b.dyns[q].push((
                        start + PAYLOAD_WORD,
                        Dyn::Wait {
                            engine: on.engine,
                            index: on.index,
                        },
                    ));
                    if *engine == Engine::Compute {
                        chain = None;
                    }
                    b.ops.push(OpRef::Other);
                }
            }
        }
        for q in [ci, ki] {
            let pb = &mut b.segments[q];
            if pb.is_empty() {
                continue;
            }
            let start = pb.len();
            self.queues[q].append_release(pb, 0)?;
            b.dyns[q].push((start + PAYLOAD_WORD, Dyn::Final));
            let start = pb.len();
            let progress = self.queues[q].channel.progress().gpu_va();
            sem::host_release(pb, progress, 0, HostRelease::ON_FETCH)?;
            b.dyns[q].push((start + PAYLOAD_WORD, Dyn::Progress));
        }
        Ok(b)
    }
}

/// Signals recorded per queue.
fn count_signals<M>(rec: &Recording<'_, M>) -> [u32; 2] {
    rec.signals
}
