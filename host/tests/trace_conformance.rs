//! Trace conformance with tinygrad on GB202 (issue 17, item 6): tinygrad 0.14.0, which boots
//! real GB202s every day, and nvbare (`nvbare demo --backend remote`) each boot a simulated
//! GB202 over tinygrad's remote PCI protocol with the simulator's trace on; the differences
//! between the two traces (registers written, read or polled by one and not the other,
//! config accesses, resets, and the boot orderings of [`RULES`]) must each be explained in
//! `tests/data/trace-explained.txt` (CONFORMANCE.md, "Trace conformance", says why, with citations).
//! A new difference fails the test, named with its register; an explanation whose difference
//! went away is printed (drop the line).
//!
//! One tinygrad boot per run of this binary. The traces, named from NVIDIA's hwref headers
//! (`$NVBARE_REFERENCE`, else `../../shared/reference`), and the difference list are written
//! to `$CARGO_TARGET_TMPDIR/trace-conformance/` for reading.
//!
//! Skips (saying why) without tinygrad (PyPI) or the firmware, unless
//! `NVBARE_REQUIRE_TINYGRAD=1`.

#[allow(dead_code)]
mod common;
#[path = "../../sim/tests/tinygrad_support/mod.rs"]
#[allow(dead_code)]
mod tinygrad_support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use common::{firmware, nvbare, run};
use nvbare_sim::SimChip;
use nvbare_sim::remote::{ServeConfig, serve};
use nvbare_sim::trace::compare::{Difference, Explained, Marker, OrderRule, differences};
use nvbare_sim::trace::names::RegisterNames;
use nvbare_sim::trace::{Kind, Trace};

/// The explained differences.
const EXPLAINED: &str = include_str!("data/trace-explained.txt");

/// Bound on tinygrad's run (a boot over TCP from Python and a 64 MiB round trip: about 10 s
/// alone, a minute beside builds).
const TINYGRAD_RUN: Duration = Duration::from_secs(600);

/// `NV_THERM_I2CS_SCRATCH` (GB20x): the FSP writes 0xff when its boot completed
/// (`kern_fsp_gb202.c` `_kfspWaitBootCond_GB202`).
const FSP_BOOT_COMPLETE: u32 = 0x00ad_00bc;
/// `NV_PMC_BOOT_42` (chip architecture and implementation).
const PMC_BOOT_42: u32 = 0x0000_0a00;
/// `NV_PGC6_AON_SECURE_SCRATCH_GROUP_42`: usable FB size in MiB.
const FB_SIZE_MB: u32 = 0x0011_83a4;
/// `NV_PFB_PRI_MMU_WPR2_ADDR_HI`.
const WPR2_HI: u32 = 0x001f_a828;
/// `NV_PFSP_QUEUE_HEAD(0)`: written last to send the FSP a command (the chain-of-trust one
/// first).
const FSP_QUEUE_HEAD: u32 = 0x008f_2c00;
/// `NV_PFALCON_FALCON_HWCFG2` of the GSP: polled for `RISCV_BR_PRIV_LOCKDOWN` clear after COT.
const GSP_HWCFG2: u32 = 0x0011_00f4;
/// Bits of a GSP HWCFG2 read that say the GSP is not released yet: the upper half (a
/// 0xBADF41xx PRI error while the target mask is locked to the FSP,
/// `_kfspIsGspTargetMaskReleased`) and `RISCV_BR_PRIV_LOCKDOWN` (bit 13).
const HWCFG2_NOT_RELEASED: u32 = 0xffff_2000;
/// `NV_PGSP_QUEUE_HEAD(0)`: GSP-RM's command-queue doorbell.
const GSP_QUEUE_HEAD: u32 = 0x0011_0c00;
/// `NV_VIRTUAL_FUNCTION_PRIV_FUNC_BAR1_BLOCK_LOW_ADDR` (BAR1 mode: physical).
const BAR1_BLOCK_LOW: u32 = 0x00b8_0f60;
/// `NV_PFB_FBHUB0_PCIE_FLUSH_SYSMEM_ADDR_LO` (GB20x; nouveau `dev_fbhub.h`, absent from
/// OpenRM's published GB202 headers): the sysmem flush buffer's address, written last.
const FLUSH_SYSMEM_LO: u32 = 0x008a_1d58;
/// `NV_EP_PCFG_GPU_VSEC_DEBUG_SEC_2` (config space; `BAR_FIREWALL_ENGAGE`).
const CFG_DEBUG_SEC_2: u32 = 0x2b8;

