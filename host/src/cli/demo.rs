//! `nvbare demo`: the whole VFIO path in one command. By default on a simulated GH100 (in
//! this process, said plainly), or another simulated chip (`--chip NAME`, any of the
//! simulator's chip table), or a real GPU (`--backend vfio --device BDF`), or one behind
//! tinygrad's remote protocol (`--backend remote --device HOST:PORT`):
//!
//! 1. the firmware (fetched into the cache first when it is not there);
//! 2. GSP-RM booted by nvbare, with the boot timeline (ms per stage: host work, waited);
//! 3. the GPU's details (chip, SMs, VRAM, classes, firmware);
//! 4. a 256 MiB copy round trip, host → VRAM → host, of random data, checked byte for byte;
//! 5. a vector add of the committed test kernels for the GPU's SM
//!    (`core/tests/data/cubin/kernels.sm_<sm>.cubin`, picked by `nvbare_test_kernels::for_sm`),
//!    checked element by element;
//! 6. the teardown (RM objects freed, `UNLOADING_GUEST_DRIVER`, the GSP core halted, DMA
//!    memory freed).
//!
//! The long steps show progress on a terminal (stderr). Every check compares against what
//! the CPU computed; a difference is an error ([`CliError::WrongResult`]). The simulator runs
//! the committed kernels through native models and lets any other kernel "complete" without
//! running it: the demo uses a modelled kernel, says which way the simulator ran it, and
//! checks the result anyway.

use std::io::Write;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nvbare_core::gpu::{Backend, Buffer, Gpu, Placement};

use super::error::{BackendError, CliError, GpuResultExt};
use super::gpu::{
    BackendKind, GpuArgs, GpuTask, OpenEvent, Opened, Target, WPR2_RESET, teardown_text, with_gpu,
};
use super::gsp::simulated_name;
use super::info::{BootTimeline, GpuReport};
use super::run::{check_interrupt, wait};
use super::transfer::{memory_error, view_of};
use crate::bench::kernels_with_path_for;

/// `nvbare demo` options.
#[derive(Args, Debug)]
pub struct DemoArgs {
    #[command(flatten)]
    pub gpu: GpuArgs,
}

/// Bytes of the copy round trip.
pub const COPY_BYTES: u64 = 256 << 20;
/// Bytes per copy submitted and waited for (progress, and Ctrl-C between them).
const COPY_CHUNK: u64 = 16 << 20;
/// Floats of the vector add.
pub const VECTOR_LEN: u32 = 1 << 20;

/// Word `i` of the random stream of `seed` (splitmix64 of `seed + i`: any word can be
/// computed again to check it).
fn random_word(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fills `buf` with the random bytes of `seed` from byte `offset` (a multiple of 8) on.
fn random_bytes(seed: u64, offset: u64, buf: &mut [u8]) {
    for (j, w) in buf.chunks_exact_mut(8).enumerate() {
        // CAST: a chunk index fits u64.
        w.copy_from_slice(&random_word(seed, offset / 8 + j as u64).to_le_bytes());
    }
}

/// A float in [0, 1024) from a random word (24 significant bits: exact in f32).
fn random_float(w: u64) -> f32 {
    // CAST: 24 bits fit f32's significand exactly.
    ((w >> 40) as u32) as f32 / 16384.0
}

/// A seed that differs run to run (the clock and the process id).
fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // CAST: the low 64 bits of the nanoseconds are what varies.
    random_word(nanos as u64, u64::from(std::process::id()))
}

/// A progress bar of `total` bytes for the step `msg`, on stderr (drawn only on a terminal).
fn bytes_bar(total: u64, msg: &'static str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    // The style before the message: setting either draws.
    if let Ok(style) =
        ProgressStyle::with_template("{msg:30} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(msg);
    bar
}

fn gib_per_s(bytes: u64, d: Duration) -> f64 {
    // CAST: byte counts of a copy are far below 2^53.
    bytes as f64 / d.as_secs_f64().max(1e-9) / f64::from(1u32 << 30)
}

/// The demo as a [`GpuTask`]: what it prints goes to `out` as it happens.
struct Demo<'a, W: Write> {
    out: &'a mut W,
    /// The first failed write to `out` (reported when the task returns).
    write_error: Option<std::io::Error>,
    seed: u64,
}

