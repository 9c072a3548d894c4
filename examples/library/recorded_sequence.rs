//! A recorded sequence through nvbare's Rust API: copy two vectors in, add them, copy the sum
//! out — recorded once, laid out in GPU memory, then replayed with new buffer addresses, a new
//! element count and a new grid, one GPFIFO entry per queue per replay:
//!
//! ```text
//! cargo run --release -p nvbare-examples --example recorded_sequence -- --backend nvk
//! cargo run --release -p nvbare-examples --example recorded_sequence -- --backend sim
//! ```
//!
//! The recording is in order (`Recording::new`): each op starts when the one before it has
//! finished, across the copy and compute queues too, with no CPU in between. A patch
//! (`set_copy`, `set_arg_*`, `set_dims`) is written by the next replay, after the previous one
//! has finished. See `nvbare_core::gpu::Sequence` for what a replay guarantees.

use clap::Parser;
use nvbare_core::gpu::{Backend, Gpu, LaunchConfig, Placement, Recording};
use nvbare_host::cli::error::{BackendError, CliError, GpuResultExt};
use nvbare_host::cli::gpu::{GpuArgs, GpuTask, Opened, with_gpu};

/// A CPU access to a buffer's mapping that fell outside it, as the CLI reports it.
fn cpu(e: nvbare_core::shared::SharedMemError) -> CliError {
    CliError::Gpu(nvbare_core::gpu::GpuError::Memory(e))
}

/// A recording's or patch's refusal, as the CLI reports it.
fn refused(e: nvbare_core::gpu::SequenceError) -> CliError {
    CliError::Gpu(nvbare_core::gpu::GpuError::Sequence(e))
}

/// Records copy in → vector_add → copy out once and replays it over several inputs.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    gpu: GpuArgs,
    /// Elements per vector.
    #[arg(long, default_value_t = 1 << 16)]
    n: u32,
    /// Input sets to replay over.
    #[arg(long, default_value_t = 4)]
    sets: u32,
}

struct Replays {
    n: u32,
    sets: u32,
}

impl GpuTask for Replays {
    type Output = ();

    fn run<B: Backend>(&mut self, gpu: &mut Gpu<B>, opened: &Opened) -> Result<(), CliError>
    where
        BackendError: From<B::Error>,
    {
        println!(
            "GPU: {} (sm_{}), {}",
            gpu.info().name,
            gpu.sm(),
            opened.description
        );
        let kernel = gpu
            .load(nvbare_host::bench::kernels_for(gpu.sm()), "vector_add")
            .cli()?;
        let (n, sets) = (self.n, self.sets.max(1));
        let bytes = u64::from(n) * 4;
        // Host memory: `sets` pairs of inputs, then the output. Video memory: a, b, c.
        let host = gpu
            .alloc(bytes * (2 * u64::from(sets) + 1), Placement::Host, true)
            .cli()?;
        let vram = gpu.alloc(bytes * 3, Placement::Vram, false).cli()?;
        let (h, v) = (host.gpu_va(), vram.gpu_va());
        let hv = nvbare_host::bench::view(&host).cli()?;
        for s in 0..sets {
            let (a, b): (Vec<u8>, Vec<u8>) = (
                (0..n)
                    .flat_map(|i| (i as f32 + s as f32).to_le_bytes())
                    .collect(),
                (0..n)
                    .flat_map(|i| (s as f32 * i as f32).to_le_bytes())
                    .collect(),
            );
            let at = (2 * u64::from(s) * bytes) as usize;
            hv.write(at, &a).map_err(cpu)?;
            hv.write(at + bytes as usize, &b).map_err(cpu)?;
        }
        let out = h + 2 * u64::from(sets) * bytes;

        let mut params = Vec::new();
        for va in [v, v + bytes, v + 2 * bytes] {
            params.extend_from_slice(&va.to_le_bytes());
        }
        params.extend_from_slice(&n.to_le_bytes());
        params.resize(kernel.info.param_size as usize, 0);
        let shape = |n: u32| LaunchConfig {
            grid: [n.div_ceil(256), 1, 1],
            block: [256, 1, 1],
            dynamic_shared: 0,
        };
        // Record once.
        let mut rec = Recording::new();
        let copy_a = rec.copy(v, h, bytes).map_err(refused)?;
        let copy_b = rec.copy(v + bytes, h + bytes, bytes).map_err(refused)?;
        let add = rec.launch(&kernel, shape(n), &params).map_err(refused)?;
        let copy_out = rec.copy(out, v + 2 * bytes, bytes).map_err(refused)?;
        let mut seq = gpu.finish(rec).cli()?;
        println!(
            "recorded: 3 copies and 1 launch, {} KiB of GPU memory",
            seq.bytes() >> 10
        );

        // Replay over each input set; every other one adds only the first half.
        let mut bad = 0;
        for s in 0..sets {
            let at = h + 2 * u64::from(s) * bytes;
            let m = if s % 2 == 1 { n / 2 } else { n };
            seq.set_copy(copy_a, v, at, bytes).map_err(refused)?;
            seq.set_copy(copy_b, v + bytes, at + bytes, bytes)
                .map_err(refused)?;
            seq.set_arg_u32(add, 24, m).map_err(refused)?;
            seq.set_dims(add, shape(m).grid, shape(m).block)
                .map_err(refused)?;
            seq.set_copy(copy_out, out, v + 2 * bytes, u64::from(m) * 4)
                .map_err(refused)?;
            let t = std::time::Instant::now();
            let r = gpu.replay(&mut seq).cli()?;
            gpu.wait_replay(&r).cli()?;
            let took = t.elapsed();
            let mut got = vec![0u8; m as usize * 4];
            hv.read(out as usize - h as usize, &mut got).map_err(cpu)?;
            let wrong = got
                .chunks_exact(4)
                .enumerate()
                .filter(|(i, c)| {
                    let want = *i as f32 + s as f32 + s as f32 * *i as f32;
                    f32::from_le_bytes([c[0], c[1], c[2], c[3]]) != want
                })
                .count();
            bad += wrong;
            println!(
                "replay {}: inputs {s}, {m} elements over {} blocks: {} ({:.1} us from replay to \
                 completion)",
                s + 1,
                shape(m).grid[0],
                if wrong == 0 {
                    "all correct".to_string()
                } else {
                    format!("{wrong} WRONG")
                },
                took.as_secs_f64() * 1e6
            );
        }
        gpu.free_sequence(seq).cli()?;
        gpu.free(host);
        gpu.free(vram);
        gpu.unload(kernel).cli()?;
        if bad != 0 {
            std::process::exit(1);
        }
        Ok(())
    }
}

fn main() {
    env_logger::init();
    let args = Args::parse();
    let mut task = Replays {
        n: args.n,
        sets: args.sets,
    };
    if let Err(e) = with_gpu(&args.gpu, &mut task) {
        eprintln!("recorded_sequence: {e}");
        std::process::exit(1);
    }
}
