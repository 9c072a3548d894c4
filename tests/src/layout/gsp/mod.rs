//! Layout entries for the GSP-RM 570.144 ABI (`nvbare_gsp::abi`).
//!
//! Four groups, by the headers they need:
//! - `gsp_rpc_msgq`: RPC structures (`g_rpc-structures.h`, `g_rpc-message-header.h`, included
//!   the way `message_queue_cpu.c` includes them), queue headers, CPU sequencer payloads;
//! - `gsp_boot`: init arguments, libos regions, WPR metadata, FMC boot params, FSP COT
//!   payload, RISC-V ucode descriptor;
//! - `gsp_static_config`: `GspSystemInfo`, `GspStaticConfigInfo` and their members, from
//!   `gsp_static_config.h` as NVIDIA wrote it;
//! - `gsp_upstream_decls`: types whose headers are not in OpenRM 570.144's public tree
//!   at all (the nvfw firmware headers live in Linux's nouveau, `PACKED_REGISTRY_*` in
//!   OpenRM's generated `g_os_nvoc.h`); their C declarations are restated in the prelude
//!   from those files, so the check proves our padding matches the C compiler's.
//!
//! [`stub_headers`] supplies the few headers the trimmed reference tree lacks but
//! `gsp_static_config.h` and `sdk-structures.h` include. Each restates only what the
//! checked structs use, from the named upstream 570.144 file; `NVGPU_ENGINE_CAPS_MASK_ARRAY_MAX`
//! is derived from the reference's own `NV2080_ENGINE_TYPE_LAST`.
//!
//! The `tinygrad` cross-check (layouts clang computed for tinygrad's bindings of the
//! same headers) covers 51 of these entries, including the stubbed `BUSINFO` and
//! `ACPI_METHOD_DATA` members and `PACKED_REGISTRY_*`; it caught a stub restated from a
//! later upstream revision (missing `acpiIdMuxStateTable`), so keep both checks.

mod boot;
mod rpc_msgq;
mod static_config;
mod upstream_decls;

use super::{Field, Group, Struct, StubHeader};

/// Include directories of OpenRM 570.144, relative to the reference root.
const OPENRM_570_INCLUDE_DIRS: [&str; 8] = [
    "open-gpu-kernel-modules-570.144/src/common/sdk/nvidia/inc",
    "open-gpu-kernel-modules-570.144/src/nvidia/inc/kernel",
    "open-gpu-kernel-modules-570.144/src/nvidia/inc",
    "open-gpu-kernel-modules-570.144/src/common/inc",
    "open-gpu-kernel-modules-570.144/src/nvidia/generated",
    "open-gpu-kernel-modules-570.144/src/nvidia/arch/nvalloc/common/inc",
    "open-gpu-kernel-modules-570.144/src/common/shared/msgq/inc",
    "open-gpu-kernel-modules-570.144/src/common/uproc/os/common/include",
];

/// How `src/nvidia/src/kernel/gpu/gsp/message_queue_cpu.c` includes the generated RPC
/// headers, plus the three names `message_queue_priv.h` uses for a struct we do not check.
const RPC_PRELUDE: &str = r#"
#include "nvtypes.h"
#include "vgpu/rpc_headers.h"
#define RPC_STRUCTURES
#define RPC_GENERIC_UNION
#include "g_rpc-structures.h"
#undef RPC_STRUCTURES
#undef RPC_GENERIC_UNION
#define RPC_MESSAGE_STRUCTURES
#define RPC_MESSAGE_GENERIC_UNION
#include "g_rpc-message-header.h"
#undef RPC_MESSAGE_STRUCTURES
#undef RPC_MESSAGE_GENERIC_UNION
typedef NvU64 RmPhysAddr;
typedef struct MEMORY_DESCRIPTOR MEMORY_DESCRIPTOR;
#define RPC_QUEUE_COUNT 2
"#;

