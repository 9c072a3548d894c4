//! The fake's GSP-RM: finds its queues through the boot structures, writes its status
//! queue header, answers the RPCs it finds in the command queue as the script says.

extern crate std;

use std::vec;
use std::vec::Vec;

use nvbare_gsp::abi::{
    GspArgumentsCached, GspFmcBootParams, GspStaticConfigInfo, LibosMemoryRegionInitArgument,
    MsgqTxHeader, RpcGspRmControl,
};
use nvbare_gsp::boot::init_arg_id;
use nvbare_gsp::msgq::{MsgQueue, QueueGeometry, RpcQueue, SharedQueueLayout};
use nvbare_gsp::rm::ctrl::gr::InternalStaticGrGetInfoParams;
use nvbare_gsp::rm::ctrl::root::ClassListV2ParamsV570;
use nvbare_gsp::rpc::reply_header;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::fake::{Device, GspSide};

impl Device {
    /// GSP-RM starts: finds its queues, writes its status header, runs the queued RPCs,
    /// sends INIT_DONE.
    pub(super) fn gsp_boot(&mut self) {
        let cot = self.seen.cot.unwrap();
        let params: GspFmcBootParams = self.bus_struct(cot.gsp_boot_args_sysmem_offset);
        let meta_pa = params.boot_gsp_rm_params.gsp_rm_desc_offset;
        let mut meta = vec![0u8; 256];
        self.bus_read(meta_pa, &mut meta);
        self.seen.wpr_meta = meta;
        self.gsp_boot_at(params.gsp_rm_params.boot_args_offset);
    }

    /// GSP-RM starts with its libos arguments at `libos_args` (booter path: from the GSP's
    /// mailboxes).
    pub(super) fn gsp_boot_at(&mut self, libos_args: u64) {
        let mut args = vec![0u8; 4096];
        self.bus_read(libos_args, &mut args);
        let rmargs = args
            .chunks(32)
            .map(|c| LibosMemoryRegionInitArgument::read_from_bytes(c).unwrap())
            .find(|r| r.id8 == init_arg_id("RMARGS"))
            .unwrap();
        if self.script.log_words > 0 {
            let log = args
                .chunks(32)
                .map(|c| LibosMemoryRegionInitArgument::read_from_bytes(c).unwrap())
                .find(|r| r.id8 == init_arg_id("LOGRM"))
                .unwrap();
            for i in 0..self.script.log_words {
                self.bus_write(log.pa + 8 + 8 * i, &(0xabc0 + i).to_le_bytes());
            }
            self.bus_write(log.pa, &self.script.log_words.to_le_bytes());
        }
        let rm: GspArgumentsCached = self.bus_struct(rmargs.pa);
        let q = rm.message_queue_init_arguments;
        let mut pt = vec![0u8; q.page_table_entry_count as usize * 8];
        self.bus_read(q.shared_mem_phys_addr, &mut pt);
        let pages: Vec<u64> = pt
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let layout = SharedQueueLayout::default_sizes();
        assert_eq!(q.cmd_queue_offset, layout.cmd_queue_offset());
        assert_eq!(pages[0], q.shared_mem_phys_addr);
        let h = layout.status_queue_header();
        let g = QueueGeometry::from_tx_header(&h, layout.stat_queue_size as usize).unwrap();
        let side = GspSide {
            pages,
            layout,
            cmd: None,
            stat_geometry: g,
            stat_writer: RpcQueue::new(g, 0).unwrap(),
            stat_ring: vec![0; g.ring_len()],
        };
        if self.script.gsp_silent {
            return;
        }
        self.gsp = Some(side);
        self.block_write(self.stat_base(), h.as_bytes());
        if let Some(text) = self.script.os_error_before_init {
            let mut p = vec![0u8; 272];
            p[0] = 62;
            p[12..12 + text.len()].copy_from_slice(text.as_bytes());
            self.gsp_send(0x1006, 0, &p);
        }
        if self.script.sequencer {
            self.gsp_send(0x1002, 0, &[0; 16]);
        }
        if self.script.sequencer_program {
            use nvbare_gsp::sequencer::{SequencerStep as S, encode_sequencer};
            let program = encode_sequencer(
                &[
                    S::RegWrite {
                        addr: 0x1480,
                        val: 0xabcd,
                    },
                    S::RegModify {
                        addr: 0x1480,
                        mask: 0xff,
                        val: 0x12,
                    },
                    S::DelayUs(3),
                    S::RegPoll {
                        addr: 0x1180f8,
                        mask: 1 << 26,
                        val: 1 << 26,
                        timeout_us: 10,
                        error: 7,
                    },
                    S::RegStore {
                        addr: 0x1480,
                        index: 1,
                    },
                ],
                64,
            );
            self.gsp_send(0x1002, 0, &program);
        }
        self.gsp_run();
        if !self.script.no_init_done {
            self.gsp_send(0x1001, self.script.init_done_result, &[]);
        }
    }

