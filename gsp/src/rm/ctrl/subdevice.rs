//! GPU-level controls on the subdevice: name, GID (UUID), PCI ids, FIFO device-info table
//! (`ctrl2080gpu.h`, `ctrl2080bus.h`, `ctrl2080fifo.h`). All the same in 570.144 and
//! 580.142. Graphics controls are in [`super::gr`], framebuffer controls in [`super::fb`].

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::zeroed_default;
use crate::rm::field::BitField;

/// `NV2080_GPU_MAX_NAME_STRING_LENGTH`.
pub const GPU_MAX_NAME_STRING_LENGTH: usize = 0x40;
/// `NV2080_GPU_MAX_GID_LENGTH`.
pub const GPU_MAX_GID_LENGTH: usize = 0x100;
/// `NV2080_GPU_MAX_SHA1_BINARY_GID_LENGTH`: a binary GID (the GPU UUID) is 16 bytes.
pub const GPU_SHA1_BINARY_GID_LENGTH: usize = 0x10;
/// `NV2080_CTRL_FIFO_GET_DEVICE_INFO_TABLE_MAX_ENTRIES`.
pub const DEVICE_INFO_TABLE_MAX_ENTRIES: usize = 32;
/// `NV2080_CTRL_FIFO_GET_DEVICE_INFO_TABLE_MAX_DEVICES` (`ctrl2080fifo.h`): the most entries
/// the whole table can have.
pub const DEVICE_INFO_TABLE_MAX_DEVICES: u32 = 256;
/// `NV2080_CTRL_FIFO_GET_DEVICE_INFO_TABLE_ENGINE_DATA_TYPES`.
pub const DEVICE_INFO_ENGINE_DATA_TYPES: usize = 16;
/// `NV2080_CTRL_FIFO_GET_DEVICE_INFO_TABLE_ENGINE_MAX_PBDMA`.
pub const DEVICE_INFO_ENGINE_MAX_PBDMA: usize = 2;
/// `NV2080_CTRL_FIFO_GET_DEVICE_INFO_TABLE_ENGINE_MAX_NAME_LEN`.
pub const DEVICE_INFO_ENGINE_MAX_NAME_LEN: usize = 16;

/// `NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS` (`ctrl2080gpu.h`). The C union of an ASCII
/// and a UTF-16 name is kept as its raw bytes; [`GpuNameStringParams::ascii`] reads the
/// ASCII form.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct GpuNameStringParams {
    /// `gpuNameStringFlags`: [`GpuNameStringParams::FLAGS_TYPE_ASCII`] or `_UNICODE`.
    pub gpu_name_string_flags: u32,
    /// `gpuNameString`: `ascii[64]` or `unicode[64]` (u16).
    pub gpu_name_string: [u8; 2 * GPU_MAX_NAME_STRING_LENGTH],
}

impl GpuNameStringParams {
    /// `NV2080_CTRL_GPU_GET_NAME_STRING_FLAGS_TYPE_ASCII`.
    pub const FLAGS_TYPE_ASCII: u32 = 0;
    /// `NV2080_CTRL_GPU_GET_NAME_STRING_FLAGS_TYPE_UNICODE`.
    pub const FLAGS_TYPE_UNICODE: u32 = 1;

    /// The name, when asked for as ASCII (e.g. "NVIDIA H200").
    pub fn ascii(&self) -> Option<&str> {
        core::str::from_utf8(crate::until_nul(
            &self.gpu_name_string[..GPU_MAX_NAME_STRING_LENGTH],
        ))
        .ok()
    }
}

/// `NV2080_CTRL_GPU_GET_GID_INFO_PARAMS` (`ctrl2080gpu.h`): the GPU's globally unique id;
/// with [`gid_flags::FORMAT_BINARY`] the first 16 bytes of `data` are the UUID.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct GidInfoParams {
    /// `index`: reserved, 0.
    pub index: u32,
    /// `flags`: [`gid_flags`].
    pub flags: u32,
    /// `length`: bytes of `data` used (out).
    pub length: u32,
    /// `data`.
    pub data: [u8; GPU_MAX_GID_LENGTH],
}

impl GidInfoParams {
    /// The binary UUID, when `length` says 16 bytes were returned.
    pub fn binary_uuid(&self) -> Option<[u8; GPU_SHA1_BINARY_GID_LENGTH]> {
        if self.length as usize != GPU_SHA1_BINARY_GID_LENGTH {
            return None;
        }
        let mut uuid = [0; GPU_SHA1_BINARY_GID_LENGTH];
        uuid.copy_from_slice(&self.data[..GPU_SHA1_BINARY_GID_LENGTH]);
        Some(uuid)
    }
}

/// `NV2080_GPU_CMD_GPU_GET_GID_FLAGS_*`.
pub mod gid_flags {
    use super::BitField;

    /// `..._FORMAT` 1:0.
    pub const FORMAT: BitField = BitField::word32(1, 0);
    /// `..._FORMAT_ASCII`: "GPU-xxxxxxxx-…".
    pub const FORMAT_ASCII: u32 = 0;
    /// `..._FORMAT_BINARY`: 16 raw bytes.
    pub const FORMAT_BINARY: u32 = 2;
    /// `..._TYPE` 2:2.
    pub const TYPE: BitField = BitField::word32(2, 2);
    /// `..._TYPE_SHA1`.
    pub const TYPE_SHA1: u32 = 0;
}

