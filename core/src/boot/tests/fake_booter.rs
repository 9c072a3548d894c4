//! The fake's booter-path side (AD102/GA102/TU102): the PROM window holding a VBIOS built
//! from the documented structures, GSP and SEC2 falcons that take DMA and PIO loads, an
//! FWSEC that raises WPR2 where its DMEM mapper's FRTS command says (or puts the pre-OS
//! apps back for SB), and a booter that starts the fake GSP-RM from the WPR metadata and
//! libos arguments the mailboxes name (load) or takes WPR2 down (unload).

extern crate std;

use std::collections::HashMap;
use std::vec;
use std::vec::Vec;

use nvbare_gsp::abi::GspFwWprMeta;
use nvbare_gsp::vbios::build;
use zerocopy::FromBytes;

use super::fake::Device;

const GSP: u32 = 0x110000;
const SEC2: u32 = 0x840000;
const PROM: u32 = 0x300000;
const SCRATCH_0E: u32 = 0x1438;
const SCRATCH_15: u32 = 0x1454;
const GFW_BOOT: u32 = 0x118234;
const GFW_PLM: u32 = 0x118128;
const BSI_14: u32 = 0x1180f8;
const FUSE_GSP_1: u32 = 0x8241c0;
/// VBIOS scratch 0x20, which the fake's sequencer programs write.
pub(super) const SEQUENCER_SCRATCH: u32 = 0x1400 + 4 * 0x20;
/// What the unload's sequencer program writes there.
pub(super) const UNLOAD_SEQUENCER_MARK: u32 = 0x0000_10ad;

/// The booter-path state of the fake.
#[derive(Default)]
pub struct BooterFake {
    regs: HashMap<u32, u32>,
    /// DMA transfers per engine: (imem, dest, bus source).
    dma: HashMap<u32, Vec<(bool, u32, u64)>>,
    started: HashMap<u32, bool>,
    /// GSP-RM's unload waits for the CPU to run its sequencer program.
    pub(super) unload_awaits_sequencer: bool,
}

/// What the booter side saw.
#[derive(Clone, Debug, Default)]
pub struct BooterSeen {
    /// FWSEC commands run (0x15 FRTS, 0x19 SB), with the signature slot's first byte.
    pub fwsec: Vec<(u32, u8)>,
    /// SEC2 runs: the mailboxes it was started with.
    pub booter: Vec<(u32, u32)>,
    /// BROM ucode ids written before each SEC2/GSP start.
    pub brom_ucode_ids: Vec<u32>,
    /// The GSP's mailboxes when the booter ran (the libos args).
    pub gsp_mailboxes: (u32, u32),
    /// Words the sequencer wrote to scratch 0x20.
    pub sequencer_scratch: u32,
}

impl Device {
    pub(super) fn is_booter_chip(&self) -> bool {
        matches!(self.script.boot42 >> 24, 0x16..=0x17 | 0x19)
    }

    fn breg(&self, off: u32) -> u32 {
        self.booter.regs.get(&off).copied().unwrap_or(0)
    }

    /// A booter-path register read, or `None` for the common fake.
    pub(super) fn booter_read(&mut self, off: u32) -> Option<u32> {
        if !self.is_booter_chip() {
            return None;
        }
        if (PROM..PROM + 0x10_0000).contains(&off) {
            let i = (off - PROM) as usize;
            let rom = self.script.vbios.as_deref().unwrap_or(&[]);
            let mut w = [0u8; 4];
            for (k, b) in w.iter_mut().enumerate() {
                *b = rom.get(i + k).copied().unwrap_or(0);
            }
            return Some(u32::from_le_bytes(w));
        }
        if self.script.gfw_reads_all_ones && matches!(off, GFW_PLM | GFW_BOOT | 0x110100) {
            return Some(u32::MAX);
        }
        let v = match off {
            SCRATCH_0E => u32::from(self.script.frts_error) << 16,
            SCRATCH_15 => 0,
            GFW_BOOT => {
                if self.script.gfw_not_done {
                    0x12
                } else {
                    0xff
                }
            }
            // Lowered by devinit's FWSEC (and again by FWSEC-SB).
            GFW_PLM => 1,
            BSI_14 => 1 << 26,
            FUSE_GSP_1 => 0,
            // GSP RISC-V CPUCTL: active after booter_load, halted after unload.
            0x111388 => self.cpuctl,
            _ => {
                let base = if (GSP..GSP + 0x2000).contains(&off) {
                    GSP
                } else if (SEC2..SEC2 + 0x2000).contains(&off) {
                    SEC2
                } else {
                    return None;
                };
                match off - base {
                    // HWCFG2: RISCV, RESET_READY; scrubbing done.
                    0x0f4 => 1 << 10 | 1 << 31,
                    0x10c => 0,
                    // CPUCTL: before the driver's first reset, the GSP falcon is devinit's
                    // (halted once its FWSEC finished, unless the script says it never
                    // does); after a reset, halted once started.
                    0x100 => {
                        let halted = match self.booter.started.get(&base) {
                            None => !(base == GSP && self.script.devinit_never_halts),
                            Some(&started) => started,
                        };
                        u32::from(halted) << 4
                    }
                    0x118 => 0b10,
                    0x1668 => self.breg(off) | 1,
                    0x040 if base == GSP => self.mailbox.0,
                    0x044 if base == GSP => self.mailbox.1,
                    _ => self.breg(off),
                }
            }
        };
        Some(v)
    }