/// Declarations of types outside OpenRM 570.144's public headers, restated from their
/// sources: Linux `drivers/gpu/drm/nouveau/include/nvfw/fw.h` (`nvfw_bin_hdr`,
/// `nvfw_bl_desc`) and `nvfw/hs.h` (MIT), and
/// OpenRM `src/nvidia/generated/g_os_nvoc.h` (`PACKED_REGISTRY_*`).
const UPSTREAM_DECLS_PRELUDE: &str = r#"
#include "nvtypes.h"
typedef NvU32 u32;
struct nvfw_bin_hdr { u32 bin_magic; u32 bin_ver; u32 bin_size; u32 header_offset; u32 data_offset; u32 data_size; };
struct nvfw_hs_header_v2 { u32 sig_prod_offset; u32 sig_prod_size; u32 patch_loc; u32 patch_sig; u32 meta_data_offset; u32 meta_data_size; u32 num_sig; u32 header_offset; u32 header_size; };
struct nvfw_hs_load_header_v2 { u32 os_code_offset; u32 os_code_size; u32 os_data_offset; u32 os_data_size; u32 num_apps; struct { u32 offset; u32 size; } app[]; };
struct nvfw_bl_desc { u32 start_tag; u32 dmem_load_off; u32 code_off; u32 code_size; u32 data_off; u32 data_size; };
typedef struct PACKED_REGISTRY_ENTRY { NvU32 nameOffset; NvU8 type; NvU32 data; NvU32 length; } PACKED_REGISTRY_ENTRY;
typedef struct PACKED_REGISTRY_TABLE { NvU32 size; NvU32 numEntries; PACKED_REGISTRY_ENTRY entries[]; } PACKED_REGISTRY_TABLE;
"#;

/// Every GSP ABI group.
pub fn groups() -> Vec<Group> {
    vec![
        Group {
            name: "gsp_rpc_msgq",
            include_dirs: OPENRM_570_INCLUDE_DIRS.to_vec(),
            prelude: RPC_PRELUDE,
            headers: vec![
                "gpu/gsp/message_queue_priv.h",
                "msgq/msgq_priv.h",
                "rmgspseq.h",
            ],
            structs: rpc_msgq::structs(),
        },
        Group {
            name: "gsp_boot",
            include_dirs: OPENRM_570_INCLUDE_DIRS.to_vec(),
            prelude: "#include \"nvtypes.h\"",
            headers: vec![
                "gpu/gsp/gsp_init_args.h",
                "libos_init_args.h",
                "gsp/gsp_fw_wpr_meta.h",
                "gsp/gspifpub.h",
                "rmRiscvUcode.h",
                "gpu/fsp/kern_fsp_cot_payload.h",
            ],
            structs: boot::structs(),
        },
        Group {
            // As RM's own log decoder sees the header: built with NVRM defined, so
            // `libos_printf_arg.h` skips the firmware-side `libos-config.h`.
            name: "gsp_libos_log",
            include_dirs: OPENRM_570_INCLUDE_DIRS.to_vec(),
            prelude: "#include \"nvtypes.h\"\n#define NVRM 1",
            headers: vec!["libos_log.h"],
            structs: boot::libos_log_structs(),
        },
        Group {
            name: "gsp_static_config",
            include_dirs: OPENRM_570_INCLUDE_DIRS.to_vec(),
            prelude: "#include \"nvtypes.h\"",
            headers: vec!["gpu/gsp/gsp_static_config.h"],
            structs: static_config::structs(),
        },
        Group {
            name: "gsp_upstream_decls",
            include_dirs: OPENRM_570_INCLUDE_DIRS.to_vec(),
            prelude: UPSTREAM_DECLS_PRELUDE,
            headers: vec![],
            structs: upstream_decls::structs(),
        },
    ]
}

