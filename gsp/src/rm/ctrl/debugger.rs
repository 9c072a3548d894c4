//! Controls on the debugger object `GT200_DEBUGGER` (`ctrl83de/ctrl83dedebug.h`): read SM
//! error state and MMU faults after a kernel faults. The same in 570.144 and 580.142.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::zeroed_default;
use crate::rm::nvos::NvHandle;

/// `NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL`.
pub const MAX_SMS_PER_CALL: usize = 100;
/// `NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_MAX_ENTRIES`.
pub const MMU_FAULT_INFO_MAX_ENTRIES: usize = 4;

/// `NV83DE_SM_ERROR_STATE_REGISTERS`: one SM's error status registers.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct SmErrorStateRegisters {
    /// `hwwGlobalEsr`.
    pub hww_global_esr: u32,
    /// `hwwWarpEsr`: the warp error (its low bits name the exception).
    pub hww_warp_esr: u32,
    /// `hwwWarpEsrPc`: low 32 bits of the faulting PC.
    pub hww_warp_esr_pc: u32,
    /// `hwwGlobalEsrReportMask`.
    pub hww_global_esr_report_mask: u32,
    /// `hwwWarpEsrReportMask`.
    pub hww_warp_esr_report_mask: u32,
    /// Padding before `hwwEsrAddr`.
    pub _pad0: u32,
    /// `hwwEsrAddr`: the faulting address.
    pub hww_esr_addr: u64,
    /// `hwwWarpEsrPc64`: the faulting PC.
    pub hww_warp_esr_pc64: u64,
    /// `hwwCgaEsr`.
    pub hww_cga_esr: u32,
    /// `hwwCgaEsrReportMask`.
    pub hww_cga_esr_report_mask: u32,
}

/// `NV83DE_MMU_FAULT_INFO`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MmuFaultInfo {
    /// `valid` (`NvBool`).
    pub valid: u8,
    /// Padding before `faultInfo`.
    pub _pad0: [u8; 3],
    /// `faultInfo`.
    pub fault_info: u32,
}

/// `NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct ReadAllSmErrorStatesParams {
    /// `hTargetChannel`: the channel whose SMs to read.
    pub h_target_channel: NvHandle,
    /// `numSMsToRead`: at most [`MAX_SMS_PER_CALL`].
    pub num_sms_to_read: u32,
    /// `smErrorStateArray`.
    pub sm_error_state_array: [SmErrorStateRegisters; MAX_SMS_PER_CALL],
    /// `mmuFaultInfo`: deprecated, see `mmu_fault`.
    pub mmu_fault_info: u32,
    /// `mmuFault`.
    pub mmu_fault: MmuFaultInfo,
    /// `startingSM`: first SM to read.
    pub starting_sm: u32,
}

impl ReadAllSmErrorStatesParams {
    /// The SM states returned for `num_sms_to_read`, clamped to the array.
    pub fn read(&self) -> &[SmErrorStateRegisters] {
        let n = (self.num_sms_to_read as usize).min(MAX_SMS_PER_CALL);
        &self.sm_error_state_array[..n]
    }
}

/// `NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_ENTRY`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MmuFaultInfoEntry {
    /// `faultAddress`.
    pub fault_address: u64,
    /// `faultType`: an `NV_PFAULT_FAULT_TYPE_*`.
    pub fault_type: u32,
    /// `accessType`: an `NV_PFAULT_ACCESS_TYPE_*`.
    pub access_type: u32,
}

/// `NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ReadMmuFaultInfoParams {
    /// `mmuFaultInfoList`.
    pub mmu_fault_info_list: [MmuFaultInfoEntry; MMU_FAULT_INFO_MAX_ENTRIES],
    /// `count`: entries valid.
    pub count: u32,
    /// Tail padding.
    pub _pad0: u32,
}

impl ReadMmuFaultInfoParams {
    /// The faults returned, `count` clamped to the array.
    pub fn faults(&self) -> &[MmuFaultInfoEntry] {
        let n = (self.count as usize).min(MMU_FAULT_INFO_MAX_ENTRIES);
        &self.mmu_fault_info_list[..n]
    }
}

zeroed_default!(ReadAllSmErrorStatesParams);
