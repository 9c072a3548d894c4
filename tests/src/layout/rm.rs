//! Layout entries for the RM API mirrors of `nvbare_gsp::rm`: one group per header
//! branch. Structs identical in 570.144 and 580.142 are checked against both; the pairs
//! that differ (`…V570` / `…V580`) each against their own branch only.

use super::{Group, Struct};
use crate::layout;
use nvbare_gsp::rm::alloc::*;
use nvbare_gsp::rm::ctrl::InfoEntry;
use nvbare_gsp::rm::ctrl::channel::*;
use nvbare_gsp::rm::ctrl::debugger::*;
use nvbare_gsp::rm::ctrl::fb::*;
use nvbare_gsp::rm::ctrl::gr::*;
use nvbare_gsp::rm::ctrl::root::*;
use nvbare_gsp::rm::ctrl::subdevice::*;
use nvbare_gsp::rm::nvos::*;

const HEADERS: &[&str] = &[
    "nvos.h",
    "class/cl0000.h",
    "class/cl0070.h",
    "class/cl0080.h",
    "class/cl2080.h",
    "class/cl83de.h",
    "class/clb0b5sw.h",
    "alloc/alloc_channel.h",
    "ctrl/ctrlxxxx.h",
    "ctrl/ctrl0000/ctrl0000system.h",
    "ctrl/ctrl0000/ctrl0000gpu.h",
    "ctrl/ctrl0080/ctrl0080gpu.h",
    "ctrl/ctrl0080/ctrl0080gr.h",
    "ctrl/ctrl2080/ctrl2080gr.h",
    "ctrl/ctrl2080/ctrl2080gpu.h",
    "ctrl/ctrl2080/ctrl2080fifo.h",
    "ctrl/ctrl2080/ctrl2080fb.h",
    "ctrl/ctrl2080/ctrl2080bus.h",
    "ctrl/ctrl2080/ctrl2080internal.h",
    "ctrl/ctrl83de/ctrl83dedebug.h",
    "ctrl/ctrl90f1.h",
    "ctrl/ctrla06c.h",
    "ctrl/ctrla06f/ctrla06fgpfifo.h",
    "ctrl/ctrlc36f.h",
];

/// The RM API groups: 570.144 (GSP-RM) and 580.142 (kernel driver).
pub fn groups() -> Vec<Group> {
    let mut r570 = same_in_both_branches();
    r570.extend(only_570());
    let mut r580 = same_in_both_branches();
    r580.extend(only_580());
    vec![
        Group {
            name: "rm-570.144",
            include_dirs: vec!["open-gpu-kernel-modules-570.144/src/common/sdk/nvidia/inc"],
            prelude: "",
            headers: HEADERS.to_vec(),
            structs: r570,
        },
        Group {
            name: "rm-580.142",
            include_dirs: vec!["open-gpu-kernel-modules-580.142/src/common/sdk/nvidia/inc"],
            prelude: "",
            headers: HEADERS.to_vec(),
            structs: r580,
        },
    ]
}

/// The `…V570` halves of the pairs that differ.
fn only_570() -> Vec<Struct> {
    vec![
        layout!("NVOS46_PARAMETERS" => MapMemoryDmaParamsV570 {
            "hClient" => h_client,
            "hDevice" => h_device,
            "hDma" => h_dma,
            "hMemory" => h_memory,
            "offset" => offset,
            "length" => length,
            "flags" => flags,
            "dmaOffset" => dma_offset,
            "status" => status,
        }),
        layout!("NV_VASPACE_ALLOCATION_PARAMETERS" => VaSpaceAllocParamsV570 {
            "index" => index,
            "flags" => flags,
            "vaSize" => va_size,
            "vaStartInternal" => va_start_internal,
            "vaLimitInternal" => va_limit_internal,
            "bigPageSize" => big_page_size,
            "vaBase" => va_base,
        }),
        layout!("NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS" => GpfifoScheduleParamsV570 {
            "bEnable" => b_enable,
            "bSkipSubmit" => b_skip_submit,
        }),
        layout!("NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS" => GpfifoScheduleParamsV570 {
            "bEnable" => b_enable,
            "bSkipSubmit" => b_skip_submit,
        }),
        layout!("NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS" => ClassListV2ParamsV570 {
            "numClasses" => num_classes,
            "classList" => class_list,
        }),
        layout!("NV2080_CTRL_FB_GET_INFO_V2_PARAMS" => FbGetInfoV2ParamsV570 {
            "fbInfoListSize" => fb_info_list_size,
            "fbInfoList" => fb_info_list,
        }),
    ]
}

