//! `nvbare bench`: the kernel-driver backend measured the way
//! `shared/bench/cuda_base.cu` measures CUDA (same counts, medians of 5), so the
//! two can be set side by side from one device run.

use std::time::Instant;

use nvbare_core::gpu::{Backend, Buffer, BufferView, Gpu, GpuError, Placement};
use nvbare_core::rm::Engine;

use crate::replay;

/// The cubin with the benchmark kernels (see `host/data/build.sh`).
pub const BENCH_CUBIN: &[u8] = include_bytes!("../data/bench_kernels.sm_90.cubin");

/// The benchmark kernels built for sm_100 (GB10x), from the same source.
pub const BENCH_CUBIN_SM100: &[u8] = include_bytes!("../data/bench_kernels.sm_100.cubin");

/// `nvbare bench --programmatic`'s kernels (`host/data/pdl_kernels.cu`: `empty_kernel`,
/// `vector_add` and `store_value` that wait for their predecessors) for a GPU of SM version
/// `sm`: built for sm_90 and sm_100; another SM gets sm_90's, whose loading is then refused
/// with both SMs named (`NVB-E103`).
pub fn programmatic_kernels_for(sm: u32) -> &'static [u8] {
    if sm == 100 {
        include_bytes!("../data/pdl_kernels.sm_100.cubin")
    } else {
        include_bytes!("../data/pdl_kernels.sm_90.cubin")
    }
}

/// The committed cubin with `empty_kernel`, `vector_add` and `store_value` for a GPU of SM
/// version `sm`, and its path in the repository: the test kernels of
/// [`nvbare_test_kernels::for_sm`], the table every user shares. An SM without committed
/// kernels gets sm_90's, so that loading them is refused with both SMs named
/// (`NVB-E103`).
pub fn kernels_with_path_for(sm: u32) -> (&'static str, &'static [u8]) {
    let k = nvbare_test_kernels::for_sm(sm).unwrap_or(SM90_TEST_KERNELS);
    (k.path, k.cubin)
}

/// The fallback of [`kernels_with_path_for`]: sm_90's entry.
const SM90_TEST_KERNELS: &nvbare_test_kernels::TestKernels =
    nvbare_test_kernels::for_sm(90).expect("sm_90's test kernels are committed");

/// [`kernels_with_path_for`]'s cubin.
pub fn kernels_for(sm: u32) -> &'static [u8] {
    kernels_with_path_for(sm).1
}

/// One run's figures, named as `cuda_base --json` names them.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    pub launch_roundtrip_us: f64,
    pub launch_async_us: f64,
    pub launch_batched_us: f64,
    pub h2d_gbps: f64,
    pub d2h_gbps: f64,
    pub d2d_ce_gbps: f64,
    pub d2d_sm_gbps: f64,
    pub d2d_both_gbps: f64,
    pub alloc_free_2mib_us: f64,
    pub alloc_free_2mib_pool_us: f64,
    pub alloc_free_1gib_us: f64,
    /// Bytes of each copy measured (1 GiB; less with [`Options::quick`]; 0 when only the
    /// launch figures were measured).
    pub copy_bytes: u64,
    /// Launches in the one submission of `launch_batched_us` (1000; less when quick).
    pub batch: u32,
    /// Doorbells rung again by waits that saw the front end fetch nothing for a slice with
    /// entries pending (compute + copy; `Gpu::doorbell_rerings`).
    pub doorbell_rerings: u64,
    /// A recorded sequence of `batch` launches (`empty_kernel` and `store_value` alternately,
    /// in order) replayed, one argument patched before each replay: per kernel.
    pub replay_us: f64,
    /// The same sequence recorded with `Recording::concurrent` (no chain: each launch started
    /// by the front end, nothing ordered): what the in-order chain costs.
    pub replay_unordered_us: f64,
    /// Elements wrong after [`replay::ORDER_STEPS`] dependent `vector_add` grids replayed in order
    /// (must be 0; see [`replay::order_errors`]).
    pub replay_order_errors: u64,
    /// The same recorded with
    /// [`Recording::concurrent`](nvbare_core::gpu::Recording::concurrent): how many the
    /// check catches when nothing orders the grids (shows the check can fail).
    pub replay_unordered_order_errors: u64,
}

