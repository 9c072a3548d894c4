//! A falcon engine as the booter path drives it (Turing to Ada): the falcon's registers, its
//! IMEM and DMEM, DMA through the FBIF and PIO through the IMEMC/DMEMC ports, the boot ROM's
//! parameters, mailboxes, reset with memory scrubbing, core select (falcon or RISC-V) and
//! the start/halt handshake. What the loaded ucode *does* is not here: the engine's unit
//! (the GSP, [`super::gsp`], runs FWSEC; SEC2, [`super::sec2`], runs the booter) looks at
//! [`FalconCore::take_start`] and models the ucode it finds ([`fwsec`], [`booter`]).
//!
//! Registers, relative to the engine's base (ampere/ga102 `dev_falcon_v4.h`: MAILBOX0/1
//! 0x40/0x44, OS 0x80, HWCFG2 0xf4 with RISCV 10, MEM_SCRUBBING 12, RESET_READY 31, CPUCTL
//! 0x100 with STARTCPU 1, HALTED 4, ALIAS_EN 6, BOOTVEC 0x104, HWCFG 0x108 (IMEM_SIZE 8:0 in
//! 256-byte blocks), DMACTL 0x10c, DMATRFBASE 0x110, DMATRFMOFFS 0x114, DMATRFCMD 0x118 (FULL 0,
//! IDLE 1, SEC 3:2, IMEM 4, WRITE 5, SIZE 10:8, CTXDMA 14:12), DMATRFFBOFFS 0x11c,
//! DMATRFBASE1 0x128, CPUCTL_ALIAS 0x130, IMEMC/IMEMD/IMEMT(0) 0x180/0x184/0x188 (OFFS 7:2,
//! BLK 23:8, AINCW 24, SECURE 28), DMEMC/DMEMD(0) 0x1c0/0x1c4; `NV_P<engine>_FALCON_ENGINE`
//! 0x3c0 (dev_gsp.h 0x1103c0, dev_sec_pri.h 0x8403c0); `dev_falcon_v4_addendum.h` RM 0x84;
//! `dev_fbif_v4.h` TRANSCFG(i) 0x600 + 4i (TARGET 1:0, MEM_TYPE 2) and CTL 0x624
//! (ALLOW_PHYS_NO_CTX 7); `dev_falcon_second_pri.h` (FALCON2 base = base + 0x1000) MOD_SEL
//! 0x180, BROM_CURR_UCODE_ID 0x198, BROM_ENGIDMASK 0x19c, BROM_PARAADDR(0) 0x210;
//! `dev_riscv_pri.h` RISCV_CPUCTL 0x388 (HALTED 4, ACTIVE_STAT 7) and BCR_CTRL 0x668 (VALID
//! 0, CORE_SELECT 4, BRFETCH 8)). `TRANSCFG_TARGET` 0 is local FB (not in the published
//! header; nova-core's `FalconFbifTarget::LocalFb`, tinygrad's "target=0 is FB"), 1 and 2
//! coherent and non-coherent sysmem.
//!
//! [`FalconGen::Tu102`] falcons (TU10x, GA100) lack what GA102 added: ga100's and
//! turing/tu102's `dev_falcon_v4.h` define `HWCFG2` with RISCV (10) alone (no MEM_SCRUBBING,
//! no RESET_READY: scrubbing shows in `DMACTL` 2:1), `dev_riscv_pri.h` only
//! `CORE_SWITCH_RISCV_STATUS` (0x240, ACTIVE_STAT 0; `kflcnIsRiscvActive_TU102`), IRQMASK and
//! IRQDEST (no `BCR_CTRL`, no `RISCV_CPUCTL`), and there is no `dev_falcon_second_pri.h` (no
//! boot-ROM parameters). Writes to the missing registers are refused with a warning and read
//! 0; the core runs RISC-V when started after a reset, with no switch
//! (`kflcnResetIntoRiscv_TU102`, `kflcnSwitchToFalcon_TU102`).