/// The `…V580` halves of the pairs that differ.
fn only_580() -> Vec<Struct> {
    vec![
        layout!("NVOS46_PARAMETERS" => MapMemoryDmaParamsV580 {
            "hClient" => h_client,
            "hDevice" => h_device,
            "hDma" => h_dma,
            "hMemory" => h_memory,
            "offset" => offset,
            "length" => length,
            "flags" => flags,
            "flags2" => flags2,
            "kindOverride" => kind_override,
            "dmaOffset" => dma_offset,
            "status" => status,
        }),
        layout!("NV_VASPACE_ALLOCATION_PARAMETERS" => VaSpaceAllocParamsV580 {
            "index" => index,
            "flags" => flags,
            "vaSize" => va_size,
            "vaStartInternal" => va_start_internal,
            "vaLimitInternal" => va_limit_internal,
            "bigPageSize" => big_page_size,
            "vaBase" => va_base,
            "pasid" => pasid,
        }),
        layout!("NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS" => GpfifoScheduleParamsV580 {
            "bEnable" => b_enable,
            "bSkipSubmit" => b_skip_submit,
            "bSkipEnable" => b_skip_enable,
        }),
        layout!("NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS" => GpfifoScheduleParamsV580 {
            "bEnable" => b_enable,
            "bSkipSubmit" => b_skip_submit,
            "bSkipEnable" => b_skip_enable,
        }),
        layout!("NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS" => ClassListV2ParamsV580 {
            "numClasses" => num_classes,
            "classList" => class_list,
        }),
        layout!("NV2080_CTRL_FB_GET_INFO_V2_PARAMS" => FbGetInfoV2ParamsV580 {
            "fbInfoListSize" => fb_info_list_size,
            "fbInfoList" => fb_info_list,
        }),
    ]
}

/// Structs whose layout is the same in both branches.
fn same_in_both_branches() -> Vec<Struct> {
    let mut v = nvos_and_alloc();
    v.extend(controls());
    v
}

