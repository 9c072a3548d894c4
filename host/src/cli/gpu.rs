//! What every GPU subcommand shares: which backend and device (`--backend`, `--device`),
//! the one place a GPU is opened by backend ([`with_gpu`]), and `nvbare info`.
//!
//! A subcommand is a [`GpuTask`], generic over the backend, so `Gpu<Nvk>` (and, as they land,
//! `Gpu<GspRm<Vfio>>`, `Gpu<GspRm<SimGpu>>`, `Gpu<GspRm<Remote>>`) run the same code: adding
//! a backend is a variant of [`BackendKind`], its [`Target`], and one arm in [`with_gpu`].

use clap::{Args, ValueEnum};
use nvbare_core::chip::Arch;
use nvbare_core::gpu::{Backend, Gpu, GpuConfig, LaunchTuning};
use serde::Serialize;

use super::error::{BackendError, CliError, GpuResultExt};
use crate::nvk;

/// Which way nvbare reaches the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    /// Through NVIDIA's kernel driver (RM ioctls on /dev/nvidiactl, /dev/nvidia-uvm).
    #[default]
    Nvk,
}

impl BackendKind {
    /// The name `--backend` takes.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Nvk => "nvk",
        }
    }
}

/// Options every GPU subcommand takes.
#[derive(Args, Debug, Clone)]
pub struct GpuArgs {
    /// How to reach the GPU.
    #[arg(long, value_enum, default_value_t)]
    pub backend: BackendKind,
    /// Which GPU: with --backend nvk, its index in the kernel driver's order [default: 0].
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
    /// Launch tunings for measuring: membar=N,inval=0|1,mirror=0|1,relmembar=0|1.
    #[arg(long, env = "NVBARE_TUNE", default_value = "")]
    pub tune: String,
}

/// The GPU a command will open, read from `--backend` and `--device` before anything is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// GPU `index` of those NVIDIA's kernel driver lists.
    Nvk(usize),
}

impl GpuArgs {
    /// The GPU these options name.
    pub fn target(&self) -> Result<Target, CliError> {
        match self.backend {
            BackendKind::Nvk => match self.device.as_deref() {
                None => Ok(Target::Nvk(0)),
                Some(d) => d.parse().map(Target::Nvk).map_err(|_| CliError::Device {
                    backend: self.backend.name(),
                    given: d.to_owned(),
                    expected: "a GPU index (0, 1, ...) in the kernel driver's order",
                }),
            },
        }
    }

    /// The GPU layer's configuration (`--tune` applied).
    pub fn config(&self) -> Result<GpuConfig, CliError> {
        let tuning = LaunchTuning::parse(&self.tune).map_err(|e| CliError::Tune {
            spec: e.0.to_owned(),
        })?;
        Ok(GpuConfig {
            tuning,
            ..GpuConfig::default()
        })
    }
}

/// What a subcommand does with an open GPU, whatever the backend.
pub trait GpuTask {
    /// What it returns.
    type Output;
    /// Runs on `gpu`, reached through `backend`.
    fn run<B: Backend>(
        self,
        gpu: &mut Gpu<B>,
        backend: BackendKind,
    ) -> Result<Self::Output, CliError>
    where
        BackendError: From<B::Error>;
}

/// Opens the GPU `args` name and runs `task` on it; the GPU is torn down when the task
/// returns, whether it succeeded, failed or was interrupted.
pub fn with_gpu<T: GpuTask>(args: &GpuArgs, task: T) -> Result<T::Output, CliError> {
    let target = args.target()?;
    let config = args.config()?;
    log::debug!("opening {target:?} with {config:?}");
    match target {
        Target::Nvk(index) => {
            let mut gpu = nvk::open(index, config).cli()?;
            let arch = arch_of(&gpu);
            // A fault anywhere in the task reads with this GPU's names for its codes.
            task.run(&mut gpu, args.backend)
                .map_err(|e| e.name_faults(arch, None))
        }
    }
}

/// The architecture of `gpu` (from its SM version: what every backend knows).
pub fn arch_of<B: Backend>(gpu: &Gpu<B>) -> Option<Arch> {
    Arch::from_sm_version(gpu.sm())
}

/// A class and its name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClassEntry {
    /// The class number.
    pub id: u32,
    /// Its name in the RM headers, when nvbare knows it.
    pub name: Option<&'static str>,
}

/// The classes nvbare drives each engine with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EngineClasses {
    /// GPFIFO channel class.
    pub gpfifo: u32,
    /// Compute class.
    pub compute: u32,
    /// Copy class.
    pub copy: u32,
    /// Usermode (doorbell) class.
    pub usermode: u32,
}

/// Which engine the copy channel got.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CopyChannel {
    /// `COPYn` of its own channel group, or `None` when it shares the graphics group.
    pub engine: Option<u32>,
    /// Why asynchronous copy engines were refused (`COPYn: step: error`).
    pub refusals: Vec<String>,
}

