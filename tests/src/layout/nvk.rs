//! Layout entries for the kernel driver's ioctl framing, `nvbare_host::nvk::sys`:
//! `nv-ioctl.h`, `nv-unix-nvos-params-wrappers.h` and the UVM ioctls of
//! `uvm_ioctl.h` / `uvm_linux_ioctl.h` / `uvm_types.h`, all from the 580.142 tree (the
//! only one with `kernel-open`; the H200 machine runs driver 580.159.04).
//!
//! Besides the structs, the ioctl and escape numbers are checked through `sizeof`: an
//! entry `"char[UVM_FREE]" => [u8; UVM_FREE]` compares the C macro's value with the Rust
//! constant as the size of a byte array (never instantiated).
//!
//! The backend's control parameter blocks are `nvbare_gsp::rm::ctrl`'s, checked in
//! [`super::rm`] against both branches.
//!
//! The trimmed tree lacks two headers `uvm_types.h` includes; [`stub_headers`] supplies
//! them: `nvCpuUuid.h` with `NvProcessorUuid` as NVIDIA defines it (a struct of 16
//! bytes, `NV_UUID_LEN`), and an empty `nv_uvm_user_types.h` (nothing checked here uses
//! its types; the mapping-type enums are `NvU32` fields in the structs).

use super::{Group, Struct, StubHeader};
use crate::layout;
use nvbare_host::nvk::own_pt::*;
use nvbare_host::nvk::sys::*;

/// The kernel-driver ioctl group (580.142).
pub fn groups() -> Vec<Group> {
    let mut structs = ioctl_structs();
    structs.extend(uvm_structs());
    structs.extend(numbers());
    vec![
        Group {
            name: "nvk-580.142",
            include_dirs: vec![
                "open-gpu-kernel-modules-580.142/src/common/sdk/nvidia/inc",
                "open-gpu-kernel-modules-580.142/kernel-open/common/inc",
                "open-gpu-kernel-modules-580.142/kernel-open/nvidia-uvm",
                "open-gpu-kernel-modules-580.142/src/nvidia/arch/nvalloc/unix/include",
            ],
            prelude: "",
            headers: vec![
                "nvtypes.h",
                "nvos.h",
                "nv-ioctl.h",
                "nv-ioctl-numbers.h",
                "nv-unix-nvos-params-wrappers.h",
                "uvm_types.h",
                "uvm_ioctl.h",
                "uvm_linux_ioctl.h",
            ],
            structs,
        },
        own_pt_group(),
    ]
}

/// The control blocks and numbers of the own-page-tables mode (`nvbare_host::nvk::own_pt`),
/// against the 580.142 RM API headers.
fn own_pt_group() -> Group {
    Group {
        name: "nvk-own-pt-580.142",
        include_dirs: vec!["open-gpu-kernel-modules-580.142/src/common/sdk/nvidia/inc"],
        prelude: "",
        headers: vec![
            "nvtypes.h",
            "ctrl/ctrlxxxx.h",
            "ctrl/ctrl0080/ctrl0080dma.h",
            "ctrl/ctrl0041.h",
        ],
        structs: vec![
            layout!("NV0080_CTRL_DMA_SET_PAGE_DIRECTORY_PARAMS" => SetPageDirectoryParams {
                "physAddress" => phys_address, "numEntries" => num_entries,
                "flags" => flags, "hVASpace" => h_va_space, "chId" => ch_id,
                "subDeviceId" => sub_device_id, "pasid" => pasid,
            }),
            layout!("NV0080_CTRL_DMA_UNSET_PAGE_DIRECTORY_PARAMS" => UnsetPageDirectoryParams {
                "hVASpace" => h_va_space, "subDeviceId" => sub_device_id,
            }),
            layout!("NV0080_CTRL_DMA_INVALIDATE_TLB_PARAMS" => InvalidateTlbParams {
                "hVASpace" => h_va_space, "flags" => flags,
            }),
            layout!("NV0041_CTRL_GET_SURFACE_PHYS_ATTR_PARAMS" => SurfacePhysAttrParams {
                "memOffset" => mem_offset, "memFormat" => mem_format,
                "comprOffset" => compr_offset, "comprFormat" => compr_format,
                "memAperture" => mem_aperture, "gpuCacheAttr" => gpu_cache_attr,
                "gpuP2PCacheAttr" => gpu_p2p_cache_attr, "mmuContext" => mmu_context,
                "contigSegmentSize" => contig_segment_size,
            }),
            layout!("char[NV0080_CTRL_CMD_DMA_SET_PAGE_DIRECTORY]"
                => [u8; NV0080_DMA_SET_PAGE_DIRECTORY as usize] {}),
            layout!("char[NV0080_CTRL_CMD_DMA_UNSET_PAGE_DIRECTORY]"
                => [u8; NV0080_DMA_UNSET_PAGE_DIRECTORY as usize] {}),
            layout!("char[NV0080_CTRL_CMD_DMA_INVALIDATE_TLB]"
                => [u8; NV0080_DMA_INVALIDATE_TLB as usize] {}),
            layout!("char[NV0041_CTRL_CMD_GET_SURFACE_PHYS_ATTR]"
                => [u8; NV0041_GET_SURFACE_PHYS_ATTR as usize] {}),
            layout!("char[NV0041_CTRL_CMD_GET_SURFACE_PHYS_ATTR_APERTURE_VIDMEM + 1]"
                => [u8; PHYS_APERTURE_VIDMEM as usize + 1] {}),
            layout!("char[DRF_DEF(0080_CTRL_DMA_SET_PAGE_DIRECTORY, _FLAGS, _APERTURE, _VIDMEM) | \
                     DRF_DEF(0080_CTRL_DMA_SET_PAGE_DIRECTORY, _FLAGS, _ALL_CHANNELS, _TRUE)]"
                => [u8; SPD_FLAGS_VIDMEM_ALL_CHANNELS as usize] {}),
        ],
    }
}

