//! Typed decoding of what GSP-RM sends back: replies to our RPCs and GSP-initiated events.
//!
//! The payload comes from GSP memory and is untrusted: every embedded size
//! (`paramsSize`, `eventDataSize`, `rcJournalBufferSize`, `libosPrintBufSize`) is checked
//! against the bytes present; a short or inconsistent payload is an [`EventError`]. Numbers
//! nvbare has no type for come back as [`GspMessage::Other`] with their name.
//!
//! Event layouts are the `rpc_*_v*` structs of `g_rpc-structures.h` (offsets in the field
//! comments are the C compiler's, checked with gcc); the handlers they mirror are in
//! `kernel_gsp.c` (`_kgspProcessRpcEvent`, `_kgspRpcRCTriggered`, `_kgspRpcOsErrorLog`,
//! `_kgspRpcPostEvent`, `_kgspRpcMMUFaultQueued`, `_kgspRpcGspLockdownNotice`,
//! `_kgspRpcUcodeLibosPrint`, `_kgspRpcRunCpuSequencer`).

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::mem::offset_of;

use super::{MessageFunction, RpcResult};
use crate::abi::{
    GspStaticConfigInfo, RPC_POST_EVENT_DATA_OFFSET, RpcEvent, RpcFunction, RpcGspLockdownNotice,
    RpcGspRmAlloc, RpcGspRmControl, RpcMessageHeader, RpcNumber, RpcOsErrorLog, RpcPostEvent,
    RpcRcTriggered, RpcUcodeLibosPrint,
};
use crate::rm::nvos::FreeParams;
use crate::sequencer::{CpuSequencer, SequencerError, decode_sequencer};
use zerocopy::{FromBytes, IntoBytes};

/// A decoded message from GSP-RM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GspMessage {
    /// `GSP_INIT_DONE`: GSP-RM finished booting.
    InitDone,
    /// `GSP_RUN_CPU_SEQUENCER`: a register program to run.
    RunCpuSequencer(CpuSequencer),
    /// `OS_ERROR_LOG` (`rpc_os_error_log_v17_00`): an error report (Xid).
    OsErrorLog {
        /// `exceptType` (the Xid number).
        exception_type: u32,
        /// `runlistId`.
        runlist_id: u32,
        /// `chid`.
        chid: u32,
        /// `errString`, up to its NUL.
        message: String,
        /// `preemptiveRemovalPreviousXid`.
        preemptive_removal_previous_xid: u32,
    },
    /// `MMU_FAULT_QUEUED`: a replayable/non-replayable fault was queued (no payload).
    MmuFaultQueued,
    /// `POST_EVENT` (`rpc_post_event_v17_00`): an RM event notification.
    PostEvent {
        /// `hClient`.
        h_client: u32,
        /// `hEvent`.
        h_event: u32,
        /// `notifyIndex`.
        notify_index: u32,
        /// `data`.
        data: u32,
        /// `info16`.
        info16: u16,
        /// `status`.
        status: u32,
        /// `bNotifyList`.
        notify_list: bool,
        /// `eventData[eventDataSize]`.
        event_data: Vec<u8>,
    },
    /// `RC_TRIGGERED` (`rpc_rc_triggered_v17_02`): robust-channel recovery on a channel.
    RcTriggered {
        /// `nv2080EngineType`.
        engine_type: u32,
        /// `chid`.
        chid: u32,
        /// `gfid`.
        gfid: u32,
        /// `exceptLevel`.
        except_level: u32,
        /// `exceptType` (the Xid).
        except_type: u32,
        /// `scope`.
        scope: u32,
        /// `partitionAttributionId`.
        partition_attribution_id: u16,
        /// `mmuFaultAddrHi:Lo`.
        mmu_fault_addr: u64,
        /// `mmuFaultType`.
        mmu_fault_type: u32,
        /// `bCallbackNeeded`.
        callback_needed: bool,
        /// `rcJournalBuffer[rcJournalBufferSize]`.
        journal: Vec<u8>,
    },
    /// `GSP_LOCKDOWN_NOTICE` (`rpc_gsp_lockdown_notice_v17_00`).
    LockdownNotice {
        /// `bLockdownEngaging`.
        engaging: bool,
    },
    /// `UCODE_LIBOS_PRINT` (`rpc_ucode_libos_print_v1E_08`): a print buffer from another
    /// libos ucode.
    LibosPrint {
        /// `ucodeEngDesc`.
        ucode_eng_desc: u32,
        /// `libosPrintBuf[libosPrintBufSize]`.
        buffer: Vec<u8>,
    },
    /// Reply to `GSP_RM_ALLOC`.
    RmAllocReply {
        /// `hClient`, `hParent`, `hObject`, `hClass` echoed.
        h_client: u32,
        /// `hParent`.
        h_parent: u32,
        /// `hObject`.
        h_object: u32,
        /// `hClass`.
        h_class: u32,
        /// `status`: the allocation's own `NV_STATUS`.
        status: RpcResult,
        /// The allocation parameters as GSP-RM returned them.
        params: Vec<u8>,
    },
    /// Reply to `GSP_RM_CONTROL`.
    RmControlReply {
        /// `hClient`.
        h_client: u32,
        /// `hObject`.
        h_object: u32,
        /// `cmd`.
        cmd: u32,
        /// `status`: the control's own `NV_STATUS`.
        status: RpcResult,
        /// The parameters as GSP-RM returned them.
        params: Vec<u8>,
    },
    /// Reply to `FREE` (`rpc_free_v03_00`: the `NVOS00_PARAMETERS` echoed).
    FreeReply {
        /// `hRoot`: the client.
        h_client: u32,
        /// `hObjectParent`.
        h_parent: u32,
        /// `hObjectOld`: the object freed.
        h_object: u32,
        /// `status`: the free's own `NV_STATUS`.
        status: RpcResult,
    },
    /// Reply to `GET_GSP_STATIC_INFO`.
    StaticInfo(Box<GspStaticConfigInfo>),
    /// Reply to a command whose reply carries nothing we read (`SET_SYSTEM_INFO`,
    /// `SET_REGISTRY`, `ALLOC_MEMORY`, `SET_PAGE_DIRECTORY`, `UNLOADING_GUEST_DRIVER`): only
    /// the header's result matters.
    Ack(RpcFunction),
    /// Anything else, surfaced by number and name with its raw payload.
    Other {
        /// The message's function number (prints with its name).
        function: MessageFunction,
        /// The payload.
        payload: Vec<u8>,
    },
}

