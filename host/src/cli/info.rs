//! `nvbare info`: what an open GPU is ([`GpuReport`], as text or JSON), and, on the
//! backends where nvbare boots GSP-RM itself, how the boot went ([`BootTimeline`]) and
//! whether the GPU is simulated.

use nvbare_core::boot::BootReport;
use nvbare_core::gpu::{Backend, Gpu};
use serde::Serialize;

use super::error::{BackendError, CliError};
use super::gpu::{GpuTask, Opened, arch_of};

/// Milliseconds of `ns`.
fn ms(ns: u64) -> f64 {
    // CAST: nanoseconds of a boot are far below 2^53.
    ns as f64 / 1e6
}

/// One stage of the boot timeline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageEntry {
    /// The stage's name.
    pub stage: &'static str,
    /// Host-side work (ms).
    pub host_ms: f64,
    /// Time spent waiting on the GPU (ms).
    pub waited_ms: f64,
}

/// How GSP-RM booted, stage by stage, in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BootTimeline {
    /// The chip booted.
    pub chip: String,
    /// WPR2 was up (a previous run ended without its teardown), so the GPU was reset.
    pub reset_for_wpr2: bool,
    /// The stages, in order.
    pub stages: Vec<StageEntry>,
    /// Host-side work over all stages (ms).
    pub host_ms: f64,
    /// Time waited over all stages (ms).
    pub waited_ms: f64,
}

impl BootTimeline {
    /// The timeline of `r`.
    pub fn of(r: &BootReport) -> Self {
        BootTimeline {
            chip: r.chip.name().to_owned(),
            reset_for_wpr2: r.reset_for_wpr2,
            stages: r
                .stages
                .iter()
                .map(|s| StageEntry {
                    stage: s.stage.name(),
                    host_ms: ms(s.host_ns),
                    waited_ms: ms(s.waited_ns),
                })
                .collect(),
            host_ms: ms(r.host_ns()),
            waited_ms: ms(r.waited_ns()),
        }
    }

    /// The table, one line per stage and a total, each line after `indent`.
    pub fn lines(&self, indent: &str) -> Vec<String> {
        let mut v = vec![format!(
            "{indent}{:<20} {:>11} {:>11}",
            "stage (ms)", "host work", "waited"
        )];
        for s in &self.stages {
            v.push(format!(
                "{indent}{:<20} {:>11.3} {:>11.3}",
                s.stage, s.host_ms, s.waited_ms
            ));
        }
        v.push(format!(
            "{indent}{:<20} {:>11.3} {:>11.3}",
            "total", self.host_ms, self.waited_ms
        ));
        v
    }
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
    /// The physical copy units RM reports behind that engine (0: RM did not say).
    pub pces: u32,
    /// Why asynchronous copy engines were refused (`COPYn: step: error`).
    pub refusals: Vec<String>,
}

/// What `nvbare info` shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
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
    /// The GPU is simulated (nvbare-sim in this process), not hardware.
    pub simulated: bool,
    /// It is reached in VFIO's no-IOMMU mode: UNSAFE (no DMA isolation).
    pub noiommu_unsafe: bool,
    /// How GSP-RM booted, when nvbare booted it.
    pub boot: Option<BootTimeline>,
}

impl GpuReport {
    /// The report of an open GPU.
    pub fn of<B: Backend>(gpu: &Gpu<B>, opened: &Opened) -> Self {
        let i = gpu.info();
        let g = gpu.gr();
        let c = gpu.objects().classes;
        let ch = gpu.channels();
        GpuReport {
            name: i.name.clone(),
            pci: i.pci.map(|p| p.to_string()),
            device_id: i.device_id,
            backend: opened.backend.name(),
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
                pces: ch.copy_pces,
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
            simulated: opened.simulator.is_some(),
            noiommu_unsafe: opened.noiommu_unsafe,
            boot: opened.boot.as_ref().map(BootTimeline::of),
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
        if self.simulated {
            s += "simulated     yes: nvbare-sim models this GPU in software; no hardware is used\n";
        }
        if self.noiommu_unsafe {
            s += "iommu         none: VFIO no-IOMMU mode, UNSAFE (the GPU can write all of memory)\n";
        }
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
            (Some(ce), _) if ch.pces > 0 => format!(
                "copy channel  own channel group on COPY{ce}, {} physical copy units (runs beside compute)\n",
                ch.pces
            ),
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
        if let Some(b) = &self.boot {
            s += &format!(
                "boot          GSP-RM booted by nvbare on {}{}:\n",
                b.chip,
                if b.reset_for_wpr2 {
                    " (WPR2 was up: reset the GPU first)"
                } else {
                    ""
                }
            );
            for line in b.lines("  ") {
                s += &line;
                s += "\n";
            }
        }
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

    fn run<B: Backend>(&mut self, gpu: &mut Gpu<B>, opened: &Opened) -> Result<String, CliError>
    where
        BackendError: From<B::Error>,
    {
        let report = GpuReport::of(gpu, opened);
        Ok(if self.json {
            // PANIC: the report is plain data (strings, numbers, lists): it serializes.
            serde_json::to_string_pretty(&report).expect("serializable") + "\n"
        } else {
            report.to_text()
        })
    }
}