/// `nvos.h` entry points and the allocation parameter blocks.
fn nvos_and_alloc() -> Vec<Struct> {
    vec![
        layout!("NVOS00_PARAMETERS" => FreeParams {
            "hRoot" => h_root,
            "hObjectParent" => h_object_parent,
            "hObjectOld" => h_object_old,
            "status" => status,
        }),
        layout!("NVOS02_PARAMETERS" => AllocMemoryParams {
            "hRoot" => h_root,
            "hObjectParent" => h_object_parent,
            "hObjectNew" => h_object_new,
            "hClass" => h_class,
            "flags" => flags,
            "pMemory" => p_memory,
            "limit" => limit,
            "status" => status,
        }),
        layout!("NVOS21_PARAMETERS" => AllocParams {
            "hRoot" => h_root,
            "hObjectParent" => h_object_parent,
            "hObjectNew" => h_object_new,
            "hClass" => h_class,
            "pAllocParms" => p_alloc_parms,
            "paramsSize" => params_size,
            "status" => status,
        }),
        layout!("NVOS33_PARAMETERS" => MapMemoryParams {
            "hClient" => h_client,
            "hDevice" => h_device,
            "hMemory" => h_memory,
            "offset" => offset,
            "length" => length,
            "pLinearAddress" => p_linear_address,
            "status" => status,
            "flags" => flags,
        }),
        layout!("NVOS34_PARAMETERS" => UnmapMemoryParams {
            "hClient" => h_client,
            "hDevice" => h_device,
            "hMemory" => h_memory,
            "pLinearAddress" => p_linear_address,
            "status" => status,
            "flags" => flags,
        }),
        layout!("NVOS47_PARAMETERS" => UnmapMemoryDmaParams {
            "hClient" => h_client,
            "hDevice" => h_device,
            "hDma" => h_dma,
            "hMemory" => h_memory,
            "flags" => flags,
            "dmaOffset" => dma_offset,
            "size" => size,
            "status" => status,
        }),
        layout!("NVOS54_PARAMETERS" => ControlParams {
            "hClient" => h_client,
            "hObject" => h_object,
            "cmd" => cmd,
            "flags" => flags,
            "params" => params,
            "paramsSize" => params_size,
            "status" => status,
        }),
        layout!("NV0000_ALLOC_PARAMETERS" => RootClientAllocParams {
            "hClient" => h_client,
            "processID" => process_id,
            "processName" => process_name,
            "pOsPidInfo" => p_os_pid_info,
        }),
        layout!("NV0080_ALLOC_PARAMETERS" => DeviceAllocParams {
            "deviceId" => device_id,
            "hClientShare" => h_client_share,
            "hTargetClient" => h_target_client,
            "hTargetDevice" => h_target_device,
            "flags" => flags,
            "vaSpaceSize" => va_space_size,
            "vaStartInternal" => va_start_internal,
            "vaLimitInternal" => va_limit_internal,
            "vaMode" => va_mode,
        }),
        layout!("NV2080_ALLOC_PARAMETERS" => SubdeviceAllocParams {
            "subDeviceId" => sub_device_id,
        }),
        layout!("NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS" => MemoryVirtualAllocParams {
            "offset" => offset,
            "limit" => limit,
            "hVASpace" => h_va_space,
        }),
        layout!("NVB0B5_ALLOCATION_PARAMETERS" => CopyEngineAllocParams {
            "version" => version,
            "engineType" => engine_type,
        }),
        layout!("NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS" => ChannelGroupAllocParams {
            "hObjectError" => h_object_error,
            "hObjectEccError" => h_object_ecc_error,
            "hVASpace" => h_va_space,
            "engineType" => engine_type,
            "bIsCallingContextVgpuPlugin" => b_is_calling_context_vgpu_plugin,
        }),
        layout!("NV_MEMORY_DESC_PARAMS" => MemoryDescParams {
            "base" => base,
            "size" => size,
            "addressSpace" => address_space,
            "cacheAttrib" => cache_attrib,
        }),
        layout!("NV_CHANNEL_ALLOC_PARAMS" => ChannelAllocParams {
            "hObjectError" => h_object_error,
            "hObjectBuffer" => h_object_buffer,
            "gpFifoOffset" => gp_fifo_offset,
            "gpFifoEntries" => gp_fifo_entries,
            "flags" => flags,
            "hContextShare" => h_context_share,
            "hVASpace" => h_va_space,
            "hUserdMemory" => h_userd_memory,
            "userdOffset" => userd_offset,
            "engineType" => engine_type,
            "cid" => cid,
            "subDeviceId" => sub_device_id,
            "hObjectEccError" => h_object_ecc_error,
            "instanceMem" => instance_mem,
            "instanceMem.base" => instance_mem.base,
            "instanceMem.cacheAttrib" => instance_mem.cache_attrib,
            "userdMem" => userd_mem,
            "userdMem.size" => userd_mem.size,
            "ramfcMem" => ramfc_mem,
            "ramfcMem.addressSpace" => ramfc_mem.address_space,
            "mthdbufMem" => mthdbuf_mem,
            "hPhysChannelGroup" => h_phys_channel_group,
            "internalFlags" => internal_flags,
            "errorNotifierMem" => error_notifier_mem,
            "eccErrorNotifierMem" => ecc_error_notifier_mem,
            "eccErrorNotifierMem.base" => ecc_error_notifier_mem.base,
            "ProcessID" => process_id,
            "SubProcessID" => sub_process_id,
            "encryptIv" => encrypt_iv,
            "decryptIv" => decrypt_iv,
            "hmacNonce" => hmac_nonce,
            "tpcConfigID" => tpc_config_id,
        }),
        layout!("NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS" => ChannelAllocParams {
            "gpFifoOffset" => gp_fifo_offset,
            "tpcConfigID" => tpc_config_id,
        }),
        layout!("NV_CTXSHARE_ALLOCATION_PARAMETERS" => CtxShareAllocParams {
            "hVASpace" => h_va_space,
            "flags" => flags,
            "subctxId" => subctx_id,
        }),
        layout!("NV_MEMORY_ALLOCATION_PARAMS" => MemoryAllocParams {
            "owner" => owner,
            "type" => type_,
            "flags" => flags,
            "width" => width,
            "height" => height,
            "pitch" => pitch,
            "attr" => attr,
            "attr2" => attr2,
            "format" => format,
            "comprCovg" => compr_covg,
            "zcullCovg" => zcull_covg,
            "rangeLo" => range_lo,
            "rangeHi" => range_hi,
            "size" => size,
            "alignment" => alignment,
            "offset" => offset,
            "limit" => limit,
            "address" => address,
            "ctagOffset" => ctag_offset,
            "hVASpace" => h_va_space,
            "internalflags" => internal_flags,
            "tag" => tag,
            "numaNode" => numa_node,
        }),
        layout!("NV_OS_DESC_MEMORY_ALLOCATION_PARAMS" => OsDescMemoryAllocParams {
            "type" => type_,
            "flags" => flags,
            "attr" => attr,
            "attr2" => attr2,
            "descriptor" => descriptor,
            "limit" => limit,
            "descriptorType" => descriptor_type,
            "tag" => tag,
        }),
        layout!("NV83DE_ALLOC_PARAMETERS" => DebuggerAllocParams {
            "hDebuggerClient_Obsolete" => h_debugger_client_obsolete,
            "hAppClient" => h_app_client,
            "hClass3dObject" => h_class3d_object,
        }),
        layout!("NV_HOPPER_USERMODE_A_PARAMS" => HopperUsermodeAllocParams {
            "bBar1Mapping" => b_bar1_mapping,
            "bPriv" => b_priv,
        }),
    ]
}

