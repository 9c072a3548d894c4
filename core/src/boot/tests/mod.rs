//! The boot against a scripted fake GPU: the whole path once, then every check of the FSP
//! chain of trust, the lockdown release and GSP init failing on purpose, each with an
//! error that names the problem and the remedy, never a hang, a panic or leaked memory.

extern crate std;

mod booter;
mod checks;
mod fake;
mod fake_bar0;
mod fake_booter;
mod fake_gsp;
mod images;
mod rpc;

use std::string::ToString;
use std::vec::Vec;

use fake::{FakePlatform, GB202_BOOT42, Script};

use super::*;
use crate::gsp_rpc::{GspEvent, RpcErrorKind};
use nvbare_gsp::abi::{GspFwWprMeta, GspSystemInfo, RpcFunction};
use nvbare_gsp::rpc::events::GspMessage;
use zerocopy::{FromBytes, IntoBytes};

struct Files {
    fmc: Vec<u8>,
    gsp: Vec<u8>,
    bootloader: Vec<u8>,
}

impl Files {
    fn gh100() -> Self {
        Files {
            fmc: images::fmc(true),
            gsp: images::gsp_rm(70_000),
            bootloader: images::bootloader(),
        }
    }

    fn gb202() -> Self {
        Files {
            fmc: images::fmc(false),
            ..Self::gh100()
        }
    }

    fn firmware(&self) -> Firmware<'_> {
        Firmware {
            fmc: &self.fmc,
            gsp: &self.gsp,
            bootloader: &self.bootloader,
            booter: Default::default(),
        }
    }
}

/// Short bounds: the fake answers at once or never.
fn options() -> BootOptions {
    const MS: u64 = 1_000_000;
    BootOptions {
        timeouts: Timeouts {
            fsp_boot_ns: Some(5 * MS),
            config_space_ns: 5 * MS,
            bar_firewall_ns: 5 * MS,
            fsp_ns: 5 * MS,
            lockdown_ns: 5 * MS,
            status_queue_ns: 5 * MS,
            init_done_ns: 5 * MS,
            rpc_reply_ns: 5 * MS,
            halt_ns: 5 * MS,
        },
        firmware_check: FirmwareCheck::StructureOnly,
        ..BootOptions::default()
    }
}

fn boot_fake(
    script: Script,
    files: &Files,
) -> Result<Gsp<FakePlatform>, Box<BootFailure<FakePlatform>>> {
    boot(FakePlatform::new(script), &files.firmware(), &options())
}

/// Boots expecting failure; checks every DMA allocation was given back; returns the error
/// text with the platform.
fn fails(script: Script, files: &Files) -> (BootError, std::string::String, FakePlatform) {
    fails_from(boot_fake(script, files))
}

fn fails_from(
    r: Result<Gsp<FakePlatform>, Box<BootFailure<FakePlatform>>>,
) -> (BootError, std::string::String, FakePlatform) {
    let f = r.expect_err("the boot must fail");
    assert_eq!(
        f.platform.outstanding_dma(),
        0,
        "DMA memory leaked: {}",
        f.error
    );
    let text = f.error.to_string();
    (f.error, text, f.platform)
}

fn assert_mentions(text: &str, words: &[&str]) {
    for w in words {
        assert!(text.contains(w), "{w:?} missing from: {text}");
    }
}

