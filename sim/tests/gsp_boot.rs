//! The simulated GSP from the FSP's hand-off to GSP_INIT_DONE and back down: lockdown
//! release, the FMC's checks and mailbox codes, WPR2, the queues, libos logs, the doorbell,
//! bad commands, unload, and the GSP-side fault injections. Driven by the test's own
//! OpenRM-shaped driver ([`gsp_rig`]) with the real firmware files.

mod gsp_rig;

use gsp_rig::*;
use nvbare_gsp::abi::*;
use nvbare_gsp::rm::NvStatus;
use nvbare_sim::units::gsp::libos_log::logging_section;
use nvbare_sim::{FaultPlan, SimChip};
use zerocopy::{FromBytes, IntoBytes};

fn boots(chip: SimChip) {
    let Some(mut rig) = Rig::new(chip, FaultPlan::default()) else {
        return;
    };
    rig.boot();
    let spec = chip.spec();
    eprintln!(
        "{} boot (COT to GSP_INIT_DONE): {:?}",
        spec.name,
        rig.boot_time.unwrap()
    );
    if std::env::var("SIM_LOG").is_ok() {
        for l in rig.gpu.log().lines() {
            eprintln!("{:>12} {}: {}", l.at_ns, l.unit, l.text);
        }
    }
    let g = &rig.gpu;
    let hw = g.bar0_read(GSP_HWCFG2);
    assert_eq!(hw & (1 << 13), 0, "RISCV_BR_PRIV_LOCKDOWN released");
    assert_ne!(hw & 0xffff_ff00, 0xbadf_4100, "target mask released");
    assert_eq!(g.bar0_read(GSP_MAILBOX0), 0, "no FMC error");
    assert_eq!(
        g.bar0_read(GSP_RISCV_CPUCTL) & 0x90,
        0x80,
        "ACTIVE_STAT set, HALTED clear"
    );
    // WPR2 ends with FRTS, which the FSP put frtsVidmemOffset below the end of FB, and
    // holds the heap and the GSP-RM image below it.
    let (lo, hi) = (g.bar0_read(0x1f_a824), g.bar0_read(WPR2_ADDR_HI));
    let f = facts(chip);
    let wpr_end = spec.vram_bytes - f.frts_vidmem_offset + 0x10_0000;
    assert_eq!(
        u64::from(hi >> 4) << 12,
        wpr_end - 0x1000,
        "WPR2_ADDR_HI names FRTS's last 4 KiB"
    );
    let start = u64::from(lo >> 4) << 12;
    assert!(
        start + heap_size(spec.vram_bytes) + (60 << 20) < wpr_end,
        "WPR2 holds the heap and the image"
    );
    // GSP-RM created the status queue as msgqTxCreate does.
    let mut raw = [0u8; 32];
    rig.read(rig.statq(), &mut raw);
    let tx = MsgqTxHeader::read_from_bytes(&raw).unwrap();
    assert_eq!(
        (tx.version, tx.size, tx.msg_size, tx.msg_count),
        (0, 0x4_0000, 0x1000, 63)
    );
    assert_eq!((tx.flags, tx.rx_hdr_off, tx.entry_off), (1, 32, 0x1000));
    // It consumed the two init RPCs: its read pointer (in its own queue) is 2.
    assert_eq!(rig.read_u32(rig.statq() + 32), 2);
    // The log buffers hold libos records.
    let log = rig.log_buffer("LOGINIT");
    let messages = decode_libos(&log);
    let formats: Vec<&str> = messages.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        formats,
        [
            "GSP-RM %s booting on the simulated GPU\n",
            "message queues linked: %u command, %u status entries\n",
            "GSP-RM init done\n"
        ]
    );
    assert_eq!(messages[1].1, [63, 63], "the queues' msgCount");
    let raw_log = nvbare_gsp::libos::raw_log(&log).unwrap();
    assert_eq!(raw_log.lost, 0);
    assert_eq!(raw_log.words.len() as u64, raw_log.put);
}

#[test]
fn gh100_boots_to_init_done() {
    boots(SimChip::Gh100);
}

#[test]
fn gb202_boots_to_init_done() {
    boots(SimChip::Gb202);
}

#[test]
fn gb100_boots_to_init_done() {
    boots(SimChip::Gb100);
}

