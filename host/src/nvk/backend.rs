//! [`Nvk`]: one GPU opened through the kernel driver, as a `nvbare_core` backend. The RM
//! object tree, channels and everything above are core's; this is what only the kernel-driver
//! path does: the RM client and device files, UVM registration of the GPU, its VA space and
//! its channels, the usermode mapping, the error notifier, and memory (`memory.rs`).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;

use nvbare_core::gpu::{Backend, Buffer, CardInfo, MemoryRequest};
use nvbare_core::hal::{Bar0, PciAddress};
use nvbare_core::rm::{Classes, GrInfo, Handle, RmAbi, RmApi};
use nvbare_gsp::rm::alloc::{
    ChannelAllocParams, DeviceAllocParams, MemoryVirtualAllocParams, VaSpaceAllocParamsV580,
};
use nvbare_gsp::rm::alloc_flags::{device_va_mode, vaspace_flags};
use nvbare_gsp::rm::classes as cls;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::subdevice::gid_flags;
use zerocopy::FromZeros;

use super::memory::{CpuMaps, munmap, va_alloc};
use super::own_pt::{OwnTables, RM_VA, RM_VA_LOW};
use super::rm::RmClient;
use super::sys::{self, NvIoctlCardInfo, NvIoctlRegisterFd, NvProcessorUuid};
use super::uvm::Uvm;
use super::{NvkError, NvkMemory, NvkOptions, ctrl, open_dev};
use crate::clock::HostClock;

/// Size of the usermode region mapping (`NVC661` and friends).
const USERMODE_LEN: u64 = 0x10000;

/// The usermode region (doorbell, GPU timer) mapped through the GPU file: 32-bit
/// register access. Before the region is mapped (between [`Nvk::open`] and the GPU layer's
/// attach), reads return all ones, as of an absent device, and writes go nowhere.
#[derive(Debug, Default)]
pub struct Usermode {
    base: Option<NonNull<u8>>,
}

impl Usermode {
    /// The 32-bit register at `offset`, if mapped and in range.
    fn reg(&self, offset: u32) -> Option<*mut u32> {
        let base = self.base?;
        if offset >= USERMODE_LEN as u32 || !offset.is_multiple_of(4) {
            return None;
        }
        // SAFETY: the mapping is USERMODE_LEN bytes and lives as long as the Nvk; the offset
        // is checked above, so the pointer stays inside it.
        Some(unsafe { base.as_ptr().add(offset as usize).cast::<u32>() })
    }
}

impl Bar0 for Usermode {
    fn read32(&self, offset: u32) -> u32 {
        match self.reg(offset) {
            // SAFETY: `reg` points into the live usermode mapping; MMIO needs volatile access.
            Some(r) => unsafe { r.read_volatile() },
            None => u32::MAX,
        }
    }
    fn write32(&self, offset: u32, value: u32) {
        if let Some(r) = self.reg(offset) {
            // SAFETY: as in `read32`.
            unsafe { r.write_volatile(value) }
        }
    }
}

/// One GPU the kernel driver owns, reached through RM ioctls and UVM.
pub struct Nvk {
    pub(crate) rm: RmClient,
    pub(crate) uvm: Uvm,
    /// The kernel driver's description of the GPU.
    pub card: NvIoctlCardInfo,
    pub(crate) dev_file: File,
    clock: HostClock,
    pub(crate) device: Handle,
    subdevice: Handle,
    pub(crate) virtmem: Handle,
    usermode: Usermode,
    pub(crate) uuid: NvProcessorUuid,
    pub(crate) cpu_maps: CpuMaps,
    pub(crate) next_host_handle: Handle,
    notifier: Option<Buffer<NvkMemory>>,
    pub(crate) options: NvkOptions,
    /// nvbare's page tables (`NvkOptions::own_page_tables`), once the VA space is bound.
    pub(crate) own: Option<OwnTables>,
}

// SAFETY: the raw pointers are the process's own mappings, reached through volatile access
// only; the files and RM handles are usable from any thread.
unsafe impl Send for Nvk {}

