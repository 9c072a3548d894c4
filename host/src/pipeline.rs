//! `nvbare bench --pipeline`: N chunks copied in from host memory, run through an SM kernel,
//! and copied back out, with the steps of different chunks overlapped and every dependency
//! kept on the GPU (`Gpu::wait_on`: the compute queue waits for the copy queue's copy in, the
//! copy queue for the kernel); the CPU waits once, at the end. `host/bench-results/
//! cuda_pipeline.cu` does the same with CUDA (a copy stream and a compute stream, events
//! between them) in the same submission order, so the two times compare.
//!
//! Order of submission, both queues in order: copy in 0; then for each chunk i: copy in i+1
//! (copy queue), the kernel on chunk i after copy in i (compute queue), copy out i after the
//! kernel (copy queue). Copy in i+1 runs beside kernel i; the copy engine runs the copies
//! one after another.

use std::fmt::Write;
use std::time::Instant;

use nvbare_core::gpu::{Backend, Buffer, Fence, Gpu, GpuError, Kernel, LaunchConfig, Placement};
use nvbare_core::rm::Engine;

use crate::bench::{BENCH_CUBIN, BenchError, check, view};

/// The pipeline's figures (medians of 5 after one warm-up pass), named as
/// `cuda_pipeline --json` names them.
#[derive(Clone, Debug, Default)]
pub struct PipelineFigures {
    /// Chunks.
    pub chunks: u32,
    /// Bytes per chunk.
    pub chunk_bytes: u64,
    /// Wall time of the overlapped pipeline, first submission to the last copy seen done.
    pub pipelined_ms: f64,
    /// The same steps one at a time, the CPU waiting for each (no overlap, no GPU-side wait).
    pub serial_ms: f64,
    /// One more overlapped pass with every op timed on the GPU: first start to last end.
    pub gpu_span_ms: f64,
    /// That pass's GPU times per step, medians over the chunks (µs): copy in, kernel, copy out.
    pub step_us: [f64; 3],
    /// The copies alone, back to back on the copy queue (no kernel, one CPU wait), wall
    /// times (ms): the N copies in, then the 2N copies in and out alternating, then those
    /// timed, with the timed pass's GPU span, then the alternating copies launched as
    /// `PIPELINED` transfers (a study: nvbare's copies are `NON_PIPELINED`).
    pub copies_ms: [f64; 5],
}

impl PipelineFigures {
    /// Chunk bytes through the pipeline per second of the overlapped pass (GB/s, 1e9).
    pub fn gbps(&self) -> f64 {
        (self.chunk_bytes * u64::from(self.chunks)) as f64 / (self.pipelined_ms * 1e6)
    }

    /// One JSON object.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"chunks\":{},\"chunk_MiB\":{},\"pipeline_ms\":{:.3},\"pipeline_GBps\":{:.2},\
             \"serial_ms\":{:.3},\"gpu_span_ms\":{:.3},\"copy_in_us\":{:.1},\"kernel_us\":{:.1},\
             \"copy_out_us\":{:.1},\"h2d_only_ms\":{:.3},\"alternating_ms\":{:.3},\
             \"alternating_timed_ms\":{:.3},\"alternating_timed_gpu_ms\":{:.3},\"alternating_pipelined_ms\":{:.3}}}",
            self.chunks,
            self.chunk_bytes >> 20,
            self.pipelined_ms,
            self.gbps(),
            self.serial_ms,
            self.gpu_span_ms,
            self.step_us[0],
            self.step_us[1],
            self.step_us[2],
            self.copies_ms[0],
            self.copies_ms[1],
            self.copies_ms[2],
            self.copies_ms[3],
            self.copies_ms[4]
        )
    }

    /// A table for people.
    pub fn to_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "pipeline: {} chunks x {} MiB, host -> VRAM -> copy_flat -> VRAM -> host",
            self.chunks,
            self.chunk_bytes >> 20
        );
        let _ = writeln!(
            s,
            "  overlapped, GPU-side waits  {:9.3} ms  {:7.2} GB/s",
            self.pipelined_ms,
            self.gbps()
        );
        let _ = writeln!(s, "  one step at a time (CPU)   {:9.3} ms", self.serial_ms);
        let _ = writeln!(
            s,
            "  timed pass, GPU span       {:9.3} ms  (per chunk on the GPU: copy in {:.1} us, \
             kernel {:.1} us, copy out {:.1} us)",
            self.gpu_span_ms, self.step_us[0], self.step_us[1], self.step_us[2]
        );
        let c = &self.copies_ms;
        let _ = writeln!(
            s,
            "  copies alone: {} in {:.3} ms; {} in and out alternating {:.3} ms, timed {:.3} ms \
             ({:.3} ms GPU span), as PIPELINED transfers {:.3} ms",
            self.chunks,
            c[0],
            2 * self.chunks,
            c[1],
            c[2],
            c[3],
            c[4]
        );
        s
    }
}

