//! Class-specific parameter blocks of `NvRmAlloc` (the `pAllocParms` of
//! [`super::nvos::AllocParams`]), from `class/*.h`, `alloc/alloc_channel.h` and `nvos.h`.
//!
//! Only [`VaSpaceAllocParamsV570`] / [`VaSpaceAllocParamsV580`] differ between the 570.144
//! and 580.142 headers; the flag and attribute words are in [`super::alloc_flags`].

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use super::nvos::{NvHandle, NvP64};

/// `NV_PROC_NAME_MAX_LENGTH` (`nvlimits.h`).
pub const PROC_NAME_MAX_LENGTH: usize = 100;
/// `NV_MAX_SUBDEVICES` (`nvlimits.h`).
pub const MAX_SUBDEVICES: usize = 8;
/// `CC_CHAN_ALLOC_IV_SIZE_DWORD` (`alloc/alloc_channel.h`).
pub const CC_CHAN_ALLOC_IV_SIZE_DWORD: usize = 3;
/// `CC_CHAN_ALLOC_NONCE_SIZE_DWORD` (`alloc/alloc_channel.h`).
pub const CC_CHAN_ALLOC_NONCE_SIZE_DWORD: usize = 8;

/// Parameters for a client, `NV01_ROOT`/`NV01_ROOT_CLIENT` (`NV0000_ALLOC_PARAMETERS`,
/// `class/cl0000.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct RootClientAllocParams {
    /// `hClient`: the handle wanted (0: RM chooses).
    pub h_client: NvHandle,
    /// `processID`.
    pub process_id: u32,
    /// `processName`: NUL-terminated.
    pub process_name: [u8; PROC_NAME_MAX_LENGTH],
    /// Padding before `pOsPidInfo`.
    pub _pad0: [u8; 4],
    /// `pOsPidInfo`.
    pub p_os_pid_info: NvP64,
}

impl Default for RootClientAllocParams {
    fn default() -> Self {
        Self::new_zeroed()
    }
}

/// Parameters for a device, `NV01_DEVICE_0` (`NV0080_ALLOC_PARAMETERS`, `class/cl0080.h`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct DeviceAllocParams {
    /// `deviceId`: the device instance (0 for the first GPU of a client).
    pub device_id: u32,
    /// `hClientShare`: the client whose VA space is shared (usually our own).
    pub h_client_share: NvHandle,
    /// `hTargetClient`.
    pub h_target_client: NvHandle,
    /// `hTargetDevice`.
    pub h_target_device: NvHandle,
    /// `flags`: `NV_DEVICE_ALLOCATION_FLAGS_*`.
    pub flags: u32,
    /// Padding before `vaSpaceSize`.
    pub _pad0: u32,
    /// `vaSpaceSize`.
    pub va_space_size: u64,
    /// `vaStartInternal`.
    pub va_start_internal: u64,
    /// `vaLimitInternal`.
    pub va_limit_internal: u64,
    /// `vaMode`: [`super::alloc_flags::device_va_mode`].
    pub va_mode: u32,
    /// Tail padding.
    pub _pad1: u32,
}

/// Parameters for a subdevice, `NV20_SUBDEVICE_0` (`NV2080_ALLOC_PARAMETERS`,
/// `class/cl2080.h`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct SubdeviceAllocParams {
    /// `subDeviceId`.
    pub sub_device_id: u32,
}

/// Parameters for a virtual range, `NV01_MEMORY_VIRTUAL`
/// (`NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS`, `class/cl0070.h`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MemoryVirtualAllocParams {
    /// `offset`: into the address space.
    pub offset: u64,
    /// `limit`: last byte (in/out).
    pub limit: u64,
    /// `hVASpace`: the VA space (0: the device's default).
    pub h_va_space: NvHandle,
    /// Tail padding.
    pub _pad0: u32,
}