impl Nvk {
    /// Opens GPU `index` of those the kernel driver lists: the RM client, UVM, the GPU file.
    /// The GPU layer (`nvbare_core::gpu::Gpu::open`) builds the object tree over it.
    pub fn open(index: usize) -> Result<Self, NvkError> {
        Self::open_with(index, NvkOptions::default())
    }

    /// [`Self::open`] with `options`.
    pub fn open_with(index: usize, options: NvkOptions) -> Result<Self, NvkError> {
        let rm = RmClient::open()?;
        let uvm = Uvm::open()?;
        let mut cards = [NvIoctlCardInfo::default(); sys::CARD_INFO_SLOTS];
        sys::ioctl(
            rm.ctl_fd(),
            sys::iowr(sys::NV_ESC_CARD_INFO, size_of_val(&cards)),
            &mut cards,
        )
        .map_err(|source| NvkError::Ioctl {
            op: "card info",
            source,
        })?;
        let valid: Vec<_> = cards.iter().filter(|c| c.valid != 0).copied().collect();
        let card = *valid.get(index).ok_or(NvkError::NoSuchGpu {
            index,
            count: valid.len(),
        })?;
        let dev_file = open_gpu_file(&rm, card.minor_number)?;
        Ok(Self {
            rm,
            uvm,
            card,
            dev_file,
            clock: HostClock::new(),
            device: 0,
            subdevice: 0,
            virtmem: 0,
            usermode: Usermode::default(),
            uuid: [0; 16],
            cpu_maps: CpuMaps::new(),
            next_host_handle: 0xcf00_0000,
            notifier: None,
            options,
            own: None,
        })
    }

    /// The GPU's UUID (as UVM knows it).
    pub fn uuid(&self) -> NvProcessorUuid {
        self.uuid
    }

    /// What a soak samples: RM objects this client holds (allocated minus freed) and video
    /// memory in use on the GPU (RM heap total minus free, every process together), bytes.
    pub fn resource_sample(&self) -> Result<(i64, u64), NvkError> {
        let total = ctrl::fb_total_ram(&self.rm, self.subdevice)?;
        let free = ctrl::fb_heap_free(&self.rm, self.subdevice)?;
        Ok((self.rm.objects_held(), total.saturating_sub(free)))
    }
}

impl Drop for Nvk {
    fn drop(&mut self) {
        if let Err(e) = self.unset_page_directory() {
            log::warn!("own page tables: UNSET_PAGE_DIRECTORY failed: {e}");
        }
        if let Some(p) = self.usermode.base.take() {
            munmap(p, USERMODE_LEN);
        }
        for (&va, &len) in &self.cpu_maps {
            if let Some(p) = NonNull::new(va as *mut u8) {
                munmap(p, len);
            }
        }
        // Freeing the RM client (in RmClient's Drop) frees every object; UVM ranges go with
        // the UVM file. Virtual addresses go back to the process windows only as buffers are
        // freed: a dropped GPU's VAs stay reserved.
    }
}

/// Opens `/dev/nvidia<minor>` and registers it with our control file, as the kernel driver
/// requires before it accepts mappings through it.
pub(crate) fn open_gpu_file(rm: &RmClient, minor: u32) -> Result<File, NvkError> {
    let f = open_dev(format!("/dev/nvidia{minor}"))?;
    let mut reg = NvIoctlRegisterFd {
        ctl_fd: rm.ctl_fd(),
    };
    sys::ioctl(
        f.as_raw_fd(),
        sys::iowr(sys::NV_ESC_REGISTER_FD, size_of_val(&reg)),
        &mut reg,
    )
    .map_err(|source| NvkError::Ioctl {
        op: "register fd",
        source,
    })?;
    Ok(f)
}

/// Maps an RM object (the usermode region) anywhere in the CPU's space.
fn map_rm_object(
    rm: &RmClient,
    minor: u32,
    device: Handle,
    object: Handle,
    len: u64,
) -> Result<NonNull<u8>, NvkError> {
    let file = open_gpu_file(rm, minor)?;
    rm.map_memory(file.as_raw_fd(), device, object, len, 0)?;
    super::memory::mmap_shared(len, file.as_raw_fd(), "usermode region")
}

impl RmApi for Nvk {
    type Error = NvkError;

