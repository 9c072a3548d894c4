//! The GPU subcommands of `nvbare`: `info`, `run`, `bench`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use nvbare_core::gpu::{GpuConfig, LaunchTuning, Placement};
use nvbare_core::rm::Engine;

use crate::bench;
use crate::nvk::{self, Gpu};

/// Which way nvbare reaches the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// Through NVIDIA's kernel driver (RM ioctls on /dev/nvidiactl, /dev/nvidia-uvm).
    #[default]
    Nvk,
}

/// Options every GPU subcommand takes.
#[derive(Args, Debug, Clone)]
pub struct GpuArgs {
    /// How to reach the GPU.
    #[arg(long, value_enum, default_value_t)]
    pub backend: Backend,
    /// GPU index, in the kernel driver's order.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Launch tunings for measuring: membar=N,inval=0|1,mirror=0|1,relmembar=0|1.
    #[arg(long, env = "NVBARE_TUNE", default_value = "")]
    pub tune: String,
}

/// `nvbare run` options.
#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// The cubin (ELF) file.
    pub cubin: PathBuf,
    /// Kernel name (its symbol; use extern "C" to avoid C++ mangling).
    #[arg(long)]
    pub kernel: String,
    /// Grid in blocks: X,Y,Z.
    #[arg(long, value_parser = parse_dim3, default_value = "1,1,1")]
    pub grid: [u32; 3],
    /// Block in threads: X,Y,Z.
    #[arg(long, value_parser = parse_dim3, default_value = "1,1,1")]
    pub block: [u32; 3],
    /// Kernel arguments in order: u32:N, i32:N, u64:N, f32:X, or buf:BYTES (a zeroed
    /// buffer of BYTES, passed as its address; printed after the run).
    #[arg(long = "arg")]
    pub args: Vec<String>,
}

/// `nvbare bench` options.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Only the launch figures (quick).
    #[arg(long)]
    pub launch_only: bool,
    /// Instead of the figures: where a launch round trip's time goes, and
    /// launch choices compared in one process.
    #[arg(long, conflicts_with_all = ["json", "launch_only"])]
    pub study: bool,
    /// The SM kernel of the device-to-device copy (a kernel of host/data/bench_kernels.cu).
    #[arg(long, env = "NVBARE_D2D_KERNEL", default_value = "copy_flat")]
    pub d2d_kernel: String,
    /// The SM copy's shape, A,THREADS: elements per thread (copy_flat*) or blocks per SM
    /// (grid-stride kernels), and threads per block [default: 1,256 flat, 8,512 grid-stride].
    #[arg(long, env = "NVBARE_D2D", value_parser = parse_pair)]
    pub d2d_shape: Option<(u32, u32)>,
}

/// What a subcommand can fail with.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// An input file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A `--arg` is not one of the forms `run` takes.
    #[error("--arg {0:?}: expected u32:N, i32:N, u64:N, f32:X or buf:BYTES")]
    BadArg(String),
    /// `--tune` / `NVBARE_TUNE` names an unknown override.
    #[error("{0}")]
    BadTune(String),
    /// The GPU layer failed.
    #[error(transparent)]
    Gpu(#[from] nvk::Error),
}

impl From<nvbare_core::shared::SharedMemError> for CliError {
    fn from(e: nvbare_core::shared::SharedMemError) -> Self {
        Self::Gpu(e.into())
    }
}

fn parse_dim3(s: &str) -> Result<[u32; 3], String> {
    let v: Vec<u32> = s
        .split(',')
        .map(|p| p.trim().parse::<u32>().map_err(|e| format!("{p:?}: {e}")))
        .collect::<Result<_, _>>()?;
    match v[..] {
        [x] => Ok([x, 1, 1]),
        [x, y] => Ok([x, y, 1]),
        [x, y, z] => Ok([x, y, z]),
        _ => Err(format!("{s:?}: give X, X,Y or X,Y,Z")),
    }
}

fn parse_pair(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("{s:?}: give A,THREADS"))?;
    let n = |p: &str| p.trim().parse::<u32>().map_err(|e| format!("{p:?}: {e}"));
    Ok((n(a)?, n(b)?))
}

fn open(a: &GpuArgs) -> Result<Gpu, CliError> {
    let tuning = LaunchTuning::parse(&a.tune).map_err(|e| CliError::BadTune(e.to_string()))?;
    let config = GpuConfig {
        tuning,
        ..GpuConfig::default()
    };
    log::debug!("opening GPU {} ({:?}) with {config:?}", a.device, a.backend);
    Ok(match a.backend {
        Backend::Nvk => nvk::open(a.device, config)?,
    })
}

