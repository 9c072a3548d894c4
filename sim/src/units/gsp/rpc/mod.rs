//! GSP-RM proper: links the queues, takes the two messages the CPU queues before boot
//! (`GSP_SET_SYSTEM_INFO`, `SET_REGISTRY`: `kgspQueueAsyncInitRpcs`, no reply), sends
//! `GSP_INIT_DONE`, then answers RPCs and raises events.
//!
//! Replies (`rpcRmApiAlloc_GSP` / `rpcRmApiControl_GSP`, rpc.c): the request's RPC header
//! with `rpc_result` `NV_VGPU_MSG_RESULT_SUCCESS` and the payload written back; an
//! allocation or control that fails keeps `rpc_result` 0 and carries its `NV_STATUS` in the
//! payload's `status` (which rpc.c reads: "rpc_params->status: Status returned by the actual
//! ctrl handler on GSP"). Other functions fail through `rpc_result`. A message longer than
//! 16 queue elements goes as a first record and `CONTINUATION_RECORD`s (`_issueRpcLarge`),
//! both ways.

mod calls;
mod init;
pub use init::{SEQ_MAILBOX2, SEQ_MAILBOX3, SEQ_TOKEN, boot_sequencer};

use std::collections::VecDeque;

use nvbare_gsp::abi::{
    NV_VGPU_MSG_SIGNATURE_VALID, RPC_HEADER_VERSION, RpcAllocMemory, RpcEvent, RpcFunction,
    RpcGspRmAlloc, RpcGspRmControl, RpcMessageHeader, RpcUnloadingGuestDriver,
};
use nvbare_gsp::rm::NvStatus;
use zerocopy::{FromBytes, IntoBytes};

use super::facts;
use super::fmc::WprLayout;
use super::libos_log::{LogBuffer, LogMessage, version_string_va};
use super::queues::{BadCommand, ELEMENT_BYTES, Queues, Received};
use super::rm::{RmDb, RmError, alloc};
use crate::device::Cx;

/// Most bytes of one record, RPC header included (16 elements less the element header).
pub const MAX_RECORD: usize =
    16 * 4096 - (ELEMENT_BYTES - core::mem::size_of::<RpcMessageHeader>());
/// `sizeof(rpc_message_header_v)`.
const HEADER: usize = core::mem::size_of::<RpcMessageHeader>();

/// Where GSP-RM's init is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Init {
    /// Waiting for `GSP_SET_SYSTEM_INFO`.
    SystemInfo,
    /// Waiting for `SET_REGISTRY`.
    Registry,
    /// Booter path: `GSP_RUN_CPU_SEQUENCER` sent; `GSP_INIT_DONE` waits until the CPU ran it
    /// ([`Rm::sequencer_ran`]).
    Sequencer,
    /// `GSP_INIT_DONE` sent; serving RPCs.
    Ready,
    /// Init failed (a bad init RPC): GSP-RM answers nothing more.
    Failed,
    /// Unloaded: halts once the reply is out.
    Unloading {
        /// WPR2 stays up (a power-management transition).
        keep_wpr2: bool,
    },
}

/// A message waiting for room in the status queue.
#[derive(Debug)]
struct Outgoing {
    header: RpcMessageHeader,
    payload: Vec<u8>,
}

/// A first record waiting for its continuation records.
#[derive(Debug)]
struct Partial {
    header: RpcMessageHeader,
    payload: Vec<u8>,
    total: usize,
}

/// What a step of GSP-RM did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Anything happened.
    pub busy: bool,
    /// GSP-RM halted (unloaded): the RISC-V core stops; WPR2 drops unless kept.
    pub halted: Option<bool>,
}

/// GSP-RM.
#[derive(Debug)]
pub struct Rm {
    queues: Queues,
    logs: Vec<LogBuffer>,
    /// The object database.
    pub db: RmDb,
    /// WPR2 as the FMC laid it out.
    pub wpr: WprLayout,
    /// Init stage.
    pub init: Init,
    outbox: VecDeque<Outgoing>,
    partial: Option<Partial>,
    /// Registry keys received (name, DWORD value or data length).
    pub registry: Vec<(String, u32)>,
    /// Set by the GSP unit once the registers the boot sequencer writes hold its values.
    pub sequencer_ran: bool,
}

fn header(function: u32, length: usize, sequence: u32) -> RpcMessageHeader {
    RpcMessageHeader {
        header_version: RPC_HEADER_VERSION,
        signature: NV_VGPU_MSG_SIGNATURE_VALID,
        // CAST: records are at most 64 KiB.
        length: length as u32,
        function,
        rpc_result: 0,
        rpc_result_private: 0,
        sequence,
        spare: 0,
    }
}

