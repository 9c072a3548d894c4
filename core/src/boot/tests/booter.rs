//! The booter path against the fake: AD102 (and GA102) boot through FWSEC-FRTS and the
//! SEC2 booter, run GSP-RM's sequencer, tear down with FWSEC-SB and `booter_unload`, and
//! boot again without a reset; every check failing names the problem.

extern crate std;

use std::string::ToString;
use std::vec::Vec;

use nvbare_gsp::vbios::build::{self, Spec};

use super::fake::{AD102_BOOT42, FakePlatform, Script};
use super::*;
use crate::boot::booter::BooterFirmware;

const GA102_BOOT42: u32 = 0x1720_00a1;
const TU102_BOOT42: u32 = 0x1620_00a1;

struct BooterFiles {
    gsp: Vec<u8>,
    bootloader: Vec<u8>,
    load: Vec<u8>,
    unload: Vec<u8>,
}

impl BooterFiles {
    fn new() -> Self {
        BooterFiles {
            gsp: images::gsp_rm(70_000),
            bootloader: images::bootloader(),
            load: images::hs_ucode(3),
            unload: images::hs_ucode(4),
        }
    }

    fn firmware(&self) -> Firmware<'_> {
        Firmware {
            fmc: &[],
            gsp: &self.gsp,
            bootloader: &self.bootloader,
            booter: BooterFirmware {
                booter_load: &self.load,
                booter_unload: &self.unload,
                vbios: None,
                generic_bootloader: &[],
            },
        }
    }
}

fn script(boot42: u32) -> Script {
    Script {
        boot42,
        fb_mib: 24_564,
        vbios: Some(build::build(&Spec::default()).bytes),
        ..Script::default()
    }
}

fn boot_booter(
    s: Script,
    files: &BooterFiles,
) -> Result<Gsp<FakePlatform>, Box<BootFailure<FakePlatform>>> {
    boot(FakePlatform::new(s), &files.firmware(), &options())
}

#[test]
fn ad102_boots_through_fwsec_and_the_booter_tears_down_and_boots_again_without_reset() {
    let files = BooterFiles::new();
    let gsp = boot_booter(script(AD102_BOOT42), &files).unwrap();
    assert_eq!(gsp.chip(), Chip::AD102);
    let stages: Vec<Stage> = gsp.report().stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, Stage::BOOTER);

    let seen = gsp.platform().booter_seen();
    // FWSEC-FRTS ran with signature 0 (fuse version 0, the builder's first signature).
    assert_eq!(seen.fwsec.len(), 1);
    assert_eq!(seen.fwsec[0].0, 0x15);
    // The booter got the WPR metadata's address; the fake checked its magic and that FRTS
    // is where FWSEC raised WPR2.
    let meta = GspFwWprMeta::read_from_bytes(&gsp.platform().seen().wpr_meta).unwrap();
    let (lo, hi) = seen.booter[0];
    assert_ne!(u64::from(lo) | u64::from(hi) << 32, 0);
    assert_eq!(meta.fb_size, 24_564 << 20);
    assert_eq!(meta.gsp_fw_heap_size % (1 << 20), 0);
    assert_eq!(gsp.wpr2().start, meta.frts_offset);
    // The GSP's mailboxes held the libos arguments when the booter ran.
    assert_ne!(seen.gsp_mailboxes, (0, 0));
    // BROM: FWSEC's ucode id (the builder's), then booter_load's 3.
    assert_eq!(seen.brom_ucode_ids[1], 3);
    assert_eq!(gsp.platform().seen().falcon_os, 0x1234_5678);
    assert_eq!(gsp.layout().fb_size, 24_564 << 20);
    assert_eq!(
        gsp.layout().frts_offset_from_end,
        (24_564 << 20) - meta.frts_offset
    );

    let (p, r) = gsp.shutdown();
    let t = r.unwrap();
    assert!(t.unloaded && t.halted && !t.reset, "{t:?}");
    assert!(t.booter.fwsec_sb && t.booter.booter_unloaded, "{t:?}");
    assert!(!t.wpr2_left_up && !p.wpr2_up());
    let seen = p.booter_seen();
    assert_eq!(seen.fwsec[1].0, 0x19, "FWSEC-SB at teardown");
    assert_eq!(seen.booter[1], (0xff, 0xff), "booter_unload's mailboxes");
    assert_eq!(p.outstanding_dma(), 0);

    // The second boot finds WPR2 down: no reset.
    let gsp = boot(p, &files.firmware(), &options()).unwrap();
    assert!(!gsp.report().reset_for_wpr2);
    assert_eq!(gsp.platform().seen().resets, 0);
    let (p, r) = gsp.shutdown();
    r.unwrap();
    assert_eq!(p.outstanding_dma(), 0);
    assert!(!p.wpr2_up());
}

