//! BAR0 registers that boot and submission touch, one typed value per register.
//!
//! Each register is defined once with the `register!` macro (`regs/macros.rs`), named after and
//! checked against the hwref define it mirrors (`tests/regs_hwref.rs` parses NVIDIA's
//! published headers for TU102, GA100, GA102, AD102, GH100, GB100 and GB202 and compares
//! every address and every field position claimed here, via [`hwref_table`]).
//!
//! Modules: [`pmc`] (chip identification), [`falcon`] (falcon and RISC-V engine control),
//! [`falcon_hs`] (FBIF apertures and boot-ROM parameters for heavy-secure ucode),
//! [`fsp`] (FSP message queues, FSP boot status), [`fb`] (framebuffer: WPR2, size, sysmem
//! flush, BAR1 block), [`secure_boot`] (PROM window, ucode fuses, FWSEC scratch), [`vm`] (the virtual-function window: TLB invalidate, doorbell).

use alloc::vec::Vec;
use core::fmt;

use crate::chip::{Arch, Chip};

pub(crate) mod macros;

pub mod falcon;
pub mod falcon_hs;
pub mod fb;
pub mod fsp;
pub mod pmc;
pub mod secure_boot;
pub mod vm;

pub use falcon::{FalconBase, RiscvBase};
pub use falcon_hs::FbifBase;
pub use pmc::{PmcBoot0, PmcBoot42};

/// A Rust type that a register field reads as.
pub trait FieldValue: Copy + fmt::Debug {
    /// The widest field this type holds.
    const BITS: u32;
    /// Converts the field's bits (already shifted down and masked).
    fn from_bits(bits: u32) -> Self;
    /// The bits to store (masked to the field's width by the caller).
    fn into_bits(self) -> u32;
}

impl FieldValue for bool {
    const BITS: u32 = 1;
    fn from_bits(bits: u32) -> Self {
        bits != 0
    }
    fn into_bits(self) -> u32 {
        u32::from(self)
    }
}

macro_rules! unsigned_field_value {
    ($($ty:ty),*) => {$(
        impl FieldValue for $ty {
            const BITS: u32 = <$ty>::BITS;
            fn from_bits(bits: u32) -> Self {
                // `bits` is masked to the field width, which fits (checked at compile time).
                bits as $ty
            }
            fn into_bits(self) -> u32 {
                u32::from(self)
            }
        }
    )*};
}
unsigned_field_value!(u8, u16, u32);

/// The bit-range type register fields are read and written with (nvbare's one, shared with
/// RM words, QMD fields and page-table entries).
pub use nvbare_bits::BitRange;

/// An engine base address that engine-relative registers add their offset to.
pub trait RegisterBase: Copy {
    /// The BAR0 address of the engine's register block.
    fn base_address(self) -> u32;
}

/// A register access that cannot be made as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterError {
    /// An array register was indexed past its end.
    IndexOutOfRange {
        /// The hwref name of the register.
        register: &'static str,
        /// The index asked for.
        index: usize,
        /// The number of elements.
        count: usize,
    },
    /// The register does not exist (or has no known address) on this architecture.
    NotOnArch {
        /// The hwref name of the register.
        register: &'static str,
        /// The architecture asked for.
        arch: Arch,
    },
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::IndexOutOfRange {
                register,
                index,
                count,
            } => write!(
                f,
                "register {register}({index}) does not exist: it has {count} elements"
            ),
            RegisterError::NotOnArch { register, arch } => {
                write!(f, "register {register} does not exist on {arch:?} GPUs")
            }
        }
    }
}

impl core::error::Error for RegisterError {}

/// Where a definition says its hwref define points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwrefAddress {
    /// `#define NAME value`.
    Value(u32),
    /// `#define NAME(i) (base+(i)*stride)`, for `i` below `count`.
    Indexed {
        /// Value at `i = 0`.
        base: u32,
        /// Step per index.
        stride: u32,
        /// How many elements the definition allows.
        count: u32,
    },
    /// `#define NAME(i) ...` evaluated at `i = index` gives `value`.
    Element {
        /// The index the definition uses.
        index: u32,
        /// The value at that index.
        value: u32,
    },
}

impl HwrefAddress {
    /// The claim for a define that is absolute at `at` + this value (`at`), or that names
    /// element `element` of an array define.
    pub fn rebased(self, at: Option<u32>, element: Option<u32>) -> HwrefAddress {
        match (self, at, element) {
            (HwrefAddress::Value(value), Some(base), _) => {
                HwrefAddress::Value(base.wrapping_add(value))
            }
            (HwrefAddress::Value(value), None, Some(index)) => {
                HwrefAddress::Element { index, value }
            }
            (other, _, _) => other,
        }
    }
}

/// One field a definition claims: `#define <register>_<name> hi:lo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwrefField {
    /// The define's suffix after the register name.
    pub name: &'static str,
    /// Highest bit.
    pub hi: u32,
    /// Lowest bit.
    pub lo: u32,
    /// Chips whose published headers lack this field's define.
    pub absent_in: &'static [Chip],
    /// Chips whose headers define the field with the same `lo` but a lower `hi`.
    pub narrower_in: &'static [Chip],
}

