//! Why a boot failed: the stage, one variant per check (each naming what was wrong and what
//! to do), and what GSP-RM said ([`GspDiagnostics`]) once it could say anything.

use core::fmt;

use nvbare_gsp::firmware::FirmwareError;
use nvbare_gsp::fsp::FspError;
use nvbare_gsp::msgq::MsgqError;
use nvbare_gsp::rpc::RpcResult;
use nvbare_gsp::rpc::events::EventError;

use crate::chip::{Chip, UnknownChip};
use crate::gsp_rpc::{GspDiagnostics, RpcError};
use crate::hal::{PlatformError, TimedOut};
use crate::shared::SharedMemError;

/// The stages of a boot, in order (the boot report's timeline rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// Read `NV_PMC_BOOT_42`, pick the chip's boot HAL.
    Identify,
    /// Reset the GPU if a previous boot left WPR2 up; wait for the FSP.
    Reset,
    /// VRAM size and the FB layout asked of GSP-FMC.
    Layout,
    /// Parse and check the FMC, GSP-RM and bootloader files.
    FirmwareParse,
    /// Build the boot structures in DMA memory; queue the init RPCs.
    Structures,
    /// FSP chain of trust: the COT message and FSP's reply.
    Fsp,
    /// Booter path: the VBIOS's FWSEC-FRTS on the GSP falcon raises WPR2.
    Fwsec,
    /// Booter path: `booter_load` on SEC2 starts GSP-RM on the GSP's RISC-V core.
    Booter,
    /// Wait for GSP-FMC to release the GSP's target mask and privilege lockdown.
    Lockdown,
    /// Link the status queue, ring the doorbell, wait for `GSP_INIT_DONE`.
    GspInit,
    /// `GET_GSP_STATIC_INFO` and the GR/class queries.
    StaticInfo,
    /// `UNLOADING_GUEST_DRIVER`, RISC-V halt, freeing memory.
    Teardown,
}

impl Stage {
    /// Every boot stage, in order (teardown is not part of a boot).
    pub const BOOT: [Stage; 9] = [
        Stage::Identify,
        Stage::Reset,
        Stage::Layout,
        Stage::FirmwareParse,
        Stage::Structures,
        Stage::Fsp,
        Stage::Lockdown,
        Stage::GspInit,
        Stage::StaticInfo,
    ];

    /// The booter path's stages, in order.
    pub const BOOTER: [Stage; 9] = [
        Stage::Identify,
        Stage::Reset,
        Stage::Layout,
        Stage::FirmwareParse,
        Stage::Structures,
        Stage::Fwsec,
        Stage::Booter,
        Stage::GspInit,
        Stage::StaticInfo,
    ];

    /// The stage's name as the timeline prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Identify => "identify",
            Stage::Reset => "reset",
            Stage::Layout => "layout",
            Stage::FirmwareParse => "firmware parse",
            Stage::Structures => "structures",
            Stage::Fsp => "FSP chain of trust",
            Stage::Fwsec => "FWSEC-FRTS",
            Stage::Booter => "SEC2 booter",
            Stage::Lockdown => "lockdown release",
            Stage::GspInit => "GSP init",
            Stage::StaticInfo => "static info",
            Stage::Teardown => "teardown",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which firmware file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirmwareFile {
    /// `fmc-570.144.bin`.
    Fmc,
    /// `gsp-570.144.bin`.
    GspRm,
    /// `bootloader-570.144.bin`.
    Bootloader,
}

impl FirmwareFile {
    /// The file name.
    pub const fn file_name(self) -> &'static str {
        match self {
            FirmwareFile::Fmc => "fmc-570.144.bin",
            FirmwareFile::GspRm => "gsp-570.144.bin",
            FirmwareFile::Bootloader => "bootloader-570.144.bin",
        }
    }
}

