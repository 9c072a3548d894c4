//! A vector add through nvbare's Rust API: open a GPU, load a kernel from a cubin, allocate,
//! launch, wait, read back. The same code runs on NVIDIA's kernel driver and on the simulator:
//!
//! ```text
//! cargo run --release -p nvbare-examples --example vector_add -- --backend nvk   # a real GPU
//! cargo run --release -p nvbare-examples --example vector_add -- --backend sim   # in-process
//! ```
//!
//! What to copy: a [`GpuTask`] is code generic over the backend (`Gpu<B>`); [`with_gpu`] opens
//! the GPU the command line names (`--backend`, `--device`, `--chip`, ...: [`GpuArgs`]), runs
//! the task and tears the GPU down whatever happens. A program that only ever uses NVIDIA's
//! driver can call `nvbare_host::nvk::open(0, GpuConfig::default())` instead and get a
//! `Gpu<Nvk>` directly.

use clap::Parser;
use nvbare_core::gpu::{Backend, Gpu, LaunchConfig, Placement};
use nvbare_host::cli::error::{BackendError, CliError, GpuResultExt};
use nvbare_host::cli::gpu::{GpuArgs, GpuTask, Opened, with_gpu};

/// A CPU access to a buffer's mapping that fell outside it, as the CLI reports it.
fn cpu(e: nvbare_core::shared::SharedMemError) -> CliError {
    CliError::Gpu(nvbare_core::gpu::GpuError::Memory(e))
}

/// Adds two vectors of floats on the GPU and checks the sum on the CPU.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    gpu: GpuArgs,
    /// Elements per vector.
    #[arg(long, default_value_t = 1 << 20)]
    n: u32,
    /// A cubin with `vector_add(const float *a, const float *b, float *c, int n)` for this
    /// GPU [default: nvbare's committed one].
    #[arg(long)]
    cubin: Option<std::path::PathBuf>,
}

struct VectorAdd {
    n: u32,
    cubin: Option<Vec<u8>>,
}

impl GpuTask for VectorAdd {
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
        let elf = match &self.cubin {
            Some(b) => b.as_slice(),
            None => nvbare_host::bench::kernels_for(gpu.sm()),
        };
        let kernel = gpu.load(elf, "vector_add").cli()?;
        let n = self.n;
        let bytes = u64::from(n) * 4;
        // Inputs and output in host memory the GPU reads and writes directly (Placement::Vram
        // with cpu_access = true is video memory the CPU maps).
        let [a, b, c] = [0, 1, 2].map(|_| gpu.alloc(bytes, Placement::Host, true));
        let (a, b, c) = (a.cli()?, b.cli()?, c.cli()?);
        let floats = |f: &dyn Fn(u32) -> f32| -> Vec<u8> {
            (0..n).flat_map(|i| f(i).to_le_bytes()).collect()
        };
        // Host memory always has a CPU view.
        let [Some(va), Some(vb), Some(vc)] = [&a, &b, &c].map(|buf| buf.view()) else {
            return Err(CliError::Gpu(nvbare_core::gpu::GpuError::NoCpuView(
                a.gpu_va(),
            )));
        };
        va.write(0, &floats(&|i| i as f32)).map_err(cpu)?;
        vb.write(0, &floats(&|i| 2.0 * i as f32)).map_err(cpu)?;

        // The kernel's parameters as its C signature lays them out: three pointers, an int.
        let mut params = Vec::new();
        for buf in [&a, &b, &c] {
            params.extend_from_slice(&buf.gpu_va().to_le_bytes());
        }
        params.extend_from_slice(&n.to_le_bytes());
        params.resize(kernel.info.param_size as usize, 0);
        let cfg = LaunchConfig {
            grid: [n.div_ceil(256), 1, 1],
            block: [256, 1, 1],
            dynamic_shared: 0,
        };
        let timed = gpu.launch_timed(&kernel, &cfg, &params).cli()?;
        let times = gpu.times(&timed).cli()?; // waits for the grid, then reads its GPU times

        let mut out = vec![0u8; bytes as usize];
        vc.read(0, &mut out).map_err(cpu)?;
        let wrong = out
            .chunks_exact(4)
            .enumerate()
            .filter(|(i, v)| f32::from_le_bytes([v[0], v[1], v[2], v[3]]) != 3.0 * *i as f32)
            .count();
        println!(
            "vector_add of {n} floats: {} (GPU time {:.1} us)",
            if wrong == 0 {
                "c[i] = a[i] + b[i] for every i".to_string()
            } else {
                format!("{wrong} elements WRONG")
            },
            times.duration_ns() as f64 / 1e3
        );
        for buf in [a, b, c] {
            gpu.free(buf);
        }
        gpu.unload(kernel).cli()?;
        if wrong != 0 {
            std::process::exit(1);
        }
        Ok(())
    }
}

fn main() {
    env_logger::init();
    let args = Args::parse();
    let cubin = args.cubin.as_ref().map(|p| {
        std::fs::read(p).unwrap_or_else(|e| {
            eprintln!("vector_add: cannot read {}: {e}", p.display());
            std::process::exit(2)
        })
    });
    let mut task = VectorAdd { n: args.n, cubin };
    if let Err(e) = with_gpu(&args.gpu, &mut task) {
        eprintln!("vector_add: {e}");
        std::process::exit(1);
    }
}