#[test]
fn gh100_boots_reports_and_tears_down_then_boots_again() {
    let files = Files::gh100();
    let mut gsp = boot_fake(Script::default(), &files).unwrap();
    assert_eq!(gsp.chip(), Chip::GH100);
    let info = gsp.info().clone();
    assert_eq!(info.name, "NVIDIA H200");
    assert_eq!(info.vram_bytes, 143_771 << 20);
    assert_eq!(info.uuid, Some([7; 16]));
    assert_eq!(info.gr.sm_count, 132);
    assert_eq!(info.gr.sm_version, 0x900);
    assert_eq!(info.classes, [0xc8b5, 0xcbc0, 0xc86f]);
    assert!(info.has_class(0xcbc0));
    assert_eq!(gsp.usable_vram_end(), (143_771 - 214) << 20);
    assert_eq!(gsp.wpr2(), 0x8f0_0000..0x8f1_0000, "as the fake raised it");

    let seen = gsp.platform().seen();
    // The sysmem flush buffer was programmed before the COT, with a DMA page's bus address
    // as it is (GH100's registers take no shift).
    let flush = u64::from(seen.sysmem_flush.0) << 32 | u64::from(seen.sysmem_flush.1);
    assert!(flush != 0 && flush % 4096 == 0, "{flush:#x}");
    let cot = seen.cot.unwrap();
    assert_eq!({ cot.version }, 1);
    assert_eq!({ cot.frts_vidmem_offset }, 0x200000);
    assert_eq!({ cot.frts_vidmem_size }, 0x100000);
    assert_eq!({ cot.frts_sysmem_size }, 0);
    // The FMC's hash, key and signature went into the payload.
    let fmc = nvbare_gsp::firmware::FmcImage::parse(
        &files.fmc,
        nvbare_gsp::firmware::FmcSignatureScheme::Rsa3072,
    )
    .unwrap();
    assert_eq!({ cot.hash384 }.as_bytes(), &fmc.hash[..]);
    assert_eq!(&{ cot.public_key }.as_bytes()[..4], &[0xa5; 4]);
    let meta = GspFwWprMeta::read_from_bytes(&seen.wpr_meta).unwrap();
    assert_eq!(meta.magic, nvbare_gsp::abi::GSP_FW_WPR_META_MAGIC);
    assert_eq!(meta.gsp_fw_heap_size, 0x9200000);
    assert_eq!(meta.non_wpr_heap_size, 0x200000);
    assert_eq!(meta.vga_workspace_size, 0x20000);
    assert_eq!(meta.frts_size, 0x100000);
    assert_eq!(meta.size_of_radix3_elf, 70_000);
    assert_eq!(meta.size_of_bootloader, 0x3000);
    assert_eq!(
        (meta.bootloader_data_offset, meta.bootloader_manifest_offset),
        (0x1000, 0x2000)
    );
    assert_eq!(meta.size_of_signature, 0x1000);
    assert_eq!(meta.gsp_fw_offset, 0, "GSP-FMC places WPR2, not the CPU");
    let sys = GspSystemInfo::read_from_bytes(&seen.system_info).unwrap();
    assert_eq!(sys.pci_config_mirror_base, 0x92000);
    assert_eq!(sys.pci_device_id, 0x2335_10de);
    assert_eq!(sys.gpu_phys_addr, 0xa000_0000);
    assert_eq!(sys.nv_domain_bus_device_func, 0x4100);
    // SET_SYSTEM_INFO and SET_REGISTRY first, then static info and the two controls.
    assert_eq!(seen.functions, [72, 73, 65, 76, 76]);
    assert_eq!(
        seen.falcon_os, 0x1234_5678,
        "FALCON_OS = the bootloader's appVersion"
    );

    let report = gsp.report().clone();
    let stages: Vec<Stage> = report.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, Stage::BOOT);
    assert!(!report.reset_for_wpr2);
    assert!(report.to_string().contains("static info"));

    // The channel stays usable after boot.
    let r = gsp
        .rpc()
        .call(&nvbare_gsp::rpc::commands::Command::get_gsp_static_info());
    assert!(matches!(r.unwrap().body, GspMessage::StaticInfo(_)));

    let (p, r) = gsp.shutdown();
    let t = r.unwrap();
    assert!(
        t.unloaded && t.halted && !t.reset && !t.wpr2_left_up,
        "{t:?}"
    );
    assert!(t.freed >= 14);
    assert_eq!(p.outstanding_dma(), 0);
    assert!(!p.wpr2_up());

    let gsp = boot(p, &files.firmware(), &options()).unwrap();
    assert_eq!(gsp.info().gr.sm_count, 132);
    let (p, r) = gsp.shutdown();
    r.unwrap();
    assert_eq!(p.outstanding_dma(), 0);
}

#[test]
fn gb202_sends_cot_version_2_with_frts_below_the_pmu_reserve() {
    let files = Files::gb202();
    let script = Script {
        boot42: GB202_BOOT42,
        fb_mib: 32 * 1024,
        ..Script::default()
    };
    let gsp = boot_fake(script, &files).unwrap();
    assert_eq!(gsp.chip(), Chip::GB202);
    let cot = gsp.platform().seen().cot.unwrap();
    assert_eq!({ cot.version }, 2);
    assert_eq!({ cot.frts_vidmem_offset }, 0x1C00000);
    let meta = GspFwWprMeta::read_from_bytes(&gsp.platform().seen().wpr_meta).unwrap();
    assert_eq!(meta.gsp_fw_heap_size, 0x8700000);
    assert_eq!(meta.pmu_reserved_size, 0x1820000);
    drop(gsp);
}

#[test]
fn dropping_a_booted_gsp_tears_it_down() {
    let files = Files::gh100();
    let gsp = boot_fake(Script::default(), &files).unwrap();
    // Keep a view of the device through a second handle: drop consumes the platform.
    let seen_before = gsp.platform().seen().functions.len();
    drop(gsp);
    assert_eq!(seen_before, 5);
}

#[test]
fn events_before_init_done_are_kept_for_the_caller() {
    let files = Files::gh100();
    let mut gsp = boot_fake(
        Script {
            os_error_before_init: Some("Xid 62 during init"),
            ..Script::default()
        },
        &files,
    )
    .unwrap();
    let events: Vec<GspEvent> = gsp.rpc_state().drain_events().collect();
    assert!(
        events.iter().any(|e| matches!(e, GspEvent::Message(m)
            if matches!(&m.body, GspMessage::OsErrorLog { message, .. } if message == "Xid 62 during init"))),
        "{events:?}"
    );
    assert_eq!(gsp.rpc_state().drain_events().count(), 0);
    drop(gsp);
}

