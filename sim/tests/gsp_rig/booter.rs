//! The booter path (GA102, AD102; GA100's loads in [`super::turing`]) of the test's driver,
//! written from OpenRM's sources (not nvbare's boot code): the WPR meta laid out as
//! `kgspCalculateFbLayout_TU102` does, falcon reset and core select (`kflcnReset_TU102`,
//! `kflcnRiscvProgramBcr`), heavy-secure loads
//! through the FBIF (`s_dmaTransfer` of kernel_falcon.c; or PIO through IMEMC/DMEMC),
//! boot-ROM parameters, FWSEC patched through its DMEM mapper (`kgspPrepareForFwsecFrts_TU102`
//! and friends, kernel_gsp_frts_tu102.c), the booter patched with the signature its fuse
//! selects (`s_patchBooterUcodeSignature`), the CPU sequencer (`kgspExecuteSequencerBuffer`)
//! and the teardown of `kgspTeardown_TU102` (FWSEC-SB, booter unload).

use super::*;
use nvbare_gsp::firmware::HsUcode;
use nvbare_gsp::sequencer::{SequencerStep, decode_sequencer};
use nvbare_gsp::vbios::{FwsecDesc, parse as parse_vbios};

/// Falcon bases: `NV_PGSP` 0x110000 (dev_gsp.h), `NV_PSEC` 0x840000 (dev_sec_pri.h).
pub const GSP: u32 = 0x11_0000;
pub const SEC2: u32 = 0x84_0000;
/// Falcon-relative registers (ga102 dev_falcon_v4.h, dev_fbif_v4.h, dev_falcon_second_pri.h,
/// dev_riscv_pri.h).
pub const MAILBOX0: u32 = 0x40;
pub const MAILBOX1: u32 = 0x44;
pub const HWCFG2: u32 = 0xf4;
pub const CPUCTL: u32 = 0x100;
pub const BOOTVEC: u32 = 0x104;
pub const DMACTL: u32 = 0x10c;
pub const DMATRFBASE: u32 = 0x110;
pub const DMATRFMOFFS: u32 = 0x114;
pub const DMATRFCMD: u32 = 0x118;
pub const DMATRFFBOFFS: u32 = 0x11c;
pub const DMATRFBASE1: u32 = 0x128;
pub const IMEMC: u32 = 0x180;
pub const IMEMD: u32 = 0x184;
pub const IMEMT: u32 = 0x188;
pub const DMEMC: u32 = 0x1c0;
pub const DMEMD: u32 = 0x1c4;
pub const ENGINE: u32 = 0x3c0;
pub const TRANSCFG0: u32 = 0x600;
pub const FBIF_CTL: u32 = 0x624;
pub const MOD_SEL: u32 = 0x1180;
pub const BROM_UCODE_ID: u32 = 0x1198;
pub const BROM_ENGIDMASK: u32 = 0x119c;
pub const BROM_PARAADDR0: u32 = 0x1210;
pub const RISCV_CPUCTL: u32 = 0x1388;
pub const BCR_CTRL: u32 = 0x1668;
/// ga102 dev_gc6_island.h; tu102 dev_bus.h; ga100 dev_fuse.h; tu102 dev_fb.h.
pub const GFW_PLM: u32 = 0x11_8128;
pub const GFW_BOOT: u32 = 0x11_8234;
pub const PROM: u32 = 0x30_0000;
pub const VBIOS_SCRATCH: u32 = 0x1400;
pub const FUSE_SEC2_UCODE1: u32 = 0x82_4140;
pub const FUSE_GSP_UCODE1: u32 = 0x82_41c0;
pub const WPR2_ADDR_LO: u32 = 0x1f_a824;
/// `FALCON_APPLICATION_INTERFACE_DMEM_MAPPER_V3_CMD_FRTS` / `_SB`.
pub const CMD_FRTS: u32 = 0x15;
pub const CMD_SB: u32 = 0x19;

const MIB: u64 = 1 << 20;

