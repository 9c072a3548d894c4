//! Names for the fault codes a GPU reports, so a fault reads as words: the SM's warp and
//! global error status registers (`HWW_WARP_ESR`, `HWW_GLOBAL_ESR`) and the MMU's fault and
//! access types. Pure data, checked name by name and value by value against NVIDIA's headers
//! by `core/tests/fault_names_hwref.rs`.
//!
//! Sources, per architecture (the headers say nothing about what a code means beyond its
//! name; the `meaning` strings are ours):
//! - SM codes: OpenRM publishes no graphics (`PGRAPH`) hwref for any family, Hopper and
//!   Blackwell included (`swref/published/<family>/<chip>/` has neither
//!   `dev_graphics_nobundle.h` nor `dev_gr.h`). The nearest published ones are NVIDIA's
//!   nvgpu hw headers: `hw_gr_ga100.h` (Ampere GA100, the newest data-centre chip there)
//!   serves Ampere, Ada, Hopper and Blackwell; `hw_gr_tu104.h` serves Turing. The encodings
//!   agree wherever the two headers (and Volta's) share a name. The warp error is
//!   `gr_gpc0_tpc0_sm0_hww_warp_esr_error_v`: bits 15:0 of the warp ESR. Two global bits
//!   of GA100 (error in trap, poison data) are named only by its report-mask register,
//!   whose bits are the ESR's (TU104 names `error_in_trap` in both at the same bit).
//! - MMU codes: `NV_PFAULT_FAULT_TYPE_*` / `NV_PFAULT_ACCESS_TYPE_*` of Blackwell's
//!   `dev_fault.h` (gb100 and gb202 agree). Hopper's published `dev_fault.h` has no fault or
//!   access types; it uses gb100's, the nearest. Older architectures have none published
//!   and get `None`.

use crate::chip::Arch;
use core::fmt;

/// One code: its value, the header's name for it (the suffix after the register's prefix,
/// upper case), and what it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeName {
    pub value: u32,
    pub name: &'static str,
    pub meaning: &'static str,
}

impl fmt::Display for CodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.meaning)
    }
}

const fn code(value: u32, name: &'static str, meaning: &'static str) -> CodeName {
    CodeName {
        value,
        name,
        meaning,
    }
}

/// The warp ESR's error field: bits 15:0 (`..._hww_warp_esr_error_v`).
pub const WARP_ESR_ERROR_MASK: u32 = 0xffff;

/// The warp ESR's warp field: bits 23:16, the slot of the warp that hit the error on its SM
/// (`..._hww_warp_esr_wrap_id_m`, "wrap" sic, in `hw_gr_tu104.h`; `hw_gr_ga100.h` lists no
/// field above the error, so later architectures are read with Turing's layout).
pub const WARP_ESR_WARP_ID_SHIFT: u32 = 16;
/// The warp field's width mask (after the shift).
pub const WARP_ESR_WARP_ID_MASK: u32 = 0xff;

/// The warp slot a warp ESR value names (see [`WARP_ESR_WARP_ID_SHIFT`]).
pub const fn sm_warp_id(warp_esr: u32) -> u32 {
    (warp_esr >> WARP_ESR_WARP_ID_SHIFT) & WARP_ESR_WARP_ID_MASK
}

