//! The packed registry table sent with `NV_VGPU_MSG_FUNCTION_SET_REGISTRY`.
//!
//! The C types are in OpenRM's generated `src/nvidia/generated/g_os_nvoc.h` (not in
//! the trimmed reference tree; the layout test declares them from that file). Despite the
//! name, the entries are not `#pragma pack`ed: `type` is followed by 3 padding bytes.
//! The table is `PACKED_REGISTRY_TABLE`, then `numEntries` entries, then the NUL-terminated
//! names that `nameOffset` points at (offsets from the start of the table).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `REGISTRY_TABLE_ENTRY_TYPE_UNKNOWN`, `g_os_nvoc.h`.
pub const REGISTRY_TABLE_ENTRY_TYPE_UNKNOWN: u8 = 0;
/// `REGISTRY_TABLE_ENTRY_TYPE_DWORD`: `data` is the value.
pub const REGISTRY_TABLE_ENTRY_TYPE_DWORD: u8 = 1;
/// `REGISTRY_TABLE_ENTRY_TYPE_BINARY`: `data` is an offset, `length` the byte count.
pub const REGISTRY_TABLE_ENTRY_TYPE_BINARY: u8 = 2;
/// `REGISTRY_TABLE_ENTRY_TYPE_STRING`: `data` is an offset, `length` the byte count.
pub const REGISTRY_TABLE_ENTRY_TYPE_STRING: u8 = 3;

/// Mirrors `PACKED_REGISTRY_ENTRY`, `g_os_nvoc.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct PackedRegistryEntry {
    /// `nameOffset`: offset of the key name from the start of the table.
    pub name_offset: u32,
    /// `type`: `REGISTRY_TABLE_ENTRY_TYPE_*`.
    pub entry_type: u8,
    /// Padding before `data`.
    pub _pad0: [u8; 3],
    /// `data`: the DWORD value, or an offset for BINARY/STRING.
    pub data: u32,
    /// `length`: 4 for DWORD, the byte count otherwise.
    pub length: u32,
}

/// Mirrors `PACKED_REGISTRY_TABLE`, `g_os_nvoc.h`, without its trailing `entries[]`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct PackedRegistryTable {
    /// `size`: bytes of the whole table including entries and strings.
    pub size: u32,
    /// `numEntries`.
    pub num_entries: u32,
}
