//! Typed commands the CPU sends to GSP-RM, each encoded to its RPC payload (the bytes after
//! the RPC header). Queueing them is [`crate::msgq::RpcQueue`]'s job.
//!
//! Each constructor names the OpenRM function (`src/nvidia/src/kernel/vgpu/rpc.c`) whose
//! message it reproduces.

use alloc::vec::Vec;
use core::fmt;

use crate::abi::{
    GspStaticConfigInfo, GspSystemInfo, Nv0080CtrlDmaSetPageDirectoryParams, PteDesc,
    RpcAllocMemory, RpcFunction, RpcGspRmAlloc, RpcGspRmControl, RpcSetPageDirectory,
    RpcUnloadingGuestDriver,
};
use crate::registry::RegistryTable;
use crate::rm::nvos::FreeParams;
use zerocopy::{FromZeros, IntoBytes};

/// `NV_VGPU_PTEDESC_IDR_NONE`: `pte_pde[]` holds PTEs (page frame numbers).
pub const PTEDESC_IDR_NONE: u32 = 0;
/// `__GPU_STATE_FLAGS_FAST_UNLOAD`, the `newLevel` tinygrad and OpenRM's fast-unload path use.
pub const GPU_STATE_FLAGS_FAST_UNLOAD: u32 = 1 << 6;

/// What the CPU knows about the PCI function, for `GSP_SET_SYSTEM_INFO`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemInfoInputs {
    /// BAR0 bus address (`gpuPhysAddr`).
    pub bar0: u64,
    /// BAR1 (VRAM aperture) bus address (`gpuPhysFbAddr`).
    pub bar1: u64,
    /// BAR3/instance-memory bus address (`gpuPhysInstAddr`).
    pub bar3: u64,
    /// PCI domain/bus/device/function as `bus << 8 | dev << 3 | fn` (`nvDomainBusDeviceFunc`).
    pub bdf: u64,
    /// Config dword 0: vendor id | device id << 16 (`PCIDeviceID`).
    pub pci_device_id: u32,
    /// Config dword 0x2c: subsystem vendor | subsystem id << 16 (`PCISubDeviceID`).
    pub pci_sub_device_id: u32,
    /// Config byte 8 (`PCIRevisionID`).
    pub pci_revision_id: u32,
    /// Where GSP-RM finds the PCI config mirror in BAR0: 0x88000, or 0x92000 on the FSP
    /// (Hopper/Blackwell) path.
    pub pci_config_mirror_base: u32,
    /// `bIsPassthru`: the GPU is passed through to a virtual machine this driver runs in.
    /// OpenRM sets it only when it detects a hypervisor and runs as its HVM guest
    /// (`gpuSetupVirtualGuestOwnedHW`, gpu.c); nouveau leaves it 0; tinygrad sends 1.
    pub passthrough: bool,
}

impl SystemInfoInputs {
    /// The `GspSystemInfo` nvbare sends: the fields above, mirror size 4 KiB,
    /// `maxUserVa` 0x7ffffffff000; everything else zero.
    pub fn to_system_info(&self) -> GspSystemInfo {
        let mut s = GspSystemInfo::new_zeroed();
        s.gpu_phys_addr = self.bar0;
        s.gpu_phys_fb_addr = self.bar1;
        s.gpu_phys_inst_addr = self.bar3;
        s.nv_domain_bus_device_func = self.bdf;
        s.max_user_va = 0x7fff_ffff_f000;
        s.pci_config_mirror_base = self.pci_config_mirror_base;
        s.pci_config_mirror_size = 0x1000;
        s.pci_device_id = self.pci_device_id;
        s.pci_sub_device_id = self.pci_sub_device_id;
        s.pci_revision_id = self.pci_revision_id;
        s.b_is_passthru = u8::from(self.passthrough);
        s
    }
}