impl<W: Write> Demo<'_, W> {
    fn say(&mut self, line: &str) {
        if self.write_error.is_some() {
            return;
        }
        let r = writeln!(self.out, "{line}").and_then(|()| self.out.flush());
        if let Err(e) = r {
            self.write_error = Some(e);
        }
    }

    fn said(&mut self) -> Result<(), CliError> {
        self.write_error
            .take()
            .map_or(Ok(()), |e| Err(CliError::Output(e)))
    }

    /// The GPU's details.
    fn details<B: Backend>(&mut self, gpu: &Gpu<B>, opened: &Opened) {
        let r = GpuReport::of(gpu, opened);
        let simulated = if r.simulated { ", SIMULATED" } else { "" };
        let chip = r
            .boot
            .as_ref()
            .map_or(String::new(), |b| format!(", chip {}", b.chip));
        self.say(&format!(
            "gpu       {} ({}{chip}{simulated}): sm_{} ({}), {} SMs, {} MiB of VRAM",
            r.name,
            r.pci.as_deref().unwrap_or("no PCI address"),
            r.sm,
            r.arch.as_deref().unwrap_or("unknown architecture"),
            r.sm_count,
            r.vram_bytes >> 20
        ));
        let class = |id: u32| match nvbare_gsp::rm::classes::name_of(id) {
            Some(n) => format!("{n} {id:#06x}"),
            None => format!("{id:#06x}"),
        };
        let c = &r.classes;
        self.say(&format!(
            "          classes: channel {}, compute {}, copy {}",
            class(c.gpfifo),
            class(c.compute),
            class(c.copy)
        ));
        self.say(&format!("          firmware: {}", r.rm));
    }

    /// The 256 MiB round trip, host → VRAM → host, of random data checked byte for byte.
    fn copy_round_trip<B: Backend>(&mut self, gpu: &mut Gpu<B>) -> Result<(), CliError>
    where
        BackendError: From<B::Error>,
    {
        let bytes = COPY_BYTES;
        let what = format!(
            "256 MiB copy host -> VRAM -> host (random data, seed {:#018x})",
            self.seed
        );
        let src = gpu.alloc(bytes, Placement::Host, true).cli()?;
        let vram = gpu.alloc(bytes, Placement::Vram, false).cli()?;
        let dst = gpu.alloc(bytes, Placement::Host, true).cli()?;
        let chunk = usize::try_from(COPY_CHUNK).unwrap_or(usize::MAX);
        let mut data = vec![0u8; chunk];
        let bar = bytes_bar(bytes, "writing random data");
        let view = view_of(&src)?;
        let mut at = 0u64;
        while at < bytes {
            check_interrupt("while writing the copy's data")?;
            random_bytes(self.seed, at, &mut data);
            // CAST: offsets within a 256 MiB buffer fit usize.
            view.write_u64s(at as usize, &data).map_err(memory_error)?;
            at += COPY_CHUNK;
            bar.inc(COPY_CHUNK);
        }
        bar.finish_and_clear();
        let timeout = gpu.config().timeout_ns;
        let mut legs = [Duration::ZERO; 2];
        for (leg, (to, from, msg)) in [
            (vram.gpu_va(), src.gpu_va(), "copying host -> VRAM"),
            (dst.gpu_va(), vram.gpu_va(), "copying VRAM -> host"),
        ]
        .into_iter()
        .enumerate()
        {
            let bar = bytes_bar(bytes, msg);
            let t = Instant::now();
            let mut fences = Vec::new();
            let mut off = 0;
            while off < bytes {
                fences.push(gpu.copy(to + off, from + off, COPY_CHUNK).cli()?);
                off += COPY_CHUNK;
            }
            for f in fences {
                wait(gpu, f, timeout, &format!("waiting for the {msg}"))?;
                bar.inc(COPY_CHUNK);
            }
            bar.finish_and_clear();
            legs[leg] = t.elapsed();
        }
        let bar = bytes_bar(bytes, "checking byte for byte");
        let view = view_of(&dst)?;
        let mut got = vec![0u8; chunk];
        let mut at = 0u64;
        while at < bytes {
            check_interrupt("while checking the copy")?;
            random_bytes(self.seed, at, &mut data);
            // CAST: as above.
            view.read(at as usize, &mut got).map_err(memory_error)?;
            // PANIC: `i` indexes both chunks, which are of one length.
            if let Some(i) = got.iter().zip(&data).position(|(g, w)| g != w) {
                bar.finish_and_clear();
                // CAST: an index within a 16 MiB chunk fits u64.
                let byte = at + i as u64;
                return Err(CliError::WrongResult {
                    what,
                    detail: format!(
                        "byte {byte:#x} reads {:#04x} after the round trip, {:#04x} was written",
                        got[i], data[i]
                    ),
                });
            }
            at += COPY_CHUNK;
            bar.inc(COPY_CHUNK);
        }
        bar.finish_and_clear();
        for b in [src, vram, dst] {
            gpu.free(b);
        }
        self.say(&format!(
            "copy      {what}: checked byte for byte: ok (host -> VRAM {:.2} GiB/s, VRAM -> \
             host {:.2} GiB/s)",
            gib_per_s(bytes, legs[0]),
            gib_per_s(bytes, legs[1])
        ));
        Ok(())
    }

    /// `vector_add` (`c[i] = a[i] + b[i]`) over random floats, checked element by element.
    fn vector_add<B: Backend>(&mut self, gpu: &mut Gpu<B>, opened: &Opened) -> Result<(), CliError>
    where
        BackendError: From<B::Error>,
    {
        let n = VECTOR_LEN;
        let (cubin_name, cubin) = kernels_with_path_for(gpu.sm());
        let what = format!(
            "vector add of {n} floats (c = a + b, random inputs; vector_add of {cubin_name})"
        );
        let k = gpu.load(cubin, "vector_add").cli()?;
        let bytes = u64::from(n) * 4;
        let mut bufs: Vec<Buffer<B::Memory>> = Vec::new();
        for _ in 0..3 {
            bufs.push(gpu.alloc(bytes, Placement::Vram, true).cli()?);
        }
        let input = |salt: u64| -> Vec<f32> {
            (0..u64::from(n))
                .map(|i| random_float(random_word(self.seed ^ salt, i)))
                .collect()
        };
        let (a, b) = (input(0xa), input(0xb));
        let bytes_of = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        view_of(&bufs[0])?
            .write(0, &bytes_of(&a))
            .map_err(memory_error)?;
        view_of(&bufs[1])?
            .write(0, &bytes_of(&b))
            .map_err(memory_error)?;
        // CAST: 4 MiB fits usize.
        view_of(&bufs[2])?
            .fill(0, bytes as usize, 0xff)
            .map_err(memory_error)?;
        let mut params = Vec::new();
        for buf in &bufs {
            params.extend_from_slice(&buf.gpu_va().to_le_bytes());
        }
        params.extend_from_slice(&n.to_le_bytes());
        // CAST: a parameter block is at most 32 KiB.
        params.resize(k.info.param_size as usize, 0);
        let before = opened.simulator.as_ref().map(|g| g.engine_counters());
        let t = Instant::now();
        let f = gpu
            .launch(&k, [n.div_ceil(256), 1, 1], [256, 1, 1], &params)
            .cli()?;
        let timeout = gpu.config().timeout_ns;
        wait(gpu, f, timeout, "waiting for vector_add")?;
        let took = t.elapsed();
        let how = match (&before, &opened.simulator) {
            (Some(b), Some(g)) => {
                let a = g.engine_counters();
                if a.kernels_not_executed > b.kernels_not_executed {
                    self.say(
                        "kernel    the simulator did NOT execute this kernel (it runs only the \
                         committed kernels it models; others complete without running)",
                    );
                    " (the simulator did not execute it)"
                } else if a.kernels_modeled > b.kernels_modeled {
                    " (run by the simulator's native model of vector_add)"
                } else {
                    ""
                }
            }
            _ => "",
        };
        // CAST: 4 MiB fits usize.
        let mut out = vec![0u8; bytes as usize];
        view_of(&bufs[2])?.read(0, &mut out).map_err(memory_error)?;
        for (i, c) in out.chunks_exact(4).enumerate() {
            let got = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            // PANIC: `out` holds n floats, as `a` and `b` do.
            let want = a[i] + b[i];
            if got.to_bits() != want.to_bits() {
                return Err(CliError::WrongResult {
                    what: what + how,
                    detail: format!(
                        "c[{i}] = {got} ({:#010x}), a[{i}] + b[{i}] = {} + {} = {want}",
                        got.to_bits(),
                        a[i],
                        b[i]
                    ),
                });
            }
        }
        for buf in bufs {
            gpu.free(buf);
        }
        gpu.unload(k).cli()?;
        self.say(&format!(
            "kernel    {what}: checked element by element: ok in {:.1} ms{how}",
            took.as_secs_f64() * 1e3
        ));
        Ok(())
    }
}

