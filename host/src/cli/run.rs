//! `nvbare run`: load one kernel of a cubin, give it buffers with data, launch it, read the
//! buffers back. Everything that can be checked without a GPU is checked first, by
//! [`RunPlan::new`]: the arguments and their files, the cubin and the kernel, the parameter
//! layout, the launch shape against the cubin's SM, the output files. Only then is the GPU
//! opened ([`RunPlan`] is a [`GpuTask`]).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use nvbare_core::cubin::Cubin;
use nvbare_core::gpu::{Backend, Buffer, Fence, Gpu, LaunchConfig, Placement, WaitEnd};
use nvbare_core::launch::{self, LaunchLimits};

use super::args::{self, ArgValue, Contents, KernelArg};
use super::error::{BackendError, CliError, FaultKernel, GpuResultExt};
use super::gpu::{GpuArgs, GpuTask, Opened, arch_of};
use super::interrupt;
use super::transfer::{Init, download, download_head, upload};
use super::values::{DumpFormat, parse_bytes};

/// The kernel-argument grammar, shown under `nvbare run --help`.
pub const ARG_HELP: &str = "\
Kernel arguments, in the order of the kernel's C signature (--arg, repeated):
  --arg [NAME=]TYPE:VALUE         a scalar; TYPE u8 u16 u32 i32 u64 i64 f32 f64
                                  (integers decimal or 0x hex, floats as 1.5, -2e-3)
  --arg [NAME=]buf:BYTES[:OPT]... a zeroed buffer of BYTES (4096, 0x1000, 64K, 1M),
                                  passed as its 64-bit GPU address
  --arg [NAME=]buf:@FILE[:OPT]... a buffer holding FILE's bytes
    OPT  a TYPE (the element type: how fill= reads its value, how --dump shows it)
         host  system memory the GPU reaches over PCIe (the default)
         vram  video memory (filled and read back through the copy engine)
         fill=iota  element i is i; fill=VALUE  every element is VALUE
After the run: --out ARG=FILE writes a buffer's bytes to FILE; --dump ARG[:TYPE|hex]
prints its first elements (without --dump and --out, every buffer is printed). ARG is an
argument's NAME or its position among the --args, 0 first.
Example (host/data/cli_kernels.cu; x.bin holds 4096 floats):
  nvbare run host/data/cli_kernels.sm_90.cubin --kernel saxpy_shared --grid 16 --block 256 \\
    --shared 1K --arg n=u32:4096 --arg a=f32:2.5 --arg x=buf:@x.bin:f32 \\
    --arg y=buf:16K:f32:fill=1:vram --out y=y.bin --dump y";

/// `nvbare run` options.
#[derive(Args, Debug)]
#[command(after_help = ARG_HELP)]
pub struct RunArgs {
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// The cubin (ELF) file, as `nvcc -cubin -arch=sm_XX` writes it.
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
    /// Dynamic shared memory per block in bytes (CUDA's third <<<>>> argument; 48K, 0x8000).
    #[arg(long, value_name = "BYTES", value_parser = parse_shared, default_value = "0")]
    pub shared: u32,
    /// A kernel argument (see below).
    #[arg(long = "arg", value_name = "[NAME=]SPEC")]
    pub args: Vec<String>,
    /// Write buffer ARG's bytes to FILE after the run.
    #[arg(long = "out", value_name = "ARG=FILE")]
    pub outs: Vec<String>,
    /// Print buffer ARG's first elements after the run, as TYPE (default: its element type,
    /// else hex words).
    #[arg(long = "dump", value_name = "ARG[:TYPE]")]
    pub dumps: Vec<String>,
    /// Elements each printed buffer shows.
    #[arg(long, default_value_t = 16)]
    pub dump_count: usize,
    /// Seconds the kernel may run before it is reported as stalled.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, default_value = "10")]
    pub timeout: f64,
}

/// `X`, `X,Y` or `X,Y,Z`, each at least 1.
pub fn parse_dim3(s: &str) -> Result<[u32; 3], String> {
    let v: Vec<u32> = s
        .split(',')
        .map(|p| match p.trim().parse::<u32>() {
            Ok(0) => Err(format!("{p:?}: every dimension is at least 1")),
            Ok(n) => Ok(n),
            Err(e) => Err(format!("{p:?}: {e}")),
        })
        .collect::<Result<_, _>>()?;
    match v[..] {
        [x] => Ok([x, 1, 1]),
        [x, y] => Ok([x, y, 1]),
        [x, y, z] => Ok([x, y, z]),
        _ => Err(format!("{s:?}: give X, X,Y or X,Y,Z")),
    }
}