/// What nvbare sent a GB10x before issue 17 (GH100's numbers: FRTS 0x200000 from the end of
/// FB, pmuReservedSize 0) is refused: the FSP refuses the COT, and with the COT right the
/// FMC refuses the WPR metadata (kfspPrepareBootCommands_GH100 and kgspCalculateFbLayout_GH100
/// with GB10x's PMU reserve of 0x1820000, nouveau's r570_wpr_libos3_gb10x).
#[test]
fn gb100_refuses_gh100s_frts_offset_and_pmu_reserve() {
    let Some(mut rig) = Rig::new(SimChip::Gb100, FaultPlan::default()) else {
        return;
    };
    rig.prepare();
    let mut cot = rig.cot();
    cot.frts_vidmem_offset = 0x20_0000;
    let reply = rig.fsp_message(0x14, cot.as_bytes());
    assert_eq!(reply[4], 0xa1, "FSP_ERR_IFS_ERR_INVALID_DATA");
    assert!(
        rig.gpu
            .log()
            .warnings()
            .iter()
            .any(|w| w.contains("frtsVidmemOffset")),
        "{:?}",
        rig.gpu.log().warnings()
    );
    rig.edit_wpr_meta(|m| m.pmu_reserved_size = 0);
    assert_eq!(rig.send_cot().1, 0, "the FSP takes the right FRTS offset");
    assert_eq!(
        rig.wait_lockdown(),
        Err(0x03),
        "the FMC refuses the WPR sizes"
    );
    assert!(
        rig.gpu
            .log()
            .warnings()
            .iter()
            .any(|w| w.contains("pmuReservedSize")),
        "{:?}",
        rig.gpu.log().warnings()
    );
    assert_eq!(rig.gpu.bar0_read(WPR2_ADDR_HI), 0, "no WPR2");
    rig.edit_wpr_meta(|m| m.pmu_reserved_size = 0x182_0000);
    rig.reset_and_requeue();
    assert_eq!(rig.send_cot().1, 0);
    rig.wait_lockdown().expect("GB10x's values boot");
}

/// Decodes a libos log buffer as `libosExtractLog_ReadRecord` (liblogdecode.c, 570.144)
/// does, with `libosLogMetadata` as `libos_log.h` lays it out (argumentCount at 20): the
/// format strings and arguments of the records, oldest first.
fn decode_libos(buf: &[u8]) -> Vec<(String, Vec<u64>)> {
    let (base, section) = logging_section();
    let word =
        |i: u64| u64::from_le_bytes(buf[i as usize * 8..i as usize * 8 + 8].try_into().unwrap());
    let entries = (buf.len() / 8 - 1) as u64;
    let at = |k: u64| word(1 + k % entries);
    let string = |va: u64| {
        let s = &section[(va - base) as usize..];
        String::from_utf8_lossy(&s[..s.iter().position(|&b| b == 0).unwrap()]).into_owned()
    };
    let mut i = word(0);
    let mut out = Vec::new();
    while i >= 2 {
        let meta = (at(i - 2) - base) as usize;
        let args = u64::from(section[meta + 20]);
        let format = u64::from_le_bytes(section[meta + 8..meta + 16].try_into().unwrap());
        out.push((string(format), (i - 2 - args..i - 2).map(at).collect()));
        i -= 2 + args;
    }
    out.reverse();
    out
}

