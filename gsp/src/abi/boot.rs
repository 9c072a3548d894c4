//! Boot arguments handed to GSP-RM and its boot loaders.
//!
//! Headers: `src/nvidia/inc/kernel/gpu/gsp/gsp_init_args.h`,
//! `src/common/uproc/os/common/include/libos_init_args.h`,
//! `src/nvidia/arch/nvalloc/common/inc/gsp/gsp_fw_wpr_meta.h`,
//! `src/nvidia/arch/nvalloc/common/inc/gsp/gspifpub.h`.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Mirrors `MESSAGE_QUEUE_INIT_ARGUMENTS`, `gsp_init_args.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct MessageQueueInitArguments {
    /// `sharedMemPhysAddr`: bus address of the queues' page table.
    pub shared_mem_phys_addr: u64,
    /// `pageTableEntryCount`.
    pub page_table_entry_count: u32,
    /// Padding before the 8-byte `cmdQueueOffset` (`NvLength`).
    pub _pad0: u32,
    /// `cmdQueueOffset`.
    pub cmd_queue_offset: u64,
    /// `statQueueOffset`.
    pub stat_queue_offset: u64,
}

/// Mirrors `GSP_SR_INIT_ARGUMENTS`, `gsp_init_args.h` (suspend/resume state).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspSrInitArguments {
    /// `oldLevel`.
    pub old_level: u32,
    /// `flags`.
    pub flags: u32,
    /// `bInPMTransition` (`NvBool`).
    pub b_in_pm_transition: u8,
    /// Tail padding.
    pub _pad0: [u8; 3],
}

/// Mirrors the anonymous `profilerArgs` member of `GSP_ARGUMENTS_CACHED`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspProfilerArgs {
    /// `pa`.
    pub pa: u64,
    /// `size`.
    pub size: u64,
}

/// Mirrors `GSP_ARGUMENTS_CACHED`, `gsp_init_args.h`: the arguments GSP-RM reads at boot
/// (the `GSP_ARGUMENTS_CACHED` libos region).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspArgumentsCached {
    /// `messageQueueInitArguments`.
    pub message_queue_init_arguments: MessageQueueInitArguments,
    /// `srInitArguments`.
    pub sr_init_arguments: GspSrInitArguments,
    /// `gpuInstance`.
    pub gpu_instance: u32,
    /// `bDmemStack` (`NvBool`).
    pub b_dmem_stack: u8,
    /// Padding before the 8-byte aligned `profilerArgs`.
    pub _pad0: [u8; 7],
    /// `profilerArgs`.
    pub profiler_args: GspProfilerArgs,
}

/// `LIBOS_MEMORY_REGION_NONE` (`LibosMemoryRegionKind`), `libos_init_args.h`.
pub const LIBOS_MEMORY_REGION_NONE: u8 = 0;
/// `LIBOS_MEMORY_REGION_CONTIGUOUS`.
pub const LIBOS_MEMORY_REGION_CONTIGUOUS: u8 = 1;
/// `LIBOS_MEMORY_REGION_RADIX3`.
pub const LIBOS_MEMORY_REGION_RADIX3: u8 = 2;
/// `LIBOS_MEMORY_REGION_LOC_NONE` (`LibosMemoryRegionLoc`), `libos_init_args.h`.
pub const LIBOS_MEMORY_REGION_LOC_NONE: u8 = 0;
/// `LIBOS_MEMORY_REGION_LOC_SYSMEM`.
pub const LIBOS_MEMORY_REGION_LOC_SYSMEM: u8 = 1;
/// `LIBOS_MEMORY_REGION_LOC_FB`.
pub const LIBOS_MEMORY_REGION_LOC_FB: u8 = 2;
/// `LIBOS_MEMORY_REGION_INIT_ARGUMENTS_MAX`: bytes of the init-argument page.
pub const LIBOS_MEMORY_REGION_INIT_ARGUMENTS_MAX: usize = 4096;
/// `LIBOS_MEMORY_REGION_RADIX_PAGE_SIZE`.
pub const LIBOS_MEMORY_REGION_RADIX_PAGE_SIZE: usize = 4096;
/// `LIBOS_MEMORY_REGION_RADIX_PAGE_LOG2`.
pub const LIBOS_MEMORY_REGION_RADIX_PAGE_LOG2: u32 = 12;

/// Mirrors `LibosMemoryRegionInitArgument`, `libos_init_args.h`: one entry of the libos
/// init-argument page (log buffers, `RMARGS`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct LibosMemoryRegionInitArgument {
    /// `id8`: eight ASCII characters packed into a `u64` (e.g. `"LOGINIT"`).
    pub id8: u64,
    /// `pa`: physical address.
    pub pa: u64,
    /// `size`: bytes.
    pub size: u64,
    /// `kind`: `LIBOS_MEMORY_REGION_*` kind.
    pub kind: u8,
    /// `loc`: `LIBOS_MEMORY_REGION_LOC_*`.
    pub loc: u8,
    /// Tail padding.
    pub _pad0: [u8; 6],
}

