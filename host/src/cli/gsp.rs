//! Opening a GPU on which nvbare boots GSP-RM itself, running a [`GpuTask`] on it, and
//! tearing it down: the `vfio`, `sim` and `remote` arms of [`super::gpu::with_gpu`].
//!
//! Each arm makes its platform ([`Vfio`], [`SimPlatform`] over a [`SimGpu`] in this process,
//! [`Remote`]); `run_over` then does the same on any of them: identify the chip, load its
//! firmware (fetching it when the cache lacks it), boot GSP-RM and open the GPU layer
//! ([`GspRm::open`]), run the task, and close ([`GspRm::close`]: RM objects freed,
//! `UNLOADING_GUEST_DRIVER`, the RISC-V core halted, DMA memory freed) whether the task
//! succeeded, failed or was interrupted. A GPU a killed process left with WPR2 up is reset
//! by the boot, and the command says so.
//!
//! Ctrl-C during the boot takes effect when the boot returns (its waits are bounded and do
//! not look at the flag): the GPU is then closed as after any interrupted task.

use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nvbare_core::chip::Chip;
use nvbare_core::gpu::GpuConfig;
use nvbare_core::gsp_rm::{GspRm, GspRmOptions};
use nvbare_core::hal::Platform;
use nvbare_core::regs::PmcBoot42;
use nvbare_sim::{SimChip, SimGpu, SimPlatform};

use super::error::CliError;
use super::firmware::{self, FirmwareSource};
use super::gpu::{BackendKind, GpuTask, OpenEvent, Opened, Target, arch_of};
use super::interrupt;
use crate::remote::Remote;
use crate::vfio::{Vfio, VfioOptions};

/// The simulated chip in words, for every message about it.
pub fn simulated_name(chip: SimChip) -> String {
    let spec = chip.spec();
    let product = spec
        .product
        .split_once(" (simulated")
        .map_or(spec.product, |(p, _)| p);
    format!(
        "a simulated {} (an {product} modelled by nvbare-sim in this process; no hardware)",
        spec.name.to_ascii_uppercase(),
    )
}

/// The GPU layer's sizes for `target`: the defaults on hardware; smaller rings, pushbuffers
/// and launch arena on the simulator (whose memory is this process's) and over the remote
/// protocol (which zeroes every DMA allocation over TCP).
fn gpu_config(target: &Target, mut c: GpuConfig) -> GpuConfig {
    if !matches!(target, Target::Vfio { .. }) {
        c.ring_entries = 0x400;
        c.compute_pushbuffer = 1 << 20;
        c.copy_pushbuffer = 1 << 20;
        c.arena = 4 << 20;
    }
    c
}

/// Opens the GPU of `target` (not [`Target::Nvk`]), runs `task` on it and tears it down.
pub fn with_gsp_gpu<T: GpuTask>(
    target: &Target,
    backend: BackendKind,
    firmware: &FirmwareSource,
    config: GpuConfig,
    task: &mut T,
) -> Result<T::Output, CliError> {
    let options = GspRmOptions {
        gpu: gpu_config(target, config),
        ..GspRmOptions::default()
    };
    match target {
        Target::Sim(chip) => {
            let g = Arc::new(SimGpu::new(*chip)?);
            // The simulated FSP and GSP-FMC check the boot against the same files.
            g.set_firmware_dir(&firmware.dir);
            let mut opened = Opened::new(backend, simulated_name(*chip));
            opened.simulator = Some(g.clone());
            run_over(SimPlatform::new(g), opened, firmware, &options, task, |p| {
                Some(p.dma_outstanding())
            })
        }
        Target::Vfio {
            addr,
            allow_noiommu_unsafe,
        } => {
            let vfio = Vfio::open(
                *addr,
                &VfioOptions {
                    allow_noiommu_unsafe: *allow_noiommu_unsafe,
                    ..VfioOptions::default()
                },
            )?;
            let mut opened = Opened::new(backend, format!("the GPU at {addr} (VFIO)"));
            if vfio.is_noiommu_unsafe() {
                opened.noiommu_unsafe = true;
                opened.description =
                    format!("the GPU at {addr} (VFIO in no-IOMMU mode: UNSAFE, no DMA isolation)");
                eprintln!(
                    "nvbare: warning: {addr} is driven in VFIO's no-IOMMU mode: UNSAFE, the GPU \
                     can read and write all of this machine's memory (no DMA isolation)"
                );
            }
            run_over(vfio, opened, firmware, &options, task, |p| {
                Some(p.dma_outstanding())
            })
        }
        Target::Remote(addr) => {
            let remote = Remote::connect(addr)?;
            let opened = Opened::new(
                backend,
                format!(
                    "the remote GPU at {addr} (tinygrad's remote PCI protocol; hardware or a \
                     simulator, the server does not say)"
                ),
            );
            // The protocol cannot free DMA memory: the server keeps it until the connection
            // closes, so what this side still holds says nothing.
            run_over(remote, opened, firmware, &options, task, |_| None)
        }
        Target::Nvk(_) => unreachable!("with_gpu opens --backend nvk itself"),
    }
}

