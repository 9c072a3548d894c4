//! Why a booter-path step failed, one variant per check, each with its remedy.

use core::fmt;

use nvbare_gsp::firmware::FirmwareError;
use nvbare_gsp::vbios::VbiosError;
use nvbare_gsp::vbios::fwsec::FwsecError;

use super::sequencer::SequencerFailure;
use crate::falcon::FalconError;

/// Which booter ucode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BooterUcode {
    /// `booter_load-570.144.bin`: starts GSP-RM.
    Load,
    /// `booter_unload-570.144.bin`: takes WPR2 down.
    Unload,
}

impl BooterUcode {
    /// The file name.
    pub const fn file_name(self) -> &'static str {
        match self {
            BooterUcode::Load => "booter_load-570.144.bin",
            BooterUcode::Unload => "booter_unload-570.144.bin",
        }
    }
}

/// A booter-path failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BooterError {
    /// Devinit's FWSEC never reported GFW boot complete.
    GfwBootNotDone {
        /// The last GFW boot progress (0 while the scratch is still locked).
        progress: u8,
        /// How long we waited, in ns.
        waited_ns: u64,
    },
    /// The GSP falcon, where devinit runs the VBIOS's FWSEC, never halted
    /// (`gpuWaitForGfwBootComplete_TU102`: "GSP failed to halt with GFW_BOOT").
    DevinitFalconNotHalted {
        /// The GSP falcon's `NV_PFALCON_FALCON_CPUCTL`, last read.
        cpuctl: u32,
        /// The GFW boot progress then (0 while the scratch is still locked).
        progress: u8,
        /// How long we waited, in ns.
        waited_ns: u64,
    },
    /// The VBIOS read from the PROM window (or given) does not parse.
    Vbios(VbiosError),
    /// The VBIOS has no FWSEC ucode.
    NoFwsec,
    /// FWSEC could not be prepared.
    Fwsec(FwsecError),
    /// A falcon step failed.
    Falcon {
        /// The step.
        step: &'static str,
        /// Why.
        source: FalconError,
    },
    /// FWSEC-FRTS reported an error (`NV_VBIOS_FWSECLIC_FRTS_ERR_CODE`).
    FrtsFailed {
        /// The code.
        code: u16,
    },
    /// FWSEC-FRTS ran but WPR2 is not up.
    Wpr2NotUp,
    /// WPR2 came up elsewhere than the FRTS region the WPR metadata names.
    Wpr2Misplaced {
        /// `WPR2_ADDR_LO.VAL`.
        lo: u32,
        /// `frtsOffset >> 12`.
        expected: u32,
    },
    /// FWSEC-SB did not lower the GFW scratch's privilege mask, did not report GFW boot
    /// complete, or reported an error code.
    SbFailed {
        /// What was wrong.
        what: &'static str,
        /// The error code, where there is one.
        code: u16,
    },
    /// `gen_bootloader-570.144.bin` (Turing, GA100) is malformed.
    GenericBootloader(FirmwareError),
    /// A booter file is missing or malformed.
    BooterFile {
        /// Which.
        ucode: BooterUcode,
        /// Why.
        source: FirmwareError,
    },
    /// The booter has no signature for the chip's fuse version.
    BooterSignature {
        /// Which.
        ucode: BooterUcode,
        /// The fuse version.
        fuse_version: u32,
    },
    /// The booter halted with a non-zero `MAILBOX0`.
    BooterFailed {
        /// Which.
        ucode: BooterUcode,
        /// SEC2's `MAILBOX0`.
        mailbox0: u32,
    },
    /// WPR2 is still up after `booter_unload`.
    Wpr2StillUpAfterUnload,
    /// The GSP's RISC-V core is not running after `booter_load`.
    RiscvNotRunning,
    /// A sequencer program failed.
    Sequencer(SequencerFailure),
    /// The images and heap do not fit in VRAM.
    LayoutDoesNotFit {
        /// Usable VRAM.
        fb_size: u64,
    },
}

