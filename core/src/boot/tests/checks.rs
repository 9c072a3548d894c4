//! Every check of identify, reset, firmware, the FSP chain of trust, the lockdown release,
//! GSP init and teardown, failing on purpose: one error naming the problem and the remedy,
//! all DMA memory given back.

extern crate std;

use std::vec::Vec;

use super::fake::{AD102_BOOT42, FakePlatform, Script};
use super::*;
use crate::gsp_rpc::RpcErrorKind;

#[test]
fn identify_refuses_booter_chips_and_vanished_devices() {
    let files = Files::gh100();
    let (e, text, _) = fails(
        Script {
            boot42: AD102_BOOT42,
            ..Script::default()
        },
        &files,
    );
    assert_eq!(e.stage, Stage::Identify);
    assert_mentions(
        &text,
        &["AD102", "SEC2 booter", "booter_load", "firmware fetch"],
    );

    let p = FakePlatform::new(Script::default());
    p.unplug();
    let f = boot(p, &files.firmware(), &options()).unwrap_err();
    assert!(f.error.is_device_gone());
    assert_mentions(
        &f.error.to_string(),
        &["config space", "no longer answers", "vfio-pci"],
    );
}

#[test]
fn wpr2_left_up_is_recovered_by_reset_or_named() {
    let files = Files::gh100();
    let gsp = boot_fake(
        Script {
            wpr2_up: true,
            ..Script::default()
        },
        &files,
    )
    .unwrap();
    assert!(gsp.report().reset_for_wpr2);
    assert_eq!(gsp.platform().seen().resets, 1);
    assert!(!gsp.platform().seen().master_while_wpr2_up);
    drop(gsp);

    // Bus mastering left on by an earlier user goes off until WPR2 is down.
    let gsp = boot_fake(
        Script {
            wpr2_up: true,
            command_at_start: 6,
            ..Script::default()
        },
        &files,
    )
    .unwrap();
    assert!(
        !gsp.platform().seen().master_while_wpr2_up,
        "bus mastering on while an earlier boot's GSP may run"
    );
    drop(gsp);

    let (e, text, _) = fails(
        Script {
            wpr2_up: true,
            wpr2_sticky: true,
            ..Script::default()
        },
        &files,
    );
    assert!(matches!(e.kind, BootErrorKind::Wpr2StillUp { .. }));
    assert_mentions(
        &text,
        &["WPR2 is still up", "secondary bus reset", "cold reboot"],
    );

    let (e, text, _) = fails(
        Script {
            wpr2_up: true,
            reset_unsupported: true,
            ..Script::default()
        },
        &files,
    );
    assert!(matches!(e.kind, BootErrorKind::Wpr2UpNoReset { .. }));
    assert_mentions(&text, &["WPR2 is up", "cannot be reset", "cold reboot"]);
}

#[test]
fn bad_firmware_names_the_file_and_the_remedy() {
    let good = Files::gh100();
    let mut truncated = Files::gh100();
    truncated.gsp.truncate(1000);
    let (e, text, _) = fails(Script::default(), &truncated);
    assert_eq!(e.stage, Stage::FirmwareParse);
    assert_mentions(
        &text,
        &["gsp-570.144.bin", "GH100", "nvbare firmware fetch"],
    );

    // A Blackwell FMC (ECDSA sizes) for a GH100.
    let other = Files {
        fmc: images::fmc(false),
        ..Files::gh100()
    };
    let (_, text, _) = fails(Script::default(), &other);
    assert_mentions(
        &text,
        &["fmc-570.144.bin", "signature", "nvbare firmware fetch"],
    );

    // A tampered FMC image no longer matches its hash.
    let mut tampered = Files::gh100();
    let i = tampered.fmc.len() / 2;
    tampered.fmc[200] ^= 1;
    let _ = i;
    let (_, text, _) = fails(Script::default(), &tampered);
    assert_mentions(&text, &["fmc-570.144.bin", "SHA-384"]);

    // The pinned check refuses files that are not NVIDIA's for the chip.
    let opts = BootOptions {
        firmware_check: FirmwareCheck::Pinned,
        ..options()
    };
    let f = boot(
        FakePlatform::new(Script::default()),
        &good.firmware(),
        &opts,
    )
    .unwrap_err();
    assert!(matches!(
        f.error.kind,
        BootErrorKind::FirmwareNotForChip {
            file: FirmwareFile::Fmc,
            ..
        }
    ));
    assert_mentions(
        &f.error.to_string(),
        &["fmc-570.144.bin", "nvidia/gh100/gsp", "fetch"],
    );
}