/// Orderings a GB202 boot keeps, and where they come from. A rule that holds in one trace
/// and not the other is a difference.
const RULES: &[OrderRule] = &[
    // OpenRM `kfspWaitForSecureBoot_GB202` (kern_fsp_gb202.c) runs before RM reads anything
    // FSP/FWSEC set up: the identity and the FB size come after FSP boot completes.
    OrderRule {
        name: "fsp-boot-before-boot42",
        first: Marker::with(Kind::Bar0Read, FSP_BOOT_COMPLETE, 0xff, 0xff),
        then: Marker::any(Kind::Bar0Read, PMC_BOOT_42),
    },
    OrderRule {
        name: "fsp-boot-before-fb-size",
        first: Marker::with(Kind::Bar0Read, FSP_BOOT_COMPLETE, 0xff, 0xff),
        then: Marker::any(Kind::Bar0Read, FB_SIZE_MB),
    },
    OrderRule {
        name: "fsp-boot-before-wpr2",
        first: Marker::with(Kind::Bar0Read, FSP_BOOT_COMPLETE, 0xff, 0xff),
        then: Marker::any(Kind::Bar0Read, WPR2_HI),
    },
    // The FSP reads the COT payload and the FMC by DMA: bus mastering (PCI_COMMAND bit 2)
    // must be on before the command is sent.
    OrderRule {
        name: "bus-master-before-fsp-cot",
        first: Marker::with(Kind::CfgWrite, 0x4, 0x4, 0x4),
        then: Marker::any(Kind::Bar0Write, FSP_QUEUE_HEAD),
    },
    // OpenRM sets the sysmem flush buffer up "very early" (kmemsysConstructEngine_IMPL), before
    // GSP boots: GSP-RM's first system membar reads it.
    OrderRule {
        name: "sysmem-flush-before-fsp-cot",
        first: Marker::any(Kind::Bar0Write, FLUSH_SYSMEM_LO),
        then: Marker::any(Kind::Bar0Write, FSP_QUEUE_HEAD),
    },
    // FSP boot completes before the COT command is sent (kfspSendBootCommands_GH100 follows
    // kfspWaitForSecureBoot_HAL).
    OrderRule {
        name: "fsp-boot-before-fsp-cot",
        first: Marker::with(Kind::Bar0Read, FSP_BOOT_COMPLETE, 0xff, 0xff),
        then: Marker::any(Kind::Bar0Write, FSP_QUEUE_HEAD),
    },
    // BAR1 goes to physical mode once GSP-FMC released the GSP: OpenRM
    // `kgspBootstrap_GH100` waits `_kgspLockdownReleasedOrFmcError` (kernel_gsp_gh100.c)
    // before GSP-RM runs; tinygrad ip.py writes `NV_PBUS_BAR1_BLOCK` and
    // `BAR1_BLOCK_LOW_ADDR` after its lockdown wait. "Released" is a HWCFG2 read that is
    // neither a PRI error (0xBADF41xx) nor has `RISCV_BR_PRIV_LOCKDOWN` (bit 13) set.
    OrderRule {
        name: "lockdown-release-before-bar1-block",
        first: Marker::with(Kind::Bar0Read, GSP_HWCFG2, HWCFG2_NOT_RELEASED, 0),
        then: Marker::any(Kind::Bar0Write, BAR1_BLOCK_LOW),
    },
    // kbusBar1InstBlkBind_GH100 (kern_bus_gh100.c:2646): "BAR1_BLOCK_LOW_ADDR should be
    // written first followed with the HIGH. Write to the HIGH register triggers the bind."
    OrderRule {
        name: "bar1-block-low-before-high",
        first: Marker::any(Kind::Bar0Write, BAR1_BLOCK_LOW),
        then: Marker::any(Kind::Bar0Write, BAR1_BLOCK_LOW + 4),
    },
    // GSP-RM's command queue doorbell (`NV_PGSP_QUEUE_HEAD(0)`, `kgspSetCmdQueueHead_TU102`)
    // rung only once the FSP was asked to start the GSP.
    OrderRule {
        name: "fsp-cot-before-gsp-doorbell",
        first: Marker::any(Kind::Bar0Write, FSP_QUEUE_HEAD),
        then: Marker::any(Kind::Bar0Write, GSP_QUEUE_HEAD),
    },
    // OpenRM kern_gpu_gb202.c reads NV_EP_PCFG_GPU_VSEC_DEBUG_SEC_2 (BAR_FIREWALL_ENGAGE):
    // a GB20x driver checks the BAR firewall in config space before trusting BAR0.
    OrderRule {
        name: "bar-firewall-before-boot42",
        first: Marker::any(Kind::CfgRead, CFG_DEBUG_SEC_2),
        then: Marker::any(Kind::Bar0Read, PMC_BOOT_42),
    },
];

fn reference_published() -> PathBuf {
    let root = match std::env::var_os("NVBARE_REFERENCE") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference"),
    };
    root.join("open-gpu-kernel-modules-570.144/src/common/inc/swref/published")
}

fn out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("trace-conformance");
    std::fs::create_dir_all(&d).expect("the output directory");
    d
}