/// What to load into a heavy-secure falcon: the staged image, IMEM (source offset, physical
/// and virtual address, length), DMEM (source offset, length), BROM parameters.
pub struct HsLoad {
    pub image: Buf,
    pub imem: (u64, u32, u32, u32),
    pub dmem: (u64, u32),
    pub pkc: u32,
    pub engine_mask: u32,
    pub ucode_id: u32,
    /// Load through IMEMC/DMEMC instead of DMA.
    pub pio: bool,
}

/// The fuse version a ucode-version fuse value encodes (`kgspReadUcodeFuseVersion_GA100`:
/// the highest set bit, plus one; 0 without bits).
pub fn fuse_version(v: u32) -> u32 {
    if v == 0 { 0 } else { 32 - v.leading_zeros() }
}

/// The GSP-RM signature section of a booter chip.
pub fn signature_target(chip: SimChip) -> GspSignatureTarget {
    match chip {
        SimChip::Ad102 => GspSignatureTarget::Ad10x,
        SimChip::Ga100 => GspSignatureTarget::Ga100,
        SimChip::Tu102 => GspSignatureTarget::Tu10x,
        _ => GspSignatureTarget::Ga10x,
    }
}

impl Rig {
    fn r(&self, base: u32, reg: u32) -> u32 {
        self.gpu.bar0_read(base + reg)
    }

    fn w(&self, base: u32, reg: u32, v: u32) {
        self.gpu.bar0_write(base + reg, v)
    }

    /// Waits for GFW (devinit) as `kgspWaitForGfwBootOk_TU102`, turns on bus mastering,
    /// builds every boot structure with the WPR meta of `kgspCalculateFbLayout_TU102`, and
    /// queues the two init RPCs.
    pub fn prepare_booter(&mut self) {
        self.wait_gfw_boot();
        assert!(self.gpu.config_write(4, 2, 0x6));
        self.program_sysmem_flush();
        let fb = self.chip.spec().vram_bytes;
        self.build_structures(signature_target(self.chip), |_, m| layout_tu102(m, fb));
        self.queue_init_rpcs();
    }

    /// `gpuWaitForGfwBootComplete_TU102`: the GSP falcon halted (`kflcnWaitForHalt`), then
    /// the GFW scratch unlocked and its progress `COMPLETED`.
    pub fn wait_gfw_boot(&self) {
        poll_until(&self.clock, wait("devinit's FWSEC to halt", 5000), || {
            (self.r(GSP, CPUCTL) & (1 << 4) != 0).then_some(())
        })
        .expect("the GSP falcon halts");
        self.wait_gfw_progress();
    }

    /// The GFW scratch unlocked and its progress `COMPLETED` (`_gpuIsGfwBootCompleted_TU102`;
    /// all tinygrad waits for).
    pub fn wait_gfw_progress(&self) {
        poll_until(&self.clock, wait("GFW boot", 5000), || {
            (self.gpu.bar0_read(GFW_PLM) & 1 == 1 && self.gpu.bar0_read(GFW_BOOT) & 0xff == 0xff)
                .then_some(())
        })
        .expect("GFW boot completes");
    }

    /// `kflcnReset`: engine reset pulse, scrub wait; then the core: RISC-V with boot-ROM
    /// fetch, or the falcon core (`kflcnRiscvProgramBcr` / `kflcnSwitchToFalcon_GA10X`).
    pub fn falcon_reset(&self, base: u32, riscv: bool) {
        if self.turing() {
            return self.turing_reset(base);
        }
        self.w(base, ENGINE, 1);
        self.w(base, ENGINE, 0);
        poll_until(&self.clock, wait("falcon scrub", 5000), || {
            (self.r(base, HWCFG2) & (1 << 12) == 0).then_some(())
        })
        .expect("scrubbing ends");
        if riscv {
            self.w(base, BCR_CTRL, (1 << 4) | (1 << 8));
        } else if self.r(base, HWCFG2) & (1 << 10) != 0 {
            self.w(base, BCR_CTRL, 0);
            poll_until(&self.clock, wait("falcon core selected", 5000), || {
                (self.r(base, BCR_CTRL) & 1 == 1).then_some(())
            })
            .expect("core select");
        }
    }