/// The whole payload length a first record announces (the rest comes in continuation
/// records), from the function's fixed part.
fn announced_len(function: u32, payload: &[u8]) -> usize {
    let u32_at = |o: usize| {
        payload
            .get(o..o + 4)
            .map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
    };
    match RpcFunction::from_u32(function) {
        Some(RpcFunction::GspRmAlloc) => {
            core::mem::size_of::<RpcGspRmAlloc>() + u32_at(20) as usize
        }
        Some(RpcFunction::GspRmControl) => {
            core::mem::size_of::<RpcGspRmControl>() + u32_at(16) as usize
        }
        Some(RpcFunction::SetRegistry) => u32_at(0) as usize,
        Some(RpcFunction::AllocMemory) => {
            core::mem::size_of::<RpcAllocMemory>() + 8 * u32_at(40) as usize
        }
        _ => payload.len(),
    }
}

impl Rm {
    /// GSP-RM after linking its queues.
    pub fn new(cx: &mut Cx, queues: Queues, mut logs: Vec<LogBuffer>, wpr: WprLayout) -> Rm {
        for l in logs.iter_mut().filter(|l| l.name == "LOGINIT") {
            l.record(cx.bus, LogMessage::Boot, &[version_string_va()], cx.now_ns);
        }
        let mut db = RmDb::new(cx.spec);
        db.add_internal_objects();
        Rm {
            queues,
            logs,
            db,
            wpr,
            init: Init::SystemInfo,
            outbox: VecDeque::new(),
            partial: None,
            registry: Vec::new(),
            sequencer_ran: false,
        }
    }

    /// Writes a record to the log buffer `name`.
    pub fn log(&mut self, cx: &Cx, name: &str, msg: LogMessage, args: &[u64]) {
        for l in self.logs.iter_mut().filter(|l| l.name == name) {
            l.record(cx.bus, msg, args, cx.now_ns);
        }
    }

    /// Queues an event (`NV_VGPU_MSG_EVENT_*`) for the CPU.
    pub fn event(&mut self, event: RpcEvent, payload: Vec<u8>) {
        self.send(header(event.as_u32(), HEADER + payload.len(), 0), payload);
    }

    fn send(&mut self, h: RpcMessageHeader, payload: Vec<u8>) {
        self.outbox.push_back(Outgoing { header: h, payload });
    }

    /// One step: flush replies, take new commands (after a doorbell, or while booting).
    pub fn step(&mut self, cx: &mut Cx, doorbell: bool) -> Progress {
        let mut p = Progress::default();
        if cx.faults.gsp_silent {
            return p;
        }
        p.busy |= self.flush(cx);
        if let Init::Unloading { keep_wpr2 } = self.init {
            if self.outbox.is_empty() {
                self.log(cx, "LOGRM", LogMessage::Unload, &[]);
                p.halted = Some(keep_wpr2);
            }
            return p;
        }
        if self.init == Init::Sequencer {
            if !self.sequencer_ran {
                return p;
            }
            self.init_done(cx);
            p.busy = true;
        }
        if self.init == Init::Failed || (self.init == Init::Ready && !doorbell) {
            return p;
        }
        loop {
            match self.queues.receive(cx.bus) {
                Ok(None) => break,
                Ok(Some(msg)) => {
                    p.busy = true;
                    self.take(cx, msg);
                }
                Err(e) => {
                    p.busy = true;
                    cx.log.warn("gsp", format!("command dropped: {e}"));
                    self.log(cx, "LOGRM", LogMessage::BadCommand, &[]);
                    // Nothing was consumed: reading on would find the same.
                    if matches!(e, BadCommand::Bus(_) | BadCommand::WritePtr { .. }) {
                        break;
                    }
                }
            }
        }
        p.busy |= self.flush(cx);
        p
    }

    /// Writes queued messages while the status queue has room.
    fn flush(&mut self, cx: &mut Cx) -> bool {
        let mut wrote = false;
        while let Some(out) = self.outbox.front() {
            let corrupt = cx.faults.corrupt_reply_to == Some(out.header.function);
            if corrupt {
                cx.log.warn(
                    "fault",
                    format!(
                        "reply to RPC function {} sent with a corrupt checksum",
                        out.header.function
                    ),
                );
            }
            match self.queues.send(cx.bus, &out.header, &out.payload, corrupt) {
                Ok(true) => {
                    wrote = true;
                    self.outbox.pop_front();
                }
                Ok(false) => break,
                Err(e) => {
                    cx.log.warn(
                        "gsp",
                        format!("status queue write failed: {e}; message dropped"),
                    );
                    self.outbox.pop_front();
                }
            }
        }
        wrote
    }