struct Setup<M> {
    kernel: Kernel<M>,
    host_in: Buffer<M>,
    host_out: Buffer<M>,
    a: Buffer<M>,
    b: Buffer<M>,
    chunks: u32,
    chunk: u64,
}

impl<M> Setup<M> {
    fn params(&self, i: u32) -> Vec<u8> {
        let off = u64::from(i) * self.chunk;
        let mut p = Vec::with_capacity(24);
        p.extend_from_slice(&(self.a.gpu_va() + off).to_le_bytes());
        p.extend_from_slice(&(self.b.gpu_va() + off).to_le_bytes());
        p.extend_from_slice(&(self.chunk / 16).to_le_bytes());
        p
    }

    /// `copy_flat`: one 16-byte element per thread, 256 threads a block.
    fn cfg(&self) -> LaunchConfig {
        LaunchConfig {
            // CAST: chunk / 4096 blocks: 16 Ki for 64 MiB, far below the grid limit.
            grid: [(self.chunk / 16).div_ceil(256) as u32, 1, 1],
            block: [256, 1, 1],
            dynamic_shared: 0,
        }
    }

    fn at(&self, buf: &Buffer<M>, i: u32) -> u64 {
        buf.gpu_va() + u64::from(i) * self.chunk
    }
}

/// The timed ops of one chunk: copy in, kernel, copy out.
type ChunkOps = [nvbare_core::gpu::Timed; 3];

/// Which ops of an overlapped pass are timed on the GPU.
#[derive(Clone, Copy, PartialEq)]
enum Timing {
    Off,
    On,
}

/// One overlapped pass; returns the fence of the last copy out and, when timed, each op's
/// GPU times in submission order per chunk (copy in, kernel, copy out).
fn overlapped<B: Backend>(
    gpu: &mut Gpu<B>,
    s: &Setup<B::Memory>,
    timing: Timing,
) -> Result<(Fence, Vec<ChunkOps>), GpuError<B::Error>> {
    let cfg = s.cfg();
    let copy = |gpu: &mut Gpu<B>, dst: u64, src: u64| -> Result<_, GpuError<B::Error>> {
        Ok(match timing {
            Timing::On => Some(gpu.copy_timed(dst, src, s.chunk)?),
            Timing::Off => {
                gpu.copy(dst, src, s.chunk)?;
                None
            }
        })
    };
    let fence_of = |gpu: &Gpu<B>, t: &Option<nvbare_core::gpu::Timed>, e: Engine| {
        t.map_or_else(|| gpu.submitted(e), |t| t.fence)
    };
    let mut timed = Vec::new();
    let mut cin = copy(gpu, s.at(&s.a, 0), s.at(&s.host_in, 0))?;
    let mut in_fence = fence_of(gpu, &cin, Engine::Copy);
    let mut last = in_fence;
    for i in 0..s.chunks {
        let (next_in, next_fence) = if i + 1 < s.chunks {
            let t = copy(gpu, s.at(&s.a, i + 1), s.at(&s.host_in, i + 1))?;
            let f = fence_of(gpu, &t, Engine::Copy);
            (t, f)
        } else {
            (None, in_fence)
        };
        gpu.wait_on(Engine::Compute, in_fence)?;
        let (k, kf) = match timing {
            Timing::On => {
                let t = gpu.launch_timed(&s.kernel, &cfg, &s.params(i))?;
                (Some(t), t.fence)
            }
            Timing::Off => (None, gpu.launch_with(&s.kernel, &cfg, &s.params(i))?),
        };
        gpu.wait_on(Engine::Copy, kf)?;
        let cout = copy(gpu, s.at(&s.host_out, i), s.at(&s.b, i))?;
        last = fence_of(gpu, &cout, Engine::Copy);
        if let (Some(a), Some(b), Some(c)) = (cin, k, cout) {
            timed.push([a, b, c]);
        }
        cin = next_in;
        in_fence = next_fence;
    }
    Ok((last, timed))
}