/// A spinner on stderr while the boot of `chip` runs (drawn only on a terminal).
fn boot_spinner(chip: Chip, simulated: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
        bar.set_style(style);
    }
    let what = if simulated { "the simulated " } else { "" };
    bar.set_message(format!("booting GSP-RM 570.144 on {what}{chip}"));
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// A GPU that fell off the bus gets its error now, before its platform is released: closing
/// still runs the teardown (its waits end at the first all-ones read), but releasing a
/// vanished device can block in the kernel for minutes (vfio-pci resets it on release, each
/// attempt waiting out a device that never answers), and the user should not wait that long
/// for the one error.
fn report_if_gone<P: Platform>(platform: &P, e: &CliError) {
    if !platform.is_present() {
        super::report_error_early(e);
        eprintln!(
            "nvbare: the GPU is gone; releasing it (the kernel may take minutes to give up \
             resetting it)"
        );
    }
}

/// [`with_gsp_gpu`] on an open platform. `dma_outstanding` reads how many DMA allocations
/// the platform still holds after the close.
fn run_over<P: Platform, T: GpuTask>(
    platform: P,
    mut opened: Opened,
    firmware: &FirmwareSource,
    options: &GspRmOptions,
    task: &mut T,
    dma_outstanding: impl Fn(&P) -> Option<usize>,
) -> Result<T::Output, CliError> {
    // The chip (for its firmware) from the PCI device id in config space: BAR0 may read all
    // ones until the FSP booted and GB20x's BAR firewall is down, which the boot waits for
    // first (core::boot::identify). Only a board outside the known id blocks is named by
    // NV_PMC_BOOT_42 here; the boot then checks BOOT_42 against the id either way.
    let by_id = platform
        .config_read(2, 2)
        .ok()
        .and_then(|id| u16::try_from(id).ok())
        .and_then(Chip::from_pci_device_id);
    let chip = match by_id {
        Some(chip) => chip,
        None => {
            Chip::identify(PmcBoot42::read(&platform)).map_err(|source| CliError::UnknownChip {
                on: opened.description.clone(),
                source,
            })?
        }
    };
    let files = firmware::load(chip, firmware)?;
    task.event(&OpenEvent::Firmware {
        chip,
        dir: &firmware.dir,
        fetched: files.fetched,
    });
    super::run::check_interrupt("before the boot")?;
    task.event(&OpenEvent::Booting {
        on: &opened.description,
    });
    let started = Instant::now();
    let spinner = boot_spinner(chip, opened.simulator.is_some());
    let opening = GspRm::open(platform, &files.firmware(), options);
    spinner.finish_and_clear();
    let mut gpu = opening.map_err(|f| {
        let e = CliError::Open {
            on: opened.description.clone(),
            source: Box::new(f.error),
        };
        // The platform is released when `f.platform` drops here: see `report_if_gone`.
        report_if_gone(&f.platform, &e);
        e
    })?;
    drop(files);
    let report = gpu.backend().gsp().report().clone();
    task.event(&OpenEvent::Booted {
        report: &report,
        took: started.elapsed(),
    });
    opened.boot = Some(report);
    let arch = arch_of(&gpu);
    let result = if interrupt::requested() {
        Err(CliError::Interrupted {
            during: "while GSP-RM booted".into(),
            waited_ns: 0,
        })
    } else {
        // A fault anywhere in the task reads with this GPU's names for its codes.
        task.run(&mut gpu, &opened)
            .map_err(|e| e.name_faults(arch, None))
    };
    if let Err(e) = &result {
        report_if_gone(gpu.backend().platform(), e);
    }
    let closing = Instant::now();
    let (platform, closed) = GspRm::close(gpu);
    let left = dma_outstanding(&platform);
    drop(platform);
    match closed {
        Ok(report) => {
            task.event(&OpenEvent::Closed {
                report: &report,
                dma_outstanding: left,
                took: closing.elapsed(),
            });
            result
        }
        Err(e) => match result {
            Ok(_) => Err(CliError::Close(Box::new(e))),
            Err(first) => {
                eprintln!("nvbare: warning: tearing the GPU down after the task's error: {e}");
                Err(first)
            }
        },
    }
}