    /// A received record: continuation bookkeeping, then dispatch.
    fn take(&mut self, cx: &mut Cx, msg: Received) {
        let Received { header: h, payload } = msg;
        if h.signature != NV_VGPU_MSG_SIGNATURE_VALID || h.header_version != RPC_HEADER_VERSION {
            cx.log.warn(
                "gsp",
                format!(
                    "RPC with signature {:#x} / header_version {:#x} dropped (rpc_headers.h: \
                     NV_VGPU_MSG_SIGNATURE_VALID, version 3.0)",
                    h.signature, h.header_version
                ),
            );
            return;
        }
        if h.function == RpcFunction::ContinuationRecord.as_u32() {
            let Some(mut part) = self.partial.take() else {
                cx.log.warn(
                    "gsp",
                    "CONTINUATION_RECORD with no message to continue; dropped",
                );
                return;
            };
            part.payload.extend_from_slice(&payload);
            if part.payload.len() >= part.total {
                self.dispatch(cx, part.header, part.payload);
            } else {
                self.partial = Some(part);
            }
            return;
        }
        if let Some(p) = self.partial.take() {
            cx.log.warn(
                "gsp",
                format!(
                    "RPC {} arrived while {} waited for {} more bytes of continuation; the \
                     unfinished one is dropped",
                    h.function,
                    p.header.function,
                    p.total - p.payload.len()
                ),
            );
        }
        let total = announced_len(h.function, &payload);
        if payload.len() < total && HEADER + payload.len() == MAX_RECORD.min(HEADER + total) {
            self.partial = Some(Partial {
                header: h,
                payload,
                total,
            });
            return;
        }
        self.dispatch(cx, h, payload);
    }

    /// Handles one whole message.
    fn dispatch(&mut self, cx: &mut Cx, h: RpcMessageHeader, mut payload: Vec<u8>) {
        if self.init == Init::Failed {
            cx.log.warn(
                "gsp",
                format!("RPC {} ignored: GSP-RM init failed", h.function),
            );
            return;
        }
        let function = RpcFunction::from_u32(h.function);
        let before_ready = matches!(self.init, Init::SystemInfo | Init::Registry);
        match (self.init, function) {
            (Init::SystemInfo, Some(RpcFunction::GspSetSystemInfo)) => {
                self.system_info(cx, &payload);
                return;
            }
            (Init::Registry, Some(RpcFunction::SetRegistry)) => {
                self.set_registry(cx, &payload);
                return;
            }
            _ if before_ready => {
                cx.log.warn(
                    "gsp",
                    format!(
                        "RPC {} before GSP_SET_SYSTEM_INFO and SET_REGISTRY (kgspQueueAsyncInitRpcs \
                         sends those first); answered NV_ERR_INVALID_STATE",
                        h.function
                    ),
                );
                let mut r = h;
                r.rpc_result = NvStatus::ERR_INVALID_STATE.0;
                r.rpc_result_private = NvStatus::ERR_INVALID_STATE.0;
                self.send(r, payload);
                return;
            }
            _ => {}
        }
        // The CPU sends NV_VGPU_MSG_RESULT_RPC_PENDING; the answer says what happened.
        let mut reply = RpcMessageHeader {
            rpc_result: NvStatus::OK.0,
            rpc_result_private: NvStatus::OK.0,
            ..h
        };
        if let Some((f, status)) = cx.faults.rpc_failure
            && f == h.function
        {
            cx.log.warn(
                "fault",
                format!("RPC function {f} fails with NV_STATUS {status:#x} instead of running"),
            );
            self.fail(&mut reply, &mut payload, NvStatus(status));
            self.send(reply, payload);
            return;
        }
        let status = match function {
            Some(RpcFunction::GspRmAlloc) => self.rm_alloc(cx, &mut payload),
            Some(RpcFunction::GspRmControl) => self.rm_control(cx, &mut payload),
            Some(RpcFunction::Free) => self.free(cx, &mut payload),
            Some(RpcFunction::AllocMemory) => match alloc::alloc_memory(&mut self.db, &payload) {
                Ok(_) => NvStatus::OK,
                Err(e) => self.refused(cx, h.function, e),
            },
            Some(RpcFunction::SetPageDirectory) => self.set_page_directory(cx, &payload),
            Some(RpcFunction::GetGspStaticInfo) => {
                payload = facts::static_info(cx.spec, &self.wpr).as_bytes().to_vec();
                NvStatus::OK
            }
            Some(RpcFunction::UnloadingGuestDriver) => {
                let p = RpcUnloadingGuestDriver::read_from_prefix(&payload)
                    .map(|(p, _)| p)
                    .unwrap_or_default();
                let keep = p.b_in_pm_transition != 0 || p.b_gc6_entering != 0;
                cx.log.info(
                    "gsp",
                    format!(
                        "UNLOADING_GUEST_DRIVER (newLevel {:#x}): GSP-RM unloads",
                        p.new_level
                    ),
                );
                self.init = Init::Unloading { keep_wpr2: keep };
                NvStatus::OK
            }
            _ => {
                cx.log.warn(
                    "gsp",
                    format!(
                        "RPC function {} is not served by the simulated GSP-RM",
                        h.function
                    ),
                );
                reply.rpc_result = NvStatus::ERR_NOT_SUPPORTED.0;
                NvStatus::OK
            }
        };
        // Functions without a status in their payload fail through rpc_result.
        let status_in_payload = matches!(
            function,
            Some(RpcFunction::GspRmAlloc | RpcFunction::GspRmControl | RpcFunction::Free)
        );
        if !status.is_ok() && !status_in_payload {
            reply.rpc_result = status.0;
        }
        self.log(
            cx,
            "LOGRM",
            LogMessage::Rpc,
            &[u64::from(h.function), u64::from(status.0)],
        );
        if cx.faults.lose_reply_to == Some(h.function) {
            cx.log.warn(
                "fault",
                format!("RPC function {} done; its reply is lost", h.function),
            );
            return;
        }
        if cx.faults.short_reply_to == Some(h.function) {
            shorten_params(cx, h.function, &mut payload);
        }
        self.reply(reply, payload);
    }

