//! A minimal GSP-RM driver written in the test, from OpenRM's layouts and sources (not from
//! nvbare's boot or RPC code), to drive the simulated FSP and GSP: it lays out the boot
//! structures as `kgspCalculateFbLayout_GH100`, `kgspSetupGspFmcArgs_GH100`,
//! `kgspSetupLibosInitArgs` and `GspMsgQueuesInit` do, sends the COT as
//! `kfspSendPacket_GH100` does, waits as `kgspBootstrap_GH100` does and speaks the message
//! queue protocol of `message_queue_cpu.c`. Structures come from `nvbare_gsp::abi` (checked
//! against NVIDIA's headers); firmware sections from `nvbare_gsp::firmware`'s parsers.
//!
//! Here: the rig, its host memory and the chips' facts. [`structures`] builds the boot
//! structures, [`fsp`] drives the FSP path to GSP_INIT_DONE, [`queue`] speaks the message
//! queues, [`booter`] and [`turing`] drive the booter path, [`rm`] holds the RM helpers.
#![allow(dead_code)]

pub mod booter;
pub mod fsp;
pub mod queue;
pub mod rm;
pub mod structures;
pub mod turing;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use nvbare_core::hal::{Wait, poll_until};
use nvbare_gsp::abi::*;
use nvbare_gsp::firmware::{FmcSignatureScheme, GspSignatureTarget};
use nvbare_sim::platform::SimClock;
use nvbare_sim::{FaultPlan, SimChip, SimGpu};
use zerocopy::{FromZeros, IntoBytes};

pub const PAGE: usize = 4096;
pub const QUEUE_SIZE: usize = 0x4_0000;
/// `NV_PFSP_*` of channel 0 (hopper/gh100 dev_fsp_pri.h).
pub const FSP_EMEMC: u32 = 0x8f_2ac0;
pub const FSP_EMEMD: u32 = 0x8f_2ac4;
pub const FSP_QUEUE_HEAD: u32 = 0x8f_2c00;
pub const FSP_QUEUE_TAIL: u32 = 0x8f_2c04;
pub const FSP_MSGQ_HEAD: u32 = 0x8f_2c80;
pub const FSP_MSGQ_TAIL: u32 = 0x8f_2c84;
/// GSP falcon registers (dev_gsp.h, dev_falcon_v4.h, dev_riscv_pri.h).
pub const GSP_MAILBOX0: u32 = 0x11_0040;
pub const GSP_MAILBOX1: u32 = 0x11_0044;
pub const GSP_HWCFG2: u32 = 0x11_00f4;
pub const GSP_QUEUE_HEAD0: u32 = 0x11_0c00;
pub const GSP_RISCV_CPUCTL: u32 = 0x11_1388;
pub const WPR2_ADDR_HI: u32 = 0x1f_a828;

/// The firmware directory, or `None` (with a note) when the files are absent; panics when
/// `NVBARE_REQUIRE_FIRMWARE=1` asks for them.
pub fn firmware_dir(chip: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("NVBARE_FIRMWARE_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/nvbare/firmware"))
        })?;
    // The FSP path boots with the FMC, the booter path with the booters.
    let files: &[&str] = match chip {
        "ga102" | "ad102" => &["booter_load", "booter_unload", "gsp", "bootloader"],
        // TU10x and GA100 run FWSEC through the generic bootloader.
        "ga100" | "tu102" => &[
            "booter_load",
            "booter_unload",
            "gsp",
            "bootloader",
            "gen_bootloader",
        ],
        _ => &["fmc", "gsp", "bootloader"],
    };
    let have = files.iter().all(|n| {
        dir.join(format!("nvidia/{chip}/gsp/{n}-570.144.bin"))
            .is_file()
    });
    if have {
        return Some(dir);
    }
    if std::env::var("NVBARE_REQUIRE_FIRMWARE").as_deref() == Ok("1") {
        panic!(
            "NVBARE_REQUIRE_FIRMWARE=1 but the {chip} firmware is not under {}",
            dir.display()
        );
    }
    eprintln!(
        "SKIPPED: no 570.144 firmware for {chip} under {} (run `nvbare firmware fetch --chip all`)",
        dir.display()
    );
    None
}

/// What a chip's OpenRM sends (kern_fsp_gh100.c, kernel_gsp_gh100.c, g_kernel_gsp_nvoc.h,
/// mem_mgr_gb100.c, kern_pmu.c; tinygrad 0.14's GB202 values agree).
#[derive(Clone, Copy, Debug)]
pub struct ChipFacts {
    pub cot_version: u16,
    pub frts_vidmem_offset: u64,
    pub pmu_reserved: u32,
    pub non_wpr_heap: u64,
    pub signature: GspSignatureTarget,
    pub scheme: FmcSignatureScheme,
}

