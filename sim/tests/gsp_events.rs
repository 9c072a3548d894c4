//! The events the simulated GSP-RM sends when a channel faults: an MMU fault from the MMU
//! unit (`World::mmu_faults`) and a channel error another unit signals become
//! MMU_FAULT_QUEUED, OS_ERROR_LOG (an Xid) and RC_TRIGGERED, and the debugger reads the
//! fault back.

mod gsp_rig;

use nvbare_gsp::abi::*;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::debugger::ReadMmuFaultInfoParams;
use nvbare_sim::SimChip;
use nvbare_sim::device::{Engine, MmuFaultRecord, Signal};
use nvbare_sim::memory::Access;
use zerocopy::{FromBytes, IntoBytes};

use gsp_rig::rm::*;

#[test]
fn channel_faults_become_gsp_rm_events() {
    let Some(mut rig) = booted(SimChip::Gh100) else {
        return;
    };
    basic_objects(&mut rig);
    // The channel as the driver builds it (VA space, page directory, group, context share,
    // channel, compute and copy objects, debugger, scheduled).
    compute_channel(&mut rig, SimChip::Gh100, 0x800_0000);
    let (token, chid) = rig
        .gpu
        .with_world(|w| w.channels.iter().map(|(t, c)| (*t, c.chid)).next().unwrap());
    rig.gpu.with_world(|w| {
        w.mmu_faults.push_back(MmuFaultRecord {
            va: 0xdead_b000,
            access: Access::Write,
            fault_type: 2,
            token,
            engine: Engine::Graphics,
            at_ns: 0,
        })
    });
    rig.wait_for(RpcEvent::MmuFaultQueued.as_u32(), 2000);
    let (_, p) = rig.wait_for(RpcEvent::OsErrorLog.as_u32(), 2000);
    let log = RpcOsErrorLog::read_from_prefix(&p).unwrap().0;
    assert_eq!(
        (log.except_type, log.chid),
        (31, chid),
        "Xid 31 on the channel"
    );
    let text = String::from_utf8_lossy(&log.err_string);
    assert!(text.contains("0xdeadb000"), "{text}");
    let (_, p) = rig.wait_for(RpcEvent::RcTriggered.as_u32(), 2000);
    let rc = RpcRcTriggered::read_from_prefix(&p).unwrap().0;
    assert_eq!(
        (
            rc.chid,
            rc.except_type,
            rc.mmu_fault_addr_lo,
            rc.mmu_fault_type,
            rc.nv2080_engine_type
        ),
        (chid, 31, 0xdead_b000, 2, 1)
    );
    // The debugger reads the fault back.
    let out = ok(
        rig.rm_control(
            CLIENT,
            DEBUGGER,
            cmd::NV83DE_DEBUG_READ_MMU_FAULT_INFO,
            ReadMmuFaultInfoParams::default().as_bytes(),
        ),
        "fault info",
    );
    let fi = ReadMmuFaultInfoParams::read_from_bytes(&out).unwrap();
    assert_eq!(fi.faults().len(), 1);
    assert_eq!(fi.faults()[0].fault_address, 0xdead_b000);
    // A channel error another unit signals: an Xid and RC_TRIGGERED.
    rig.gpu.with_world(|w| {
        w.signals.push_back(Signal::ChannelError {
            token,
            reason: "illegal method".into(),
        })
    });
    let (_, p) = rig.wait_for(RpcEvent::RcTriggered.as_u32(), 2000);
    let rc = RpcRcTriggered::read_from_prefix(&p).unwrap().0;
    assert_eq!(
        (rc.chid, rc.except_type),
        (chid, 13),
        "Xid 13: a GR exception"
    );
}