/// A message with its header's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedMessage {
    /// The `function` number.
    pub function: MessageFunction,
    /// The header's `rpc_result` (`NV_OK` on success).
    pub result: RpcResult,
    /// The decoded body.
    pub body: GspMessage,
}

/// A payload that does not match its message type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventError {
    /// Fewer bytes than the message's fixed part.
    Truncated {
        function: MessageFunction,
        need: usize,
        got: usize,
    },
    /// An embedded size reaching past the payload.
    SizeOutOfRange {
        function: MessageFunction,
        field: &'static str,
        size: u32,
        room: usize,
    },
    /// A malformed CPU sequencer program.
    Sequencer(SequencerError),
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated {
                function,
                need,
                got,
            } => {
                write!(
                    f,
                    "GSP message {function}: {got} payload bytes, need {need}"
                )
            }
            Self::SizeOutOfRange {
                function,
                field,
                size,
                room,
            } => {
                write!(
                    f,
                    "GSP message {function}: {field} = {size} exceeds the {room} bytes left"
                )
            }
            Self::Sequencer(e) => write!(f, "{e}"),
        }
    }
}

struct Payload<'a> {
    function: MessageFunction,
    bytes: &'a [u8],
}

impl<'a> Payload<'a> {
    fn need(&self, n: usize) -> Result<(), EventError> {
        if self.bytes.len() < n {
            return Err(EventError::Truncated {
                function: self.function,
                need: n,
                got: self.bytes.len(),
            });
        }
        Ok(())
    }
    /// The fixed part `T` at the start of the payload, which must hold at least `min_len`
    /// bytes. A payload shorter than `size_of::<T>()` gives only its first `min_len` bytes,
    /// the rest of `T` zero: how the C structs whose variable-length data begins inside
    /// their tail padding, or whose last field older firmware does not send, are read.
    fn fixed<T: FromBytes + IntoBytes>(&self, min_len: usize) -> Result<T, EventError> {
        self.need(min_len)?;
        let mut t = T::new_zeroed();
        let dst = t.as_mut_bytes();
        let n = if self.bytes.len() >= dst.len() {
            dst.len()
        } else {
            min_len
        };
        dst[..n].copy_from_slice(&self.bytes[..n]);
        Ok(t)
    }
    /// `size` bytes at `o`, where `size` came from GSP.
    fn tail(&self, o: usize, size: u32, field: &'static str) -> Result<Vec<u8>, EventError> {
        let room = self.bytes.len().saturating_sub(o);
        if size as usize > room {
            return Err(EventError::SizeOutOfRange {
                function: self.function,
                field,
                size,
                room,
            });
        }
        Ok(self.bytes[o..o + size as usize].to_vec())
    }
}

