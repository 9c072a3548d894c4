//! The simulated FSP: EMEM channel, chain-of-trust checks field by field, the reply, and the
//! FSP's fault injections. Messages are built here from `kern_fsp_cot_payload.h`'s layout
//! and the real FMC files ([`gsp_rig`]).

mod gsp_rig;

use gsp_rig::*;
use nvbare_gsp::abi::NvdmPayloadCot;
use nvbare_sim::{FaultPlan, SimChip, SimGpu};
use zerocopy::IntoBytes;

/// `FSP_ERR_IFS_ERR_INVALID_STATE`, `_IFS_ERR_NOT_SUPPORTED`, `_IFS_ERR_INVALID_DATA`
/// (kern_fsp_retval.h).
const INVALID_STATE: u32 = 0x9e;
const NOT_SUPPORTED: u32 = 0xa0;
const INVALID_DATA: u32 = 0xa1;

#[test]
fn emem_auto_increments_and_encodes_block_and_offset() {
    let gpu = SimGpu::new(SimChip::Gh100).unwrap();
    // OFFS 7:2 (dwords in the block), BLK 15:8 (64-dword blocks), AINCW 24.
    gpu.bar0_write(FSP_EMEMC, (6 << 2) | (1 << 8) | (1 << 24));
    for v in [0x11, 0x22, 0x33] {
        gpu.bar0_write(FSP_EMEMD, v);
    }
    assert_eq!(
        gpu.bar0_read(FSP_EMEMC),
        (9 << 2) | (1 << 8) | (1 << 24),
        "offset 70 + 3 = block 1, dword 9"
    );
    gpu.bar0_write(FSP_EMEMC, (6 << 2) | (1 << 8) | (1 << 25));
    let got: Vec<u32> = (0..3).map(|_| gpu.bar0_read(FSP_EMEMD)).collect();
    assert_eq!(got, [0x11, 0x22, 0x33]);
    // Without auto-increment the offset stays.
    gpu.bar0_write(FSP_EMEMC, 6 << 2 | 1 << 8);
    assert_eq!(
        (gpu.bar0_read(FSP_EMEMD), gpu.bar0_read(FSP_EMEMD)),
        (0x11, 0x11)
    );
    // Outside channel 0's 1 KiB: ignored and logged.
    gpu.bar0_write(FSP_EMEMC, (4 << 8) | (1 << 24));
    gpu.bar0_write(FSP_EMEMD, 0xdead);
    assert!(gpu.log().contains("outside EMEM channel 0"));
}

#[test]
fn fsp_ready_scratch_is_per_chip() {
    for (chip, at) in [
        (SimChip::Gh100, 0x0002_00bc),
        (SimChip::Gb202, 0x00ad_00bc),
        (SimChip::Gb100, 0x0002_00bc),
    ] {
        let gpu = SimGpu::new(chip).unwrap();
        let clock = nvbare_sim::platform::SimClock::default();
        nvbare_core::hal::poll_until(&clock, wait("FSP boot", 2000), || {
            (gpu.bar0_read(at) == 0xff).then_some(())
        })
        .expect("NV_THERM_I2CS_SCRATCH reads 0xff once the FSP booted");
        let other = if at == 0x2_00bc { 0xad_00bc } else { 0x2_00bc };
        assert_ne!(
            gpu.bar0_read(other),
            0xff,
            "{chip:?} has no FSP scratch at {other:#x}"
        );
        gpu.reset();
        nvbare_core::hal::poll_until(&clock, wait("FSP boot after reset", 2000), || {
            (gpu.bar0_read(at) == 0xff).then_some(())
        })
        .unwrap();
        let boots = gpu
            .log()
            .lines()
            .iter()
            .filter(|l| l.text.starts_with("FSP booted"))
            .count();
        assert_eq!(boots, 2, "the FSP boots again after a reset");
    }
}