/// Parameters for a VA space, `FERMI_VASPACE_A` (`NV_VASPACE_ALLOCATION_PARAMETERS`,
/// `nvos.h`) as of the **570.144** headers (48 bytes). GSP-RM 570.144 takes this one.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct VaSpaceAllocParamsV570 {
    /// `index`: `NV_VASPACE_ALLOCATION_INDEX_*`.
    pub index: u32,
    /// `flags`: [`super::alloc_flags::vaspace_flags`].
    pub flags: u32,
    /// `vaSize`.
    pub va_size: u64,
    /// `vaStartInternal`.
    pub va_start_internal: u64,
    /// `vaLimitInternal`.
    pub va_limit_internal: u64,
    /// `bigPageSize`: 64 KiB or 128 KiB, 0 for the default.
    pub big_page_size: u32,
    /// Padding before `vaBase`.
    pub _pad0: u32,
    /// `vaBase`.
    pub va_base: u64,
}

/// Parameters for a VA space, `FERMI_VASPACE_A` (`NV_VASPACE_ALLOCATION_PARAMETERS`,
/// `nvos.h`) as of the **580.142** headers (56 bytes): [`VaSpaceAllocParamsV570`] plus
/// `pasid`. The 580.x kernel driver takes this one.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct VaSpaceAllocParamsV580 {
    /// `index`: `NV_VASPACE_ALLOCATION_INDEX_*`.
    pub index: u32,
    /// `flags`: [`super::alloc_flags::vaspace_flags`].
    pub flags: u32,
    /// `vaSize`.
    pub va_size: u64,
    /// `vaStartInternal`.
    pub va_start_internal: u64,
    /// `vaLimitInternal`.
    pub va_limit_internal: u64,
    /// `bigPageSize`: 64 KiB or 128 KiB, 0 for the default.
    pub big_page_size: u32,
    /// Padding before `vaBase`.
    pub _pad0: u32,
    /// `vaBase`.
    pub va_base: u64,
    /// `pasid`: used by RM only for its ATS test flag (580 only).
    pub pasid: u32,
    /// Tail padding.
    pub _pad1: u32,
}

/// Parameters for a copy-engine object such as `HOPPER_DMA_COPY_A`
/// (`NVB0B5_ALLOCATION_PARAMETERS`, `class/clb0b5sw.h`): which copy engine the object
/// binds to. Without them RM picks a default engine, which need not be the one the
/// channel's group was created for.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CopyEngineAllocParams {
    /// `version`: [`Self::VERSION_INSTANCE`] or [`Self::VERSION_ENGINE_TYPE`].
    pub version: u32,
    /// `engineType`: a copy-engine instance (version 0) or an `NV2080_ENGINE_TYPE` (version 1).
    pub engine_type: u32,
}

impl CopyEngineAllocParams {
    /// `NVB0B5_ALLOCATION_PARAMETERS_VERSION_0`: `engine_type` is a CE instance number.
    pub const VERSION_INSTANCE: u32 = 0;
    /// `NVB0B5_ALLOCATION_PARAMETERS_VERSION_1`: `engine_type` is an `NV2080_ENGINE_TYPE`.
    pub const VERSION_ENGINE_TYPE: u32 = 1;
}

/// Parameters for a TSG, `KEPLER_CHANNEL_GROUP_A` (`NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS`,
/// `nvos.h`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ChannelGroupAllocParams {
    /// `hObjectError`: error notifier.
    pub h_object_error: NvHandle,
    /// `hObjectEccError`: ECC error notifier.
    pub h_object_ecc_error: NvHandle,
    /// `hVASpace`.
    pub h_va_space: NvHandle,
    /// `engineType`: [`super::alloc_flags::engine_type`].
    pub engine_type: u32,
    /// `bIsCallingContextVgpuPlugin` (`NvBool`).
    pub b_is_calling_context_vgpu_plugin: u8,
    /// Tail padding.
    pub _pad0: [u8; 3],
}

/// A physical memory description inside channel parameters (`NV_MEMORY_DESC_PARAMS`,
/// `alloc/alloc_channel.h`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MemoryDescParams {
    /// `base`: physical address.
    pub base: u64,
    /// `size`: bytes.
    pub size: u64,
    /// `addressSpace`: `ADDR_SYSMEM` / `ADDR_FBMEM` numbering of RM.
    pub address_space: u32,
    /// `cacheAttrib`.
    pub cache_attrib: u32,
}

