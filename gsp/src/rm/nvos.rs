//! The RM API's entry-point parameter blocks (`NVOSxx_PARAMETERS` of `nvos.h`) and the
//! Unix escape numbers that carry them through `/dev/nvidiactl` (`nv_escape.h`).
//!
//! Every struct here is `#[repr(C)]` with the C layout spelled out, including the padding
//! the C compiler inserts (as `_pad*` fields, always zero), so each can be sent as bytes.
//! Layouts are checked against the headers by `nvbare-tests` (`tests/src/layout/rm.rs`).
//!
//! Only [`MapMemoryDmaParamsV570`] / [`MapMemoryDmaParamsV580`] (NVOS46) differ between
//! the 570.144 and 580.142 headers; the others are identical in both branches.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::field::BitField;

/// An RM object handle (`NvHandle`, `nvtypes.h`): a client-chosen 32-bit name.
pub type NvHandle = u32;

/// A pointer carried through the RM API (`NvP64`, `nvtypes.h`): always 64 bits wide and
/// 8-aligned, whatever the caller's pointer size.
pub type NvP64 = u64;

/// Escape numbers of the RM ioctls on `/dev/nvidiactl` (`NV_ESC_RM_*`,
/// `src/nvidia/arch/nvalloc/unix/include/nv_escape.h`; the same in 570.144 and 580.142).
///
/// The ioctl request is `_IOWR('F', escape, size_of(params))`.
pub mod escape {
    /// `NV_ESC_RM_ALLOC_MEMORY`: NVOS02 ([`super::AllocMemoryParams`], inside
    /// `nv_ioctl_nvos02_parameters_with_fd`).
    pub const RM_ALLOC_MEMORY: u32 = 0x27;
    /// `NV_ESC_RM_ALLOC_OBJECT`: NVOS05 (legacy object alloc).
    pub const RM_ALLOC_OBJECT: u32 = 0x28;
    /// `NV_ESC_RM_FREE`: NVOS00 ([`super::FreeParams`]).
    pub const RM_FREE: u32 = 0x29;
    /// `NV_ESC_RM_CONTROL`: NVOS54 ([`super::ControlParams`]).
    pub const RM_CONTROL: u32 = 0x2A;
    /// `NV_ESC_RM_ALLOC`: NVOS21 ([`super::AllocParams`]) or NVOS64.
    pub const RM_ALLOC: u32 = 0x2B;
    /// `NV_ESC_RM_CONFIG_GET`.
    pub const RM_CONFIG_GET: u32 = 0x32;
    /// `NV_ESC_RM_CONFIG_SET`.
    pub const RM_CONFIG_SET: u32 = 0x33;
    /// `NV_ESC_RM_DUP_OBJECT`: NVOS55.
    pub const RM_DUP_OBJECT: u32 = 0x34;
    /// `NV_ESC_RM_SHARE`: NVOS57.
    pub const RM_SHARE: u32 = 0x35;
    /// `NV_ESC_RM_CONFIG_GET_EX`.
    pub const RM_CONFIG_GET_EX: u32 = 0x37;
    /// `NV_ESC_RM_CONFIG_SET_EX`.
    pub const RM_CONFIG_SET_EX: u32 = 0x38;
    /// `NV_ESC_RM_I2C_ACCESS`.
    pub const RM_I2C_ACCESS: u32 = 0x39;
    /// `NV_ESC_RM_IDLE_CHANNELS`: NVOS30.
    pub const RM_IDLE_CHANNELS: u32 = 0x41;
    /// `NV_ESC_RM_VID_HEAP_CONTROL`: NVOS32.
    pub const RM_VID_HEAP_CONTROL: u32 = 0x4A;
    /// `NV_ESC_RM_ACCESS_REGISTRY`: NVOS38.
    pub const RM_ACCESS_REGISTRY: u32 = 0x4D;
    /// `NV_ESC_RM_MAP_MEMORY`: NVOS33 ([`super::MapMemoryParams`], inside
    /// `nv_ioctl_nvos33_parameters_with_fd`).
    pub const RM_MAP_MEMORY: u32 = 0x4E;
    /// `NV_ESC_RM_UNMAP_MEMORY`: NVOS34 ([`super::UnmapMemoryParams`]).
    pub const RM_UNMAP_MEMORY: u32 = 0x4F;
    /// `NV_ESC_RM_GET_EVENT_DATA`: NVOS41.
    pub const RM_GET_EVENT_DATA: u32 = 0x52;
    /// `NV_ESC_RM_ALLOC_CONTEXT_DMA2`: NVOS39.
    pub const RM_ALLOC_CONTEXT_DMA2: u32 = 0x54;
    /// `NV_ESC_RM_ADD_VBLANK_CALLBACK`: NVOS61.
    pub const RM_ADD_VBLANK_CALLBACK: u32 = 0x56;
    /// `NV_ESC_RM_MAP_MEMORY_DMA`: NVOS46 ([`super::MapMemoryDmaParamsV580`] on 580.x).
    pub const RM_MAP_MEMORY_DMA: u32 = 0x57;
    /// `NV_ESC_RM_UNMAP_MEMORY_DMA`: NVOS47 ([`super::UnmapMemoryDmaParams`]).
    pub const RM_UNMAP_MEMORY_DMA: u32 = 0x58;
    /// `NV_ESC_RM_BIND_CONTEXT_DMA`: NVOS49.
    pub const RM_BIND_CONTEXT_DMA: u32 = 0x59;
    /// `NV_ESC_RM_EXPORT_OBJECT_TO_FD`.
    pub const RM_EXPORT_OBJECT_TO_FD: u32 = 0x5C;
    /// `NV_ESC_RM_IMPORT_OBJECT_FROM_FD`.
    pub const RM_IMPORT_OBJECT_FROM_FD: u32 = 0x5D;
    /// `NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO`.
    pub const RM_UPDATE_DEVICE_MAPPING_INFO: u32 = 0x5E;
    /// `NV_ESC_RM_LOCKLESS_DIAGNOSTIC`.
    pub const RM_LOCKLESS_DIAGNOSTIC: u32 = 0x5F;
}

