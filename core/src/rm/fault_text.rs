//! A [`FaultReport`] in words: every code named from the hwref tables of
//! [`crate::fault_names`] for the GPU's architecture, SMs that report the same error folded
//! into one line, and a PC inside the launched kernel shown as `kernel+offset` (the offset
//! `cuobjdump -sass` prints).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::fault::{FaultReport, SmError};
use crate::chip::Arch;
use crate::fault_names::{self, CodeName};

/// How many other SMs' numbers a folded line lists before it only counts them.
const LIST_OTHER_SMS: usize = 8;

/// The code a launched kernel runs: where a fault's PC is looked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelCode<'a> {
    /// The kernel's name.
    pub name: &'a str,
    /// GPU address of its first instruction.
    pub start: u64,
    /// Bytes of code.
    pub len: u64,
}

/// A [`FaultReport`] with its codes named ([`FaultReport::named`]); `Display` gives one line
/// (items separated by `; `), [`NamedFaults::lines`] one line per item.
#[derive(Clone, Copy, Debug)]
pub struct NamedFaults<'a> {
    report: &'a FaultReport,
    arch: Option<Arch>,
    kernel: Option<KernelCode<'a>>,
}

impl FaultReport {
    /// This report in words for a GPU of `arch` (`None`: the codes stay numbers).
    pub fn named(&self, arch: Option<Arch>) -> NamedFaults<'_> {
        NamedFaults {
            report: self,
            arch,
            kernel: None,
        }
    }
}

/// `NAME (meaning)`, or the value and that no header names it.
fn name_or_value(named: Option<&CodeName>, what: &str, value: u32) -> String {
    match named {
        Some(c) => format!("{c}"),
        None => format!("{what} {value:#x} (no name in the hwref headers)"),
    }
}

impl<'a> NamedFaults<'a> {
    /// Shows a PC inside `kernel`'s code as `name+offset`.
    pub fn in_kernel(self, kernel: KernelCode<'a>) -> Self {
        Self {
            kernel: Some(kernel),
            ..self
        }
    }

    fn pc(&self, pc: u64) -> String {
        match self.kernel {
            Some(k) if pc >= k.start && pc - k.start < k.len => {
                format!("pc {pc:#x} ({}+{:#x})", k.name, pc - k.start)
            }
            _ => format!("pc {pc:#x}"),
        }
    }

    fn mmu_lines(&self, out: &mut Vec<String>) {
        for m in &self.report.mmu {
            let (fault, access) = match self.arch {
                Some(arch) => (
                    fault_names::mmu_fault_type_name(arch, m.fault_type),
                    fault_names::mmu_access_type_name(arch, m.access_type),
                ),
                None => (None, None),
            };
            out.push(format!(
                "MMU fault at {:#x}: {} on {}",
                m.address,
                name_or_value(fault, "fault type", m.fault_type),
                name_or_value(access, "access type", m.access_type)
            ));
        }
        if let Some(info) = self.report.mmu_without_address
            && self.report.mmu.is_empty()
        {
            out.push(format!(
                "MMU fault seen by the SMs, no address recorded (fault info {info:#x})"
            ));
        }
    }

    /// What one SM reported: warp, PC, the warp error and the global bits by name.
    fn sm_text(&self, e: &SmError) -> String {
        let warp = fault_names::sm_warp_id(e.warp_esr);
        let mut s = format!("SM {}, warp {warp}, {}: ", e.sm, self.pc(e.pc));
        let error = e.warp_esr & fault_names::WARP_ESR_ERROR_MASK;
        match self.arch {
            Some(arch) if error != 0 => s.push_str(&name_or_value(
                fault_names::sm_warp_error_name(arch, e.warp_esr),
                "warp error",
                error,
            )),
            None if error != 0 => {
                let _ = write!(s, "warp error {error:#x}");
            }
            _ => s.push_str("no warp error"),
        }
        if e.global_esr != 0 {
            s.push_str("; global: ");
            let mut parts: Vec<String> = Vec::new();
            let mut unnamed = e.global_esr;
            if let Some(arch) = self.arch {
                parts.extend(
                    fault_names::sm_global_errors(arch, e.global_esr).map(|c| format!("{c}")),
                );
                unnamed = fault_names::sm_global_unnamed_bits(arch, e.global_esr);
            }
            if unnamed != 0 {
                parts.push(format!("bits {unnamed:#x} (no name in the hwref headers)"));
            }
            s.push_str(&parts.join(", "));
        }
        if e.address != 0 {
            let _ = write!(s, "; address {:#x}", e.address);
        }
        s
    }

    fn sm_lines(&self, out: &mut Vec<String>) {
        // SMs that report the same thing (the same error at the same PC and address; the warp
        // slot may differ) read as one line.
        let key = |e: &SmError| {
            (
                e.global_esr,
                e.warp_esr & fault_names::WARP_ESR_ERROR_MASK,
                e.pc,
                e.address,
            )
        };
        let mut done = alloc::vec![false; self.report.sm.len()];
        for (i, first) in self.report.sm.iter().enumerate() {
            if done[i] {
                continue;
            }
            let mut others = Vec::new();
            for (j, e) in self.report.sm.iter().enumerate().skip(i + 1) {
                if !done[j] && key(e) == key(first) {
                    done[j] = true;
                    others.push(e.sm);
                }
            }
            let mut line = self.sm_text(first);
            if !others.is_empty() {
                let listed: Vec<String> = others
                    .iter()
                    .take(LIST_OTHER_SMS)
                    .map(|sm| format!("{sm}"))
                    .collect();
                let more = others.len().saturating_sub(LIST_OTHER_SMS);
                let _ = write!(
                    line,
                    " (the same on {} other SM{}: {}{})",
                    others.len(),
                    if others.len() == 1 { "" } else { "s" },
                    listed.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                );
            }
            out.push(line);
        }
    }