/// Warp ESR error values from `hw_gr_ga100.h` (`gr_gpc0_tpc0_sm0_hww_warp_esr_error_*`).
pub const SM_WARP_ERRORS_GA100: &[CodeName] = &[
    code(0x00, "NONE", "no error"),
    code(0x02, "API_STACK_ERROR", "call/return stack error"),
    code(0x05, "MISALIGNED_PC", "misaligned program counter"),
    code(0x06, "PC_OVERFLOW", "program counter ran past the code"),
    code(0x08, "MISALIGNED_REG", "misaligned register number"),
    code(
        0x09,
        "ILLEGAL_INSTR_ENCODING",
        "illegal instruction encoding",
    ),
    code(0x0b, "ILLEGAL_INSTR_PARAM", "illegal instruction parameter"),
    code(0x0d, "OOR_REG", "register number out of range"),
    code(
        0x0e,
        "OOR_ADDR",
        "address out of range (e.g. past shared or local memory)",
    ),
    code(0x0f, "MISALIGNED_ADDR", "misaligned memory address"),
    code(
        0x10,
        "INVALID_ADDR_SPACE",
        "address in no valid memory space",
    ),
    code(
        0x12,
        "INVALID_CONST_ADDR_LDC",
        "constant bank address out of range (LDC)",
    ),
    code(0x17, "MMU_FAULT", "memory access faulted in the MMU"),
    code(0x18, "TEX_FORMAT", "texture format mismatch"),
    code(0x19, "TEX_LAYOUT", "texture layout mismatch"),
    code(0x20, "MMU_NACK", "memory access refused by the MMU"),
    code(0x21, "ARRIVE", "barrier arrive error"),
];

/// Warp ESR error values from `hw_gr_tu104.h`.
pub const SM_WARP_ERRORS_TU104: &[CodeName] = &[
    code(0x00, "NONE", "no error"),
    code(0x01, "STACK_ERROR", "stack error"),
    code(0x02, "API_STACK_ERROR", "call/return stack error"),
    code(0x04, "PC_WRAP", "program counter wrapped"),
    code(0x05, "MISALIGNED_PC", "misaligned program counter"),
    code(0x06, "PC_OVERFLOW", "program counter ran past the code"),
    code(0x08, "MISALIGNED_REG", "misaligned register number"),
    code(
        0x09,
        "ILLEGAL_INSTR_ENCODING",
        "illegal instruction encoding",
    ),
    code(0x0b, "ILLEGAL_INSTR_PARAM", "illegal instruction parameter"),
    code(0x0d, "OOR_REG", "register number out of range"),
    code(
        0x0e,
        "OOR_ADDR",
        "address out of range (e.g. past shared or local memory)",
    ),
    code(0x0f, "MISALIGNED_ADDR", "misaligned memory address"),
    code(
        0x10,
        "INVALID_ADDR_SPACE",
        "address in no valid memory space",
    ),
    code(
        0x12,
        "INVALID_CONST_ADDR_LDC",
        "constant bank address out of range (LDC)",
    ),
    code(0x16, "STACK_OVERFLOW", "stack overflow"),
    code(0x17, "MMU_FAULT", "memory access faulted in the MMU"),
    code(0x18, "TEX_FORMAT", "texture format mismatch"),
    code(0x19, "TEX_LAYOUT", "texture layout mismatch"),
    code(0x20, "MMU_NACK", "memory access refused by the MMU"),
];

/// Global ESR bits from `hw_gr_ga100.h` (`..._hww_global_esr_*_pending_f`, and the report
/// mask for the last two); `value` is the bit's mask.
pub const SM_GLOBAL_ERRORS_GA100: &[CodeName] = &[
    code(
        0x0004,
        "MULTIPLE_WARP_ERRORS",
        "more than one warp hit an error",
    ),
    code(0x0010, "BPT_INT", "breakpoint (trap instruction)"),
    code(0x0020, "BPT_PAUSE", "breakpoint pause"),
    code(0x0040, "SINGLE_STEP_COMPLETE", "single step complete"),
    code(0x0100, "ERROR_IN_TRAP", "error inside the trap handler"),
    code(0x1000, "POISON_DATA", "poisoned data consumed"),
];

/// Global ESR bits from `hw_gr_tu104.h`.
pub const SM_GLOBAL_ERRORS_TU104: &[CodeName] = &[
    code(
        0x0004,
        "MULTIPLE_WARP_ERRORS",
        "more than one warp hit an error",
    ),
    code(0x0010, "BPT_INT", "breakpoint (trap instruction)"),
    code(0x0020, "BPT_PAUSE", "breakpoint pause"),
    code(0x0040, "SINGLE_STEP_COMPLETE", "single step complete"),
    code(0x0100, "ERROR_IN_TRAP", "error inside the trap handler"),
];

