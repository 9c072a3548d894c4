//! Fault reports: what the SMs and the MMU recorded when a channel stopped,
//! read through the debugger object (`GT200_DEBUGGER`), as one message.

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use super::device::Device;

/// `NV83DE_SM_ERROR_STATE_REGISTERS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct SmErrorState {
    pub hww_global_esr: u32,
    pub hww_warp_esr: u32,
    pub hww_warp_esr_pc: u32,
    pub hww_global_esr_report_mask: u32,
    pub hww_warp_esr_report_mask: u32,
    pub _pad0: u32,
    pub hww_esr_addr: u64,
    pub hww_warp_esr_pc64: u64,
    pub hww_cga_esr: u32,
    pub hww_cga_esr_report_mask: u32,
}

/// `NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct ReadAllSmErrorStates {
    pub h_target_channel: u32,
    pub num_sms_to_read: u32,
    /// `NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL` = 100.
    pub sm_error_state_array: [SmErrorState; 100],
    pub mmu_fault_info: u32,
    /// `NV83DE_MMU_FAULT_INFO { NvBool valid; NvU32 faultInfo; }`.
    pub mmu_fault_valid: u8,
    pub _pad0: [u8; 3],
    pub mmu_fault_fault_info: u32,
    pub starting_sm: u32,
}
impl ReadAllSmErrorStates {
    /// `NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES`.
    pub const CMD: u32 = 0x83de_030c;
}

/// `NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_ENTRY`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct MmuFaultEntry {
    pub fault_address: u64,
    pub fault_type: u32,
    pub access_type: u32,
}

/// `NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct ReadMmuFaultInfo {
    pub list: [MmuFaultEntry; 4],
    pub count: u32,
    pub _pad0: u32,
}
impl ReadMmuFaultInfo {
    /// `NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO`.
    pub const CMD: u32 = 0x83de_0328;
}

/// `NV_PFAULT_FAULT_TYPE_*` (dev_fault.h) by value.
pub fn fault_type_name(t: u32) -> &'static str {
    match t {
        0x0 => "PDE (no page directory entry)",
        0x1 => "PDE_SIZE",
        0x2 => "PTE (address not mapped)",
        0x3 => "VA_LIMIT_VIOLATION",
        0x4 => "UNBOUND_INST_BLOCK",
        0x5 => "PRIV_VIOLATION",
        0x6 => "RO_VIOLATION (write to read-only)",
        0x7 => "WO_VIOLATION",
        0x8 => "PITCH_MASK_VIOLATION",
        0x9 => "WORK_CREATION",
        0xa => "UNSUPPORTED_APERTURE",
        0xb => "COMPRESSION_FAILURE",
        0xc => "UNSUPPORTED_KIND",
        0xd => "REGION_VIOLATION",
        0xe => "POISONED",
        0xf => "ATOMIC_VIOLATION",
        _ => "unknown fault type",
    }
}

/// `NV_PFAULT_ACCESS_TYPE_*` by value.
pub fn access_type_name(t: u32) -> &'static str {
    match t {
        0x0 => "virtual read",
        0x1 => "virtual write",
        0x2 => "virtual atomic",
        0x3 => "virtual prefetch",
        0x4 => "virtual atomic (weak)",
        0x8 => "physical read",
        0x9 => "physical write",
        0xa => "physical atomic",
        0xb => "physical prefetch",
        _ => "unknown access",
    }
}

/// Reads the debugger's view of the compute channel; `None` when nothing faulted
/// (or the debugger cannot tell).
pub fn report(dev: &Device) -> Option<String> {
    let channel = dev.compute.as_ref()?.handle;
    if dev.debugger == 0 {
        return None;
    }
    let mut sm = ReadAllSmErrorStates::new_zeroed();
    sm.h_target_channel = channel;
    sm.num_sms_to_read = 100;
    dev.rm
        .control(dev.debugger, ReadAllSmErrorStates::CMD, &mut sm)
        .ok()?;
    let mut lines = Vec::new();
    let mut mmu = ReadMmuFaultInfo::default();
    if dev
        .rm
        .control(dev.debugger, ReadMmuFaultInfo::CMD, &mut mmu)
        .is_ok()
    {
        for e in mmu.list.iter().take(mmu.count.min(4) as usize) {
            lines.push(format!(
                "GPU MMU fault at {:#x}: {} on {}",
                e.fault_address,
                fault_type_name(e.fault_type),
                access_type_name(e.access_type)
            ));
        }
    }
    if lines.is_empty() && sm.mmu_fault_valid != 0 {
        lines.push(format!(
            "GPU MMU fault (fault info {:#x}; no address recorded)",
            sm.mmu_fault_fault_info
        ));
    }
    for (i, e) in sm.sm_error_state_array.iter().enumerate() {
        if e.hww_global_esr != 0 || e.hww_warp_esr != 0 {
            lines.push(format!(
                "SM {} error: global esr {:#x}, warp esr {:#x} at pc {:#x}, address {:#x}",
                i + sm.starting_sm as usize,
                e.hww_global_esr,
                e.hww_warp_esr,
                e.hww_warp_esr_pc64,
                e.hww_esr_addr
            ));
        }
    }
    (!lines.is_empty()).then(|| lines.join("; "))
}