    fn client(&self) -> Handle {
        self.rm.root()
    }

    fn abi(&self) -> RmAbi {
        // The kernel driver on our machines is 580.x (`kernel-open` of 580.142).
        RmAbi::R580
    }

    fn alloc_raw(
        &mut self,
        parent: Handle,
        class: u32,
        params: &mut [u8],
    ) -> Result<Handle, NvkError> {
        self.rm.alloc_raw(parent, class, params)
    }

    fn control_raw(&mut self, object: Handle, cmd: u32, params: &mut [u8]) -> Result<(), NvkError> {
        self.rm.control_raw(object, cmd, params)
    }

    fn free(&mut self, parent: Handle, object: Handle) -> Result<(), NvkError> {
        self.rm.free(parent, object)
    }
}

impl Backend for Nvk {
    type Clock = HostClock;
    type Usermode = Usermode;
    type Memory = NvkMemory;
    type VaSpaceParams = VaSpaceAllocParamsV580;

    fn clock(&self) -> &HostClock {
        &self.clock
    }

    fn usermode(&self) -> &Usermode {
        &self.usermode
    }

    fn usermode_base(&self) -> u32 {
        0
    }

    fn alloc_memory(&mut self, req: &MemoryRequest) -> Result<Buffer<NvkMemory>, NvkError> {
        self.alloc(req)
    }

    fn free_memory(&mut self, buf: Buffer<NvkMemory>) {
        self.free(buf)
    }

    fn device_params(&mut self) -> Result<DeviceAllocParams, NvkError> {
        let mut id = ctrl::GpuIdInfoV2Params {
            gpu_id: self.card.gpu_id,
            ..Default::default()
        };
        self.rm
            .control(self.rm.root(), cmd::NV0000_GPU_GET_ID_INFO_V2, &mut id)?;
        Ok(DeviceAllocParams {
            device_id: id.device_instance,
            h_client_share: self.rm.root(),
            va_mode: device_va_mode::OPTIONAL_MULTIPLE_VASPACES,
            ..Default::default()
        })
    }

    fn attach(
        &mut self,
        device: Handle,
        subdevice: Handle,
        classes: &Classes,
    ) -> Result<(), NvkError> {
        self.device = device;
        self.subdevice = subdevice;
        // The object RM maps memory into the GPU VA space through (NVOS46).
        let mut vp = MemoryVirtualAllocParams {
            limit: 0x1_ffff_ffff_ffff,
            ..Default::default()
        };
        self.virtmem = self.rm.alloc(device, cls::NV01_MEMORY_VIRTUAL, &mut vp)?;
        // The doorbell page (NVC661 usermode region), mapped through the GPU file.
        let usermode_obj = self.rm.alloc_raw(subdevice, classes.usermode, &mut [])?;
        let base = map_rm_object(
            &self.rm,
            self.card.minor_number,
            device,
            usermode_obj,
            USERMODE_LEN,
        )?;
        self.usermode.base = Some(base);
        Ok(())
    }

    fn vaspace_params(&self) -> VaSpaceAllocParamsV580 {
        if self.options.own_page_tables {
            // RM keeps [2^56, 2^57), root entry 1; entry 0 is nvbare's (own_pt.rs says why).
            // No page faulting: RM refuses it without IS_EXTERNALLY_OWNED (vaspace_api.c,
            // translateAllocFlagsToVASpaceFlags, bug 1766112).
            let (va_base, va_size) = if self.options.rm_keeps_low {
                RM_VA_LOW
            } else {
                RM_VA
            };
            return VaSpaceAllocParamsV580 {
                va_base,
                va_size,
                flags: vaspace_flags::SHARED_MANAGEMENT,
                ..Default::default()
            };
        }
        VaSpaceAllocParamsV580 {
            va_base: 0x1000,
            va_size: 0x0001_ffff_fb00_0000,
            flags: vaspace_flags::ENABLE_PAGE_FAULTING | vaspace_flags::IS_EXTERNALLY_OWNED,
            ..Default::default()
        }
    }