/// Parameters for a GPFIFO channel, `*_CHANNEL_GPFIFO_A` (`NV_CHANNEL_ALLOC_PARAMS` a.k.a.
/// `NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS`, `alloc/alloc_channel.h`; the same in 570.144
/// and 580.142). The `*_mem` descriptions are for kernel/GSP clients; user clients leave
/// them zero.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ChannelAllocParams {
    /// `hObjectError`: error notifier context DMA.
    pub h_object_error: NvHandle,
    /// `hObjectBuffer`: unused.
    pub h_object_buffer: NvHandle,
    /// `gpFifoOffset`: GPU VA of the GPFIFO ring.
    pub gp_fifo_offset: u64,
    /// `gpFifoEntries`: ring entries.
    pub gp_fifo_entries: u32,
    /// `flags`: [`super::alloc_flags::channel_flags`].
    pub flags: u32,
    /// `hContextShare`: the subcontext.
    pub h_context_share: NvHandle,
    /// `hVASpace`.
    pub h_va_space: NvHandle,
    /// `hUserdMemory`: USERD memory per subdevice (0: RM allocates).
    pub h_userd_memory: [NvHandle; MAX_SUBDEVICES],
    /// `userdOffset`: USERD offset within `h_userd_memory`, per subdevice.
    pub userd_offset: [u64; MAX_SUBDEVICES],
    /// `engineType`: [`super::alloc_flags::engine_type`].
    pub engine_type: u32,
    /// `cid`: channel id, unique for the RM session.
    pub cid: u32,
    /// `subDeviceId`: one-hot subdevice mask.
    pub sub_device_id: u32,
    /// `hObjectEccError`: ECC error notifier.
    pub h_object_ecc_error: NvHandle,
    /// `instanceMem`.
    pub instance_mem: MemoryDescParams,
    /// `userdMem`.
    pub userd_mem: MemoryDescParams,
    /// `ramfcMem`.
    pub ramfc_mem: MemoryDescParams,
    /// `mthdbufMem`.
    pub mthdbuf_mem: MemoryDescParams,
    /// `hPhysChannelGroup`: reserved.
    pub h_phys_channel_group: NvHandle,
    /// `internalFlags`: reserved.
    pub internal_flags: u32,
    /// `errorNotifierMem`: reserved.
    pub error_notifier_mem: MemoryDescParams,
    /// `eccErrorNotifierMem`: reserved.
    pub ecc_error_notifier_mem: MemoryDescParams,
    /// `ProcessID`: reserved.
    pub process_id: u32,
    /// `SubProcessID`: reserved.
    pub sub_process_id: u32,
    /// `encryptIv`: reserved (confidential compute).
    pub encrypt_iv: [u32; CC_CHAN_ALLOC_IV_SIZE_DWORD],
    /// `decryptIv`: reserved (confidential compute).
    pub decrypt_iv: [u32; CC_CHAN_ALLOC_IV_SIZE_DWORD],
    /// `hmacNonce`: reserved (confidential compute).
    pub hmac_nonce: [u32; CC_CHAN_ALLOC_NONCE_SIZE_DWORD],
    /// `tpcConfigID`.
    pub tpc_config_id: u32,
    /// Tail padding.
    pub _pad0: u32,
}

/// Parameters for a subcontext, `FERMI_CONTEXT_SHARE_A` (`NV_CTXSHARE_ALLOCATION_PARAMETERS`,
/// `nvos.h`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CtxShareAllocParams {
    /// `hVASpace`.
    pub h_va_space: NvHandle,
    /// `flags`: [`super::alloc_flags::ctxshare_flags`].
    pub flags: u32,
    /// `subctxId`: in with `SUBCONTEXT_SPECIFIED`, out otherwise.
    pub subctx_id: u32,
}

