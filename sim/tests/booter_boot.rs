//! The booter path of the simulated GA102, AD102, GA100 and TU102 at the register level
//! (issue 19, items 6 and 7; GA100 and TU102 with Turing's falcons: FWSEC through the generic
//! bootloader, the booter by PIO, no core switch):
//! FWSEC-FRTS raises WPR2 at the FRTS region, booter_load checks the WPR meta and starts
//! GSP-RM on the GSP's RISC-V core, GSP-RM's CPU sequencer round trip gates GSP_INIT_DONE,
//! and teardown (FWSEC-SB, booter_unload) leaves WPR2 down, so a second boot needs no reset.
//! The boot ROM's checks refuse what the real one would: a signature at the wrong place or of
//! the wrong fuse version, a wrong ucode id, a WPR meta with a bad magic or a misplaced FRTS.
//! Driven by the test's own OpenRM-shaped driver ([`gsp_rig::booter`]; on Turing
//! [`gsp_rig::turing`]: FWSEC v2 through the generic bootloader, the booter by PIO) with the
//! real booter and GSP-RM files (skips without them).

mod gsp_rig;

use gsp_rig::booter::*;
use gsp_rig::*;
use nvbare_gsp::sequencer::SequencerStep;
use nvbare_sim::units::gsp::rpc::{SEQ_MAILBOX2, SEQ_TOKEN};
use nvbare_sim::{FaultPlan, SimChip};

const CHIPS: [SimChip; 4] = [
    SimChip::Ga102,
    SimChip::Ad102,
    SimChip::Ga100,
    SimChip::Tu102,
];

fn rig(chip: SimChip) -> Option<Rig> {
    let mut r = Rig::new(chip, FaultPlan::default())?;
    r.prepare_booter();
    Some(r)
}

fn warned(r: &Rig, needle: &str) -> bool {
    r.gpu.log().warnings().iter().any(|w| w.contains(needle))
}

#[test]
fn boots_unloads_and_boots_again_without_a_reset() {
    for chip in CHIPS {
        let Some(mut r) = rig(chip) else {
            return;
        };
        let steps = r.boot_booter();
        eprintln!(
            "{} booter-path boot: {:?}",
            chip.spec().name,
            r.boot_time.unwrap()
        );
        // The sequencer's register opcodes ran and GSP-RM saw their effect.
        assert!(
            steps
                .iter()
                .any(|s| matches!(s, SequencerStep::RegPoll { .. }))
        );
        assert_eq!(r.gpu.bar0_read(SEQ_MAILBOX2), SEQ_TOKEN);
        // WPR2 now covers GSP-RM's carve-out up to the end of FRTS.
        let wpr2_hi = r.gpu.bar0_read(WPR2_ADDR_HI);
        assert_ne!(wpr2_hi, 0);
        let end = (u64::from(wpr2_hi >> 4) << 12) + 0x1000;
        assert_eq!(end, frts_offset(chip.spec().vram_bytes) + (1 << 20));
        assert_eq!(
            r.unload_booter(),
            0,
            "booter_unload MAILBOX0: {:?}",
            r.gpu.log().warnings()
        );
        assert_eq!(
            r.gpu.bar0_read(WPR2_ADDR_HI),
            0,
            "WPR2 down after the unloader"
        );
        // Again, no reset: FWSEC-FRTS finds WPR2 down and the booter starts GSP-RM anew.
        r.requeue_keeping_gpu();
        r.boot_booter();
        assert!(
            r.gpu.log().warnings().is_empty(),
            "{:?}",
            r.gpu.log().warnings()
        );
    }
}

#[test]
fn fwsec_loads_through_pio_too() {
    let Some(r) = rig(SimChip::Ga102) else {
        return;
    };
    let frts = frts_offset(r.chip.spec().vram_bytes);
    assert_eq!(r.fwsec(CMD_FRTS, frts, true), 0);
    assert_eq!(u64::from(r.gpu.bar0_read(WPR2_ADDR_LO) >> 4) << 12, frts);
}

