//! Falcon and RISC-V engine control (hwref `dev_falcon_v4.h`, `dev_riscv_pri.h`,
//! `dev_gsp.h`).
//!
//! Falcon registers are relative to an engine's falcon base ([`FalconBase`]); RISC-V core
//! registers to the engine's second ("FALCON2") base ([`RiscvBase`], falcon base + 0x1000).
//! Field layouts are those of Ampere and later. TU102's header has a narrower
//! `DMATRFMOFFS_OFFS` (15:0) and `IMEMC_BLK`/`DMEMC_BLK` (15:8) (marked `narrower_in`, so on
//! Turing keep those values below 2^16 and 2^8); bit 31 of `HWCFG2` is `RESET_READY` on GA102
//! but part of `PRGN_RSVD_FUSE` (31:24) on GH100.

use super::RegisterBase;
use super::macros::register;

/// The BAR0 base of a falcon engine's registers (`NV_P<engine>` range start).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FalconBase(pub u32);

impl FalconBase {
    /// GSP falcon: `NV_PGSP` = 0x113fff:0x110000.
    pub const GSP: FalconBase = FalconBase(0x0011_0000);
    /// SEC2 falcon: `NV_PSEC` = 0x843fff:0x840000 (Turing to Ada).
    pub const SEC2: FalconBase = FalconBase(0x0084_0000);
    /// FSP falcon (Hopper, Blackwell): `NV_PFSP_FALCON_COMMON_SCRATCH_GROUP_2(0)` = 0x8f0320
    /// is this base + the falcon-relative 0x320.
    pub const FSP: FalconBase = FalconBase(0x008f_0000);

    /// The base of this engine's RISC-V core registers (falcon base + 0x1000).
    pub const fn riscv(self) -> RiscvBase {
        RiscvBase(self.0 + 0x1000)
    }
}

impl RegisterBase for FalconBase {
    fn base_address(self) -> u32 {
        self.0
    }
}

/// The BAR0 base of an engine's RISC-V core registers (`NV_FALCON2_<engine>_BASE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RiscvBase(pub u32);

impl RiscvBase {
    /// `NV_FALCON2_GSP_BASE` = 0x111000.
    pub const GSP: RiscvBase = FalconBase::GSP.riscv();
    /// `NV_FALCON2_SEC_BASE` = 0x841000.
    pub const SEC2: RiscvBase = FalconBase::SEC2.riscv();
}

impl RegisterBase for RiscvBase {
    fn base_address(self) -> u32 {
        self.0
    }
}

