//! Boot arguments, WPR metadata, FMC boot params, FSP COT payload and the RISC-V
//! ucode descriptor (group `gsp_boot`).

use super::with_aliases;
use crate::layout::Struct;
use core::mem::offset_of;
use nvbare_gsp::abi::*;

pub(super) fn structs() -> Vec<Struct> {
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
        with_aliases(
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
            &[
                (
                    "gspFwHeapFreeListWprOffset",
                    offset_of!(GspFwWprMeta, sysmem_addr_of_signature),
                    4,
                ),
                (
                    "unused0",
                    offset_of!(GspFwWprMeta, sysmem_addr_of_signature) + 4,
                    4,
                ),
                ("unused1", offset_of!(GspFwWprMeta, size_of_signature), 8),
                (
                    "partitionRpcPadding",
                    offset_of!(GspFwWprMeta, partition_rpc_addr),
                    16,
                ),
                (
                    "sysmemAddrOfCrashReportQueue",
                    offset_of!(GspFwWprMeta, elf_data_offset),
                    8,
                ),
                (
                    "sizeOfCrashReportQueue",
                    offset_of!(GspFwWprMeta, elf_data_size),
                    4,
                ),
                (
                    "lsUcodeVersionPadding",
                    offset_of!(GspFwWprMeta, ls_ucode_version),
                    4,
                ),
            ],
        ),
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

/// `libosLogMetadata` (group `gsp_libos_log`).
pub(super) fn libos_log_structs() -> Vec<Struct> {
    vec![crate::layout!("libosLogMetadata" => LibosLogMetadata {
        "filename" => filename,
        "format" => format,
        "lineNumber" => line_number,
        "argumentCount" => argument_count,
        "printLevel" => print_level,
        "specialType" => special_type,
    })]
}