/// `--timeout`: seconds, more than 0, at most a day.
fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t > 0.0 && t <= 86_400.0 => Ok(t),
        _ => Err(format!(
            "{s:?}: give seconds, more than 0 and at most 86400"
        )),
    }
}

/// `--shared`: bytes, 0 allowed.
fn parse_shared(s: &str) -> Result<u32, String> {
    if s.trim() == "0" {
        return Ok(0);
    }
    parse_bytes(s)
        .and_then(|b| u32::try_from(b).ok())
        .ok_or_else(|| format!("{s:?}: give bytes (0, 1024, 48K, 0x8000)"))
}

/// A buffer to allocate and fill before the launch.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedBuffer {
    /// The argument it is.
    pub arg: usize,
    /// Bytes (as asked; the backend rounds the allocation up).
    pub size: u64,
    /// Video or host memory.
    pub placement: Placement,
    /// Its initial bytes.
    pub init: Init,
    /// Where its address goes in the parameter block (`None`: past the kernel's parameters).
    pub param_offset: Option<usize>,
}

/// Everything `nvbare run` will do, checked.
#[derive(Debug)]
pub struct RunPlan {
    /// The cubin's bytes.
    pub elf: Vec<u8>,
    /// The kernel.
    pub kernel: String,
    /// Grid, block, dynamic shared memory.
    pub cfg: LaunchConfig,
    /// The arguments, as given.
    pub args: Vec<KernelArg>,
    /// The parameter block, scalars in place (buffer addresses are written at the run).
    pub params: Vec<u8>,
    /// The buffers.
    pub buffers: Vec<PlannedBuffer>,
    /// `--out`: buffer argument, file.
    pub outs: Vec<(usize, PathBuf)>,
    /// Printed after the run: buffer argument, format.
    pub dumps: Vec<(usize, DumpFormat)>,
    /// Elements per printed buffer.
    pub dump_count: usize,
    /// How long the kernel may run (ns).
    pub timeout_ns: u64,
    /// Things the user should know (arguments the kernel does not take).
    pub warnings: Vec<String>,
}

pub(crate) fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|source| CliError::Read {
        what,
        path: path.to_owned(),
        source,
    })
}

/// Checks that `path` can be written after the run (its directory exists and is writable,
/// and it is not a directory), without creating it yet.
fn check_writable(path: &Path) -> Result<(), CliError> {
    let fail = |why: String| CliError::Write {
        path: path.to_owned(),
        why,
        source: None,
    };
    if path.is_dir() {
        return Err(fail("it is a directory".into()));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(fail(format!("{} is not a directory", dir.display())));
    }
    let target = if path.exists() { path } else { dir };
    nix::unistd::access(target, nix::unistd::AccessFlags::W_OK)
        .map_err(|e| fail(format!("{} is not writable ({e})", target.display())))
}

