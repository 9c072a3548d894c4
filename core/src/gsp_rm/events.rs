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

/// Folds the events into a report; `None` when none of them is a fault.
pub fn fault_report(events: impl IntoIterator<Item = GspEvent>) -> Option<FaultReport> {
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
        let r = fault_report(events).unwrap();
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
        assert!(fault_report([ev(GspMessage::InitDone)]).is_none());
        let q = fault_report([ev(GspMessage::MmuFaultQueued)]).unwrap();
        assert_eq!(q.mmu_without_address, Some(0));
    }
}