register! {
    /// `NV_PFALCON_FALCON_IRQSCLR`: write 1 to clear a falcon interrupt.
    pub struct FalconIrqsclr @ [FalconBase + 0x004]
        hwref("NV_PFALCON_FALCON_IRQSCLR"; absent [AD102, GH100, GB100, GB202])
    {
        /// Clear the halt interrupt.
        halt / with_halt: bool = 4:4, hwref("HALT");
        /// Clear software interrupt 0.
        swgen0 / with_swgen0: bool = 6:6, hwref("SWGEN0");
    }

    /// `NV_PFALCON_FALCON_IRQSTAT`: pending falcon interrupts.
    pub struct FalconIrqstat @ [FalconBase + 0x008]
        hwref("NV_PFALCON_FALCON_IRQSTAT"; absent [AD102, GH100, GB100, GB202])
    {
        /// The falcon halted.
        halt / with_halt: bool = 4:4, hwref("HALT");
        /// Software interrupt 0.
        swgen0 / with_swgen0: bool = 6:6, hwref("SWGEN0");
    }

    /// `NV_PFALCON_FALCON_MAILBOX0`: scratch shared with the firmware (boot arguments in,
    /// error codes out).
    pub struct FalconMailbox0 @ [FalconBase + 0x040]
        hwref("NV_PFALCON_FALCON_MAILBOX0"; absent [AD102, GB100, GB202])
    {
        /// The mailbox value.
        data / with_data: u32 = 31:0, hwref("DATA"; absent [TU102, GA100, GA102]);
    }

    /// `NV_PFALCON_FALCON_MAILBOX1`: second mailbox.
    pub struct FalconMailbox1 @ [FalconBase + 0x044]
        hwref("NV_PFALCON_FALCON_MAILBOX1"; absent [AD102, GB100, GB202])
    {
        /// The mailbox value.
        data / with_data: u32 = 31:0, hwref("DATA"; absent [TU102, GA100, GA102]);
    }

    /// `NV_PFALCON_FALCON_OS`: the running ucode's version (written by the driver for
    /// booter, read back for diagnostics).
    pub struct FalconOs @ [FalconBase + 0x080]
        hwref("NV_PFALCON_FALCON_OS"; absent [AD102, GB100, GB202])
    {
        /// The version.
        version / with_version: u32 = 31:0, hwref("VERSION"; absent [TU102, GA100, GA102]);
    }

    /// `NV_PFALCON_FALCON_HWCFG2`: falcon capabilities and boot-ROM state.
    pub struct FalconHwcfg2 @ [FalconBase + 0x0f4]
        hwref("NV_PFALCON_FALCON_HWCFG2"; absent [AD102, GB100, GB202])
    {
        /// The engine has a RISC-V core.
        riscv / with_riscv: bool = 10:10, hwref("RISCV");
        /// Memory scrubbing still pending (0 = done).
        mem_scrubbing / with_mem_scrubbing: bool = 12:12,
            hwref("MEM_SCRUBBING"; absent [TU102, GA100]);
        /// The RISC-V boot ROM still holds privilege lockdown (0 = released: FMC running).
        riscv_br_priv_lockdown / with_riscv_br_priv_lockdown: bool = 13:13,
            hwref("RISCV_BR_PRIV_LOCKDOWN"; absent [TU102, GA100, GA102]);
        /// The engine may be reset (GA102 addendum; not this bit on GH100).
        reset_ready / with_reset_ready: bool = 31:31,
            hwref("RESET_READY"; absent [TU102, GA100, GH100]);
    }

    /// `NV_PFALCON_FALCON_CPUCTL`: falcon CPU control.
    pub struct FalconCpuctl @ [FalconBase + 0x100]
        hwref("NV_PFALCON_FALCON_CPUCTL"; absent [AD102, GH100, GB100, GB202])
    {
        /// Start the falcon CPU.
        startcpu / with_startcpu: bool = 1:1, hwref("STARTCPU");
        /// The falcon CPU is halted.
        halted / with_halted: bool = 4:4, hwref("HALTED");
        /// `CPUCTL_ALIAS` controls the CPU instead of this register.
        alias_en / with_alias_en: bool = 6:6, hwref("ALIAS_EN");
    }

    /// `NV_PFALCON_FALCON_BOOTVEC`: the IMEM address the falcon starts at.
    pub struct FalconBootvec @ [FalconBase + 0x104]
        hwref("NV_PFALCON_FALCON_BOOTVEC"; absent [AD102, GH100, GB100, GB202])
    {}

    /// `NV_PFALCON_FALCON_HWCFG`: memory sizes.
    pub struct FalconHwcfg @ [FalconBase + 0x108]
        hwref("NV_PFALCON_FALCON_HWCFG"; absent [AD102, GH100, GB100, GB202])
    {
        /// IMEM size in 256-byte blocks.
        imem_size / with_imem_size: u16 = 8:0, hwref("IMEM_SIZE");
    }

    /// `NV_PFALCON_FALCON_DMACTL`: DMA control and scrubbing status.
    pub struct FalconDmactl @ [FalconBase + 0x10c]
        hwref("NV_PFALCON_FALCON_DMACTL"; absent [AD102, GH100, GB100, GB202])
    {
        /// DMA requires a context.
        require_ctx / with_require_ctx: bool = 0:0, hwref("REQUIRE_CTX");
        /// DMEM scrubbing pending (0 = done).
        dmem_scrubbing / with_dmem_scrubbing: bool = 1:1, hwref("DMEM_SCRUBBING");
        /// IMEM scrubbing pending (0 = done).
        imem_scrubbing / with_imem_scrubbing: bool = 2:2, hwref("IMEM_SCRUBBING");
    }

    /// `NV_PFALCON_FALCON_DMATRFBASE`: DMA source/target base, bits 39:8 of the address.
    pub struct FalconDmatrfbase @ [FalconBase + 0x110]
        hwref("NV_PFALCON_FALCON_DMATRFBASE"; absent [AD102, GH100, GB100, GB202])
    {
        /// Address bits 39:8.
        base / with_base: u32 = 31:0, hwref("BASE");
    }

    /// `NV_PFALCON_FALCON_DMATRFMOFFS`: offset into IMEM/DMEM of a DMA transfer.
    pub struct FalconDmatrfmoffs @ [FalconBase + 0x114]
        hwref("NV_PFALCON_FALCON_DMATRFMOFFS"; absent [AD102, GH100, GB100, GB202])
    {
        /// Falcon memory offset.
        offs / with_offs: u32 = 23:0,
            hwref("OFFS"; narrower_in [TU102]);
    }

    /// `NV_PFALCON_FALCON_DMATRFCMD`: starts a DMA transfer; reads back its state.
    pub struct FalconDmatrfcmd @ [FalconBase + 0x118]
        hwref("NV_PFALCON_FALCON_DMATRFCMD"; absent [AD102, GH100, GB100, GB202])
    {
        /// The DMA queue is full.
        full / with_full: bool = 0:0, hwref("FULL");
        /// The DMA engine is idle.
        idle / with_idle: bool = 1:1, hwref("IDLE");
        /// Security level of the transfer.
        sec / with_sec: u8 = 3:2, hwref("SEC");
        /// Target IMEM (else DMEM).
        imem / with_imem: bool = 4:4, hwref("IMEM");
        /// Falcon memory to external memory (else inwards).
        external_write / with_external_write: bool = 5:5, hwref("WRITE");
        /// Transfer size: 2^(size+2) bytes; 6 = 256 bytes (`_SIZE_256B`).
        size / with_size: u8 = 10:8, hwref("SIZE");
        /// DMA context (FBIF TRANSCFG index).
        ctxdma / with_ctxdma: u8 = 14:12, hwref("CTXDMA");
        /// Set the IMEM tag.
        set_dmtag / with_set_dmtag: bool = 16:16, hwref("SET_DMTAG");
    }

    /// `NV_PFALCON_FALCON_DMATRFFBOFFS`: offset from `DMATRFBASE` of a DMA transfer.
    pub struct FalconDmatrffboffs @ [FalconBase + 0x11c]
        hwref("NV_PFALCON_FALCON_DMATRFFBOFFS"; absent [AD102, GH100, GB100, GB202])
    {
        /// External memory offset.
        offs / with_offs: u32 = 31:0, hwref("OFFS");
    }

    /// `NV_PFALCON_FALCON_DMATRFBASE1`: DMA base, bits 48:40 of the address.
    pub struct FalconDmatrfbase1 @ [FalconBase + 0x128]
        hwref("NV_PFALCON_FALCON_DMATRFBASE1"; absent [AD102, GH100, GB100, GB202])
    {
        /// Address bits 48:40.
        base / with_base: u16 = 8:0, hwref("BASE");
    }

    /// `NV_PFALCON_FALCON_CPUCTL_ALIAS`: CPU control when `CPUCTL.ALIAS_EN` is set.
    pub struct FalconCpuctlAlias @ [FalconBase + 0x130]
        hwref("NV_PFALCON_FALCON_CPUCTL_ALIAS"; absent [AD102, GH100, GB100, GB202])
    {
        /// Start the falcon CPU.
        startcpu / with_startcpu: bool = 1:1, hwref("STARTCPU");
    }

    /// `NV_PFALCON_FALCON_IMEMC(0)`: IMEM port 0 control (the only port used).
    pub struct FalconImemc @ [FalconBase + 0x180]
        hwref("NV_PFALCON_FALCON_IMEMC"[0]; absent [AD102, GH100, GB100, GB202])
    {
        /// Word offset within the block.
        offs / with_offs: u8 = 7:2, hwref("OFFS");
        /// 256-byte block.
        blk / with_blk: u16 = 23:8, hwref("BLK"; narrower_in [TU102]);
        /// Auto-increment on write.
        aincw / with_aincw: bool = 24:24, hwref("AINCW");
        /// Secure (HS) code.
        secure / with_secure: bool = 28:28, hwref("SECURE");
    }

    /// `NV_PFALCON_FALCON_IMEMD(0)`: IMEM port 0 data.
    pub struct FalconImemd @ [FalconBase + 0x184]
        hwref("NV_PFALCON_FALCON_IMEMD"[0]; absent [AD102, GH100, GB100, GB202])
    {
        /// The word.
        data / with_data: u32 = 31:0, hwref("DATA");
    }

    /// `NV_PFALCON_FALCON_IMEMT(0)`: IMEM port 0 tag.
    pub struct FalconImemt @ [FalconBase + 0x188]
        hwref("NV_PFALCON_FALCON_IMEMT"[0]; absent [AD102, GH100, GB100, GB202])
    {
        /// The tag.
        tag / with_tag: u16 = 15:0, hwref("TAG");
    }

    /// `NV_PFALCON_FALCON_DMEMC(0)`: DMEM port 0 control.
    pub struct FalconDmemc @ [FalconBase + 0x1c0]
        hwref("NV_PFALCON_FALCON_DMEMC"[0]; absent [AD102, GH100, GB100, GB202])
    {
        /// Word offset within the block.
        offs / with_offs: u8 = 7:2, hwref("OFFS");
        /// 256-byte block.
        blk / with_blk: u16 = 23:8, hwref("BLK"; narrower_in [TU102]);
        /// Auto-increment on write.
        aincw / with_aincw: bool = 24:24, hwref("AINCW");
        /// Auto-increment on read.
        aincr / with_aincr: bool = 25:25, hwref("AINCR"; absent [GA100, GA102]);
    }

    /// `NV_PFALCON_FALCON_DMEMD(0)`: DMEM port 0 data.
    pub struct FalconDmemd @ [FalconBase + 0x1c4]
        hwref("NV_PFALCON_FALCON_DMEMD"[0]; absent [AD102, GH100, GB100, GB202])
    {
        /// The word.
        data / with_data: u32 = 31:0, hwref("DATA");
    }

    /// `NV_P<engine>_FALCON_ENGINE`: engine reset (hwref defines it per engine, e.g.
    /// `NV_PGSP_FALCON_ENGINE` = 0x1103c0, `NV_PSEC_FALCON_ENGINE` = 0x8403c0).
    pub struct FalconEngine @ [FalconBase + 0x3c0]
        hwref("NV_PGSP_FALCON_ENGINE" at FalconBase::GSP; absent [GA100, AD102, GB202])
    {
        /// Hold the engine in reset.
        reset / with_reset: bool = 0:0, hwref("RESET");
        /// Reset state (Hopper+): 0 asserted, 2 deasserted.
        reset_status / with_reset_status: u8 = 10:8, hwref("RESET_STATUS"; absent [TU102, GA102]);
    }

    /// `NV_PRISCV_RISCV_CPUCTL`: RISC-V core control.
    pub struct RiscvCpuctl @ [RiscvBase + 0x388]
        hwref("NV_PRISCV_RISCV_CPUCTL"; absent [TU102, GA100, AD102, GB100, GB202])
    {
        /// Start the RISC-V core.
        startcpu / with_startcpu: bool = 0:0, hwref("STARTCPU"; absent [GA102]);
        /// The core is halted.
        halted / with_halted: bool = 4:4, hwref("HALTED");
        /// The core is stopped.
        stopped / with_stopped: bool = 5:5, hwref("STOPPED"; absent [GA102]);
        /// The core is active.
        active_stat / with_active_stat: bool = 7:7, hwref("ACTIVE_STAT");
    }

    /// `NV_PRISCV_RISCV_BR_RETCODE`: the RISC-V boot ROM's result. No published hwref
    /// header defines it; offset and field follow nova-core (`regs.rs`): result 2 = fail,
    /// 3 = pass, 0/1 = still running.
    pub struct RiscvBrRetcode @ [RiscvBase + 0x65c]
        hwref("NV_PRISCV_RISCV_BR_RETCODE";
              absent [TU102, GA100, GA102, AD102, GH100, GB100, GB202])
    {
        /// Boot ROM result.
        result / with_result: u8 = 1:0, hwref("RESULT");
    }

    /// `NV_PRISCV_RISCV_BCR_CTRL`: boot configuration of the RISC-V core.
    pub struct RiscvBcrCtrl @ [RiscvBase + 0x668]
        hwref("NV_PRISCV_RISCV_BCR_CTRL"; absent [TU102, GA100, AD102, GH100, GB100, GB202])
    {
        /// The boot configuration is valid.
        valid / with_valid: bool = 0:0, hwref("VALID");
        /// 0 = falcon core, 1 = RISC-V core.
        core_select / with_core_select: bool = 4:4, hwref("CORE_SELECT");
        /// Boot ROM fetch.
        brfetch / with_brfetch: bool = 8:8, hwref("BRFETCH");
    }

    /// `NV_PGSP_QUEUE_HEAD(i)`: GSP command-queue doorbells; writing head 0 tells GSP-RM a
    /// command is queued.
    pub struct GspQueueHead @ [0x0011_0c00; stride 8; count 8]
        hwref("NV_PGSP_QUEUE_HEAD"; absent [GA100, AD102, GH100, GB100, GB202])
    {
        /// The head value.
        head / with_head: u32 = 31:0, hwref("ADDRESS");
    }
}