/// What went wrong, one variant per check.
#[derive(Debug)]
pub enum BootErrorKind {
    /// `NV_PMC_BOOT_42` names no chip nvbare knows.
    UnknownChip(UnknownChip),
    /// A step of the booter path (FWSEC, SEC2 booter, sequencer) failed.
    Booter(crate::boot::booter::BooterError),
    /// Config space names another vendor than NVIDIA.
    NotAnNvidiaGpu {
        /// `PCI_VENDOR_ID`.
        vendor: u32,
        /// `PCI_DEVICE_ID`.
        device: u32,
    },
    /// The PCI device id and `NV_PMC_BOOT_42` name different chip families.
    ChipMismatch {
        /// `PCI_DEVICE_ID`.
        device_id: u16,
        /// The chip the device id's block names.
        by_id: Chip,
        /// The chip `NV_PMC_BOOT_42` names.
        boot42: Chip,
    },
    /// Config space did not answer with NVIDIA's vendor id after a reset.
    ConfigSpaceNotBack {
        /// The wait.
        timed_out: TimedOut,
    },
    /// GB20x's BAR firewall (config 0x2b8 bit 24) stayed engaged.
    BarFirewall {
        /// The last `NV_EP_PCFG_GPU_VSEC_DEBUG_SEC_2`.
        value: u32,
        /// The wait.
        timed_out: TimedOut,
    },
    /// Config space answers but every BAR0 read gives all ones after the FSP booted.
    Bar0Dead {
        /// `PCI_DEVICE_ID`.
        device_id: u16,
    },
    /// The sysmem flush buffer could not be programmed.
    SysmemFlush(crate::regs::fb::SysmemFlushError),
    /// A chip nvbare knows, but whose boot path (the SEC2 booter) it does not implement.
    BootPathNotImplemented {
        /// The chip.
        chip: Chip,
    },
    /// A platform operation failed.
    Platform {
        /// What was being done.
        step: &'static str,
        /// The cause.
        source: PlatformError,
    },
    /// WPR2 is up and the platform cannot reset the GPU.
    Wpr2UpNoReset {
        /// `NV_PFB_PRI_MMU_WPR2_ADDR_HI`.
        wpr2_hi: u32,
        /// Why the reset could not be made.
        source: PlatformError,
    },
    /// WPR2 is still up after a reset.
    Wpr2StillUp {
        /// `NV_PFB_PRI_MMU_WPR2_ADDR_LO`.
        wpr2_lo: u32,
        /// `NV_PFB_PRI_MMU_WPR2_ADDR_HI`.
        wpr2_hi: u32,
    },
    /// The FSP did not report its boot complete.
    FspNotReady {
        /// The boot-status register's address.
        register: u32,
        /// Its last value.
        value: u32,
        /// The wait.
        timed_out: TimedOut,
    },
    /// `NV_USABLE_FB_SIZE_IN_MB` reads a size no GPU of this chip has.
    ImplausibleVram {
        /// The register's value (MiB).
        mib: u32,
    },
    /// The WPR2 region asked for would take more than half of VRAM.
    LayoutDoesNotFit {
        /// Usable VRAM.
        fb_size: u64,
        /// What the firmware needs at the top.
        needed: u64,
    },
    /// A firmware file is truncated, tampered or not 570.144.
    Firmware {
        /// Which file.
        file: FirmwareFile,
        /// The chip it was meant for.
        chip: Chip,
        /// What the parser found.
        source: FirmwareError,
    },
    /// A firmware file parses but is not the chip's file.
    FirmwareNotForChip {
        /// Which file.
        file: FirmwareFile,
        /// The chip.
        chip: Chip,
    },
    /// DMA memory could not be had.
    Dma {
        /// What it was for.
        what: &'static str,
        /// The cause.
        source: PlatformError,
    },
    /// A platform handed out DMA memory that is not what was asked (too small,
    /// not contiguous).
    BadDmaMemory {
        /// What it was for.
        what: &'static str,
        /// Why it is unusable.
        why: &'static str,
    },
    /// DMA memory could not be written or read.
    Memory {
        /// What was being accessed.
        what: &'static str,
        /// The cause.
        source: SharedMemError,
    },
    /// A boot structure cannot be built from what the platform gave.
    Structure {
        /// Which structure.
        what: &'static str,
        /// Why.
        why: &'static str,
    },
    /// The message queue block could not be laid out.
    Queues(MsgqError),
    /// A PCI BAR the boot needs is missing.
    MissingBar {
        /// The BAR index.
        index: u32,
    },
    /// FSP's command queue did not drain (it is still busy with an earlier message).
    FspBusy {
        /// The wait.
        timed_out: TimedOut,
    },
    /// The EMEM port did not auto-increment as it must (`_kfspWriteToEmem_GH100`).
    FspEmem {
        /// Words written or read.
        words: u32,
        /// Words the port's offset advanced by.
        advanced: u32,
    },
    /// FSP did not answer the COT message.
    FspNoReply {
        /// The wait.
        timed_out: TimedOut,
    },
    /// FSP's reply queue pointers describe no valid packet.
    FspReplySize {
        /// `NV_PFSP_MSGQ_HEAD(0)`.
        head: u32,
        /// `NV_PFSP_MSGQ_TAIL(0)`.
        tail: u32,
    },
    /// FSP's reply is not a well-formed `NVDM_PAYLOAD_COMMAND_RESPONSE`.
    FspReplyMalformed(FspError),
    /// FSP answered some other command than COT.
    FspAnsweredOtherCommand {
        /// `commandNvdmType`.
        command_nvdm_type: u32,
    },
    /// FSP rejected the chain of trust (`errorCode`).
    FspRejected {
        /// `errorCode`.
        error_code: u32,
        /// Its `kern_fsp_retval.h` name.
        name: &'static str,
        /// The `NV_STATUS` OpenRM maps it to.
        status: &'static str,
    },
    /// The GSP's registers stayed locked to FSP (`NV_PGSP_FALCON_HWCFG2` 0 or 0xbadf41xx).
    TargetMaskLocked {
        /// The last `HWCFG2` value.
        hwcfg2: u32,
        /// The wait.
        timed_out: TimedOut,
    },
    /// GSP-FMC reported an error code in `NV_PGSP_FALCON_MAILBOX0`.
    FmcError {
        /// `MAILBOX0`.
        mailbox0: u32,
        /// `MAILBOX1`.
        mailbox1: u32,
    },
    /// The RISC-V boot ROM's privilege lockdown was never released.
    LockdownNotReleased {
        /// The last `HWCFG2` value.
        hwcfg2: u32,
        /// The last `MAILBOX0` value.
        mailbox0: u32,
        /// The wait.
        timed_out: TimedOut,
    },
    /// Lockdown was released but the RISC-V core is not running.
    RiscvNotRunning {
        /// `NV_PRISCV_RISCV_CPUCTL`.
        cpuctl: u32,
    },
    /// GSP-RM's reply or event did not come, or made no sense.
    Rpc(RpcError),
    /// `GSP_INIT_DONE` arrived with a failure status.
    InitFailed {
        /// The status.
        result: RpcResult,
    },
    /// A reply GSP-RM sent does not decode as what was asked.
    UnexpectedReply {
        /// What was asked.
        what: &'static str,
    },
    /// A reply's payload is malformed.
    MalformedReply {
        /// What was asked.
        what: &'static str,
        /// Why.
        source: EventError,
    },
    /// After `UNLOADING_GUEST_DRIVER` the RISC-V core did not halt.
    GspDidNotHalt {
        /// The last `NV_PRISCV_RISCV_CPUCTL`.
        cpuctl: u32,
        /// The wait.
        timed_out: TimedOut,
    },
}