/// One RPC ready to queue: the function number and its payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// `NV_VGPU_MSG_FUNCTION_*`.
    pub function: RpcFunction,
    /// Payload bytes (may exceed one message; the queue adds continuation records).
    pub payload: Vec<u8>,
}

/// Arguments that cannot be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandError {
    /// `paramsSize` does not fit in 32 bits.
    ParamsTooLarge { len: usize },
    /// `pte_desc.length` is 16 bits: at most 65535 pages per `ALLOC_MEMORY`.
    TooManyPages { count: usize },
    /// A page address not aligned to 4 KiB.
    UnalignedPage { addr: u64 },
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ParamsTooLarge { len } => write!(f, "RPC parameters of {len} bytes too large"),
            Self::TooManyPages { count } => {
                write!(f, "ALLOC_MEMORY with {count} pages (at most 65535)")
            }
            Self::UnalignedPage { addr } => write!(f, "page address {addr:#x} not 4 KiB aligned"),
        }
    }
}

impl core::error::Error for CommandError {}

fn with_params(fixed: &[u8], params: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(fixed.len() + params.len());
    v.extend_from_slice(fixed);
    v.extend_from_slice(params);
    v
}

fn params_size(params: &[u8]) -> Result<u32, CommandError> {
    u32::try_from(params.len()).map_err(|_| CommandError::ParamsTooLarge { len: params.len() })
}

/// Most bytes [`Command::reply_echo`] returns.
pub const REPLY_ECHO_MAX: usize = 16;

impl Command {
    /// The bytes at the start of the payload that GSP-RM's reply carries back unchanged and
    /// that tell this call from another of the same function: `hClient, hParent, hObject,
    /// hClass` of `GSP_RM_ALLOC`, `hClient, hObject, cmd` of `GSP_RM_CONTROL`, `hRoot,
    /// hObjectParent, hObjectOld` of `FREE`. The reply is the request's structure with its
    /// status (and parameters) filled in: `rpcRmApiAlloc_GSP` and `rpcRmApiControl_GSP`
    /// (`rpc.c`) read `rpc_params->status` and `rpc_params->params` from the reply in place
    /// of the request. Empty for other functions, whose replies are told apart by function
    /// alone. At most [`REPLY_ECHO_MAX`] bytes.
    pub fn reply_echo(&self) -> &[u8] {
        let n = match self.function {
            RpcFunction::GspRmAlloc => 16,
            RpcFunction::GspRmControl | RpcFunction::Free => 12,
            _ => 0,
        };
        self.payload.get(..n).unwrap_or_default()
    }

    /// `GSP_SET_SYSTEM_INFO` with a filled `GspSystemInfo` (`rpcGspSetSystemInfo_v17_00`).
    pub fn set_system_info(info: &GspSystemInfo) -> Self {
        Self {
            function: RpcFunction::GspSetSystemInfo,
            payload: info.as_bytes().to_vec(),
        }
    }

    /// `SET_REGISTRY` with a packed registry table (`rpcSetRegistry_v17_00`).
    pub fn set_registry(table: &RegistryTable) -> Self {
        Self {
            function: RpcFunction::SetRegistry,
            payload: table.encode(),
        }
    }

    /// `GSP_RM_ALLOC`: allocate `h_object` of class `h_class` under `h_parent`, with the
    /// class's allocation parameters (`rpcRmApiAlloc_GSP`).
    pub fn rm_alloc(
        h_client: u32,
        h_parent: u32,
        h_object: u32,
        h_class: u32,
        params: &[u8],
    ) -> Result<Self, CommandError> {
        let fixed = RpcGspRmAlloc {
            h_client,
            h_parent,
            h_object,
            h_class,
            status: 0,
            params_size: params_size(params)?,
            flags: 0,
            reserved: [0; 4],
        };
        Ok(Self {
            function: RpcFunction::GspRmAlloc,
            payload: with_params(fixed.as_bytes(), params),
        })
    }