/// One mutation of an otherwise correct COT and what the FSP must answer.
type Mutation = (&'static str, fn(&mut NvdmPayloadCot, &Rig), u32);

fn mutations() -> Vec<Mutation> {
    vec![
        ("version", |c, _| c.version ^= 3, INVALID_DATA),
        ("size", |c, _| c.size = 859, INVALID_DATA),
        (
            "frtsVidmemSize",
            |c, _| c.frts_vidmem_size = 0,
            INVALID_DATA,
        ),
        (
            "frtsVidmemOffset",
            |c, _| c.frts_vidmem_offset += 0x1000,
            INVALID_DATA,
        ),
        (
            "frtsSysmem half set",
            |c, _| c.frts_sysmem_size = 0x10_0000,
            INVALID_DATA,
        ),
        (
            "gspFmcSysmemOffset unaligned",
            |c, _| c.gsp_fmc_sysmem_offset += 4,
            INVALID_DATA,
        ),
        (
            "gspFmcSysmemOffset unmapped",
            |c, _| c.gsp_fmc_sysmem_offset = 0x1000,
            INVALID_DATA,
        ),
        (
            "gspFmcSysmemOffset -1",
            |c, _| c.gsp_fmc_sysmem_offset = u64::MAX,
            INVALID_DATA,
        ),
        (
            "gspBootArgsSysmemOffset unmapped",
            |c, _| c.gsp_boot_args_sysmem_offset = 0x2000,
            INVALID_DATA,
        ),
        ("hash384", |c, _| c.hash384[3] ^= 1, INVALID_DATA),
        ("publicKey", |c, _| c.public_key[0] ^= 1, INVALID_DATA),
        (
            "publicKey padding",
            |c, _| c.public_key[95] = 1,
            INVALID_DATA,
        ),
        ("signature", |c, _| c.signature[7] ^= 0x100, INVALID_DATA),
        (
            "signature padding",
            |c, _| c.signature[95] = 1,
            INVALID_DATA,
        ),
        (
            "FMC image in memory",
            |_, r| {
                let mut b = [0u8; 1];
                r.read(r.fmc.bus + 100, &mut b);
                r.write(r.fmc.bus + 100, &[b[0] ^ 0x40]);
            },
            INVALID_DATA,
        ),
    ]
}

fn check_cot_fields(chip: SimChip) {
    let Some(mut rig) = Rig::new(chip, FaultPlan::default()) else {
        return;
    };
    rig.prepare();
    for (what, mutate, want) in mutations() {
        let mut cot = rig.cot();
        let image_before = {
            let mut b = [0u8; 1];
            rig.read(rig.fmc.bus + 100, &mut b);
            b[0]
        };
        mutate(&mut cot, &rig);
        let reply = rig.fsp_message(0x14, cot.as_bytes());
        assert_eq!(
            reply[4],
            want,
            "{chip:?}: a bad {what} is refused; log: {:?}",
            rig.gpu.log().warnings()
        );
        assert_eq!(reply[3], 0x14, "commandNvdmType echoes COT");
        rig.write(rig.fmc.bus + 100, &[image_before]);
        assert_eq!(
            rig.gpu.bar0_read(GSP_HWCFG2) & (1 << 13),
            1 << 13,
            "{what}: the GSP did not start"
        );
    }
    // Headers and types.
    let cot = rig.cot();
    let mut packet: Vec<u32> = vec![1 << 31, 0x1410_de7e];
    packet.extend(
        cot.as_bytes()
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap())),
    );
    assert_eq!(rig.fsp_packet(&packet)[4], INVALID_DATA, "SOM without EOM");
    packet[0] = (1 << 31) | (1 << 30) | (3 << 16);
    assert_eq!(rig.fsp_packet(&packet)[4], INVALID_DATA, "SEID 3");
    packet[0] = (1 << 31) | (1 << 30);
    packet[1] = 0x1410_de7f;
    assert_eq!(
        rig.fsp_packet(&packet)[4],
        INVALID_DATA,
        "message type 0x7f"
    );
    assert_eq!(
        rig.fsp_message(0x16, &[0; 4])[4],
        NOT_SUPPORTED,
        "CAPS_QUERY is not served"
    );
    let mut long = cot.as_bytes().to_vec();
    long.extend_from_slice(&[0, 0, 0, 1]);
    assert_eq!(
        rig.fsp_message(0x14, &long)[4],
        INVALID_DATA,
        "non-zero bytes after the payload"
    );
    long.truncate(long.len() - 4);
    long.extend_from_slice(&[0; 4]);
    // tinygrad pads a whole-dword payload with one more zero dword; the FSP takes it.
    let reply = rig.fsp_message(0x14, &long);
    assert_eq!(
        reply,
        [(1 << 31) | (1 << 30), 0x1510_de7e, 0, 0x14, 0],
        "NVDM_TYPE_FSP_RESPONSE {{taskId, commandNvdmType COT, errorCode 0}}"
    );
    rig.wait_lockdown().expect("the FMC boots");
    assert_ne!(rig.gpu.bar0_read(WPR2_ADDR_HI), 0, "WPR2 is up");
    assert_eq!(
        rig.send_cot().1,
        INVALID_STATE,
        "a second COT before a reset is refused"
    );
}

