//! Fault reports: what the SMs and the MMU recorded when a channel stopped,
//! read through the debugger object (`GT200_DEBUGGER`), as one message.

use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::debugger::{
    MAX_SMS_PER_CALL, ReadAllSmErrorStatesParams, ReadMmuFaultInfoParams,
};
use zerocopy::FromZeros;

use super::device::Device;

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
    // SM error states come at most MAX_SMS_PER_CALL at a time: read every SM.
    let sms = (dev.gr.sm_count as usize).max(1);
    let mut sm_lines = Vec::new();
    let mut sm_mmu_fault = None;
    for start in (0..sms).step_by(MAX_SMS_PER_CALL) {
        let mut sm = ReadAllSmErrorStatesParams::new_zeroed();
        sm.h_target_channel = channel;
        sm.starting_sm = start as u32;
        sm.num_sms_to_read = (sms - start).min(MAX_SMS_PER_CALL) as u32;
        dev.rm
            .control(
                dev.debugger,
                cmd::NV83DE_DEBUG_READ_ALL_SM_ERROR_STATES,
                &mut sm,
            )
            .ok()?;
        if start == 0 {
            sm_mmu_fault = Some((sm.mmu_fault.valid, sm.mmu_fault.fault_info));
        }
        for (i, e) in sm.read().iter().enumerate() {
            if e.hww_global_esr != 0 || e.hww_warp_esr != 0 {
                sm_lines.push(format!(
                    "SM {} error: global esr {:#x}, warp esr {:#x} at pc {:#x}, address {:#x}",
                    start + i,
                    e.hww_global_esr,
                    e.hww_warp_esr,
                    e.hww_warp_esr_pc64,
                    e.hww_esr_addr
                ));
            }
        }
    }
    let mut lines = Vec::new();
    let mut mmu = ReadMmuFaultInfoParams::default();
    if dev
        .rm
        .control(
            dev.debugger,
            cmd::NV83DE_DEBUG_READ_MMU_FAULT_INFO,
            &mut mmu,
        )
        .is_ok()
    {
        for e in mmu.faults() {
            lines.push(format!(
                "GPU MMU fault at {:#x}: {} on {}",
                e.fault_address,
                fault_type_name(e.fault_type),
                access_type_name(e.access_type)
            ));
        }
    }
    if let Some((valid, info)) = sm_mmu_fault
        && lines.is_empty()
        && valid != 0
    {
        lines.push(format!(
            "GPU MMU fault (fault info {info:#x}; no address recorded)"
        ));
    }
    lines.extend(sm_lines);
    (!lines.is_empty()).then(|| lines.join("; "))
}