impl FalconHwcfg2 {
    /// What a BAR0 read of a GSP register returns while the FSP still holds the PRIV target
    /// mask (`privErrTargetLocked` in kern_fsp_gh100.c); the low byte carries detail.
    pub const PRI_ERROR_TARGET_LOCKED: u32 = 0xbadf_4100;

    /// Whether the CPU can reach the engine: the read is neither 0 nor a target-locked PRI
    /// error (the test kern_fsp_gh100.c `_kfspIsGspTargetMaskReleased` makes).
    pub fn target_mask_released(self) -> bool {
        self.0 != 0 && (self.0 & 0xffff_ff00) != Self::PRI_ERROR_TARGET_LOCKED
    }

    /// Whether the GSP FMC has taken over on an FSP boot: the register is reachable AND the
    /// boot ROM released its privilege lockdown. A target-locked error read (0xbadf41xx) has
    /// bit 13 clear, so testing bit 13 alone would report success too early.
    pub fn fmc_running(self) -> bool {
        self.target_mask_released() && !self.riscv_br_priv_lockdown()
    }
}

impl FalconDmatrfcmd {
    /// `NV_PFALCON_FALCON_DMATRFCMD_SIZE_256B`.
    pub const SIZE_256B: u8 = 6;
}

impl RiscvBrRetcode {
    /// The boot ROM failed.
    pub const RESULT_FAIL: u8 = 2;
    /// The boot ROM passed.
    pub const RESULT_PASS: u8 = 3;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hal::Bar0;
    use core::cell::RefCell;