pub mod booter;
pub mod fwsec;
pub mod loader;

use std::collections::BTreeMap;

use crate::chip::FalconGen;
use crate::device::Cx;
use crate::memory::Target;

/// `NV_PFALCON_FALCON_MAILBOX0`.
pub const MAILBOX0: u32 = 0x040;
/// `NV_PFALCON_FALCON_MAILBOX1`.
pub const MAILBOX1: u32 = 0x044;
/// `NV_PFALCON_FALCON_OS`.
pub const OS: u32 = 0x080;
/// `NV_PFALCON_FALCON_RM`.
pub const RM: u32 = 0x084;
/// `NV_PFALCON_FALCON_HWCFG2`.
pub const HWCFG2: u32 = 0x0f4;
/// `NV_PFALCON_FALCON_CPUCTL`.
pub const CPUCTL: u32 = 0x100;
/// `NV_PFALCON_FALCON_BOOTVEC`.
pub const BOOTVEC: u32 = 0x104;
/// `NV_PFALCON_FALCON_HWCFG`.
pub const HWCFG: u32 = 0x108;
/// `NV_PFALCON_FALCON_DMACTL`.
pub const DMACTL: u32 = 0x10c;
/// `NV_PFALCON_FALCON_DMATRFBASE`.
pub const DMATRFBASE: u32 = 0x110;
/// `NV_PFALCON_FALCON_DMATRFMOFFS`.
pub const DMATRFMOFFS: u32 = 0x114;
/// `NV_PFALCON_FALCON_DMATRFCMD`.
pub const DMATRFCMD: u32 = 0x118;
/// `NV_PFALCON_FALCON_DMATRFFBOFFS`.
pub const DMATRFFBOFFS: u32 = 0x11c;
/// `NV_PFALCON_FALCON_DMATRFBASE1`.
pub const DMATRFBASE1: u32 = 0x128;
/// `NV_PFALCON_FALCON_CPUCTL_ALIAS`.
pub const CPUCTL_ALIAS: u32 = 0x130;
/// `NV_PFALCON_FALCON_IMEMC(0)`, `IMEMD(0)`, `IMEMT(0)`.
pub const IMEMC: u32 = 0x180;
const IMEMD: u32 = 0x184;
const IMEMT: u32 = 0x188;
/// `NV_PFALCON_FALCON_DMEMC(0)`, `DMEMD(0)`.
pub const DMEMC: u32 = 0x1c0;
const DMEMD: u32 = 0x1c4;
/// `NV_P<engine>_FALCON_ENGINE`.
pub const ENGINE: u32 = 0x3c0;
/// `NV_PFALCON_FBIF_TRANSCFG(0)`.
pub const TRANSCFG: u32 = 0x600;
/// `NV_PFALCON_FBIF_CTL`.
pub const FBIF_CTL: u32 = 0x624;
/// `NV_PFALCON2_FALCON_MOD_SEL`.
pub const MOD_SEL: u32 = 0x1180;
/// `NV_PFALCON2_FALCON_BROM_CURR_UCODE_ID`.
pub const BROM_UCODE_ID: u32 = 0x1198;
/// `NV_PFALCON2_FALCON_BROM_ENGIDMASK`.
pub const BROM_ENGIDMASK: u32 = 0x119c;
/// `NV_PFALCON2_FALCON_BROM_PARAADDR(0)`.
pub const BROM_PARAADDR: u32 = 0x1210;
/// `NV_PRISCV_RISCV_CPUCTL`.
pub const RISCV_CPUCTL: u32 = 0x1388;
/// `NV_PRISCV_RISCV_BCR_CTRL`.
pub const BCR_CTRL: u32 = 0x1668;
/// `NV_PRISCV_RISCV_CORE_SWITCH_RISCV_STATUS` (TU10x, GA100; ga100 `dev_riscv_pri.h`).
pub const CORE_SWITCH_RISCV_STATUS: u32 = 0x1240;
/// `NV_PFALCON2_FALCON_MOD_SEL_ALGO_RSA3K`.
pub const MOD_SEL_RSA3K: u32 = 1;

