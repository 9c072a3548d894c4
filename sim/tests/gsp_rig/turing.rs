//! The booter path's loads on Turing-style falcons (TU10x, GA100) in the test's driver,
//! written from OpenRM's sources: `kflcnReset_TU102` (scrubbing in `DMACTL`, no core switch:
//! "Turing and GA100 do not have an explicit core switch"), FWSEC with a v2 descriptor
//! through the generic bootloader (`s_vbiosFillFlcnUcodeFromDescV2`,
//! `s_prepareHsFalconWithLoader`) and the booter by PIO (`s_prepareHsFalconDirect`), all in
//! kernel_gsp_fwsec.c / kernel_gsp_falcon_tu102.c. On TU10x there are no ucode fuses (the
//! booter's signature is the one for fuse version 0) and the RISC-V state is
//! `RISCV_CORE_SWITCH_RISCV_STATUS` (`kflcnIsRiscvActive_TU102`).

use super::booter::*;
use super::*;
use nvbare_gsp::firmware::{GenericBootloader, HsUcode};
use nvbare_gsp::vbios::{FwsecDesc, parse as parse_vbios};
use nvbare_sim::chip::FalconGen;

/// `NV_PRISCV_RISCV_CORE_SWITCH_RISCV_STATUS` (ga100 and tu102 dev_riscv_pri.h, RISC-V base
/// + 0x240).
pub const CORE_SWITCH_RISCV_STATUS: u32 = 0x1240;
/// `NV_PFALCON_FALCON_HWCFG` (IMEM_SIZE 8:0 in blocks).
const HWCFG: u32 = 0x108;
/// `RM_FLCN_BL_DMEM_DESC.ctxDma`: "dmaIdx for PHYS_SYS_NCOH" (s_prepareHsFalconWithLoader).
const BL_CTX_DMA: u32 = 4;

/// What `s_prepareHsFalconWithLoader` writes for the generic bootloader, for a test to edit
/// before it is written.
pub struct LoaderSetup {
    /// `RM_FLCN_BL_DMEM_DESC` (84 bytes).
    pub desc: Vec<u8>,
    /// The loader's code, padded to 256 bytes.
    pub code: Vec<u8>,
    /// `blStartTag`.
    pub start_tag: u32,
}

impl Rig {
    /// The chip's falcons are Turing's (TU10x, GA100).
    pub fn turing(&self) -> bool {
        self.chip.spec().falcon_gen() == FalconGen::Tu102
    }

    fn reg(&self, base: u32, reg: u32) -> u32 {
        self.gpu.bar0_read(base + reg)
    }

    fn set(&self, base: u32, reg: u32, v: u32) {
        self.gpu.bar0_write(base + reg, v)
    }

    /// Whether the GSP's RISC-V core runs (`kflcnIsRiscvActive_TU102` / `_GA102`).
    pub fn riscv_active(&self) -> bool {
        if self.turing() {
            self.reg(GSP, CORE_SWITCH_RISCV_STATUS) & 1 == 1
        } else {
            self.reg(GSP, RISCV_CPUCTL) & (1 << 7) != 0
        }
    }

    /// `kflcnReset_TU102` on a Turing-style falcon: the reset pulse and the wait for
    /// `DMACTL.DMEM_SCRUBBING`/`IMEM_SCRUBBING` (2:1) to clear; the core needs no select.
    pub fn turing_reset(&self, base: u32) {
        self.set(base, ENGINE, 1);
        self.set(base, ENGINE, 0);
        poll_until(&self.clock, wait("falcon scrub (DMACTL)", 5000), || {
            (self.reg(base, DMACTL) & 0b110 == 0).then_some(())
        })
        .expect("scrubbing ends");
    }

    /// `s_imemCopyTo_TU102`: `code` to IMEM at `dest` through port 0, a tag per block from
    /// `tag >> 8`.
    fn imem_pio(&self, base: u32, dest: u32, code: &[u8], secure: bool, tag: u32) {
        self.set(
            base,
            IMEMC,
            (dest & 0x00ff_fffc) | (1 << 24) | u32::from(secure) << 28,
        );
        for (i, word) in code.chunks(4).enumerate() {
            if i % 64 == 0 {
                self.set(base, IMEMT, (tag >> 8) + (i / 64) as u32);
            }
            self.set(base, IMEMD, u32::from_le_bytes(word.try_into().unwrap()));
        }
    }

    /// `s_dmemCopyTo_TU102`.
    fn dmem_pio(&self, base: u32, dest: u32, data: &[u8]) {
        self.set(base, DMEMC, (dest & 0x00ff_fffc) | (1 << 24));
        for word in data.chunks(4) {
            self.set(base, DMEMD, u32::from_le_bytes(word.try_into().unwrap()));
        }
    }

    /// Mailboxes, STARTCPU, the halt wait; MAILBOX0 after.
    fn start_and_wait(&self, base: u32, mailbox: (u32, u32)) -> u32 {
        self.set(base, MAILBOX0, mailbox.0);
        self.set(base, MAILBOX1, mailbox.1);
        self.set(base, CPUCTL, 1 << 1);
        poll_until(&self.clock, wait("falcon halt", 5000), || {
            (self.reg(base, CPUCTL) & (1 << 4) != 0).then_some(())
        })
        .expect("the falcon halts");
        self.reg(base, MAILBOX0)
    }