pub fn facts(chip: SimChip) -> ChipFacts {
    match chip {
        SimChip::Gh100 => ChipFacts {
            cot_version: 1,
            frts_vidmem_offset: 0x20_0000,
            pmu_reserved: 0,
            non_wpr_heap: 0x20_0000,
            signature: GspSignatureTarget::Gh100,
            scheme: FmcSignatureScheme::Rsa3072,
        },
        SimChip::Gb202 => ChipFacts {
            cot_version: 2,
            frts_vidmem_offset: 0x1c0_0000,
            pmu_reserved: 0x182_0000,
            non_wpr_heap: 0x22_0000,
            signature: GspSignatureTarget::Gb20x,
            scheme: FmcSignatureScheme::EcdsaP384,
        },
        // nouveau r570_wpr_libos3_gb10x: GB20x's PMU reserve and FRTS, GH100's non-WPR heap.
        SimChip::Gb100 => ChipFacts {
            cot_version: 2,
            frts_vidmem_offset: 0x1c0_0000,
            pmu_reserved: 0x182_0000,
            non_wpr_heap: 0x20_0000,
            signature: GspSignatureTarget::Gb10x,
            scheme: FmcSignatureScheme::EcdsaP384,
        },
        SimChip::Ga102 | SimChip::Ad102 | SimChip::Ga100 | SimChip::Tu102 => {
            panic!(
                "the FSP rig boots Hopper and Blackwell; the booter chips boot in booter_boot.rs"
            )
        }
    }
}

/// `_kgspCalculateFwHeapSize` with gsp_fw_heap.h's constants, written again here.
pub fn heap_size(fb: u64) -> u64 {
    let mib = 1u64 << 20;
    let gib = fb.div_ceil(1 << 30);
    let h = (22 + 14) * mib + (96 * 1024 * gib).div_ceil(mib) * mib + 96 * mib;
    // At least the override minimum; OpenRM sets no top on the calculated size.
    h.max(88 * mib)
}

/// One allocation of host memory the device can reach.
#[derive(Clone, Copy, Debug)]
pub struct Buf {
    pub bus: u64,
    pub len: usize,
}

/// The test's driver.
pub struct Rig {
    pub chip: SimChip,
    pub gpu: Arc<SimGpu>,
    pub clock: SimClock,
    pub fw: PathBuf,
    pub fmc_file: Vec<u8>,
    pub boot_params: Buf,
    pub fmc: Buf,
    pub wpr_meta: Buf,
    pub libos: Buf,
    pub rm_args: Buf,
    pub logs: Vec<(&'static str, Buf)>,
    pub shared: Buf,
    /// The radix3 tree and image, and how many table pages precede the image.
    pub radix: Buf,
    pub radix_tables: usize,
    /// Ring the doorbell after each command (GspMsgQueueSendCommand's caller does).
    pub ring: bool,
    /// Command queue: our write pointer and sequence number.
    cmd_wp: u32,
    cmd_seq: u32,
    /// Status queue: our read pointer and expected sequence number.
    stat_rp: u32,
    stat_seq: u32,
    /// Wall time from sending the COT to GSP_INIT_DONE.
    pub boot_time: Option<std::time::Duration>,
}

/// A wait of at most `ms` milliseconds that sleeps 100 us between polls.
// TIMEOUT: the simulated boot steps take well under a millisecond each on an idle machine;
// seconds leave room for a loaded 2-core CI box running tests in parallel.
pub fn wait(what: &'static str, ms: u64) -> Wait {
    Wait::pausing(what, ms * 1_000_000, 100_000)
}

impl Rig {
    /// A rig over a fresh GPU, or `None` when the firmware is absent.
    pub fn new(chip: SimChip, faults: FaultPlan) -> Option<Rig> {
        let fw = firmware_dir(chip.spec().name)?;
        let gpu = Arc::new(SimGpu::with_faults(chip, faults).expect("a simulated GPU"));
        gpu.set_firmware_dir(&fw);
        // The booter path has no FMC.
        let fmc_file = match chip.spec().boot {
            nvbare_sim::chip::BootModel::Booter => Vec::new(),
            _ => std::fs::read(fw.join(format!("nvidia/{}/gsp/fmc-570.144.bin", chip.spec().name)))
                .ok()?,
        };
        let z = Buf { bus: 0, len: 0 };
        Some(Rig {
            chip,
            gpu,
            clock: SimClock::default(),
            fw,
            fmc_file,
            boot_params: z,
            fmc: z,
            wpr_meta: z,
            libos: z,
            rm_args: z,
            logs: Vec::new(),
            shared: z,
            radix: z,
            radix_tables: 0,
            ring: true,
            cmd_wp: 0,
            cmd_seq: 0,
            stat_rp: 0,
            stat_seq: 0,
            boot_time: None,
        })
    }

    pub fn alloc(&self, len: usize) -> Buf {
        let a = self.gpu.bus().sysmem.alloc(len).expect("host memory");
        Buf {
            bus: a.bus,
            len: a.len,
        }
    }

    pub fn write(&self, at: u64, data: &[u8]) {
        self.gpu.bus().sysmem.write(at, data).expect("a DMA write");
    }

    pub fn read(&self, at: u64, out: &mut [u8]) {
        self.gpu.bus().sysmem.read(at, out).expect("a DMA read");
    }

    pub fn read_u32(&self, at: u64) -> u32 {
        let mut b = [0u8; 4];
        self.read(at, &mut b);
        u32::from_le_bytes(b)
    }

    pub fn file(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.fw.join(format!(
            "nvidia/{}/gsp/{name}-570.144.bin",
            self.chip.spec().name
        )))
        .expect("firmware")
    }
}