    /// A booter-path register write; `false` for the common fake.
    pub(super) fn booter_write(&mut self, off: u32, value: u32) -> bool {
        if !self.is_booter_chip() {
            return false;
        }
        if off == SEQUENCER_SCRATCH {
            self.booter_seen.sequencer_scratch = value;
            if value == UNLOAD_SEQUENCER_MARK && self.booter.unload_awaits_sequencer {
                self.booter.unload_awaits_sequencer = false;
                self.gsp_unload_done();
            }
            return true;
        }
        let base = if (GSP..GSP + 0x2000).contains(&off) {
            GSP
        } else if (SEC2..SEC2 + 0x2000).contains(&off) {
            SEC2
        } else {
            return false;
        };
        match off - base {
            // Engine reset: a reset falcon is not started.
            0x3c0 => {
                self.booter.started.insert(base, false);
                self.booter.dma.insert(base, Vec::new());
            }
            0x040 if base == GSP => self.mailbox.0 = value,
            0x044 if base == GSP => self.mailbox.1 = value,
            0x118 => {
                let src = u64::from(self.breg(base + 0x110)) << 8
                    | u64::from(self.breg(base + 0x128)) << 40;
                let src = src + u64::from(self.breg(base + 0x11c));
                let dest = self.breg(base + 0x114);
                self.booter
                    .dma
                    .entry(base)
                    .or_default()
                    .push((value & 1 << 4 != 0, dest, src));
            }
            0x100 | 0x130 if value & 2 != 0 => {
                self.booter.started.insert(base, true);
                self.booter_seen
                    .brom_ucode_ids
                    .push(self.breg(base + 0x1198));
                if base == GSP {
                    self.fwsec_run();
                } else {
                    self.booter_run();
                }
                return true;
            }
            _ => {}
        }
        self.booter.regs.insert(off, value);
        true
    }

    /// DMEM as the falcon's DMA transfers filled it (PIO loads are not modelled).
    fn dmem(&self, base: u32, len: usize) -> Vec<u8> {
        let mut d = vec![0u8; len];
        for &(imem, dest, src) in self.booter.dma.get(&base).into_iter().flatten() {
            let dest = dest as usize;
            if !imem && dest + 256 <= len {
                self.bus_read(src, &mut d[dest..dest + 256]);
            }
        }
        d
    }

    /// FWSEC on the GSP falcon: reads its command from the DMEM mapper the builder placed.
    fn fwsec_run(&mut self) {
        let d = self.dmem(GSP, build::DMEM);
        let at = build::MAPPER + 44;
        let cmd = u32::from_le_bytes(d[at..at + 4].try_into().unwrap());
        self.booter_seen.fwsec.push((cmd, d[build::PKC_DATA]));
        // FRTS (0x15) raises WPR2; SB (0x19) changes nothing the fake models.
        if cmd == 0x15 {
            let c = build::CMD_IN.0 as usize;
            let w = |i: usize| u32::from_le_bytes(d[c + 4 * i..c + 4 * i + 4].try_into().unwrap());
            // FRTS region descriptor after the 24-byte read-VBIOS descriptor.
            let (offset_4k, size_4k) = (w(8), w(9));
            // WPR2_ADDR_LO/HI hold the 4 KiB address in bits 31:4 (`_VAL`).
            if self.script.frts_error == 0 {
                self.wpr2 = (offset_4k << 4, (offset_4k + size_4k) << 4);
            }
        }
    }

    /// The booter on SEC2: load starts GSP-RM, unload takes WPR2 down.
    fn booter_run(&mut self) {
        let mb = (self.breg(SEC2 + 0x40), self.breg(SEC2 + 0x44));
        self.booter_seen.booter.push(mb);
        self.booter
            .regs
            .insert(SEC2 + 0x40, self.script.booter_error);
        if self.script.booter_error != 0 {
            return;
        }
        if mb == (0xff, 0xff) {
            self.wpr2 = (0, 0);
            return;
        }
        let meta_pa = u64::from(mb.0) | u64::from(mb.1) << 32;
        let mut meta = vec![0u8; 256];
        self.bus_read(meta_pa, &mut meta);
        let m = GspFwWprMeta::read_from_bytes(&meta[..size_of::<GspFwWprMeta>()]).unwrap();
        // The booter's checks: magic, and FRTS where FWSEC put WPR2.
        assert_eq!(m.magic, nvbare_gsp::abi::GSP_FW_WPR_META_MAGIC);
        assert_eq!(
            m.frts_offset >> 8,
            u64::from(self.wpr2.0),
            "FRTS not at WPR2"
        );
        self.seen.wpr_meta = meta;
        self.booter_seen.gsp_mailboxes = self.mailbox;
        let libos = u64::from(self.mailbox.0) | u64::from(self.mailbox.1) << 32;
        self.cpuctl = 1 << 7;
        self.mailbox = (0, 0);
        self.gsp_boot_at(libos);
    }
}