#[test]
fn the_boot_rom_refuses_a_wrong_signature_and_frts_stays_down() {
    let Some(r) = rig(SimChip::Ad102) else {
        return;
    };
    let frts = frts_offset(r.chip.spec().vram_bytes);
    // The other signature of the two (fuse version 0's), at the PKC offset.
    r.fwsec_with(CMD_FRTS, frts, false, |dmem| {
        let rom = r.read_vbios();
        let v = nvbare_gsp::vbios::parse(&rom).unwrap();
        let f = v.fwsec.unwrap();
        let nvbare_gsp::vbios::FwsecDesc::V3(d) = f.desc else {
            unreachable!()
        };
        let at = d.pkc_data_offset as usize;
        dmem[at..at + 384].copy_from_slice(&rom[f.signatures.unwrap().0..][..384]);
    });
    assert_eq!(r.gpu.bar0_read(WPR2_ADDR_HI), 0);
    assert!(
        warned(&r, "not the one for fuse version 1"),
        "{:?}",
        r.gpu.log().warnings()
    );
    assert_ne!(
        r.gpu.bar0_read(VBIOS_SCRATCH + 4 * 0xe) >> 16,
        0,
        "an FRTS error code"
    );
}

#[test]
fn fwsec_refuses_an_frts_region_outside_fb_and_an_unknown_command() {
    let Some(r) = rig(SimChip::Ga102) else {
        return;
    };
    r.fwsec(CMD_FRTS, r.chip.spec().vram_bytes, false);
    assert_eq!(r.gpu.bar0_read(WPR2_ADDR_HI), 0);
    assert!(warned(&r, "is not inside"), "{:?}", r.gpu.log().warnings());
    r.fwsec(0x42, 0, false);
    assert!(
        warned(&r, "init_cmd is 0x42"),
        "{:?}",
        r.gpu.log().warnings()
    );
}

#[test]
fn booter_load_refuses_a_bad_wpr_meta_and_a_missing_frts() {
    let Some(r) = rig(SimChip::Ga102) else {
        return;
    };
    let meta = (r.wpr_meta.bus as u32, (r.wpr_meta.bus >> 32) as u32);
    // No FWSEC-FRTS first: WPR2 is down.
    assert_eq!(r.booter("booter_load", meta), 0xb4);
    assert!(warned(&r, "run FWSEC-FRTS first"));
    let frts = frts_offset(r.chip.spec().vram_bytes);
    assert_eq!(r.fwsec(CMD_FRTS, frts, false), 0);
    r.edit_wpr_meta(|m| m.magic ^= 1);
    assert_eq!(r.booter("booter_load", meta), 0xb1);
    r.edit_wpr_meta(|m| {
        m.magic ^= 1;
        m.frts_offset -= 1 << 20;
    });
    assert_eq!(
        r.booter("booter_load", meta),
        0xb4,
        "FRTS elsewhere than FWSEC put it"
    );
    r.edit_wpr_meta(|m| m.frts_offset += 1 << 20);
    // The GSP is on its falcon core (FWSEC ran there): the booter runs, nothing starts.
    assert_eq!(r.booter("booter_load", meta), 0);
    assert!(warned(&r, "its falcon core is selected"));
}

#[test]
fn booter_unload_waits_for_gsp_rm_to_unload() {
    let Some(mut r) = rig(SimChip::Ad102) else {
        return;
    };
    r.boot_booter();
    assert_eq!(r.booter("booter_unload", (0xff, 0xff)), 0xb5);
    assert_ne!(
        r.gpu.bar0_read(WPR2_ADDR_HI),
        0,
        "WPR2 stays up while GSP-RM runs"
    );
}

#[test]
fn the_booter_is_refused_with_wrong_brom_parameters() {
    let Some(r) = rig(SimChip::Ga102) else {
        return;
    };
    assert_eq!(
        r.fwsec(CMD_FRTS, frts_offset(r.chip.spec().vram_bytes), false),
        0
    );
    let meta = (r.wpr_meta.bus as u32, (r.wpr_meta.bus >> 32) as u32);
    assert_eq!(
        r.booter_with("booter_load", meta, |l| l.ucode_id += 1),
        0xb0
    );
    assert!(
        warned(&r, "BROM_CURR_UCODE_ID"),
        "{:?}",
        r.gpu.log().warnings()
    );
    // The PKC offset must be where the file patches its signature.
    assert_eq!(r.booter_with("booter_load", meta, |l| l.pkc += 4), 0xb0);
    assert!(
        warned(&r, "BROM_PARAADDR(0)"),
        "{:?}",
        r.gpu.log().warnings()
    );
}