impl BooterError {
    /// What the user can do.
    pub fn remedy(&self) -> &'static str {
        match self {
            BooterError::Vbios(_) | BooterError::NoFwsec => {
                "the VBIOS read through BAR0's PROM window is unusable: check it with `nvbare \
                 vbios --device BDF`, or pass the board's ROM file"
            }
            BooterError::Fwsec(_) => "the VBIOS's FWSEC does not fit this chip: see above",
            BooterError::BooterFile { .. }
            | BooterError::BooterSignature { .. }
            | BooterError::GenericBootloader(_) => {
                "fetch the chip's firmware again: nvbare firmware fetch --chip CHIP"
            }
            BooterError::Wpr2StillUpAfterUnload => {
                "booter_unload left WPR2 up: the next boot resets the GPU (or do a secondary \
                 bus reset now)"
            }
            BooterError::GfwBootNotDone { .. } | BooterError::DevinitFalconNotHalted { .. } => {
                "the GPU's devinit did not finish: reset the GPU (secondary bus reset) or \
                 cold-reboot"
            }
            BooterError::LayoutDoesNotFit { .. } => {
                "the GPU reports a VRAM size that cannot be right: reset it and try again"
            }
            _ => "a secure ucode failed: reset the GPU (secondary bus reset) and try again",
        }
    }
}

impl fmt::Display for BooterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BooterError::GfwBootNotDone {
                progress,
                waited_ns,
            } => write!(
                f,
                "GFW boot never completed (progress {progress:#x} after {}): devinit did not \
                 finish",
                crate::hal::Nanos(*waited_ns)
            ),
            BooterError::DevinitFalconNotHalted {
                cpuctl,
                progress,
                waited_ns,
            } => {
                write!(
                    f,
                    "the GSP falcon never halted after devinit's FWSEC \
                     (NV_PFALCON_FALCON_CPUCTL = {cpuctl:#010x}, GFW boot progress \
                     {progress:#x}, after {}): ",
                    crate::hal::Nanos(*waited_ns)
                )?;
                if *cpuctl == u32::MAX {
                    f.write_str("BAR0 reads all ones: the GPU never came back from its reset")
                } else {
                    f.write_str("devinit did not finish")
                }
            }
            BooterError::Vbios(e) => write!(f, "VBIOS: {e}"),
            BooterError::NoFwsec => f.write_str("the VBIOS holds no FWSEC ucode"),
            BooterError::Fwsec(e) => write!(f, "FWSEC: {e}"),
            BooterError::Falcon { step, source } => write!(f, "{step}: {source}"),
            BooterError::FrtsFailed { code } => {
                write!(
                    f,
                    "FWSEC-FRTS failed with error code {code:#x} (VBIOS scratch 0x0E)"
                )
            }
            BooterError::Wpr2NotUp => {
                f.write_str("FWSEC-FRTS ran but WPR2 is not up (NV_PFB_PRI_MMU_WPR2_ADDR_HI = 0)")
            }
            BooterError::Wpr2Misplaced { lo, expected } => write!(
                f,
                "FWSEC-FRTS raised WPR2 at {lo:#x} (4 KiB units), not at the FRTS region \
                 {expected:#x} the WPR metadata names"
            ),
            BooterError::SbFailed { what, code } => {
                write!(f, "FWSEC-SB: {what} (error code {code:#x})")
            }
            BooterError::GenericBootloader(e) => write!(f, "gen_bootloader-570.144.bin: {e}"),
            BooterError::BooterFile { ucode, source } => {
                write!(f, "{}: {source}", ucode.file_name())
            }
            BooterError::BooterSignature {
                ucode,
                fuse_version,
            } => write!(
                f,
                "{} has no signature for SEC2 fuse version {fuse_version}",
                ucode.file_name()
            ),
            BooterError::BooterFailed { ucode, mailbox0 } => write!(
                f,
                "{} failed on SEC2 with MAILBOX0 = {mailbox0:#x}",
                ucode.file_name()
            ),
            BooterError::Wpr2StillUpAfterUnload => {
                f.write_str("WPR2 is still up after booter_unload")
            }
            BooterError::RiscvNotRunning => {
                f.write_str("the GSP's RISC-V core is not running after booter_load")
            }
            BooterError::Sequencer(e) => write!(f, "CPU sequencer: {e}"),
            BooterError::LayoutDoesNotFit { fb_size } => write!(
                f,
                "GSP-RM's images and heap do not fit in {fb_size:#x} bytes of VRAM"
            ),
        }
    }
}

impl core::error::Error for BooterError {}