/// Parameters of `NvRmFree` (`NVOS00_PARAMETERS`, `nvos.h`): free one object and its
/// children.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct FreeParams {
    /// `hRoot`: the client.
    pub h_root: NvHandle,
    /// `hObjectParent`: the parent of the object freed.
    pub h_object_parent: NvHandle,
    /// `hObjectOld`: the object freed.
    pub h_object_old: NvHandle,
    /// `status`: an `NV_STATUS` on return.
    pub status: u32,
}

/// Parameters of `NvRmAllocMemory64` (`NVOS02_PARAMETERS`, `nvos.h`): allocate memory of
/// class `h_class` (e.g. `NV01_MEMORY_SYSTEM_OS_DESCRIPTOR`), flags from [`nvos02_flags`].
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct AllocMemoryParams {
    /// `hRoot`: the client.
    pub h_root: NvHandle,
    /// `hObjectParent`: the device.
    pub h_object_parent: NvHandle,
    /// `hObjectNew`: the handle to create.
    pub h_object_new: NvHandle,
    /// `hClass`: the memory class.
    pub h_class: u32,
    /// `flags`: [`nvos02_flags`].
    pub flags: u32,
    /// Padding before `pMemory`.
    pub _pad0: u32,
    /// `pMemory`: in, the CPU address for OS descriptors; out, a CPU mapping where made.
    pub p_memory: NvP64,
    /// `limit`: size in bytes minus one.
    pub limit: u64,
    /// `status`: an `NV_STATUS` on return.
    pub status: u32,
    /// Tail padding.
    pub _pad1: u32,
}

/// Parameters of `NvRmAlloc` (`NVOS21_PARAMETERS`, `nvos.h`): allocate an object of
/// class `h_class` under `h_object_parent`, with a class-specific parameter block.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct AllocParams {
    /// `hRoot`: the client (for a new client, the handle RM fills in).
    pub h_root: NvHandle,
    /// `hObjectParent`: the parent object.
    pub h_object_parent: NvHandle,
    /// `hObjectNew`: the handle to create (0: RM chooses, for clients).
    pub h_object_new: NvHandle,
    /// `hClass`: the class to instantiate.
    pub h_class: u32,
    /// `pAllocParms`: address of the class's parameter block (0 for none).
    pub p_alloc_parms: NvP64,
    /// `paramsSize`: size of that block in bytes.
    pub params_size: u32,
    /// `status`: an `NV_STATUS` on return.
    pub status: u32,
}