#[test]
fn a_driver_that_reads_the_fuse_boots_a_board_fused_for_the_older_signature() {
    let faults = FaultPlan {
        older_fwsec_fuse: true,
        ..Default::default()
    };
    let Some(mut r) = Rig::new(SimChip::Ga102, faults) else {
        return;
    };
    r.prepare_booter();
    r.boot_booter();
    assert!(
        r.gpu.log().warnings().is_empty(),
        "{:?}",
        r.gpu.log().warnings()
    );
}

#[test]
fn pramin_moves_with_nv_pbus_bar0_window_and_bar1_binds_show_in_bind_status() {
    let gpu = nvbare_sim::SimGpu::new(SimChip::Ad102).unwrap();
    // NV_PBUS_BAR0_WINDOW = VRAM address >> 16; PRAMIN (0x700000) then reads and writes there.
    let at = 0x1234_0000u64;
    gpu.bar0_write(0x1700, (at >> 16) as u32);
    gpu.bar0_write(0x70_0010, 0xfeed_beef);
    assert_eq!(
        gpu.bus().vram.read_u64(at + 0x10).unwrap() as u32,
        0xfeed_beef
    );
    assert_eq!(gpu.bar0_read(0x1700), (at >> 16) as u32);
    // A BAR1_BLOCK write is a bind: NV_PBUS_BIND_STATUS 1:0 pending, then clear.
    gpu.bar0_write(0x1704, 0);
    assert_eq!(gpu.bar0_read(0x1710) & 3, 3);
    std::thread::sleep(std::time::Duration::from_millis(1));
    assert_eq!(gpu.bar0_read(0x1710) & 3, 0);
}

/// GA100 has no `RISCV_BCR_CTRL` and no boot-ROM parameter registers (ga100
/// `dev_riscv_pri.h`; no `dev_falcon_second_pri.h`): writes are refused and read back 0, and
/// `HWCFG2` shows neither `MEM_SCRUBBING` nor `RESET_READY` (ga100 `dev_falcon_v4.h`).
#[test]
fn ga100_falcons_have_no_core_select_or_boot_rom_registers() {
    let gpu = nvbare_sim::SimGpu::new(SimChip::Ga100).unwrap();
    for (reg, name) in [
        (BCR_CTRL, "RISCV_BCR_CTRL"),
        (BROM_PARAADDR0, "BROM_PARAADDR"),
    ] {
        for base in [GSP, SEC2] {
            gpu.bar0_write(base + reg, 0x111);
            assert_eq!(gpu.bar0_read(base + reg), 0, "{name}");
        }
    }
    let refused = gpu.log().warnings();
    assert_eq!(
        refused
            .iter()
            .filter(|w| w.contains("refused: TU10x/GA100 falcons have no"))
            .count(),
        4,
        "{refused:?}"
    );
    assert_eq!(gpu.bar0_read(GSP + HWCFG2), 1 << 10, "HWCFG2: RISCV alone");
    // GA102 has them.
    let ga102 = nvbare_sim::SimGpu::new(SimChip::Ga102).unwrap();
    ga102.bar0_write(SEC2 + BROM_PARAADDR0, 0x111);
    assert_eq!(ga102.bar0_read(SEC2 + BROM_PARAADDR0), 0x111);
}

/// On GA100 the GSP runs RISC-V only when started straight after a reset
/// (`kflcnResetIntoRiscv_TU102`): a booter_load after FWSEC with no reset between starts
/// nothing.
#[test]
fn ga100_gsp_runs_risc_v_only_after_a_reset() {
    let Some(r) = rig(SimChip::Ga100) else {
        return;
    };
    let frts = frts_offset(r.chip.spec().vram_bytes);
    assert_eq!(r.fwsec(CMD_FRTS, frts, false), 0);
    assert_eq!(u64::from(r.gpu.bar0_read(WPR2_ADDR_LO) >> 4) << 12, frts);
    let meta = (r.wpr_meta.bus as u32, (r.wpr_meta.bus >> 32) as u32);
    assert_eq!(r.booter("booter_load", meta), 0);
    assert!(
        warned(&r, "its falcon core ran since the last reset"),
        "{:?}",
        r.gpu.log().warnings()
    );
    assert!(!r.riscv_active());
}