/// `nvbare info`.
pub fn info(a: &GpuArgs) -> Result<(), CliError> {
    let gpu = open(a)?;
    let i = gpu.info();
    let pci = i.pci.map(|p| p.to_string()).unwrap_or_default();
    println!(
        "gpu           {} ({pci}, device id {:#06x})",
        i.name, i.device_id
    );
    println!("backend       nvk ({})", i.rm);
    let g = gpu.gr();
    println!(
        "sm            sm_{}, {} SMs enabled ({} GPCs x {} TPCs x {} SMs per TPC in the design)",
        gpu.sm(),
        g.sm_count,
        g.gpcs,
        g.tpcs_per_gpc,
        g.sms_per_tpc
    );
    println!("vram          {} MiB", i.vram_bytes >> 20);
    let c = gpu.objects().classes;
    println!(
        "classes       gpfifo {:#06x}, compute {:#06x}, copy {:#06x}, usermode {:#06x}",
        c.gpfifo, c.compute, c.copy, c.usermode
    );
    let ch = gpu.channels();
    match ch.copy_engine {
        Some(ce) => println!("copy channel  own channel group on COPY{ce} (runs beside compute)"),
        None if ch.copy_refusals.is_empty() => {
            println!(
                "copy channel  in the graphics channel group (no asynchronous copy engine tried)"
            )
        }
        None => {
            let why: Vec<String> = ch
                .copy_refusals
                .iter()
                .map(|r| format!("COPY{}: {}: {}", r.engine, r.step, r.error))
                .collect();
            println!(
                "copy channel  in the graphics channel group ({})",
                why.join("; ")
            );
        }
    }
    let names: Vec<String> = gpu
        .objects()
        .class_list
        .iter()
        .map(|&id| match nvbare_gsp::rm::classes::name_of(id) {
            Some(n) => format!("{n} {id:#06x}"),
            None => format!("{id:#06x}"),
        })
        .collect();
    println!("class list    {}", names.join(", "));
    Ok(())
}

fn parse_arg(
    gpu: &mut Gpu,
    spec: &str,
    out: &mut Vec<u8>,
    bufs: &mut Vec<(String, nvk::Buffer)>,
) -> Result<(), CliError> {
    let bad = || CliError::BadArg(spec.to_owned());
    let (kind, val) = spec.split_once(':').ok_or_else(bad)?;
    let align = |out: &mut Vec<u8>, n: usize| out.resize(out.len().next_multiple_of(n), 0);
    match kind {
        "u32" => {
            align(out, 4);
            out.extend(val.parse::<u32>().map_err(|_| bad())?.to_le_bytes())
        }
        "i32" => {
            align(out, 4);
            out.extend(val.parse::<i32>().map_err(|_| bad())?.to_le_bytes())
        }
        "f32" => {
            align(out, 4);
            out.extend(val.parse::<f32>().map_err(|_| bad())?.to_le_bytes())
        }
        "u64" => {
            align(out, 8);
            out.extend(val.parse::<u64>().map_err(|_| bad())?.to_le_bytes())
        }
        "buf" => {
            let n: u64 = val.parse().map_err(|_| bad())?;
            let b = gpu.alloc(n.max(4), Placement::Host, true)?;
            let len = b.size() as usize;
            nvk::view(&b)?.fill(0, len, 0)?;
            align(out, 8);
            out.extend(b.gpu_va().to_le_bytes());
            bufs.push((spec.to_owned(), b));
        }
        _ => return Err(bad()),
    }
    Ok(())
}

/// `nvbare run`.
pub fn run(a: &RunArgs) -> Result<(), CliError> {
    let elf = std::fs::read(&a.cubin).map_err(|source| CliError::Read {
        path: a.cubin.display().to_string(),
        source,
    })?;
    let mut gpu = open(&a.gpu)?;
    let k = gpu.load(&elf, &a.kernel)?;
    let mut params = Vec::new();
    let mut bufs = Vec::new();
    for spec in &a.args {
        parse_arg(&mut gpu, spec, &mut params, &mut bufs)?;
    }
    params.resize(params.len().next_multiple_of(4), 0);
    params.truncate(k.info.param_size as usize);
    let t = std::time::Instant::now();
    let f = gpu.launch(&k, a.grid, a.block, &params)?;
    gpu.wait(f)?;
    println!(
        "{} grid {:?} block {:?}: done in {:.1} us",
        a.kernel,
        a.grid,
        a.block,
        t.elapsed().as_secs_f64() * 1e6
    );
    log::debug!("compute timeline at {}", gpu.completed(Engine::Compute));
    for (spec, b) in &bufs {
        let mut head = vec![0u8; (b.size() as usize).min(64)];
        nvk::view(b)?.read(0, &mut head)?;
        let words: Vec<String> = head
            .chunks_exact(4)
            .map(|c| format!("{:08x}", u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect();
        println!("{spec}: {}", words.join(" "));
    }
    Ok(())
}

/// `nvbare bench`.
pub fn bench(a: &BenchArgs) -> Result<(), CliError> {
    let mut gpu = open(&a.gpu)?;
    if a.study {
        print!("{}", crate::study::run(&mut gpu)?);
        return Ok(());
    }
    let opts = bench::Options {
        launch_only: a.launch_only,
        d2d_kernel: a.d2d_kernel.clone(),
        d2d_shape: a.d2d_shape,
    };
    let f = bench::run(&mut gpu, &opts)?;
    if a.json {
        println!("{}", f.to_json());
    } else {
        println!("{}", f.to_table());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{parse_dim3, parse_pair};

    #[test]
    fn dim3_takes_one_to_three_numbers() {
        assert_eq!(parse_dim3("256"), Ok([256, 1, 1]));
        assert_eq!(parse_dim3("4,2"), Ok([4, 2, 1]));
        assert_eq!(parse_dim3("4, 2, 3"), Ok([4, 2, 3]));
        assert!(parse_dim3("1,2,3,4").is_err());
        assert!(parse_dim3("x").is_err());
        assert!(parse_dim3("").is_err());
    }

    #[test]
    fn d2d_shape_is_two_numbers() {
        assert_eq!(parse_pair("8,512"), Ok((8, 512)));
        assert!(parse_pair("8").is_err());
        assert!(parse_pair("a,1").is_err());
    }
}