/// One register a definition claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwrefRegister {
    /// The hwref define name.
    pub name: &'static str,
    /// What the define evaluates to.
    pub address: HwrefAddress,
    /// The fields claimed.
    pub fields: &'static [HwrefField],
    /// Chips whose published headers lack this define.
    pub absent_in: &'static [Chip],
}

/// An engine or window base a definition claims: `#define NAME value` or `NAME hi:lo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwrefBase {
    /// The hwref define name (a `NAME(i)` array form is evaluated at `i = 0`).
    pub name: &'static str,
    /// The value claimed (for a range define `hi:lo`, its low end).
    pub value: u32,
    /// Chips whose published headers lack this define.
    pub absent_in: &'static [Chip],
}

/// Every register claim for `arch`, for the hwref test (and for tools that dump registers).
pub fn hwref_table(arch: Arch) -> Vec<HwrefRegister> {
    let mut table = Vec::new();
    pmc::hwref_entries(arch, &mut table);
    falcon::hwref_entries(arch, &mut table);
    falcon_hs::hwref_entries(arch, &mut table);
    fsp::hwref_entries(arch, &mut table);
    fb::hwref_entries(arch, &mut table);
    secure_boot::hwref_entries(arch, &mut table);
    vm::hwref_entries(arch, &mut table);
    table
}

/// The engine and window bases the definitions use, with the hwref define each mirrors.
pub fn hwref_bases() -> &'static [HwrefBase] {
    use Chip::*;
    const BASES: &[HwrefBase] = &[
        HwrefBase {
            name: "NV_PGSP",
            value: FalconBase::GSP.0,
            absent_in: &[GA100, AD102, GB100, GB202],
        },
        HwrefBase {
            name: "NV_PSEC",
            value: FalconBase::SEC2.0,
            absent_in: &[AD102, GH100, GB100, GB202],
        },
        HwrefBase {
            name: "NV_PGSP_FBIF_BASE",
            value: FbifBase::GSP.0,
            absent_in: &[GA100, AD102, GH100, GB100, GB202],
        },
        HwrefBase {
            name: "NV_PSEC_FBIF_BASE",
            value: FbifBase::SEC2.0,
            absent_in: &[AD102, GH100, GB100, GB202],
        },
        HwrefBase {
            name: "NV_FALCON2_GSP_BASE",
            value: RiscvBase::GSP.0,
            absent_in: &[AD102, GH100, GB100, GB202],
        },
        HwrefBase {
            name: "NV_FALCON2_SEC_BASE",
            value: RiscvBase::SEC2.0,
            absent_in: &[TU102, GA100, AD102, GH100, GB100, GB202],
        },
        // FSP falcon base + NV_PFALCON_FALCON_COMMON_SCRATCH_GROUP_2(0) (0x320, tu102 header).
        HwrefBase {
            name: "NV_PFSP_FALCON_COMMON_SCRATCH_GROUP_2",
            value: FalconBase::FSP.0 + 0x320,
            absent_in: &[TU102, GA100, GA102, AD102],
        },
        HwrefBase {
            name: "NV_VIRTUAL_FUNCTION_FULL_PHYS_OFFSET",
            value: vm::VF_WINDOW,
            absent_in: &[GA100, GA102, AD102, GH100, GB202],
        },
        HwrefBase {
            name: "NV_VIRTUAL_FUNCTION",
            value: vm::USERMODE_OFFSET,
            absent_in: &[GA100, GA102, AD102, GB202],
        },
    ];
    BASES
}

/// Prints a `u32` as `0x0000abcd` in `Debug` output.
pub struct HexDebug(pub u32);

impl fmt::Debug for HexDebug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#010x}", self.0)
    }
}

/// Prints a field value in `Debug` output: booleans as words, numbers in hex.
pub struct FieldDebug<T: FieldValue>(pub T);

impl<T: FieldValue> fmt::Debug for FieldDebug<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if T::BITS == 1 {
            write!(f, "{:?}", self.0)
        } else {
            write!(f, "{:#x}", self.0.into_bits())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebased_claims() {
        let v = HwrefAddress::Value(0x3c0);
        assert_eq!(
            v.rebased(Some(0x11_0000), None),
            HwrefAddress::Value(0x11_03c0)
        );
        assert_eq!(
            v.rebased(None, Some(0)),
            HwrefAddress::Element {
                index: 0,
                value: 0x3c0
            }
        );
        assert_eq!(v.rebased(None, None), v);
    }

    #[test]
    fn every_arch_has_a_table() {
        for arch in Arch::ALL {
            let table = hwref_table(arch);
            assert!(table.len() > 20, "{arch:?}: {}", table.len());
        }
        // FSP registers exist only on FSP architectures.
        assert!(
            hwref_table(Arch::Ampere)
                .iter()
                .all(|r| !r.name.starts_with("NV_PFSP"))
        );
        assert!(
            hwref_table(Arch::Hopper)
                .iter()
                .any(|r| r.name == "NV_PFSP_EMEMC")
        );
    }
}