/// Decodes a message from the status queue given its RPC header and payload.
pub fn decode_message(
    header: &RpcMessageHeader,
    payload: &[u8],
) -> Result<DecodedMessage, EventError> {
    let function = MessageFunction(header.function);
    let p = Payload {
        function,
        bytes: payload,
    };
    let body = match RpcNumber::from_u32(header.function) {
        RpcNumber::Event(RpcEvent::GspInitDone) => GspMessage::InitDone,
        RpcNumber::Event(RpcEvent::GspRunCpuSequencer) => {
            GspMessage::RunCpuSequencer(decode_sequencer(payload).map_err(EventError::Sequencer)?)
        }
        RpcNumber::Event(RpcEvent::OsErrorLog) => {
            // `preemptiveRemovalPreviousXid` is optional: 0 when the payload ends before it.
            let e: RpcOsErrorLog =
                p.fixed(offset_of!(RpcOsErrorLog, preemptive_removal_previous_xid))?;
            GspMessage::OsErrorLog {
                exception_type: e.except_type,
                runlist_id: e.runlist_id,
                chid: e.chid,
                message: String::from_utf8_lossy(crate::until_nul(&e.err_string)).into_owned(),
                preemptive_removal_previous_xid: e.preemptive_removal_previous_xid,
            }
        }
        RpcNumber::Event(RpcEvent::MmuFaultQueued) => GspMessage::MmuFaultQueued,
        RpcNumber::Event(RpcEvent::PostEvent) => {
            // `eventData[]` starts inside the struct's tail padding.
            let e: RpcPostEvent = p.fixed(RPC_POST_EVENT_DATA_OFFSET)?;
            GspMessage::PostEvent {
                h_client: e.h_client,
                h_event: e.h_event,
                notify_index: e.notify_index,
                data: e.data,
                info16: e.info16,
                status: e.status,
                notify_list: e.b_notify_list != 0,
                event_data: p.tail(
                    RPC_POST_EVENT_DATA_OFFSET,
                    e.event_data_size,
                    "eventDataSize",
                )?,
            }
        }
        RpcNumber::Event(RpcEvent::RcTriggered) => {
            let n = size_of::<RpcRcTriggered>();
            let e: RpcRcTriggered = p.fixed(n)?;
            GspMessage::RcTriggered {
                engine_type: e.nv2080_engine_type,
                chid: e.chid,
                gfid: e.gfid,
                except_level: e.except_level,
                except_type: e.except_type,
                scope: e.scope,
                partition_attribution_id: e.partition_attribution_id,
                mmu_fault_addr: u64::from(e.mmu_fault_addr_hi) << 32
                    | u64::from(e.mmu_fault_addr_lo),
                mmu_fault_type: e.mmu_fault_type,
                callback_needed: e.b_callback_needed != 0,
                journal: p.tail(n, e.rc_journal_buffer_size, "rcJournalBufferSize")?,
            }
        }
        RpcNumber::Event(RpcEvent::GspLockdownNotice) => {
            let e: RpcGspLockdownNotice = p.fixed(size_of::<RpcGspLockdownNotice>())?;
            GspMessage::LockdownNotice {
                engaging: e.b_lockdown_engaging != 0,
            }
        }
        RpcNumber::Event(RpcEvent::UcodeLibosPrint) => {
            let n = size_of::<RpcUcodeLibosPrint>();
            let e: RpcUcodeLibosPrint = p.fixed(n)?;
            GspMessage::LibosPrint {
                ucode_eng_desc: e.ucode_eng_desc,
                buffer: p.tail(n, e.libos_print_buf_size, "libosPrintBufSize")?,
            }
        }
        RpcNumber::Function(RpcFunction::GspRmAlloc) => {
            let n = size_of::<RpcGspRmAlloc>();
            let a: RpcGspRmAlloc = p.fixed(n)?;
            GspMessage::RmAllocReply {
                h_client: a.h_client,
                h_parent: a.h_parent,
                h_object: a.h_object,
                h_class: a.h_class,
                status: RpcResult(a.status),
                params: p.tail(n, a.params_size, "paramsSize")?,
            }
        }
        RpcNumber::Function(RpcFunction::GspRmControl) => {
            let n = size_of::<RpcGspRmControl>();
            let c: RpcGspRmControl = p.fixed(n)?;
            GspMessage::RmControlReply {
                h_client: c.h_client,
                h_object: c.h_object,
                cmd: c.cmd,
                status: RpcResult(c.status),
                params: p.tail(n, c.params_size, "paramsSize")?,
            }
        }
        RpcNumber::Function(RpcFunction::Free) => {
            let f: FreeParams = p.fixed(size_of::<FreeParams>())?;
            GspMessage::FreeReply {
                h_client: f.h_root,
                h_parent: f.h_object_parent,
                h_object: f.h_object_old,
                status: RpcResult(f.status),
            }
        }
        RpcNumber::Function(RpcFunction::GetGspStaticInfo) => {
            let n = core::mem::size_of::<GspStaticConfigInfo>();
            let (info, _) = GspStaticConfigInfo::read_from_prefix(payload).map_err(|_| {
                EventError::Truncated {
                    function,
                    need: n,
                    got: payload.len(),
                }
            })?;
            GspMessage::StaticInfo(Box::new(info))
        }
        RpcNumber::Function(
            f @ (RpcFunction::GspSetSystemInfo
            | RpcFunction::SetRegistry
            | RpcFunction::AllocMemory
            | RpcFunction::SetPageDirectory
            | RpcFunction::UnloadingGuestDriver),
        ) => GspMessage::Ack(f),
        _ => GspMessage::Other {
            function,
            payload: payload.to_vec(),
        },
    };
    Ok(DecodedMessage {
        function,
        result: RpcResult(header.rpc_result),
        body,
    })
}