/// Why a benchmark ended without figures.
#[derive(Debug, thiserror::Error)]
pub enum BenchError<E: std::error::Error + 'static> {
    /// The GPU layer failed.
    #[error(transparent)]
    Gpu(#[from] GpuError<E>),
    /// Data read back after a measured pass is not what went in.
    #[error("{what} differs from its input from byte {byte} on")]
    WrongData {
        /// What was checked.
        what: &'static str,
        /// The first byte that differs.
        byte: usize,
    },
    /// [`Options::stop`] said to stop (Ctrl-C), between two measurements.
    #[error("stopped after {waited_ns} ns")]
    Stopped {
        /// How long the benchmark had run.
        waited_ns: u64,
    },
}

/// `buf`'s CPU view, or the error naming the buffer when it was allocated without one.
pub fn view<M, E: std::error::Error + 'static>(
    buf: &Buffer<M>,
) -> Result<BufferView<'_>, GpuError<E>> {
    buf.view().ok_or(GpuError::NoCpuView(buf.gpu_va()))
}

/// Fails with [`BenchError::Stopped`] when `stop` says so.
pub(crate) fn check<E: std::error::Error + 'static>(
    stop: fn() -> bool,
    since: Instant,
) -> Result<(), BenchError<E>> {
    if stop() {
        // CAST: u64 nanoseconds cover centuries.
        return Err(BenchError::Stopped {
            waited_ns: since.elapsed().as_nanos() as u64,
        });
    }
    Ok(())
}

/// What to measure and how (the measurement knobs, passed in: `nvbare bench --d2d-kernel`,
/// `--d2d-shape`, or their `NVBARE_D2D_KERNEL` / `NVBARE_D2D` environment forms).
#[derive(Clone, Debug)]
pub struct Options {
    /// A cubin to take `empty_kernel`, `store_value` and `vector_add` from, instead of
    /// [`kernels_for`] the GPU's SM, or [`programmatic_kernels_for`] it with `programmatic`
    /// (`nvbare bench --kernels`).
    pub kernels: Option<Vec<u8>>,
    /// Record the replay and ordering figures' launches as programmatic dependent launches
    /// ([`nvbare_core::gpu::Recording::launch_programmatic`]; `nvbare bench --programmatic`),
    /// for kernels that wait for their predecessors themselves.
    pub programmatic: bool,
    /// Only the launch figures.
    pub launch_only: bool,
    /// Fewer and smaller repetitions (figures for a smoke test, not for comparing).
    pub quick: bool,
    /// The SM copy kernel of the device-to-device figure.
    pub d2d_kernel: String,
    /// Its shape (see [`d2d_shape`]); `None` for the kernel's default.
    pub d2d_shape: Option<(u32, u32)>,
    /// Asked between measurements: stop now (Ctrl-C).
    pub stop: fn() -> bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            kernels: None,
            programmatic: false,
            launch_only: false,
            quick: false,
            d2d_kernel: "copy_flat".into(),
            d2d_shape: None,
            stop: || false,
        }
    }
}

pub(crate) fn median5<E: std::error::Error + 'static>(
    stop: (fn() -> bool, Instant),
    mut f: impl FnMut() -> Result<f64, GpuError<E>>,
) -> Result<f64, BenchError<E>> {
    let mut v = Vec::with_capacity(5);
    for _ in 0..5 {
        check(stop.0, stop.1)?;
        v.push(f()?);
    }
    v.sort_by(f64::total_cmp);
    Ok(v[2])
}

/// How much of each measurement a run makes.
struct Counts {
    /// Warm-up (ms).
    warm_ms: u128,
    /// Launches per launch measurement.
    launches: u32,
    /// Launches in one submission.
    batch: u32,
    /// Bytes per copy.
    copy_bytes: u64,
    /// 2 MiB allocations per measurement.
    small_allocs: u32,
    /// Large allocations per measurement.
    large_allocs: u32,
}

impl Counts {
    fn of(quick: bool) -> Counts {
        if quick {
            Counts {
                warm_ms: 20,
                launches: 200,
                batch: 100,
                copy_bytes: 64 << 20,
                small_allocs: 20,
                large_allocs: 1,
            }
        } else {
            Counts {
                warm_ms: 500,
                launches: 20_000,
                batch: 1000,
                copy_bytes: 1 << 30,
                small_allocs: 200,
                large_allocs: 5,
            }
        }
    }
}