/// Parameters of `NvRmMapMemory` (`NVOS33_PARAMETERS`, `nvos.h`): map memory for CPU
/// access; on Linux the mapping is then made by `mmap` of the returned offset.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MapMemoryParams {
    /// `hClient`.
    pub h_client: NvHandle,
    /// `hDevice`: device or subdevice.
    pub h_device: NvHandle,
    /// `hMemory`: the memory object.
    pub h_memory: NvHandle,
    /// Padding before `offset`.
    pub _pad0: u32,
    /// `offset`: byte offset into the memory.
    pub offset: u64,
    /// `length`: bytes to map.
    pub length: u64,
    /// `pLinearAddress`: out, the address (the mmap offset on Linux).
    pub p_linear_address: NvP64,
    /// `status`: an `NV_STATUS` on return.
    pub status: u32,
    /// `flags`: [`nvos33_flags`].
    pub flags: u32,
}

/// Parameters of `NvRmUnmapMemory` (`NVOS34_PARAMETERS`, `nvos.h`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct UnmapMemoryParams {
    /// `hClient`.
    pub h_client: NvHandle,
    /// `hDevice`.
    pub h_device: NvHandle,
    /// `hMemory`.
    pub h_memory: NvHandle,
    /// Padding before `pLinearAddress`.
    pub _pad0: u32,
    /// `pLinearAddress`: the address [`MapMemoryParams`] returned.
    pub p_linear_address: NvP64,
    /// `status`: an `NV_STATUS` on return.
    pub status: u32,
    /// `flags`: [`nvos33_flags`].
    pub flags: u32,
}

/// Parameters of `NvRmMapMemoryDma` (`NVOS46_PARAMETERS`, `nvos.h`) as of the **570.144**
/// headers (56 bytes): map memory into a GPU VA space. The 580 branch inserted `flags2` and
/// `kindOverride`: see [`MapMemoryDmaParamsV580`].
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MapMemoryDmaParamsV570 {
    /// `hClient`.
    pub h_client: NvHandle,
    /// `hDevice`.
    pub h_device: NvHandle,
    /// `hDma`: the virtual memory object or VA space.
    pub h_dma: NvHandle,
    /// `hMemory`: the physical memory mapped.
    pub h_memory: NvHandle,
    /// `offset`: byte offset into `h_memory`.
    pub offset: u64,
    /// `length`: bytes to map.
    pub length: u64,
    /// `flags`: [`nvos46_flags`].
    pub flags: u32,
    /// Padding before `dmaOffset`.
    pub _pad0: u32,
    /// `dmaOffset`: out, the GPU VA; in, the VA when `DMA_OFFSET_FIXED`.
    pub dma_offset: u64,
    /// `status`: an `NV_STATUS` on return.
    pub status: u32,
    /// Tail padding.
    pub _pad1: u32,
}

/// Parameters of `NvRmMapMemoryDma` (`NVOS46_PARAMETERS`, `nvos.h`) as of the **580.142**
/// headers (64 bytes): [`MapMemoryDmaParamsV570`] plus `flags2` and `kindOverride`. This is
/// the layout the 580.x kernel driver (the H200 machine's 580.159.04) expects.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MapMemoryDmaParamsV580 {
    /// `hClient`.
    pub h_client: NvHandle,
    /// `hDevice`.
    pub h_device: NvHandle,
    /// `hDma`: the virtual memory object or VA space.
    pub h_dma: NvHandle,
    /// `hMemory`: the physical memory mapped.
    pub h_memory: NvHandle,
    /// `offset`: byte offset into `h_memory`.
    pub offset: u64,
    /// `length`: bytes to map.
    pub length: u64,
    /// `flags`: [`nvos46_flags`].
    pub flags: u32,
    /// `flags2`: [`nvos46_flags::FLAGS2_GPU_CACHE_SNOOP`] (580 only).
    pub flags2: u32,
    /// `kindOverride`: page kind used when `PAGE_KIND_OVERRIDE` is set (580 only).
    pub kind_override: u32,
    /// Padding before `dmaOffset`.
    pub _pad0: u32,
    /// `dmaOffset`: out, the GPU VA; in, the VA when `DMA_OFFSET_FIXED`.
    pub dma_offset: u64,
    /// `status`: an `NV_STATUS` on return.
    pub status: u32,
    /// Tail padding.
    pub _pad1: u32,
}