    /// Loads `l` (`s_dmaTransfer`'s 256-byte transfers, or PIO), writes the BROM parameters
    /// and BOOTVEC, the mailboxes, starts the CPU and waits for its halt; MAILBOX0 after.
    pub fn run_hs(&self, base: u32, l: &HsLoad, mailbox: (u32, u32)) -> u32 {
        self.w(base, FBIF_CTL, self.r(base, FBIF_CTL) | (1 << 7));
        self.w(base, DMACTL, 0);
        let (code_off, imem_pa, imem_va, imem_len) = l.imem;
        let (data_off, dmem_len) = l.dmem;
        if l.pio {
            let mut code = vec![0u8; imem_len as usize];
            self.read(l.image.bus + code_off, &mut code);
            // IMEMC: block, AINCW, SECURE; a tag per block through IMEMT.
            self.w(base, IMEMC, (imem_pa >> 8) << 8 | (1 << 24) | (1 << 28));
            for (i, word) in code.chunks(4).enumerate() {
                if i % 64 == 0 {
                    self.w(base, IMEMT, (imem_va >> 8) + (i / 64) as u32);
                }
                self.w(base, IMEMD, u32::from_le_bytes(word.try_into().unwrap()));
            }
            let mut data = vec![0u8; dmem_len as usize];
            self.read(l.image.bus + data_off, &mut data);
            self.w(base, DMEMC, 1 << 24);
            for word in data.chunks(4) {
                self.w(base, DMEMD, u32::from_le_bytes(word.try_into().unwrap()));
            }
        } else {
            // TRANSCFG(0): coherent sysmem (1), physical (MEM_TYPE 1 << 2).
            self.w(base, TRANSCFG0, 1 | (1 << 2));
            let dma = |src: u64, mem_off: u32, dst: u32, len: u32, imem: bool| {
                self.w(base, DMATRFBASE, (src >> 8) as u32);
                self.w(base, DMATRFBASE1, (src >> 40) as u32 & 0x1ff);
                for at in (0..len).step_by(256) {
                    self.w(base, DMATRFMOFFS, dst + at);
                    self.w(base, DMATRFFBOFFS, mem_off + at);
                    let sec = if imem { (1 << 4) | (1 << 2) } else { 0 };
                    self.w(base, DMATRFCMD, sec | (6 << 8));
                }
                poll_until(&self.clock, wait("falcon DMA idle", 5000), || {
                    (self.r(base, DMATRFCMD) & 2 != 0).then_some(())
                })
                .expect("DMA completes");
            };
            dma(
                l.image.bus + code_off - u64::from(imem_va),
                imem_va,
                imem_pa,
                imem_len,
                true,
            );
            dma(l.image.bus + data_off, 0, 0, dmem_len, false);
        }
        self.w(base, BROM_PARAADDR0, l.pkc);
        self.w(base, BROM_ENGIDMASK, l.engine_mask);
        self.w(base, BROM_UCODE_ID, l.ucode_id);
        self.w(base, MOD_SEL, 1);
        self.w(base, BOOTVEC, imem_va);
        self.w(base, MAILBOX0, mailbox.0);
        self.w(base, MAILBOX1, mailbox.1);
        self.w(base, CPUCTL, 1 << 1);
        poll_until(&self.clock, wait("falcon halt", 5000), || {
            (self.r(base, CPUCTL) & (1 << 4) != 0).then_some(())
        })
        .expect("the falcon halts");
        self.r(base, MAILBOX0)
    }

    /// The VBIOS read through the PROM window (`s_vbiosReadPromWindow`-style 32-bit reads).
    pub fn read_vbios(&self) -> Vec<u8> {
        (0..0x4_0000u32)
            .step_by(4)
            .flat_map(|o| self.gpu.bar0_read(PROM + o).to_le_bytes())
            .collect()
    }

