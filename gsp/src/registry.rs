//! The packed registry table of `SET_REGISTRY`: registry keys GSP-RM reads at boot.
//!
//! Layout (`PACKED_REGISTRY_TABLE`, built by `osPackageRegistry` for `rpcSetRegistry_v17_00`
//! in `rpc.c`): the 8-byte table header `{size, numEntries}`, then `numEntries` 16-byte
//! `PACKED_REGISTRY_ENTRY {nameOffset, type, data, length}`, then the NUL-terminated key
//! names, then the bytes of string/binary values. `nameOffset` and, for string/binary
//! values, `data` are offsets from the start of the table; a DWORD value sits in `data` with
//! `length` 4. The order of names after the entries matches tinygrad's
//! `rpc_set_registry_table` (checked by the golden fixtures).

use alloc::string::String;
use alloc::vec::Vec;

use crate::abi::{
    PackedRegistryEntry, PackedRegistryTable, REGISTRY_TABLE_ENTRY_TYPE_BINARY,
    REGISTRY_TABLE_ENTRY_TYPE_DWORD, REGISTRY_TABLE_ENTRY_TYPE_STRING,
};
use zerocopy::IntoBytes;

/// A registry value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryValue {
    /// `REGISTRY_TABLE_ENTRY_TYPE_DWORD`.
    Dword(u32),
    /// `REGISTRY_TABLE_ENTRY_TYPE_STRING` (stored with its NUL).
    String(String),
    /// `REGISTRY_TABLE_ENTRY_TYPE_BINARY`.
    Binary(Vec<u8>),
}

/// An ordered set of registry keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegistryTable {
    entries: Vec<(String, RegistryValue)>,
}

impl RegistryTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The keys tinygrad sends on every boot: `RMForcePcieConfigSave = 1`,
    /// `RMSecBusResetEnable = 1`.
    pub fn tinygrad_defaults() -> Self {
        let mut t = Self::new();
        t.set("RMForcePcieConfigSave", RegistryValue::Dword(1));
        t.set("RMSecBusResetEnable", RegistryValue::Dword(1));
        t
    }

    /// Adds or replaces a key (keeping its first position).
    pub fn set(&mut self, key: &str, value: RegistryValue) {
        if let Some(e) = self.entries.iter_mut().find(|(k, _)| k == key) {
            e.1 = value;
        } else {
            self.entries.push((String::from(key), value));
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The packed table bytes (the `SET_REGISTRY` payload).
    pub fn encode(&self) -> Vec<u8> {
        let hdr = core::mem::size_of::<PackedRegistryTable>();
        let ent = core::mem::size_of::<PackedRegistryEntry>();
        let names_start = hdr + ent * self.entries.len();
        let names_len: usize = self.entries.iter().map(|(k, _)| k.len() + 1).sum();
        let mut values_off = names_start + names_len;

        let mut entries = Vec::with_capacity(ent * self.entries.len());
        let mut names = Vec::with_capacity(names_len);
        let mut values = Vec::new();
        for (key, value) in &self.entries {
            let name_offset = (names_start + names.len()) as u32;
            names.extend_from_slice(key.as_bytes());
            names.push(0);
            let (entry_type, data, length) = match value {
                RegistryValue::Dword(v) => (REGISTRY_TABLE_ENTRY_TYPE_DWORD, *v, 4),
                RegistryValue::String(s) => {
                    let off = values_off as u32;
                    values.extend_from_slice(s.as_bytes());
                    values.push(0);
                    values_off += s.len() + 1;
                    (REGISTRY_TABLE_ENTRY_TYPE_STRING, off, s.len() as u32 + 1)
                }
                RegistryValue::Binary(b) => {
                    let off = values_off as u32;
                    values.extend_from_slice(b);
                    values_off += b.len();
                    (REGISTRY_TABLE_ENTRY_TYPE_BINARY, off, b.len() as u32)
                }
            };
            let e = PackedRegistryEntry {
                name_offset,
                entry_type,
                _pad0: [0; 3],
                data,
                length,
            };
            entries.extend_from_slice(e.as_bytes());
        }
        let size = (names_start + names.len() + values.len()) as u32;
        let table = PackedRegistryTable {
            size,
            num_entries: self.entries.len() as u32,
        };
        let mut out = Vec::with_capacity(size as usize);
        out.extend_from_slice(table.as_bytes());
        out.extend_from_slice(&entries);
        out.extend_from_slice(&names);
        out.extend_from_slice(&values);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_header_entries_names() {
        let b = RegistryTable::tinygrad_defaults().encode();
        // 8 + 2*16 + "RMForcePcieConfigSave\0" (22) + "RMSecBusResetEnable\0" (20)
        assert_eq!(b.len(), 82);
        assert_eq!(&b[0..8], &[82, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(&b[8..12], &40u32.to_le_bytes());
        assert_eq!(b[12], 1);
        assert_eq!(&b[24..28], &62u32.to_le_bytes());
        assert_eq!(&b[40..62], b"RMForcePcieConfigSave\0");
    }

    #[test]
    fn string_values_follow_names() {
        let mut t = RegistryTable::new();
        t.set("K", RegistryValue::String(String::from("v")));
        let b = t.encode();
        assert_eq!(&b[8..12], &24u32.to_le_bytes());
        assert_eq!(&b[16..24], &[26, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(&b[24..], b"K\0v\0");
    }
}