impl DecodedMessage {
    /// The failure a reply reports: the header's `rpc_result` if not `NV_OK`, else the
    /// `status` field of an alloc/control reply if not `NV_OK`; `None` on success
    /// (`_issueRpcAndWait` and `rpcRmApiControl_GSP` in `rpc.c`).
    pub fn failure(&self) -> Option<RpcResult> {
        if !self.result.is_ok() {
            return Some(self.result);
        }
        match &self.body {
            GspMessage::RmAllocReply { status, .. }
            | GspMessage::RmControlReply { status, .. }
            | GspMessage::FreeReply { status, .. }
                if !status.is_ok() =>
            {
                Some(*status)
            }
            _ => None,
        }
    }

    /// Whether this is a GSP-initiated event (not a reply).
    pub fn is_event(&self) -> bool {
        self.function.0 >= RpcEvent::FIRST
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::request_header;

    fn hdr(f: u32, len: usize) -> RpcMessageHeader {
        let mut h = request_header(f, len);
        h.rpc_result = 0;
        h
    }

    #[test]
    fn os_error_log_and_unknown_events() {
        let mut p = alloc::vec![0u8; 272];
        p[0] = 13;
        p[12..17].copy_from_slice(b"Xid13");
        let m = decode_message(&hdr(0x1006, p.len()), &p).unwrap();
        assert!(
            matches!(m.body, GspMessage::OsErrorLog { exception_type: 13, ref message, .. } if message == "Xid13")
        );
        let m = decode_message(&hdr(0x1010, 3), &[1, 2, 3]).unwrap();
        assert_eq!(alloc::format!("{}", m.function), "VGPU_CONFIG (0x1010)");
        assert!(matches!(m.body, GspMessage::Other { .. }));
        let m = decode_message(&hdr(0x1fff, 0), &[]).unwrap();
        assert_eq!(alloc::format!("{}", m.function), "unknown (0x1fff)");
    }

    #[test]
    fn embedded_sizes_are_checked() {
        let mut p = alloc::vec![0u8; 40];
        p[24] = 12; // eventDataSize 12, only 11 bytes after offset 29
        assert!(matches!(
            decode_message(&hdr(0x1003, 40), &p),
            Err(EventError::SizeOutOfRange {
                field: "eventDataSize",
                ..
            })
        ));
        p[24] = 11;
        assert!(decode_message(&hdr(0x1003, 40), &p).is_ok());
        let mut c = alloc::vec![0u8; 24];
        c[16] = 1; // paramsSize 1 but nothing follows
        assert!(decode_message(&hdr(76, 24), &c).is_err());
        assert!(matches!(
            decode_message(&hdr(0x1004, 10), &[0; 10]),
            Err(EventError::Truncated {
                need: 48,
                got: 10,
                ..
            })
        ));
    }

    #[test]
    fn replies_and_small_events_decode() {
        let n = core::mem::size_of::<GspStaticConfigInfo>();
        let m = decode_message(&hdr(65, n), &alloc::vec![0u8; n]).unwrap();
        assert!(matches!(m.body, GspMessage::StaticInfo(_)));
        assert!(decode_message(&hdr(65, n - 1), &alloc::vec![0u8; n - 1]).is_err());
        let m = decode_message(&hdr(0x101c, 1), &[1]).unwrap();
        assert_eq!(m.body, GspMessage::LockdownNotice { engaging: true });
        let m = decode_message(
            &hdr(0x100c, 11),
            &[7, 0, 0, 0, 3, 0, 0, 0, b'a', b'b', b'c'],
        )
        .unwrap();
        assert_eq!(
            m.body,
            GspMessage::LibosPrint {
                ucode_eng_desc: 7,
                buffer: b"abc".to_vec()
            }
        );
        let mut rc = alloc::vec![0u8; 52];
        rc[16] = 31; // exceptType: Xid 31 (MMU fault)
        rc[28..32].copy_from_slice(&0x1000u32.to_le_bytes());
        rc[32..36].copy_from_slice(&0x7fu32.to_le_bytes());
        rc[44] = 4;
        let m = decode_message(&hdr(0x1004, 52), &rc).unwrap();
        assert!(matches!(
            m.body,
            GspMessage::RcTriggered { except_type: 31, mmu_fault_addr: 0x7f_0000_1000, ref journal, .. }
                if journal.len() == 4
        ));
        assert!(m.is_event());
        let seq =
            crate::sequencer::encode_sequencer(&[crate::sequencer::SequencerStep::CoreStart], 8);
        let m = decode_message(&hdr(0x1002, seq.len()), &seq).unwrap();
        assert!(matches!(m.body, GspMessage::RunCpuSequencer(ref s) if s.steps.len() == 1));
        let m = decode_message(&hdr(4, 0), &[]).unwrap();
        assert_eq!(m.body, GspMessage::Ack(RpcFunction::AllocMemory));
    }

    #[test]
    fn a_simulated_failed_reply_travels_through_the_queue() {
        use crate::msgq::{MsgQueue, QueueGeometry, RpcQueue, SharedQueueLayout};
        let l = SharedQueueLayout::default_sizes();
        let g = QueueGeometry::from_tx_header(&l.status_queue_header(), 0x40000).unwrap();
        let (mut gsp, mut cpu) = (RpcQueue::new(g, 0).unwrap(), MsgQueue::new(g, 0).unwrap());
        let mut ring = alloc::vec![0u8; g.ring_len()];
        let mut reply = alloc::vec![0u8; 24];
        reply[8..12].copy_from_slice(&0x2080_0110u32.to_le_bytes());
        let h = crate::rpc::reply_header(76, 0x57, reply.len()); // NV_ERR_OBJECT_NOT_FOUND
        gsp.enqueue_with_header(&mut ring, 0, h, &reply).unwrap();
        let m = cpu.receive(&ring, gsp.write_ptr()).unwrap().unwrap();
        let d = decode_message(&m.header, &m.payload).unwrap();
        assert_eq!(d.failure(), Some(RpcResult(0x57)));
        assert!(matches!(
            d.body,
            GspMessage::RmControlReply {
                cmd: 0x2080_0110,
                ..
            }
        ));
    }

    #[test]
    fn a_free_reply_carries_its_status() {
        let mut c = alloc::vec![0u8; 16];
        c[8] = 0x22;
        c[12] = 0x57; // NV_ERR_OBJECT_NOT_FOUND
        let m = decode_message(&hdr(10, 16), &c).unwrap();
        assert!(matches!(
            m.body,
            GspMessage::FreeReply { h_object: 0x22, .. }
        ));
        assert_eq!(m.failure(), Some(RpcResult(0x57)));
        assert!(decode_message(&hdr(10, 8), &c[..8]).is_err(), "truncated");
    }

    #[test]
    fn failures_come_from_header_or_status() {
        let mut c = alloc::vec![0u8; 24];
        c[12] = 0x1f; // status NV_ERR_INVALID_ARGUMENT
        let m = decode_message(&hdr(76, 24), &c).unwrap();
        assert_eq!(m.failure(), Some(RpcResult(0x1f)));
        let mut h = hdr(73, 0);
        h.rpc_result = 0x65;
        assert_eq!(
            decode_message(&h, &[]).unwrap().failure(),
            Some(RpcResult(0x65))
        );
    }
}