    /// FWSEC with `cmd` (FRTS at `frts` or SB) on the GSP falcon, its signature chosen by the
    /// GSP ucode fuse, patched through the DMEM mapper; the reset before it included.
    pub fn fwsec(&self, cmd: u32, frts: u64, pio: bool) -> u32 {
        if self.turing() {
            return self.fwsec_v2(cmd, frts);
        }
        self.fwsec_with(cmd, frts, pio, |_| {})
    }

    /// As [`Rig::fwsec`], with `edit` applied to the patched DMEM last.
    pub fn fwsec_with(
        &self,
        cmd: u32,
        frts: u64,
        pio: bool,
        edit: impl FnOnce(&mut Vec<u8>),
    ) -> u32 {
        let rom = self.read_vbios();
        let v = parse_vbios(&rom).expect("the VBIOS parses");
        let f = v.fwsec.expect("FWSEC in the VBIOS");
        let FwsecDesc::V3(d) = f.desc else {
            panic!("GA10x/AD10x FWSEC has a v3 descriptor")
        };
        let fuse = fuse_version(
            self.gpu
                .bar0_read(FUSE_GSP_UCODE1 + 4 * (u32::from(d.ucode_id) - 1)),
        );
        // The signature walk of kernel_gsp_frts_tu102.c.
        let (mut want, mut versions, mut index) =
            (1u32 << fuse, u32::from(d.signature_versions), 0);
        assert!(want & versions != 0, "a signature for fuse version {fuse}");
        while want & versions & 1 == 0 {
            index += versions & 1;
            versions >>= 1;
            want >>= 1;
        }
        let (sig_at, _) = f.signatures.expect("signatures");
        let sig = &rom[sig_at + index as usize * 384..][..384];
        let code = &rom[f.ucode_offset..f.ucode_offset + d.imem_load_size as usize];
        let mut dmem = rom[f.dmem.0..f.dmem.0 + f.dmem.1].to_vec();
        let m = f.dmem_mapper;
        let put =
            |b: &mut Vec<u8>, at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        put(&mut dmem, m.dmem_offset as usize + 44, cmd);
        if cmd == CMD_FRTS {
            // FWSECLIC_FRTS_CMD: read-VBIOS desc {1, 24, 0, 0, flags 2}, FRTS region {1, 20,
            // offset >> 12, 0x100, FB (2)}.
            let words = [1u32, 24, 0, 0, 0, 2, 1, 20, (frts >> 12) as u32, 0x100, 2];
            for (i, w) in words.iter().enumerate() {
                put(&mut dmem, m.cmd_in_buffer_offset as usize + 4 * i, *w);
            }
        }
        let pkc = d.pkc_data_offset as usize;
        dmem[pkc..pkc + 384].copy_from_slice(sig);
        edit(&mut dmem);
        let image = self.alloc(code.len() + dmem.len());
        self.write(image.bus, code);
        self.write(image.bus + code.len() as u64, &dmem);
        self.falcon_reset(GSP, false);
        let l = HsLoad {
            image,
            imem: (0, d.imem_phys_base, d.imem_virt_base, d.imem_load_size),
            dmem: (code.len() as u64, dmem.len() as u32),
            pkc: d.pkc_data_offset,
            engine_mask: u32::from(d.engine_id_mask),
            ucode_id: u32::from(d.ucode_id),
            pio,
        };
        self.run_hs(GSP, &l, (0, 0))
    }

    /// `booter_load` or `booter_unload` on SEC2 with `mailbox`, patched with the signature
    /// the SEC2 fuse selects; the reset before it included. MAILBOX0 after.
    pub fn booter(&self, name: &str, mailbox: (u32, u32)) -> u32 {
        self.booter_with(name, mailbox, |_| {})
    }