impl BootErrorKind {
    /// The device stopped answering (a BAR0 read of `step` gave all ones).
    pub fn gone(step: &'static str) -> Self {
        BootErrorKind::Platform {
            step,
            source: PlatformError::DeviceGone,
        }
    }
}

/// A failed boot.
#[derive(Debug)]
pub struct BootError {
    /// The stage that failed.
    pub stage: Stage,
    /// What went wrong.
    pub kind: BootErrorKind,
    /// What GSP-RM said, read when the error happened (empty before GSP-RM's memory
    /// exists).
    pub diagnostics: GspDiagnostics,
}

impl BootError {
    /// Whether the boot failed because the device vanished.
    pub fn is_device_gone(&self) -> bool {
        matches!(
            self.kind,
            BootErrorKind::Platform {
                source: PlatformError::DeviceGone,
                ..
            }
        )
    }

    /// The error's remedy line: what the user can do.
    pub fn remedy(&self) -> &'static str {
        use BootErrorKind::*;
        match &self.kind {
            Booter(e) => e.remedy(),
            NotAnNvidiaGpu { .. } => "pass the PCI address of an NVIDIA GPU (nvbare list)",
            ChipMismatch { .. } | Bar0Dead { .. } | ConfigSpaceNotBack { .. } => {
                "the GPU did not come back from its reset in a sane state: reset it again \
                 (secondary bus reset) or cold-reboot"
            }
            BarFirewall { .. } => {
                "the GPU's FSP never lowered the BAR firewall: reset the GPU (secondary bus \
                 reset) or cold-reboot"
            }
            SysmemFlush(_) => {
                "the platform's DMA addresses are wider than the GPU's flush registers: use \
                 an IOMMU (it hands out small IOVAs) or report this as a bug"
            }
            UnknownChip(_) => "use a Turing to Blackwell GPU, or NVIDIA's driver (--backend nvk)",
            BootPathNotImplemented { .. } => {
                "fetch the chip's booter firmware (nvbare firmware fetch --chip CHIP) and pass \
                 it with the boot's files, or use NVIDIA's driver (--backend nvk)"
            }
            Platform {
                source: PlatformError::DeviceGone,
                ..
            } => "check that the GPU is still bound to vfio-pci and its link is up (dmesg, lspci)",
            Platform { .. } | Dma { .. } | BadDmaMemory { .. } | Memory { .. } => {
                "fix the platform's problem above and try again"
            }
            Wpr2UpNoReset { .. } | Wpr2StillUp { .. } => {
                "a previous boot left secure state behind that only a reset clears: do a \
                 secondary bus reset (echo 1 > /sys/bus/pci/devices/BDF/reset) or a cold reboot"
            }
            FspNotReady { .. } | FspBusy { .. } | FspNoReply { .. } | FspEmem { .. } => {
                "the GPU's FSP is not responding: reset the GPU (secondary bus reset) or cold-reboot"
            }
            ImplausibleVram { .. } | LayoutDoesNotFit { .. } => {
                "the GPU reports a VRAM size that cannot be right: reset it and try again"
            }
            Firmware { .. } | FirmwareNotForChip { .. } => {
                "fetch the chip's firmware again: nvbare firmware fetch --chip CHIP"
            }
            Structure { .. } | Queues(_) | MissingBar { .. } => {
                "the platform hands out memory or BARs the boot cannot use: report this as a bug"
            }
            FspReplySize { .. } | FspReplyMalformed(_) | FspAnsweredOtherCommand { .. } => {
                "the FSP answered with a malformed message: reset the GPU and try again"
            }
            FspRejected { .. } | FmcError { .. } => {
                "FSP or GSP-FMC refused the firmware: check the firmware files are the chip's \
                 570.144 files (nvbare firmware fetch), and that the board is not in \
                 confidential-computing or debug mode"
            }
            TargetMaskLocked { .. } | LockdownNotReleased { .. } | RiscvNotRunning { .. } => {
                "GSP-FMC did not start GSP-RM: reset the GPU and try again; if it persists, \
                 the firmware is not the chip's"
            }
            Rpc(_) | InitFailed { .. } | UnexpectedReply { .. } | MalformedReply { .. } => {
                "GSP-RM failed (its logs are below): reset the GPU and try again"
            }
            GspDidNotHalt { .. } => {
                "GSP-RM did not shut down: the GPU was reset instead (the next boot \
                 recovers); if the reset failed, do a secondary bus reset"
            }
        }
    }
}

