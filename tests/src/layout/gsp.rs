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
//! same headers) covers 46 of these entries, including the stubbed `BUSINFO` and
//! `ACPI_METHOD_DATA` members and `PACKED_REGISTRY_*`; it caught a stub restated from a
//! later upstream revision (missing `acpiIdMuxStateTable`), so keep both checks.

use super::{Group, StubHeader};
use core::mem::size_of;
use nvbare_gsp::abi::*;
use nvbare_gsp::firmware::FalconBootloaderDesc;

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
            structs: rpc_msgq_structs(),
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
            structs: boot_structs(),
        },
        Group {
            name: "gsp_static_config",
            include_dirs: OPENRM_570_INCLUDE_DIRS.to_vec(),
            prelude: "#include \"nvtypes.h\"",
            headers: vec!["gpu/gsp/gsp_static_config.h"],
            structs: static_config_structs(),
        },
        Group {
            name: "gsp_upstream_decls",
            include_dirs: OPENRM_570_INCLUDE_DIRS.to_vec(),
            prelude: UPSTREAM_DECLS_PRELUDE,
            headers: vec![],
            structs: upstream_decl_structs(),
        },
    ]
}

/// Adds the first element of a C flexible array member (`name[0]`) to an entry: the
/// Rust types stop before such arrays, so this checks where the payload starts.
fn with_trailing(
    mut s: super::Struct,
    c_element: &'static str,
    offset: usize,
    element_size: usize,
) -> super::Struct {
    s.fields.push(super::Field {
        c: c_element,
        offset,
        size: element_size,
    });
    s
}

