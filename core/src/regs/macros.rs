//! The `register!` macro: one typed value per BAR0 register.
//!
//! ```text
//! register! {
//!     /// Doc of the register.
//!     pub struct PmcBoot42 @ [0x0000_0a00] hwref("NV_PMC_BOOT_42") {
//!         /// Doc of the field.
//!         architecture / with_architecture: u8 = 29:24, hwref("ARCHITECTURE");
//!     }
//! }
//! ```
//!
//! Each register becomes a `Copy` newtype over `u32` with `from_raw`/`raw`, a getter and a
//! `with_*` setter per field (`hi:lo` as hwref writes it; the field type is `bool`, `u8`,
//! `u16` or `u32`, checked against the width at compile time), `read`/`write` through
//! [`Bar0`](crate::hal::Bar0), a `Debug` that prints every field, and `hwref(arch)`: what the
//! definition claims about NVIDIA's hwref headers, for `tests/regs_hwref.rs` to check.
//!
//! Address forms (inside `@ [...]`):
//! - `[0x0000_0a00]`: a fixed BAR0 address (`ADDRESS`; `read(bar)`).
//! - `[0x30b0 in VF_PRIV_WINDOW]`: a fixed address inside a window whose hwref defines are
//!   window-relative (`ADDRESS` = window + offset; hwref is checked against the offset).
//! - `[FalconBase + 0x100]`: relative to an engine base type implementing
//!   [`RegisterBase`](crate::regs::RegisterBase) (`OFFSET`; `read(bar, base)`).
//! - `[0x008f_2ac0; stride 8; count 8]`: an array (`read(bar, index)`, checked index).
//! - `[match arch { Arch::Hopper => 0x0002_00bc, ... }]`: the one place an address differs
//!   per architecture (`read(bar, arch)`; other architectures are an error, not a panic).
//!
//! The `hwref(...)` clause names the define, then optionally: `[n]` (the definition is element
//! `n` of an `NAME(i)` array), `at BASE` (the define is absolute, at `BASE` + offset),
//! `; absent [CHIPS]` (the published headers of those chips lack the define: the test checks
//! that they really do), `, only PATTERN` (the register exists only on matching `Arch`es).
//! A field's `hwref("SUFFIX"; absent [CHIPS]; narrower_in [CHIPS])` names
//! `<register define>_<SUFFIX>`; `narrower_in` lists chips whose header gives the field the
//! same low bit but fewer bits (the bits above are reserved there; the test checks that too).