fn write_trace(trace: &Trace, names: &RegisterNames, file: &str) -> PathBuf {
    let path = out_dir().join(file);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("a trace file"));
    trace
        .write_text(&mut f, names)
        .expect("the trace is written");
    path
}

/// tinygrad's boot and round trip, traced.
fn tinygrad_trace() -> Option<Arc<Trace>> {
    let tg = tinygrad_support::tinygrad("trace_conformance_with_tinygrad")?;
    let trace = Arc::new(Trace::new());
    let mut config = ServeConfig::new(SimChip::Gb202, "127.0.0.1:0".parse().unwrap(), 1);
    config.trace = Some(trace.clone());
    let run = tg.run("trace", config, "roundtrip.py", &["one"], &[], TINYGRAD_RUN);
    println!("{}", run.summary());
    assert!(
        run.ok && run.stdout.contains("ROUNDTRIP ok"),
        "{}",
        run.dump()
    );
    let faults: Vec<_> = run
        .warnings
        .iter()
        .filter(|w| w.contains("IOMMU"))
        .collect();
    assert!(faults.is_empty(), "tinygrad's DMA faulted: {faults:#?}");
    Some(trace)
}

/// nvbare's boot, copy round trip, kernel and teardown (`nvbare demo --backend remote`),
/// traced.
fn nvbare_trace(fw: &PathBuf) -> Arc<Trace> {
    let trace = Arc::new(Trace::new());
    let mut config = ServeConfig::new(SimChip::Gb202, "127.0.0.1:0".parse().unwrap(), 1);
    config.trace = Some(trace.clone());
    let server = serve(config).expect("serve the simulator");
    server.gpus()[0].set_firmware_dir(fw);
    let addr = server.addr().to_string();
    let r = run(nvbare(
        Some(fw),
        &["demo", "--backend", "remote", "--device", &addr],
    ));
    r.succeeded();
    let faults: Vec<String> = server.gpus()[0]
        .log()
        .warnings()
        .into_iter()
        .filter(|w| w.contains("IOMMU"))
        .collect();
    assert!(faults.is_empty(), "nvbare's DMA faulted: {faults:#?}");
    server.stop();
    trace
}

fn report(diffs: &[Difference], explained: &Explained) -> String {
    diffs
        .iter()
        .map(|d| {
            format!(
                "{}\n    {}\n    -> {}\n",
                d.key,
                d.detail,
                explained.reason(&d.key).unwrap_or("UNEXPLAINED")
            )
        })
        .collect()
}

#[test]
fn tinygrad_and_nvbare_boot_a_gb202_alike_or_the_difference_is_explained() {
    let explained = Explained::parse(EXPLAINED).expect("tests/data/trace-explained.txt");
    // tinygrad first: without it (or its firmware) the test skips, or fails under
    // NVBARE_REQUIRE_TINYGRAD=1.
    let Some(tg) = tinygrad_trace() else { return };
    let Some(fw) = firmware("gb202") else { return };
    let nv = nvbare_trace(&fw);
    let names = RegisterNames::from_published(&reference_published(), "gb202");
    let tg_file = write_trace(&tg, &names, "tinygrad.trace");
    let nv_file = write_trace(&nv, &names, "nvbare.trace");
    let diffs = differences(
        ("tinygrad", &tg.events()),
        ("nvbare", &nv.events()),
        RULES,
        &names,
    );
    let text = report(&diffs, &explained);
    let diff_file = out_dir().join("differences.txt");
    std::fs::write(&diff_file, &text).expect("the difference list is written");
    println!(
        "traces: {} and {}; {} differences ({}):\n{text}",
        tg_file.display(),
        nv_file.display(),
        diffs.len(),
        diff_file.display()
    );
    let verdict = explained.check(&diffs);
    // Timing-dependent differences come and go between runs; any other explained one that
    // went away should go from the list.
    for k in &verdict.stale {
        if !explained
            .reason(k)
            .is_some_and(|r| r.starts_with("timing:"))
        {
            println!("explained but no longer different (drop the line): {k}");
        }
    }
    // Whether a wait reads its register once or polls it depends only on how fast the
    // simulated FSP or GSP answers on a loaded machine: a new poll-only difference is shown,
    // never a failure. Every register one side touches and the other does not, and every
    // order rule, still has to be explained.
    let (timing, unexplained): (Vec<_>, Vec<_>) = verdict
        .unexplained
        .iter()
        .partition(|d| d.key.starts_with("bar0-poll-only "));
    for d in &timing {
        println!("timing-dependent, not a failure: {}: {}", d.key, d.detail);
    }
    assert!(
        unexplained.is_empty(),
        "{} new unexplained difference(s) between tinygrad's and nvbare's GB202 boot; explain \
         each in host/tests/data/trace-explained.txt (and CONFORMANCE.md) or fix \
         nvbare:\n{}",
        unexplained.len(),
        unexplained
            .iter()
            .map(|d| format!("  {}: {}", d.key, d.detail))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