fn rpc_msgq_structs() -> Vec<super::Struct> {
    vec![
        crate::layout!("rpc_os_error_log_v17_00" => RpcOsErrorLog {
            "exceptType" => except_type,
            "runlistId" => runlist_id,
            "chid" => chid,
            "errString" => err_string,
            "preemptiveRemovalPreviousXid" => preemptive_removal_previous_xid,
        }),
        with_trailing(
            crate::layout!("rpc_post_event_v17_00" => RpcPostEvent {
                "hClient" => h_client,
                "hEvent" => h_event,
                "notifyIndex" => notify_index,
                "data" => data,
                "info16" => info16,
                "status" => status,
                "eventDataSize" => event_data_size,
                "bNotifyList" => b_notify_list,
            }),
            "eventData[0]",
            RPC_POST_EVENT_DATA_OFFSET,
            1,
        ),
        with_trailing(
            crate::layout!("rpc_rc_triggered_v17_02" => RpcRcTriggered {
                "nv2080EngineType" => nv2080_engine_type,
                "chid" => chid,
                "gfid" => gfid,
                "exceptLevel" => except_level,
                "exceptType" => except_type,
                "scope" => scope,
                "partitionAttributionId" => partition_attribution_id,
                "mmuFaultAddrLo" => mmu_fault_addr_lo,
                "mmuFaultAddrHi" => mmu_fault_addr_hi,
                "mmuFaultType" => mmu_fault_type,
                "bCallbackNeeded" => b_callback_needed,
                "rcJournalBufferSize" => rc_journal_buffer_size,
            }),
            "rcJournalBuffer[0]",
            size_of::<RpcRcTriggered>(),
            1,
        ),
        crate::layout!("rpc_gsp_lockdown_notice_v17_00" => RpcGspLockdownNotice {
            "bLockdownEngaging" => b_lockdown_engaging,
        }),
        with_trailing(
            crate::layout!("rpc_ucode_libos_print_v1E_08" => RpcUcodeLibosPrint {
                "ucodeEngDesc" => ucode_eng_desc,
                "libosPrintBufSize" => libos_print_buf_size,
            }),
            "libosPrintBuf[0]",
            size_of::<RpcUcodeLibosPrint>(),
            1,
        ),
        crate::layout!("rpc_message_header_v03_00" => RpcMessageHeader {
            "header_version" => header_version,
            "signature" => signature,
            "length" => length,
            "function" => function,
            "rpc_result" => rpc_result,
            "rpc_result_private" => rpc_result_private,
            "sequence" => sequence,
            "u.spare" => spare,
        }),
        with_trailing(
            crate::layout!("rpc_gsp_rm_alloc_v03_00" => RpcGspRmAlloc {
                "hClient" => h_client,
                "hParent" => h_parent,
                "hObject" => h_object,
                "hClass" => h_class,
                "status" => status,
                "paramsSize" => params_size,
                "flags" => flags,
                "reserved" => reserved,
            }),
            "params[0]",
            size_of::<RpcGspRmAlloc>(),
            1,
        ),
        with_trailing(
            crate::layout!("rpc_gsp_rm_control_v03_00" => RpcGspRmControl {
                "hClient" => h_client,
                "hObject" => h_object,
                "cmd" => cmd,
                "status" => status,
                "paramsSize" => params_size,
                "flags" => flags,
            }),
            "params[0]",
            size_of::<RpcGspRmControl>(),
            1,
        ),
        with_trailing(
            crate::layout!("struct pte_desc" => PteDesc {}),
            "pte_pde[0]",
            size_of::<PteDesc>(),
            8,
        ),
        crate::layout!("rpc_alloc_memory_v13_01" => RpcAllocMemory {
            "hClient" => h_client,
            "hDevice" => h_device,
            "hMemory" => h_memory,
            "hClass" => h_class,
            "flags" => flags,
            "pteAdjust" => pte_adjust,
            "format" => format,
            "length" => length,
            "pageCount" => page_count,
            "pteDesc" => pte_desc,
        }),
        crate::layout!("NV0080_CTRL_DMA_SET_PAGE_DIRECTORY_PARAMS_v1E_05" => Nv0080CtrlDmaSetPageDirectoryParams {
            "physAddress" => phys_address,
            "numEntries" => num_entries,
            "flags" => flags,
            "hVASpace" => h_va_space,
            "chId" => ch_id,
            "subDeviceId" => sub_device_id,
            "pasid" => pasid,
        }),
        crate::layout!("rpc_set_page_directory_v1E_05" => RpcSetPageDirectory {
            "hClient" => h_client,
            "hDevice" => h_device,
            "pasid" => pasid,
            "params" => params,
        }),
        crate::layout!("rpc_unloading_guest_driver_v1F_07" => RpcUnloadingGuestDriver {
            "bInPMTransition" => b_in_pm_transition,
            "bGc6Entering" => b_gc6_entering,
            "newLevel" => new_level,
        }),
        with_trailing(
            crate::layout!("rpc_run_cpu_sequencer_v17_00" => RpcRunCpuSequencer {
                "bufferSizeDWord" => buffer_size_dword,
                "cmdIndex" => cmd_index,
                "regSaveArea" => reg_save_area,
            }),
            "commandBuffer[0]",
            size_of::<RpcRunCpuSequencer>(),
            4,
        ),
        crate::layout!("msgqTxHeader" => MsgqTxHeader {
            "version" => version,
            "size" => size,
            "msgSize" => msg_size,
            "msgCount" => msg_count,
            "writePtr" => write_ptr,
            "flags" => flags,
            "rxHdrOff" => rx_hdr_off,
            "entryOff" => entry_off,
        }),
        crate::layout!("msgqRxHeader" => MsgqRxHeader {
            "readPtr" => read_ptr,
        }),
        crate::layout!("GSP_MSG_QUEUE_ELEMENT" => GspMsgQueueElement {
            "authTagBuffer" => auth_tag_buffer,
            "aadBuffer" => aad_buffer,
            "checkSum" => check_sum,
            "seqNum" => seq_num,
            "elemCount" => elem_count,
            "rpc" => rpc,
        }),
        crate::layout!("GSP_SEQ_BUF_PAYLOAD_REG_WRITE" => GspSeqBufPayloadRegWrite {
            "addr" => addr,
            "val" => val,
        }),
        crate::layout!("GSP_SEQ_BUF_PAYLOAD_REG_MODIFY" => GspSeqBufPayloadRegModify {
            "addr" => addr,
            "mask" => mask,
            "val" => val,
        }),
        crate::layout!("GSP_SEQ_BUF_PAYLOAD_REG_POLL" => GspSeqBufPayloadRegPoll {
            "addr" => addr,
            "mask" => mask,
            "val" => val,
            "timeout" => timeout,
            "error" => error,
        }),
        crate::layout!("GSP_SEQ_BUF_PAYLOAD_DELAY_US" => GspSeqBufPayloadDelayUs {
            "val" => val,
        }),
        crate::layout!("GSP_SEQ_BUF_PAYLOAD_REG_STORE" => GspSeqBufPayloadRegStore {
            "addr" => addr,
            "index" => index,
        }),
    ]
}

