//! Recorded sequences, part 1: recording (`finish.rs` is part 2). A [`Recording`] lists launches of any loaded kernels,
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
//! instead of each grid invalidating its bank 0. A launch recorded with
//! [`Recording::launch_programmatic`] right after another is a programmatic edge (CUDA's
//! programmatic dependent launch, run 53): the earlier grid also lets it start early
//! (`ENABLE_PROGRAM_PRE_EXIT`) and arrives at a latch when complete, and the later grid's
//! `griddepcontrol.wait` waits on that latch. A signal is the
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

#[cfg(doc)]
use super::{Gpu, replay::Sequence};
use super::{Kernel, LaunchConfig, queue_index};
use crate::copy;
use crate::launch::LaunchError;
use crate::push::PushError;
use crate::rm::Engine;

/// Numbers recordings, so an op or event of one is refused by another.
static NEXT_RECORDING: AtomicU32 = AtomicU32::new(1);

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
    pub(super) engine: Engine,
    pub(super) index: u32,
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
        /// Recorded with [`Recording::launch_programmatic`].
        programmatic: bool,
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
    pub(super) in_order: bool,
    pub(super) ops: Vec<Op<'k, M>>,
    /// Signals recorded per queue (compute, copy).
    pub(super) signals: [u32; 2],
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
        self.launch_op(k, cfg, params, false)
    }

    /// Records a launch of a kernel that waits for the grids before it itself, before it
    /// reads or writes what they write (`griddepcontrol.wait`, CUDA's
    /// `cudaGridDependencySynchronize()`; sm_90 and later): programmatic dependent launch, as
    /// CUDA's `cudaLaunchAttributeProgrammaticStreamSerialization`. In an in-order recording,
    /// right after another launch, the grid may start before the one before it has completed:
    /// as soon as every CTA of that grid has exited or run
    /// `griddepcontrol.launch_dependents`. Its `griddepcontrol.wait` returns once that grid
    /// has completed and its writes are visible. Elsewhere (first launch, after a copy, a
    /// signal or a wait, in a concurrent recording, or on a GPU whose QMD has no latches, before
    /// Hopper) it is an ordinary launch.
    ///
    /// The promise is the caller's: a kernel recorded this way that touches its
    /// predecessor's data before `griddepcontrol.wait` (or never waits) reads and writes
    /// without order, as under CUDA.
    pub fn launch_programmatic(
        &mut self,
        k: &'k Kernel<M>,
        cfg: LaunchConfig,
        params: &[u8],
    ) -> Result<OpId, SequenceError> {
        self.launch_op(k, cfg, params, true)
    }

    fn launch_op(
        &mut self,
        k: &'k Kernel<M>,
        cfg: LaunchConfig,
        params: &[u8],
        programmatic: bool,
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
                programmatic,
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
