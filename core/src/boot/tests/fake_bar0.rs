//! The fake's BAR0 register model: the FSP's EMEM channel and queues (it takes the COT
//! message and answers as the [`Script`](super::fake::Script) says), the GSP-FMC's target mask
//! and lockdown release, the mailboxes, WPR2, the sysmem flush registers, the doorbell that
//! runs the fake GSP-RM (`fake_gsp.rs`), and what a reset clears. The booter path's falcons
//! answer first (`fake_booter.rs`).

extern crate std;

use std::vec::Vec;

use nvbare_gsp::abi::NvdmPayloadCot;
use nvbare_gsp::fsp::frame_message;
use zerocopy::FromBytes;

use super::fake::{Device, FakePlatform};
use crate::hal::Bar0;

const EMEMC: u32 = 0x8f2ac0;
const EMEMD: u32 = 0x8f2ac4;
const QUEUE_HEAD: u32 = 0x8f2c00;
const QUEUE_TAIL: u32 = 0x8f2c04;
const MSGQ_HEAD: u32 = 0x8f2c80;
const MSGQ_TAIL: u32 = 0x8f2c84;
const HWCFG2: u32 = 0x1100f4;
const MAILBOX0: u32 = 0x110040;
const MAILBOX1: u32 = 0x110044;
const FALCON_OS: u32 = 0x110080;
const RISCV_CPUCTL: u32 = 0x111388;
const GSP_DOORBELL: u32 = 0x110c00;
const WPR2_LO: u32 = 0x1fa824;
const WPR2_HI: u32 = 0x1fa828;
const FB_MIB: u32 = 0x1183a4;

impl Device {
    fn fsp_scratch(&self) -> u32 {
        match self.script.boot42 >> 24 {
            0x1b => 0xad00bc,
            _ => 0x200bc,
        }
    }

    /// The FSP takes the packet in EMEM and answers.
    fn fsp_receive(&mut self) {
        assert_eq!(
            self.command & 6,
            6,
            "COT sent with memory decoding or bus mastering off"
        );
        let words = (self.queue.1 / 4 + 1) as usize;
        // Taken: HEAD = TAIL again.
        self.queue.0 = self.queue.1;
        let bytes: Vec<u8> = self.emem[..words]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        // MCTP + NVDM header, then the payload.
        assert_eq!(&bytes[0..8], &[0, 0, 0, 0xc0, 0x7e, 0xde, 0x10, 0x14]);
        let cot = NvdmPayloadCot::read_from_prefix(&bytes[8..]).unwrap().0;
        self.seen.cot = Some(cot);
        if self.script.fsp_silent {
            return;
        }
        let mut payload = [0u8; 12];
        payload[4..8].copy_from_slice(&self.script.fsp_reply_command.to_le_bytes());
        payload[8..12].copy_from_slice(&self.script.fsp_error_code.to_le_bytes());
        let mut reply = frame_message(self.script.fsp_reply_type, &payload).unwrap();
        if let Some(len) = self.script.fsp_reply_len {
            reply.resize(len as usize, 0);
        }
        for (i, c) in reply.chunks(4).enumerate() {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            self.emem[i] = u32::from_le_bytes(w);
        }
        self.msgq = (0, (reply.len() as u32).wrapping_sub(4));
        if self.script.fsp_error_code == 0 {
            // A new chain of trust starts GSP-FMC afresh.
            self.cot_done = true;
            self.target_reads = 0;
            self.lockdown_reads = 0;
            self.released = false;
            self.cpuctl = 0;
            self.gsp = None;
            self.wpr2 = (0x0008_f000, 0x0008_f100);
            if self.script.mailbox_holds_boot_args {
                let a = cot.gsp_boot_args_sysmem_offset;
                self.mailbox = (a as u32, (a >> 32) as u32);
            }
        }
    }

    fn hwcfg2(&mut self) -> u32 {
        if !self.cot_done {
            return 0xbadf_4100;
        }
        if self.target_reads < self.script.target_locked_reads {
            self.target_reads += 1;
            return 0xbadf_4102;
        }
        if let Some(code) = self.script.fmc_error {
            self.mailbox = (code, 0);
        }
        if self.lockdown_reads < self.script.lockdown_reads {
            self.lockdown_reads += 1;
            return 1 << 13 | 1 << 10;
        }
        if !self.released {
            self.released = true;
            self.mailbox = (0, 0);
            if let Some(code) = self.script.fmc_error.or(self.script.fmc_error_on_release) {
                self.mailbox = (code, 0);
            }
            if !self.script.riscv_not_running {
                self.cpuctl = 1 << 7;
                self.gsp_boot();
            }
        }
        1 << 10
    }