/// Mirrors `libosLogMetadata`, `libos_log.h`: the description of one log statement, kept in
/// the firmware's logging ELF and named by each record's metadata pointer. `lineNumber` is
/// declared 8-aligned, so `argumentCount` follows it at offset 20 (not 24).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct LibosLogMetadata {
    /// `filename`: pointer to the source file's name.
    pub filename: u64,
    /// `format`: pointer to the printf format.
    pub format: u64,
    /// `lineNumber`.
    pub line_number: u32,
    /// `argumentCount`: arguments, not counting the format.
    pub argument_count: u8,
    /// `printLevel`.
    pub print_level: u8,
    /// `specialType`.
    pub special_type: u8,
    /// Tail padding to the 8-byte alignment.
    pub _pad0: u8,
}

/// `GSP_FW_WPR_META_MAGIC`, `gsp_fw_wpr_meta.h`.
pub const GSP_FW_WPR_META_MAGIC: u64 = 0xdc3a_ae21_371a_60b3;
/// `GSP_FW_WPR_META_REVISION`, `gsp_fw_wpr_meta.h`.
pub const GSP_FW_WPR_META_REVISION: u64 = 1;
/// `GSP_FW_WPR_META_VERIFIED`, `gsp_fw_wpr_meta.h`: the value of `verified` once checked.
pub const GSP_FW_WPR_META_VERIFIED: u64 = 0xa0a0_a0a0_a0a0_a0a0;
/// `GSP_FW_FLAGS_CLOCK_BOOST`, `gsp_fw_wpr_meta.h`.
pub const GSP_FW_FLAGS_CLOCK_BOOST: u8 = 1 << 0;
/// `GSP_FW_FLAGS_RECOVERY_MARGIN_PRESENT`, `gsp_fw_wpr_meta.h`.
pub const GSP_FW_FLAGS_RECOVERY_MARGIN_PRESENT: u8 = 1 << 1;
/// `GSP_FW_FLAGS_PPCIE_ENABLED`, `gsp_fw_wpr_meta.h`.
pub const GSP_FW_FLAGS_PPCIE_ENABLED: u8 = 1 << 2;

/// Mirrors `GspFwWprMeta`, `gsp_fw_wpr_meta.h`: the WPR2 layout the booter reads.
///
/// The two anonymous unions are mirrored by their first variants (the ones boot uses):
/// `sysmemAddrOfSignature`/`sizeOfSignature` and the `partitionRpc*`/`elf*` group.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspFwWprMeta {
    /// `magic`: [`GSP_FW_WPR_META_MAGIC`].
    pub magic: u64,
    /// `revision`: [`GSP_FW_WPR_META_REVISION`].
    pub revision: u64,
    /// `sysmemAddrOfRadix3Elf`.
    pub sysmem_addr_of_radix3_elf: u64,
    /// `sizeOfRadix3Elf`.
    pub size_of_radix3_elf: u64,
    /// `sysmemAddrOfBootloader`.
    pub sysmem_addr_of_bootloader: u64,
    /// `sizeOfBootloader`.
    pub size_of_bootloader: u64,
    /// `bootloaderCodeOffset`.
    pub bootloader_code_offset: u64,
    /// `bootloaderDataOffset`.
    pub bootloader_data_offset: u64,
    /// `bootloaderManifestOffset`.
    pub bootloader_manifest_offset: u64,
    /// `sysmemAddrOfSignature` (aliases `gspFwHeapFreeListWprOffset`/`unused0`).
    pub sysmem_addr_of_signature: u64,
    /// `sizeOfSignature` (aliases `unused1`).
    pub size_of_signature: u64,
    /// `gspFwRsvdStart`.
    pub gsp_fw_rsvd_start: u64,
    /// `nonWprHeapOffset`.
    pub non_wpr_heap_offset: u64,
    /// `nonWprHeapSize`.
    pub non_wpr_heap_size: u64,
    /// `gspFwWprStart`.
    pub gsp_fw_wpr_start: u64,
    /// `gspFwHeapOffset`.
    pub gsp_fw_heap_offset: u64,
    /// `gspFwHeapSize`.
    pub gsp_fw_heap_size: u64,
    /// `gspFwOffset`.
    pub gsp_fw_offset: u64,
    /// `bootBinOffset`.
    pub boot_bin_offset: u64,
    /// `frtsOffset`.
    pub frts_offset: u64,
    /// `frtsSize`.
    pub frts_size: u64,
    /// `gspFwWprEnd`.
    pub gsp_fw_wpr_end: u64,
    /// `fbSize`.
    pub fb_size: u64,
    /// `vgaWorkspaceOffset`.
    pub vga_workspace_offset: u64,
    /// `vgaWorkspaceSize`.
    pub vga_workspace_size: u64,
    /// `bootCount`.
    pub boot_count: u64,
    /// `partitionRpcAddr` (aliases `partitionRpcPadding[0..2]`).
    pub partition_rpc_addr: u64,
    /// `partitionRpcRequestOffset`.
    pub partition_rpc_request_offset: u16,
    /// `partitionRpcReplyOffset`.
    pub partition_rpc_reply_offset: u16,
    /// `elfCodeOffset`.
    pub elf_code_offset: u32,
    /// `elfDataOffset` (aliases the low half of `sysmemAddrOfCrashReportQueue`).
    pub elf_data_offset: u32,
    /// `elfCodeSize`.
    pub elf_code_size: u32,
    /// `elfDataSize` (aliases `sizeOfCrashReportQueue`).
    pub elf_data_size: u32,
    /// `lsUcodeVersion`.
    pub ls_ucode_version: u32,
    /// `gspFwHeapVfPartitionCount`.
    pub gsp_fw_heap_vf_partition_count: u8,
    /// `flags`: `GSP_FW_FLAGS_*`.
    pub flags: u8,
    /// `padding[2]`.
    pub padding: [u8; 2],
    /// `pmuReservedSize`.
    pub pmu_reserved_size: u32,
    /// `verified`: 0, or [`GSP_FW_WPR_META_VERIFIED`] once the booter checked it.
    pub verified: u64,
}

