//! The recorded-sequence figures of `nvbare bench` (issue 20, item 1): a sequence replayed
//! per kernel against `cuda_base_graph`'s graph with updates, and the check that a sequence
//! orders its grids (BENCHMARKS.md, runs 37-43).

use std::time::Instant;

use nvbare_core::gpu::{Backend, Gpu, GpuError, Kernel, LaunchConfig, Placement, Recording};

use crate::bench::{BenchError, median5, view};

/// Replays of the recorded sequence per measurement (as `cuda_base`'s graph figures).
const REPLAYS: u32 = 20;

/// The replay figure: a sequence of `kernels` launches, `empty_kernel` and `store_value`
/// alternately (in order: each grid starts when the one before it has completed), recorded
/// once; before each replay the last `store_value`'s value is patched, as `cuda_base`'s
/// graph-with-updates figure sets that node's parameters (`cudaGraphExecKernelNodeSetParams`).
/// Per kernel; the value the last replay stored is checked. `in_order: false` records the
/// same launches with [`Recording::concurrent`].
pub fn per_kernel<B: Backend>(
    gpu: &mut Gpu<B>,
    cubin: &[u8],
    empty: &Kernel<B::Memory>,
    kernels: u32,
    in_order: bool,
    programmatic: bool,
    stop: (fn() -> bool, Instant),
) -> Result<f64, BenchError<B::Error>> {
    let store = gpu.load(cubin, "store_value")?;
    let flag = gpu.alloc(0x1000, Placement::Host, true)?;
    let one = LaunchConfig {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        dynamic_shared: 0,
    };
    let mut params = flag.gpu_va().to_le_bytes().to_vec();
    params.extend_from_slice(&0u64.to_le_bytes());
    params.resize(store.info.param_size as usize, 0);
    let mut rec = if in_order {
        Recording::new()
    } else {
        Recording::concurrent()
    };
    let mut last = None;
    for i in 0..kernels {
        let (k, p) = if i % 2 == 0 {
            (empty, &[][..])
        } else {
            (&store, &params[..])
        };
        let id = if programmatic {
            rec.launch_programmatic(k, one, p)
        } else {
            rec.launch(k, one, p)
        }
        .map_err(GpuError::from)?;
        if i % 2 == 1 {
            last = Some(id);
        }
    }
    let mut seq = gpu.finish(rec)?;
    let mut value = 0u64;
    let mut measured = || -> Result<f64, GpuError<B::Error>> {
        let t = Instant::now();
        for _ in 0..REPLAYS {
            value += 1;
            if let Some(id) = last {
                seq.set_arg_u64(id, 8, value)?;
            }
            gpu.replay(&mut seq)?;
        }
        let r = seq.last_replay();
        gpu.wait_replay(&r)?;
        Ok(t.elapsed().as_secs_f64() / f64::from(REPLAYS * kernels) * 1e6)
    };
    // One round unmeasured: the sequence's memory and the chain warm.
    measured()?;
    let us = median5(stop, &mut measured)?;
    let stored = view(&flag)?.read_u64(0).map_err(GpuError::from)?;
    if last.is_some() && stored != value {
        return Err(BenchError::WrongData {
            what: "the value the last replay's store_value wrote",
            byte: 0,
        });
    }
    gpu.free_sequence(seq)?;
    gpu.free(flag);
    gpu.unload(store)?;
    Ok(us)
}

/// Dependent grids in [`order_errors`]'s sequence.
pub const ORDER_STEPS: u32 = 64;

/// Replays of [`order_errors`]'s sequence, back to back.
pub const ORDER_REPLAYS: u32 = 2;

/// Floats each `vector_add` of [`order_errors`] writes (4 MiB; 256 KiB with `--quick`).
pub const ORDER_ELEMENTS: usize = 1 << 20;

/// [`ORDER_ELEMENTS`] with `--quick` (the simulator runs every grid).
pub const ORDER_ELEMENTS_QUICK: usize = 1 << 16;

/// How far past the element it writes each of [`order_errors`]' grids of `n` elements
/// reads, by step: half a grid (even steps), so its first CTAs read what the second half of
/// the grid before it wrote, and all but 1024 elements (odd steps), so its first four CTAs
/// read what the last four CTAs of the grid before it wrote, which a grid started early
/// reaches first.
fn order_shifts(n: usize) -> [usize; 2] {
    [n / 2, n - 1024]
}

