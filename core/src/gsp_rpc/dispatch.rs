//! What each message GSP-RM sends becomes: the reply or event a wait is for, a reply to a
//! command sent without waiting (checked here), a late or unasked reply, a CPU sequencer
//! program to run, or an event kept for [`GspRpc::drain_events`] (`_kgspProcessRpcEvent`).

use nvbare_gsp::abi::{RpcEvent, RpcNumber};
use nvbare_gsp::msgq::ReceivedMessage;
use nvbare_gsp::rpc::events::{DecodedMessage, GspMessage, decode_message};
use nvbare_gsp::rpc::{MessageFunction, RpcResult};
use nvbare_gsp::sequencer::CpuSequencer;

use super::pending::Claim;
use super::{EVENT_CAPACITY, GspEvent, GspRpc, OsErrorLog, RpcErrorKind, Want};

/// What [`GspRpc::dispatch`] made of a message.
pub(super) enum Dispatched {
    /// Kept as an event, taken as a reply nobody waits for, or dropped.
    Handled,
    /// What the wait is for.
    Wanted(DecodedMessage),
    /// A CPU sequencer program to run now.
    Sequencer(CpuSequencer),
}

impl GspRpc {
    pub(super) fn push_event(&mut self, e: GspEvent) {
        match &e {
            GspEvent::Message(m) => match &m.body {
                GspMessage::OsErrorLog { .. } => log::warn!("GSP-RM: {:?}", m.body),
                _ => log::debug!("GSP-RM event {}: {:?}", m.function, m.body),
            },
            GspEvent::LateReply { function, result } => {
                log::warn!("GSP-RM: late reply to {function}: {result}")
            }
            GspEvent::Malformed { function, error } => {
                log::warn!("GSP-RM: malformed {function}: {error}")
            }
            GspEvent::Dropped { function, error } => {
                log::warn!("GSP-RM: dropped a message ({function}?): {error}")
            }
        }
        if self.events.len() >= EVENT_CAPACITY {
            self.events.pop_front();
            self.dropped_events += 1;
        }
        self.events.push_back(e);
    }

    /// Handles one message: returns it if it is what `want` waits for, or the sequencer
    /// program to run.
    pub(super) fn dispatch(
        &mut self,
        msg: ReceivedMessage,
        want: Want,
    ) -> Result<Dispatched, RpcErrorKind> {
        let f = msg.header.function;
        let function = MessageFunction(f);
        let decoded = decode_message(&msg.header, &msg.payload);
        let number = RpcNumber::from_u32(f);
        let wanted = matches!((want, number), (Want::Event(w), RpcNumber::Event(g)) if w == g);
        if let RpcNumber::Function(rf) = number {
            let awaited = match want {
                Want::Reply(a) => Some(a),
                _ => None,
            };
            return match self.outstanding.claim(rf, &msg.payload, awaited) {
                Claim::Wanted => {
                    self.reply_claimed = true;
                    decoded
                        .map(Dispatched::Wanted)
                        .map_err(|source| RpcErrorKind::MalformedReply { function, source })
                }
                Claim::Async => match decoded {
                    Ok(d) => match d.failure() {
                        Some(result) => Err(RpcErrorKind::Failed { function, result }),
                        None => Ok(Dispatched::Handled),
                    },
                    Err(source) => Err(RpcErrorKind::MalformedReply { function, source }),
                },
                Claim::Late | Claim::Unasked => {
                    let result = RpcResult(msg.header.rpc_result);
                    self.push_event(GspEvent::LateReply { function, result });
                    Ok(Dispatched::Handled)
                }
            };
        }
        if number == RpcNumber::Event(RpcEvent::GspRunCpuSequencer) {
            if self.sequencer.is_none() {
                // Whatever its payload: only the booter path's GSP-RM asks.
                return Err(RpcErrorKind::UnexpectedSequencer);
            }
            // GSP-RM waits for the program to have run: one it cannot read stops the boot
            // or the call, as kgspExecuteSequencerBuffer's NV_ERR_INVALID_DATA does.
            return match decoded {
                Ok(DecodedMessage {
                    body: GspMessage::RunCpuSequencer(program),
                    ..
                }) => Ok(Dispatched::Sequencer(program)),
                Ok(d) => {
                    // Not reached: this function decodes to RunCpuSequencer or fails.
                    self.push_event(GspEvent::Message(d));
                    Ok(Dispatched::Handled)
                }
                Err(source) => Err(RpcErrorKind::MalformedReply { function, source }),
            };
        }
        let d = match decoded {
            Ok(d) => d,
            Err(error) => {
                self.push_event(GspEvent::Malformed { function, error });
                return Ok(Dispatched::Handled);
            }
        };
        if let GspMessage::OsErrorLog {
            exception_type,
            runlist_id,
            chid,
            message,
            ..
        } = &d.body
        {
            self.diagnostics.record_os_error(OsErrorLog {
                xid: *exception_type,
                runlist_id: *runlist_id,
                chid: *chid,
                message: message.clone(),
            });
        }
        if wanted {
            return Ok(Dispatched::Wanted(d));
        }
        self.push_event(GspEvent::Message(d));
        Ok(Dispatched::Handled)
    }
}