/// Parameters of `NvRmUnmapMemoryDma` (`NVOS47_PARAMETERS`, `nvos.h`; the same in 570.144
/// and 580.142).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct UnmapMemoryDmaParams {
    /// `hClient`.
    pub h_client: NvHandle,
    /// `hDevice`.
    pub h_device: NvHandle,
    /// `hDma`: the virtual memory object or VA space.
    pub h_dma: NvHandle,
    /// `hMemory`: the physical memory.
    pub h_memory: NvHandle,
    /// `flags`: `NVOS47_FLAGS_*`.
    pub flags: u32,
    /// Padding before `dmaOffset`.
    pub _pad0: u32,
    /// `dmaOffset`: the GPU VA the map returned.
    pub dma_offset: u64,
    /// `size`: bytes to unmap (0: the whole mapping).
    pub size: u64,
    /// `status`: an `NV_STATUS` on return.
    pub status: u32,
    /// Tail padding.
    pub _pad1: u32,
}

/// Parameters of `NvRmControl` (`NVOS54_PARAMETERS`, `nvos.h`): run control command `cmd`
/// on `h_object`, with a command-specific parameter block.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ControlParams {
    /// `hClient`.
    pub h_client: NvHandle,
    /// `hObject`: the object the command is addressed to.
    pub h_object: NvHandle,
    /// `cmd`: the control command (`NVxxxx_CTRL_CMD_*`, see [`super::ctrl`]).
    pub cmd: u32,
    /// `flags`: `NVOS54_FLAGS_*`.
    pub flags: u32,
    /// `params`: address of the parameter block.
    pub params: NvP64,
    /// `paramsSize`: its size in bytes.
    pub params_size: u32,
    /// `status`: an `NV_STATUS` on return.
    pub status: u32,
}

/// `NVOS54_FLAGS_*`: [`ControlParams::flags`].
pub mod nvos54_flags {
    /// `NVOS54_FLAGS_NONE`.
    pub const NONE: u32 = 0x0;
    /// `NVOS54_FLAGS_IRQL_RAISED`.
    pub const IRQL_RAISED: u32 = 0x1;
    /// `NVOS54_FLAGS_LOCK_BYPASS`.
    pub const LOCK_BYPASS: u32 = 0x2;
    /// `NVOS54_FLAGS_FINN_SERIALIZED`.
    pub const FINN_SERIALIZED: u32 = 0x4;
}

/// `NVOS02_FLAGS_*`: [`AllocMemoryParams::flags`] (fields and their values).
pub mod nvos02_flags {
    use super::BitField;

    /// `NVOS02_FLAGS_PHYSICALITY` 7:4.
    pub const PHYSICALITY: BitField = BitField::word32(7, 4);
    /// `NVOS02_FLAGS_PHYSICALITY_CONTIGUOUS`.
    pub const PHYSICALITY_CONTIGUOUS: u32 = 0;
    /// `NVOS02_FLAGS_PHYSICALITY_NONCONTIGUOUS`.
    pub const PHYSICALITY_NONCONTIGUOUS: u32 = 1;
    /// `NVOS02_FLAGS_LOCATION` 11:8.
    pub const LOCATION: BitField = BitField::word32(11, 8);
    /// `NVOS02_FLAGS_LOCATION_PCI`.
    pub const LOCATION_PCI: u32 = 0;
    /// `NVOS02_FLAGS_LOCATION_VIDMEM`.
    pub const LOCATION_VIDMEM: u32 = 2;
    /// `NVOS02_FLAGS_COHERENCY` 15:12.
    pub const COHERENCY: BitField = BitField::word32(15, 12);
    /// `NVOS02_FLAGS_COHERENCY_UNCACHED`.
    pub const COHERENCY_UNCACHED: u32 = 0;
    /// `NVOS02_FLAGS_COHERENCY_CACHED`.
    pub const COHERENCY_CACHED: u32 = 1;
    /// `NVOS02_FLAGS_COHERENCY_WRITE_COMBINE`.
    pub const COHERENCY_WRITE_COMBINE: u32 = 2;
    /// `NVOS02_FLAGS_COHERENCY_WRITE_BACK`.
    pub const COHERENCY_WRITE_BACK: u32 = 5;
    /// `NVOS02_FLAGS_GPU_CACHEABLE` 18:18.
    pub const GPU_CACHEABLE: BitField = BitField::word32(18, 18);
    /// `NVOS02_FLAGS_GPU_CACHEABLE_NO`.
    pub const GPU_CACHEABLE_NO: u32 = 0;
    /// `NVOS02_FLAGS_GPU_CACHEABLE_YES`.
    pub const GPU_CACHEABLE_YES: u32 = 1;
    /// `NVOS02_FLAGS_ALLOC_USER_READ_ONLY` 21:21.
    pub const ALLOC_USER_READ_ONLY: BitField = BitField::word32(21, 21);
    /// `NVOS02_FLAGS_ALLOC_DEVICE_READ_ONLY` 22:22.
    pub const ALLOC_DEVICE_READ_ONLY: BitField = BitField::word32(22, 22);
    /// `NVOS02_FLAGS_MAPPING` 31:30.
    pub const MAPPING: BitField = BitField::word32(31, 30);
    /// `NVOS02_FLAGS_MAPPING_DEFAULT`.
    pub const MAPPING_DEFAULT: u32 = 0;
    /// `NVOS02_FLAGS_MAPPING_NO_MAP`: RM makes no CPU mapping now; map later with NVOS33.
    pub const MAPPING_NO_MAP: u32 = 1;
    /// `NVOS02_FLAGS_MAPPING_NEVER_MAP`.
    pub const MAPPING_NEVER_MAP: u32 = 2;
}

