//! The FSP boot path's driver: the FMC and its boot parameters (`kgspSetupGspFmcArgs_GH100`),
//! the COT sent over EMEM channel 0 (`kfspSendPacket_GH100`, `kfspReadPacket_GH100`), the wait
//! for the lockdown release (`kgspBootstrap_GH100`) and GSP_INIT_DONE.

use std::time::Instant;

use nvbare_core::hal::poll_until;
use nvbare_gsp::abi::*;
use nvbare_gsp::firmware::FmcImage;
use zerocopy::{FromZeros, IntoBytes};

use super::{
    FSP_EMEMC, FSP_EMEMD, FSP_MSGQ_HEAD, FSP_MSGQ_TAIL, FSP_QUEUE_HEAD, FSP_QUEUE_TAIL, GSP_HWCFG2,
    GSP_MAILBOX0, PAGE, Rig, facts, heap_size, wait,
};

impl Rig {
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
        self.queue_init_rpcs();
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