/// Defines typed BAR0 registers; see the [module documentation](self).
macro_rules! register {
    (@one
        $(#[$meta:meta])*
        $vis:vis struct $name:ident @ [$($addr:tt)*]
        hwref($hw:literal $([$element:literal])? $(at $hwbase:path)?
              $(; absent [$($absent:ident),* $(,)?])? $(, only $only:pat)?)
        {
            $(
                $(#[$fmeta:meta])*
                $field:ident / $setter:ident : $fty:ty = $hi:literal : $lo:literal,
                    hwref($fhw:literal $(; absent [$($fabsent:ident),* $(,)?])?
                          $(; narrower_in [$($fnarrow:ident),* $(,)?])?);
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        #[repr(transparent)]
        $vis struct $name(u32);

        impl $name {
            #[doc = concat!("The hwref define this register mirrors: `", $hw, "`.")]
            pub const HWREF: &'static str = $hw;

            /// Wraps a raw register value.
            pub const fn from_raw(raw: u32) -> Self {
                Self(raw)
            }

            /// The raw register value.
            pub const fn raw(self) -> u32 {
                self.0
            }

            $(
                $(#[$fmeta])*
                #[doc = concat!("\n\nBits ", stringify!($hi), ":", stringify!($lo),
                    " (`", $hw, "_", $fhw, "`).")]
                #[inline]
                pub fn $field(self) -> $fty {
                    <$fty as $crate::regs::FieldValue>::from_bits(
                        const { $crate::regs::BitRange::word32($hi, $lo) }.decode(self.0),
                    )
                }

                #[doc = concat!("This value with `", stringify!($field), "` (bits ",
                    stringify!($hi), ":", stringify!($lo), ") set to `value`; bits of `value` ",
                    "above the field's width are dropped.")]
                #[inline]
                #[must_use]
                pub fn $setter(self, value: $fty) -> Self {
                    Self(const { $crate::regs::BitRange::word32($hi, $lo) }.set(
                        self.0,
                        <$fty as $crate::regs::FieldValue>::into_bits(value),
                    ))
                }
            )*

            /// What this definition claims about the hwref headers, for `arch`; `None` when the
            /// register does not exist on `arch`.
            pub fn hwref(arch: $crate::chip::Arch) -> Option<$crate::regs::HwrefRegister> {
                $( if !matches!(arch, $only) { return None; } )?
                let address = Self::hwref_address(arch)?;
                let at: Option<u32> =
                    None $( .or(Some($crate::regs::RegisterBase::base_address($hwbase))) )?;
                let element: Option<u32> = None $( .or(Some($element)) )?;
                Some($crate::regs::HwrefRegister {
                    name: $hw,
                    address: address.rebased(at, element),
                    fields: &[$(
                        $crate::regs::HwrefField {
                            name: $fhw,
                            hi: $hi,
                            lo: $lo,
                            absent_in: &[$($($crate::chip::Chip::$fabsent),*)?],
                            narrower_in: &[$($($crate::chip::Chip::$fnarrow),*)?],
                        },
                    )*],
                    absent_in: &[$($($crate::chip::Chip::$absent),*)?],
                })
            }
        }

        const _: () = {
            $(
                assert!(
                    $hi >= $lo && $hi < 32
                        && ($hi - $lo) < <$fty as $crate::regs::FieldValue>::BITS,
                    concat!(stringify!($name), ".", stringify!($field),
                        ": bad bit range or field type too narrow"),
                );
            )*
        };

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("raw", &$crate::regs::HexDebug(self.0))
                    $( .field(stringify!($field), &$crate::regs::FieldDebug(self.$field())) )*
                    .finish()
            }
        }

        $crate::regs::macros::register!(@addr $name, $hw, [$($addr)*]);
    };

    // An address that differs per architecture: the one `match` that chooses it.
    (@addr $name:ident, $hw:literal, [match arch { $($arch:pat => $address:literal),+ $(,)? }]) => {
        impl $name {
            /// The BAR0 address of this register on `arch`.
            pub fn address(arch: $crate::chip::Arch) -> Result<u32, $crate::regs::RegisterError> {
                #[allow(unreachable_patterns)]
                match arch {
                    $( $arch => Ok($address), )+
                    _ => Err($crate::regs::RegisterError::NotOnArch { register: $hw, arch }),
                }
            }

            /// Reads the register on a GPU of architecture `arch`.
            pub fn read(
                bar: &impl $crate::hal::Bar0,
                arch: $crate::chip::Arch,
            ) -> Result<Self, $crate::regs::RegisterError> {
                Ok(Self(bar.read32(Self::address(arch)?)))
            }

            /// Writes the register on a GPU of architecture `arch`.
            pub fn write(
                self,
                bar: &impl $crate::hal::Bar0,
                arch: $crate::chip::Arch,
            ) -> Result<(), $crate::regs::RegisterError> {
                bar.write32(Self::address(arch)?, self.0);
                Ok(())
            }

            fn hwref_address(arch: $crate::chip::Arch) -> Option<$crate::regs::HwrefAddress> {
                Self::address(arch).ok().map($crate::regs::HwrefAddress::Value)
            }
        }
    };

    // An array of registers: base + index * stride, index below count.
    (@addr $name:ident, $hw:literal,
        [$base:literal; stride $stride:literal; count $count:literal]) => {
        impl $name {
            /// BAR0 address of element 0.
            pub const BASE: u32 = $base;
            /// Bytes between consecutive elements.
            pub const STRIDE: u32 = $stride;
            /// Number of elements.
            pub const COUNT: usize = $count;

            /// The BAR0 address of element `index`.
            pub fn address(index: usize) -> Result<u32, $crate::regs::RegisterError> {
                if index < Self::COUNT {
                    // index < COUNT, a small literal: the product cannot overflow.
                    Ok(Self::BASE + Self::STRIDE * index as u32)
                } else {
                    Err($crate::regs::RegisterError::IndexOutOfRange {
                        register: $hw,
                        index,
                        count: Self::COUNT,
                    })
                }
            }

            /// Reads element `index`.
            pub fn read(
                bar: &impl $crate::hal::Bar0,
                index: usize,
            ) -> Result<Self, $crate::regs::RegisterError> {
                Ok(Self(bar.read32(Self::address(index)?)))
            }

            /// Writes element `index`.
            pub fn write(
                self,
                bar: &impl $crate::hal::Bar0,
                index: usize,
            ) -> Result<(), $crate::regs::RegisterError> {
                bar.write32(Self::address(index)?, self.0);
                Ok(())
            }

            fn hwref_address(_arch: $crate::chip::Arch) -> Option<$crate::regs::HwrefAddress> {
                Some($crate::regs::HwrefAddress::Indexed {
                    base: Self::BASE,
                    stride: Self::STRIDE,
                    count: Self::COUNT as u32,
                })
            }
        }
    };

    // Relative to an engine base (a falcon, a RISC-V core).
    (@addr $name:ident, $hw:literal, [$base:ident + $offset:literal]) => {
        impl $name {
            /// Offset from the engine base.
            pub const OFFSET: u32 = $offset;

            /// The BAR0 address of this register in the engine at `base`.
            pub fn address(base: $base) -> u32 {
                $crate::regs::RegisterBase::base_address(base).wrapping_add(Self::OFFSET)
            }

            /// Reads the register of the engine at `base`.
            pub fn read(bar: &impl $crate::hal::Bar0, base: $base) -> Self {
                Self(bar.read32(Self::address(base)))
            }

            /// Writes the register of the engine at `base`.
            pub fn write(self, bar: &impl $crate::hal::Bar0, base: $base) {
                bar.write32(Self::address(base), self.0)
            }

            fn hwref_address(_arch: $crate::chip::Arch) -> Option<$crate::regs::HwrefAddress> {
                Some($crate::regs::HwrefAddress::Value(Self::OFFSET))
            }
        }
    };

    // A fixed address inside a window whose hwref defines are window-relative.
    (@addr $name:ident, $hw:literal, [$offset:literal in $window:path]) => {
        impl $name {
            /// BAR0 address.
            pub const ADDRESS: u32 = $window + $offset;

            /// Reads the register.
            pub fn read(bar: &impl $crate::hal::Bar0) -> Self {
                Self(bar.read32(Self::ADDRESS))
            }

            /// Writes the register.
            pub fn write(self, bar: &impl $crate::hal::Bar0) {
                bar.write32(Self::ADDRESS, self.0)
            }

            fn hwref_address(_arch: $crate::chip::Arch) -> Option<$crate::regs::HwrefAddress> {
                Some($crate::regs::HwrefAddress::Value($offset))
            }
        }
    };

    // A fixed BAR0 address.
    (@addr $name:ident, $hw:literal, [$address:literal]) => {
        impl $name {
            /// BAR0 address.
            pub const ADDRESS: u32 = $address;

            /// Reads the register.
            pub fn read(bar: &impl $crate::hal::Bar0) -> Self {
                Self(bar.read32(Self::ADDRESS))
            }

            /// Writes the register.
            pub fn write(self, bar: &impl $crate::hal::Bar0) {
                bar.write32(Self::ADDRESS, self.0)
            }

            fn hwref_address(_arch: $crate::chip::Arch) -> Option<$crate::regs::HwrefAddress> {
                Some($crate::regs::HwrefAddress::Value(Self::ADDRESS))
            }
        }
    };

    // A module's list of registers; also generates its `hwref_entries`.
    (
        $(
            $(#[$meta:meta])*
            $vis:vis struct $name:ident @ [$($addr:tt)*] hwref($($hwref:tt)*) { $($fields:tt)* }
        )*
    ) => {
        $(
            $crate::regs::macros::register!(@one
                $(#[$meta])* $vis struct $name @ [$($addr)*] hwref($($hwref)*) { $($fields)* }
            );
        )*

        /// Appends what every register of this module claims about hwref, for `arch`.
        pub(crate) fn hwref_entries(
            arch: $crate::chip::Arch,
            out: &mut alloc::vec::Vec<$crate::regs::HwrefRegister>,
        ) {
            $( out.extend($name::hwref(arch)); )*
        }
    };
}

pub(crate) use register;