fn boot_structs() -> Vec<super::Struct> {
    vec![
        crate::layout!("MESSAGE_QUEUE_INIT_ARGUMENTS" => MessageQueueInitArguments {
            "sharedMemPhysAddr" => shared_mem_phys_addr,
            "pageTableEntryCount" => page_table_entry_count,
            "cmdQueueOffset" => cmd_queue_offset,
            "statQueueOffset" => stat_queue_offset,
        }),
        crate::layout!("GSP_SR_INIT_ARGUMENTS" => GspSrInitArguments {
            "oldLevel" => old_level,
            "flags" => flags,
            "bInPMTransition" => b_in_pm_transition,
        }),
        crate::layout!("__typeof__(((GSP_ARGUMENTS_CACHED *)0)->profilerArgs)" => GspProfilerArgs {
            "pa" => pa,
            "size" => size,
        }),
        crate::layout!("GSP_ARGUMENTS_CACHED" => GspArgumentsCached {
            "messageQueueInitArguments" => message_queue_init_arguments,
            "srInitArguments" => sr_init_arguments,
            "gpuInstance" => gpu_instance,
            "bDmemStack" => b_dmem_stack,
            "profilerArgs" => profiler_args,
        }),
        crate::layout!("LibosMemoryRegionInitArgument" => LibosMemoryRegionInitArgument {
            "id8" => id8,
            "pa" => pa,
            "size" => size,
            "kind" => kind,
            "loc" => loc,
        }),
        crate::layout!("GspFwWprMeta" => GspFwWprMeta {
            "magic" => magic,
            "revision" => revision,
            "sysmemAddrOfRadix3Elf" => sysmem_addr_of_radix3_elf,
            "sizeOfRadix3Elf" => size_of_radix3_elf,
            "sysmemAddrOfBootloader" => sysmem_addr_of_bootloader,
            "sizeOfBootloader" => size_of_bootloader,
            "bootloaderCodeOffset" => bootloader_code_offset,
            "bootloaderDataOffset" => bootloader_data_offset,
            "bootloaderManifestOffset" => bootloader_manifest_offset,
            "sysmemAddrOfSignature" => sysmem_addr_of_signature,
            "sizeOfSignature" => size_of_signature,
            "gspFwRsvdStart" => gsp_fw_rsvd_start,
            "nonWprHeapOffset" => non_wpr_heap_offset,
            "nonWprHeapSize" => non_wpr_heap_size,
            "gspFwWprStart" => gsp_fw_wpr_start,
            "gspFwHeapOffset" => gsp_fw_heap_offset,
            "gspFwHeapSize" => gsp_fw_heap_size,
            "gspFwOffset" => gsp_fw_offset,
            "bootBinOffset" => boot_bin_offset,
            "frtsOffset" => frts_offset,
            "frtsSize" => frts_size,
            "gspFwWprEnd" => gsp_fw_wpr_end,
            "fbSize" => fb_size,
            "vgaWorkspaceOffset" => vga_workspace_offset,
            "vgaWorkspaceSize" => vga_workspace_size,
            "bootCount" => boot_count,
            "partitionRpcAddr" => partition_rpc_addr,
            "partitionRpcRequestOffset" => partition_rpc_request_offset,
            "partitionRpcReplyOffset" => partition_rpc_reply_offset,
            "elfCodeOffset" => elf_code_offset,
            "elfDataOffset" => elf_data_offset,
            "elfCodeSize" => elf_code_size,
            "elfDataSize" => elf_data_size,
            "lsUcodeVersion" => ls_ucode_version,
            "gspFwHeapVfPartitionCount" => gsp_fw_heap_vf_partition_count,
            "flags" => flags,
            "padding" => padding,
            "pmuReservedSize" => pmu_reserved_size,
            "verified" => verified,
        }),
        crate::layout!("GSP_FMC_INIT_PARAMS" => GspFmcInitParams {
            "regkeys" => regkeys,
        }),
        crate::layout!("GSP_ACR_BOOT_GSP_RM_PARAMS" => GspAcrBootGspRmParams {
            "target" => target,
            "gspRmDescSize" => gsp_rm_desc_size,
            "gspRmDescOffset" => gsp_rm_desc_offset,
            "wprCarveoutOffset" => wpr_carveout_offset,
            "wprCarveoutSize" => wpr_carveout_size,
            "bIsGspRmBoot" => b_is_gsp_rm_boot,
        }),
        crate::layout!("GSP_RM_PARAMS" => GspRmParams {
            "target" => target,
            "bootArgsOffset" => boot_args_offset,
        }),
        crate::layout!("GSP_SPDM_PARAMS" => GspSpdmParams {
            "target" => target,
            "payloadBufferOffset" => payload_buffer_offset,
            "payloadBufferSize" => payload_buffer_size,
        }),
        crate::layout!("GSP_FMC_BOOT_PARAMS" => GspFmcBootParams {
            "initParams" => init_params,
            "bootGspRmParams" => boot_gsp_rm_params,
            "gspRmParams" => gsp_rm_params,
            "gspSpdmParams" => gsp_spdm_params,
        }),
        crate::layout!("MCTP_HEADER" => MctpHeader {
            "constBlob" => const_blob,
            "msgType" => msg_type,
            "vendorId" => vendor_id,
        }),
        crate::layout!("NVDM_PAYLOAD_COT" => NvdmPayloadCot {
            "version" => version,
            "size" => size,
            "gspFmcSysmemOffset" => gsp_fmc_sysmem_offset,
            "frtsSysmemOffset" => frts_sysmem_offset,
            "frtsSysmemSize" => frts_sysmem_size,
            "frtsVidmemOffset" => frts_vidmem_offset,
            "frtsVidmemSize" => frts_vidmem_size,
            "hash384" => hash384,
            "publicKey" => public_key,
            "signature" => signature,
            "gspBootArgsSysmemOffset" => gsp_boot_args_sysmem_offset,
        }),
        crate::layout!("RM_RISCV_UCODE_DESC" => RmRiscvUcodeDesc {
            "version" => version,
            "bootloaderOffset" => bootloader_offset,
            "bootloaderSize" => bootloader_size,
            "bootloaderParamOffset" => bootloader_param_offset,
            "bootloaderParamSize" => bootloader_param_size,
            "riscvElfOffset" => riscv_elf_offset,
            "riscvElfSize" => riscv_elf_size,
            "appVersion" => app_version,
            "manifestOffset" => manifest_offset,
            "manifestSize" => manifest_size,
            "monitorDataOffset" => monitor_data_offset,
            "monitorDataSize" => monitor_data_size,
            "monitorCodeOffset" => monitor_code_offset,
            "monitorCodeSize" => monitor_code_size,
            "bIsMonitorEnabled" => b_is_monitor_enabled,
            "swbromCodeOffset" => swbrom_code_offset,
            "swbromCodeSize" => swbrom_code_size,
            "swbromDataOffset" => swbrom_data_offset,
            "swbromDataSize" => swbrom_data_size,
            "fbReservedSize" => fb_reserved_size,
            "bSignedAsCode" => b_signed_as_code,
        }),
    ]
}

