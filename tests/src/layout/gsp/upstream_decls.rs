//! nvfw firmware headers and `PACKED_REGISTRY_*`, declared in the prelude
//! (group `gsp_upstream_decls`).

use super::with_trailing;
use crate::layout::Struct;
use core::mem::size_of;
use nvbare_gsp::abi::*;
use nvbare_gsp::firmware::FalconBootloaderDesc;

pub(super) fn structs() -> Vec<Struct> {
    vec![
        crate::layout!("struct nvfw_bin_hdr" => NvfwBinHdr {
            "bin_magic" => bin_magic,
            "bin_ver" => bin_ver,
            "bin_size" => bin_size,
            "header_offset" => header_offset,
            "data_offset" => data_offset,
            "data_size" => data_size,
        }),
        crate::layout!("struct nvfw_hs_header_v2" => NvfwHsHeaderV2 {
            "sig_prod_offset" => sig_prod_offset,
            "sig_prod_size" => sig_prod_size,
            "patch_loc" => patch_loc,
            "patch_sig" => patch_sig,
            "meta_data_offset" => meta_data_offset,
            "meta_data_size" => meta_data_size,
            "num_sig" => num_sig,
            "header_offset" => header_offset,
            "header_size" => header_size,
        }),
        with_trailing(
            crate::layout!("struct nvfw_hs_load_header_v2" => NvfwHsLoadHeaderV2 {
                "os_code_offset" => os_code_offset,
                "os_code_size" => os_code_size,
                "os_data_offset" => os_data_offset,
                "os_data_size" => os_data_size,
                "num_apps" => num_apps,
            }),
            "app[0]",
            size_of::<NvfwHsLoadHeaderV2>(),
            size_of::<NvfwHsLoadHeaderV2App>(),
        ),
        crate::layout!("__typeof__(((struct nvfw_hs_load_header_v2 *)0)->app[0])" => NvfwHsLoadHeaderV2App {
            "offset" => offset,
            "size" => size,
        }),
        // Mirrored by the firmware parser (`nvbare_gsp::firmware`), not by `abi`.
        crate::layout!("struct nvfw_bl_desc" => FalconBootloaderDesc {
            "start_tag" => start_tag,
            "dmem_load_off" => dmem_load_off,
            "code_off" => code_off,
            "code_size" => code_size,
            "data_off" => data_off,
            "data_size" => data_size,
        }),
        crate::layout!("PACKED_REGISTRY_ENTRY" => PackedRegistryEntry {
            "nameOffset" => name_offset,
            "type" => entry_type,
            "data" => data,
            "length" => length,
        }),
        with_trailing(
            crate::layout!("PACKED_REGISTRY_TABLE" => PackedRegistryTable {
                "size" => size,
                "numEntries" => num_entries,
            }),
            "entries[0]",
            size_of::<PackedRegistryTable>(),
            size_of::<PackedRegistryEntry>(),
        ),
    ]
}