/// Control parameter blocks.
fn controls() -> Vec<Struct> {
    vec![
        layout!("NVXXXX_CTRL_XXX_INFO" => InfoEntry { "index" => index, "data" => data }),
        layout!("NV2080_CTRL_GR_INFO" => InfoEntry { "index" => index, "data" => data }),
        layout!("NV2080_CTRL_FB_INFO" => InfoEntry { "index" => index, "data" => data }),
        layout!("NV2080_CTRL_INTERNAL_GR_INFO" => InfoEntry { "index" => index, "data" => data }),
        layout!("NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_PARAMS" => BuildVersionParams {
            "sizeOfStrings" => size_of_strings,
            "pDriverVersionBuffer" => p_driver_version_buffer,
            "pVersionBuffer" => p_version_buffer,
            "pTitleBuffer" => p_title_buffer,
            "changelistNumber" => changelist_number,
            "officialChangelistNumber" => official_changelist_number,
        }),
        layout!("NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS" => BuildVersionV2Params {
            "driverVersionBuffer" => driver_version_buffer,
            "versionBuffer" => version_buffer,
            "driverBranch" => driver_branch,
            "titleBuffer" => title_buffer,
            "changelistNumber" => changelist_number,
            "officialChangelistNumber" => official_changelist_number,
        }),
        layout!("NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS" => GpuIdInfoV2Params {
            "gpuId" => gpu_id,
            "gpuFlags" => gpu_flags,
            "deviceInstance" => device_instance,
            "subDeviceInstance" => sub_device_instance,
            "sliStatus" => sli_status,
            "boardId" => board_id,
            "gpuInstance" => gpu_instance,
            "numaId" => numa_id,
        }),
        layout!("NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS" => ClassListParams {
            "numClasses" => num_classes,
            "classList" => class_list,
        }),
        layout!("NV2080_CTRL_GR_ROUTE_INFO" => GrRouteInfo { "flags" => flags, "route" => route }),
        layout!("NV2080_CTRL_GR_GET_INFO_PARAMS" => GrGetInfoParams {
            "grInfoListSize" => gr_info_list_size,
            "grInfoList" => gr_info_list,
            "grRouteInfo" => gr_route_info,
            "grRouteInfo.route" => gr_route_info.route,
        }),
        layout!("NV2080_CTRL_INTERNAL_STATIC_GR_INFO" => InternalStaticGrInfo {
            "infoList" => info_list,
        }),
        layout!("NV2080_CTRL_INTERNAL_STATIC_GR_GET_INFO_PARAMS" => InternalStaticGrGetInfoParams {
            "engineInfo" => engine_info,
        }),
        layout!("NV2080_CTRL_INTERNAL_ENGINE_CONTEXT_BUFFER_INFO" => EngineContextBufferInfo {
            "size" => size,
            "alignment" => alignment,
        }),
        layout!("NV2080_CTRL_INTERNAL_STATIC_GR_CONTEXT_BUFFERS_INFO" => GrContextBuffersInfo {
            "engine" => engine,
        }),
        layout!("NV2080_CTRL_INTERNAL_STATIC_GR_GET_CONTEXT_BUFFERS_INFO_PARAMS" => GrGetContextBuffersInfoParams {
            "engineContextBuffersInfo" => engine_context_buffers_info,
        }),
        layout!("NV2080_CTRL_GPU_PROMOTE_CTX_BUFFER_ENTRY" => PromoteCtxBufferEntry {
            "gpuPhysAddr" => gpu_phys_addr,
            "gpuVirtAddr" => gpu_virt_addr,
            "size" => size,
            "physAttr" => phys_attr,
            "bufferId" => buffer_id,
            "bInitialize" => b_initialize,
            "bNonmapped" => b_nonmapped,
        }),
        layout!("NV2080_CTRL_GPU_PROMOTE_CTX_PARAMS" => PromoteCtxParams {
            "engineType" => engine_type,
            "hClient" => h_client,
            "ChID" => ch_id,
            "hChanClient" => h_chan_client,
            "hObject" => h_object,
            "hVirtMemory" => h_virt_memory,
            "virtAddress" => virt_address,
            "size" => size,
            "entryCount" => entry_count,
            "promoteEntry" => promote_entry,
        }),
        layout!("NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS" => GpuNameStringParams {
            "gpuNameStringFlags" => gpu_name_string_flags,
            "gpuNameString" => gpu_name_string,
        }),
        layout!("NV2080_CTRL_GPU_GET_GID_INFO_PARAMS" => GidInfoParams {
            "index" => index,
            "flags" => flags,
            "length" => length,
            "data" => data,
        }),
        layout!("NV2080_CTRL_BUS_GET_PCI_INFO_PARAMS" => PciInfoParams {
            "pciDeviceId" => pci_device_id,
            "pciSubSystemId" => pci_sub_system_id,
            "pciRevisionId" => pci_revision_id,
            "pciExtDeviceId" => pci_ext_device_id,
        }),
        layout!("NV2080_CTRL_FIFO_DEVICE_ENTRY" => FifoDeviceEntry {
            "engineData" => engine_data,
            "pbdmaIds" => pbdma_ids,
            "pbdmaFaultIds" => pbdma_fault_ids,
            "numPbdmas" => num_pbdmas,
            "engineName" => engine_name,
        }),
        layout!("NV2080_CTRL_FIFO_GET_DEVICE_INFO_TABLE_PARAMS" => FifoDeviceInfoTableParams {
            "baseIndex" => base_index,
            "numEntries" => num_entries,
            "bMore" => b_more,
            "entries" => entries,
        }),
        layout!("NV2080_CTRL_FB_FLUSH_GPU_CACHE_PARAMS" => FbFlushGpuCacheParams {
            "addressArray" => address_array,
            "addressArraySize" => address_array_size,
            "addressAlign" => address_align,
            "memBlockSizeBytes" => mem_block_size_bytes,
            "flags" => flags,
        }),
        layout!("NVA06F_CTRL_BIND_PARAMS" => BindParams { "engineType" => engine_type }),
        layout!("NVA06C_CTRL_BIND_PARAMS" => BindParams { "engineType" => engine_type }),
        layout!("NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS" => WorkSubmitTokenParams {
            "workSubmitToken" => work_submit_token,
        }),
        layout!("NV90F1_CTRL_VASPACE_COPY_SERVER_RESERVED_PDES_PARAMS" => CopyServerReservedPdesParams {
            "hSubDevice" => h_sub_device,
            "subDeviceId" => sub_device_id,
            "pageSize" => page_size,
            "virtAddrLo" => virt_addr_lo,
            "virtAddrHi" => virt_addr_hi,
            "numLevelsToCopy" => num_levels_to_copy,
            "levels" => levels,
        }),
        layout!("__typeof__(((NV90F1_CTRL_VASPACE_COPY_SERVER_RESERVED_PDES_PARAMS *)0)->levels[0])" => ReservedPdeLevel {
            "physAddress" => phys_address,
            "size" => size,
            "aperture" => aperture,
            "pageShift" => page_shift,
        }),
        layout!("NV83DE_SM_ERROR_STATE_REGISTERS" => SmErrorStateRegisters {
            "hwwGlobalEsr" => hww_global_esr,
            "hwwWarpEsr" => hww_warp_esr,
            "hwwWarpEsrPc" => hww_warp_esr_pc,
            "hwwGlobalEsrReportMask" => hww_global_esr_report_mask,
            "hwwWarpEsrReportMask" => hww_warp_esr_report_mask,
            "hwwEsrAddr" => hww_esr_addr,
            "hwwWarpEsrPc64" => hww_warp_esr_pc64,
            "hwwCgaEsr" => hww_cga_esr,
            "hwwCgaEsrReportMask" => hww_cga_esr_report_mask,
        }),
        layout!("NV83DE_MMU_FAULT_INFO" => MmuFaultInfo { "valid" => valid, "faultInfo" => fault_info }),
        layout!("NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS" => ReadAllSmErrorStatesParams {
            "hTargetChannel" => h_target_channel,
            "numSMsToRead" => num_sms_to_read,
            "smErrorStateArray" => sm_error_state_array,
            "mmuFaultInfo" => mmu_fault_info,
            "mmuFault" => mmu_fault,
            "mmuFault.faultInfo" => mmu_fault.fault_info,
            "startingSM" => starting_sm,
        }),
        layout!("NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_ENTRY" => MmuFaultInfoEntry {
            "faultAddress" => fault_address,
            "faultType" => fault_type,
            "accessType" => access_type,
        }),
        layout!("NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS" => ReadMmuFaultInfoParams {
            "mmuFaultInfoList" => mmu_fault_info_list,
            "count" => count,
        }),
    ]
}