    /// GSP-RM answers `UNLOADING_GUEST_DRIVER` and halts.
    pub(super) fn gsp_unload_done(&mut self) {
        self.gsp_send(47, 0, &[]);
        if !self.script.no_halt {
            self.cpuctl = 1 << 4;
            // The booter path's WPR2 stays up until booter_unload.
            if !self.is_booter_chip() {
                self.wpr2 = (0, 0);
            }
        }
    }

    fn stat_base(&self) -> u64 {
        self.gsp.as_ref().unwrap().layout.stat_queue_offset()
    }

    fn block_write(&self, offset: u64, data: &[u8]) {
        let pages = &self.gsp.as_ref().unwrap().pages;
        let mut done = 0;
        while done < data.len() {
            let at = offset + done as u64;
            let n = (data.len() - done).min(4096 - (at % 4096) as usize);
            self.bus_write(
                pages[(at / 4096) as usize] + at % 4096,
                &data[done..done + n],
            );
            done += n;
        }
    }

    fn block_read(&self, offset: u64, out: &mut [u8]) {
        let pages = &self.gsp.as_ref().unwrap().pages;
        let mut done = 0;
        while done < out.len() {
            let at = offset + done as u64;
            let n = (out.len() - done).min(4096 - (at % 4096) as usize);
            self.bus_read(
                pages[(at / 4096) as usize] + at % 4096,
                &mut out[done..done + n],
            );
            done += n;
        }
    }

    pub(super) fn gsp_send(&mut self, function: u32, result: u32, payload: &[u8]) {
        let base = self.stat_base();
        // The CPU's read pointer of the status queue, in the command queue's header page.
        let mut rp = [0u8; 4];
        let cmd_rx = self.gsp.as_ref().unwrap().layout.cmd_queue_offset() + 32;
        self.block_read(cmd_rx, &mut rp);
        let rp = u32::from_le_bytes(rp);
        let s = self.gsp.as_mut().unwrap();
        let h = reply_header(function, result, payload.len());
        let before = s.stat_writer.write_ptr();
        s.stat_writer
            .enqueue_with_header(&mut s.stat_ring, rp, h, payload)
            .unwrap();
        if self.script.corrupt_reply_to == Some(function) {
            let at = before as usize * 4096 + 0x50;
            s.stat_ring[at] ^= 0xff;
        }
        let ring = s.stat_ring.clone();
        let mut wp = s.stat_writer.write_ptr();
        if self.script.bad_write_ptr_with == Some(function) {
            wp = 999;
        }
        self.block_write(base + 0x1000, &ring);
        self.block_write(base + 16, &wp.to_le_bytes());
    }

    /// Runs every command GSP-RM has not read yet.
    pub(super) fn gsp_run(&mut self) {
        let Some(s) = self.gsp.as_ref() else { return };
        let cmd_base = s.layout.cmd_queue_offset();
        let size = s.layout.cmd_queue_size as usize;
        let stat_rx = s.layout.stat_queue_offset() + s.stat_geometry.rx_hdr_off as u64;
        let mut hdr = [0u8; 32];
        self.block_read(cmd_base, &mut hdr);
        let h = MsgqTxHeader::read_from_bytes(&hdr).unwrap();
        let g = QueueGeometry::from_tx_header(&h, size).unwrap();
        let mut ring = vec![0u8; g.ring_len()];
        self.block_read(cmd_base + 0x1000, &mut ring);
        let s = self.gsp.as_mut().unwrap();
        let (_, reader) = s
            .cmd
            .get_or_insert_with(|| (g, MsgQueue::new(g, 0).unwrap()));
        let mut msgs = Vec::new();
        while let Some(m) = reader.receive(&ring, h.write_ptr).unwrap() {
            msgs.push(m);
        }
        let rp = reader.read_ptr();
        self.block_write(stat_rx, &rp.to_le_bytes());
        for (f, p) in core::mem::take(&mut self.deferred) {
            self.gsp_answer(f, &p);
        }
        for m in msgs {
            self.seen.functions.push(m.header.function);
            self.gsp_answer(m.header.function, &m.payload);
        }
    }

