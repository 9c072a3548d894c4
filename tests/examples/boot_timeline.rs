//! Host-side boot work per stage: boots the simulated GH100 and GB202 with nvbare's own boot
//! (`nvbare_core::boot`) and the real firmware files, several times each, and prints the
//! median host-side time (the stage's work, without the time spent waiting on the simulated
//! firmware) and the median time waited, per stage; each boot starts from a freshly reset
//! GPU. For BENCHMARKS.md (goal: ≤ 0.5 s of host-side work in total).
//!
//! ```text
//! cargo run --release -p nvbare-tests --example boot_timeline [-- RUNS]
//! ```
//!
//! Firmware from `$NVBARE_FIRMWARE_DIR` or `~/.cache/nvbare/firmware`.

use std::path::PathBuf;
use std::sync::Arc;

use nvbare_core::boot::{self, BootOptions, BootReport, Firmware, Stage};
use nvbare_core::hal::{Nanos, Platform};
use nvbare_sim::{SimChip, SimGpu, SimPlatform};

fn firmware_root() -> PathBuf {
    match std::env::var_os("NVBARE_FIRMWARE_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/nvbare/firmware"),
    }
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    for chip in [SimChip::Gh100, SimChip::Gb202] {
        let dir = firmware_root()
            .join("nvidia")
            .join(chip.spec().name)
            .join("gsp");
        let read = |name: &str| {
            let path = dir.join(format!("{name}-570.144.bin"));
            std::fs::read(&path).unwrap_or_else(|e| {
                eprintln!(
                    "{}: {e}; fetch the firmware with `nvbare firmware fetch --chip all`",
                    path.display()
                );
                std::process::exit(2)
            })
        };
        let (fmc, gsp, bootloader) = (read("fmc"), read("gsp"), read("bootloader"));
        let fw = Firmware {
            fmc: &fmc,
            gsp: &gsp,
            bootloader: &bootloader,
            booter: Default::default(),
        };
        let gpu = Arc::new(SimGpu::new(chip).expect("simulated GPU"));
        let mut platform = SimPlatform::new(gpu);
        let mut reports: Vec<BootReport> = Vec::new();
        for run in 0..runs {
            match boot::boot(platform, &fw, &BootOptions::default()) {
                Ok(g) => {
                    reports.push(g.report().clone());
                    let (mut p, r) = g.shutdown();
                    if let Err(e) = r {
                        eprintln!("teardown: {e}");
                    }
                    // Every boot measured starts from a freshly reset GPU.
                    if let Err(e) = p.reset() {
                        eprintln!("reset: {e}");
                        std::process::exit(1)
                    }
                    platform = p;
                }
                Err(f) => {
                    eprintln!(
                        "{} boot {}: failed: {}\nsimulator log:",
                        chip.spec().name,
                        run + 1,
                        f.error
                    );
                    for l in f.platform.gpu().log().lines() {
                        eprintln!("  {:>12} {}: {}", l.at_ns, l.unit, l.text);
                    }
                    std::process::exit(1)
                }
            }
        }
        println!(
            "{}, {}: median of {runs} boots",
            chip.spec().name,
            chip.spec().product
        );
        println!("  {:<20} {:>12} {:>12}", "stage", "host work", "waited");
        let (mut host_total, mut wait_total) = (0, 0);
        for stage in Stage::BOOT {
            let pick = |f: fn(&boot::StageTime) -> u64| {
                median(
                    reports
                        .iter()
                        .filter_map(|r| r.stage(stage))
                        .map(|s| f(&s))
                        .collect(),
                )
            };
            let (h, w) = (pick(|s| s.host_ns), pick(|s| s.waited_ns));
            host_total += h;
            wait_total += w;
            println!(
                "  {:<20} {:>12} {:>12}",
                stage.name(),
                Nanos(h).to_string(),
                Nanos(w).to_string()
            );
        }
        println!(
            "  {:<20} {:>12} {:>12}",
            "total (of medians)",
            Nanos(host_total).to_string(),
            Nanos(wait_total).to_string()
        );
    }
}
