//! The ABI layout harness: every Rust mirror of an NVIDIA C struct, listed with the C
//! type and header it mirrors, so a test can compile a C program against NVIDIA's own
//! headers and compare `sizeof`, `_Alignof`, `offsetof` and member sizes with the Rust
//! values byte for byte.
//!
//! Entries live in [`gsp`] (GSP-RM ABI), [`rm`] (RM API) and [`nvk`] (kernel-driver
//! ioctls); each exports `groups()`. The C side is generated and run by [`check`].

pub mod check;
pub mod gsp;
pub mod nvk;
pub mod rm;
#[cfg(test)]
mod tinygrad;

/// One member of a mirrored struct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The C member designator as `offsetof()` takes it, e.g. `"hClient"`,
    /// `"params.base"` or `"entries[3]"`.
    pub c: &'static str,
    /// Offset of the Rust field, in bytes.
    pub offset: usize,
    /// Size of the Rust field, in bytes.
    pub size: usize,
}

/// One mirrored struct: a C type and the Rust type that claims its layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Struct {
    /// A C type, e.g. `"NVOS21_PARAMETERS"` or `"struct nv_ioctl_card_info"`.
    pub c_type: &'static str,
    /// The Rust type's path as written in the entry.
    pub rust: &'static str,
    /// `size_of` of the Rust type.
    pub size: usize,
    /// `align_of` of the Rust type.
    pub align: usize,
    /// The fields to compare.
    pub fields: Vec<Field>,
}

/// Structs that compile against one set of headers.
#[derive(Clone, Debug)]
pub struct Group {
    /// A short name, used for the generated C file and in reports.
    pub name: &'static str,
    /// Include directories relative to the reference root, e.g.
    /// `"open-gpu-kernel-modules-570.144/src/common/sdk/nvidia/inc"`.
    pub include_dirs: Vec<&'static str>,
    /// C text before the `#include`s (typedefs/#defines the headers need).
    pub prelude: &'static str,
    /// `#include` targets.
    pub headers: Vec<&'static str>,
    /// The structs to check.
    pub structs: Vec<Struct>,
}

/// A header the trimmed reference tree lacks but a reference header includes; written
/// into a fallback include directory (searched after every real one) by [`check`].
#[derive(Clone, Debug)]
pub struct StubHeader {
    /// The path as the including header spells it, e.g. `"gpu/gpu.h"`.
    pub path: &'static str,
    /// Its C text.
    pub text: &'static str,
}

/// Every group of every ABI area.
pub fn all_groups() -> Vec<Group> {
    let mut groups = gsp::groups();
    groups.extend(rm::groups());
    groups.extend(nvk::groups());
    groups
}

/// Every stub header of every ABI area.
pub fn all_stub_headers() -> Vec<StubHeader> {
    let mut stubs = gsp::stub_headers();
    stubs.extend(nvk::stub_headers());
    stubs
}

/// The size of the value a function returns; used by [`layout!`](crate::layout!) with a never-called
/// closure that moves a field out of the struct by value, so it works for packed structs
/// too (no reference to a field is ever formed).
pub const fn size_of_return<T, F>(_field: fn(T) -> F) -> usize {
    core::mem::size_of::<F>()
}

/// Builds a [`Struct`] from a Rust type's layout.
///
/// ```text
/// layout!("rpc_gsp_rm_control_v03_00" => RpcGspRmControl {
///     "hClient" => h_client,
///     "params.base" => params.base,
/// })
/// ```
#[macro_export]
macro_rules! layout {
    ($c_type:literal => $rust:ty { $($c_field:literal => $($rust_field:ident).+),* $(,)? }) => {
        $crate::layout::Struct {
            c_type: $c_type,
            rust: stringify!($rust),
            size: ::core::mem::size_of::<$rust>(),
            align: ::core::mem::align_of::<$rust>(),
            fields: vec![$(
                $crate::layout::Field {
                    c: $c_field,
                    offset: ::core::mem::offset_of!($rust, $($rust_field).+),
                    size: $crate::layout::size_of_return(|s: $rust| s.$($rust_field).+),
                },
            )*],
        }
    };
}
