//! The test driver's side of the message queues (`GspMsgQueueSendCommand`,
//! `GspMsgQueueReceiveStatus`, message_queue_cpu.c; `_issueRpcLarge`, rpc.c): records with
//! checksums and sequence numbers, continuation records, the doorbell, and the RM calls.

use nvbare_core::hal::poll_until;
use nvbare_gsp::abi::*;
use nvbare_gsp::rm::NvStatus;
use zerocopy::{FromBytes, IntoBytes};

use super::{GSP_QUEUE_HEAD0, PAGE, QUEUE_SIZE, Rig, wait};

impl Rig {
    /// Writes one record to the command queue and rings the doorbell (GspMsgQueueSendCommand).
    fn send_record(&mut self, function: u32, payload: &[u8]) {
        self.send_record_with(function, payload, |_| {});
    }

    /// [`Rig::send_record`] with `tweak` applied to the element header after the checksum
    /// (to corrupt it).
    pub fn send_record_with(
        &mut self,
        function: u32,
        payload: &[u8],
        tweak: impl FnOnce(&mut GspMsgQueueElement),
    ) {
        let hdr = RpcMessageHeader {
            header_version: RPC_HEADER_VERSION,
            signature: NV_VGPU_MSG_SIGNATURE_VALID,
            length: (32 + payload.len()) as u32,
            function,
            rpc_result: 0xffff_ffff,
            rpc_result_private: 0xffff_ffff,
            sequence: self.cmd_seq,
            spare: 0,
        };
        let len = GSP_MSG_QUEUE_ELEMENT_HDR_SIZE + hdr.length as usize;
        let count = len.div_ceil(PAGE);
        let mut elem = GspMsgQueueElement {
            seq_num: self.cmd_seq,
            elem_count: count as u32,
            rpc: hdr,
            ..Default::default()
        };
        let mut msg = vec![0u8; count * PAGE];
        let eb = core::mem::size_of::<GspMsgQueueElement>();
        msg[..eb].copy_from_slice(elem.as_bytes());
        msg[eb..len].copy_from_slice(payload);
        elem.check_sum = checksum(&msg[..len.next_multiple_of(8)]);
        tweak(&mut elem);
        msg[..eb].copy_from_slice(elem.as_bytes());
        self.write_entries(&msg);
        self.cmd_seq += 1;
        if self.ring {
            self.gpu.bar0_write(GSP_QUEUE_HEAD0, 0);
        }
    }

    /// Copies whole 4 KiB elements into the ring at the write pointer and advances it.
    pub fn write_entries(&mut self, msg: &[u8]) {
        let count = (QUEUE_SIZE - PAGE) / PAGE;
        for (i, e) in msg.chunks(PAGE).enumerate() {
            let slot = (self.cmd_wp as usize + i) % count;
            self.write(self.cmdq() + (PAGE + slot * PAGE) as u64, e);
        }
        self.cmd_wp = ((self.cmd_wp as usize + msg.len() / PAGE) % count) as u32;
        self.write(self.cmdq() + 16, &self.cmd_wp.to_le_bytes());
    }

    /// Sends a message, splitting it into a first record and CONTINUATION_RECORDs
    /// (_issueRpcLarge) when it exceeds one.
    pub fn send(&mut self, function: u32, payload: &[u8]) {
        let max = 16 * PAGE - core::mem::size_of::<GspMsgQueueElement>();
        let mut chunks = payload.chunks(max);
        self.send_record(function, chunks.next().unwrap_or_default());
        for c in chunks {
            self.send_record(RpcFunction::ContinuationRecord.as_u32(), c);
        }
    }