fn static_config_structs() -> Vec<super::Struct> {
    vec![
        crate::layout!("NV2080_CTRL_GPU_GET_GID_INFO_PARAMS" => Nv2080CtrlGpuGetGidInfoParams {
            "index" => index,
            "flags" => flags,
            "length" => length,
            "data" => data,
        }),
        crate::layout!("NV2080_CTRL_CMD_FB_GET_FB_REGION_FB_REGION_INFO" => Nv2080CtrlFbRegionInfo {
            "base" => base,
            "limit" => limit,
            "reserved" => reserved,
            "performance" => performance,
            "supportCompressed" => support_compressed,
            "supportISO" => support_iso,
            "bProtected" => b_protected,
            "blackList" => black_list,
        }),
        crate::layout!("NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_PARAMS" => Nv2080CtrlFbGetFbRegionInfoParams {
            "numFBRegions" => num_fb_regions,
            "fbRegion" => fb_region,
        }),
        crate::layout!("NV2080_CTRL_BIOS_GET_SKU_INFO_PARAMS" => Nv2080CtrlBiosGetSkuInfoParams {
            "BoardID" => board_id,
            "chipSKU" => chip_sku,
            "chipSKUMod" => chip_sku_mod,
            "skuConfigVersion" => sku_config_version,
            "project" => project,
            "projectSKU" => project_sku,
            "CDP" => cdp,
            "projectSKUMod" => project_sku_mod,
            "businessCycle" => business_cycle,
        }),
        crate::layout!("NV0080_CTRL_GPU_GET_SRIOV_CAPS_PARAMS" => Nv0080CtrlGpuGetSriovCapsParams {
            "totalVFs" => total_vfs,
            "firstVfOffset" => first_vf_offset,
            "vfFeatureMask" => vf_feature_mask,
            "FirstVFBar0Address" => first_vf_bar0_address,
            "FirstVFBar1Address" => first_vf_bar1_address,
            "FirstVFBar2Address" => first_vf_bar2_address,
            "bar0Size" => bar0_size,
            "bar1Size" => bar1_size,
            "bar2Size" => bar2_size,
            "b64bitBar0" => b64bit_bar0,
            "b64bitBar1" => b64bit_bar1,
            "b64bitBar2" => b64bit_bar2,
            "bSriovEnabled" => b_sriov_enabled,
            "bSriovHeavyEnabled" => b_sriov_heavy_enabled,
            "bEmulateVFBar0TlbInvalidationRegister" => b_emulate_vf_bar0_tlb_invalidation_register,
            "bClientRmAllocatedCtxBuffer" => b_client_rm_allocated_ctx_buffer,
            "bNonPowerOf2ChannelCountSupported" => b_non_power_of2_channel_count_supported,
            "bVfResizableBAR1Supported" => b_vf_resizable_bar1_supported,
        }),
        crate::layout!("VIRTUAL_DISPLAY_GET_NUM_HEADS_PARAMS" => VirtualDisplayGetNumHeadsParams {
            "numHeads" => num_heads,
            "maxNumHeads" => max_num_heads,
        }),
        crate::layout!("VIRTUAL_DISPLAY_GET_MAX_RESOLUTION_PARAMS" => VirtualDisplayGetMaxResolutionParams {
            "headIndex" => head_index,
            "maxHResolution" => max_h_resolution,
            "maxVResolution" => max_v_resolution,
        }),
        crate::layout!("EcidManufacturingInfo" => EcidManufacturingInfo {
            "ecidLow" => ecid_low,
            "ecidHigh" => ecid_high,
            "ecidExtended" => ecid_extended,
        }),
        crate::layout!("FW_WPR_LAYOUT_OFFSET" => FwWprLayoutOffset {
            "nonWprHeapOffset" => non_wpr_heap_offset,
            "frtsOffset" => frts_offset,
        }),
        crate::layout!("GspStaticConfigInfo" => GspStaticConfigInfo {
            "grCapsBits" => gr_caps_bits,
            "gidInfo" => gid_info,
            "SKUInfo" => sku_info,
            "fbRegionInfoParams" => fb_region_info_params,
            "sriovCaps" => sriov_caps,
            "sriovMaxGfid" => sriov_max_gfid,
            "engineCaps" => engine_caps,
            "poisonFuseEnabled" => poison_fuse_enabled,
            "fb_length" => fb_length,
            "fbio_mask" => fbio_mask,
            "fb_bus_width" => fb_bus_width,
            "fb_ram_type" => fb_ram_type,
            "fbp_mask" => fbp_mask,
            "l2_cache_size" => l2_cache_size,
            "gpuNameString" => gpu_name_string,
            "gpuShortNameString" => gpu_short_name_string,
            "gpuNameString_Unicode" => gpu_name_string_unicode,
            "bGpuInternalSku" => b_gpu_internal_sku,
            "bIsQuadroGeneric" => b_is_quadro_generic,
            "bIsQuadroAd" => b_is_quadro_ad,
            "bIsNvidiaNvs" => b_is_nvidia_nvs,
            "bIsVgx" => b_is_vgx,
            "bGeforceSmb" => b_geforce_smb,
            "bIsTitan" => b_is_titan,
            "bIsTesla" => b_is_tesla,
            "bIsMobile" => b_is_mobile,
            "bIsGc6Rtd3Allowed" => b_is_gc6_rtd3_allowed,
            "bIsGc8Rtd3Allowed" => b_is_gc8_rtd3_allowed,
            "bIsGcOffRtd3Allowed" => b_is_gc_off_rtd3_allowed,
            "bIsGcoffLegacyAllowed" => b_is_gcoff_legacy_allowed,
            "bIsMigSupported" => b_is_mig_supported,
            "RTD3GC6TotalBoardPower" => rtd3_gc6_total_board_power,
            "RTD3GC6PerstDelay" => rtd3_gc6_perst_delay,
            "bar1PdeBase" => bar1_pde_base,
            "bar2PdeBase" => bar2_pde_base,
            "bVbiosValid" => b_vbios_valid,
            "vbiosSubVendor" => vbios_sub_vendor,
            "vbiosSubDevice" => vbios_sub_device,
            "bPageRetirementSupported" => b_page_retirement_supported,
            "bSplitVasBetweenServerClientRm" => b_split_vas_between_server_client_rm,
            "bClRootportNeedsNosnoopWAR" => b_cl_rootport_needs_nosnoop_war,
            "displaylessMaxHeads" => displayless_max_heads,
            "displaylessMaxResolution" => displayless_max_resolution,
            "displaylessMaxPixels" => displayless_max_pixels,
            "hInternalClient" => h_internal_client,
            "hInternalDevice" => h_internal_device,
            "hInternalSubdevice" => h_internal_subdevice,
            "bSelfHostedMode" => b_self_hosted_mode,
            "bAtsSupported" => b_ats_supported,
            "bIsGpuUefi" => b_is_gpu_uefi,
            "bIsEfiInit" => b_is_efi_init,
            "ecidInfo" => ecid_info,
            "fwWprLayoutOffset" => fw_wpr_layout_offset,
        }),
        crate::layout!("BUSINFO" => BusInfo {
            "deviceID" => device_id,
            "vendorID" => vendor_id,
            "subdeviceID" => subdevice_id,
            "subvendorID" => subvendor_id,
            "revisionID" => revision_id,
        }),
        crate::layout!("DOD_METHOD_DATA" => DodMethodData {
            "status" => status,
            "acpiIdListLen" => acpi_id_list_len,
            "acpiIdList" => acpi_id_list,
        }),
        crate::layout!("JT_METHOD_DATA" => JtMethodData {
            "status" => status,
            "jtCaps" => jt_caps,
            "jtRevId" => jt_rev_id,
            "bSBIOSCaps" => b_sbios_caps,
        }),
        crate::layout!("MUX_METHOD_DATA_ELEMENT" => MuxMethodDataElement {
            "acpiId" => acpi_id,
            "mode" => mode,
            "status" => status,
        }),
        crate::layout!("MUX_METHOD_DATA" => MuxMethodData {
            "tableLen" => table_len,
            "acpiIdMuxModeTable" => acpi_id_mux_mode_table,
            "acpiIdMuxPartTable" => acpi_id_mux_part_table,
            "acpiIdMuxStateTable" => acpi_id_mux_state_table,
        }),
        crate::layout!("CAPS_METHOD_DATA" => CapsMethodData {
            "status" => status,
            "optimusCaps" => optimus_caps,
        }),
        crate::layout!("ACPI_METHOD_DATA" => AcpiMethodData {
            "bValid" => b_valid,
            "dodMethodData" => dod_method_data,
            "jtMethodData" => jt_method_data,
            "muxMethodData" => mux_method_data,
            "capsMethodData" => caps_method_data,
        }),
        crate::layout!("GSP_VF_INFO" => GspVfInfo {
            "totalVFs" => total_vfs,
            "firstVFOffset" => first_vf_offset,
            "FirstVFBar0Address" => first_vf_bar0_address,
            "FirstVFBar1Address" => first_vf_bar1_address,
            "FirstVFBar2Address" => first_vf_bar2_address,
            "b64bitBar0" => b64bit_bar0,
            "b64bitBar1" => b64bit_bar1,
            "b64bitBar2" => b64bit_bar2,
        }),
        crate::layout!("GSP_PCIE_CONFIG_REG" => GspPcieConfigReg {
            "linkCap" => link_cap,
        }),
        crate::layout!("GspSystemInfo" => GspSystemInfo {
            "gpuPhysAddr" => gpu_phys_addr,
            "gpuPhysFbAddr" => gpu_phys_fb_addr,
            "gpuPhysInstAddr" => gpu_phys_inst_addr,
            "gpuPhysIoAddr" => gpu_phys_io_addr,
            "nvDomainBusDeviceFunc" => nv_domain_bus_device_func,
            "simAccessBufPhysAddr" => sim_access_buf_phys_addr,
            "notifyOpSharedSurfacePhysAddr" => notify_op_shared_surface_phys_addr,
            "pcieAtomicsOpMask" => pcie_atomics_op_mask,
            "consoleMemSize" => console_mem_size,
            "maxUserVa" => max_user_va,
            "pciConfigMirrorBase" => pci_config_mirror_base,
            "pciConfigMirrorSize" => pci_config_mirror_size,
            "PCIDeviceID" => pci_device_id,
            "PCISubDeviceID" => pci_sub_device_id,
            "PCIRevisionID" => pci_revision_id,
            "pcieAtomicsCplDeviceCapMask" => pcie_atomics_cpl_device_cap_mask,
            "oorArch" => oor_arch,
            "clPdbProperties" => cl_pdb_properties,
            "Chipset" => chipset,
            "bGpuBehindBridge" => b_gpu_behind_bridge,
            "bFlrSupported" => b_flr_supported,
            "b64bBar0Supported" => b64b_bar0_supported,
            "bMnocAvailable" => b_mnoc_available,
            "chipsetL1ssEnable" => chipset_l1ss_enable,
            "bUpstreamL0sUnsupported" => b_upstream_l0s_unsupported,
            "bUpstreamL1Unsupported" => b_upstream_l1_unsupported,
            "bUpstreamL1PorSupported" => b_upstream_l1_por_supported,
            "bUpstreamL1PorMobileOnly" => b_upstream_l1_por_mobile_only,
            "bSystemHasMux" => b_system_has_mux,
            "upstreamAddressValid" => upstream_address_valid,
            "FHBBusInfo" => fhb_bus_info,
            "chipsetIDInfo" => chipset_id_info,
            "acpiMethodData" => acpi_method_data,
            "hypervisorType" => hypervisor_type,
            "bIsPassthru" => b_is_passthru,
            "sysTimerOffsetNs" => sys_timer_offset_ns,
            "gspVFInfo" => gsp_vf_info,
            "bIsPrimary" => b_is_primary,
            "isGridBuild" => is_grid_build,
            "pcieConfigReg" => pcie_config_reg,
            "gridBuildCsp" => grid_build_csp,
            "bPreserveVideoMemoryAllocations" => b_preserve_video_memory_allocations,
            "bTdrEventSupported" => b_tdr_event_supported,
            "bFeatureStretchVblankCapable" => b_feature_stretch_vblank_capable,
            "bEnableDynamicGranularityPageArrays" => b_enable_dynamic_granularity_page_arrays,
            "bClockBoostSupported" => b_clock_boost_supported,
            "bRouteDispIntrsToCPU" => b_route_disp_intrs_to_cpu,
            "hostPageSize" => host_page_size,
        }),
    ]
}

fn upstream_decl_structs() -> Vec<super::Struct> {
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