impl<W: Write> GpuTask for Demo<'_, W> {
    type Output = ();

    fn event(&mut self, event: &OpenEvent<'_>) {
        match event {
            OpenEvent::Firmware { chip, dir, fetched } => self.say(&format!(
                "firmware  GSP-RM 570.144 for {chip} from {} ({}, SHA-256 verified)",
                dir.display(),
                if *fetched {
                    "fetched into the cache now"
                } else {
                    "cached"
                }
            )),
            OpenEvent::Booting { on } => {
                self.say(&format!("boot      booting GSP-RM 570.144 on {on} ..."))
            }
            OpenEvent::Booted { report, took } => {
                let t = BootTimeline::of(report);
                if t.reset_for_wpr2 {
                    self.say(&format!("boot      {WPR2_RESET}"));
                }
                self.say(&format!(
                    "boot      booted and RM set up in {:.1} ms; the boot's timeline \
                     ({:.1} ms of host work, {:.1} ms waiting on the GPU):",
                    took.as_secs_f64() * 1e3,
                    t.host_ms,
                    t.waited_ms
                ));
                for line in t.lines("            ") {
                    self.say(&line);
                }
            }
            OpenEvent::Closed {
                report,
                dma_outstanding,
                took,
            } => self.say(&format!(
                "teardown  {} in {:.1} ms: ok",
                teardown_text(report, *dma_outstanding),
                took.as_secs_f64() * 1e3
            )),
        }
    }

    fn run<B: Backend>(&mut self, gpu: &mut Gpu<B>, opened: &Opened) -> Result<(), CliError>
    where
        BackendError: From<B::Error>,
    {
        self.details(gpu, opened);
        self.said()?;
        self.copy_round_trip(gpu)?;
        self.said()?;
        self.vector_add(gpu, opened)?;
        self.said()
    }
}