/// GA100's FWSEC comes through the generic bootloader; one that is not the real
/// `gen_bootloader` (its code changed in IMEM) runs nothing, and FRTS stays down.
#[test]
fn ga100_fwsec_needs_the_generic_bootloader() {
    let Some(r) = rig(SimChip::Ga100) else {
        return;
    };
    r.fwsec_v2_with(CMD_FRTS, frts_offset(r.chip.spec().vram_bytes), |s| {
        s.code[0] ^= 1
    });
    assert_eq!(r.gpu.bar0_read(WPR2_ADDR_HI), 0);
    assert!(
        warned(&r, "does not hold the generic bootloader's code"),
        "{:?}",
        r.gpu.log().warnings()
    );
}

#[test]
fn the_gsp_falcon_is_devinits_until_it_halts_after_a_reset() {
    // gpuWaitForGfwBootComplete_TU102 (kern_gpu_tu102.c) waits for the GSP falcon to halt
    // before it reads GFW_BOOT; a driver that goes by the progress alone and resets the falcon
    // for FWSEC-FRTS at once is refused while devinit's FWSEC runs on.
    let faults = FaultPlan {
        reboot_ns: Some(5_000_000),
        devinit_tail_ns: Some(2_000_000_000),
        ..Default::default()
    };
    let Some(r) = Rig::new(SimChip::Ga102, faults) else {
        return;
    };
    r.gpu.reset();
    r.wait_gfw_progress();
    assert_eq!(
        r.gpu.bar0_read(GSP + CPUCTL) & (1 << 4),
        0,
        "devinit still runs"
    );
    r.gpu.bar0_write(GSP + ENGINE, 1);
    assert!(
        warned(&r, "devinit's FWSEC still runs on the GSP falcon"),
        "{:?}",
        r.gpu.log().warnings()
    );
    assert_eq!(
        r.gpu.bar0_read(GSP + ENGINE) & 1,
        0,
        "the reset was refused"
    );

    // The same with OpenRM's order: the halt first, then the falcon is the driver's.
    let faults = FaultPlan {
        reboot_ns: Some(5_000_000),
        devinit_tail_ns: Some(50_000_000),
        ..Default::default()
    };
    let Some(r) = Rig::new(SimChip::Ga102, faults) else {
        return;
    };
    r.gpu.reset();
    r.wait_gfw_boot();
    r.falcon_reset(GSP, false);
    assert!(
        r.gpu.log().warnings().is_empty(),
        "{:?}",
        r.gpu.log().warnings()
    );
}

/// TU102 through the Turing driver (`gsp_rig::turing`): FWSEC v2 through the generic
/// bootloader, booter_load by PIO, GSP-RM, then teardown and a second boot without a reset.
#[test]
fn tu102_boots_unloads_and_boots_again_without_a_reset() {
    let Some(mut r) = rig(SimChip::Tu102) else {
        return;
    };
    let steps = r.boot_booter();
    assert!(
        steps
            .iter()
            .any(|s| matches!(s, SequencerStep::RegPoll { .. }))
    );
    assert_eq!(r.gpu.bar0_read(SEQ_MAILBOX2), SEQ_TOKEN);
    let wpr2_hi = r.gpu.bar0_read(WPR2_ADDR_HI);
    let end = (u64::from(wpr2_hi >> 4) << 12) + 0x1000;
    assert_eq!(
        end,
        frts_offset(SimChip::Tu102.spec().vram_bytes) + (1 << 20)
    );
    assert_eq!(r.unload_booter(), 0, "{:?}", r.gpu.log().warnings());
    assert_eq!(r.gpu.bar0_read(WPR2_ADDR_HI), 0, "WPR2 down");
    r.requeue_keeping_gpu();
    r.boot_booter();
    assert!(
        r.gpu.log().warnings().is_empty(),
        "{:?}",
        r.gpu.log().warnings()
    );
}