impl RunPlan {
    /// Reads and checks everything `a` asks for, opening no GPU.
    pub fn new(a: &RunArgs) -> Result<RunPlan, CliError> {
        let args: Vec<KernelArg> = a
            .args
            .iter()
            .map(|s| args::parse_arg(s))
            .collect::<Result<_, _>>()?;
        args::check_names(&args)?;
        let outs: Vec<(usize, PathBuf)> = a
            .outs
            .iter()
            .map(|o| args::parse_out(&args, o))
            .collect::<Result<_, _>>()?;
        let mut dumps: Vec<(usize, DumpFormat)> = a
            .dumps
            .iter()
            .map(|d| args::parse_dump(&args, d))
            .collect::<Result<_, _>>()?;
        if a.dumps.is_empty() && a.outs.is_empty() {
            dumps = args
                .iter()
                .enumerate()
                .filter(|(_, x)| matches!(x.value, ArgValue::Buffer(_)))
                .map(|(i, x)| (i, args::default_format(x)))
                .collect();
        }
        for (_, path) in &outs {
            check_writable(path)?;
        }
        let elf = read("cubin", &a.cubin)?;
        let cubin_err = |source| CliError::Cubin {
            path: a.cubin.clone(),
            source,
        };
        let cubin = Cubin::parse(&elf).map_err(cubin_err)?;
        let k = cubin.kernel(&a.kernel).map_err(cubin_err)?;
        let cfg = LaunchConfig {
            grid: a.grid,
            block: a.block,
            dynamic_shared: a.shared,
        };
        if let Some(limits) = LaunchLimits::for_sm(cubin.sm) {
            launch::check_limits(&limits, k, &cfg)
                .and_then(|_| launch::check_shared_memory(&limits, cubin.sm, k, a.shared))
                .map_err(|source| CliError::Launch {
                    kernel: a.kernel.clone(),
                    source,
                })?;
        }
        let mut layout: Vec<_> = k.params.iter().collect();
        layout.sort_by_key(|p| p.ordinal);
        let layout: Vec<(usize, usize)> = layout
            .iter()
            .map(|p| (usize::from(p.offset), usize::from(p.size)))
            .collect();
        // CAST: a parameter block is at most 32 KiB.
        let param_size = k.param_size as usize;
        let packing = args::pack(&a.kernel, param_size, &layout, &args)?;

        let mut warnings = Vec::new();
        if packing.extra > 0 {
            let ignored: Vec<String> = args
                .iter()
                .enumerate()
                .skip(packing.offsets.len())
                .map(|(i, x)| x.label(i))
                .collect();
            warnings.push(format!(
                "kernel {} takes {param_size} bytes of parameters ({} argument{}); {} more \
                 given and not passed: {}",
                a.kernel,
                packing.offsets.len(),
                if packing.offsets.len() == 1 { "" } else { "s" },
                packing.extra,
                ignored.join(", ")
            ));
        }

        let mut params = vec![0u8; param_size];
        let mut buffers = Vec::new();
        for (i, x) in args.iter().enumerate() {
            let offset = packing.offsets.get(i).copied();
            match &x.value {
                ArgValue::Scalar(_, bytes) => {
                    if let Some(o) = offset {
                        params[o..o + bytes.len()].copy_from_slice(bytes);
                    }
                }
                ArgValue::Buffer(b) => {
                    let (size, init) = match &b.contents {
                        Contents::File(path) => {
                            let data = read("buffer input", path)?;
                            if data.is_empty() {
                                return Err(CliError::Arg(args::ArgError::Size {
                                    spec: x.spec.clone(),
                                    why: format!(
                                        "{} is empty; a buffer holds at least 1 byte",
                                        path.display()
                                    ),
                                }));
                            }
                            (data.len() as u64, Init::Bytes(data))
                        }
                        // parse_buffer gives every buffer not read from a file a size of
                        // at least 1; the fallback is never used.
                        _ => {
                            let size = b.size.unwrap_or(1);
                            (size, Init::of(b))
                        }
                    };
                    buffers.push(PlannedBuffer {
                        arg: i,
                        size,
                        placement: b.placement,
                        init,
                        param_offset: offset,
                    });
                }
            }
        }
        // CAST: parse_seconds bounds it to a day, 8.64e13 ns.
        let timeout_ns = (a.timeout * 1e9) as u64;
        Ok(RunPlan {
            elf,
            kernel: a.kernel.clone(),
            cfg,
            args,
            params,
            buffers,
            outs,
            dumps,
            dump_count: a.dump_count,
            timeout_ns,
            warnings,
        })
    }
}

/// Waits for `fence`, giving up when the user presses Ctrl-C.
pub(super) fn wait<B: Backend>(
    gpu: &mut Gpu<B>,
    fence: Fence,
    timeout_ns: u64,
    during: &str,
) -> Result<(), CliError>
where
    BackendError: From<B::Error>,
{
    match gpu
        .wait_unless(fence, timeout_ns, interrupt::requested)
        .cli()?
    {
        WaitEnd::Reached => Ok(()),
        WaitEnd::Stopped { waited_ns } => Err(CliError::Interrupted {
            during: during.to_owned(),
            waited_ns,
        }),
    }
}

/// Fails if the user pressed Ctrl-C.
pub(super) fn check_interrupt(during: &str) -> Result<(), CliError> {
    if interrupt::requested() {
        return Err(CliError::Interrupted {
            during: during.to_owned(),
            waited_ns: 0,
        });
    }
    Ok(())
}

