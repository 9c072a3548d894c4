//! The booter path of the test's driver on Turing (TU102), written from OpenRM's Turing
//! sources (not nvbare's boot code): no core select and scrubbing seen in `DMACTL`
//! (`kflcnReset_TU102`, `_kflcnMemScrubbingFinished`), FWSEC with a version-2 descriptor
//! through the generic bootloader (`s_prepareHsFalconWithLoader`, kernel_gsp_falcon_tu102.c),
//! the booter copied by PIO (`s_prepareHsFalconDirect`), no ucode fuses (signature for fuse
//! version 0), the RISC-V state in `RISCV_CORE_SWITCH_RISCV_STATUS` (`kflcnIsRiscvActive_TU102`).

use super::booter::*;
use super::*;
use nvbare_gsp::firmware::{GenericBootloader, HsUcode};
use nvbare_gsp::sequencer::SequencerStep;
use nvbare_gsp::vbios::{FwsecDesc, parse as parse_vbios};

/// `NV_PRISCV_RISCV_CORE_SWITCH_RISCV_STATUS` (tu102 dev_riscv_pri.h 0x240, RISC-V base +
/// 0x1000).
pub const CORE_SWITCH_RISCV_STATUS: u32 = 0x1240;
/// `FBIF_TRANSCFG(4)`: the generic bootloader's DMA context.
const TRANSCFG4: u32 = TRANSCFG0 + 16;

/// The code and data buffers of a version-2 FWSEC and the `RM_FLCN_BL_DMEM_DESC` for them.
pub struct LoaderSetup {
    /// `RM_FLCN_BL_DMEM_DESC` (84 bytes).
    pub desc: Vec<u8>,
    /// The loader's code, padded to 256 bytes.
    pub code: Vec<u8>,
    /// `blStartTag`.
    pub start_tag: u32,
}

impl Rig {
    /// `kflcnReset_TU102`: the reset pulse, then the scrub in `DMACTL` (1, 2). No core select.
    pub fn falcon_reset_turing(&self, base: u32) {
        self.gpu.bar0_write(base + ENGINE, 1);
        self.gpu.bar0_write(base + ENGINE, 0);
        poll_until(&self.clock, wait("falcon scrub (DMACTL)", 5000), || {
            (self.gpu.bar0_read(base + DMACTL) & 0b110 == 0).then_some(())
        })
        .expect("scrubbing ends");
    }

    fn pio(&self, base: u32, imem: bool, dst: u32, tag: u32, secure: bool, bytes: &[u8]) {
        let (c, d) = if imem { (IMEMC, IMEMD) } else { (DMEMC, DMEMD) };
        self.gpu
            .bar0_write(base + c, dst | (1 << 24) | u32::from(secure) << 28);
        for (i, w) in bytes.chunks(4).enumerate() {
            if imem && i % 64 == 0 {
                self.gpu
                    .bar0_write(base + IMEMT, (tag >> 8) + (i / 64) as u32);
            }
            self.gpu
                .bar0_write(base + d, u32::from_le_bytes(w.try_into().unwrap()));
        }
    }

    fn start_and_halt(&self, base: u32, mailbox: (u32, u32)) -> u32 {
        self.gpu.bar0_write(base + MAILBOX0, mailbox.0);
        self.gpu.bar0_write(base + MAILBOX1, mailbox.1);
        self.gpu.bar0_write(base + CPUCTL, 1 << 1);
        poll_until(&self.clock, wait("falcon halt", 5000), || {
            (self.gpu.bar0_read(base + CPUCTL) & (1 << 4) != 0).then_some(())
        })
        .expect("the falcon halts");
        self.gpu.bar0_read(base + MAILBOX0)
    }