/// The copies of a pass without the kernel, back to back, one CPU wait at the end (medians
/// of 5, ms): the copies in; in and out alternating; the same timed, and its GPU span.
fn copies_alone<B: Backend>(
    gpu: &mut Gpu<B>,
    s: &Setup<B::Memory>,
    stop: (fn() -> bool, Instant),
) -> Result<[f64; 5], BenchError<B::Error>> {
    let mut r: [Vec<f64>; 5] = Default::default();
    for _ in 0..5 {
        check(stop.0, stop.1)?;
        let t = Instant::now();
        for i in 0..s.chunks {
            gpu.copy(s.at(&s.a, i), s.at(&s.host_in, i), s.chunk)?;
        }
        gpu.wait(gpu.submitted(Engine::Copy))?;
        r[0].push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        for i in 0..s.chunks {
            gpu.copy(s.at(&s.a, i), s.at(&s.host_in, i), s.chunk)?;
            gpu.copy(s.at(&s.host_out, i), s.at(&s.b, i), s.chunk)?;
        }
        gpu.wait(gpu.submitted(Engine::Copy))?;
        r[1].push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let mut timed = Vec::new();
        for i in 0..s.chunks {
            timed.push(gpu.copy_timed(s.at(&s.a, i), s.at(&s.host_in, i), s.chunk)?);
            timed.push(gpu.copy_timed(s.at(&s.host_out, i), s.at(&s.b, i), s.chunk)?);
        }
        gpu.wait(gpu.submitted(Engine::Copy))?;
        r[2].push(t.elapsed().as_secs_f64() * 1e3);
        let (mut first, mut last) = (u64::MAX, 0);
        for t in &timed {
            let g = gpu.times(t)?;
            first = first.min(g.start_ns);
            last = last.max(g.end_ns);
        }
        r[3].push(last.saturating_sub(first) as f64 / 1e6);
        let t = Instant::now();
        for i in 0..s.chunks {
            pipelined_copy(gpu, s.at(&s.a, i), s.at(&s.host_in, i), s.chunk)?;
            pipelined_copy(gpu, s.at(&s.host_out, i), s.at(&s.b, i), s.chunk)?;
        }
        gpu.wait(gpu.submitted(Engine::Copy))?;
        r[4].push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(r.map(|mut v| median(&mut v)))
}

/// One copy of at most 2 GiB launched as a `PIPELINED` transfer (`NVC8B5_LAUNCH_DMA`
/// `DATA_TRANSFER_TYPE` 1), which may overlap the engine's previous transfer.
fn pipelined_copy<B: Backend>(
    gpu: &mut Gpu<B>,
    dst: u64,
    src: u64,
    len: u64,
) -> Result<(), GpuError<B::Error>> {
    use nvbare_core::copy::{self, launch_dma};
    use nvbare_core::push::{PushBuffer, Subchannel};
    let mut pb = PushBuffer::with_capacity(12);
    pb.method(
        Subchannel::COPY,
        copy::OFFSET_IN_UPPER,
        &[
            (src >> 32) as u32,
            src as u32,
            (dst >> 32) as u32,
            dst as u32,
        ],
    )?;
    // CAST: the pipeline's chunks are 64 MiB (4 MiB quick), far below 2^32.
    pb.method(Subchannel::COPY, copy::LINE_LENGTH_IN, &[len as u32])?;
    pb.method(
        Subchannel::COPY,
        copy::LAUNCH_DMA,
        &[launch_dma::DATA_TRANSFER_PIPELINED | launch_dma::SRC_PITCH | launch_dma::DST_PITCH],
    )?;
    gpu.submit(Engine::Copy, pb)?;
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the pipeline benchmark: `quick` is 4 chunks of 4 MiB (a smoke test), else 8 of 64 MiB.
pub fn run<B: Backend>(
    gpu: &mut Gpu<B>,
    quick: bool,
    stop: fn() -> bool,
) -> Result<PipelineFigures, BenchError<B::Error>> {
    let started = Instant::now();
    let (chunks, chunk) = if quick {
        (4u32, 4u64 << 20)
    } else {
        (8, 64 << 20)
    };
    let total = chunk * u64::from(chunks);
    let s = Setup {
        kernel: gpu.load(BENCH_CUBIN, "copy_flat")?,
        host_in: gpu.alloc(total, Placement::Host, true)?,
        host_out: gpu.alloc(total, Placement::Host, true)?,
        a: gpu.alloc(total, Placement::Vram, false)?,
        b: gpu.alloc(total, Placement::Vram, false)?,
        chunks,
        chunk,
    };
    let pattern: Vec<u8> = (0..total / 8)
        .flat_map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed).to_le_bytes())
        .collect();
    view(&s.host_in)?
        .write_u64s(0, &pattern)
        .map_err(GpuError::from)?;
    view(&s.host_out)?
        // CAST: the pipeline's buffers are mapped, so their sizes fit usize.
        .fill(0, total as usize, 0)
        .map_err(GpuError::from)?;

    // A warm-up pass, checked: every byte went in, through the kernel and back.
    let (f, _) = overlapped(gpu, &s, Timing::Off)?;
    gpu.wait(f)?;
    let mut back = vec![0u8; pattern.len()];
    view(&s.host_out)?
        .read(0, &mut back)
        .map_err(GpuError::from)?;
    if let Some(at) = back.iter().zip(&pattern).position(|(a, b)| a != b) {
        return Err(BenchError::WrongData {
            what: "the pipeline's output",
            byte: at,
        });
    }

    let mut piped = Vec::new();
    let mut serial = Vec::new();
    for _ in 0..5 {
        check(stop, started)?;
        let t = Instant::now();
        let (f, _) = overlapped(gpu, &s, Timing::Off)?;
        gpu.wait(f)?;
        piped.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        for i in 0..chunks {
            let f = gpu.copy(s.at(&s.a, i), s.at(&s.host_in, i), chunk)?;
            gpu.wait(f)?;
            let f = gpu.launch_with(&s.kernel, &s.cfg(), &s.params(i))?;
            gpu.wait(f)?;
            let f = gpu.copy(s.at(&s.host_out, i), s.at(&s.b, i), chunk)?;
            gpu.wait(f)?;
        }
        serial.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (f, timed) = overlapped(gpu, &s, Timing::On)?;
    gpu.wait(f)?;
    let mut steps: [Vec<f64>; 3] = Default::default();
    let (mut first, mut last) = (u64::MAX, 0);
    for ops in &timed {
        for (k, t) in ops.iter().enumerate() {
            let g = gpu.times(t)?;
            steps[k].push(g.duration_ns() as f64 / 1e3);
            first = first.min(g.start_ns);
            last = last.max(g.end_ns);
        }
    }
    let copies_ms = copies_alone(gpu, &s, (stop, started))?;
    let fig = PipelineFigures {
        chunks,
        chunk_bytes: chunk,
        pipelined_ms: median(&mut piped),
        serial_ms: median(&mut serial),
        gpu_span_ms: last.saturating_sub(first) as f64 / 1e6,
        step_us: steps.map(|mut v| median(&mut v)),
        copies_ms,
    };
    for b in [s.host_in, s.host_out, s.a, s.b] {
        gpu.free(b);
    }
    gpu.unload(s.kernel)?;
    Ok(fig)
}