/// IMEM/DMEM block size.
pub const BLOCK: usize = 256;
/// How long scrubbing runs after a reset is released (simulated; the driver polls
/// `HWCFG2.MEM_SCRUBBING` / `DMACTL` for it).
const SCRUB_NS: u64 = 200_000;

/// What the falcon's CPU is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cpu {
    /// Halted (power-on, after a reset, after a ucode ran).
    Halted,
    /// STARTCPU was written; the engine's unit has not looked yet.
    Started,
    /// A ucode runs (until its unit halts it).
    Running,
}

/// One IMEM block as loaded: its tag (virtual address >> 8) and whether it was loaded as
/// secure code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImemBlock {
    /// The tag.
    pub tag: u32,
    /// Loaded with `DMATRFCMD.SEC` or `IMEMC.SECURE`.
    pub secure: bool,
}

/// A falcon engine's registers and memories.
#[derive(Debug)]
pub struct FalconCore {
    /// Short name for the log ("gsp", "sec2").
    pub name: &'static str,
    /// BAR0 base.
    pub base: u32,
    /// The engine has a RISC-V core (`HWCFG2.RISCV`).
    pub has_riscv: bool,
    /// The falcon generation (which registers exist, how the core is chosen).
    pub generation: FalconGen,
    /// The falcon core was started since the last reset (a [`FalconGen::Tu102`] engine runs
    /// RISC-V only when started straight after a reset).
    pub falcon_ran: bool,
    /// IMEM bytes.
    pub imem: Vec<u8>,
    /// Per IMEM block, what was loaded there.
    pub imem_blocks: Vec<Option<ImemBlock>>,
    /// DMEM bytes.
    pub dmem: Vec<u8>,
    /// MAILBOX0/1.
    pub mailbox: [u32; 2],
    /// `FALCON_ENGINE.RESET` asserted.
    pub in_reset: bool,
    scrubbed_at_ns: u64,
    /// The CPU.
    pub cpu: Cpu,
    /// `BCR_CTRL` as written; CORE_SELECT 1 = RISC-V.
    pub bcr_ctrl: u32,
    /// The RISC-V core runs (`RISCV_CPUCTL.ACTIVE_STAT`), set by the unit that starts it.
    pub riscv_active: bool,
    /// BOOTVEC.
    pub bootvec: u32,
    /// BROM parameters: PARAADDR(0), ENGIDMASK, CURR_UCODE_ID, MOD_SEL.
    pub brom: [u32; 4],
    dma_base: u64,
    dma_moffs: u32,
    dma_fboffs: u32,
    transcfg: [u32; 8],
    imemc: u32,
    dmemc: u32,
    /// Everything else in the range, read back as written (OS, RM, DMACTL, FBIF_CTL, ...).
    regs: BTreeMap<u32, u32>,
    /// Why the last DMA failed, if one did (the ucode's model refuses to run then).
    pub dma_error: Option<String>,
}

impl FalconCore {
    /// A falcon at `base` with `imem` and `dmem` bytes, in its power-on state.
    pub fn new(name: &'static str, base: u32, has_riscv: bool, imem: usize, dmem: usize) -> Self {
        FalconCore {
            name,
            base,
            has_riscv,
            generation: FalconGen::Ga102,
            falcon_ran: false,
            imem: vec![0; imem],
            imem_blocks: vec![None; imem / BLOCK],
            dmem: vec![0; dmem],
            mailbox: [0; 2],
            in_reset: false,
            scrubbed_at_ns: 0,
            cpu: Cpu::Halted,
            bcr_ctrl: 0,
            riscv_active: false,
            bootvec: 0,
            brom: [0; 4],
            dma_base: 0,
            dma_moffs: 0,
            dma_fboffs: 0,
            transcfg: [0; 8],
            imemc: 0,
            dmemc: 0,
            regs: BTreeMap::new(),
            dma_error: None,
        }
    }