/// `NVOS33_FLAGS_*`: [`MapMemoryParams::flags`] (fields and their values).
pub mod nvos33_flags {
    use super::BitField;

    /// `NVOS33_FLAGS_ACCESS` 1:0.
    pub const ACCESS: BitField = BitField::word32(1, 0);
    /// `NVOS33_FLAGS_ACCESS_READ_WRITE`.
    pub const ACCESS_READ_WRITE: u32 = 0;
    /// `NVOS33_FLAGS_ACCESS_READ_ONLY`.
    pub const ACCESS_READ_ONLY: u32 = 1;
    /// `NVOS33_FLAGS_ACCESS_WRITE_ONLY`.
    pub const ACCESS_WRITE_ONLY: u32 = 2;
    /// `NVOS33_FLAGS_MAPPING` 16:15.
    pub const MAPPING: BitField = BitField::word32(16, 15);
    /// `NVOS33_FLAGS_MAPPING_DEFAULT`.
    pub const MAPPING_DEFAULT: u32 = 0;
    /// `NVOS33_FLAGS_MAPPING_DIRECT`.
    pub const MAPPING_DIRECT: u32 = 1;
    /// `NVOS33_FLAGS_MAPPING_REFLECTED`.
    pub const MAPPING_REFLECTED: u32 = 2;
    /// `NVOS33_FLAGS_MAP_FIXED` 18:18.
    pub const MAP_FIXED: BitField = BitField::word32(18, 18);
    /// `NVOS33_FLAGS_OS_DESCRIPTOR` 22:22 (internal use).
    pub const OS_DESCRIPTOR: BitField = BitField::word32(22, 22);
    /// `NVOS33_FLAGS_CACHING_TYPE` 25:23: the PCIe BAR mapping's caching mode.
    pub const CACHING_TYPE: BitField = BitField::word32(25, 23);
    /// `NVOS33_FLAGS_CACHING_TYPE_CACHED`.
    pub const CACHING_TYPE_CACHED: u32 = 0;
    /// `NVOS33_FLAGS_CACHING_TYPE_UNCACHED`.
    pub const CACHING_TYPE_UNCACHED: u32 = 1;
    /// `NVOS33_FLAGS_CACHING_TYPE_WRITECOMBINED`.
    pub const CACHING_TYPE_WRITECOMBINED: u32 = 2;
    /// `NVOS33_FLAGS_CACHING_TYPE_WRITEBACK`.
    pub const CACHING_TYPE_WRITEBACK: u32 = 5;
    /// `NVOS33_FLAGS_CACHING_TYPE_DEFAULT`.
    pub const CACHING_TYPE_DEFAULT: u32 = 6;
    /// `NVOS33_FLAGS_CACHING_TYPE_UNCACHED_WEAK`.
    pub const CACHING_TYPE_UNCACHED_WEAK: u32 = 7;
}

/// `NVOS46_FLAGS_*` and `NVOS46_FLAGS2_*`: the `flags`/`flags2` words of
/// [`MapMemoryDmaParamsV570`] / [`MapMemoryDmaParamsV580`].
pub mod nvos46_flags {
    use super::BitField;