#[test]
fn gh100_cot_every_field_is_checked() {
    check_cot_fields(SimChip::Gh100);
}

#[test]
fn gb202_cot_every_field_is_checked() {
    check_cot_fields(SimChip::Gb202);
}

#[test]
fn gb100_cot_every_field_is_checked() {
    check_cot_fields(SimChip::Gb100);
}

#[test]
fn cot_without_bus_mastering_is_refused() {
    let Some(mut rig) = Rig::new(SimChip::Gh100, FaultPlan::default()) else {
        return;
    };
    rig.prepare();
    rig.gpu.config_write(4, 2, 0x2);
    assert_eq!(rig.send_cot().1, INVALID_DATA);
    assert!(rig.gpu.log().contains("bus mastering"));
    rig.gpu.config_write(4, 2, 0x6);
    assert_eq!(rig.send_cot().1, 0);
}

#[test]
fn injected_fsp_error_code_is_the_reply_and_the_gsp_stays_down() {
    let faults = FaultPlan {
        fsp_error: Some(0x55),
        ..Default::default()
    };
    let Some(mut rig) = Rig::new(SimChip::Gb202, faults) else {
        return;
    };
    rig.prepare();
    assert_eq!(rig.send_cot().1, 0x55);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(
        rig.gpu.bar0_read(GSP_HWCFG2) & (1 << 13),
        1 << 13,
        "no FMC ran"
    );
    assert_eq!(rig.gpu.bar0_read(WPR2_ADDR_HI), 0);
    assert!(
        rig.gpu
            .log()
            .warnings()
            .iter()
            .any(|w| w.contains("fault: FSP answers errorCode 0x55"))
    );
}

#[test]
fn injected_corrupt_reply_has_the_wrong_nvdm_type() {
    let faults = FaultPlan {
        fsp_corrupt_reply: true,
        ..Default::default()
    };
    let Some(mut rig) = Rig::new(SimChip::Gh100, faults) else {
        return;
    };
    rig.prepare();
    let (reply, code) = rig.send_cot();
    assert_eq!(code, 0);
    // kfspProcessNvdmMessage_GH100 takes only FSP_RESPONSE (0x15) and SMBPBI.
    assert_eq!(
        reply[1] >> 24,
        0x14,
        "the reply claims NVDM type COT, not FSP_RESPONSE"
    );
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_ne!(
        rig.gpu.bar0_read(GSP_HWCFG2) & (1 << 13),
        0,
        "the FMC was not started: a driver ignoring the reply waits for the lockdown in vain"
    );
}

#[test]
fn wpr2_left_up_refuses_boot_until_reset() {
    let faults = FaultPlan {
        wpr2_left_up: true,
        ..Default::default()
    };
    let Some(mut rig) = Rig::new(SimChip::Gh100, faults) else {
        return;
    };
    assert_ne!(rig.gpu.bar0_read(WPR2_ADDR_HI), 0, "WPR2 is up at power-on");
    rig.prepare();
    assert_eq!(
        rig.send_cot().1,
        INVALID_STATE,
        "the FSP refuses the chain of trust"
    );
    assert!(rig.gpu.log().contains("WPR2 is up"));
    rig.gpu.reset();
    // While the FSP reboots BAR0 reads all ones: WPR2 can be read only after it booted.
    assert_eq!(rig.gpu.bar0_read(WPR2_ADDR_HI), u32::MAX, "rebooting");
    rig.gpu.config_write(4, 2, 0x6);
    let clock = rig.clock;
    nvbare_core::hal::poll_until(&clock, wait("FSP boot", 2000), || {
        (rig.gpu.bar0_read(0x2_00bc) == 0xff).then_some(())
    })
    .unwrap();
    assert_eq!(rig.gpu.bar0_read(WPR2_ADDR_HI), 0, "a reset lowers WPR2");
    rig.program_sysmem_flush();
    assert_eq!(rig.send_cot().1, 0, "after the reset the FSP boots the FMC");
    rig.wait_lockdown().expect("the FMC runs");
}