/// Runs every benchmark on `gpu` as `opts` says.
pub fn run<B: Backend>(gpu: &mut Gpu<B>, opts: &Options) -> Result<Figures, BenchError<B::Error>> {
    let started = Instant::now();
    let stop = (opts.stop, started);
    let counts = Counts::of(opts.quick);
    let cubin = match (&opts.kernels, opts.programmatic) {
        (Some(k), _) => k.as_slice(),
        (None, true) => programmatic_kernels_for(gpu.sm()),
        (None, false) => kernels_for(gpu.sm()),
    };
    let empty = gpu.load(cubin, "empty_kernel")?;
    let d2d_kernel = opts.d2d_kernel.as_str();
    // Warm up for half a second of back-to-back launches, so the GPU has left its
    // idle clocks before anything is timed (cuda_base, run right after, inherits
    // the same warm GPU).
    let warm = Instant::now();
    while warm.elapsed().as_millis() < counts.warm_ms {
        check(opts.stop, started)?;
        for _ in 0..counts.batch {
            gpu.launch(&empty, [1, 1, 1], [1, 1, 1], &[])?;
        }
        gpu.sync()?;
    }
    let n = counts.launches;
    let mut f = Figures {
        launch_roundtrip_us: median5(stop, || {
            let t = Instant::now();
            for _ in 0..n {
                let v = gpu.launch(&empty, [1, 1, 1], [1, 1, 1], &[])?;
                gpu.wait(v)?;
            }
            Ok(t.elapsed().as_secs_f64() / f64::from(n) * 1e6)
        })?,
        batch: counts.batch,
        ..Default::default()
    };
    f.launch_async_us = median5(stop, || {
        let t = Instant::now();
        let mut v = gpu.launch(&empty, [1, 1, 1], [1, 1, 1], &[])?;
        for _ in 1..n {
            v = gpu.launch(&empty, [1, 1, 1], [1, 1, 1], &[])?;
        }
        gpu.wait(v)?;
        Ok(t.elapsed().as_secs_f64() / f64::from(n) * 1e6)
    })?;
    f.launch_batched_us = median5(stop, || {
        let t = Instant::now();
        let v = gpu.launch_many(&empty, [1, 1, 1], [1, 1, 1], &[], counts.batch)?;
        gpu.wait(v)?;
        Ok(t.elapsed().as_secs_f64() / f64::from(counts.batch) * 1e6)
    })?;
    let pdl = opts.programmatic;
    f.replay_us = replay::per_kernel(gpu, cubin, &empty, counts.batch, true, pdl, stop)?;
    f.replay_unordered_us = replay::per_kernel(gpu, cubin, &empty, counts.batch, false, pdl, stop)?;
    let n = if opts.quick {
        replay::ORDER_ELEMENTS_QUICK
    } else {
        replay::ORDER_ELEMENTS
    };
    f.replay_order_errors = replay::order_errors(gpu, cubin, true, pdl, n)?;
    f.replay_unordered_order_errors = replay::order_errors(gpu, cubin, false, pdl, n)?;
    gpu.unload(empty)?;
    let rerings =
        |gpu: &Gpu<B>| gpu.doorbell_rerings(Engine::Compute) + gpu.doorbell_rerings(Engine::Copy);

    if opts.launch_only {
        f.doorbell_rerings = rerings(gpu);
        return Ok(f);
    }
    // The SM copy kernels are built for sm_90 and sm_100: another SM is refused here, naming
    // it.
    let copy_cubin = if gpu.sm() == 100 {
        BENCH_CUBIN_SM100
    } else {
        BENCH_CUBIN
    };
    let copy_kernel = gpu.load(copy_cubin, d2d_kernel)?;
    let size = counts.copy_bytes;
    f.copy_bytes = size;
    let host = gpu.alloc(size, Placement::Host, true)?;
    let d0 = gpu.alloc(size, Placement::Vram, false)?;
    let d1 = gpu.alloc(size, Placement::Vram, false)?;
    view(&host)?
        .fill(0, size as usize, 1)
        .map_err(GpuError::from)?;
    let gbps = |t: Instant| size as f64 / t.elapsed().as_secs_f64() / 1e9;
    let timed_copy = |gpu: &mut Gpu<B>, dst: u64, src: u64| -> Result<f64, GpuError<B::Error>> {
        let t = Instant::now();
        let v = gpu.copy(dst, src, size)?;
        gpu.wait(v)?;
        Ok(gbps(t))
    };
    let (host_va, d0_va, d1_va) = (host.gpu_va(), d0.gpu_va(), d1.gpu_va());
    f.h2d_gbps = median5(stop, || timed_copy(gpu, d0_va, host_va))?;
    f.d2h_gbps = median5(stop, || timed_copy(gpu, host_va, d0_va))?;
    f.d2d_ce_gbps = median5(stop, || timed_copy(gpu, d1_va, d0_va))?;
    let n16 = size / 16;
    let mut params = Vec::new();
    params.extend_from_slice(&d0_va.to_le_bytes());
    params.extend_from_slice(&d1_va.to_le_bytes());
    params.extend_from_slice(&n16.to_le_bytes());
    let sms = gpu.gr().sm_count.max(1);
    let (grid, block) = d2d_shape(d2d_kernel, opts.d2d_shape, n16, sms);
    f.d2d_sm_gbps = median5(stop, || {
        let t = Instant::now();
        let v = gpu.launch(&copy_kernel, grid, block, &params)?;
        gpu.wait(v)?;
        Ok(gbps(t))
    })?;
    // Both engines at once: the SM kernel copies most of it while the copy
    // engine takes a slice sized to its measured share of the bandwidth.
    let ce_part = (size as f64 * ce_share(f.d2d_ce_gbps, f.d2d_sm_gbps)) as u64 / 4096 * 4096;
    let sm_part = size - ce_part;
    let mut split_params = Vec::new();
    split_params.extend_from_slice(&d0_va.to_le_bytes());
    split_params.extend_from_slice(&d1_va.to_le_bytes());
    split_params.extend_from_slice(&(sm_part / 16).to_le_bytes());
    f.d2d_both_gbps = median5(stop, || {
        let t = Instant::now();
        let c = gpu.copy(d1_va + sm_part, d0_va + sm_part, ce_part)?;
        let (grid, block) = d2d_shape(d2d_kernel, opts.d2d_shape, sm_part / 16, sms);
        let v = gpu.launch(&copy_kernel, grid, block, &split_params)?;
        gpu.wait(v)?;
        gpu.wait(c)?;
        Ok(gbps(t))
    })?;
    // The copy buffers stay allocated until the allocation figures are taken, as
    // cuda_base's do (it never frees them): freeing 2 GiB of video memory first leaves RM's
    // scrubber that much to clear, which the first fresh allocations wait for (run 48's
    // trace: RM's free of 1 GiB 280 µs with the scrubber idle, 500-600 µs behind it).
    let (small, large) = (counts.small_allocs, counts.large_allocs);

    f.alloc_free_2mib_us = median5(stop, || {
        let t = Instant::now();
        for _ in 0..small {
            let b = gpu.alloc(2 << 20, Placement::Vram, false)?;
            gpu.free(b);
        }
        Ok(t.elapsed().as_secs_f64() / f64::from(small) * 1e6)
    })?;
    f.alloc_free_2mib_pool_us = median5(stop, || {
        let t = Instant::now();
        for _ in 0..small {
            let b = gpu.pool_alloc(2 << 20)?;
            gpu.pool_free(b);
        }
        Ok(t.elapsed().as_secs_f64() / f64::from(small) * 1e6)
    })?;
    f.alloc_free_1gib_us = median5(stop, || {
        let t = Instant::now();
        for _ in 0..large {
            let b = gpu.alloc(size, Placement::Vram, false)?;
            gpu.free(b);
        }
        Ok(t.elapsed().as_secs_f64() / f64::from(large) * 1e6)
    })?;
    gpu.free(host);
    gpu.free(d0);
    gpu.free(d1);
    gpu.unload(copy_kernel)?;
    f.doorbell_rerings = rerings(gpu);
    Ok(f)
}