    pub(super) fn reset(&mut self) {
        self.seen.resets += 1;
        self.command = 0;
        if !self.script.wpr2_sticky {
            self.wpr2 = (0, 0);
        }
        self.queue = (0, 0);
        self.msgq = (0, 0);
        self.cot_done = false;
        self.target_reads = 0;
        self.lockdown_reads = 0;
        self.released = false;
        self.cpuctl = 0;
        self.mailbox = (0, 0);
        self.gsp = None;
    }
}

impl Bar0 for FakePlatform {
    fn read32(&self, offset: u32) -> u32 {
        let mut d = self.dev.borrow_mut();
        if d.gone {
            return u32::MAX;
        }
        if let Some(v) = d.booter_read(offset) {
            return v;
        }
        if offset != d.fsp_scratch() && d.script.fsp_never_ready {
            d.seen.reads_before_fsp_ready += 1;
        }
        match offset {
            0x0 => 0x1720_00a1,
            0xa00 => d.script.boot42,
            FB_MIB => d.script.fb_mib,
            WPR2_LO => d.wpr2.0,
            WPR2_HI => {
                if d.wpr2.1 != 0 && d.command & 4 != 0 && d.seen.cot.is_none() {
                    d.seen.master_while_wpr2_up = true;
                }
                d.wpr2.1
            }
            o if o == d.fsp_scratch() => {
                if d.script.fsp_never_ready {
                    0x7
                } else {
                    0xff
                }
            }
            EMEMC => (d.emem_off % 64) << 2 | (d.emem_off / 64) << 8,
            EMEMD => {
                let v = d.emem[d.emem_off as usize % 1024];
                if d.aincr && !d.script.emem_no_autoinc {
                    d.emem_off += 1;
                }
                v
            }
            QUEUE_HEAD => d.queue.0,
            QUEUE_TAIL => {
                if d.script.fsp_busy {
                    d.queue.0 + 4
                } else {
                    d.queue.1
                }
            }
            MSGQ_HEAD => d.msgq.0,
            MSGQ_TAIL => d.msgq.1,
            HWCFG2 => d.hwcfg2(),
            MAILBOX0 => d.mailbox.0,
            MAILBOX1 => d.mailbox.1,
            RISCV_CPUCTL => d.cpuctl,
            _ => 0,
        }
    }

    fn write32(&self, offset: u32, value: u32) {
        let mut d = self.dev.borrow_mut();
        if d.gone {
            return;
        }
        if offset != FALCON_OS && offset != GSP_DOORBELL && d.booter_write(offset, value) {
            return;
        }
        match offset {
            0x100a38 | 0x8a1d5c | 0x870e54 => d.seen.sysmem_flush.0 = value,
            // The flush registers are programmed before the chain of trust.
            0x100a34 | 0x8a1d58 | 0x870e50 if d.seen.cot.is_none() => {
                d.seen.sysmem_flush.1 = value;
            }
            EMEMC => {
                d.emem_off = (value >> 2 & 0x3f) + (value >> 8 & 0xff) * 64;
                d.aincw = value & 1 << 24 != 0;
                d.aincr = value & 1 << 25 != 0;
            }
            EMEMD => {
                let at = d.emem_off as usize % 1024;
                d.emem[at] = value;
                if d.aincw && !d.script.emem_no_autoinc {
                    d.emem_off += 1;
                }
            }
            QUEUE_TAIL => d.queue.1 = value,
            QUEUE_HEAD => {
                d.queue.0 = value;
                d.fsp_receive();
            }
            MSGQ_TAIL => d.msgq.1 = value,
            MSGQ_HEAD => d.msgq.0 = value,
            FALCON_OS => d.seen.falcon_os = value,
            GSP_DOORBELL => {
                d.seen.doorbells += 1;
                d.gsp_run();
            }
            _ => {}
        }
    }
}
