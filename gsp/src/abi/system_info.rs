//! `GspSystemInfo`: the platform description the CPU pushes to GSP-RM at boot
//! (`NV_VGPU_MSG_FUNCTION_GSP_SET_SYSTEM_INFO`), and its member types.
//!
//! Header: `src/nvidia/inc/kernel/gpu/gsp/gsp_static_config.h`. Member types from files
//! missing in the trimmed reference tree are named with the header they live in upstream
//! (`platform/chipset/chipset.h` → `g_chipset_nvoc.h`, `gpu/gpu_acpi_data.h`).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS`, `ctrl/ctrl0073/ctrl0073system.h`.
pub const NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS: usize = 16;

/// Mirrors `BUSINFO`, `src/nvidia/generated/g_chipset_nvoc.h` (via `platform/chipset/chipset.h`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct BusInfo {
    /// `deviceID`.
    pub device_id: u16,
    /// `vendorID`.
    pub vendor_id: u16,
    /// `subdeviceID`.
    pub subdevice_id: u16,
    /// `subvendorID`.
    pub subvendor_id: u16,
    /// `revisionID`.
    pub revision_id: u8,
    /// Tail padding.
    pub _pad0: u8,
}

/// Mirrors `DOD_METHOD_DATA`, `src/nvidia/inc/kernel/gpu/gpu_acpi_data.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct DodMethodData {
    /// `status` (`NV_STATUS`).
    pub status: u32,
    /// `acpiIdListLen`.
    pub acpi_id_list_len: u32,
    /// `acpiIdList[NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS]`.
    pub acpi_id_list: [u32; NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS],
}

/// Mirrors `JT_METHOD_DATA`, `gpu/gpu_acpi_data.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct JtMethodData {
    /// `status` (`NV_STATUS`).
    pub status: u32,
    /// `jtCaps`.
    pub jt_caps: u32,
    /// `jtRevId`.
    pub jt_rev_id: u16,
    /// `bSBIOSCaps` (`NvBool`).
    pub b_sbios_caps: u8,
    /// Tail padding.
    pub _pad0: u8,
}

/// Mirrors `MUX_METHOD_DATA_ELEMENT`, `gpu/gpu_acpi_data.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct MuxMethodDataElement {
    /// `acpiId`.
    pub acpi_id: u32,
    /// `mode`.
    pub mode: u32,
    /// `status` (`NV_STATUS`).
    pub status: u32,
}

/// Mirrors `MUX_METHOD_DATA`, `gpu/gpu_acpi_data.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct MuxMethodData {
    /// `tableLen`.
    pub table_len: u32,
    /// `acpiIdMuxModeTable[NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS]`.
    pub acpi_id_mux_mode_table: [MuxMethodDataElement; NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS],
    /// `acpiIdMuxPartTable[NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS]`.
    pub acpi_id_mux_part_table: [MuxMethodDataElement; NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS],
    /// `acpiIdMuxStateTable[NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS]`.
    pub acpi_id_mux_state_table:
        [MuxMethodDataElement; NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS],
}

/// Mirrors `CAPS_METHOD_DATA`, `gpu/gpu_acpi_data.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct CapsMethodData {
    /// `status` (`NV_STATUS`).
    pub status: u32,
    /// `optimusCaps`.
    pub optimus_caps: u32,
}

/// Mirrors `ACPI_METHOD_DATA`, `gpu/gpu_acpi_data.h`: cached ACPI method results
/// (all zero on a platform without them).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct AcpiMethodData {
    /// `bValid` (`NvBool`).
    pub b_valid: u8,
    /// Padding before `dodMethodData`.
    pub _pad0: [u8; 3],
    /// `dodMethodData`.
    pub dod_method_data: DodMethodData,
    /// `jtMethodData`.
    pub jt_method_data: JtMethodData,
    /// `muxMethodData`.
    pub mux_method_data: MuxMethodData,
    /// `capsMethodData`.
    pub caps_method_data: CapsMethodData,
}

/// Mirrors `GSP_VF_INFO`, `gsp_static_config.h`: SR-IOV virtual-function layout.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspVfInfo {
    /// `totalVFs`.
    pub total_vfs: u32,
    /// `firstVFOffset`.
    pub first_vf_offset: u32,
    /// `FirstVFBar0Address`.
    pub first_vf_bar0_address: u64,
    /// `FirstVFBar1Address`.
    pub first_vf_bar1_address: u64,
    /// `FirstVFBar2Address`.
    pub first_vf_bar2_address: u64,
    /// `b64bitBar0` (`NvBool`).
    pub b64bit_bar0: u8,
    /// `b64bitBar1` (`NvBool`).
    pub b64bit_bar1: u8,
    /// `b64bitBar2` (`NvBool`).
    pub b64bit_bar2: u8,
    /// Tail padding.
    pub _pad0: [u8; 5],
}

/// Mirrors `GSP_PCIE_CONFIG_REG`, `gsp_static_config.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspPcieConfigReg {
    /// `linkCap`: the PCIe link capabilities register.
    pub link_cap: u32,
}