/// The copy engine's share of a combined device-to-device copy: its part of the
/// two engines' measured bandwidth.
fn ce_share(ce_gbps: f64, sm_gbps: f64) -> f64 {
    ce_gbps / (ce_gbps + sm_gbps).max(1.0)
}

/// Grid and block of the SM copy kernel for `n16` 16-byte elements. The
/// `copy_flat*` kernels take one (or two) elements per thread over a grid that
/// covers the copy; the grid-stride kernels get a number of blocks per SM.
/// `shape` = (A, THREADS) sets the elements per thread (flat) or the blocks per
/// SM (grid-stride), and the threads per block; the default is 1,256 (flat) and
/// 8,512 (grid-stride).
pub fn d2d_shape(
    kernel: &str,
    shape: Option<(u32, u32)>,
    n16: u64,
    sms: u32,
) -> ([u32; 3], [u32; 3]) {
    let flat = kernel.starts_with("copy_flat");
    let per_thread: u64 = if kernel == "copy_flat2" { 2 } else { 1 };
    let (a, threads) = shape.unwrap_or(if flat { (1, 256) } else { (8, 512) });
    let threads = threads.max(1);
    let blocks = if flat {
        n16.div_ceil(per_thread * u64::from(threads))
            .clamp(1, u64::from(i32::MAX as u32)) as u32
    } else {
        sms * a.max(1)
    };
    ([blocks, 1, 1], [threads, 1, 1])
}