/// What the demo says first: the GPU it is about to use, and plainly whether it is real.
fn header(target: &Target) -> Vec<String> {
    match target {
        Target::Sim(chip) => vec![
            format!("nvbare demo on {}.", simulated_name(*chip)),
            "  nvbare boots NVIDIA's GSP-RM 570.144 on it as on a real GPU; the simulator \
             checks what nvbare hands it against the real firmware files and models what the \
             firmware and engines do (it does not run the firmware's code)."
                .to_owned(),
        ],
        Target::Vfio {
            addr,
            allow_noiommu_unsafe,
        } => vec![format!(
            "nvbare demo on the real GPU at {addr}, through VFIO{}.",
            if *allow_noiommu_unsafe {
                " (no-IOMMU mode allowed: UNSAFE, no DMA isolation)"
            } else {
                ""
            }
        )],
        Target::Remote(addr) => vec![format!(
            "nvbare demo on the remote GPU at {addr} (tinygrad's remote PCI protocol: a real \
             GPU or a simulator, as the server has it)."
        )],
        Target::Nvk(i) => vec![format!(
            "nvbare demo on GPU {i} of NVIDIA's kernel driver (its GSP-RM, not booted by \
             nvbare)."
        )],
    }
}

/// `nvbare demo`: writes as it goes to `out`; an error after the GPU was opened comes after
/// the teardown's line.
pub fn run(a: &DemoArgs, out: &mut impl Write) -> Result<(), CliError> {
    let mut args = a.gpu.clone();
    args.backend.get_or_insert(BackendKind::Sim);
    let target = args.target()?;
    let simulated = matches!(target, Target::Sim(_));
    let mut demo = Demo {
        out,
        write_error: None,
        seed: fresh_seed(),
    };
    for line in header(&target) {
        demo.say(&line);
    }
    demo.said()?;
    let started = Instant::now();
    let result = with_gpu(&args, &mut demo);
    demo.said()?;
    result?;
    demo.say(&format!(
        "demo      every check passed{} in {:.1} s; the GPU was torn down",
        if simulated {
            " on the SIMULATED GPU"
        } else {
            ""
        },
        started.elapsed().as_secs_f64()
    ));
    demo.said()
}
