//! The FSP (Hopper and Blackwell): the secure processor that boots first, then verifies
//! the GSP-FMC the driver offers (the chain of trust, "COT") and starts it on the GSP.
//!
//! What a driver sees:
//! - `NV_THERM_I2CS_SCRATCH` (0x200bc on GH100, 0xad00bc on GB202; `dev_therm.h`,
//!   `dev_therm_addendum.h`) reads `NV_THERM_I2CS_SCRATCH_FSP_BOOT_COMPLETE_STATUS_SUCCESS`
//!   (0xff) once the FSP has booted (`_kfspWaitBootCond_GH100`/`_GB202`), 0 before.
//! - EMEM channel 0 (`FSP_EMEM_CHANNEL_RM`, 1 KiB, `fsp_emem_channels.h`) through
//!   `NV_PFSP_EMEMC(0)` (OFFS 7:2 in dwords, BLK 15:8 in 64-dword blocks, AINCW 24, AINCR
//!   25) and `NV_PFSP_EMEMD(0)`, and the command queue (`NV_PFSP_QUEUE_HEAD/TAIL(0)`) and
//!   message queue (`NV_PFSP_MSGQ_HEAD/TAIL(0)`) pointers: addresses from GH100's
//!   `dev_fsp_pri.h`, which GB202 uses as well (its `dev_fsp_pri.h` lists no EMEM registers,
//!   and `g_kern_fsp_nvoc.h` gives `kfspSendPacket` only the GH100 body).
//! - The protocol of `kfspSendPacket_GH100` / `kfspReadPacket_GH100`: the driver writes a
//!   packet at EMEM offset 0 with AINCW, sets QUEUE_TAIL to its last dword and then
//!   QUEUE_HEAD = 0 ("this write interrupts FSP"); the FSP consumes it (QUEUE_HEAD =
//!   QUEUE_TAIL, `kfspCanSendPacket_GH100`), writes its reply at offset 0 and sets MSGQ_TAIL
//!   to the reply's last dword and MSGQ_HEAD = 0; the driver reads with AINCR and sets
//!   MSGQ_TAIL = MSGQ_HEAD.
//!
//! The packet's MCTP/NVDM headers and the COT payload are checked in [`cot`]; the reply is
//! `NVDM_TYPE_FSP_RESPONSE` with `NVDM_PAYLOAD_COMMAND_RESPONSE` (`nvdm_payload_cmd_response.h`)
//! and an errorCode of `kern_fsp_retval.h`.

pub mod cot;

use crate::chip::ChipSpec;
use crate::device::{Cx, Signal, Unit};

/// `NV_PFSP_EMEMC(0)`.
pub const EMEMC: u32 = 0x008f_2ac0;
/// `NV_PFSP_EMEMD(0)`.
pub const EMEMD: u32 = 0x008f_2ac4;
/// `NV_PFSP_QUEUE_HEAD(0)`.
pub const QUEUE_HEAD: u32 = 0x008f_2c00;
/// `NV_PFSP_QUEUE_TAIL(0)`.
pub const QUEUE_TAIL: u32 = 0x008f_2c04;
/// `NV_PFSP_MSGQ_HEAD(0)`.
pub const MSGQ_HEAD: u32 = 0x008f_2c80;
/// `NV_PFSP_MSGQ_TAIL(0)`.
pub const MSGQ_TAIL: u32 = 0x008f_2c84;
/// `NV_PFSP_FALCON_COMMON_SCRATCH_GROUP_2(0..4)` (OpenRM dumps them when a boot fails).
pub const SCRATCH_GROUP_2: u32 = 0x008f_0320;

/// `FSP_EMEM_CHANNEL_RM_SIZE`: bytes of channel 0.
pub const EMEM_CHANNEL_BYTES: usize = 1024;
/// `DWORDS_PER_EMEM_BLOCK` (`kern_fsp_gh100.c`).
const DWORDS_PER_BLOCK: u32 = 64;
/// `NV_THERM_I2CS_SCRATCH_FSP_BOOT_COMPLETE_STATUS_SUCCESS`.
pub const FSP_BOOT_COMPLETE: u32 = 0xff;
/// How long the FSP takes to boot after power-on or reset (the real one trains memory for
/// seconds; OpenRM waits up to 4 s, `kfspWaitForSecureBoot_GH100`).
const FSP_BOOT_NS: u64 = 200_000;