    /// The same falcon of generation `generation`.
    pub fn with_generation(mut self, generation: FalconGen) -> Self {
        self.generation = generation;
        self
    }

    /// Whether `offset` (BAR0) is this falcon's (its 0x2000 bytes: falcon, FBIF, FALCON2,
    /// RISC-V).
    pub fn claims(&self, offset: u32) -> bool {
        (self.base..self.base + 0x2000).contains(&offset)
    }

    /// The RISC-V core is the one a start runs: `RISCV_BCR_CTRL.CORE_SELECT` on GA102; on
    /// TU10x/GA100, which have no switch, the engine was reset and its falcon core not
    /// started since (`kflcnResetIntoRiscv_TU102`: "the core will be ready to run riscv
    /// after reset").
    pub fn riscv_selected(&self) -> bool {
        match self.generation {
            FalconGen::Ga102 => self.bcr_ctrl & (1 << 4) != 0,
            FalconGen::Tu102 => !self.falcon_ran,
        }
    }

    /// `rel` is a register GA102 added that this falcon does not have.
    fn missing(&self, rel: u32) -> bool {
        self.generation == FalconGen::Tu102
            && matches!(
                rel,
                BCR_CTRL | RISCV_CPUCTL | MOD_SEL | BROM_UCODE_ID | BROM_ENGIDMASK | BROM_PARAADDR
            )
    }

    /// A register of the falcon's range held as written (`FBIF_CTL`, `DMACTL`, ...), by its
    /// offset from the base.
    pub fn held(&self, rel: u32) -> u32 {
        self.regs.get(&rel).copied().unwrap_or(0)
    }

    /// `FBIF_TRANSCFG(ctx)`, or why `ctx` is no DMA context.
    pub fn transcfg(&self, ctx: u32) -> Result<u32, String> {
        self.transcfg
            .get(ctx as usize)
            .copied()
            .ok_or_else(|| format!("DMA context {ctx} does not exist (FBIF_TRANSCFG(0..8))"))
    }

    /// `BROM_PARAADDR(0)`.
    pub fn pkc_offset(&self) -> u32 {
        self.brom[0]
    }

    /// `BROM_ENGIDMASK`.
    pub fn engine_id_mask(&self) -> u32 {
        self.brom[1]
    }

    /// `BROM_CURR_UCODE_ID` (7:0).
    pub fn ucode_id(&self) -> u32 {
        self.brom[2] & 0xff
    }

    /// `MOD_SEL.ALGO` (7:0).
    pub fn mod_sel(&self) -> u32 {
        self.brom[3] & 0xff
    }

    fn scrubbing(&self, now_ns: u64) -> bool {
        self.in_reset || now_ns < self.scrubbed_at_ns
    }

    /// The STARTCPU that is pending, if any: the unit models the ucode now.
    pub fn take_start(&mut self) -> bool {
        if self.cpu == Cpu::Started {
            self.cpu = Cpu::Running;
            return true;
        }
        false
    }

    /// The ucode finished: the CPU halts with `mailbox0` (and MAILBOX1 as it is).
    pub fn halt(&mut self, mailbox0: u32) {
        self.mailbox[0] = mailbox0;
        self.cpu = Cpu::Halted;
    }