    /// One line per item: MMU faults first (the usual cause of an SM's MMU error), then the
    /// SMs' errors, folded.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.mmu_lines(&mut out);
        self.sm_lines(&mut out);
        if out.is_empty() {
            out.push("no fault recorded".into());
        }
        out
    }
}

impl fmt::Display for NamedFaults<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.lines().join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rm::MmuFault;
    use alloc::string::ToString;

    fn sm(sm: u32, warp: u32, error: u32, global: u32, pc: u64) -> SmError {
        SmError {
            sm,
            global_esr: global,
            warp_esr: (warp << 16) | error,
            pc,
            address: 0,
        }
    }

    #[test]
    fn mmu_faults_read_with_type_and_access_by_name() {
        let mut r = FaultReport::default();
        r.mmu
            .push(MmuFault {
                address: 0x7f00_dead_0000,
                fault_type: 0x2,
                access_type: 0x1,
            })
            .unwrap();
        assert_eq!(
            r.named(Some(Arch::Hopper)).lines(),
            [
                "MMU fault at 0x7f00dead0000: PTE (no valid page table entry: address not \
              mapped) on VIRT_WRITE (virtual write)"
            ]
        );
        // Before Hopper no header names them: the numbers stay, and say so.
        assert_eq!(
            r.named(Some(Arch::Ampere)).to_string(),
            "MMU fault at 0x7f00dead0000: fault type 0x2 (no name in the hwref headers) on \
             access type 0x1 (no name in the hwref headers)"
        );
    }

    #[test]
    fn sm_errors_name_warp_pc_and_both_registers() {
        let mut r = FaultReport::default();
        r.sm.push(SmError {
            address: 0x1_0000,
            ..sm(3, 5, 0x0e, 0x4 | 0x8000_0000, 0x7fff_0000_0120)
        });
        let kernel = KernelCode {
            name: "oob_shared",
            start: 0x7fff_0000_0000,
            len: 0x200,
        };
        assert_eq!(
            r.named(Some(Arch::Hopper)).in_kernel(kernel).lines(),
            [
                "SM 3, warp 5, pc 0x7fff00000120 (oob_shared+0x120): OOR_ADDR (address out of \
              range (e.g. past shared or local memory)); global: MULTIPLE_WARP_ERRORS (more \
              than one warp hit an error), bits 0x80000000 (no name in the hwref headers); \
              address 0x10000"
            ]
        );
        // A PC outside the kernel stays an address; unknown warp errors stay numbers.
        let mut r = FaultReport::default();
        r.sm.push(sm(0, 0, 0x3f, 0x10, 0x1000));
        assert_eq!(
            r.named(Some(Arch::Hopper)).in_kernel(kernel).to_string(),
            "SM 0, warp 0, pc 0x1000: warp error 0x3f (no name in the hwref headers); global: \
             BPT_INT (breakpoint (trap instruction))"
        );
        let mut r = FaultReport::default();
        r.sm.push(sm(1, 2, 0, 0x10, 0x1000));
        assert_eq!(
            r.named(None).to_string(),
            "SM 1, warp 2, pc 0x1000: no warp error; global: bits 0x10 (no name in the hwref \
             headers)"
        );
    }

    #[test]
    fn sms_with_the_same_error_fold_into_one_line() {
        let mut r = FaultReport::default();
        for i in 0..12 {
            r.sm.push(sm(i, i % 4, 0x09, 0, 0x500));
        }
        r.sm.push(sm(20, 1, 0x0e, 0, 0x600));
        r.sm.push(sm(21, 0, 0x09, 0, 0x500));
        let lines = r.named(Some(Arch::Hopper)).lines();
        assert_eq!(
            lines,
            [
                "SM 0, warp 0, pc 0x500: ILLEGAL_INSTR_ENCODING (illegal instruction encoding) \
                 (the same on 12 other SMs: 1, 2, 3, 4, 5, 6, 7, 8 and 4 more)",
                "SM 20, warp 1, pc 0x600: OOR_ADDR (address out of range (e.g. past shared or \
                 local memory))",
            ]
        );
        let mut r = FaultReport::default();
        r.sm.push(sm(0, 0, 0x09, 0, 0x500));
        r.sm.push(sm(7, 0, 0x09, 0, 0x500));
        assert!(
            r.named(Some(Arch::Hopper))
                .to_string()
                .ends_with("(the same on 1 other SM: 7)")
        );
    }

    #[test]
    fn an_mmu_fault_without_address_and_an_empty_report_still_read() {
        let r = FaultReport {
            mmu_without_address: Some(0x1234),
            ..FaultReport::default()
        };
        assert_eq!(
            r.named(Some(Arch::Hopper)).to_string(),
            "MMU fault seen by the SMs, no address recorded (fault info 0x1234)"
        );
        assert_eq!(
            FaultReport::default().named(Some(Arch::Hopper)).lines(),
            ["no fault recorded"]
        );
    }
}