/// `NV_PFAULT_FAULT_TYPE_*` of Blackwell's `dev_fault.h`.
pub const MMU_FAULT_TYPES_GB100: &[CodeName] = &[
    code(0x0, "PDE", "no valid page directory entry"),
    code(0x1, "PDE_SIZE", "page directory entry of the wrong size"),
    code(0x2, "PTE", "no valid page table entry: address not mapped"),
    code(
        0x3,
        "VA_LIMIT_VIOLATION",
        "address beyond the address space",
    ),
    code(0x4, "UNBOUND_INST_BLOCK", "no instance block bound"),
    code(0x5, "PRIV_VIOLATION", "privileged page"),
    code(0x6, "RO_VIOLATION", "write to a read-only page"),
    code(0x7, "WO_VIOLATION", "read of a write-only page"),
    code(0x8, "PITCH_MASK_VIOLATION", "pitch mask violation"),
    code(0x9, "WORK_CREATION", "work creation fault"),
    code(0xa, "UNSUPPORTED_APERTURE", "aperture not supported here"),
    code(0xb, "CC_VIOLATION", "confidential-computing violation"),
    code(0xc, "UNSUPPORTED_KIND", "page kind not supported here"),
    code(0xd, "REGION_VIOLATION", "region violation"),
    code(0xe, "POISONED", "poisoned memory"),
    code(0xf, "ATOMIC_VIOLATION", "atomic not allowed on this page"),
];

/// `NV_PFAULT_ACCESS_TYPE_VIRT_*` / `_PHYS_*` of Blackwell's `dev_fault.h` (the 4-bit
/// encoding fault reports use; `VIRT_ATOMIC` is another name of `VIRT_ATOMIC_STRONG`).
pub const MMU_ACCESS_TYPES_GB100: &[CodeName] = &[
    code(0x0, "VIRT_READ", "virtual read"),
    code(0x1, "VIRT_WRITE", "virtual write"),
    code(0x2, "VIRT_ATOMIC_STRONG", "virtual atomic"),
    code(0x3, "VIRT_PREFETCH", "virtual prefetch"),
    code(0x4, "VIRT_ATOMIC_WEAK", "virtual atomic (weak)"),
    code(0x8, "PHYS_READ", "physical read"),
    code(0x9, "PHYS_WRITE", "physical write"),
    code(0xa, "PHYS_ATOMIC", "physical atomic"),
    code(0xb, "PHYS_PREFETCH", "physical prefetch"),
];

/// The warp error values of `arch`.
pub fn sm_warp_errors(arch: Arch) -> &'static [CodeName] {
    match arch {
        Arch::Turing => SM_WARP_ERRORS_TU104,
        Arch::Ampere | Arch::Ada | Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x => {
            SM_WARP_ERRORS_GA100
        }
    }
}

/// The global ESR bits of `arch`.
pub fn sm_global_error_bits(arch: Arch) -> &'static [CodeName] {
    match arch {
        Arch::Turing => SM_GLOBAL_ERRORS_TU104,
        Arch::Ampere | Arch::Ada | Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x => {
            SM_GLOBAL_ERRORS_GA100
        }
    }
}

/// The error a warp ESR value reports (its bits 15:0); `None` for a value no header names.
pub fn sm_warp_error_name(arch: Arch, warp_esr: u32) -> Option<&'static CodeName> {
    let error = warp_esr & WARP_ESR_ERROR_MASK;
    sm_warp_errors(arch).iter().find(|c| c.value == error)
}

/// The named bits set in a global ESR value, lowest first. Bits no header names are left
/// out; [`sm_global_unnamed_bits`] gives them.
pub fn sm_global_errors(arch: Arch, global_esr: u32) -> impl Iterator<Item = &'static CodeName> {
    sm_global_error_bits(arch)
        .iter()
        .filter(move |c| global_esr & c.value != 0)
}

/// The bits set in a global ESR value that no header names.
pub fn sm_global_unnamed_bits(arch: Arch, global_esr: u32) -> u32 {
    let named = sm_global_error_bits(arch)
        .iter()
        .fold(0, |mask, c| mask | c.value);
    global_esr & !named
}