    /// `GSP_RM_CONTROL`: control `cmd` on `h_object` with its parameter block
    /// (`rpcRmApiControl_GSP`).
    pub fn rm_control(
        h_client: u32,
        h_object: u32,
        cmd: u32,
        params: &[u8],
    ) -> Result<Self, CommandError> {
        let fixed = RpcGspRmControl {
            h_client,
            h_object,
            cmd,
            status: 0,
            params_size: params_size(params)?,
            flags: 0,
        };
        Ok(Self {
            function: RpcFunction::GspRmControl,
            payload: with_params(fixed.as_bytes(), params),
        })
    }

    /// `FREE`: free `h_object` (and everything under it) of client `h_client`, whose parent
    /// is `h_parent` (`rpc_free_v03_00`, an `NVOS00_PARAMETERS`; `rpcFree_v03_00`). Freeing
    /// the client itself (`h_object == h_client`) frees all it has.
    pub fn free(h_client: u32, h_parent: u32, h_object: u32) -> Self {
        let fixed = FreeParams {
            h_root: h_client,
            h_object_parent: h_parent,
            h_object_old: h_object,
            status: 0,
        };
        Self {
            function: RpcFunction::Free,
            payload: fixed.as_bytes().to_vec(),
        }
    }

    /// `ALLOC_MEMORY`: describe memory made of 4 KiB pages to GSP-RM
    /// (`rpcAllocMemory_v13_01` + `_issuePteDescRpc`): `pteDesc.idr = NONE`,
    /// `pteDesc.length = pageCount = pages.len()`, `pte_pde[i] = pages[i] >> 12`.
    /// `format` is the PTE kind (6 = generic memory, as tinygrad sends).
    #[allow(clippy::too_many_arguments)]
    pub fn alloc_memory(
        h_client: u32,
        h_device: u32,
        h_memory: u32,
        h_class: u32,
        flags: u32,
        format: u32,
        length: u64,
        pages: &[u64],
    ) -> Result<Self, CommandError> {
        let count = u16::try_from(pages.len())
            .map_err(|_| CommandError::TooManyPages { count: pages.len() })?;
        if let Some(&addr) = pages.iter().find(|a| *a & 0xfff != 0) {
            return Err(CommandError::UnalignedPage { addr });
        }
        let fixed = RpcAllocMemory {
            h_client,
            h_device,
            h_memory,
            h_class,
            flags,
            pte_adjust: 0,
            format,
            _pad0: 0,
            length,
            page_count: u32::from(count),
            _pad1: 0,
            pte_desc: PteDesc::new(PTEDESC_IDR_NONE, count),
        };
        let mut payload =
            Vec::with_capacity(core::mem::size_of::<RpcAllocMemory>() + pages.len() * 8);
        payload.extend_from_slice(fixed.as_bytes());
        for p in pages {
            payload.extend_from_slice(&(p >> 12).to_le_bytes());
        }
        Ok(Self {
            function: RpcFunction::AllocMemory,
            payload,
        })
    }

    /// `SET_PAGE_DIRECTORY`: point a VA space at our page-directory root
    /// (`rpcSetPageDirectory_v1E_05`).
    pub fn set_page_directory(
        h_client: u32,
        h_device: u32,
        pasid: u32,
        params: Nv0080CtrlDmaSetPageDirectoryParams,
    ) -> Self {
        let fixed = RpcSetPageDirectory {
            h_client,
            h_device,
            pasid,
            _pad0: 0,
            params,
        };
        Self {
            function: RpcFunction::SetPageDirectory,
            payload: fixed.as_bytes().to_vec(),
        }
    }

    /// `UNLOADING_GUEST_DRIVER`: tell GSP-RM to shut down (`rpcUnloadingGuestDriver_v1F_07`).
    pub fn unloading_guest_driver(
        in_pm_transition: bool,
        gc6_entering: bool,
        new_level: u32,
    ) -> Self {
        let fixed = RpcUnloadingGuestDriver {
            b_in_pm_transition: in_pm_transition.into(),
            b_gc6_entering: gc6_entering.into(),
            _pad0: [0; 2],
            new_level,
        };
        Self {
            function: RpcFunction::UnloadingGuestDriver,
            payload: fixed.as_bytes().to_vec(),
        }
    }