#[test]
fn an_fsp_that_never_boots_fails_identify_before_any_other_bar0_read() {
    let files = Files::gh100();
    let (e, text, p) = fails(
        Script {
            fsp_never_ready: true,
            ..Script::default()
        },
        &files,
    );
    // The device id (config space) names a GH100 board, so the FSP wait comes before
    // NV_PMC_BOOT_0/42, WPR2 or the FB size is read (kgspWaitForGfwBootOk before
    // kgspCalculateFbLayout; kbifDoFunctionLevelReset_GH100).
    assert_eq!(e.stage, Stage::Identify, "{text}");
    assert_mentions(
        &text,
        &[
            "FSP never reported its boot complete",
            "0x200bc",
            "reset the GPU",
        ],
    );
    assert_eq!(p.seen().reads_before_fsp_ready, 0, "{text}");
    assert!(p.seen().cot.is_none());
}

#[test]
fn every_fsp_check_fails_clearly() {
    let files = Files::gh100();
    let cases: Vec<(Script, &[&str])> = std::vec![
        (
            Script {
                fsp_busy: true,
                ..Script::default()
            },
            &["command queue never drained", "FSP is not responding"],
        ),
        (
            Script {
                fsp_silent: true,
                ..Script::default()
            },
            &["did not answer the chain-of-trust message", "timed out"],
        ),
        (
            Script {
                fsp_error_code: 0x9f,
                ..Script::default()
            },
            &[
                "rejected the chain of trust",
                "0x9f",
                "FSP_ERR_IFR_FILE_NOT_FOUND",
                "NV_ERR_OBJECT_NOT_FOUND",
                "570.144 files"
            ],
        ),
        (
            Script {
                fsp_reply_type: 0x14,
                ..Script::default()
            },
            &["reply is malformed", "expected 0x15", "reset the GPU"],
        ),
        (
            Script {
                fsp_reply_command: 0x13,
                ..Script::default()
            },
            &["command type 0x13", "not the chain of trust"],
        ),
        (
            Script {
                fsp_reply_len: Some(2000),
                ..Script::default()
            },
            &["describe no packet"],
        ),
        (
            Script {
                emem_no_autoinc: true,
                ..Script::default()
            },
            &["auto-increment did not work"],
        ),
    ];
    for (script, words) in cases {
        let (e, text, p) = fails(script, &files);
        assert_eq!(e.stage, Stage::Fsp, "{text}");
        assert_mentions(&text, words);
        assert!(e.diagnostics.logs.len() == 5, "log tails attached: {text}");
        assert!(p.seen().resets >= 1, "a failure past COT resets the GPU");
    }
}

#[test]
fn every_lockdown_check_fails_clearly() {
    let files = Files::gh100();
    let cases: Vec<(Script, &[&str])> = std::vec![
        (
            Script {
                target_locked_reads: u32::MAX,
                ..Script::default()
            },
            &[
                "stayed locked to the FSP",
                "0xbadf4102",
                "GSP-FMC did not start"
            ],
        ),
        (
            Script {
                lockdown_reads: u32::MAX,
                ..Script::default()
            },
            &["lockdown was never released", "0x00002400"],
        ),
        (
            Script {
                fmc_error: Some(0x2b),
                ..Script::default()
            },
            &[
                "GSP-FMC reported error code 0x2b",
                "MAILBOX0",
                "570.144 files"
            ],
        ),
        (
            // Written as lockdown drops: only the re-read after the wait sees it
            // (kgspBootstrap_GH100 reads MAILBOX0 again after the wait).
            Script {
                fmc_error_on_release: Some(0x31),
                ..Script::default()
            },
            &["GSP-FMC reported error code 0x31", "MAILBOX0"],
        ),
        (
            Script {
                riscv_not_running: true,
                ..Script::default()
            },
            &["RISC-V core is not running", "CPUCTL"],
        ),
    ];
    for (script, words) in cases {
        let (e, text, _) = fails(script, &files);
        assert_eq!(e.stage, Stage::Lockdown, "{text}");
        assert_mentions(&text, words);
    }
    // The boot-args address left in the mailboxes is not an FMC error.
    let gsp = boot_fake(
        Script {
            mailbox_holds_boot_args: true,
            lockdown_reads: 10,
            ..Script::default()
        },
        &files,
    )
    .unwrap();
    drop(gsp);
}