    /// FWSEC (descriptor v2) with `cmd` through the generic bootloader: the IMEM image at
    /// `IMEMPhysBase` of a code buffer, the DMEM image (mapper patched) at `DMEMPhysBase` of a
    /// data buffer (`s_vbiosFillFlcnUcodeFromDescV2`), then `s_prepareHsFalconWithLoader`.
    /// `edit` may change the loader setup before it is written.
    pub fn fwsec_v2_with(&self, cmd: u32, frts: u64, edit: impl FnOnce(&mut LoaderSetup)) -> u32 {
        let rom = self.read_vbios();
        let f = parse_vbios(&rom)
            .expect("the VBIOS parses")
            .fwsec
            .expect("FWSEC");
        let FwsecDesc::V2(d) = f.desc else {
            panic!("Turing's FWSEC has a v2 descriptor")
        };
        let imem = &rom[f.ucode_offset..f.ucode_offset + d.imem_load_size as usize];
        let mut code =
            vec![0u8; (d.imem_phys_base + d.imem_load_size).next_multiple_of(256) as usize];
        code[d.imem_phys_base as usize..][..imem.len()].copy_from_slice(imem);
        let mut dmem = rom[f.dmem.0..f.dmem.0 + f.dmem.1].to_vec();
        let m = f.dmem_mapper;
        let put =
            |b: &mut Vec<u8>, at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        put(&mut dmem, m.dmem_offset as usize + 44, cmd);
        if cmd == CMD_FRTS {
            let words = [1u32, 24, 0, 0, 0, 2, 1, 20, (frts >> 12) as u32, 0x100, 2];
            for (i, w) in words.iter().enumerate() {
                put(&mut dmem, m.cmd_in_buffer_offset as usize + 4 * i, *w);
            }
        }
        let mut data = vec![0u8; d.dmem_phys_base as usize + dmem.len()];
        data[d.dmem_phys_base as usize..].copy_from_slice(&dmem);
        let (code_buf, data_buf) = (self.alloc(code.len()), self.alloc(data.len()));
        self.write(code_buf.bus, &code);
        self.write(data_buf.bus, &data);
        let ns = (d.imem_phys_base, d.imem_load_size - d.imem_sec_size);
        let sec = (
            d.imem_sec_base - d.imem_virt_base + d.imem_phys_base,
            d.imem_sec_size.next_multiple_of(256),
        );
        let words = [
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            4,
            code_buf.bus as u32,
            (code_buf.bus >> 32) as u32,
            ns.0,
            ns.1,
            sec.0,
            sec.1,
            0,
            data_buf.bus as u32,
            (data_buf.bus >> 32) as u32,
            dmem.len() as u32,
            0,
            0,
        ];
        let file = self.file("gen_bootloader");
        let bl = GenericBootloader::parse(&file).expect("gen_bootloader");
        let mut bl_code = bl.code().to_vec();
        bl_code.resize(bl_code.len().next_multiple_of(256), 0);
        let mut s = LoaderSetup {
            desc: words.iter().flat_map(|w: &u32| w.to_le_bytes()).collect(),
            code: bl_code,
            start_tag: bl.desc.start_tag,
        };
        edit(&mut s);
        self.falcon_reset_turing(GSP);
        self.gpu.bar0_write(
            GSP + FBIF_CTL,
            self.gpu.bar0_read(GSP + FBIF_CTL) | (1 << 7),
        );
        // TARGET COHERENT_SYSMEM (1), MEM_TYPE PHYSICAL (bit 2).
        self.gpu.bar0_write(GSP + TRANSCFG4, 1 | (1 << 2));
        self.pio(GSP, false, 0, 0, false, &s.desc);
        let imem_blocks = self.gpu.bar0_read(GSP + 0x108) & 0x1ff;
        let dst = (imem_blocks - s.code.len() as u32 / 256) * 256;
        self.pio(GSP, true, dst, s.start_tag << 8, false, &s.code);
        self.gpu.bar0_write(GSP + BOOTVEC, s.start_tag << 8);
        self.start_and_halt(GSP, (0, 0))
    }