    fn gsp_answer(&mut self, f: u32, payload: &[u8]) {
        if self.script.no_reply_to == Some(f) {
            return;
        }
        if self.script.lose_reply_to == Some(f) {
            self.script.lose_reply_to = None;
            return;
        }
        if self.script.late_reply_to == Some(f) {
            self.script.late_reply_to = None;
            self.deferred.push((f, payload.to_vec()));
            return;
        }
        if let Some((_, status)) = self.script.rpc_failure.filter(|(func, _)| *func == f) {
            self.gsp_send(f, status, payload);
            return;
        }
        match f {
            // GSP_SET_SYSTEM_INFO
            72 => {
                self.seen.system_info = payload.to_vec();
                self.gsp_send(f, 0, &[]);
            }
            // SET_REGISTRY
            73 => {
                let r = self.script.registry_fails.unwrap_or(0);
                self.gsp_send(f, r, &[]);
            }
            // GET_GSP_STATIC_INFO
            65 => {
                let mut info = GspStaticConfigInfo::new_zeroed();
                info.gpu_name_string[..11].copy_from_slice(b"NVIDIA H200");
                info.gpu_short_name_string[..5].copy_from_slice(b"GH100");
                info.fb_length = 143_771 << 20;
                info.h_internal_client = 0xc1d0_0001;
                info.h_internal_device = 0x5c00_0001;
                info.h_internal_subdevice = 0x5c00_0002;
                info.gid_info.length = 16;
                info.gid_info.data[..16].copy_from_slice(&[7; 16]);
                info.fw_wpr_layout_offset.non_wpr_heap_offset = (143_771 - 214) << 20;
                self.gsp_send(f, 0, info.as_bytes());
            }
            // GSP_RM_CONTROL
            76 => {
                let (ctl, _) = RpcGspRmControl::read_from_prefix(payload).unwrap();
                let params: Vec<u8> = match ctl.cmd {
                    0x2080_0a2a => {
                        let mut p = InternalStaticGrGetInfoParams::new_zeroed();
                        self.gr_info_answers += 1;
                        p.engine_info[0].info_list[0].data = self.gr_info_answers;
                        for (i, v) in [
                            (0x0c, 0x900),
                            (0x14, 8),
                            (0x17, 9),
                            (0x20, 2),
                            (0x1d, 16896),
                            (0x0d, 64),
                        ] {
                            p.engine_info[0].info_list[i].index = i as u32;
                            p.engine_info[0].info_list[i].data = v;
                        }
                        p.as_bytes().to_vec()
                    }
                    0x0080_0292 => {
                        let mut p = ClassListV2ParamsV570::new_zeroed();
                        p.num_classes = 3;
                        p.class_list[..3].copy_from_slice(&[0xc8b5, 0xcbc0, 0xc86f]);
                        p.as_bytes().to_vec()
                    }
                    _ => {
                        self.gsp_send(f, 0x56, payload);
                        return;
                    }
                };
                let mut reply = ctl;
                reply.params_size = params.len() as u32;
                let mut body = reply.as_bytes().to_vec();
                body.extend_from_slice(&params);
                self.gsp_send(f, 0, &body);
            }
            // UNLOADING_GUEST_DRIVER
            47 => {
                if self.script.sequencer_at_unload {
                    // GSP-RM asks the CPU to write the scratch register and answers once
                    // it did (`fake_booter`'s write of the mark).
                    use super::fake_booter::{SEQUENCER_SCRATCH, UNLOAD_SEQUENCER_MARK};
                    use nvbare_gsp::sequencer::{SequencerStep, encode_sequencer};
                    self.booter.unload_awaits_sequencer = true;
                    let program = encode_sequencer(
                        &[SequencerStep::RegWrite {
                            addr: SEQUENCER_SCRATCH,
                            val: UNLOAD_SEQUENCER_MARK,
                        }],
                        64,
                    );
                    self.gsp_send(0x1002, 0, &program);
                    return;
                }
                self.gsp_unload_done();
            }
            _ => self.gsp_send(f, 0xff10_0001, &[]),
        }
    }
}