    /// As [`Rig::booter`], with `edit` applied to the load (BROM parameters, ranges).
    pub fn booter_with(
        &self,
        name: &str,
        mailbox: (u32, u32),
        edit: impl FnOnce(&mut HsLoad),
    ) -> u32 {
        let file = self.file(name);
        let hs = HsUcode::parse(&file).expect("the booter file");
        // TU10x has no ucode fuses: ksec2ReadUcodeFuseVersion is the stub returning 0 there
        // (tu102 dev_fuse.h has no FPF fuse).
        let fuse = if self.chip.spec().is_turing() {
            0
        } else {
            fuse_version(
                self.gpu
                    .bar0_read(FUSE_SEC2_UCODE1 + 4 * (hs.meta.ucode_id - 1)),
            )
        };
        let sig = hs.signature_for_fuse_version(fuse).expect("a signature");
        let patched = hs.patched_image(sig).expect("the patch fits");
        let image = self.alloc(patched.len());
        self.write(image.bus, &patched);
        if self.turing() {
            return self.booter_pio(&hs, &patched, mailbox);
        }
        let app = hs.apps[0];
        let lh = hs.load_header;
        self.falcon_reset(SEC2, false);
        let mut l = HsLoad {
            image,
            imem: (u64::from(app.offset), 0, app.offset, app.size),
            dmem: (u64::from(lh.os_data_offset), lh.os_data_size),
            pkc: hs.patch_location - lh.os_data_offset,
            engine_mask: hs.meta.engine_id_mask,
            ucode_id: hs.meta.ucode_id,
            pio: false,
        };
        edit(&mut l);
        self.run_hs(SEC2, &l, mailbox)
    }

    /// Runs a `GSP_RUN_CPU_SEQUENCER` payload (`kgspExecuteSequencerBuffer`).
    pub fn run_sequencer(&self, payload: &[u8]) -> Vec<SequencerStep> {
        let seq = decode_sequencer(payload).expect("a valid sequencer buffer");
        for s in &seq.steps {
            match *s {
                SequencerStep::RegWrite { addr, val } => self.gpu.bar0_write(addr, val),
                SequencerStep::RegModify { addr, mask, val } => {
                    let old = self.gpu.bar0_read(addr);
                    self.gpu
                        .bar0_write(addr, SequencerStep::modified(old, mask, val));
                }
                SequencerStep::RegPoll {
                    addr, mask, val, ..
                } => {
                    poll_until(&self.clock, wait("sequencer poll", 5000), || {
                        (self.gpu.bar0_read(addr) & mask == val).then_some(())
                    })
                    .expect("the polled register");
                }
                SequencerStep::DelayUs(us) => {
                    std::thread::sleep(std::time::Duration::from_micros(u64::from(us)))
                }
                SequencerStep::RegStore { addr, .. } => {
                    self.gpu.bar0_read(addr);
                }
                other => panic!("sequencer step {other:?} is not expected at boot"),
            }
        }
        seq.steps
    }

    /// FWSEC-FRTS, the GSP RISC-V core readied with the libos arguments, booter_load, the
    /// sequencer GSP-RM sends, GSP_INIT_DONE (`kgspBootstrap_TU102`).
    pub fn boot_booter(&mut self) -> Vec<SequencerStep> {
        let start = Instant::now();
        let frts = frts_offset(self.chip.spec().vram_bytes);
        assert_eq!(self.fwsec(CMD_FRTS, frts, false), 0);
        assert_eq!(
            self.gpu.bar0_read(VBIOS_SCRATCH + 4 * 0xe) >> 16,
            0,
            "FRTS error code"
        );
        assert_eq!(
            u64::from(self.gpu.bar0_read(WPR2_ADDR_LO) >> 4) << 12,
            frts,
            "WPR2 at the FRTS region"
        );
        self.falcon_reset(GSP, true);
        self.w(GSP, MAILBOX0, self.libos.bus as u32);
        self.w(GSP, MAILBOX1, (self.libos.bus >> 32) as u32);
        let mb = self.booter(
            "booter_load",
            (self.wpr_meta.bus as u32, (self.wpr_meta.bus >> 32) as u32),
        );
        assert_eq!(
            mb,
            0,
            "booter_load MAILBOX0; warnings {:?}",
            self.gpu.log().warnings()
        );
        assert!(self.riscv_active(), "GSP RISC-V active");
        let (_, seq) = self.wait_for(RpcEvent::GspRunCpuSequencer.as_u32(), 5000);
        let steps = self.run_sequencer(&seq);
        let (h, _) = self.wait_for(RpcEvent::GspInitDone.as_u32(), 5000);
        assert_eq!(h.rpc_result, 0);
        self.boot_time = Some(start.elapsed());
        steps
    }

