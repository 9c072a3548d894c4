//! Which reply goes to which RPC, against the fake's GSP-RM: by function and the handles and
//! command the reply echoes, replies to commands sent without waiting first, a wait ended by
//! an error leaving its reply to come late, and a lost reply forgotten once a later command
//! is answered.

extern crate std;

use std::string::ToString;
use std::vec::Vec;

use nvbare_gsp::rm::ctrl::gr::InternalStaticGrGetInfoParams;
use nvbare_gsp::rpc::commands::Command;
use nvbare_gsp::rpc::events::GspMessage;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::{Files, assert_mentions, boot_fake};
use crate::boot::tests::fake::Script;
use crate::gsp_rpc::{GspEvent, Reply, RpcErrorKind};

const CLIENT: u32 = 0xc1d0_0001;
/// `NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_INFO`, which the fake answers with a count.
const GR_INFO: u32 = 0x2080_0a2a;
/// GR info answers the boot itself took (the static info query).
const AT_BOOT: u32 = 1;

fn gr_info(object: u32) -> Command {
    let zero = InternalStaticGrGetInfoParams::new_zeroed();
    Command::rm_control(CLIENT, object, GR_INFO, zero.as_bytes()).unwrap()
}

/// The object the reply names and the fake's answer count it carries.
fn answered(r: &Reply) -> (u32, u32) {
    let GspMessage::RmControlReply {
        h_object, params, ..
    } = &r.body
    else {
        panic!("not a control reply: {r:?}")
    };
    let p = InternalStaticGrGetInfoParams::read_from_bytes(params).unwrap();
    (*h_object, p.engine_info[0].info_list[0].data)
}

fn late_replies(events: &[GspEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, GspEvent::LateReply { function, .. } if function.0 == 76))
        .count()
}

#[test]
fn a_reply_to_a_command_sent_without_waiting_is_not_the_next_calls() {
    let files = Files::gh100();
    let mut gsp = boot_fake(Script::default(), &files).unwrap();
    gsp.rpc().send(&gr_info(0xa)).unwrap();
    let r = gsp.rpc().call(&gr_info(0xb)).unwrap();
    assert_eq!(
        answered(&r),
        (0xb, AT_BOOT + 2),
        "its own reply, the second answer"
    );
    drop(gsp);
}

#[test]
fn a_reply_naming_another_object_is_not_taken() {
    let files = Files::gh100();
    let mut gsp = boot_fake(Script::default(), &files).unwrap();
    // A reply nobody asked for (to object 0xdead) comes before the real one.
    let stray = gr_info(0xdead);
    gsp.platform().gsp_event(76, &stray.payload);
    let r = gsp.rpc().call(&gr_info(0xb)).unwrap();
    assert_eq!(answered(&r).0, 0xb);
    let events: Vec<GspEvent> = gsp.rpc_state().drain_events().collect();
    assert_eq!(late_replies(&events), 1, "{events:?}");
    drop(gsp);
}

#[test]
fn a_wait_ended_by_an_error_leaves_its_reply_to_come_late() {
    let files = Files::gh100();
    let mut gsp = boot_fake(Script::default(), &files).unwrap();
    // GSP_RUN_CPU_SEQUENCER ends the wait with an error before the reply is read.
    gsp.platform().gsp_event(0x1002, &[0; 16]);
    let e = gsp.rpc().call(&gr_info(0xa)).unwrap_err();
    assert_eq!(e.kind, RpcErrorKind::UnexpectedSequencer, "{e}");
    assert_mentions(
        &e.to_string(),
        &["GSP_RUN_CPU_SEQUENCER", "FSP", "firmware fetch"],
    );
    // The same call again gets the second answer; the first is recognised as late.
    let r = gsp.rpc().call(&gr_info(0xa)).unwrap();
    assert_eq!(answered(&r), (0xa, AT_BOOT + 2));
    let events: Vec<GspEvent> = gsp.rpc_state().drain_events().collect();
    assert_eq!(late_replies(&events), 1, "{events:?}");
    drop(gsp);
}

#[test]
fn a_lost_reply_does_not_take_the_answers_of_later_calls() {
    let files = Files::gh100();
    let mut gsp = boot_fake(Script::default(), &files).unwrap();
    gsp.platform().script_mut().lose_reply_to = Some(76);
    let e = gsp.rpc().call_within(&gr_info(0xa), 1_000_000).unwrap_err();
    assert!(matches!(e.kind, RpcErrorKind::Timeout { .. }), "{e}");
    // Another object's call, then the lost one's again: each gets its own answer.
    let r = gsp.rpc().call(&gr_info(0xb)).unwrap();
    assert_eq!(answered(&r), (0xb, AT_BOOT + 1));
    let r = gsp.rpc().call(&gr_info(0xa)).unwrap();
    assert_eq!(answered(&r), (0xa, AT_BOOT + 2));
    drop(gsp);
}