    /// `NVOS46_FLAGS_ACCESS` 1:0.
    pub const ACCESS: BitField = BitField::word32(1, 0);
    /// `NVOS46_FLAGS_ACCESS_READ_WRITE`.
    pub const ACCESS_READ_WRITE: u32 = 0;
    /// `NVOS46_FLAGS_ACCESS_READ_ONLY`.
    pub const ACCESS_READ_ONLY: u32 = 1;
    /// `NVOS46_FLAGS_PAGE_KIND` 3:3.
    pub const PAGE_KIND: BitField = BitField::word32(3, 3);
    /// `NVOS46_FLAGS_PAGE_KIND_PHYSICAL`.
    pub const PAGE_KIND_PHYSICAL: u32 = 0;
    /// `NVOS46_FLAGS_PAGE_KIND_VIRTUAL`.
    pub const PAGE_KIND_VIRTUAL: u32 = 1;
    /// `NVOS46_FLAGS_CACHE_SNOOP` 4:4.
    pub const CACHE_SNOOP: BitField = BitField::word32(4, 4);
    /// `NVOS46_FLAGS_CACHE_SNOOP_DISABLE`.
    pub const CACHE_SNOOP_DISABLE: u32 = 0;
    /// `NVOS46_FLAGS_CACHE_SNOOP_ENABLE`.
    pub const CACHE_SNOOP_ENABLE: u32 = 1;
    /// `NVOS46_FLAGS_SHADER_ACCESS` 7:6.
    pub const SHADER_ACCESS: BitField = BitField::word32(7, 6);
    /// `NVOS46_FLAGS_PAGE_SIZE` 11:8.
    pub const PAGE_SIZE: BitField = BitField::word32(11, 8);
    /// `NVOS46_FLAGS_PAGE_SIZE_DEFAULT`.
    pub const PAGE_SIZE_DEFAULT: u32 = 0;
    /// `NVOS46_FLAGS_PAGE_SIZE_4KB`.
    pub const PAGE_SIZE_4KB: u32 = 1;
    /// `NVOS46_FLAGS_PAGE_SIZE_BIG`.
    pub const PAGE_SIZE_BIG: u32 = 2;
    /// `NVOS46_FLAGS_PAGE_SIZE_BOTH`.
    pub const PAGE_SIZE_BOTH: u32 = 3;
    /// `NVOS46_FLAGS_PAGE_SIZE_HUGE`.
    pub const PAGE_SIZE_HUGE: u32 = 4;
    /// `NVOS46_FLAGS_PAGE_SIZE_512M`.
    pub const PAGE_SIZE_512M: u32 = 5;
    /// `NVOS46_FLAGS_DMA_OFFSET_GROWS` 14:14.
    pub const DMA_OFFSET_GROWS: BitField = BitField::word32(14, 14);
    /// `NVOS46_FLAGS_DMA_OFFSET_FIXED` 15:15: map at the given `dmaOffset`.
    pub const DMA_OFFSET_FIXED: BitField = BitField::word32(15, 15);
    /// `NVOS46_FLAGS_DMA_OFFSET_FIXED_FALSE`.
    pub const DMA_OFFSET_FIXED_FALSE: u32 = 0;
    /// `NVOS46_FLAGS_DMA_OFFSET_FIXED_TRUE`.
    pub const DMA_OFFSET_FIXED_TRUE: u32 = 1;
    /// `NVOS46_FLAGS_GPU_CACHEABLE` 18:17 (580 only; reserved in 570).
    pub const GPU_CACHEABLE: BitField = BitField::word32(18, 17);
    /// `NVOS46_FLAGS_GPU_CACHEABLE_DEFAULT`.
    pub const GPU_CACHEABLE_DEFAULT: u32 = 0;
    /// `NVOS46_FLAGS_GPU_CACHEABLE_YES`.
    pub const GPU_CACHEABLE_YES: u32 = 1;
    /// `NVOS46_FLAGS_GPU_CACHEABLE_NO`.
    pub const GPU_CACHEABLE_NO: u32 = 2;
    /// `NVOS46_FLAGS_PAGE_KIND_OVERRIDE` 19:19 (580 only).
    pub const PAGE_KIND_OVERRIDE: BitField = BitField::word32(19, 19);
    /// `NVOS46_FLAGS_DEFER_TLB_INVALIDATION` 31:31.
    pub const DEFER_TLB_INVALIDATION: BitField = BitField::word32(31, 31);
    /// `NVOS46_FLAGS2_GPU_CACHE_SNOOP` 1:0 of `flags2` (580 only).
    pub const FLAGS2_GPU_CACHE_SNOOP: BitField = BitField::word32(1, 0);
}