impl Figures {
    /// One JSON object, keys as `cuda_base --json` plus nvbare's extra figures.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"launch_roundtrip_us\":{:.3},\"launch_async_us\":{:.3},\"launch_batched_us\":{:.3},\"replay_us\":{:.3},\"replay_unordered_us\":{:.3},\
             \"replay_order_errors\":{},\"replay_unordered_order_errors\":{},\"h2d_GBps\":{:.2},\"d2h_GBps\":{:.2},\"d2d_GBps\":{:.2},\"d2d_ce_GBps\":{:.2},\"d2d_sm_GBps\":{:.2},\"d2d_both_GBps\":{:.2},\
             \"alloc_free_2MiB_us\":{:.2},\"alloc_free_2MiB_pool_us\":{:.3},\"alloc_free_1GiB_us\":{:.2},\"doorbell_rerings\":{}}}",
            self.launch_roundtrip_us,
            self.launch_async_us,
            self.launch_batched_us,
            self.replay_us,
            self.replay_unordered_us,
            self.replay_order_errors,
            self.replay_unordered_order_errors,
            self.h2d_gbps,
            self.d2h_gbps,
            self.d2d_ce_gbps
                .max(self.d2d_sm_gbps)
                .max(self.d2d_both_gbps),
            self.d2d_ce_gbps,
            self.d2d_sm_gbps,
            self.d2d_both_gbps,
            self.alloc_free_2mib_us,
            self.alloc_free_2mib_pool_us,
            self.alloc_free_1gib_us,
            self.doorbell_rerings
        )
    }

    /// The human-readable table.
    pub fn to_table(&self) -> String {
        let size = match self.copy_bytes {
            b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
            b => format!("{} MiB", b >> 20),
        };
        let row = |label: String, value: f64, precision: usize, unit: &str| {
            format!("{label:<45}{value:8.precision$} {unit}")
        };
        let rows = [
            row(
                "empty kernel launch + completion round trip".into(),
                self.launch_roundtrip_us,
                3,
                "us",
            ),
            row(
                "empty kernel, async launches, per launch".into(),
                self.launch_async_us,
                3,
                "us",
            ),
            row(
                format!("empty kernel, {} in one submission, each", self.batch),
                self.launch_batched_us,
                3,
                "us",
            ),
            row(
                format!("{} kernels replayed, one arg patched, each", self.batch),
                self.replay_us,
                3,
                "us",
            ),
            row(
                "the same, unordered (no chain), each".into(),
                self.replay_unordered_us,
                3,
                "us",
            ),
            row(
                format!(
                    "{} dependent grids replayed, wrong elements",
                    replay::ORDER_STEPS
                ),
                // CAST: counts below 2^53 are exact.
                self.replay_order_errors as f64,
                0,
                "",
            ),
            row(
                "the same, unordered (the check can fail)".into(),
                self.replay_unordered_order_errors as f64,
                0,
                "",
            ),
            row(
                format!("{size} H2D pinned (copy engine)"),
                self.h2d_gbps,
                2,
                "GB/s",
            ),
            row(
                format!("{size} D2H pinned (copy engine)"),
                self.d2h_gbps,
                2,
                "GB/s",
            ),
            row(
                format!("{size} D2D copy engine (bytes copied)"),
                self.d2d_ce_gbps,
                2,
                "GB/s",
            ),
            row(
                format!("{size} D2D SM copy kernel (bytes copied)"),
                self.d2d_sm_gbps,
                2,
                "GB/s",
            ),
            row(
                format!("{size} D2D kernel + copy engine together"),
                self.d2d_both_gbps,
                2,
                "GB/s",
            ),
            row(
                "alloc+map+free 2 MiB (RM + UVM)".into(),
                self.alloc_free_2mib_us,
                2,
                "us",
            ),
            row(
                "alloc+map+free 2 MiB (sub-allocator)".into(),
                self.alloc_free_2mib_pool_us,
                3,
                "us",
            ),
            row(
                format!("alloc+map+free {size} (RM + UVM)"),
                self.alloc_free_1gib_us,
                2,
                "us",
            ),
        ];
        // Only the launch rows when nothing else was measured.
        let measured = if self.copy_bytes == 0 { 5 } else { rows.len() };
        rows[..measured].join("\n")
    }
}