#[test]
fn ga102_runs_gsp_rms_sequencer_before_init_done() {
    let files = BooterFiles::new();
    let s = Script {
        sequencer_program: true,
        ..script(GA102_BOOT42)
    };
    let gsp = boot_booter(s, &files).unwrap();
    assert_eq!(gsp.chip(), Chip::GA102);
    // REG_WRITE 0xabcd then REG_MODIFY (mask 0xff, val 0x12) of a register the fake reads
    // as 0.
    assert_eq!(gsp.platform().booter_seen().sequencer_scratch, 0x12);
    let (p, r) = gsp.shutdown();
    r.unwrap();
    assert_eq!(p.outstanding_dma(), 0);
}

#[test]
fn a_sequencer_program_after_init_is_run_by_the_poll() {
    // _kgspProcessRpcEvent runs GSP_RUN_CPU_SEQUENCER in every context, the interrupt
    // bottom half's (kgspRpcRecvEvents) included: a poll runs it, queues no event.
    use nvbare_gsp::sequencer::{SequencerStep, encode_sequencer};
    let files = BooterFiles::new();
    let mut gsp = boot_booter(script(GA102_BOOT42), &files).unwrap();
    let program = encode_sequencer(
        &[SequencerStep::RegWrite {
            addr: 0x1480,
            val: 0x77,
        }],
        64,
    );
    gsp.platform().gsp_event(0x1002, &program);
    assert_eq!(gsp.rpc().poll().unwrap(), 0);
    assert_eq!(gsp.platform().booter_seen().sequencer_scratch, 0x77);
    let (p, r) = gsp.shutdown();
    r.unwrap();
    assert_eq!(p.outstanding_dma(), 0);
}

#[test]
fn a_sequencer_program_gsp_rm_sends_at_unload_is_run_and_the_unload_completes() {
    // GSP-RM answers UNLOADING_GUEST_DRIVER only once its program ran: OpenRM runs it from
    // the reply's poll (_kgspRpcRecvPoll -> _kgspProcessRpcEvent), and so must we.
    let files = BooterFiles::new();
    let s = Script {
        sequencer_at_unload: true,
        ..script(AD102_BOOT42)
    };
    let gsp = boot_booter(s, &files).unwrap();
    let (p, r) = gsp.shutdown();
    let t = r.unwrap();
    assert!(t.unloaded && t.halted && !t.reset, "{t:?}");
    assert!(t.booter.fwsec_sb && t.booter.booter_unloaded, "{t:?}");
    assert_eq!(p.booter_seen().sequencer_scratch, 0x10ad);
    assert!(!p.wpr2_up());
    assert_eq!(p.outstanding_dma(), 0);
}

#[test]
fn a_failed_frts_names_fwsec_and_frees_everything() {
    let files = BooterFiles::new();
    let s = Script {
        frts_error: 0x33,
        ..script(AD102_BOOT42)
    };
    let (e, text, _) = fails_from(boot_booter(s, &files));
    assert_eq!(e.stage, Stage::Fwsec, "{text}");
    assert_mentions(&text, &["FWSEC-FRTS", "0x33"]);
    assert!(e.remedy().contains("reset"), "{}", e.remedy());
}