/// Turing's falcons have no FALCON2 block, no BCR core select and no MEM_SCRUBBING in HWCFG2
/// (turing/tu102 dev_falcon_v4.h, dev_riscv_pri.h): the GA10x way is refused, saying so.
#[test]
fn tu102_falcons_lack_what_ga10x_added() {
    let Some(r) = rig(SimChip::Tu102) else {
        return;
    };
    r.turing_reset(GSP);
    assert_eq!(r.gpu.bar0_read(GSP + HWCFG2), 1 << 10, "RISCV only");
    r.gpu.bar0_write(GSP + BCR_CTRL, 1 << 4);
    r.gpu.bar0_write(GSP + BROM_PARAADDR0, 0x100);
    assert_eq!(r.gpu.bar0_read(GSP + BROM_PARAADDR0), 0);
    assert!(
        warned(&r, "refused: TU10x/GA100 falcons have no"),
        "{:?}",
        r.gpu.log().warnings()
    );
    // kflcnSwitchToFalcon_GA10X would wait for BCR_CTRL.VALID: it never comes.
    assert_eq!(r.gpu.bar0_read(GSP + BCR_CTRL), 0);
    // The GA10x load of booter_load (DMA with BROM parameters, BOOTVEC at the application)
    // is refused: no OS code at IMEM 0, BOOTVEC not 0 (s_prepareHsFalconDirect's load).
    let hs_file = r.file("booter_load");
    let hs = nvbare_gsp::firmware::HsUcode::parse(&hs_file).unwrap();
    let image = hs
        .patched_image(hs.signature_for_fuse_version(0).unwrap())
        .unwrap();
    let buf = r.alloc(image.len());
    r.write(buf.bus, &image);
    let (app, lh) = (hs.apps[0], hs.load_header);
    r.turing_reset(SEC2);
    let l = HsLoad {
        image: buf,
        imem: (u64::from(app.offset), 0, app.offset, app.size),
        dmem: (u64::from(lh.os_data_offset), lh.os_data_size),
        pkc: hs.patch_location - lh.os_data_offset,
        engine_mask: hs.meta.engine_id_mask,
        ucode_id: hs.meta.ucode_id,
        pio: false,
    };
    assert_eq!(r.run_hs(SEC2, &l, (0, 0)), 0xb0);
    assert!(
        warned(&r, "s_prepareHsFalconDirect"),
        "{:?}",
        r.gpu.log().warnings()
    );
}

/// The generic bootloader's setup is checked as `s_prepareHsFalconWithLoader` makes it: its
/// DMA context physical sysmem, the descriptor's ctxDma 4 and zero signature, the loader's
/// code at the top of IMEM; what it fetches must be FWSEC's code parts and `DMEMLoadSize`
/// bytes of data (`s_vbiosFillFlcnUcodeFromDescV2`). FRTS stays down otherwise.
#[test]
fn tu102_fwsec_refuses_a_wrong_loader_setup() {
    let Some(r) = rig(SimChip::Tu102) else {
        return;
    };
    let frts = frts_offset(SimChip::Tu102.spec().vram_bytes);
    r.fwsec_v2_with(CMD_FRTS, frts, |s| s.desc[32] = 0);
    assert!(warned(&r, "ctxDma 0"), "{:?}", r.gpu.log().warnings());
    r.fwsec_v2_with(CMD_FRTS, frts, |s| s.code[0] ^= 1);
    assert!(warned(&r, "does not hold the generic bootloader's code"));
    r.fwsec_v2_with(CMD_FRTS, frts, |s| s.start_tag += 1);
    assert!(warned(&r, "no IMEM block is tagged") || warned(&r, "BOOTVEC"));
    // RM_FLCN_BL_DMEM_DESC: signature[0] at 16, secureCodeSize at 56, dataSize at 72.
    r.fwsec_v2_with(CMD_FRTS, frts, |s| s.desc[16] = 1);
    assert!(warned(&r, "has signature [1, 0, 0, 0]"));
    r.fwsec_v2_with(CMD_FRTS, frts, |s| s.desc[57] ^= 1);
    assert!(warned(&r, "FWSEC's descriptor makes them"));
    r.fwsec_v2_with(CMD_FRTS, frts, |s| s.desc[72] ^= 4);
    assert!(warned(&r, "FWSEC's DMEMLoadSize is"));
    assert_eq!(r.gpu.bar0_read(WPR2_ADDR_HI), 0, "no FRTS");
    assert_eq!(r.fwsec_v2_with(CMD_FRTS, frts, |_| {}), 0);
    assert_ne!(r.gpu.bar0_read(WPR2_ADDR_HI), 0, "FRTS up");
}