    fn bind_vaspace(
        &mut self,
        device: Handle,
        subdevice: Handle,
        vaspace: Handle,
    ) -> Result<(), NvkError> {
        if self.options.own_page_tables {
            return self.bind_own(device, vaspace);
        }
        let mut gid = ctrl::GidInfoParams::new_zeroed();
        gid.flags = gid_flags::FORMAT.encode(gid_flags::FORMAT_BINARY);
        gid.length = 16;
        self.rm
            .control(subdevice, cmd::NV2080_GPU_GET_GID_INFO, &mut gid)?;
        self.uuid = gid
            .binary_uuid()
            .ok_or(NvkError::GpuUuid { len: gid.length })?;
        let mut rg = sys::UvmRegisterGpuParams {
            gpu_uuid: self.uuid,
            rm_ctrl_fd: -1,
            ..Default::default()
        };
        self.uvm.call(&mut rg, "UVM_REGISTER_GPU")?;
        let mut rv = sys::UvmRegisterGpuVaspaceParams {
            gpu_uuid: self.uuid,
            rm_ctrl_fd: self.rm.ctl_fd(),
            h_client: self.rm.root(),
            h_va_space: vaspace,
            rm_status: 0,
        };
        self.uvm.call(&mut rv, "UVM_REGISTER_GPU_VASPACE")?;
        log::debug!(
            "UVM: GPU {:02x?} and VA space {vaspace:#x} registered",
            self.uuid
        );
        Ok(())
    }

    fn gr_info(&mut self, subdevice: Handle) -> Result<GrInfo, NvkError> {
        ctrl::read_gr_info(&self.rm, subdevice)
    }

    fn card_info(&mut self, subdevice: Handle) -> CardInfo {
        let pci = self.card.pci_info;
        CardInfo {
            name: ctrl::gpu_name(&self.rm, subdevice).unwrap_or_default(),
            rm: format!(
                "NVIDIA kernel driver {}",
                ctrl::driver_version(&self.rm).unwrap_or_default()
            ),
            vram_bytes: ctrl::fb_total_ram(&self.rm, subdevice).unwrap_or(0),
            pci: Some(PciAddress {
                // CAST: PCI domains are 16-bit on Linux.
                domain: pci.domain as u16,
                bus: pci.bus,
                device: pci.slot,
                function: pci.function,
            }),
            device_id: pci.device_id,
        }
    }

    fn prepare_channels(&mut self, _device: Handle) -> Result<(), NvkError> {
        if self.notifier.is_none() {
            self.notifier = Some(self.alloc_notifier()?);
        }
        Ok(())
    }

    fn channel_params(
        &mut self,
        params: &mut ChannelAllocParams,
        area: &Buffer<NvkMemory>,
        _ring_offset: u64,
        userd_offset: u64,
    ) -> Result<(), NvkError> {
        // RM allocates the instance block, RAMFC and method buffer itself; the ring and USERD
        // are in `area`, named by its RM handle.
        params.h_object_error = self.notifier.as_ref().map_or(0, |n| n.memory().handle);
        params.h_object_buffer = area.memory().handle;
        params.h_userd_memory[0] = area.memory().handle;
        params.userd_offset[0] = userd_offset;
        Ok(())
    }

    fn register_channel(
        &mut self,
        channel: Handle,
        has_context_share: bool,
    ) -> Result<(), NvkError> {
        if self.own.is_some() {
            // RM maps the context buffers itself, in its half of the VA space.
            return Ok(());
        }
        // UVM maps a channel's context buffers into a VA range it is given; a channel without
        // a context share (a copy engine's own group, which has no engine context) gets an
        // empty range, as CUDA gives it.
        let (base, length) = if has_context_share {
            (va_alloc(true, 0x400_0000, 0x1000)?, 0x400_0000)
        } else {
            (0, 0)
        };
        let mut rc = sys::UvmRegisterChannelParams {
            gpu_uuid: self.uuid,
            rm_ctrl_fd: self.rm.ctl_fd(),
            h_client: self.rm.root(),
            h_channel: channel,
            base,
            length,
            ..Default::default()
        };
        self.uvm.call(&mut rc, "UVM_REGISTER_CHANNEL")?;
        log::debug!("UVM: channel {channel:#x} registered (context range {base:#x}+{length:#x})");
        Ok(())
    }
}