    /// The bytes of IMEM that hold virtual addresses `va..va + len` (by block tag), or why
    /// not: a block missing, or not loaded as secure when `secure` is asked.
    pub fn imem_virtual(&self, va: u32, len: usize, secure: bool) -> Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(len);
        let mut at = va;
        while out.len() < len {
            let tag = at >> 8;
            let Some(i) = self
                .imem_blocks
                .iter()
                .position(|b| b.is_some_and(|b| b.tag == tag))
            else {
                return Err(format!(
                    "no IMEM block is tagged {:#x} (virtual address {at:#x})",
                    tag << 8
                ));
            };
            if secure && !self.imem_blocks[i].is_some_and(|b| b.secure) {
                return Err(format!(
                    "IMEM block tagged {:#x} was not loaded as secure code (DMATRFCMD.SEC / IMEMC.SECURE)",
                    tag << 8
                ));
            }
            let from = i * BLOCK + (at as usize % BLOCK);
            let n = (BLOCK - at as usize % BLOCK).min(len - out.len());
            out.extend_from_slice(&self.imem[from..from + n]);
            at += n as u32;
        }
        Ok(out)
    }

    /// A BAR0 read of `offset` (claimed).
    pub fn read(&mut self, now_ns: u64, offset: u32) -> u32 {
        let rel = offset - self.base;
        if self.missing(rel) {
            return 0;
        }
        match rel {
            MAILBOX0 => self.mailbox[0],
            MAILBOX1 => self.mailbox[1],
            HWCFG2 if self.generation == FalconGen::Tu102 => u32::from(self.has_riscv) << 10,
            HWCFG2 => {
                // RESET_READY (31, the GA102 addendum) always; RISCV (10); MEM_SCRUBBING (12)
                // while the reset is held or the scrub runs.
                (1 << 31)
                    | u32::from(self.has_riscv) << 10
                    | u32::from(self.scrubbing(now_ns)) << 12
            }
            CORE_SWITCH_RISCV_STATUS if self.generation == FalconGen::Tu102 => {
                u32::from(self.riscv_active)
            }
            // HALTED (4) unless a ucode runs; ALIAS_EN (6) clear: CPUCTL itself starts it.
            CPUCTL => u32::from(self.cpu == Cpu::Halted && !self.riscv_active) << 4,
            BOOTVEC => self.bootvec,
            // CAST: IMEM sizes in blocks fit IMEM_SIZE (8:0).
            HWCFG => (self.imem.len() / BLOCK) as u32 & 0x1ff,
            DMACTL => {
                let scrub = u32::from(self.scrubbing(now_ns));
                self.regs.get(&rel).copied().unwrap_or(0) & 1 | scrub << 1 | scrub << 2
            }
            // CAST: the base register holds address bits 39:8, BASE1 48:40.
            DMATRFBASE => (self.dma_base >> 8) as u32,
            DMATRFBASE1 => (self.dma_base >> 40) as u32 & 0x1ff,
            DMATRFMOFFS => self.dma_moffs,
            DMATRFFBOFFS => self.dma_fboffs,
            // Transfers complete at once: never FULL, always IDLE.
            DMATRFCMD => 1 << 1,
            IMEMC => self.imemc,
            DMEMC => self.dmemc,
            IMEMD => self.port_read(true),
            DMEMD => self.port_read(false),
            ENGINE => u32::from(self.in_reset),
            r if (TRANSCFG..TRANSCFG + 32).contains(&r) => {
                self.transcfg[(r - TRANSCFG) as usize / 4]
            }
            BROM_PARAADDR => self.brom[0],
            BROM_ENGIDMASK => self.brom[1],
            BROM_UCODE_ID => self.brom[2],
            MOD_SEL => self.brom[3],
            RISCV_CPUCTL => u32::from(self.riscv_active) << 7 | u32::from(!self.riscv_active) << 4,
            // VALID (0) reads 1 once a core is selected: the selection took.
            BCR_CTRL => self.bcr_ctrl | 1,
            r => self.regs.get(&r).copied().unwrap_or(0),
        }
    }

    /// A BAR0 write of `offset` (claimed).
    pub fn write(&mut self, cx: &mut Cx, offset: u32, value: u32) {
        let rel = offset - self.base;
        if self.missing(rel) {
            cx.log.warn(
                self.name,
                format!(
                    "write of {value:#x} to {offset:#x} refused: TU10x/GA100 falcons have no \
                     RISCV_BCR_CTRL, RISCV_CPUCTL or boot-ROM parameter registers (ga100 \
                     dev_riscv_pri.h; no dev_falcon_second_pri.h): load HS ucode by PIO or \
                     the generic bootloader, and reset to run RISC-V"
                ),
            );
            return;
        }
        match rel {
            MAILBOX0 => self.mailbox[0] = value,
            MAILBOX1 => self.mailbox[1] = value,
            ENGINE => self.engine_reset(cx, value & 1 == 1),
            CPUCTL | CPUCTL_ALIAS if value & (1 << 1) != 0 => {
                if self.in_reset {
                    cx.log.warn(
                        self.name,
                        "STARTCPU while the engine is held in reset: ignored",
                    );
                } else if self.generation == FalconGen::Ga102 && self.riscv_selected() {
                    cx.log.warn(
                        self.name,
                        "falcon STARTCPU with the RISC-V core selected (BCR_CTRL.CORE_SELECT = 1): \
                         select the falcon core first",
                    );
                } else {
                    self.cpu = Cpu::Started;
                    self.falcon_ran = true;
                }
            }
            BOOTVEC => self.bootvec = value,
            DMATRFBASE => self.dma_base = (self.dma_base & !0xff_ffff_ff00) | u64::from(value) << 8,
            DMATRFBASE1 => {
                self.dma_base = (self.dma_base & 0xff_ffff_ffff) | u64::from(value & 0x1ff) << 40
            }
            DMATRFMOFFS => self.dma_moffs = value,
            DMATRFFBOFFS => self.dma_fboffs = value,
            DMATRFCMD => self.dma(cx, value),
            IMEMC => self.imemc = value,
            DMEMC => self.dmemc = value,
            IMEMD => self.port_write(true, value),
            DMEMD => self.port_write(false, value),
            IMEMT => {
                let blk = (self.imemc >> 8 & 0xffff) as usize;
                if let Some(b) = self.imem_blocks.get_mut(blk) {
                    *b = Some(ImemBlock {
                        tag: value & 0xffff,
                        secure: self.imemc & (1 << 28) != 0,
                    });
                }
            }
            r if (TRANSCFG..TRANSCFG + 32).contains(&r) => {
                self.transcfg[(r - TRANSCFG) as usize / 4] = value
            }
            BROM_PARAADDR => self.brom[0] = value,
            BROM_ENGIDMASK => self.brom[1] = value,
            BROM_UCODE_ID => self.brom[2] = value,
            MOD_SEL => self.brom[3] = value,
            BCR_CTRL => self.bcr_ctrl = value & !1,
            r => {
                self.regs.insert(r, value);
            }
        }
    }

    /// `FALCON_ENGINE.RESET`: asserting it halts both cores and clears what a reset clears;
    /// releasing it starts the scrub, which zeroes IMEM and DMEM.
    fn engine_reset(&mut self, cx: &mut Cx, assert: bool) {
        if assert {
            self.in_reset = true;
            self.cpu = Cpu::Halted;
            self.riscv_active = false;
        } else if self.in_reset {
            self.in_reset = false;
            self.scrubbed_at_ns = cx.now_ns + SCRUB_NS;
            self.imem.fill(0);
            self.imem_blocks.fill(None);
            self.dmem.fill(0);
            self.bcr_ctrl = 0;
            self.brom = [0; 4];
            self.bootvec = 0;
            self.dma_error = None;
            self.falcon_ran = false;
        }
    }

    fn port(&self, imem: bool) -> (usize, bool) {
        let c = if imem { self.imemc } else { self.dmemc };
        let at = (c >> 8 & 0xffff) as usize * BLOCK + (c >> 2 & 0x3f) as usize * 4;
        (at, c & (1 << 24) != 0 || c & (1 << 25) != 0)
    }

    fn bump(&mut self, imem: bool) {
        let c = if imem {
            &mut self.imemc
        } else {
            &mut self.dmemc
        };
        let at = (*c >> 8 & 0xffff) * 64 + (*c >> 2 & 0x3f) + 1;
        *c = (*c & !0x00ff_fffc) | (at & 0x3f) << 2 | (at >> 6 & 0xffff) << 8;
    }

    fn port_read(&mut self, imem: bool) -> u32 {
        let (at, inc) = self.port(imem);
        let mem = if imem { &self.imem } else { &self.dmem };
        let v = mem
            .get(at..at + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        if inc && self.dmemc & (1 << 25) != 0 && !imem {
            self.bump(false);
        }
        v
    }

    fn port_write(&mut self, imem: bool, value: u32) {
        let (at, _) = self.port(imem);
        let c = if imem { self.imemc } else { self.dmemc };
        let mem = if imem { &mut self.imem } else { &mut self.dmem };
        if let Some(b) = mem.get_mut(at..at + 4) {
            b.copy_from_slice(&value.to_le_bytes());
        }
        if imem {
            // PIO to IMEM tags the block with its physical index until IMEMT says otherwise.
            let blk = at / BLOCK;
            if let Some(b) = self.imem_blocks.get_mut(blk) {
                let tag = b.map_or(blk as u32, |b| b.tag);
                *b = Some(ImemBlock {
                    tag,
                    secure: c & (1 << 28) != 0,
                });
            }
        }
        if c & (1 << 24) != 0 {
            self.bump(imem);
        }
    }

    /// One `DMATRFCMD`: a transfer of `2^(SIZE+2)` bytes between external memory at
    /// `DMATRFBASE:BASE1 << 8 + DMATRFFBOFFS` (through `TRANSCFG(CTXDMA)`) and IMEM/DMEM at
    /// `DMATRFMOFFS`. IMEM blocks are tagged with the external offset's block (the virtual
    /// address the ucode runs at).
    fn dma(&mut self, cx: &mut Cx, cmd: u32) {
        let imem = cmd & (1 << 4) != 0;
        let write = cmd & (1 << 5) != 0;
        let size = 1usize << ((cmd >> 8 & 7) + 2);
        let ctx = (cmd >> 12 & 7) as usize;
        let secure = cmd >> 2 & 3 != 0;
        let cfg = self.transcfg[ctx];
        let ext = self.dma_base + u64::from(self.dma_fboffs);
        let fail = |me: &mut Self, cx: &mut Cx, why: String| {
            cx.log.warn(me.name, format!("falcon DMA refused: {why}"));
            me.dma_error = Some(why);
        };
        if write {
            return fail(
                self,
                cx,
                "DMA out of IMEM/DMEM (DMATRFCMD.WRITE) is not modelled".into(),
            );
        }
        if cfg & (1 << 2) == 0 {
            return fail(
                self,
                cx,
                format!(
                    "TRANSCFG({ctx}).MEM_TYPE is virtual; the boot ucodes load through physical DMA"
                ),
            );
        }
        let at = match cfg & 3 {
            0 => Target::Vram(ext),
            1 | 2 => Target::Bus(ext),
            t => return fail(self, cx, format!("TRANSCFG({ctx}).TARGET {t} is no target")),
        };
        let moffs = self.dma_moffs as usize;
        let mem = if imem { &mut self.imem } else { &mut self.dmem };
        let Some(dst) = mem.get_mut(moffs..moffs + size) else {
            let what = if imem { "IMEM" } else { "DMEM" };
            let len = mem.len();
            return fail(
                self,
                cx,
                format!("{what} offset {moffs:#x} + {size:#x} is past its {len:#x} bytes"),
            );
        };
        if let Err(e) = cx.bus.read(at, dst) {
            return fail(
                self,
                cx,
                format!("reading {size:#x} bytes at {ext:#x}: {e}"),
            );
        }
        if imem {
            // CAST: IMEM tags are the external offset's bits 23:8.
            let tag = (self.dma_fboffs >> 8) & 0xffff;
            for (i, b) in self.imem_blocks[moffs / BLOCK..(moffs + size).div_ceil(BLOCK)]
                .iter_mut()
                .enumerate()
            {
                *b = Some(ImemBlock {
                    tag: tag + i as u32,
                    secure,
                });
            }
        }
    }
}
