//! GSP-RM's events as fault reports. On the VFIO path nobody else hears the GPU's errors:
//! GSP-RM sends `MMU_FAULT_QUEUED` (no payload), `OS_ERROR_LOG` (an Xid, its runlist and
//! channel, the text) and `RC_TRIGGERED` (engine, channel, Xid, the MMU fault's address and
//! type) on its status queue (`_kgspRpcMMUFaultQueued`, `_kgspRpcOsErrorLog`,
//! `_kgspRpcRCTriggered` in kernel_gsp.c); this turns them into one [`FaultReport`].

use nvbare_gsp::rpc::events::GspMessage;

use crate::gsp_rpc::GspEvent;
use crate::rm::{ACCESS_TYPE_UNKNOWN, ChannelError, FaultReport, MmuFault};

/// `ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT` (`nverror.h`): Xid 31.
const XID_MMU_FAULT: u32 = 31;

/// Whether Xid `xid` (`nverror.h`) stops the channel it names, for the engines nvbare drives
/// (graphics/compute and copy): a channel timeout (8), `ROBUST_CHANNEL_GR_EXCEPTION` (13),
/// `_FIFO_ERROR_MMU_ERR_FLT` (31), `_PBDMA_ERROR` (32), `_CE0.._CE19_ERROR` (39-41, 70-72,
/// 75-77, 85, 126-135), `_RESETCHANNEL_VERIF_ERROR` (43), `_GR_FAULT_DURING_CTXSW` (44),
/// `_PREEMPTIVE_REMOVAL` (45), `_GR_CLASS_ERROR` (69), `_CONTAINED_ERROR` /
/// `_UNCONTAINED_ERROR` (94, 95). Others (page retirement, ECC counts, PMU, GSP RPC
/// timeouts, other engines) do not.
fn channel_fatal(xid: u32) -> bool {
    matches!(
        xid,
        8 | 13
            | 31
            | 32
            | 39..=41
            | 43..=45
            | 69
            | 70..=72
            | 75..=77
            | 85
            | 94
            | 95
            | 126..=135
    )
}

/// The `NV_PFAULT_ACCESS_TYPE_*` an Xid 31 text names, if any: RM prints the access as
/// `ACCESS_TYPE_VIRT_WRITE` and the like, the simulator as a word.
fn access_in(text: &str) -> Option<u32> {
    let t = text.to_ascii_lowercase();
    if t.contains("atomic") {
        Some(0x2)
    } else if t.contains("prefetch") {
        Some(0x3)
    } else if t.contains("write") {
        Some(0x1)
    } else if t.contains("read") {
        Some(0x0)
    } else {
        None
    }
}

