//! Fault reports: what the SMs and the MMU recorded when a channel stopped, as a typed value
//! both backends produce (read through the debugger object `GT200_DEBUGGER` over
//! [`RmApi`](super::RmApi); the VFIO path adds what the GSP status queue reports).

use alloc::vec::Vec;
use core::fmt;

use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::debugger::{
    MAX_SMS_PER_CALL, MMU_FAULT_INFO_MAX_ENTRIES, ReadAllSmErrorStatesParams,
    ReadMmuFaultInfoParams,
};
use zerocopy::FromZeros;

use super::{Handle, RmApi};

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

/// One MMU fault: the address and what kind of access faulted how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmuFault {
    /// The faulting GPU virtual address.
    pub address: u64,
    /// `NV_PFAULT_FAULT_TYPE_*`.
    pub fault_type: u32,
    /// `NV_PFAULT_ACCESS_TYPE_*`.
    pub access_type: u32,
}

/// One SM's error state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmError {
    /// The SM's index.
    pub sm: u32,
    /// `hwwGlobalEsr`.
    pub global_esr: u32,
    /// `hwwWarpEsr`.
    pub warp_esr: u32,
    /// `hwwWarpEsrPc64`.
    pub pc: u64,
    /// `hwwEsrAddr`.
    pub address: u64,
}

/// What faulted when a channel stopped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultReport {
    /// MMU faults with an address (at most the debugger's 4 entries).
    pub mmu: heapless::Vec<MmuFault, MMU_FAULT_INFO_MAX_ENTRIES>,
    /// An MMU fault the SMs saw but no address was recorded for (the raw fault info word).
    pub mmu_without_address: Option<u32>,
    /// SMs with a non-zero error state.
    pub sm: Vec<SmError>,
}

impl FaultReport {
    /// Whether nothing faulted.
    pub fn is_empty(&self) -> bool {
        self.mmu.is_empty() && self.mmu_without_address.is_none() && self.sm.is_empty()
    }

    /// Adds what `other` saw.
    pub fn merge(&mut self, other: FaultReport) {
        for f in other.mmu {
            let _ = self.mmu.push(f);
        }
        self.mmu_without_address = self.mmu_without_address.or(other.mmu_without_address);
        self.sm.extend(other.sm);
    }
}

impl fmt::Display for FaultReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut sep = |f: &mut fmt::Formatter<'_>| {
            let s = if first { "" } else { "; " };
            first = false;
            f.write_str(s)
        };
        for m in &self.mmu {
            sep(f)?;
            write!(
                f,
                "GPU MMU fault at {:#x}: {} on {}",
                m.address,
                fault_type_name(m.fault_type),
                access_type_name(m.access_type)
            )?;
        }
        if let Some(info) = self.mmu_without_address
            && self.mmu.is_empty()
        {
            sep(f)?;
            write!(
                f,
                "GPU MMU fault (fault info {info:#x}; no address recorded)"
            )?;
        }
        for e in &self.sm {
            sep(f)?;
            write!(
                f,
                "SM {} error: global esr {:#x}, warp esr {:#x} at pc {:#x}, address {:#x}",
                e.sm, e.global_esr, e.warp_esr, e.pc, e.address
            )?;
        }
        if first {
            f.write_str("no fault recorded")?;
        }
        Ok(())
    }
}

/// Reads the debugger's view of `channel` on a GPU of `sm_count` SMs: every SM's error state
/// (at most 100 per call) and the MMU fault list. `None` when nothing faulted or the debugger
/// cannot tell (a failed read is no report: this runs on error paths).
pub fn read<R: RmApi>(
    rm: &mut R,
    debugger: Handle,
    channel: Handle,
    sm_count: u32,
) -> Option<FaultReport> {
    let mut report = FaultReport::default();
    // CAST: an SM count fits usize.
    let sms = (sm_count as usize).max(1);
    for start in (0..sms).step_by(MAX_SMS_PER_CALL) {
        let mut p = ReadAllSmErrorStatesParams::new_zeroed();
        p.h_target_channel = channel;
        // CAST: both below sm_count, a u32.
        p.starting_sm = start as u32;
        p.num_sms_to_read = (sms - start).min(MAX_SMS_PER_CALL) as u32;
        rm.control(debugger, cmd::NV83DE_DEBUG_READ_ALL_SM_ERROR_STATES, &mut p)
            .ok()?;
        if start == 0 && p.mmu_fault.valid != 0 {
            report.mmu_without_address = Some(p.mmu_fault.fault_info);
        }
        for (i, e) in p.read().iter().enumerate() {
            if e.hww_global_esr != 0 || e.hww_warp_esr != 0 {
                report.sm.push(SmError {
                    // CAST: below sm_count.
                    sm: (start + i) as u32,
                    global_esr: e.hww_global_esr,
                    warp_esr: e.hww_warp_esr,
                    pc: e.hww_warp_esr_pc64,
                    address: e.hww_esr_addr,
                });
            }
        }
    }
    let mut mmu = ReadMmuFaultInfoParams::default();
    if rm
        .control(debugger, cmd::NV83DE_DEBUG_READ_MMU_FAULT_INFO, &mut mmu)
        .is_ok()
    {
        for e in mmu.faults() {
            // PANIC-free: faults() returns at most MMU_FAULT_INFO_MAX_ENTRIES, the capacity.
            let _ = report.mmu.push(MmuFault {
                address: e.fault_address,
                fault_type: e.fault_type,
                access_type: e.access_type,
            });
        }
    }
    (!report.is_empty()).then_some(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn report_reads_as_one_line_naming_address_type_and_access() {
        let mut r = FaultReport::default();
        r.mmu
            .push(MmuFault {
                address: 0x7f00_dead_0000,
                fault_type: 2,
                access_type: 1,
            })
            .unwrap();
        r.mmu_without_address = Some(0x1234);
        r.sm.push(SmError {
            sm: 3,
            global_esr: 0x4,
            warp_esr: 0x10,
            pc: 0x100,
            address: 0x7f00_dead_0000,
        });
        assert_eq!(
            format!("{r}"),
            "GPU MMU fault at 0x7f00dead0000: PTE (address not mapped) on virtual write; \
             SM 3 error: global esr 0x4, warp esr 0x10 at pc 0x100, address 0x7f00dead0000"
        );
        r.mmu.clear();
        assert!(format!("{r}").starts_with("GPU MMU fault (fault info 0x1234"));
        assert_eq!(format!("{}", FaultReport::default()), "no fault recorded");
    }
}