#[test]
fn fmc_failures_leave_their_code_in_mailbox0_and_keep_the_lockdown() {
    let Some(mut rig) = Rig::new(SimChip::Gh100, FaultPlan::default()) else {
        return;
    };
    rig.prepare();
    type Edit = (&'static str, fn(&mut Rig, bool), u32);
    let edits: Vec<Edit> = vec![
        (
            "WPR meta magic",
            |r, _| r.edit_wpr_meta(|m| m.magic ^= 1),
            0x02,
        ),
        (
            "gspFwHeapSize",
            |r, undo| {
                let want = heap_size(r.chip.spec().vram_bytes);
                r.edit_wpr_meta(|m| m.gsp_fw_heap_size = if undo { want } else { want - (1 << 20) })
            },
            0x03,
        ),
        (
            "frtsOffset set",
            |r, undo| r.edit_wpr_meta(|m| m.frts_offset = if undo { 0 } else { 0x1000 }),
            0x03,
        ),
        (
            "GSP-RM image page",
            |r, _| {
                let at = r.radix.bus + ((r.radix_tables + 1000) * PAGE) as u64;
                let mut b = [0u8; 1];
                r.read(at, &mut b);
                r.write(at, &[b[0] ^ 1]);
            },
            0x04,
        ),
        (
            "bootloaderCodeOffset",
            |r, undo| {
                r.edit_wpr_meta(|m| {
                    if undo {
                        m.bootloader_code_offset -= 0x100
                    } else {
                        m.bootloader_code_offset += 0x100
                    }
                })
            },
            0x05,
        ),
        (
            "sizeOfSignature",
            |r, undo| {
                r.edit_wpr_meta(|m| {
                    if undo {
                        m.size_of_signature *= 2
                    } else {
                        m.size_of_signature /= 2
                    }
                })
            },
            0x06,
        ),
        (
            "no RMARGS",
            |r, undo| {
                // The sixth libos entry is RMARGS; renaming it hides it.
                let at = r.libos.bus + 5 * 32;
                let id = if undo {
                    0x524d_4152_4753u64
                } else {
                    0x524d_4152_4758
                };
                r.write(at, &id.to_le_bytes());
            },
            0x08,
        ),
        (
            "bIsGspRmBoot",
            |r, undo| {
                let at = r.boot_params.bus + 8 + 28;
                r.write(at, &[u8::from(undo)]);
            },
            0x01,
        ),
    ];
    for (what, edit, code) in edits {
        edit(&mut rig, false);
        assert_eq!(
            rig.send_cot().1,
            0,
            "the FSP accepts; the FMC finds the problem"
        );
        assert_eq!(
            rig.wait_lockdown(),
            Err(code),
            "{what}: MAILBOX0; log {:?}",
            rig.gpu.log().warnings()
        );
        assert_ne!(
            rig.gpu.bar0_read(GSP_HWCFG2) & (1 << 13),
            0,
            "{what}: the lockdown stays"
        );
        assert_eq!(rig.gpu.bar0_read(WPR2_ADDR_HI), 0, "{what}: no WPR2");
        edit(&mut rig, true);
        rig.reset_and_requeue();
    }
    assert_eq!(rig.send_cot().1, 0);
    rig.wait_lockdown()
        .expect("every edit undone, the FMC boots");
    rig.wait_for(RpcEvent::GspInitDone.as_u32(), 5000);
}

#[test]
fn injected_silent_gsp_never_reports_init_done() {
    let faults = FaultPlan {
        gsp_silent: true,
        ..Default::default()
    };
    let Some(mut rig) = Rig::new(SimChip::Gh100, faults) else {
        return;
    };
    rig.prepare();
    assert_eq!(rig.send_cot().1, 0);
    rig.wait_lockdown().expect("the FMC still boots");
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(rig.recv().is_none(), "no message at all");
    assert!(
        rig.gpu
            .log()
            .warnings()
            .iter()
            .any(|w| w.contains("GSP-RM is silent"))
    );
    rig.gpu.inject(|f| f.gsp_silent = false);
    rig.wait_for(RpcEvent::GspInitDone.as_u32(), 5000);
}

#[test]
fn system_info_must_describe_the_pci_function() {
    let Some(mut rig) = Rig::new(SimChip::Gb202, FaultPlan::default()) else {
        return;
    };
    rig.prepare();
    rig.reset_queues_only();
    let mut s = rig.system_info();
    s.gpu_phys_addr += 0x1000;
    rig.send(RpcFunction::GspSetSystemInfo.as_u32(), s.as_bytes());
    rig.queue_registry(&[("RMSecBusResetEnable", 1)]);
    assert_eq!(rig.send_cot().1, 0);
    rig.wait_lockdown().unwrap();
    wait_for_log(&rig, "does not describe this PCI function");
    let got = rig.recv().map(|r| r.map(|(h, _)| h.function));
    assert!(
        got.is_none(),
        "no GSP_INIT_DONE: {got:?} {:?}",
        rig.gpu.log().warnings()
    );
    assert!(
        rig.gpu
            .log()
            .contains("does not describe this PCI function")
    );
    // A malformed registry table stops init as well.
    rig.reset_queues_only();
    rig.queue_system_info();
    let mut t = Rig::registry_table(&[("RMSecBusResetEnable", 1)]);
    t[8..12].copy_from_slice(&0xfffu32.to_le_bytes());
    rig.send(RpcFunction::SetRegistry.as_u32(), &t);
    assert_eq!(rig.send_cot().1, 0);
    rig.wait_lockdown().unwrap();
    wait_for_log(&rig, "SET_REGISTRY malformed");
    assert!(rig.recv().is_none());
}

/// Waits until the simulator's log says `what`.
fn wait_for_log(rig: &Rig, what: &'static str) {
    let clock = rig.clock;
    nvbare_core::hal::poll_until(&clock, wait("a simulator log line", 5000), || {
        rig.gpu.log().contains(what).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}: {what}"));
}

#[test]
fn commands_need_the_doorbell_and_bad_ones_are_dropped() {
    let Some(mut rig) = Rig::new(SimChip::Gh100, FaultPlan::default()) else {
        return;
    };
    rig.boot();
    let static_info = RpcFunction::GetGspStaticInfo.as_u32();
    rig.ring = false;
    rig.send(static_info, &[0; 4]);
    std::thread::sleep(std::time::Duration::from_millis(30));
    assert!(
        rig.recv().is_none(),
        "GSP-RM waits for NV_PGSP_QUEUE_HEAD(0)"
    );
    rig.gpu.bar0_write(GSP_QUEUE_HEAD0, 0);
    rig.ring = true;
    let (_, p) = rig.wait_for(static_info, 2000);
    assert_eq!(p.len(), core::mem::size_of::<GspStaticConfigInfo>());
    // A corrupt checksum, then a wrong sequence number: both dropped, the next one served.
    rig.send_record_with(static_info, &[0; 4], |e| e.check_sum ^= 0x10);
    rig.send_record_with(static_info, &[0; 4], |e| {
        // seqNum shares a 64-bit word with checkSum: keep the checksum right.
        let old = e.seq_num;
        e.seq_num = old + 5;
        e.check_sum ^= old ^ (old + 5);
    });
    let (h, _) = rig.call(static_info, &[0; 4]);
    assert_eq!(h.rpc_result, 0);
    let warnings = rig.gpu.log().warnings().join("\n");
    assert!(warnings.contains("checksum of the"), "{warnings}");
    assert!(warnings.contains("seqNum"), "{warnings}");
    assert!(rig.recv().is_none(), "the dropped commands got no replies");
}

#[test]
fn gsp_rm_reaches_host_memory_only_with_bus_mastering_on() {
    let Some(mut rig) = Rig::new(SimChip::Gh100, FaultPlan::default()) else {
        return;
    };
    rig.boot();
    let static_info = RpcFunction::GetGspStaticInfo.as_u32();
    rig.call(static_info, &[0; 4]);
    // PCI_COMMAND: memory space on, bus mastering off.
    assert!(rig.gpu.config_write(4, 2, 0x2));
    rig.send(static_info, &[0; 4]);
    wait_for_log(&rig, "while bus mastering is off");
    assert!(rig.recv().is_none(), "no reply without DMA");
    // Back on: the queued command is read at the next doorbell and answered.
    assert!(rig.gpu.config_write(4, 2, 0x6));
    rig.gpu.bar0_write(GSP_QUEUE_HEAD0, 0);
    let (h, _) = rig.wait_for(static_info, 2000);
    assert_eq!(h.rpc_result, 0);
}

#[test]
fn an_out_of_range_write_pointer_is_read_as_nothing() {
    let Some(mut rig) = Rig::new(SimChip::Gh100, FaultPlan::default()) else {
        return;
    };
    rig.boot();
    let static_info = RpcFunction::GetGspStaticInfo.as_u32();
    rig.call(static_info, &[0; 4]);
    // 1000 is far past the 63 entries; modulo the ring it would name entries never written.
    rig.write(rig.cmdq() + 16, &1000u32.to_le_bytes());
    rig.gpu.bar0_write(GSP_QUEUE_HEAD0, 0);
    wait_for_log(&rig, "writePtr 1000 is not below its msgCount");
    assert!(rig.recv().is_none(), "nothing was read, nothing answered");
    // The next message (which puts the right writePtr back) is the next one read.
    let (h, _) = rig.call(static_info, &[0; 4]);
    assert_eq!(h.rpc_result, 0);
}

#[test]
fn static_info_is_realistic() {
    let Some(mut rig) = Rig::new(SimChip::Gh100, FaultPlan::default()) else {
        return;
    };
    rig.boot();
    let (h, p) = rig.call(RpcFunction::GetGspStaticInfo.as_u32(), &[0; 4]);
    assert_eq!(h.rpc_result, 0);
    let s = GspStaticConfigInfo::read_from_bytes(&p).unwrap();
    let spec = SimChip::Gh100.spec();
    assert_eq!(s.fb_length, 143_771 << 20);
    let name = &s.gpu_name_string;
    assert_eq!(
        &name[..name.iter().position(|&b| b == 0).unwrap()],
        b"NVIDIA H200"
    );
    assert_eq!(s.gid_info.length, 16);
    assert_ne!(s.h_internal_client, 0);
    assert_eq!(
        s.fw_wpr_layout_offset.frts_offset,
        spec.vram_bytes - 0x20_0000
    );
    assert_eq!(s.b_is_tesla, 1);
}

#[test]
fn injected_rpc_failure_and_corrupt_reply() {
    let static_info = RpcFunction::GetGspStaticInfo.as_u32();
    let faults = FaultPlan {
        rpc_failure: Some((static_info, NvStatus::ERR_GENERIC.0)),
        ..Default::default()
    };
    let Some(mut rig) = Rig::new(SimChip::Gb202, faults) else {
        return;
    };
    rig.boot();
    let (h, _) = rig.call(static_info, &[0; 4]);
    assert_eq!(h.rpc_result, NvStatus::ERR_GENERIC.0, "the injected status");
    rig.gpu.inject(|f| {
        f.rpc_failure = None;
        f.corrupt_reply_to = Some(static_info);
    });
    rig.send(static_info, &[0; 4]);
    let clock = rig.clock;
    let got = nvbare_core::hal::poll_until(&clock, wait("a reply", 2000), || rig.recv());
    let err = got.unwrap().expect_err("the reply's checksum is corrupt");
    assert!(err.contains("bad checksum"), "{err}");
    assert!(
        rig.gpu
            .log()
            .warnings()
            .iter()
            .any(|w| w.contains("corrupt checksum"))
    );
}

#[test]
fn unload_halts_the_gsp_and_lowers_wpr2() {
    let Some(mut rig) = Rig::new(SimChip::Gh100, FaultPlan::default()) else {
        return;
    };
    rig.boot();
    assert_ne!(rig.gpu.bar0_read(WPR2_ADDR_HI), 0);
    // __GPU_STATE_FLAGS_FAST_UNLOAD, as tinygrad sends it.
    let unload = RpcUnloadingGuestDriver {
        new_level: 1 << 6,
        ..Default::default()
    };
    let (h, _) = rig.call(
        RpcFunction::UnloadingGuestDriver.as_u32(),
        unload.as_bytes(),
    );
    assert_eq!(h.rpc_result, 0);
    let clock = rig.clock;
    nvbare_core::hal::poll_until(&clock, wait("RISC-V halt", 2000), || {
        (rig.gpu.bar0_read(GSP_RISCV_CPUCTL) & 0x10 != 0).then_some(())
    })
    .expect("GSP halts after unloading");
    assert_eq!(
        rig.gpu.bar0_read(WPR2_ADDR_HI),
        0,
        "a clean unload lowers WPR2"
    );
    // A driver reload boots the halted GSP again without a reset.
    rig.reset_queues_only_keeping_gpu();
    rig.queue_system_info();
    rig.queue_registry(&[("RMSecBusResetEnable", 1)]);
    assert_eq!(rig.send_cot().1, 0, "a new COT after a clean unload");
    rig.wait_lockdown().unwrap();
    rig.wait_for(RpcEvent::GspInitDone.as_u32(), 5000);
    // An unload for a power transition keeps WPR2 (GC6 keeps it alive).
    let pm = RpcUnloadingGuestDriver {
        b_in_pm_transition: 1,
        ..Default::default()
    };
    rig.call(RpcFunction::UnloadingGuestDriver.as_u32(), pm.as_bytes());
    nvbare_core::hal::poll_until(&clock, wait("RISC-V halt", 2000), || {
        (rig.gpu.bar0_read(GSP_RISCV_CPUCTL) & 0x10 != 0).then_some(())
    })
    .unwrap();
    assert_ne!(
        rig.gpu.bar0_read(WPR2_ADDR_HI),
        0,
        "WPR2 stays for a PM transition"
    );
}

#[test]
fn garbage_commands_and_packets_are_refused_without_harm() {
    let Some(mut rig) = Rig::new(SimChip::Gh100, FaultPlan::default()) else {
        return;
    };
    rig.prepare();
    // xorshift64: deterministic garbage.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..20 {
        let n = 2 + (next() % 250) as usize;
        let packet: Vec<u32> = (0..n).map(|_| next() as u32).collect();
        let reply = rig.fsp_packet(&packet);
        assert_ne!(reply[4], 0, "garbage is never a chain of trust");
    }
    rig.boot_after_prepare();
    for i in 0..30 {
        let len = (next() % 3000) as usize;
        let payload: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let function = match i % 3 {
            0 => RpcFunction::GspRmAlloc.as_u32(),
            1 => RpcFunction::GspRmControl.as_u32(),
            _ => next() as u32,
        };
        rig.send(function, &payload);
    }
    // Whatever the garbage got back, GSP-RM still answers a good call afterwards.
    let clock = rig.clock;
    let _ = nvbare_core::hal::poll_until(&clock, wait("garbage replies", 300), || {
        while let Some(r) = rig.recv() {
            r.expect("replies to garbage are still well-formed messages");
        }
        None::<()>
    });
    let (h, _) = rig.call(RpcFunction::GetGspStaticInfo.as_u32(), &[0; 4]);
    assert_eq!(h.rpc_result, 0);
}