/// What `nvbare info` shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GpuReport {
    /// Marketing name.
    pub name: String,
    /// PCI address.
    pub pci: Option<String>,
    /// PCI device id.
    pub device_id: u16,
    /// `--backend`.
    pub backend: &'static str,
    /// What runs RM.
    pub rm: String,
    /// SM version as nvcc numbers it.
    pub sm: u32,
    /// Architecture.
    pub arch: Option<String>,
    /// Enabled SMs.
    pub sm_count: u32,
    /// GPCs in the design.
    pub gpcs: u32,
    /// TPCs per GPC.
    pub tpcs_per_gpc: u32,
    /// SMs per TPC.
    pub sms_per_tpc: u32,
    /// Warps an SM holds.
    pub max_warps_per_sm: u32,
    /// Video memory.
    pub vram_bytes: u64,
    /// The classes in use.
    pub classes: EngineClasses,
    /// The copy channel's engine.
    pub copy_channel: CopyChannel,
    /// Every class the GPU lists.
    pub class_list: Vec<ClassEntry>,
}

impl GpuReport {
    /// The report of an open GPU.
    pub fn of<B: Backend>(gpu: &Gpu<B>, backend: BackendKind) -> Self {
        let i = gpu.info();
        let g = gpu.gr();
        let c = gpu.objects().classes;
        let ch = gpu.channels();
        GpuReport {
            name: i.name.clone(),
            pci: i.pci.map(|p| p.to_string()),
            device_id: i.device_id,
            backend: backend.name(),
            rm: i.rm.clone(),
            sm: gpu.sm(),
            arch: arch_of(gpu).map(|a| format!("{a:?}")),
            sm_count: g.sm_count,
            gpcs: g.gpcs,
            tpcs_per_gpc: g.tpcs_per_gpc,
            sms_per_tpc: g.sms_per_tpc,
            max_warps_per_sm: g.max_warps_per_sm,
            vram_bytes: i.vram_bytes,
            classes: EngineClasses {
                gpfifo: c.gpfifo,
                compute: c.compute,
                copy: c.copy,
                usermode: c.usermode,
            },
            copy_channel: CopyChannel {
                engine: ch.copy_engine,
                refusals: ch
                    .copy_refusals
                    .iter()
                    .map(|r| format!("COPY{}: {}: {}", r.engine, r.step, r.error))
                    .collect(),
            },
            class_list: gpu
                .objects()
                .class_list
                .iter()
                .map(|&id| ClassEntry {
                    id,
                    name: nvbare_gsp::rm::classes::name_of(id),
                })
                .collect(),
        }
    }

    /// The text `nvbare info` prints.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "gpu           {} ({}, device id {:#06x})\n",
            self.name,
            self.pci.as_deref().unwrap_or("no PCI address"),
            self.device_id
        );
        s += &format!("backend       {} ({})\n", self.backend, self.rm);
        s += &format!(
            "sm            sm_{} ({}), {} SMs enabled ({} GPCs x {} TPCs x {} SMs per TPC in \
             the design)\n",
            self.sm,
            self.arch.as_deref().unwrap_or("unknown architecture"),
            self.sm_count,
            self.gpcs,
            self.tpcs_per_gpc,
            self.sms_per_tpc
        );
        s += &format!("vram          {} MiB\n", self.vram_bytes >> 20);
        let c = &self.classes;
        s += &format!(
            "classes       gpfifo {:#06x}, compute {:#06x}, copy {:#06x}, usermode {:#06x}\n",
            c.gpfifo, c.compute, c.copy, c.usermode
        );
        let ch = &self.copy_channel;
        s += &match (ch.engine, ch.refusals.is_empty()) {
            (Some(ce), _) => {
                format!("copy channel  own channel group on COPY{ce} (runs beside compute)\n")
            }
            (None, true) => {
                "copy channel  in the graphics channel group (no asynchronous copy engine tried)\n"
                    .to_string()
            }
            (None, false) => format!(
                "copy channel  in the graphics channel group ({})\n",
                ch.refusals.join("; ")
            ),
        };
        let names: Vec<String> = self
            .class_list
            .iter()
            .map(|e| match e.name {
                Some(n) => format!("{n} {:#06x}", e.id),
                None => format!("{:#06x}", e.id),
            })
            .collect();
        s += &format!("class list    {}\n", names.join(", "));
        s
    }
}

/// `nvbare info [--json]`.
pub struct Info {
    /// One JSON object instead of the text.
    pub json: bool,
}

impl GpuTask for Info {
    type Output = String;

    fn run<B: Backend>(self, gpu: &mut Gpu<B>, backend: BackendKind) -> Result<String, CliError>
    where
        BackendError: From<B::Error>,
    {
        let report = GpuReport::of(gpu, backend);
        Ok(if self.json {
            // PANIC: the report is plain data (strings, numbers, lists): it serializes.
            serde_json::to_string_pretty(&report).expect("serializable") + "\n"
        } else {
            report.to_text()
        })
    }
}