#[test]
fn a_gpu_whose_devinit_never_finished_is_named_before_boot_42_is_read() {
    let files = BooterFiles::new();
    let s = Script {
        gfw_not_done: true,
        ..script(AD102_BOOT42)
    };
    let (e, text, _) = fails_from(boot_booter(s, &files));
    assert_eq!(e.stage, Stage::Identify, "{text}");
    assert_mentions(&text, &["GFW boot", "0x12"]);
    assert!(e.remedy().contains("reset"), "{}", e.remedy());
}

#[test]
fn a_gsp_falcon_devinit_never_released_is_named_before_boot_42_is_read() {
    // gpuWaitForGfwBootComplete_TU102 waits for the GSP falcon to halt before it reads the
    // GFW boot progress, even where the progress already reads COMPLETED.
    let files = BooterFiles::new();
    let s = Script {
        devinit_never_halts: true,
        ..script(AD102_BOOT42)
    };
    let (e, text, p) = fails_from(boot_booter(s, &files));
    assert_eq!(e.stage, Stage::Identify, "{text}");
    assert_mentions(&text, &["GSP falcon never halted", "CPUCTL", "0xff"]);
    assert!(e.remedy().contains("reset"), "{}", e.remedy());
    // Nothing touched the falcon devinit still held.
    assert!(p.booter_seen().fwsec.is_empty());
}

#[test]
fn all_ones_from_a_gpu_still_rebooting_is_neither_halted_nor_complete() {
    // An all-ones read would pass for a halted falcon and an unlocked scratch reading
    // COMPLETED (0xff): the wait goes on, and names BAR0.
    let files = BooterFiles::new();
    let s = Script {
        gfw_reads_all_ones: true,
        ..script(AD102_BOOT42)
    };
    let (e, text, p) = fails_from(boot_booter(s, &files));
    assert_eq!(e.stage, Stage::Identify, "{text}");
    assert_mentions(&text, &["never halted", "0xffffffff", "all ones"]);
    assert!(p.booter_seen().fwsec.is_empty());
}

#[test]
fn a_failed_booter_names_its_mailbox() {
    let files = BooterFiles::new();
    let s = Script {
        booter_error: 0xbad,
        ..script(AD102_BOOT42)
    };
    let (e, text, _) = fails_from(boot_booter(s, &files));
    assert_eq!(e.stage, Stage::Booter, "{text}");
    assert_mentions(&text, &["booter_load", "MAILBOX0", "0xbad"]);
}

#[test]
fn missing_booter_files_or_vbios_are_named() {
    let files = BooterFiles::new();
    let mut fw = files.firmware();
    fw.booter.booter_unload = &[];
    let r = boot(FakePlatform::new(script(AD102_BOOT42)), &fw, &options());
    let (_, text, _) = fails_from(r);
    assert_mentions(&text, &["booter_load/booter_unload"]);

    let s = Script {
        vbios: None,
        ..script(AD102_BOOT42)
    };
    let (e, text, _) = fails_from(boot_booter(s, &files));
    assert_eq!(e.stage, Stage::FirmwareParse, "{text}");
    assert_mentions(&text, &["VBIOS", "zero"]);
    assert!(e.remedy().contains("nvbare vbios"), "{}", e.remedy());

    let broken = BooterFiles {
        load: images::hs_ucode(3)[..0x100].to_vec(),
        ..BooterFiles::new()
    };
    let (_, text, _) = fails_from(boot_booter(script(AD102_BOOT42), &broken));
    assert_mentions(&text, &["booter_load-570.144.bin"]);
}

#[test]
fn turing_fwsec_v2_says_it_needs_the_generic_bootloader() {
    let files = BooterFiles::new();
    let s = Script {
        vbios: Some(
            build::build(&Spec {
                desc_version: 2,
                device_id: 0x1e04,
                ..Spec::default()
            })
            .bytes,
        ),
        ..script(TU102_BOOT42)
    };
    let (e, text, _) = fails_from(boot_booter(s, &files));
    assert_eq!(e.stage, Stage::Fwsec, "{text}");
    assert_mentions(&text, &["version 2", "generic"]);
    let _ = text.to_string();
}