#[test]
fn an_rpc_that_times_out_leaves_a_late_reply_behind_not_a_wrong_answer() {
    let files = Files::gh100();
    let mut gsp = boot_fake(Script::default(), &files).unwrap();
    gsp.platform().script_mut().late_reply_to = Some(65);
    let cmd = nvbare_gsp::rpc::commands::Command::get_gsp_static_info();
    let e = gsp.rpc().call_within(&cmd, 1_000_000).unwrap_err();
    assert!(matches!(e.kind, RpcErrorKind::Timeout { .. }), "{e}");
    assert_eq!(e.function(), Some(RpcFunction::GetGspStaticInfo.into()));
    // The late reply arrives first and is recognised; the next call gets its own.
    let r = gsp.rpc().call(&cmd).unwrap();
    assert!(matches!(r.body, GspMessage::StaticInfo(_)));
    let events: Vec<GspEvent> = gsp.rpc_state().drain_events().collect();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, GspEvent::LateReply { function, .. } if function.0 == 65)),
        "{events:?}"
    );
    drop(gsp);
}

#[test]
fn events_after_boot_are_polled_drained_and_bounded() {
    let files = Files::gh100();
    let mut gsp = boot_fake(Script::default(), &files).unwrap();
    assert_eq!(gsp.rpc().poll().unwrap(), 0);
    // MMU_FAULT_QUEUED (no payload) and an RC_TRIGGERED for channel 5, Xid 31.
    gsp.platform().gsp_event(0x1005, &[]);
    let mut rc = std::vec![0u8; 52];
    rc[4] = 5;
    rc[16] = 31;
    gsp.platform().gsp_event(0x1004, &rc);
    assert_eq!(gsp.rpc().poll().unwrap(), 2);
    let events: Vec<GspEvent> = gsp.rpc_state().drain_events().collect();
    assert!(matches!(&events[0], GspEvent::Message(m) if m.body == GspMessage::MmuFaultQueued));
    assert!(matches!(&events[1], GspEvent::Message(m)
        if matches!(m.body, GspMessage::RcTriggered { chid: 5, except_type: 31, .. })));
    // Nobody drains: the oldest are dropped, and counted.
    for _ in 0..crate::gsp_rpc::EVENT_CAPACITY + 10 {
        gsp.platform().gsp_event(0x1005, &[]);
        // Keep the status queue from filling: the fake writes no faster than we read.
        gsp.rpc().poll().unwrap();
    }
    assert_eq!(gsp.rpc_state().dropped_events(), 10);
    assert_eq!(
        gsp.rpc_state().drain_events().count(),
        crate::gsp_rpc::EVENT_CAPACITY
    );
    // An event with a payload that does not match its type is kept as malformed.
    gsp.platform().gsp_event(0x1004, &[1, 2, 3]);
    gsp.rpc().poll().unwrap();
    assert!(matches!(
        gsp.rpc_state().drain_events().next(),
        Some(GspEvent::Malformed { .. })
    ));
    drop(gsp);
}

#[test]
fn a_failed_async_command_surfaces_in_the_next_wait() {
    let files = Files::gh100();
    let mut gsp = boot_fake(Script::default(), &files).unwrap();
    gsp.platform().script_mut().registry_fails = Some(0x1f);
    let table = nvbare_gsp::registry::RegistryTable::tinygrad_defaults();
    gsp.rpc()
        .send(&nvbare_gsp::rpc::commands::Command::set_registry(&table))
        .unwrap();
    let e = gsp
        .rpc()
        .call(&nvbare_gsp::rpc::commands::Command::get_gsp_static_info())
        .unwrap_err();
    assert_eq!(e.status(), Some(nvbare_gsp::rpc::RpcResult(0x1f)));
    assert!(e.to_string().contains("SET_REGISTRY"), "{e}");
    drop(gsp);
}

#[test]
fn a_refused_call_reads_no_logs_but_a_failed_boot_shows_them() {
    let files = Files::gh100();
    let mut gsp = boot_fake(
        Script {
            log_words: 5,
            ..Script::default()
        },
        &files,
    )
    .unwrap();
    assert!(
        gsp.rpc_state().diagnostics().gsp_spoke(),
        "the logs have words"
    );
    gsp.platform().script_mut().rpc_failure = Some((65, 0x65));
    let e = gsp
        .rpc()
        .call(&nvbare_gsp::rpc::commands::Command::get_gsp_static_info())
        .unwrap_err();
    assert_eq!(e.status(), Some(nvbare_gsp::rpc::RpcResult(0x65)));
    assert!(
        e.diagnostics.is_empty(),
        "a plain refusal reads no log buffers: {e}"
    );
    drop(gsp);

    let (e, text, _) = fails(
        Script {
            log_words: 5,
            rpc_failure: Some((65, 0x65)),
            ..Script::default()
        },
        &files,
    );
    assert_eq!(e.diagnostics.logs.len(), 5, "log tails attached: {text}");
}