/// Folds the events into a report; `None` when none of them is a fault. An `OS_ERROR_LOG`
/// or `RC_TRIGGERED` counts only when its Xid stops a channel and `ours(chid, runlist,
/// engine_type)` says the channel is one of ours (GSP-RM reports its own channels' and
/// informational Xids the same way); the others are logged.
pub fn fault_report(
    events: impl IntoIterator<Item = GspEvent>,
    ours: impl Fn(u32, Option<u32>, Option<u32>) -> bool,
) -> Option<FaultReport> {
    let mut r = FaultReport::default();
    let mut access = None;
    let mut queued = false;
    for e in events {
        let GspEvent::Message(m) = e else { continue };
        match m.body {
            GspMessage::MmuFaultQueued => queued = true,
            GspMessage::OsErrorLog {
                exception_type,
                runlist_id,
                chid,
                message,
                ..
            } => {
                if !channel_fatal(exception_type) || !ours(chid, Some(runlist_id), None) {
                    log::info!(
                        "GSP-RM: Xid {exception_type} on channel {chid} (runlist {runlist_id}) \
                         is no fault of ours: {message}"
                    );
                    continue;
                }
                if exception_type == XID_MMU_FAULT {
                    access = access.or(access_in(&message));
                }
                match &mut r.channel {
                    Some(c) if c.chid == chid => c.runlist = Some(runlist_id),
                    Some(_) => {}
                    None => {
                        r.channel = Some(ChannelError {
                            chid,
                            runlist: Some(runlist_id),
                            engine_type: None,
                            xid: exception_type,
                        })
                    }
                }
            }
            GspMessage::RcTriggered {
                engine_type,
                chid,
                except_type,
                mmu_fault_addr,
                mmu_fault_type,
                ..
            } => {
                if !channel_fatal(except_type) || !ours(chid, None, Some(engine_type)) {
                    log::info!(
                        "GSP-RM: RC_TRIGGERED Xid {except_type} on channel {chid} (engine \
                         {engine_type:#x}) is no fault of ours"
                    );
                    continue;
                }
                match &mut r.channel {
                    Some(c) if c.chid == chid => c.engine_type = Some(engine_type),
                    Some(_) => {}
                    None => {
                        r.channel = Some(ChannelError {
                            chid,
                            runlist: None,
                            engine_type: Some(engine_type),
                            xid: except_type,
                        })
                    }
                }
                if except_type == XID_MMU_FAULT || mmu_fault_addr != 0 {
                    r.add_mmu(MmuFault {
                        address: mmu_fault_addr,
                        fault_type: mmu_fault_type,
                        access_type: ACCESS_TYPE_UNKNOWN,
                    });
                }
            }
            _ => {}
        }
    }
    if let Some(a) = access {
        for f in r.mmu.iter_mut() {
            if f.access_type == ACCESS_TYPE_UNKNOWN {
                f.access_type = a;
            }
        }
    }
    if queued && r.mmu.is_empty() {
        // The fault's details are in the fault buffer, which GSP-RM keeps itself.
        r.mmu_without_address = Some(0);
    }
    (!r.is_empty()).then_some(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use nvbare_gsp::rpc::events::DecodedMessage;
    use nvbare_gsp::rpc::{MessageFunction, RpcResult};

    fn ev(body: GspMessage) -> GspEvent {
        GspEvent::Message(DecodedMessage {
            function: MessageFunction(0x1000),
            result: RpcResult::OK,
            body,
        })
    }

    #[test]
    fn an_mmu_fault_names_address_type_access_and_channel() {
        let events = [
            ev(GspMessage::MmuFaultQueued),
            ev(GspMessage::OsErrorLog {
                exception_type: 31,
                runlist_id: 0,
                chid: 1,
                message: String::from("MMU Fault: ENGINE Graphics write at VA 0x6fff00000000"),
                preemptive_removal_previous_xid: 0,
            }),
            ev(GspMessage::RcTriggered {
                engine_type: 1,
                chid: 1,
                gfid: 0,
                except_level: 0,
                except_type: 31,
                scope: 0,
                partition_attribution_id: 0,
                mmu_fault_addr: 0x6fff_0000_0000,
                mmu_fault_type: 2,
                callback_needed: false,
                journal: alloc::vec::Vec::new(),
            }),
        ];
        let r = fault_report(events.clone(), |_, _, _| true).unwrap();
        assert_eq!(
            r.mmu.as_slice(),
            &[MmuFault {
                address: 0x6fff_0000_0000,
                fault_type: 2,
                access_type: 1
            }]
        );
        assert_eq!(
            r.channel,
            Some(ChannelError {
                chid: 1,
                runlist: Some(0),
                engine_type: Some(1),
                xid: 31
            })
        );
        assert!(fault_report([ev(GspMessage::InitDone)], |_, _, _| true).is_none());
        let q = fault_report([ev(GspMessage::MmuFaultQueued)], |_, _, _| true).unwrap();
        assert_eq!(q.mmu_without_address, Some(0));
        // Another channel's fault is no fault of ours (only the queued notice remains).
        let theirs = fault_report(events, |chid, _, _| chid == 2).unwrap();
        assert!(
            theirs.channel.is_none() && theirs.mmu.is_empty(),
            "{theirs:?}"
        );
    }

    #[test]
    fn only_channel_fatal_xids_of_our_channels_count() {
        let log = |xid, chid| {
            ev(GspMessage::OsErrorLog {
                exception_type: xid,
                runlist_id: 0,
                chid,
                message: String::from("text"),
                preemptive_removal_previous_xid: 0,
            })
        };
        let ours = |chid: u32, runlist: Option<u32>, _: Option<u32>| {
            chid == 1 && runlist.is_none_or(|r| r == 0)
        };
        // Xid 63 (INFOROM_PAGE_RETIREMENT_EVENT) and 92 (EXCESSIVE_SBE_INTERRUPTS) stop
        // nothing.
        assert!(fault_report([log(63, 1), log(92, 1)], ours).is_none());
        assert!(
            fault_report([log(13, 7)], ours).is_none(),
            "not our channel"
        );
        let r = fault_report([log(13, 1)], ours).unwrap();
        assert_eq!(r.channel.map(|c| (c.chid, c.xid)), Some((1, 13)));
        for xid in [8, 31, 32, 39, 43, 45, 69, 77, 85, 95, 135] {
            assert!(channel_fatal(xid), "{xid}");
        }
        for xid in [48, 62, 63, 79, 92, 119, 120] {
            assert!(!channel_fatal(xid), "{xid}");
        }
    }
}