    /// Sends `payload` as the reply to `h`, chunked into continuation records if large.
    fn reply(&mut self, h: RpcMessageHeader, payload: Vec<u8>) {
        let room = MAX_RECORD - HEADER;
        let mut chunks = payload.chunks(room);
        let first = chunks.next().unwrap_or_default().to_vec();
        let mut r = h;
        r.length = (HEADER + first.len()) as u32;
        self.send(r, first);
        for c in chunks {
            let mut cont = header(
                RpcFunction::ContinuationRecord.as_u32(),
                HEADER + c.len(),
                h.sequence,
            );
            cont.rpc_result = h.rpc_result;
            self.send(cont, c.to_vec());
        }
    }

    /// Marks a reply failed with `status` where the function carries it.
    fn fail(&self, reply: &mut RpcMessageHeader, payload: &mut [u8], status: NvStatus) {
        let at = match RpcFunction::from_u32(reply.function) {
            Some(RpcFunction::GspRmAlloc) => Some(16),
            Some(RpcFunction::GspRmControl) => Some(12),
            Some(RpcFunction::Free) => Some(12),
            _ => None,
        };
        match at {
            Some(o) if payload.len() >= o + 4 => {
                payload[o..o + 4].copy_from_slice(&status.0.to_le_bytes())
            }
            _ => reply.rpc_result = status.0,
        }
    }

    pub(super) fn refused(&self, cx: &Cx, function: u32, e: RmError) -> NvStatus {
        cx.log
            .warn("gsp", format!("RPC {function}: {} ({})", e.status, e.why));
        e.status
    }
}

/// Cuts 4 bytes off the parameter block of a `GSP_RM_ALLOC` or `GSP_RM_CONTROL` reply
/// (`paramsSize` at 20 and 16 of their `g_rpc-structures.h` payloads), for the fault plan.
fn shorten_params(cx: &Cx, function: u32, payload: &mut Vec<u8>) {
    let at = match RpcFunction::from_u32(function) {
        Some(RpcFunction::GspRmAlloc) => 20,
        Some(RpcFunction::GspRmControl) => 16,
        _ => return,
    };
    let Some(size) = payload
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    else {
        return;
    };
    if size < 4 {
        return;
    }
    cx.log.warn(
        "fault",
        format!(
            "reply to RPC function {function} carries {} bytes of parameters for {size}",
            size - 4
        ),
    );
    payload[at..at + 4].copy_from_slice(&(size - 4).to_le_bytes());
    let len = payload.len().saturating_sub(4);
    payload.truncate(len);
}