/// Mirrors `GspSystemInfo`, `gsp_static_config.h` (928 bytes in 570.144).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspSystemInfo {
    /// `gpuPhysAddr`: BAR0 bus address.
    pub gpu_phys_addr: u64,
    /// `gpuPhysFbAddr`: BAR1 bus address.
    pub gpu_phys_fb_addr: u64,
    /// `gpuPhysInstAddr`: BAR2/BAR3 bus address.
    pub gpu_phys_inst_addr: u64,
    /// `gpuPhysIoAddr`.
    pub gpu_phys_io_addr: u64,
    /// `nvDomainBusDeviceFunc`: PCI domain/bus/device/function.
    pub nv_domain_bus_device_func: u64,
    /// `simAccessBufPhysAddr`.
    pub sim_access_buf_phys_addr: u64,
    /// `notifyOpSharedSurfacePhysAddr`.
    pub notify_op_shared_surface_phys_addr: u64,
    /// `pcieAtomicsOpMask`.
    pub pcie_atomics_op_mask: u64,
    /// `consoleMemSize`.
    pub console_mem_size: u64,
    /// `maxUserVa`.
    pub max_user_va: u64,
    /// `pciConfigMirrorBase`.
    pub pci_config_mirror_base: u32,
    /// `pciConfigMirrorSize`.
    pub pci_config_mirror_size: u32,
    /// `PCIDeviceID`.
    pub pci_device_id: u32,
    /// `PCISubDeviceID`.
    pub pci_sub_device_id: u32,
    /// `PCIRevisionID`.
    pub pci_revision_id: u32,
    /// `pcieAtomicsCplDeviceCapMask`.
    pub pcie_atomics_cpl_device_cap_mask: u32,
    /// `oorArch`.
    pub oor_arch: u8,
    /// Padding before `clPdbProperties`.
    pub _pad0: [u8; 7],
    /// `clPdbProperties`.
    pub cl_pdb_properties: u64,
    /// `Chipset`.
    pub chipset: u32,
    /// `bGpuBehindBridge` (`NvBool`).
    pub b_gpu_behind_bridge: u8,
    /// `bFlrSupported`.
    pub b_flr_supported: u8,
    /// `b64bBar0Supported`.
    pub b64b_bar0_supported: u8,
    /// `bMnocAvailable`.
    pub b_mnoc_available: u8,
    /// `chipsetL1ssEnable`.
    pub chipset_l1ss_enable: u32,
    /// `bUpstreamL0sUnsupported`.
    pub b_upstream_l0s_unsupported: u8,
    /// `bUpstreamL1Unsupported`.
    pub b_upstream_l1_unsupported: u8,
    /// `bUpstreamL1PorSupported`.
    pub b_upstream_l1_por_supported: u8,
    /// `bUpstreamL1PorMobileOnly`.
    pub b_upstream_l1_por_mobile_only: u8,
    /// `bSystemHasMux`.
    pub b_system_has_mux: u8,
    /// `upstreamAddressValid`.
    pub upstream_address_valid: u8,
    /// `FHBBusInfo`.
    pub fhb_bus_info: BusInfo,
    /// `chipsetIDInfo`.
    pub chipset_id_info: BusInfo,
    /// Padding before `acpiMethodData`.
    pub _pad1: [u8; 2],
    /// `acpiMethodData`.
    pub acpi_method_data: AcpiMethodData,
    /// `hypervisorType`.
    pub hypervisor_type: u32,
    /// `bIsPassthru`.
    pub b_is_passthru: u8,
    /// Padding before `sysTimerOffsetNs`.
    pub _pad2: [u8; 7],
    /// `sysTimerOffsetNs`.
    pub sys_timer_offset_ns: u64,
    /// `gspVFInfo`.
    pub gsp_vf_info: GspVfInfo,
    /// `bIsPrimary`.
    pub b_is_primary: u8,
    /// `isGridBuild`.
    pub is_grid_build: u8,
    /// Padding before `pcieConfigReg`.
    pub _pad3: [u8; 2],
    /// `pcieConfigReg`.
    pub pcie_config_reg: GspPcieConfigReg,
    /// `gridBuildCsp`.
    pub grid_build_csp: u32,
    /// `bPreserveVideoMemoryAllocations`.
    pub b_preserve_video_memory_allocations: u8,
    /// `bTdrEventSupported`.
    pub b_tdr_event_supported: u8,
    /// `bFeatureStretchVblankCapable`.
    pub b_feature_stretch_vblank_capable: u8,
    /// `bEnableDynamicGranularityPageArrays`.
    pub b_enable_dynamic_granularity_page_arrays: u8,
    /// `bClockBoostSupported`.
    pub b_clock_boost_supported: u8,
    /// `bRouteDispIntrsToCPU`.
    pub b_route_disp_intrs_to_cpu: u8,
    /// Padding before `hostPageSize`.
    pub _pad4: [u8; 6],
    /// `hostPageSize`.
    pub host_page_size: u64,
}