    /// FWSEC with a v2 descriptor and `cmd` (FRTS at `frts`, or SB) on the GSP falcon through
    /// the generic bootloader; the reset before it included. MAILBOX0 after.
    pub fn fwsec_v2(&self, cmd: u32, frts: u64) -> u32 {
        self.fwsec_v2_with(cmd, frts, |_| {})
    }

    /// As [`Rig::fwsec_v2`], with `edit` applied to the bootloader's setup last.
    pub fn fwsec_v2_with(&self, cmd: u32, frts: u64, edit: impl FnOnce(&mut LoaderSetup)) -> u32 {
        let rom = self.read_vbios();
        let f = parse_vbios(&rom)
            .expect("the VBIOS parses")
            .fwsec
            .expect("FWSEC");
        let FwsecDesc::V2(d) = f.desc else {
            panic!("a TU10x/GA100 FWSEC has a v2 descriptor")
        };
        // s_vbiosFillFlcnUcodeFromDescV2: the IMEM image at IMEMPhysBase of the code buffer,
        // the DMEM image at DMEMPhysBase of the data buffer.
        let (phys, load) = (d.imem_phys_base as usize, d.imem_load_size as usize);
        let mut code = vec![0u8; (phys + load).next_multiple_of(256)];
        code[phys..phys + load].copy_from_slice(&rom[f.ucode_offset..f.ucode_offset + load]);
        let dphys = d.dmem_phys_base as usize;
        let mut data = vec![0u8; (dphys + f.dmem.1).next_multiple_of(256)];
        data[dphys..dphys + f.dmem.1].copy_from_slice(&rom[f.dmem.0..f.dmem.0 + f.dmem.1]);
        let m = f.dmem_mapper;
        let put = |b: &mut [u8], at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        put(&mut data, dphys + m.dmem_offset as usize + 44, cmd);
        if cmd == CMD_FRTS {
            let words = [1u32, 24, 0, 0, 0, 2, 1, 20, (frts >> 12) as u32, 0x100, 2];
            for (i, w) in words.iter().enumerate() {
                put(
                    &mut data,
                    dphys + m.cmd_in_buffer_offset as usize + 4 * i,
                    *w,
                );
            }
        }
        let (cb, db) = (self.alloc(code.len()), self.alloc(data.len()));
        self.write(cb.bus, &code);
        self.write(db.bus, &data);
        self.turing_reset(GSP);
        // kflcnDisableCtxReq_TU102, then TRANSCFG(ctxDma): coherent sysmem, physical.
        self.set(GSP, FBIF_CTL, self.reg(GSP, FBIF_CTL) | (1 << 7));
        self.set(GSP, DMACTL, 0);
        self.set(GSP, TRANSCFG0 + 4 * BL_CTX_DMA, 1 | (1 << 2));
        let sec = d.imem_sec_base - d.imem_virt_base + d.imem_phys_base;
        let desc: Vec<u8> = [
            [0u32; 8].as_slice(),
            &[
                BL_CTX_DMA,
                cb.bus as u32,
                (cb.bus >> 32) as u32,
                d.imem_phys_base,
                d.imem_load_size - d.imem_sec_size,
                sec,
                d.imem_sec_size.next_multiple_of(256),
                0,
                db.bus as u32,
                (db.bus >> 32) as u32,
                d.dmem_load_size,
                0,
                0,
            ],
        ]
        .concat()
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
        let file = self.file("gen_bootloader");
        let bl = GenericBootloader::parse(&file).expect("gen_bootloader");
        let mut code = bl.code().to_vec();
        code.resize(code.len().next_multiple_of(256), 0);
        let mut s = LoaderSetup {
            desc,
            code,
            start_tag: bl.desc.start_tag,
        };
        edit(&mut s);
        self.dmem_pio(GSP, 0, &s.desc);
        // "Copy bootloader to top of IMEM".
        let blocks = self.reg(GSP, HWCFG) & 0x1ff;
        let dst = (blocks - (s.code.len() / 256) as u32) * 256;
        let tag = s.start_tag << 8;
        self.imem_pio(GSP, dst, &s.code, false, tag);
        self.set(GSP, BOOTVEC, tag);
        self.start_and_wait(GSP, (0, 0))
    }

    /// A booter with its signature patched in (`patched`) on SEC2 by PIO; the reset before it
    /// included. MAILBOX0 after.
    pub fn booter_pio(&self, hs: &HsUcode<'_>, patched: &[u8], mailbox: (u32, u32)) -> u32 {
        let (lh, app) = (hs.load_header, hs.apps[0]);
        self.turing_reset(SEC2);
        self.set(SEC2, FBIF_CTL, self.reg(SEC2, FBIF_CTL) | (1 << 7));
        self.set(SEC2, DMACTL, 0);
        let part = |at: u32, len: u32| &patched[at as usize..(at + len) as usize];
        let ns = part(lh.os_code_offset, lh.os_code_size);
        self.imem_pio(SEC2, 0, ns, false, lh.os_code_offset);
        let at = lh.os_code_size.next_multiple_of(256);
        self.imem_pio(SEC2, at, part(app.offset, app.size), true, app.offset);
        self.dmem_pio(SEC2, 0, part(lh.os_data_offset, lh.os_data_size));
        self.set(SEC2, BOOTVEC, 0);
        self.start_and_wait(SEC2, mailbox)
    }
}