impl RunPlan {
    fn execute<B: Backend>(
        &self,
        gpu: &mut Gpu<B>,
        kernel: &nvbare_core::gpu::Kernel<B::Memory>,
        bufs: &mut Vec<Buffer<B::Memory>>,
    ) -> Result<Vec<String>, CliError>
    where
        BackendError: From<B::Error>,
    {
        let mut params = self.params.clone();
        for b in &self.buffers {
            check_interrupt("while preparing the buffers")?;
            let buf = gpu.alloc(b.size, b.placement, false).cli()?;
            bufs.push(buf);
            // PANIC-free: just pushed.
            let buf = &bufs[bufs.len() - 1];
            upload(gpu, buf, &b.init, b.size)?;
            if let Some(o) = b.param_offset {
                params[o..o + 8].copy_from_slice(&buf.gpu_va().to_le_bytes());
            }
        }
        check_interrupt("while preparing the buffers")?;
        let start = Instant::now();
        // Timed: the GPU's own start and end of the grid, beside the wall time.
        let timed = gpu.launch_timed(kernel, &self.cfg, &params).cli()?;
        let f = timed.fence;
        let code = kernel.code_range().map(|(start, len)| FaultKernel {
            name: self.kernel.clone(),
            start,
            len,
        });
        wait(
            gpu,
            f,
            self.timeout_ns,
            &format!("waiting for kernel {}", self.kernel),
        )
        .map_err(|e| e.name_faults(arch_of(gpu), code))?;
        let took = start.elapsed();
        let on_gpu = gpu.times(&timed).cli()?;
        let c = &self.cfg;
        let mut out = vec![format!(
            "{} grid {:?} block {:?} shared {} B: done in {:.1} us (wall: launch to \
             completion seen), {:.1} us on the GPU (grid start to end)",
            self.kernel,
            c.grid,
            c.block,
            c.dynamic_shared,
            took.as_secs_f64() * 1e6,
            on_gpu.duration_ns() as f64 / 1e3
        )];
        let buffer_of = |arg: usize| {
            // PANIC-free: --out and --dump name buffer arguments (checked by the plan), each
            // of which has a planned buffer and, by now, an allocation in the same order.
            let i = self
                .buffers
                .iter()
                .position(|b| b.arg == arg)
                .expect("a buffer");
            (i, &self.buffers[i])
        };
        for &(arg, format) in &self.dumps {
            let (i, b) = buffer_of(arg);
            let want = (self.dump_count.saturating_mul(format.size())) as u64;
            let head = download_head(gpu, &bufs[i], want.min(b.size))?;
            // CAST: buffer sizes fit usize.
            let text = format.head(&head, b.size as usize / format.size());
            out.push(format!("{} [{format}]: {text}", self.args[arg].label(arg)));
        }
        for (arg, path) in &self.outs {
            let (i, b) = buffer_of(*arg);
            let write_err = |e: std::io::Error| CliError::Write {
                path: path.clone(),
                why: e.to_string(),
                source: Some(e),
            };
            let mut file = std::io::BufWriter::new(File::create(path).map_err(write_err)?);
            download(gpu, &bufs[i], b.size, |c| {
                file.write_all(c).map_err(write_err)
            })?;
            file.flush().map_err(write_err)?;
            out.push(format!(
                "wrote {} bytes of {} to {}",
                b.size,
                self.args[*arg].label(*arg),
                path.display()
            ));
        }
        Ok(out)
    }
}

impl GpuTask for RunPlan {
    type Output = Vec<String>;

    fn run<B: Backend>(
        &mut self,
        gpu: &mut Gpu<B>,
        _opened: &Opened,
    ) -> Result<Vec<String>, CliError>
    where
        BackendError: From<B::Error>,
    {
        let kernel = gpu.load(&self.elf, &self.kernel).cli()?;
        let mut bufs = Vec::new();
        let out = self.execute(gpu, &kernel, &mut bufs)?;
        // After a failure (a fault, a stall, Ctrl-C) the kernel may still run or its channel
        // be stopped: its memory goes with the GPU's teardown (the channels first), not back
        // one buffer at a time under it, and no wait for the channel is tried again.
        for b in bufs {
            gpu.free(b);
        }
        gpu.unload(kernel).cli()?;
        Ok(out)
    }
}