#[test]
fn every_gsp_init_check_fails_clearly() {
    let files = Files::gh100();
    let cases: Vec<(Script, Stage, &[&str])> = std::vec![
        (
            Script {
                gsp_silent: true,
                ..Script::default()
            },
            Stage::GspInit,
            &[
                "never set up its status queue",
                "GSP_INIT_DONE",
                "did not start"
            ],
        ),
        (
            Script {
                no_init_done: true,
                ..Script::default()
            },
            Stage::GspInit,
            &[
                "did not answer GSP_INIT_DONE (0x1001)",
                "hung or dead",
                "libos logs"
            ],
        ),
        (
            Script {
                sequencer: true,
                ..Script::default()
            },
            Stage::GspInit,
            &[
                "GSP_RUN_CPU_SEQUENCER",
                "booted through the FSP",
                "SEC2 booter path",
                "nvbare firmware fetch",
            ],
        ),
        (
            Script {
                registry_fails: Some(0x1f),
                ..Script::default()
            },
            Stage::GspInit,
            &["failed SET_REGISTRY (73)", "NV_ERR_INVALID_ARGUMENT"],
        ),
        (
            Script {
                init_done_result: 0x56,
                ..Script::default()
            },
            Stage::GspInit,
            &["GSP_INIT_DONE reports", "0x56"],
        ),
        (
            Script {
                corrupt_reply_to: Some(65),
                ..Script::default()
            },
            Stage::StaticInfo,
            &[
                "failed its checks while waiting for GET_GSP_STATIC_INFO (65)",
                "checksum"
            ],
        ),
        (
            Script {
                rpc_failure: Some((65, 0x65)),
                ..Script::default()
            },
            Stage::StaticInfo,
            &["failed GET_GSP_STATIC_INFO (65) with NV_ERR_TIMEOUT"],
        ),
        (
            Script {
                bad_write_ptr_with: Some(65),
                ..Script::default()
            },
            Stage::StaticInfo,
            &["pointer 999 not below msgCount 63", "dropped"],
        ),
        (
            Script {
                no_reply_to: Some(76),
                ..Script::default()
            },
            Stage::StaticInfo,
            &["did not answer GSP_RM_CONTROL (76)", "timed out"],
        ),
    ];
    for (script, stage, words) in cases {
        let label = std::format!("{script:?}");
        let f = boot_fake(script, &files);
        assert!(f.is_err(), "booted despite {label}");
        let (e, text, p) = fails_from(f);
        assert_eq!(e.stage, stage, "{text}");
        assert_mentions(&text, words);
        assert!(p.seen().resets >= 1);
    }
}

#[test]
fn gsp_errors_carry_os_error_log_and_log_tails() {
    let files = Files::gh100();
    let (e, text, _) = fails(
        Script {
            no_init_done: true,
            os_error_before_init: Some("GSP-RM heap exhausted"),
            log_words: 5,
            ..Script::default()
        },
        &files,
    );
    assert!(matches!(
        e.kind,
        BootErrorKind::Rpc(ref r) if matches!(r.kind, RpcErrorKind::Timeout { .. })
    ));
    assert_eq!(e.diagnostics.os_errors[0].message, "GSP-RM heap exhausted");
    assert_eq!(e.diagnostics.os_errors[0].xid, 62);
    assert_mentions(
        &text,
        &[
            "OS_ERROR_LOG",
            "Xid 62",
            "GSP-RM heap exhausted",
            "LOGRM (5 words written",
            "0x000000000000abc4",
            "LOGINIT: empty",
        ],
    );
}

#[test]
fn a_gsp_that_does_not_halt_is_reset_and_its_memory_freed() {
    let files = Files::gh100();
    let gsp = boot_fake(
        Script {
            no_halt: true,
            ..Script::default()
        },
        &files,
    )
    .unwrap();
    let (p, r) = gsp.shutdown();
    let e = r.unwrap_err();
    assert_eq!(e.stage, Stage::Teardown);
    assert_mentions(
        &e.to_string(),
        &["did not halt", "UNLOADING_GUEST_DRIVER", "reset"],
    );
    assert_eq!(p.outstanding_dma(), 0);
    assert!(p.seen().resets >= 1);
}