/// Parameters for memory, `NV01_MEMORY_SYSTEM` / `NV01_MEMORY_LOCAL_USER`
/// (`NV_MEMORY_ALLOCATION_PARAMS`, `nvos.h`). `flags`, `attr`, `attr2` and `type_` take
/// [`super::alloc_flags::nvos32_alloc_flags`], [`super::alloc_flags::nvos32_attr`],
/// [`super::alloc_flags::nvos32_attr2`] and [`super::alloc_flags::nvos32_type`].
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MemoryAllocParams {
    /// `owner`: owner id (conventionally the client handle).
    pub owner: u32,
    /// `type`: surface type.
    pub type_: u32,
    /// `flags`.
    pub flags: u32,
    /// `width`.
    pub width: u32,
    /// `height`.
    pub height: u32,
    /// `pitch`.
    pub pitch: i32,
    /// `attr`.
    pub attr: u32,
    /// `attr2`.
    pub attr2: u32,
    /// `format`: page kind.
    pub format: u32,
    /// `comprCovg`.
    pub compr_covg: u32,
    /// `zcullCovg`.
    pub zcull_covg: u32,
    /// Padding before `rangeLo`.
    pub _pad0: u32,
    /// `rangeLo`.
    pub range_lo: u64,
    /// `rangeHi`.
    pub range_hi: u64,
    /// `size`: bytes (in/out).
    pub size: u64,
    /// `alignment`: with `ALIGNMENT_FORCE`/`_HINT`.
    pub alignment: u64,
    /// `offset`: in with `FIXED_ADDRESS_ALLOCATE`, out the offset chosen.
    pub offset: u64,
    /// `limit`: out, last byte.
    pub limit: u64,
    /// `address`: out.
    pub address: NvP64,
    /// `ctagOffset`.
    pub ctag_offset: u32,
    /// `hVASpace`: for `VIRTUAL` allocations.
    pub h_va_space: NvHandle,
    /// `internalflags`.
    pub internal_flags: u32,
    /// `tag`: debugging tag.
    pub tag: u32,
    /// `numaNode`.
    pub numa_node: i32,
    /// Tail padding.
    pub _pad1: u32,
}

/// Parameters for OS-described memory, `NV01_MEMORY_SYSTEM_OS_DESCRIPTOR`
/// (`NV_OS_DESC_MEMORY_ALLOCATION_PARAMS`, `nvos.h`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct OsDescMemoryAllocParams {
    /// `type`: surface type.
    pub type_: u32,
    /// `flags`: NVOS32 alloc flags.
    pub flags: u32,
    /// `attr`: NVOS32 attributes.
    pub attr: u32,
    /// `attr2`: NVOS32 attributes 2.
    pub attr2: u32,
    /// `descriptor`: the CPU address (for `DESCRIPTOR_TYPE_VIRTUAL_ADDRESS`).
    pub descriptor: NvP64,
    /// `limit`: size minus one.
    pub limit: u64,
    /// `descriptorType`: [`super::alloc_flags::nvos32_descriptor_type`].
    pub descriptor_type: u32,
    /// `tag`.
    pub tag: u32,
}

/// Parameters for the debugger, `GT200_DEBUGGER` (`NV83DE_ALLOC_PARAMETERS`,
/// `class/cl83de.h`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct DebuggerAllocParams {
    /// `hDebuggerClient_Obsolete`: must be zero.
    pub h_debugger_client_obsolete: NvHandle,
    /// `hAppClient`: the client owning the debugged objects.
    pub h_app_client: NvHandle,
    /// `hClass3dObject`: the compute (or 3D) object to debug.
    pub h_class3d_object: NvHandle,
}

/// Parameters for `HOPPER_USERMODE_A` (`NV_HOPPER_USERMODE_A_PARAMS`, `nvos.h`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct HopperUsermodeAllocParams {
    /// `bBar1Mapping` (`NvBool`): map through BAR1 rather than BAR0.
    pub b_bar1_mapping: u8,
    /// `bPriv` (`NvBool`): the privileged page rather than the VF page.
    pub b_priv: u8,
}