/// `NV2080_CTRL_BUS_GET_PCI_INFO_PARAMS` (`ctrl2080bus.h`). Each id packs the vendor in
/// the low 16 bits and the device (or subsystem) in the high 16.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct PciInfoParams {
    /// `pciDeviceId`.
    pub pci_device_id: u32,
    /// `pciSubSystemId`.
    pub pci_sub_system_id: u32,
    /// `pciRevisionId`.
    pub pci_revision_id: u32,
    /// `pciExtDeviceId`.
    pub pci_ext_device_id: u32,
}

/// `NV2080_CTRL_FIFO_DEVICE_ENTRY` (`ctrl2080fifo.h`): one engine of the device-info
/// table; `engine_data` is indexed by [`engine_data_index`].
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct FifoDeviceEntry {
    /// `engineData`.
    pub engine_data: [u32; DEVICE_INFO_ENGINE_DATA_TYPES],
    /// `pbdmaIds`.
    pub pbdma_ids: [u32; DEVICE_INFO_ENGINE_MAX_PBDMA],
    /// `pbdmaFaultIds`.
    pub pbdma_fault_ids: [u32; DEVICE_INFO_ENGINE_MAX_PBDMA],
    /// `numPbdmas`.
    pub num_pbdmas: u32,
    /// `engineName`: NUL-terminated.
    pub engine_name: [u8; DEVICE_INFO_ENGINE_MAX_NAME_LEN],
}

/// `NV2080_CTRL_FIFO_GET_DEVICE_INFO_TABLE_PARAMS` (`ctrl2080fifo.h`): read from
/// `base_index`; `b_more` says whether to call again.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct FifoDeviceInfoTableParams {
    /// `baseIndex`: in.
    pub base_index: u32,
    /// `numEntries`: out.
    pub num_entries: u32,
    /// `bMore` (`NvBool`): out.
    pub b_more: u8,
    /// Padding before `entries`.
    pub _pad0: [u8; 3],
    /// `entries`.
    pub entries: [FifoDeviceEntry; DEVICE_INFO_TABLE_MAX_ENTRIES],
}

impl FifoDeviceInfoTableParams {
    /// The entries returned; a count beyond the array is clamped to it.
    pub fn returned(&self) -> &[FifoDeviceEntry] {
        let n = (self.num_entries as usize).min(DEVICE_INFO_TABLE_MAX_ENTRIES);
        &self.entries[..n]
    }
}

/// Indices of [`FifoDeviceEntry::engine_data`]: RM's `ENGINE_INFO_TYPE` enum (from the
/// generated `g_kernel_fifo_nvoc.h`, which the reference tree does not include; NVIDIA
/// marks its order as fixed for vGPU compatibility). tinygrad reads `[2]` and `[3]` to map
/// an engine type to its runlist.
pub mod engine_data_index {
    /// `ENGINE_INFO_TYPE_ENG_DESC`.
    pub const ENG_DESC: usize = 0;
    /// `ENGINE_INFO_TYPE_FIFO_TAG`: the HW engine id.
    pub const FIFO_TAG: usize = 1;
    /// `ENGINE_INFO_TYPE_RM_ENGINE_TYPE`.
    pub const RM_ENGINE_TYPE: usize = 2;
    /// `ENGINE_INFO_TYPE_RUNLIST`: the runlist id.
    pub const RUNLIST: usize = 3;
    /// `ENGINE_INFO_TYPE_MMU_FAULT_ID`.
    pub const MMU_FAULT_ID: usize = 4;
    /// `ENGINE_INFO_TYPE_RUNLIST_PRI_BASE`.
    pub const RUNLIST_PRI_BASE: usize = 11;
    /// `ENGINE_INFO_TYPE_RUNLIST_ENGINE_ID`.
    pub const RUNLIST_ENGINE_ID: usize = 13;
    /// `ENGINE_INFO_TYPE_CHRAM_PRI_BASE`.
    pub const CHRAM_PRI_BASE: usize = 14;
}

zeroed_default!(GpuNameStringParams, GidInfoParams);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_uuid_needs_exactly_sixteen_bytes() {
        let mut p = GidInfoParams::default();
        p.data[..16].copy_from_slice(&[7; 16]);
        assert_eq!(p.binary_uuid(), None, "length 0");
        p.length = 16;
        assert_eq!(p.binary_uuid(), Some([7; 16]));
        p.length = 40;
        assert_eq!(p.binary_uuid(), None, "an ASCII GID is not a UUID");
    }

    #[test]
    fn name_string_reads_ascii_up_to_nul() {
        let mut p = GpuNameStringParams::default();
        p.gpu_name_string[..11].copy_from_slice(b"NVIDIA H200");
        assert_eq!(p.ascii(), Some("NVIDIA H200"));
    }

    #[test]
    fn device_info_returned_clamps_count() {
        let mut p = FifoDeviceInfoTableParams {
            num_entries: 3,
            ..Default::default()
        };
        assert_eq!(p.returned().len(), 3);
        p.num_entries = u32::MAX;
        assert_eq!(p.returned().len(), DEVICE_INFO_TABLE_MAX_ENTRIES);
    }
}