impl fmt::Display for BootErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use BootErrorKind::*;
        match self {
            UnknownChip(e) => e.fmt(f),
            Booter(e) => e.fmt(f),
            NotAnNvidiaGpu { vendor, device } => write!(
                f,
                "PCI vendor:device {vendor:04x}:{device:04x} is not an NVIDIA GPU (vendor 10de)"
            ),
            ChipMismatch {
                device_id,
                by_id,
                boot42,
            } => write!(
                f,
                "PCI device id {device_id:#06x} names a {by_id} ({:?}) but NV_PMC_BOOT_42 \
                 names a {boot42} ({:?})",
                by_id.arch(),
                boot42.arch()
            ),
            ConfigSpaceNotBack { timed_out } => write!(
                f,
                "config space did not answer with NVIDIA's vendor id after the reset: {timed_out}"
            ),
            BarFirewall { value, timed_out } => write!(
                f,
                "the BAR firewall stayed engaged (NV_EP_PCFG_GPU_VSEC_DEBUG_SEC_2 at config \
                 0x2b8 = {value:#x}, bit 24 set): {timed_out}"
            ),
            Bar0Dead { device_id } => write!(
                f,
                "config space answers (device {device_id:#06x}) but NV_PMC_BOOT_0 reads \
                 0xffffffff after the FSP booted: BAR0 is not reachable"
            ),
            SysmemFlush(e) => write!(f, "programming the sysmem flush buffer: {e}"),
            BootPathNotImplemented { chip } => write!(
                f,
                "{chip} ({:?}) boots GSP-RM through the SEC2 booter, which needs the booter \
                 firmware (booter_load/booter_unload) this boot was not given",
                chip.arch()
            ),
            Platform { step, source } => write!(f, "{step}: {source}"),
            Wpr2UpNoReset { wpr2_hi, source } => write!(
                f,
                "WPR2 is up (NV_PFB_PRI_MMU_WPR2_ADDR_HI = {wpr2_hi:#x}) and the GPU cannot \
                 be reset here: {source}"
            ),
            Wpr2StillUp { wpr2_lo, wpr2_hi } => write!(
                f,
                "WPR2 is still up after a reset (NV_PFB_PRI_MMU_WPR2_ADDR_LO/HI = \
                 {wpr2_lo:#x}/{wpr2_hi:#x}): the reset did not clear the secure state"
            ),
            FspNotReady {
                register,
                value,
                timed_out,
            } => write!(
                f,
                "the FSP never reported its boot complete (NV_THERM_I2CS_SCRATCH at \
                 {register:#x} = {value:#x}, want 0xff): {timed_out}"
            ),
            ImplausibleVram { mib } => write!(
                f,
                "NV_USABLE_FB_SIZE_IN_MB reads {mib} MiB, below the 1 GiB any supported GPU has"
            ),
            LayoutDoesNotFit { fb_size, needed } => write!(
                f,
                "GSP-RM needs {needed:#x} bytes at the top of FB, more than half of the \
                 {fb_size:#x} bytes of VRAM"
            ),
            Firmware { file, chip, source } => {
                write!(f, "{} for {chip}: {source}", file.file_name())
            }
            FirmwareNotForChip { file, chip } => write!(
                f,
                "{} is not {chip}'s 570.144 file (its SHA-256 is not the one NVIDIA ships for \
                 nvidia/{}/gsp): a file of another chip, or altered",
                file.file_name(),
                chip.firmware_dir()
            ),
            Dma { what, source } => write!(f, "DMA memory for {what}: {source}"),
            BadDmaMemory { what, why } => write!(f, "DMA memory for {what}: {why}"),
            Memory { what, source } => write!(f, "writing {what}: {source}"),
            Structure { what, why } => write!(f, "{what}: {why}"),
            Queues(e) => write!(f, "message queues: {e}"),
            MissingBar { index } => write!(f, "the platform reports no BAR{index}"),
            FspBusy { timed_out } => write!(
                f,
                "the FSP's command queue never drained (NV_PFSP_QUEUE_HEAD != TAIL): {timed_out}"
            ),
            FspEmem { words, advanced } => write!(
                f,
                "the FSP EMEM port advanced {advanced} words for {words} accessed: \
                 auto-increment did not work"
            ),
            FspNoReply { timed_out } => write!(
                f,
                "the FSP did not answer the chain-of-trust message (NV_PFSP_MSGQ_HEAD == \
                 TAIL): {timed_out}"
            ),
            FspReplySize { head, tail } => write!(
                f,
                "the FSP's reply queue pointers (head {head:#x}, tail {tail:#x}) describe no \
                 packet of 4 to 1024 bytes"
            ),
            FspReplyMalformed(e) => write!(f, "the FSP's reply is malformed: {e}"),
            FspAnsweredOtherCommand { command_nvdm_type } => write!(
                f,
                "the FSP answered NVDM command type {command_nvdm_type:#x}, not the chain of \
                 trust (0x14)"
            ),
            FspRejected {
                error_code,
                name,
                status,
            } => write!(
                f,
                "the FSP rejected the chain of trust: errorCode {error_code:#x} ({name}, \
                 {status})"
            ),
            TargetMaskLocked { hwcfg2, timed_out } => write!(
                f,
                "the GSP's registers stayed locked to the FSP (NV_PGSP_FALCON_HWCFG2 = \
                 {hwcfg2:#010x}): the boot ROM, GSP-FMC or its ACR failed: {timed_out}"
            ),
            FmcError { mailbox0, mailbox1 } => write!(
                f,
                "GSP-FMC reported error code {mailbox0:#x} in NV_PGSP_FALCON_MAILBOX0 \
                 (MAILBOX1 = {mailbox1:#x})"
            ),
            LockdownNotReleased {
                hwcfg2,
                mailbox0,
                timed_out,
            } => write!(
                f,
                "the RISC-V privilege lockdown was never released (NV_PGSP_FALCON_HWCFG2 = \
                 {hwcfg2:#010x}, MAILBOX0 = {mailbox0:#x}): {timed_out}"
            ),
            RiscvNotRunning { cpuctl } => write!(
                f,
                "lockdown was released but the GSP's RISC-V core is not running \
                 (NV_PRISCV_RISCV_CPUCTL = {cpuctl:#010x})"
            ),
            Rpc(e) => e.kind.fmt(f),
            InitFailed { result } => write!(f, "GSP_INIT_DONE reports {result}"),
            UnexpectedReply { what } => write!(f, "GSP-RM's reply to {what} is not of its type"),
            MalformedReply { what, source } => {
                write!(f, "GSP-RM's reply to {what} is malformed: {source}")
            }
            GspDidNotHalt { cpuctl, timed_out } => write!(
                f,
                "the GSP's RISC-V core did not halt after UNLOADING_GUEST_DRIVER \
                 (NV_PRISCV_RISCV_CPUCTL = {cpuctl:#010x}): {timed_out}"
            ),
        }
    }
}

impl fmt::Display for BootError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GSP boot failed at {}: {}; {}",
            self.stage,
            self.kind,
            self.remedy()
        )?;
        if !self.diagnostics.is_empty() {
            write!(f, "\n  {}", self.diagnostics)?;
        }
        Ok(())
    }
}

impl core::error::Error for BootError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match &self.kind {
            BootErrorKind::Platform { source, .. }
            | BootErrorKind::Wpr2UpNoReset { source, .. }
            | BootErrorKind::Dma { source, .. } => Some(source),
            BootErrorKind::Firmware { source, .. } => Some(source),
            BootErrorKind::UnknownChip(e) => Some(e),
            BootErrorKind::Rpc(e) => Some(e),
            _ => None,
        }
    }
}