    /// The next status message, if any (GspMsgQueueReceiveStatus): checksum and sequence
    /// checked, our read pointer (in the command queue, swapped) advanced.
    pub fn recv(&mut self) -> Option<Result<(RpcMessageHeader, Vec<u8>), String>> {
        let wp = self.read_u32(self.statq() + 16);
        if wp == self.stat_rp {
            return None;
        }
        let count = (QUEUE_SIZE - PAGE) / PAGE;
        let entry = |i: usize| self.statq() + (PAGE + (i % count) * PAGE) as u64;
        let mut first = vec![0u8; PAGE];
        self.read(entry(self.stat_rp as usize), &mut first);
        let (elem, _) = GspMsgQueueElement::read_from_prefix(&first).expect("element");
        let n = elem.elem_count as usize;
        let mut msg = first;
        for i in 1..n {
            let mut p = vec![0u8; PAGE];
            self.read(entry(self.stat_rp as usize + i), &mut p);
            msg.extend_from_slice(&p);
        }
        self.stat_rp = ((self.stat_rp as usize + n) % count) as u32;
        self.write(self.cmdq() + 32, &self.stat_rp.to_le_bytes());
        let len = GSP_MSG_QUEUE_ELEMENT_HDR_SIZE + elem.rpc.length as usize;
        let sum = checksum(&msg[..len.next_multiple_of(8)]);
        let seq_ok = elem.seq_num == self.stat_seq;
        self.stat_seq += 1;
        if sum != 0 {
            return Some(Err(format!(
                "bad checksum {sum:#x} on function {}",
                elem.rpc.function
            )));
        }
        if !seq_ok {
            return Some(Err(format!(
                "bad seqNum {} (expected {})",
                elem.seq_num,
                self.stat_seq - 1
            )));
        }
        let eb = core::mem::size_of::<GspMsgQueueElement>();
        Some(Ok((elem.rpc, msg[eb..len].to_vec())))
    }

    /// Waits for a message of `function`, collecting others into `self`'s event list.
    pub fn wait_for(&mut self, function: u32, ms: u64) -> (RpcMessageHeader, Vec<u8>) {
        let mut others = Vec::new();
        let clock = self.clock;
        let got = poll_until(&clock, wait("a GSP-RM message", ms), || {
            loop {
                match self.recv() {
                    None => return None,
                    Some(Ok((h, p))) if h.function == function => return Some((h, p)),
                    Some(Ok((h, _))) => others.push(h.function),
                    Some(Err(e)) => panic!("{e}"),
                }
            }
        });
        got.unwrap_or_else(|e| {
            panic!(
                "{e}: no function {function:#x} (saw {others:x?}); warnings {:?}",
                self.gpu.log().warnings()
            )
        })
    }

    /// Sends and waits for the reply (with continuation records joined).
    pub fn call(&mut self, function: u32, payload: &[u8]) -> (RpcMessageHeader, Vec<u8>) {
        self.send(function, payload);
        let (h, mut p) = self.wait_for(function, 5000);
        let want = payload.len();
        while p.len() < want && function != RpcFunction::GetGspStaticInfo.as_u32() {
            let (_, more) = self.wait_for(RpcFunction::ContinuationRecord.as_u32(), 5000);
            p.extend_from_slice(&more);
        }
        (h, p)
    }

    /// `GSP_RM_ALLOC`: the status and the parameters returned.
    pub fn rm_alloc(
        &mut self,
        client: u32,
        parent: u32,
        object: u32,
        class: u32,
        params: &[u8],
    ) -> (NvStatus, Vec<u8>) {
        let req = RpcGspRmAlloc {
            h_client: client,
            h_parent: parent,
            h_object: object,
            h_class: class,
            status: 0,
            params_size: params.len() as u32,
            flags: 0,
            reserved: [0; 4],
        };
        let (h, p) = self.call(
            RpcFunction::GspRmAlloc.as_u32(),
            &[req.as_bytes(), params].concat(),
        );
        assert_eq!(
            h.rpc_result, 0,
            "the transport succeeds; the status is in the payload"
        );
        let (r, rest) = RpcGspRmAlloc::read_from_prefix(&p).expect("reply");
        (NvStatus(r.status), rest.to_vec())
    }

    /// `GSP_RM_CONTROL`: the status and the parameters returned.
    pub fn rm_control(
        &mut self,
        client: u32,
        object: u32,
        cmd: u32,
        params: &[u8],
    ) -> (NvStatus, Vec<u8>) {
        let req = RpcGspRmControl {
            h_client: client,
            h_object: object,
            cmd,
            status: 0,
            params_size: params.len() as u32,
            flags: 0,
        };
        let (h, p) = self.call(
            RpcFunction::GspRmControl.as_u32(),
            &[req.as_bytes(), params].concat(),
        );
        assert_eq!(h.rpc_result, 0);
        let (r, rest) = RpcGspRmControl::read_from_prefix(&p).expect("reply");
        (NvStatus(r.status), rest.to_vec())
    }
}

/// `_checkSum32` (message_queue_priv.h), written again for the test.
pub fn checksum(b: &[u8]) -> u32 {
    let x = b.chunks(8).fold(0u64, |a, c| {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        a ^ u64::from_le_bytes(w)
    });
    (x >> 32) as u32 ^ x as u32
}