/// The FSP unit.
#[derive(Debug)]
pub struct Fsp {
    /// EMEM of channel 0, in dwords.
    emem: [u32; EMEM_CHANNEL_BYTES / 4],
    /// EMEMC: offset in dwords, AINCW, AINCR.
    ememc_offset: u32,
    aincw: bool,
    aincr: bool,
    queue: (u32, u32),
    msgq: (u32, u32),
    /// QUEUE_HEAD was written: a packet waits.
    packet_pending: bool,
    /// When the unit first ran (its power-on), and whether it has booted.
    born_ns: Option<u64>,
    booted: bool,
    /// The chain of trust started the GSP-FMC and the GSP has not halted since (a COT
    /// meanwhile is refused).
    fmc_started: bool,
}

impl Fsp {
    /// Power-on state.
    pub fn new(_spec: &ChipSpec) -> Fsp {
        Fsp {
            emem: [0; EMEM_CHANNEL_BYTES / 4],
            ememc_offset: 0,
            aincw: false,
            aincr: false,
            queue: (0, 0),
            msgq: (0, 0),
            packet_pending: false,
            born_ns: None,
            booted: false,
            fmc_started: false,
        }
    }

    fn ememc(&self) -> u32 {
        let off = self.ememc_offset;
        ((off % DWORDS_PER_BLOCK) << 2)
            | (((off / DWORDS_PER_BLOCK) & 0xff) << 8)
            | (u32::from(self.aincw) << 24)
            | (u32::from(self.aincr) << 25)
    }

    /// The EMEM dword at the current offset, if inside channel 0.
    fn emem_slot(&mut self, cx: &Cx, access: &str) -> Option<&mut u32> {
        let at = self.ememc_offset as usize;
        if at >= self.emem.len() {
            cx.log.warn(
                "fsp",
                format!(
                    "EMEMD {access} at dword {at:#x}, outside EMEM channel 0 ({} dwords); ignored",
                    self.emem.len()
                ),
            );
            return None;
        }
        Some(&mut self.emem[at])
    }

    /// Reads `bytes` of EMEM from offset 0 (what `kfspReadPacket_GH100` does).
    fn packet(&self, bytes: usize) -> Vec<u8> {
        self.emem[..bytes.div_ceil(4)]
            .iter()
            .flat_map(|d| d.to_le_bytes())
            .take(bytes)
            .collect()
    }

    /// Consumes the packet in EMEM and answers it.
    fn handle_packet(&mut self, cx: &mut Cx) {
        let (head, tail) = self.queue;
        // "FSP will set QUEUE_HEAD = TAIL after each packet is received" (kfspCanSendPacket_GH100).
        self.queue.0 = tail;
        // Tail points to the last dword of the packet (kfspSendPacket_GH100).
        let size = tail.wrapping_sub(head).wrapping_add(4) as usize;
        if head != 0 || !(8..=EMEM_CHANNEL_BYTES).contains(&size) || !tail.is_multiple_of(4) {
            cx.log.warn(
                "fsp",
                format!(
                    "command packet with QUEUE_HEAD {head:#x} and QUEUE_TAIL {tail:#x} is not a \
                     packet at EMEM offset 0 of 8..{EMEM_CHANNEL_BYTES} bytes; dropped"
                ),
            );
            return;
        }
        let packet = self.packet(size);
        let mut outcome = cot::handle(cx, &packet, self.fmc_started);
        let mut nvdm_type = cot::NVDM_TYPE_FSP_RESPONSE;
        if cx.faults.fsp_corrupt_reply {
            // A mangled reply stands for an FSP that did not process the command: the FMC
            // is not started either, so a driver that ignores the reply's contents (tinygrad
            // only waits for MSGQ_HEAD != MSGQ_TAIL) still fails, waiting for the lockdown.
            cx.log.warn(
                "fault",
                "FSP reply corrupted: NVDM type 0x14 (COT) instead of 0x15 (FSP_RESPONSE); \
                 the FMC is not started",
            );
            nvdm_type = cot::NVDM_TYPE_COT;
            outcome.start_fmc = None;
        }
        let reply = cot::response(nvdm_type, outcome.command_type, outcome.error_code);
        for (i, d) in reply.iter().enumerate() {
            self.emem[i] = *d;
        }
        // "FSP updates the head after writing data into the channel" (kfspIsResponseAvailable_GH100):
        // the reply lies at offset 0 and MSGQ_TAIL points to its last dword.
        // CAST: the reply is 5 dwords.
        self.msgq = (0, (reply.len() as u32 - 1) * 4);
        if let Some(start) = outcome.start_fmc {
            self.fmc_started = true;
            cx.signal(start);
        }
    }
}

