//! The boot structures both paths build (`GspMsgQueuesInit`, `kgspSetupLibosInitArgs`, the
//! WPR meta of `kgspCalculateFbLayout_*`): the GSP-RM image in a radix3 tree, bootloader,
//! signature, shared queue memory, RMARGS, the libos arguments; the sysmem flush buffer; resets
//! that start the queues over; and the two init RPCs' payloads (`GspSystemInfo`, the packed
//! registry).

use nvbare_core::hal::poll_until;
use nvbare_gsp::abi::*;
use nvbare_gsp::firmware::{GspRmImage, GspSignatureTarget, RiscvBootloader};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::{PAGE, QUEUE_SIZE, Rig, wait};

impl Rig {
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
        self.queue_init_rpcs();
    }

    /// Queues the two init RPCs the driver sends before GSP-RM boots: system info and the
    /// registry (the keys nvbare sets).
    pub fn queue_init_rpcs(&mut self) {
        self.queue_system_info();
        self.queue_registry(&[("RMForcePcieConfigSave", 1), ("RMSecBusResetEnable", 1)]);
    }

    /// Starts the queues over without resetting the GPU (the boot structures stay), with the
    /// two init RPCs queued again: ready to boot again after an unload.
    pub fn requeue_keeping_gpu(&mut self) {
        self.reset_queues_only_keeping_gpu();
        self.queue_init_rpcs();
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
}
