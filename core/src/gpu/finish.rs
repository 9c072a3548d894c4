//! Recorded sequences, part 2: finishing. [`Gpu::finish`] makes one pass over a
//! [`Recording`] and lays out its QMDs, constant banks and both queues' segments in one buffer
//! of video memory, as `record.rs`'s module doc draws it, with the patch table of where each
//! replay-time value sits (`replay.rs`, part 3). Consecutive launches are chained as dependent
//! QMDs; a programmatic launch's edge also gets a latch (IDs from [`NEXT_LATCH`]).

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

use super::record::{Op, Recording, SequenceError};
use super::replay::{CopyPatch, Dyn, LaunchPatch, OpRef, Parts, Segment, Sequence, Site};
use super::{Backend, Gpu, GpuError, MemoryRequest, Placement, queue_index};
use crate::compute::{self, PcasAction};
use crate::copy;
use crate::launch::{self, ComputeContext};
use crate::push::PushBuffer;
use crate::qmd::{CWD_MEMBAR_L1_MEMBAR, CWD_MEMBAR_L1_SYSMEMBAR};
use crate::rm::{Engine, Step, tree::at};
use crate::sem::{self, HostRelease};

/// The next latch ID a sequence's programmatic edges may take. IDs start where CUDA 13's
/// first graph on the H200 started (0x40, run 53) and are never 0.
static NEXT_LATCH: AtomicU32 = AtomicU32::new(0x40);

/// The latch IDs of one sequence being built.
struct LatchIds {
    count: u32,
    base: Option<u32>,
}

/// The latch ID of a sequence's next programmatic edge: a new one from [`NEXT_LATCH`] per
/// edge, so no two edges of any live sequences share one (2^32 edges before they wrap);
/// with `cycle` (the `latchcycle=N` measuring knob), the sequence's edges take `cycle` IDs
/// in turn.
fn latch_id(ids: &mut LatchIds, cycle: Option<u32>) -> u64 {
    let n = ids.count;
    ids.count += 1;
    let id = match cycle {
        Some(c) => {
            let base = *ids
                .base
                .get_or_insert_with(|| NEXT_LATCH.fetch_add(c, Ordering::Relaxed));
            base.wrapping_add(n % c)
        }
        None => NEXT_LATCH.fetch_add(1, Ordering::Relaxed),
    };
    // Never 0: skip it where the counter wraps.
    u64::from(id.max(1))
}

/// Words from the start of a semaphore method group (host `SEM_ADDR_LO..SEM_EXECUTE`, copy
/// `SET_SEMAPHORE_A..PAYLOAD_UPPER`) to its payload's low word: header, two address words.
const PAYLOAD_WORD: usize = 3;

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
        // Programmatic edges so far, and the first latch ID of this sequence.
        let mut edges = LatchIds {
            count: 0,
            base: None,
        };
        let (ci, ki) = (queue_index(Engine::Compute), queue_index(Engine::Copy));
        for op in &rec.ops {
            match op {
                Op::Launch {
                    kernel,
                    cfg,
                    params,
                    programmatic,
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
                            if *programmatic && let Some(latch) = l.latch {
                                // A programmatic edge, as CUDA 13 writes one (run 53): the
                                // earlier grid lets this one start early and arrives at the
                                // latch when complete; this grid's griddepcontrol.wait waits
                                // on it, then invalidates its L1 data caches.
                                let id = latch_id(&mut edges, self.tuning.latch_cycle);
                                q.set(latch.enable_program_pre_exit, 1)?;
                                q.set(latch.arrive_valid, 1)?;
                                q.set(latch.arrive_id, id)?;
                                p.qmd.set(latch.wait_valid, 1)?;
                                p.qmd.set(latch.wait_id, id)?;
                                p.qmd.set(latch.acquire_invalidate_shader_data, 1)?;
                                p.qmd.set(latch.acquire_invalidate_texture_data, 1)?;
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