impl Unit for Fsp {
    fn name(&self) -> &'static str {
        "fsp"
    }

    fn claims(&self, spec: &ChipSpec, offset: u32) -> bool {
        matches!(
            offset,
            EMEMC | EMEMD | QUEUE_HEAD | QUEUE_TAIL | MSGQ_HEAD | MSGQ_TAIL
        ) || (SCRATCH_GROUP_2..SCRATCH_GROUP_2 + 16).contains(&offset)
            || offset == spec.fsp_ready_scratch
    }

    fn read(&mut self, cx: &mut Cx, offset: u32) -> u32 {
        match offset {
            EMEMC => self.ememc(),
            EMEMD => {
                let v = self.emem_slot(cx, "read").map_or(0, |d| *d);
                if self.aincr {
                    self.ememc_offset += 1;
                }
                v
            }
            QUEUE_HEAD => self.queue.0,
            QUEUE_TAIL => self.queue.1,
            MSGQ_HEAD => self.msgq.0,
            MSGQ_TAIL => self.msgq.1,
            o if o == cx.spec.fsp_ready_scratch && self.booted => FSP_BOOT_COMPLETE,
            _ => 0,
        }
    }

    fn write(&mut self, cx: &mut Cx, offset: u32, value: u32) {
        match offset {
            EMEMC => {
                self.ememc_offset = (value >> 2 & 0x3f) + (value >> 8 & 0xff) * DWORDS_PER_BLOCK;
                self.aincw = value >> 24 & 1 == 1;
                self.aincr = value >> 25 & 1 == 1;
            }
            EMEMD => {
                if let Some(d) = self.emem_slot(cx, "write") {
                    *d = value;
                }
                if self.aincw {
                    self.ememc_offset += 1;
                }
            }
            QUEUE_TAIL => self.queue.1 = value,
            QUEUE_HEAD => {
                self.queue.0 = value;
                if !self.booted {
                    cx.log.warn(
                        "fsp",
                        "QUEUE_HEAD written before the FSP finished booting (NV_THERM_I2CS_SCRATCH \
                         != 0xff); the packet waits for the FSP",
                    );
                }
                self.packet_pending = true;
            }
            MSGQ_HEAD => self.msgq.0 = value,
            MSGQ_TAIL => self.msgq.1 = value,
            _ => cx.log.warn(
                "fsp",
                format!("write of {value:#x} to read-only FSP register {offset:#x} ignored"),
            ),
        }
    }

    fn step(&mut self, cx: &mut Cx) -> bool {
        let born = *self.born_ns.get_or_insert(cx.now_ns);
        if !self.booted {
            if cx.now_ns.saturating_sub(born) < FSP_BOOT_NS {
                return false;
            }
            self.booted = true;
            cx.log
                .info("fsp", "FSP booted (NV_THERM_I2CS_SCRATCH = 0xff)");
        }
        if !self.packet_pending {
            return false;
        }
        self.packet_pending = false;
        self.handle_packet(cx);
        true
    }

    fn signal(&mut self, _cx: &mut Cx, signal: &Signal) {
        match signal {
            Signal::Reset => self.born_ns = None,
            // A halted GSP can be booted again (a driver reload after a clean unload).
            Signal::GspHalted => self.fmc_started = false,
            _ => {}
        }
    }
}