    /// `GET_GSP_STATIC_INFO`: a zeroed `GspStaticConfigInfo` that GSP-RM fills in its reply
    /// (`rpcGetGspStaticInfo_v14_00`).
    pub fn get_gsp_static_info() -> Self {
        Self {
            function: RpcFunction::GetGspStaticInfo,
            payload: GspStaticConfigInfo::new_zeroed().as_bytes().to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rm_alloc_layout() {
        let c = Command::rm_alloc(0xc1e00004, 0, 0xcf000000, 0x80, &[9; 12]).unwrap();
        assert_eq!(c.function.as_u32(), 103);
        assert_eq!(c.payload.len(), 32 + 12);
        assert_eq!(&c.payload[20..24], &12u32.to_le_bytes()); // paramsSize
        assert_eq!(&c.payload[32..], &[9; 12]);
    }

    #[test]
    fn alloc_memory_pte_desc() {
        let c = Command::alloc_memory(
            1,
            2,
            3,
            0x3e,
            0,
            6,
            0x3000,
            &[0x1000, 0x7000, 0x2_0000_0000],
        )
        .unwrap();
        let n = core::mem::size_of::<RpcAllocMemory>();
        // pteDesc bits: idr 0 | length 3 << 16
        assert_eq!(&c.payload[n - 8..n - 4], &(3u32 << 16).to_le_bytes());
        assert_eq!(&c.payload[n..n + 8], &1u64.to_le_bytes());
        assert_eq!(&c.payload[n + 16..], &0x20_0000u64.to_le_bytes());
        assert_eq!(
            Command::alloc_memory(1, 2, 3, 4, 0, 6, 0, &[0x1001]),
            Err(CommandError::UnalignedPage { addr: 0x1001 })
        );
        assert!(Command::alloc_memory(1, 2, 3, 4, 0, 6, 0, &alloc::vec![0; 70000]).is_err());
    }

    #[test]
    fn replies_are_told_apart_by_the_handles_and_command_they_echo() {
        let a = Command::rm_alloc(1, 2, 3, 0x80, &[9; 12]).unwrap();
        let echo: Vec<u8> = [1u32, 2, 3, 0x80]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        assert_eq!(a.reply_echo(), &echo[..]);
        let c = Command::rm_control(1, 5, 0x2080_0a2a, &[0; 8]).unwrap();
        let echo: Vec<u8> = [1u32, 5, 0x2080_0a2a]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        assert_eq!(c.reply_echo(), &echo[..]);
        assert_eq!(Command::free(1, 2, 3).reply_echo().len(), 12);
        assert!(Command::get_gsp_static_info().reply_echo().is_empty());
        for c in [a, c] {
            assert!(c.reply_echo().len() <= REPLY_ECHO_MAX);
        }
    }

    #[test]
    fn free_payload_is_nvos00() {
        let c = Command::free(0xc1d0_0000, 0xcf00_0001, 0xcf00_0002);
        assert_eq!(c.function.as_u32(), 10);
        assert_eq!(c.payload.len(), 16);
        assert_eq!(&c.payload[..4], &0xc1d0_0000u32.to_le_bytes());
        assert_eq!(&c.payload[8..12], &0xcf00_0002u32.to_le_bytes());
        assert_eq!(&c.payload[12..], &[0; 4], "status, set by GSP-RM");
    }

    #[test]
    fn unloading_guest_driver_payload() {
        let c = Command::unloading_guest_driver(false, false, GPU_STATE_FLAGS_FAST_UNLOAD);
        assert_eq!(c.payload, [0, 0, 0, 0, 0x40, 0, 0, 0]);
    }
}