    /// `booter_load` or `booter_unload` on Turing's SEC2 by PIO (`s_prepareHsFalconDirect`),
    /// patched with the signature for fuse version 0 (Turing has no ucode fuses).
    pub fn booter_turing(&self, name: &str, mailbox: (u32, u32)) -> u32 {
        let file = self.file(name);
        let hs = HsUcode::parse(&file).expect("the booter file");
        let sig = hs.signature_for_fuse_version(0).expect("a signature");
        let image = hs.patched_image(sig).expect("the patch fits");
        let (app, lh) = (hs.apps[0], hs.load_header);
        let part = |o: u32, n: u32| &image[o as usize..(o + n) as usize];
        self.falcon_reset_turing(SEC2);
        self.gpu.bar0_write(
            SEC2 + FBIF_CTL,
            self.gpu.bar0_read(SEC2 + FBIF_CTL) | (1 << 7),
        );
        self.pio(
            SEC2,
            true,
            0,
            lh.os_code_offset,
            false,
            part(lh.os_code_offset, lh.os_code_size),
        );
        self.pio(
            SEC2,
            true,
            lh.os_code_size.next_multiple_of(256),
            app.offset,
            true,
            part(app.offset, app.size),
        );
        self.pio(
            SEC2,
            false,
            0,
            0,
            false,
            part(lh.os_data_offset, lh.os_data_size),
        );
        self.gpu.bar0_write(SEC2 + BOOTVEC, 0);
        self.start_and_halt(SEC2, mailbox)
    }

    /// `kgspBootstrap_TU102` on Turing: FWSEC-FRTS through the loader, the GSP's libos
    /// arguments, booter_load by PIO, the sequencer, GSP_INIT_DONE.
    pub fn boot_turing(&mut self) -> Vec<SequencerStep> {
        let start = Instant::now();
        let frts = frts_offset(self.chip.spec().vram_bytes);
        assert_eq!(self.fwsec_v2_with(CMD_FRTS, frts, |_| {}), 0);
        assert_eq!(self.gpu.bar0_read(VBIOS_SCRATCH + 4 * 0xe) >> 16, 0);
        assert_eq!(u64::from(self.gpu.bar0_read(WPR2_ADDR_LO) >> 4) << 12, frts);
        self.falcon_reset_turing(GSP);
        self.gpu.bar0_write(GSP + MAILBOX0, self.libos.bus as u32);
        self.gpu
            .bar0_write(GSP + MAILBOX1, (self.libos.bus >> 32) as u32);
        let meta = self.wpr_meta.bus;
        let mb = self.booter_turing("booter_load", (meta as u32, (meta >> 32) as u32));
        assert_eq!(mb, 0, "booter_load: {:?}", self.gpu.log().warnings());
        assert_eq!(
            self.gpu.bar0_read(GSP + CORE_SWITCH_RISCV_STATUS) & 1,
            1,
            "GSP RISC-V active"
        );
        let (_, seq) = self.wait_for(RpcEvent::GspRunCpuSequencer.as_u32(), 5000);
        let steps = self.run_sequencer(&seq);
        let (h, _) = self.wait_for(RpcEvent::GspInitDone.as_u32(), 5000);
        assert_eq!(h.rpc_result, 0);
        self.boot_time = Some(start.elapsed());
        steps
    }

    /// UNLOADING_GUEST_DRIVER, the RISC-V core inactive, FWSEC-SB, booter_unload (0xff/0xff).
    pub fn unload_turing(&mut self) -> u32 {
        let mut p = RpcUnloadingGuestDriver::new_zeroed();
        p.new_level = 1 << 6;
        self.call(RpcFunction::UnloadingGuestDriver.as_u32(), p.as_bytes());
        poll_until(&self.clock, wait("GSP RISC-V inactive", 5000), || {
            (self.gpu.bar0_read(GSP + CORE_SWITCH_RISCV_STATUS) & 1 == 0).then_some(())
        })
        .expect("GSP-RM halts");
        assert_eq!(self.fwsec_v2_with(CMD_SB, 0, |_| {}), 0);
        self.booter_turing("booter_unload", (0xff, 0xff))
    }
}