/// Adds the first element of a C flexible array member (`name[0]`) to an entry: the
/// Rust types stop before such arrays, so this checks where the payload starts.
/// Adds C members that alias Rust fields (the other variants of a C union), each as
/// `(C member, Rust offset, size)`, so the union's layout is checked variant by variant.
fn with_aliases(mut s: Struct, aliases: &[(&'static str, usize, usize)]) -> Struct {
    for &(c, offset, size) in aliases {
        s.fields.push(Field { c, offset, size });
    }
    s
}

fn with_trailing(
    mut s: Struct,
    c_element: &'static str,
    offset: usize,
    element_size: usize,
) -> Struct {
    s.fields.push(Field {
        c: c_element,
        offset,
        size: element_size,
    });
    s
}

/// Headers missing from the trimmed 570.144 reference tree, restated from upstream
/// OpenRM 570.144 (only what the checked structs need).
pub fn stub_headers() -> Vec<StubHeader> {
    vec![
        StubHeader {
            // src/nvidia/inc/kernel/gpu/gpu.h -> generated/g_gpu_nvoc.h
            path: "gpu/gpu.h",
            text: "#define MAX_GROUP_COUNT 2\n",
        },
        StubHeader {
            // src/nvidia/inc/kernel/gpu/nvbitmask.h; RM_ENGINE_TYPE_LAST == NV2080_ENGINE_TYPE_LAST
            // (kernel_vgpu_mgr.c asserts NV2080_GPU_MAX_ENGINES == RM_ENGINE_TYPE_LAST).
            path: "gpu/nvbitmask.h",
            text: "#include \"class/cl2080_notification.h\"\n\
                   #define NVGPU_ENGINE_CAPS_MASK_BITS 32\n\
                   #define NVGPU_ENGINE_CAPS_MASK_ARRAY_MAX ((NV2080_ENGINE_TYPE_LAST - 1) / NVGPU_ENGINE_CAPS_MASK_BITS + 1)\n",
        },
        StubHeader {
            // src/nvidia/inc/kernel/platform/chipset/chipset.h -> generated/g_chipset_nvoc.h
            path: "platform/chipset/chipset.h",
            text: "typedef struct { NvU16 deviceID; NvU16 vendorID; NvU16 subdeviceID; NvU16 subvendorID; NvU8 revisionID; } BUSINFO;\n",
        },
        StubHeader {
            // src/nvidia/inc/kernel/gpu/gpu_acpi_data.h (the ACPI_METHOD_DATA part)
            path: "gpu/gpu_acpi_data.h",
            text: "#include \"ctrl/ctrl0073/ctrl0073system.h\"\n\
                   #include \"nvstatus.h\"\n\
                   typedef struct DOD_METHOD_DATA { NV_STATUS status; NvU32 acpiIdListLen; NvU32 acpiIdList[NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS]; } DOD_METHOD_DATA;\n\
                   typedef struct JT_METHOD_DATA { NV_STATUS status; NvU32 jtCaps; NvU16 jtRevId; NvBool bSBIOSCaps; } JT_METHOD_DATA;\n\
                   typedef struct MUX_METHOD_DATA_ELEMENT { NvU32 acpiId; NvU32 mode; NV_STATUS status; } MUX_METHOD_DATA_ELEMENT;\n\
                   typedef struct MUX_METHOD_DATA { NvU32 tableLen; MUX_METHOD_DATA_ELEMENT acpiIdMuxModeTable[NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS]; MUX_METHOD_DATA_ELEMENT acpiIdMuxPartTable[NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS]; MUX_METHOD_DATA_ELEMENT acpiIdMuxStateTable[NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS]; } MUX_METHOD_DATA;\n\
                   typedef struct CAPS_METHOD_DATA { NV_STATUS status; NvU32 optimusCaps; } CAPS_METHOD_DATA;\n\
                   typedef struct ACPI_METHOD_DATA { NvBool bValid; DOD_METHOD_DATA dodMethodData; JT_METHOD_DATA jtMethodData; MUX_METHOD_DATA muxMethodData; CAPS_METHOD_DATA capsMethodData; } ACPI_METHOD_DATA;\n",
        },
        StubHeader {
            // src/nvidia/inc/libraries/utils/nvprintf_level.h (the levels; libos_log.h's own
            // ct_asserts check them against its LOG_LEVEL_* copies).
            path: "utils/nvprintf_level.h",
            text: "#define LEVEL_SILENT 0x0\n#define LEVEL_INFO 0x1\n#define LEVEL_NOTICE 0x2\n\
                   #define LEVEL_WARNING 0x3\n#define LEVEL_ERROR 0x4\n#define LEVEL_HW_ERROR 0x5\n\
                   #define LEVEL_FATAL 0x6\n",
        },
        StubHeader {
            // src/common/inc/nvctassert.h: compile-time asserts, kept as real asserts.
            path: "nvctassert.h",
            text: "#define ct_assert(b) _Static_assert((b), #b)\n",
        },
        StubHeader {
            // src/libraries/resserv/inc/resserv/rs_client.h: nothing checked here uses it.
            path: "resserv/rs_client.h",
            text: "\n",
        },
    ]
}