    /// UNLOADING_GUEST_DRIVER, the RISC-V halt, then `kgspTeardown_TU102`: GSP reset,
    /// FWSEC-SB, booter_unload with 0xff/0xff. MAILBOX0 of the unloader.
    pub fn unload_booter(&mut self) -> u32 {
        let mut p = RpcUnloadingGuestDriver::new_zeroed();
        p.new_level = 1 << 6;
        self.call(RpcFunction::UnloadingGuestDriver.as_u32(), p.as_bytes());
        poll_until(&self.clock, wait("GSP RISC-V halt", 5000), || {
            (!self.riscv_active()).then_some(())
        })
        .expect("GSP-RM halts");
        assert_eq!(self.fwsec(CMD_SB, 0, false), 0);
        assert_eq!(
            self.gpu.bar0_read(VBIOS_SCRATCH + 4 * 0x15) & 0xffff,
            0,
            "SB error code"
        );
        self.booter("booter_unload", (0xff, 0xff))
    }
}

/// Where FRTS goes: below the 1 MiB VGA workspace at the end of FB, 128 KiB aligned
/// (`kgspCalculateFbLayout_TU102`: `gspFwWprEnd` = align_down(vgaWorkspaceOffset, 128 KiB),
/// `frtsOffset` = `gspFwWprEnd` - 1 MiB).
pub fn frts_offset(fb: u64) -> u64 {
    ((fb - MIB) & !0x1_ffff) - MIB
}

/// The WPR meta's layout as `kgspCalculateFbLayout_TU102` computes it (headless, no margin):
/// from the top of FB down the VGA workspace (1 MiB), FRTS, the boot binary (4 KiB aligned),
/// the GSP-RM ELF (64 KiB), the heap (1 MiB aligned, the libos2 override minimum of 64 MiB
/// + 1 MiB per GiB here), the WPR meta's 1 MiB, the 1 MiB non-WPR heap.
pub fn layout_tu102(m: &mut GspFwWprMeta, fb: u64) {
    m.fb_size = fb;
    m.vga_workspace_offset = fb - MIB;
    m.vga_workspace_size = MIB;
    m.gsp_fw_wpr_end = m.vga_workspace_offset & !0x1_ffff;
    m.frts_size = MIB;
    m.frts_offset = m.gsp_fw_wpr_end - MIB;
    m.boot_bin_offset = (m.frts_offset - m.size_of_bootloader) & !0xfff;
    m.gsp_fw_offset = (m.boot_bin_offset - m.size_of_radix3_elf) & !0xffff;
    let heap = 64 * MIB + (fb >> 30) * MIB;
    m.gsp_fw_heap_offset = (m.gsp_fw_offset - heap) & !(MIB - 1);
    m.gsp_fw_heap_size = (m.gsp_fw_offset - m.gsp_fw_heap_offset) & !(MIB - 1);
    m.gsp_fw_wpr_start = m.gsp_fw_heap_offset - MIB;
    m.non_wpr_heap_size = MIB;
    m.non_wpr_heap_offset = m.gsp_fw_wpr_start - MIB;
    m.gsp_fw_rsvd_start = m.non_wpr_heap_offset;
}