/// Whether a recorded sequence orders its grids: [`ORDER_STEPS`] `vector_add` grids of 4096
/// blocks over host memory, recorded once and replayed [`ORDER_REPLAYS`] times back to back.
/// Two buffers of `n` + the longer shift floats start at 0, from `n` on at 1 (never
/// written); the grids take turns, `y[j] += x[j + s]`, then `x[j] += y[j + s']`, for `j`
/// below `n` ([`ORDER_ELEMENTS`] or [`ORDER_ELEMENTS_QUICK`]), with the shifts of
/// `order_shifts`. So each grid's first CTAs
/// read what later CTAs of the grid before it wrote, and the values grow every step: a grid
/// that starts early, even one whose CTAs each start after the same-numbered CTA before them
/// (programmatic dependent launch without the wait), reads a stale value. The result is compared with the
/// same steps on the CPU (small integers, exact in f32). Returns the number of elements
/// that are wrong. `programmatic` records the launches with
/// [`Recording::launch_programmatic`] (for kernels that wait, `nvbare bench --programmatic`).
pub fn order_errors<B: Backend>(
    gpu: &mut Gpu<B>,
    cubin: &[u8],
    in_order: bool,
    programmatic: bool,
    n: usize,
) -> Result<u64, BenchError<B::Error>> {
    let add = gpu.load(cubin, "vector_add")?;
    let shifts = order_shifts(n);
    let start: Vec<f32> = (0..n + shifts[1])
        .map(|j| if j < n { 0.0 } else { 1.0 })
        .collect();
    let bytes: Vec<u8> = start.iter().flat_map(|v| v.to_le_bytes()).collect();
    // CAST: 8 MiB fits u64.
    let alloc = |gpu: &mut Gpu<B>| gpu.alloc(bytes.len() as u64, Placement::Host, true);
    let (x, y) = (alloc(gpu)?, alloc(gpu)?);
    view(&x)?.write(0, &bytes).map_err(GpuError::from)?;
    view(&y)?.write(0, &bytes).map_err(GpuError::from)?;
    let cfg = LaunchConfig {
        // CAST: at most 4096 blocks.
        grid: [(n / 256) as u32, 1, 1],
        block: [256, 1, 1],
        dynamic_shared: 0,
    };
    let mut rec = if in_order {
        Recording::new()
    } else {
        Recording::concurrent()
    };
    for i in 0..ORDER_STEPS {
        let (src, dst) = if i % 2 == 0 { (&x, &y) } else { (&y, &x) };
        // CAST: under 4 MiB fits u64.
        let shift = (shifts[i as usize % 2] * 4) as u64;
        let mut params = Vec::with_capacity(32);
        params.extend_from_slice(&(src.gpu_va() + shift).to_le_bytes());
        params.extend_from_slice(&dst.gpu_va().to_le_bytes());
        params.extend_from_slice(&dst.gpu_va().to_le_bytes());
        // CAST: at most 2^20, fits i32.
        params.extend_from_slice(&(n as i32).to_le_bytes());
        params.resize(add.info.param_size as usize, 0);
        if programmatic {
            rec.launch_programmatic(&add, cfg, &params)
        } else {
            rec.launch(&add, cfg, &params)
        }
        .map_err(GpuError::from)?;
    }
    let mut seq = gpu.finish(rec)?;
    // Twice back to back: the second replay must also wait for the first, and nothing a
    // replay leaves behind may let the next one's grids start early.
    for _ in 0..ORDER_REPLAYS {
        gpu.replay(&mut seq)?;
    }
    let r = seq.last_replay();
    gpu.wait_replay(&r)?;
    let want = expected_order_buffers(&start, n, shifts);
    let mut wrong = 0u64;
    let mut out = vec![0u8; bytes.len()];
    for (buf, want) in [(&x, &want[0]), (&y, &want[1])] {
        view(buf)?.read(0, &mut out).map_err(GpuError::from)?;
        wrong += out
            .chunks_exact(4)
            .zip(want)
            .filter(|(c, w)| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) != **w)
            .count() as u64;
    }
    gpu.free_sequence(seq)?;
    for b in [x, y] {
        gpu.free(b);
    }
    gpu.unload(add)?;
    Ok(wrong)
}

/// `x` and `y` after [`order_errors`]' steps in order, computed on the CPU.
fn expected_order_buffers(start: &[f32], n: usize, shifts: [usize; 2]) -> [Vec<f32>; 2] {
    order_steps(start, n, shifts, None)
}

/// [`order_errors`]' steps on the CPU; with `early: Some(k)`, step `k`'s first CTA (256
/// elements) reads its source as it was before step `k - 1` wrote it, as a grid started
/// before the one before it completed would.
fn order_steps(start: &[f32], n: usize, shifts: [usize; 2], early: Option<u32>) -> [Vec<f32>; 2] {
    let (mut x, mut y) = (start.to_vec(), start.to_vec());
    // The buffer the step before wrote, as it was before that step (kept only for `early`).
    let mut before_last = if early.is_some() {
        start.to_vec()
    } else {
        Vec::new()
    };
    for i in 0..ORDER_STEPS * ORDER_REPLAYS {
        let (src, dst) = if i % 2 == 0 {
            (&x, &mut y)
        } else {
            (&y, &mut x)
        };
        let shift = shifts[i as usize % 2];
        let dst_before = early.map(|_| dst.clone());
        for j in 0..n {
            let from = if early == Some(i) && j < 256 {
                &before_last
            } else {
                src
            };
            dst[j] += from[j + shift];
        }
        if let Some(b) = dst_before {
            before_last = b;
        }
    }
    [x, y]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check fails when one grid starts early: its first CTA reads what the last CTAs of
    /// the grid before it had not yet written (the odd steps' shift), or what its middle
    /// CTAs had not (the even steps').
    #[test]
    fn one_grid_started_early_changes_the_result() {
        let n = ORDER_ELEMENTS_QUICK;
        let shifts = order_shifts(n);
        let start: Vec<f32> = (0..n + shifts[1])
            .map(|j| if j < n { 0.0 } else { 1.0 })
            .collect();
        let good = order_steps(&start, n, shifts, None);
        for k in [1, 2, 63, 64, 127] {
            let bad = order_steps(&start, n, shifts, Some(k));
            let wrong = (0..2)
                .map(|b| (0..n).filter(|&j| good[b][j] != bad[b][j]).count())
                .sum::<usize>();
            assert!(wrong > 0, "step {k} started early changes nothing");
        }
        // Small integers: exact in f32, the largest well under 2^24.
        let max = good.iter().flatten().fold(0f32, |m, &v| m.max(v));
        assert!(max > 100.0 && max < 16_777_216.0, "{max}");
    }
}
