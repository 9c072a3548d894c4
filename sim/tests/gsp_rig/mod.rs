//! A minimal GSP-RM driver written in the test, from OpenRM's layouts and sources (not from
//! nvbare's boot or RPC code), to drive the simulated FSP and GSP: it lays out the boot
//! structures as `kgspCalculateFbLayout_GH100`, `kgspSetupGspFmcArgs_GH100`,
//! `kgspSetupLibosInitArgs` and `GspMsgQueuesInit` do, sends the COT as
//! `kfspSendPacket_GH100` does, waits as `kgspBootstrap_GH100` does and speaks the message
//! queue protocol of `message_queue_cpu.c`. Structures come from `nvbare_gsp::abi` (checked
//! against NVIDIA's headers); firmware sections from `nvbare_gsp::firmware`'s parsers.
#![allow(dead_code)]

pub mod booter;
pub mod queue;
pub mod rm;
pub mod turing;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use nvbare_core::hal::{Wait, poll_until};
use nvbare_gsp::abi::*;
use nvbare_gsp::firmware::{
    FmcImage, FmcSignatureScheme, GspRmImage, GspSignatureTarget, RiscvBootloader,
};
use nvbare_sim::platform::SimClock;
use nvbare_sim::{FaultPlan, SimChip, SimGpu};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

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

    /// Waits for the FSP (`_kfspWaitBootCond_GH100`), turns on bus mastering and builds
    /// every boot structure, the two init RPCs queued.
    pub fn prepare(&mut self) {
        let spec = self.chip.spec();
        poll_until(
            &self.clock,
            wait("FSP boot (NV_THERM_I2CS_SCRATCH == 0xff)", 5000),
            || (self.gpu.bar0_read(spec.fsp_ready_scratch) == 0xff).then_some(()),
        )
        .expect("the FSP boots");
        assert!(
            self.gpu.config_write(4, 2, 0x6),
            "memory decode and bus mastering on"
        );
        self.program_sysmem_flush();
        let f = facts(self.chip);
        let fmc = FmcImage::parse(&self.fmc_file, f.scheme).expect("the FMC file");
        self.fmc = self.alloc(fmc.image.len());
        self.write(self.fmc.bus, fmc.image);
        self.build_structures(f.signature, |rig, m| {
            // GspFwWprMeta as kgspCalculateFbLayout_GH100 fills it: sizes, offsets 0.
            m.non_wpr_heap_size = f.non_wpr_heap;
            m.gsp_fw_heap_size = heap_size(rig.chip.spec().vram_bytes);
            m.frts_size = 0x10_0000;
            m.vga_workspace_size = 0x2_0000;
            m.pmu_reserved_size = f.pmu_reserved;
        });
        // GSP_FMC_BOOT_PARAMS (kgspSetupGspFmcArgs_GH100).
        let mut bp = GspFmcBootParams::new_zeroed();
        bp.boot_gsp_rm_params.target = GSP_DMA_TARGET_COHERENT_SYSTEM;
        bp.boot_gsp_rm_params.gsp_rm_desc_size = 256;
        bp.boot_gsp_rm_params.gsp_rm_desc_offset = self.wpr_meta.bus;
        bp.boot_gsp_rm_params.b_is_gsp_rm_boot = 1;
        bp.gsp_rm_params.target = GSP_DMA_TARGET_COHERENT_SYSTEM;
        bp.gsp_rm_params.boot_args_offset = self.libos.bus;
        self.boot_params = self.alloc(PAGE);
        self.write(self.boot_params.bus, bp.as_bytes());
        self.queue_system_info();
        self.queue_registry(&[("RMForcePcieConfigSave", 1), ("RMSecBusResetEnable", 1)]);
    }

    /// The structures both boot paths build: the GSP-RM image in a radix3 tree, bootloader,
    /// signature, the WPR meta (`layout` fills the path's own fields), shared queue memory,
    /// RMARGS and the libos arguments.
    pub fn build_structures(
        &mut self,
        signature: GspSignatureTarget,
        layout: impl FnOnce(&Rig, &mut GspFwWprMeta),
    ) {
        // GSP-RM image in a radix3 tree (LIBOS_MEMORY_REGION_RADIX3).
        let gsp_file = self.file("gsp");
        let gsp = GspRmImage::parse(&gsp_file, signature).expect("the GSP-RM file");
        let pages = gsp.image.len().div_ceil(PAGE);
        let l2 = pages.div_ceil(512);
        let l1 = l2.div_ceil(512);
        let tables = 1 + l1 + l2;
        let radix = self.alloc((tables + pages) * PAGE);
        let page = |i: usize| radix.bus + (i * PAGE) as u64;
        let mut t = vec![0u8; tables * PAGE];
        let mut put =
            |slot: usize, v: u64| t[slot * 8..slot * 8 + 8].copy_from_slice(&v.to_le_bytes());
        for i in 0..l1 {
            put(i, page(1 + i));
        }
        for i in 0..l2 {
            put(512 + i, page(1 + l1 + i));
        }
        for i in 0..pages {
            put(512 * (1 + l1) + i, page(tables + i));
        }
        self.write(radix.bus, &t);
        self.write(page(tables), gsp.image);
        (self.radix, self.radix_tables) = (radix, tables);
        let boot_file = self.file("bootloader");
        let boot = RiscvBootloader::parse(&boot_file).expect("the bootloader file");
        let bl = self.alloc(boot.image.len());
        self.write(bl.bus, boot.image);
        let sig = self.alloc(gsp.signature.len());
        self.write(sig.bus, gsp.signature);
        let mut m = GspFwWprMeta::new_zeroed();
        m.magic = GSP_FW_WPR_META_MAGIC;
        m.revision = GSP_FW_WPR_META_REVISION;
        m.sysmem_addr_of_radix3_elf = radix.bus;
        m.size_of_radix3_elf = gsp.image.len() as u64;
        m.sysmem_addr_of_bootloader = bl.bus;
        m.size_of_bootloader = boot.image.len() as u64;
        m.bootloader_code_offset = u64::from(boot.desc.monitor_code_offset);
        m.bootloader_data_offset = u64::from(boot.desc.monitor_data_offset);
        m.bootloader_manifest_offset = u64::from(boot.desc.manifest_offset);
        m.sysmem_addr_of_signature = sig.bus;
        m.size_of_signature = gsp.signature.len() as u64;
        layout(self, &mut m);
        self.wpr_meta = self.alloc(PAGE);
        self.write(self.wpr_meta.bus, m.as_bytes());
        // Shared queue memory (GspMsgQueuesInit): page table, command queue, status queue.
        let queue_pages = 2 * QUEUE_SIZE / PAGE;
        let pte_count = queue_pages + (queue_pages * 8).div_ceil(PAGE);
        let pt_size = (pte_count * 8).next_multiple_of(PAGE);
        self.shared = self.alloc(pt_size + 2 * QUEUE_SIZE);
        let ptes: Vec<u8> = (0..pte_count)
            .flat_map(|i| (self.shared.bus + (i * PAGE) as u64).to_le_bytes())
            .collect();
        self.write(self.shared.bus, &ptes);
        // msgqTxCreate(commandQueue, ...): rxHdrOff 32, entryOff 0x1000.
        let tx = MsgqTxHeader {
            version: 0,
            size: QUEUE_SIZE as u32,
            msg_size: 0x1000,
            msg_count: ((QUEUE_SIZE - 0x1000) / 0x1000) as u32,
            write_ptr: 0,
            flags: 1,
            rx_hdr_off: 32,
            entry_off: 0x1000,
        };
        self.write(self.cmdq(), tx.as_bytes());
        let mut args = GspArgumentsCached::new_zeroed();
        args.message_queue_init_arguments = MessageQueueInitArguments {
            shared_mem_phys_addr: self.shared.bus,
            page_table_entry_count: pte_count as u32,
            _pad0: 0,
            cmd_queue_offset: pt_size as u64,
            stat_queue_offset: (pt_size + QUEUE_SIZE) as u64,
        };
        self.rm_args = self.alloc(PAGE);
        self.write(self.rm_args.bus, args.as_bytes());
        // libos init args (kgspSetupLibosInitArgs): LOGINIT first, then the other logs, RMARGS.
        let id8 = |s: &str| s.bytes().fold(0u64, |a, c| a << 8 | u64::from(c));
        let mut entries = Vec::new();
        for name in ["LOGINIT", "LOGINTR", "LOGRM", "LOGMNOC", "LOGKRNL"] {
            let b = self.alloc(0x1_0000);
            self.logs.push((name, b));
            entries.push(LibosMemoryRegionInitArgument {
                id8: id8(name),
                pa: b.bus,
                size: 0x1_0000,
                kind: LIBOS_MEMORY_REGION_CONTIGUOUS,
                loc: LIBOS_MEMORY_REGION_LOC_SYSMEM,
                _pad0: [0; 6],
            });
        }
        entries.push(LibosMemoryRegionInitArgument {
            id8: id8("RMARGS"),
            pa: self.rm_args.bus,
            size: PAGE as u64,
            kind: LIBOS_MEMORY_REGION_CONTIGUOUS,
            loc: LIBOS_MEMORY_REGION_LOC_SYSMEM,
            _pad0: [0; 6],
        });
        self.libos = self.alloc(PAGE);
        self.write(self.libos.bus, entries.as_bytes());
    }

    /// Resets the GPU (FLR) and starts the queues over (the boot structures stay), with the
    /// two init RPCs queued again: ready for another COT.
    pub fn reset_and_requeue(&mut self) {
        self.reset_queues_only();
        self.queue_system_info();
        self.queue_registry(&[("RMForcePcieConfigSave", 1), ("RMSecBusResetEnable", 1)]);
    }

    /// Resets the GPU and empties the queues, queueing nothing.
    pub fn reset_queues_only(&mut self) {
        self.gpu.reset();
        assert!(self.gpu.config_write(4, 2, 0x6));
        let spec = self.chip.spec();
        poll_until(&self.clock, wait("FSP boot after reset", 5000), || {
            (self.gpu.bar0_read(spec.fsp_ready_scratch) == 0xff).then_some(())
        })
        .expect("the FSP boots");
        self.program_sysmem_flush();
        self.reset_queues_only_keeping_gpu();
    }

    /// Programs the sysmem flush buffer with a fresh page before GSP boots, as OpenRM does
    /// (kmemsysConstructEngine_IMPL; the address as it is, HI first,
    /// kmemsysProgramSysmemFlushBuffer_GH100 / _GB10B). A reset clears the registers.
    pub fn program_sysmem_flush(&mut self) {
        let page = self.alloc(4096);
        // GA10x/AD10x: bits 63:40 in HI, 39:8 in LO (kmemsysProgramSysmemFlushBuffer_GA100).
        let (hi_v, lo_v) = if self.chip.spec().sysmem_flush_shifted {
            ((page.bus >> 40) as u32, (page.bus >> 8) as u32)
        } else {
            ((page.bus >> 32) as u32, page.bus as u32)
        };
        for &(hi, lo) in self.chip.spec().sysmem_flush {
            self.gpu.bar0_write(hi, hi_v);
            self.gpu.bar0_write(lo, lo_v);
        }
    }

    /// Empties the queues without touching the GPU (a driver reload).
    pub fn reset_queues_only_keeping_gpu(&mut self) {
        self.write(self.cmdq() + 16, &0u32.to_le_bytes());
        self.write(self.cmdq() + 32, &0u32.to_le_bytes());
        self.write(self.statq(), &[0u8; 64]);
        (self.cmd_wp, self.cmd_seq, self.stat_rp, self.stat_seq) = (0, 0, 0, 0);
    }

    /// Reads the WPR meta back, lets `f` change it, writes it again.
    pub fn edit_wpr_meta(&self, f: impl FnOnce(&mut GspFwWprMeta)) {
        let mut raw = [0u8; 256];
        self.read(self.wpr_meta.bus, &mut raw);
        let mut m = GspFwWprMeta::read_from_bytes(&raw).expect("meta");
        f(&mut m);
        self.write(self.wpr_meta.bus, m.as_bytes());
    }

    /// The bytes of log buffer `name`.
    pub fn log_buffer(&self, name: &str) -> Vec<u8> {
        let b = self
            .logs
            .iter()
            .find(|(n, _)| *n == name)
            .expect("a log buffer")
            .1;
        let mut out = vec![0u8; 0x1_0000];
        self.read(b.bus, &mut out);
        out
    }

    pub fn cmdq(&self) -> u64 {
        self.shared.bus + PAGE as u64
    }

    pub fn statq(&self) -> u64 {
        self.cmdq() + QUEUE_SIZE as u64
    }

    /// `GspSystemInfo` of the PCI function, read from its config space.
    pub fn system_info(&self) -> GspSystemInfo {
        let c = |o| u64::from(self.gpu.config_read(o, 4));
        GspSystemInfo {
            gpu_phys_addr: c(0x10) & !0xf,
            gpu_phys_fb_addr: (c(0x14) & !0xf) | c(0x18) << 32,
            gpu_phys_inst_addr: (c(0x1c) & !0xf) | c(0x20) << 32,
            // NV_PCFG at 0x88000 before Hopper, NV_EP_PCFG_GPU at 0x92000 from Hopper on.
            pci_config_mirror_base: match self.chip.spec().boot {
                nvbare_sim::chip::BootModel::Booter => 0x8_8000,
                _ => 0x9_2000,
            },
            pci_config_mirror_size: 0x1000,
            pci_device_id: c(0) as u32,
            pci_sub_device_id: c(0x2c) as u32,
            pci_revision_id: c(0x08) as u32 & 0xff,
            max_user_va: 0x7fff_ffff_f000,
            b_is_passthru: 1,
            ..Default::default()
        }
    }

    pub fn queue_system_info(&mut self) {
        let s = self.system_info();
        self.send(RpcFunction::GspSetSystemInfo.as_u32(), s.as_bytes());
    }

    /// A `PACKED_REGISTRY_TABLE` of DWORD keys (g_os_nvoc.h).
    pub fn registry_table(keys: &[(&str, u32)]) -> Vec<u8> {
        let head = core::mem::size_of::<PackedRegistryTable>();
        let entry = core::mem::size_of::<PackedRegistryEntry>();
        let mut names = Vec::new();
        let mut entries = Vec::new();
        for (k, v) in keys {
            let e = PackedRegistryEntry {
                name_offset: (head + keys.len() * entry + names.len()) as u32,
                entry_type: REGISTRY_TABLE_ENTRY_TYPE_DWORD,
                _pad0: [0; 3],
                data: *v,
                length: 4,
            };
            entries.extend_from_slice(e.as_bytes());
            names.extend_from_slice(k.as_bytes());
            names.push(0);
        }
        let t = PackedRegistryTable {
            size: (head + entries.len() + names.len()) as u32,
            num_entries: keys.len() as u32,
        };
        [t.as_bytes(), &entries, &names].concat()
    }

    pub fn queue_registry(&mut self, keys: &[(&str, u32)]) {
        let t = Self::registry_table(keys);
        self.send(RpcFunction::SetRegistry.as_u32(), &t);
    }

    /// The COT payload for this chip (kfspPrepareBootCommands_GH100, kfspSetupGspImages).
    pub fn cot(&self) -> NvdmPayloadCot {
        let f = facts(self.chip);
        let fmc = FmcImage::parse(&self.fmc_file, f.scheme).expect("the FMC file");
        let mut c = NvdmPayloadCot {
            version: f.cot_version,
            size: core::mem::size_of::<NvdmPayloadCot>() as u16,
            gsp_fmc_sysmem_offset: self.fmc.bus,
            frts_vidmem_offset: f.frts_vidmem_offset,
            frts_vidmem_size: 0x10_0000,
            gsp_boot_args_sysmem_offset: self.boot_params.bus,
            ..Default::default()
        };
        let mut hash = [0u32; 12];
        hash.as_mut_bytes().copy_from_slice(&fmc.hash);
        c.hash384 = hash;
        let mut pk = [0u32; 96];
        pk.as_mut_bytes()[..fmc.public_key.len()].copy_from_slice(fmc.public_key);
        c.public_key = pk;
        let mut sg = [0u32; 96];
        sg.as_mut_bytes()[..fmc.signature.len()].copy_from_slice(fmc.signature);
        c.signature = sg;
        c
    }

    /// Sends one NVDM message over EMEM channel 0 (kfspSendPacket_GH100) and reads the reply
    /// (kfspReadPacket_GH100): the reply's dwords.
    pub fn fsp_message(&self, nvdm_type: u8, payload: &[u8]) -> Vec<u32> {
        let mut packet = vec![
            (1u32 << 31) | (1 << 30),
            0x7e | (0x10de << 8) | (u32::from(nvdm_type) << 24),
        ];
        for c in payload.chunks(4) {
            let mut d = [0u8; 4];
            d[..c.len()].copy_from_slice(c);
            packet.push(u32::from_le_bytes(d));
        }
        self.fsp_packet(&packet)
    }

    pub fn fsp_packet(&self, packet: &[u32]) -> Vec<u32> {
        let g = &self.gpu;
        poll_until(&self.clock, wait("FSP command queue empty", 2000), || {
            (g.bar0_read(FSP_QUEUE_HEAD) == g.bar0_read(FSP_QUEUE_TAIL)).then_some(())
        })
        .expect("the FSP takes packets");
        g.bar0_write(FSP_EMEMC, 1 << 24);
        for d in packet {
            g.bar0_write(FSP_EMEMD, *d);
        }
        let ememc = g.bar0_read(FSP_EMEMC);
        assert_eq!(
            ((ememc >> 2) & 0x3f) + ((ememc >> 8) & 0xff) * 64,
            packet.len() as u32,
            "EMEMC auto-incremented"
        );
        g.bar0_write(FSP_QUEUE_TAIL, (packet.len() as u32 - 1) * 4);
        g.bar0_write(FSP_QUEUE_HEAD, 0);
        poll_until(&self.clock, wait("FSP response", 5000), || {
            (g.bar0_read(FSP_MSGQ_HEAD) != g.bar0_read(FSP_MSGQ_TAIL)).then_some(())
        })
        .expect("the FSP answers");
        let (head, tail) = (g.bar0_read(FSP_MSGQ_HEAD), g.bar0_read(FSP_MSGQ_TAIL));
        let words = ((tail - head) / 4 + 1) as usize;
        g.bar0_write(FSP_EMEMC, 1 << 25);
        let reply = (0..words).map(|_| g.bar0_read(FSP_EMEMD)).collect();
        g.bar0_write(FSP_MSGQ_TAIL, head);
        reply
    }

    /// Sends the COT; the reply's errorCode.
    pub fn send_cot(&mut self) -> (Vec<u32>, u32) {
        let cot = self.cot();
        let reply = self.fsp_message(0x14, cot.as_bytes());
        let code = reply.get(4).copied().unwrap_or(u32::MAX);
        (reply, code)
    }

    /// Waits as kgspBootstrap_GH100: target mask released, then lockdown released or an
    /// FMC error in MAILBOX0 (`Err(mailbox0)`).
    pub fn wait_lockdown(&self) -> Result<(), u32> {
        let g = &self.gpu;
        poll_until(&self.clock, wait("GSP target mask release", 5000), || {
            let v = g.bar0_read(GSP_HWCFG2);
            (v != 0 && (v & 0xffff_ff00) != 0xbadf_4100).then_some(())
        })
        .expect("the target mask is released");
        poll_until(
            &self.clock,
            wait("lockdown release or FMC error", 5000),
            || {
                let mb = g.bar0_read(GSP_MAILBOX0);
                let locked = g.bar0_read(GSP_HWCFG2) & (1 << 13) != 0;
                (!locked || mb != 0).then_some(())
            },
        )
        .expect("the FMC finishes");
        match g.bar0_read(GSP_MAILBOX0) {
            0 => Ok(()),
            e => Err(e),
        }
    }

    /// prepare, COT, lockdown, GSP_INIT_DONE.
    pub fn boot(&mut self) {
        self.prepare();
        self.boot_after_prepare();
    }

    /// COT, lockdown, GSP_INIT_DONE.
    pub fn boot_after_prepare(&mut self) {
        let start = Instant::now();
        let (_, code) = self.send_cot();
        assert_eq!(
            code,
            0,
            "FSP errorCode; log: {:?}",
            self.gpu.log().warnings()
        );
        self.wait_lockdown()
            .unwrap_or_else(|e| panic!("FMC error {e:#x}: {:?}", self.gpu.log().warnings()));
        let (h, _) = self.wait_for(RpcEvent::GspInitDone.as_u32(), 5000);
        assert_eq!(h.rpc_result, 0);
        self.boot_time = Some(start.elapsed());
    }
}