    /// A BAR0 that records writes and returns a fixed value for reads.
    struct Recorder {
        writes: RefCell<alloc::vec::Vec<(u32, u32)>>,
        read_value: u32,
        reads: RefCell<alloc::vec::Vec<u32>>,
    }

    impl Bar0 for Recorder {
        fn read32(&self, offset: u32) -> u32 {
            self.reads.borrow_mut().push(offset);
            self.read_value
        }
        fn write32(&self, offset: u32, value: u32) {
            self.writes.borrow_mut().push((offset, value));
        }
    }

    fn recorder(read_value: u32) -> Recorder {
        Recorder {
            writes: RefCell::default(),
            read_value,
            reads: RefCell::default(),
        }
    }

    #[test]
    fn engine_relative_addresses() {
        assert_eq!(FalconHwcfg2::address(FalconBase::GSP), 0x1100f4);
        assert_eq!(FalconMailbox0::address(FalconBase::GSP), 0x110040);
        assert_eq!(FalconEngine::address(FalconBase::SEC2), 0x8403c0);
        assert_eq!(RiscvCpuctl::address(RiscvBase::GSP), 0x111388);
        assert_eq!(RiscvBcrCtrl::address(FalconBase::SEC2.riscv()), 0x841668);
    }

    #[test]
    fn read_and_write_go_to_the_engine() {
        let bar = recorder(1 << 13);
        let hwcfg2 = FalconHwcfg2::read(&bar, FalconBase::GSP);
        assert!(hwcfg2.riscv_br_priv_lockdown());
        assert!(!hwcfg2.mem_scrubbing());
        assert_eq!(bar.reads.borrow().as_slice(), &[0x1100f4]);

        FalconDmatrfcmd::default()
            .with_imem(true)
            .with_size(FalconDmatrfcmd::SIZE_256B)
            .write(&bar, FalconBase::SEC2);
        assert_eq!(bar.writes.borrow().as_slice(), &[(0x840118, 0x610)]);
    }