/// The MMU fault types of `arch`; `None` where no header names them (before Hopper).
pub fn mmu_fault_types(arch: Arch) -> Option<&'static [CodeName]> {
    match arch {
        Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x => Some(MMU_FAULT_TYPES_GB100),
        Arch::Turing | Arch::Ampere | Arch::Ada => None,
    }
}

/// The MMU access types of `arch`; `None` where no header names them (before Hopper).
pub fn mmu_access_types(arch: Arch) -> Option<&'static [CodeName]> {
    match arch {
        Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x => Some(MMU_ACCESS_TYPES_GB100),
        Arch::Turing | Arch::Ampere | Arch::Ada => None,
    }
}

/// The name of MMU fault type `value` on `arch`.
pub fn mmu_fault_type_name(arch: Arch, value: u32) -> Option<&'static CodeName> {
    mmu_fault_types(arch)?.iter().find(|c| c.value == value)
}

/// The name of MMU access type `value` on `arch`.
pub fn mmu_access_type_name(arch: Arch, value: u32) -> Option<&'static CodeName> {
    mmu_access_types(arch)?.iter().find(|c| c.value == value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn warp_errors_are_read_from_the_low_16_bits() {
        // The register's other fields (above bit 15) do not change the error.
        let e = sm_warp_error_name(Arch::Hopper, 0x0300_000e).unwrap();
        assert_eq!(e.name, "OOR_ADDR");
        assert_eq!(
            alloc::format!("{e}"),
            "OOR_ADDR (address out of range (e.g. past shared or local memory))"
        );
        assert_eq!(
            sm_warp_error_name(Arch::BlackwellGb20x, 0x9).unwrap().name,
            "ILLEGAL_INSTR_ENCODING"
        );
        assert_eq!(
            sm_warp_error_name(Arch::Turing, 0x16).unwrap().name,
            "STACK_OVERFLOW"
        );
        assert!(sm_warp_error_name(Arch::Hopper, 0x16).is_none());
        assert!(sm_warp_error_name(Arch::Hopper, 0xffff).is_none());
    }

    #[test]
    fn global_bits_are_listed_in_order_and_the_rest_kept() {
        let esr = 0x0010 | 0x0004 | 0x8000_0000;
        let names: Vec<&str> = sm_global_errors(Arch::Hopper, esr)
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["MULTIPLE_WARP_ERRORS", "BPT_INT"]);
        assert_eq!(sm_global_unnamed_bits(Arch::Hopper, esr), 0x8000_0000);
        assert_eq!(sm_global_errors(Arch::Hopper, 0).count(), 0);
    }

    #[test]
    fn mmu_codes_exist_from_hopper_on() {
        assert_eq!(mmu_fault_type_name(Arch::Hopper, 0x2).unwrap().name, "PTE");
        assert_eq!(
            mmu_access_type_name(Arch::BlackwellGb10x, 0x9)
                .unwrap()
                .name,
            "PHYS_WRITE"
        );
        assert!(mmu_fault_type_name(Arch::Hopper, 0x10).is_none());
        assert!(mmu_fault_types(Arch::Ampere).is_none());
    }

    #[test]
    fn every_table_is_sorted_with_unique_values_and_names() {
        for arch in Arch::ALL {
            let mut tables = alloc::vec![sm_warp_errors(arch), sm_global_error_bits(arch)];
            tables.extend(mmu_fault_types(arch));
            tables.extend(mmu_access_types(arch));
            for table in tables {
                assert!(
                    table.windows(2).all(|w| w[0].value < w[1].value),
                    "{arch:?}"
                );
                for (i, c) in table.iter().enumerate() {
                    assert!(table[i + 1..].iter().all(|d| d.name != c.name), "{c:?}");
                }
            }
            assert!(
                sm_global_error_bits(arch)
                    .iter()
                    .all(|c| c.value.is_power_of_two())
            );
        }
    }
}