/// `GSP_DMA_TARGET_LOCAL_FB` (`GSP_DMA_TARGET`), `gspifpub.h`.
pub const GSP_DMA_TARGET_LOCAL_FB: u32 = 0;
/// `GSP_DMA_TARGET_COHERENT_SYSTEM`.
pub const GSP_DMA_TARGET_COHERENT_SYSTEM: u32 = 1;
/// `GSP_DMA_TARGET_NONCOHERENT_SYSTEM`.
pub const GSP_DMA_TARGET_NONCOHERENT_SYSTEM: u32 = 2;

/// Mirrors `GSP_FMC_INIT_PARAMS`, `gspifpub.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspFmcInitParams {
    /// `regkeys`: confidential-computing initialization "registry keys".
    pub regkeys: u32,
}

/// Mirrors `GSP_ACR_BOOT_GSP_RM_PARAMS`, `gspifpub.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspAcrBootGspRmParams {
    /// `target` (`GSP_DMA_TARGET`): aperture of the GSP-RM descriptor.
    pub target: u32,
    /// `gspRmDescSize`.
    pub gsp_rm_desc_size: u32,
    /// `gspRmDescOffset`.
    pub gsp_rm_desc_offset: u64,
    /// `wprCarveoutOffset`.
    pub wpr_carveout_offset: u64,
    /// `wprCarveoutSize`.
    pub wpr_carveout_size: u32,
    /// `bIsGspRmBoot` (`NvBool`).
    pub b_is_gsp_rm_boot: u8,
    /// Tail padding.
    pub _pad0: [u8; 3],
}

/// Mirrors `GSP_RM_PARAMS`, `gspifpub.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspRmParams {
    /// `target` (`GSP_DMA_TARGET`): aperture of the boot arguments.
    pub target: u32,
    /// Padding before the 8-byte `bootArgsOffset`.
    pub _pad0: u32,
    /// `bootArgsOffset`.
    pub boot_args_offset: u64,
}

/// Mirrors `GSP_SPDM_PARAMS`, `gspifpub.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspSpdmParams {
    /// `target` (`GSP_DMA_TARGET`).
    pub target: u32,
    /// Padding before the 8-byte `payloadBufferOffset`.
    pub _pad0: u32,
    /// `payloadBufferOffset`.
    pub payload_buffer_offset: u64,
    /// `payloadBufferSize`.
    pub payload_buffer_size: u32,
    /// Tail padding.
    pub _pad1: u32,
}

/// Mirrors `GSP_FMC_BOOT_PARAMS`, `gspifpub.h`: what the FSP boot path hands GSP's FMC
/// (Hopper and later).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspFmcBootParams {
    /// `initParams`.
    pub init_params: GspFmcInitParams,
    /// Padding before the 8-byte aligned `bootGspRmParams`.
    pub _pad0: u32,
    /// `bootGspRmParams`.
    pub boot_gsp_rm_params: GspAcrBootGspRmParams,
    /// `gspRmParams`.
    pub gsp_rm_params: GspRmParams,
    /// `gspSpdmParams`.
    pub gsp_spdm_params: GspSpdmParams,
}