    #[test]
    fn fmc_running_rejects_pri_errors() {
        assert!(!FalconHwcfg2::from_raw(0).fmc_running());
        assert!(!FalconHwcfg2::from_raw(0xbadf_4123).fmc_running());
        assert!(!FalconHwcfg2::from_raw(0xbadf_4100).target_mask_released());
        assert!(!FalconHwcfg2::from_raw(1 << 13 | 1 << 10).fmc_running());
        assert!(FalconHwcfg2::from_raw(1 << 10).fmc_running());
    }

    #[test]
    fn gsp_queue_head_index_is_checked() {
        let bar = recorder(0);
        assert_eq!(GspQueueHead::address(0), Ok(0x110c00));
        assert_eq!(GspQueueHead::address(7), Ok(0x110c38));
        let err = GspQueueHead::default().write(&bar, 8).unwrap_err();
        assert_eq!(
            err,
            crate::regs::RegisterError::IndexOutOfRange {
                register: "NV_PGSP_QUEUE_HEAD",
                index: 8,
                count: 8
            }
        );
        assert!(bar.writes.borrow().is_empty());
    }

    #[test]
    fn setters_mask_to_field_width() {
        let reg = FalconImemc::default().with_offs(0xff);
        assert_eq!(reg.raw(), 0x3f << 2);
        assert_eq!(reg.offs(), 0x3f);
        assert_eq!(reg.blk(), 0);
    }
}