/// Headers the trimmed 580.142 tree lacks but `uvm_types.h` includes.
pub fn stub_headers() -> Vec<StubHeader> {
    vec![
        StubHeader {
            path: "nvCpuUuid.h",
            text: "#ifndef NVBARE_STUB_NV_CPU_UUID_H\n#define NVBARE_STUB_NV_CPU_UUID_H\n\
                   #define NV_UUID_LEN 16\n\
                   typedef struct nv_uuid { NvU8 uuid[NV_UUID_LEN]; } NvUuid;\n\
                   typedef NvUuid NvProcessorUuid;\n#endif\n",
        },
        StubHeader {
            path: "nv_uvm_user_types.h",
            text: "/* stub: nothing the layout check uses is declared here */\n",
        },
    ]
}

fn ioctl_structs() -> Vec<Struct> {
    vec![
        layout!("nv_pci_info_t" => NvPciInfo {
            "domain" => domain,
            "bus" => bus,
            "slot" => slot,
            "function" => function,
            "vendor_id" => vendor_id,
            "device_id" => device_id,
        }),
        layout!("nv_ioctl_card_info_t" => NvIoctlCardInfo {
            "valid" => valid,
            "pci_info" => pci_info,
            "pci_info.device_id" => pci_info.device_id,
            "gpu_id" => gpu_id,
            "interrupt_line" => interrupt_line,
            "reg_address" => reg_address,
            "reg_size" => reg_size,
            "fb_address" => fb_address,
            "fb_size" => fb_size,
            "minor_number" => minor_number,
            "dev_name" => dev_name,
        }),
        layout!("nv_ioctl_register_fd_t" => NvIoctlRegisterFd { "ctl_fd" => ctl_fd }),
        layout!("nv_ioctl_rm_api_version_t" => NvIoctlRmApiVersion {
            "cmd" => cmd,
            "reply" => reply,
            "versionString" => version_string,
        }),
        layout!("nv_ioctl_nvos02_parameters_with_fd" => NvIoctlNvos02ParametersWithFd {
            "params" => params,
            "params.pMemory" => params.p_memory,
            "params.status" => params.status,
            "fd" => fd,
        }),
        layout!("nv_ioctl_nvos33_parameters_with_fd" => NvIoctlNvos33ParametersWithFd {
            "params" => params,
            "params.pLinearAddress" => params.p_linear_address,
            "params.flags" => params.flags,
            "fd" => fd,
        }),
    ]
}

