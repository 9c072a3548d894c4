//! Fault reports: what the SMs and the MMU recorded when a channel stopped, as a typed value
//! both backends produce (read through the debugger object `GT200_DEBUGGER` over
//! [`RmApi`]; the VFIO path adds what the GSP status queue reports).

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
        ACCESS_TYPE_UNKNOWN => "an access of unreported type",
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

/// `NV_PFAULT_ACCESS_TYPE_*` value for an access whose type nobody reported (GSP-RM's
/// robust-channel event carries the address and fault type only).
pub const ACCESS_TYPE_UNKNOWN: u32 = 0xff;

/// The channel a robust-channel error stopped, as GSP-RM reports it (`RC_TRIGGERED`,
/// `OS_ERROR_LOG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelError {
    /// Channel id.
    pub chid: u32,
    /// Runlist, when reported.
    pub runlist: Option<u32>,
    /// `NV2080_ENGINE_TYPE_*` of the channel's engine, when reported.
    pub engine_type: Option<u32>,
    /// The Xid (`ROBUST_CHANNEL_*`, `nverror.h`): 31 MMU fault, 13 graphics exception...
    pub xid: u32,
}

/// What an Xid (`nverror.h`) means, for the ones a compute channel meets.
pub fn xid_name(xid: u32) -> &'static str {
    match xid {
        8 => "channel timeout (GPU stopped processing)",
        13 => "graphics engine exception",
        31 => "MMU fault",
        32 => "PBDMA error (invalid pushbuffer or method)",
        43 => "channel stopped (reset)",
        45 => "channel preempted and removed",
        68 => "video processor exception",
        69 => "graphics engine class error",
        _ => "robust-channel error",
    }
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
    /// The channel that was stopped, when the event source named it.
    pub channel: Option<ChannelError>,
}

impl FaultReport {
    /// Whether nothing faulted.
    pub fn is_empty(&self) -> bool {
        self.mmu.is_empty()
            && self.mmu_without_address.is_none()
            && self.sm.is_empty()
            && self.channel.is_none()
    }

    /// Adds an MMU fault; the same address and type seen twice (by the event source and the
    /// debugger) is one fault, with the access type whichever source knew it.
    pub fn add_mmu(&mut self, f: MmuFault) {
        match self
            .mmu
            .iter_mut()
            .find(|m| m.address == f.address && m.fault_type == f.fault_type)
        {
            Some(m) if m.access_type == ACCESS_TYPE_UNKNOWN => m.access_type = f.access_type,
            Some(_) => {}
            // At most the capacity: a fifth fault is dropped, as the debugger does.
            None => {
                let _ = self.mmu.push(f);
            }
        }
    }

    /// Adds what `other` saw.
    pub fn merge(&mut self, other: FaultReport) {
        for f in other.mmu {
            self.add_mmu(f);
        }
        self.mmu_without_address = self.mmu_without_address.or(other.mmu_without_address);
        self.sm.extend(other.sm);
        self.channel = self.channel.or(other.channel);
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
        if let Some(c) = &self.channel {
            sep(f)?;
            write!(f, "channel {}", c.chid)?;
            if let Some(r) = c.runlist {
                write!(f, " on runlist {r}")?;
            }
            if let Some(e) = c.engine_type {
                write!(f, " (engine type {e:#x})")?;
            }
            write!(f, " stopped: Xid {} ({})", c.xid, xid_name(c.xid))?;
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
            report.add_mmu(MmuFault {
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

    #[test]
    fn one_fault_seen_twice_is_one_fault_and_names_its_channel() {
        let mut events = FaultReport::default();
        events.add_mmu(MmuFault {
            address: 0xdead_0000,
            fault_type: 2,
            access_type: ACCESS_TYPE_UNKNOWN,
        });
        events.channel = Some(ChannelError {
            chid: 3,
            runlist: Some(0),
            engine_type: Some(1),
            xid: 31,
        });
        let mut debugger = FaultReport::default();
        debugger.add_mmu(MmuFault {
            address: 0xdead_0000,
            fault_type: 2,
            access_type: 1,
        });
        events.merge(debugger);
        assert_eq!(events.mmu.len(), 1);
        assert_eq!(events.mmu[0].access_type, 1, "the debugger knew the access");
        assert_eq!(
            format!("{events}"),
            "GPU MMU fault at 0xdead0000: PTE (address not mapped) on virtual write; \
             channel 3 on runlist 0 (engine type 0x1) stopped: Xid 31 (MMU fault)"
        );
    }
}
