//! The recorded-sequence figures of `nvbare bench` (issue 20, item 1): a sequence replayed
//! per kernel against `cuda_base_graph`'s graph with updates, and the check that a sequence
//! orders its grids (BENCHMARKS.md, runs 37-43).

use std::time::Instant;

use nvbare_core::gpu::{Backend, Gpu, GpuError, Kernel, LaunchConfig, Placement, Recording};

use crate::bench::{BenchError, kernels_for, median5, view};

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
    empty: &Kernel<B::Memory>,
    kernels: u32,
    in_order: bool,
    stop: (fn() -> bool, Instant),
) -> Result<f64, BenchError<B::Error>> {
    let store = gpu.load(kernels_for(gpu.sm()), "store_value")?;
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
        if i % 2 == 0 {
            rec.launch(empty, one, &[]).map_err(GpuError::from)?;
        } else {
            last = Some(rec.launch(&store, one, &params).map_err(GpuError::from)?);
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

/// Floats each `vector_add` of [`order_errors`] adds (4 MiB per buffer).
const ORDER_ELEMENTS: usize = 1 << 20;

/// Whether a recorded sequence orders its grids: [`ORDER_STEPS`] `vector_add` grids of 4096
/// blocks over host memory, each reading what the one before it wrote (`y = x + 1`, then
/// `x = y + 1`, ...), recorded once and replayed [`ORDER_REPLAYS`] times back to back. In order,
/// every element of `x` ends at `ORDER_STEPS * ORDER_REPLAYS` and of `y` at one less; a grid that starts before the one before it has
/// completed reads stale values. Returns the number of elements that are wrong.
pub fn order_errors<B: Backend>(
    gpu: &mut Gpu<B>,
    in_order: bool,
) -> Result<u64, BenchError<B::Error>> {
    let add = gpu.load(kernels_for(gpu.sm()), "vector_add")?;
    let bytes = ORDER_ELEMENTS * 4;
    // CAST: 4 MiB fits u64.
    let alloc = |gpu: &mut Gpu<B>| gpu.alloc(bytes as u64, Placement::Host, true);
    let (x, y, one) = (alloc(gpu)?, alloc(gpu)?, alloc(gpu)?);
    view(&x)?.fill(0, bytes, 0).map_err(GpuError::from)?;
    view(&y)?.fill(0, bytes, 0).map_err(GpuError::from)?;
    let ones: Vec<u8> = (0..ORDER_ELEMENTS)
        .flat_map(|_| 1f32.to_le_bytes())
        .collect();
    view(&one)?.write(0, &ones).map_err(GpuError::from)?;
    let cfg = LaunchConfig {
        // CAST: 4096 blocks.
        grid: [(ORDER_ELEMENTS / 256) as u32, 1, 1],
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
        let mut params = Vec::with_capacity(32);
        params.extend_from_slice(&src.gpu_va().to_le_bytes());
        params.extend_from_slice(&one.gpu_va().to_le_bytes());
        params.extend_from_slice(&dst.gpu_va().to_le_bytes());
        // CAST: 2^20 fits i32.
        params.extend_from_slice(&(ORDER_ELEMENTS as i32).to_le_bytes());
        params.resize(add.info.param_size as usize, 0);
        rec.launch(&add, cfg, &params).map_err(GpuError::from)?;
    }
    let mut seq = gpu.finish(rec)?;
    // Twice back to back: the second replay must also wait for the first, and nothing a
    // replay leaves behind may let the next one's grids start early.
    for _ in 0..ORDER_REPLAYS {
        gpu.replay(&mut seq)?;
    }
    let r = seq.last_replay();
    gpu.wait_replay(&r)?;
    let mut wrong = 0u64;
    let mut out = vec![0u8; bytes];
    // CAST: small integers are exact in f32.
    let steps = ORDER_STEPS * ORDER_REPLAYS;
    for (buf, want) in [(&x, steps as f32), (&y, (steps - 1) as f32)] {
        view(buf)?.read(0, &mut out).map_err(GpuError::from)?;
        wrong += out
            .chunks_exact(4)
            .filter(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) != want)
            .count() as u64;
    }
    gpu.free_sequence(seq)?;
    for b in [x, y, one] {
        gpu.free(b);
    }
    gpu.unload(add)?;
    Ok(wrong)
}