fn uvm_structs() -> Vec<Struct> {
    vec![
        layout!("UVM_INITIALIZE_PARAMS" => UvmInitializeParams {
            "flags" => flags,
            "rmStatus" => rm_status,
        }),
        layout!("UVM_MM_INITIALIZE_PARAMS" => UvmMmInitializeParams {
            "uvmFd" => uvm_fd,
            "rmStatus" => rm_status,
        }),
        layout!("UVM_REGISTER_GPU_PARAMS" => UvmRegisterGpuParams {
            "gpu_uuid" => gpu_uuid,
            "numaEnabled" => numa_enabled,
            "numaNodeId" => numa_node_id,
            "rmCtrlFd" => rm_ctrl_fd,
            "hClient" => h_client,
            "hSmcPartRef" => h_smc_part_ref,
            "rmStatus" => rm_status,
        }),
        layout!("UVM_UNREGISTER_GPU_PARAMS" => UvmUnregisterGpuParams {
            "gpu_uuid" => gpu_uuid,
            "rmStatus" => rm_status,
        }),
        layout!("UVM_REGISTER_GPU_VASPACE_PARAMS" => UvmRegisterGpuVaspaceParams {
            "gpuUuid" => gpu_uuid,
            "rmCtrlFd" => rm_ctrl_fd,
            "hClient" => h_client,
            "hVaSpace" => h_va_space,
            "rmStatus" => rm_status,
        }),
        layout!("UVM_UNREGISTER_GPU_VASPACE_PARAMS" => UvmUnregisterGpuVaspaceParams {
            "gpuUuid" => gpu_uuid,
            "rmStatus" => rm_status,
        }),
        layout!("UVM_REGISTER_CHANNEL_PARAMS" => UvmRegisterChannelParams {
            "gpuUuid" => gpu_uuid,
            "rmCtrlFd" => rm_ctrl_fd,
            "hClient" => h_client,
            "hChannel" => h_channel,
            "base" => base,
            "length" => length,
            "rmStatus" => rm_status,
        }),
        layout!("UVM_CREATE_EXTERNAL_RANGE_PARAMS" => UvmCreateExternalRangeParams {
            "base" => base,
            "length" => length,
            "rmStatus" => rm_status,
        }),
        layout!("UVM_FREE_PARAMS" => UvmFreeParams {
            "base" => base,
            "length" => length,
            "rmStatus" => rm_status,
        }),
        layout!("UvmGpuMappingAttributes" => UvmGpuMappingAttributes {
            "gpuUuid" => gpu_uuid,
            "gpuMappingType" => gpu_mapping_type,
            "gpuCachingType" => gpu_caching_type,
            "gpuFormatType" => gpu_format_type,
            "gpuElementBits" => gpu_element_bits,
            "gpuCompressionType" => gpu_compression_type,
        }),
        layout!("UVM_MAP_EXTERNAL_ALLOCATION_PARAMS" => UvmMapExternalAllocationParams {
            "base" => base,
            "length" => length,
            "offset" => offset,
            "perGpuAttributes" => per_gpu_attributes,
            "gpuAttributesCount" => gpu_attributes_count,
            "rmCtrlFd" => rm_ctrl_fd,
            "hClient" => h_client,
            "hMemory" => h_memory,
            "rmStatus" => rm_status,
        }),
    ]
}

/// Escape, ioctl and limit numbers, compared as the sizes of byte arrays.
fn numbers() -> Vec<Struct> {
    vec![
        layout!("char[NV_IOCTL_MAGIC]" => [u8; NV_IOCTL_MAGIC as usize] {}),
        layout!("char[NV_IOCTL_BASE]" => [u8; NV_IOCTL_BASE as usize] {}),
        layout!("char[NV_ESC_CARD_INFO]" => [u8; NV_ESC_CARD_INFO as usize] {}),
        layout!("char[NV_ESC_REGISTER_FD]" => [u8; NV_ESC_REGISTER_FD as usize] {}),
        layout!("char[NV_ESC_CHECK_VERSION_STR]" => [u8; NV_ESC_CHECK_VERSION_STR as usize] {}),
        layout!("char[NV_RM_API_VERSION_CMD_QUERY]" => [u8; NV_RM_API_VERSION_CMD_QUERY as usize] {}),
        layout!("char[UVM_INITIALIZE]" => [u8; UVM_INITIALIZE as usize] {}),
        layout!("char[UVM_MM_INITIALIZE]" => [u8; UVM_MM_INITIALIZE as usize] {}),
        layout!("char[UVM_REGISTER_GPU]" => [u8; UVM_REGISTER_GPU as usize] {}),
        layout!("char[UVM_UNREGISTER_GPU]" => [u8; UVM_UNREGISTER_GPU as usize] {}),
        layout!("char[UVM_REGISTER_GPU_VASPACE]" => [u8; UVM_REGISTER_GPU_VASPACE as usize] {}),
        layout!("char[UVM_UNREGISTER_GPU_VASPACE]" => [u8; UVM_UNREGISTER_GPU_VASPACE as usize] {}),
        layout!("char[UVM_REGISTER_CHANNEL]" => [u8; UVM_REGISTER_CHANNEL as usize] {}),
        layout!("char[UVM_MAP_EXTERNAL_ALLOCATION]" => [u8; UVM_MAP_EXTERNAL_ALLOCATION as usize] {}),
        layout!("char[UVM_FREE]" => [u8; UVM_FREE as usize] {}),
        layout!("char[UVM_CREATE_EXTERNAL_RANGE]" => [u8; UVM_CREATE_EXTERNAL_RANGE as usize] {}),
        layout!("char[UVM_MAX_GPUS]" => [u8; UVM_MAX_GPUS] {}),
    ]
}
