//! The GPU subcommands of `nvbare`: `info`, `run`, `bench`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::bench;
use crate::nvk::NvkError;
use crate::nvk::gpu::Gpu;
use crate::nvk::mem::Placement;

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
    /// video-memory buffer of BYTES, passed as its address; printed after the run).
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

fn open(a: &GpuArgs) -> Result<Gpu, NvkError> {
    match a.backend {
        Backend::Nvk => Gpu::open(a.device),
    }
}

/// `nvbare info`.
pub fn info(a: &GpuArgs) -> Result<(), NvkError> {
    let gpu = open(a)?;
    let d = &gpu.dev;
    let pci = d.card.pci_info;
    println!(
        "gpu           {} ({:04x}:{:02x}:{:02x}.{}, device id {:#06x})",
        d.name, pci.domain, pci.bus, pci.slot, pci.function, pci.device_id
    );
    println!(
        "backend       nvk (NVIDIA kernel driver {})",
        d.driver_version
    );
    println!(
        "sm            sm_{}, {} SMs enabled ({} GPCs x {} TPCs x {} SMs per TPC in the design)",
        gpu.sm(),
        d.gr.sm_count,
        d.gr.gpcs,
        d.gr.tpcs_per_gpc,
        d.gr.sms_per_tpc
    );
    println!("vram          {} MiB", d.vram_bytes >> 20);
    let c = d.classes;
    println!(
        "classes       gpfifo {:#06x}, compute {:#06x}, copy {:#06x}, usermode {:#06x}",
        c.gpfifo, c.compute, c.copy, c.usermode
    );
    match d.copy_engine {
        Some(ce) => println!("copy channel  own channel group on COPY{ce} (runs beside compute)"),
        None => println!(
            "copy channel  in the graphics channel group ({})",
            d.copy_group_error
                .as_deref()
                .unwrap_or("no asynchronous copy engine tried")
        ),
    }
    let names: Vec<String> = d
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
    bufs: &mut Vec<(String, crate::nvk::mem::Buffer)>,
) -> Result<(), NvkError> {
    let bad = || {
        NvkError::Submit(format!(
            "--arg {spec:?}: expected u32:N, i32:N, u64:N, f32:X or buf:BYTES"
        ))
    };
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
            // SAFETY: a fresh CPU mapping of at least `n` bytes.
            unsafe { std::ptr::write_bytes(b.cpu_ptr()?, 0, n as usize) };
            align(out, 8);
            out.extend(b.gpu_va.to_le_bytes());
            bufs.push((spec.to_owned(), b));
        }
        _ => return Err(bad()),
    }
    Ok(())
}

/// `nvbare run`.
pub fn run(a: &RunArgs) -> Result<(), NvkError> {
    let elf = std::fs::read(&a.cubin)
        .map_err(|e| NvkError::Submit(format!("{}: {e}", a.cubin.display())))?;
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
    let v = gpu.launch(&k, a.grid, a.block, &params)?;
    gpu.wait_compute(v)?;
    println!(
        "{} grid {:?} block {:?}: done in {:.1} us",
        a.kernel,
        a.grid,
        a.block,
        t.elapsed().as_secs_f64() * 1e6
    );
    for (spec, b) in &bufs {
        let n = (b.size as usize).min(64);
        let mut head = vec![0u8; n];
        // SAFETY: the buffer's CPU mapping is at least `n` bytes; the GPU finished.
        unsafe { std::ptr::copy_nonoverlapping(b.cpu_ptr()?, head.as_mut_ptr(), n) };
        let words: Vec<String> = head
            .chunks_exact(4)
            .map(|c| format!("{:08x}", u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect();
        println!("{spec}: {}", words.join(" "));
    }
    Ok(())
}

/// `nvbare bench`.
pub fn bench(a: &BenchArgs) -> Result<(), NvkError> {
    let mut gpu = open(&a.gpu)?;
    if a.study {
        print!("{}", crate::study::run(&mut gpu)?);
        return Ok(());
    }
    let f = bench::run(&mut gpu, a.launch_only)?;
    if a.json {
        println!("{}", f.to_json());
    } else {
        println!("{}", f.to_table());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_dim3;

    #[test]
    fn dim3_takes_one_to_three_numbers() {
        assert_eq!(parse_dim3("256"), Ok([256, 1, 1]));
        assert_eq!(parse_dim3("4,2"), Ok([4, 2, 1]));
        assert_eq!(parse_dim3("4, 2, 3"), Ok([4, 2, 3]));
        assert!(parse_dim3("1,2,3,4").is_err());
        assert!(parse_dim3("x").is_err());
        assert!(parse_dim3("").is_err());
    }
}
