//! One GPU opened through the kernel driver: the RM object tree (client, device,
//! subdevice, VA space, channel group, channels), UVM registration, memory, and
//! the usermode doorbell page. Mirrors what CUDA's `cuCtxCreate` sets up.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;

use nvbare_gsp::rm::alloc::{
    ChannelAllocParams, ChannelGroupAllocParams, CtxShareAllocParams, DebuggerAllocParams,
    DeviceAllocParams, MemoryAllocParams, MemoryVirtualAllocParams, SubdeviceAllocParams,
    VaSpaceAllocParamsV580,
};
use nvbare_gsp::rm::alloc_flags::{ctxshare_flags, device_va_mode, engine_type, vaspace_flags};
use nvbare_gsp::rm::classes as cls;
use zerocopy::FromZeros;

use super::ctrl;
use super::mem::{Buffer, Placement, VaWindow, drf, mmap_fixed, munmap};
use super::rm::{Handle, RmClient};
use super::sys::{self, NvIoctlCardInfo, NvIoctlRegisterFd, NvProcessorUuid};
use super::uvm::Uvm;
use super::{NvkError, open_dev};

/// GPU VAs with a CPU mapping at the same address (below the usual heap/mmap
/// areas of x86-64 Linux): 64 GiB from 0x10_0000_0000.
const CPU_VISIBLE_VA: (u64, u64) = (0x10_0000_0000, 0x10_0000_0000);
/// GPU-only VAs: from 0x20_0000_0000 up to 2^47.
const GPU_ONLY_VA: (u64, u64) = (0x20_0000_0000, (1 << 47) - 0x20_0000_0000);
/// Where shared and local memory windows sit in the GPU VA space (above 2^47, so
/// they never collide with a buffer).
pub const SHARED_MEM_WINDOW: u64 = 0x7294_0000_0000;
/// See [`SHARED_MEM_WINDOW`].
pub const LOCAL_MEM_WINDOW: u64 = 0x7293_0000_0000;

/// 2 MiB: the big page the GPU maps video memory with for large buffers.
pub const HUGE_PAGE: u64 = 2 << 20;
const SMALL_PAGE: u64 = 4 << 10;

/// The classes this GPU's engines are driven with, chosen from its class list.
#[derive(Clone, Copy, Debug)]
pub struct Classes {
    pub gpfifo: u32,
    pub compute: u32,
    pub copy: u32,
    pub usermode: u32,
}

fn pick(list: &[u32], wanted: &[u32], what: &'static str) -> Result<u32, NvkError> {
    wanted.iter().copied().find(|c| list.contains(c)).ok_or_else(|| NvkError::NoClass {
        what,
        known: wanted.iter().map(|c| format!("{c:#06x}")).collect::<Vec<_>>().join(", "),
    })
}

impl Classes {
    /// Newest first: the first the GPU lists wins. HOPPER_* on GH100.
    pub fn choose(list: &[u32]) -> Result<Self, NvkError> {
        Ok(Self {
            gpfifo: pick(
                list,
                &[cls::BLACKWELL_CHANNEL_GPFIFO_A, cls::HOPPER_CHANNEL_GPFIFO_A, cls::AMPERE_CHANNEL_GPFIFO_A],
                "GPFIFO channel",
            )?,
            compute: pick(
                list,
                &[
                    cls::BLACKWELL_COMPUTE_B,
                    cls::BLACKWELL_COMPUTE_A,
                    cls::HOPPER_COMPUTE_A,
                    cls::ADA_COMPUTE_A,
                    cls::AMPERE_COMPUTE_B,
                    cls::AMPERE_COMPUTE_A,
                ],
                "compute",
            )?,
            copy: pick(
                list,
                &[
                    cls::BLACKWELL_DMA_COPY_B,
                    cls::BLACKWELL_DMA_COPY_A,
                    cls::HOPPER_DMA_COPY_A,
                    cls::AMPERE_DMA_COPY_B,
                    cls::AMPERE_DMA_COPY_A,
                ],
                "copy engine",
            )?,
            usermode: pick(
                list,
                &[cls::BLACKWELL_USERMODE_A, cls::HOPPER_USERMODE_A, cls::AMPERE_USERMODE_A, cls::TURING_USERMODE_A],
                "usermode",
            )?,
        })
    }
}

/// Graphics-engine facts read with `NV2080_CTRL_CMD_GR_GET_INFO`.
#[derive(Clone, Copy, Debug, Default)]
pub struct GrInfo {
    pub gpcs: u32,
    pub tpcs_per_gpc: u32,
    pub sms_per_tpc: u32,
    pub max_warps_per_sm: u32,
    /// `0x900` on Hopper.
    pub sm_version: u32,
    pub sm_count: u32,
}

/// A GPFIFO channel's RM side: the handles and what the core needs to drive it.
#[derive(Debug)]
pub struct RmChannel {
    pub handle: Handle,
    pub token: u32,
    /// Offset of the ring in the channel area; USERD follows the ring.
    pub ring_offset: u64,
    pub entries: u32,
}

/// An open GPU.
pub struct Device {
    pub rm: RmClient,
    pub uvm: Uvm,
    pub card: NvIoctlCardInfo,
    dev_file: File,
    pub device: Handle,
    pub subdevice: Handle,
    virtmem: Handle,
    pub vaspace: Handle,
    pub classes: Classes,
    pub class_list: Vec<u32>,
    pub uuid: NvProcessorUuid,
    pub gr: GrInfo,
    pub vram_bytes: u64,
    pub name: String,
    pub driver_version: String,
    usermode: NonNull<u8>,
    cpu_va: VaWindow,
    gpu_va: VaWindow,
    next_host_handle: Handle,
    pub channel_group: Handle,
    pub channel_area: Option<Buffer>,
    pub compute: Option<RmChannel>,
    pub copy: Option<RmChannel>,
    pub debugger: Handle,
    notifier: Option<Buffer>,
}

impl Device {
    /// Opens GPU `index` of those the kernel driver lists and builds everything up
    /// to, but not including, the channels.
    pub fn open(index: usize) -> Result<Self, NvkError> {
        let rm = RmClient::open()?;
        let uvm = Uvm::open()?;

        let mut cards = [NvIoctlCardInfo::default(); sys::CARD_INFO_SLOTS];
        sys::ioctl(rm.ctl_fd(), sys::iowr(sys::NV_ESC_CARD_INFO, size_of_val(&cards)), &mut cards)
            .map_err(|source| NvkError::Ioctl { op: "card info", source })?;
        let valid: Vec<_> = cards.iter().filter(|c| c.valid != 0).copied().collect();
        let card = *valid.get(index).ok_or(NvkError::NoSuchGpu { index, count: valid.len() })?;

        let dev_file = open_gpu_file(&rm, card.minor_number)?;

        let mut id = ctrl::GpuGetIdInfoV2 { gpu_id: card.gpu_id, ..Default::default() };
        rm.control(rm.root(), ctrl::GpuGetIdInfoV2::CMD, &mut id)?;

        let mut dp = DeviceAllocParams {
            device_id: id.device_instance,
            h_client_share: rm.root(),
            va_mode: device_va_mode::OPTIONAL_MULTIPLE_VASPACES,
            ..Default::default()
        };
        let device = rm.alloc(rm.root(), cls::NV01_DEVICE_0, Some(&mut dp))?;
        let subdevice =
            rm.alloc(device, cls::NV20_SUBDEVICE_0, Some(&mut SubdeviceAllocParams::default()))?;
        let mut vp = MemoryVirtualAllocParams { limit: 0x1_ffff_ffff_ffff, ..Default::default() };
        let virtmem = rm.alloc(device, cls::NV01_MEMORY_VIRTUAL, Some(&mut vp))?;

        let mut cl = ctrl::ClassListV2::new_zeroed();
        rm.control(device, ctrl::ClassListV2::CMD, &mut cl)?;
        let class_list = cl.class_list[..(cl.num_classes as usize).min(cl.class_list.len())].to_vec();
        let classes = Classes::choose(&class_list)?;

        // The doorbell page (NVC661 usermode region), mapped through the GPU file.
        let usermode_obj = rm.alloc::<u8>(subdevice, classes.usermode, None)?;
        let usermode = map_rm_object(&rm, card.minor_number, device, usermode_obj, 0x10000, 0)?;

        let mut vs = VaSpaceAllocParamsV580 {
            va_base: 0x1000,
            va_size: 0x1_fff_ffb0_00000,
            flags: vaspace_flags::ENABLE_PAGE_FAULTING | vaspace_flags::IS_EXTERNALLY_OWNED,
            ..Default::default()
        };
        let vaspace = rm.alloc(device, cls::FERMI_VASPACE_A, Some(&mut vs))?;

        let mut gid = ctrl::GidInfo::new_zeroed();
        gid.flags = ctrl::GidInfo::FORMAT_BINARY;
        gid.length = 16;
        rm.control(subdevice, ctrl::GidInfo::CMD, &mut gid)?;
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&gid.data[..16]);

        let mut rg = sys::UvmRegisterGpuParams::default();
        rg.gpu_uuid = uuid;
        rg.rm_ctrl_fd = -1;
        uvm.call(&mut rg, "UVM_REGISTER_GPU")?;
        let mut rv = sys::UvmRegisterGpuVaspaceParams {
            gpu_uuid: uuid,
            rm_ctrl_fd: rm.ctl_fd(),
            h_client: rm.root(),
            h_va_space: vaspace,
            rm_status: 0,
        };
        uvm.call(&mut rv, "UVM_REGISTER_GPU_VASPACE")?;

        let gr = read_gr_info(&rm, subdevice)?;
        let vram_bytes = ctrl::fb_total_ram(&rm, subdevice).unwrap_or(0);
        let name = ctrl::gpu_name(&rm, subdevice).unwrap_or_default();
        let driver_version = ctrl::driver_version(&rm).unwrap_or_default();

        let mut cgp = ChannelGroupAllocParams { engine_type: engine_type::GRAPHICS, ..Default::default() };
        let channel_group = rm.alloc(device, cls::KEPLER_CHANNEL_GROUP_A, Some(&mut cgp))?;

        Ok(Self {
            rm,
            uvm,
            card,
            dev_file,
            device,
            subdevice,
            virtmem,
            vaspace,
            classes,
            class_list,
            uuid,
            gr,
            vram_bytes,
            name,
            driver_version,
            usermode,
            cpu_va: VaWindow::new(CPU_VISIBLE_VA.0, CPU_VISIBLE_VA.1),
            gpu_va: VaWindow::new(GPU_ONLY_VA.0, GPU_ONLY_VA.1),
            next_host_handle: 0xcf00_0000,
            channel_group,
            channel_area: None,
            compute: None,
            copy: None,
            debugger: 0,
            notifier: None,
        })
    }

    /// The usermode region's doorbell register: writing a channel's work-submit
    /// token there makes the host engine fetch its new GPFIFO entries.
    pub fn doorbell(&self) -> Doorbell {
        Doorbell { base: self.usermode }
    }

    /// Allocates `size` bytes at `placement`, mapped into the GPU VA space, and into
    /// the CPU at the same address when `cpu_access` (host memory always is).
    /// Video memory of 8 MiB and more uses 2 MiB pages.
    pub fn alloc(&mut self, size: u64, placement: Placement, cpu_access: bool) -> Result<Buffer, NvkError> {
        let page = if placement == Placement::Vram && size >= (8 << 20) { HUGE_PAGE } else { SMALL_PAGE };
        let size = size.div_ceil(page) * page;
        let cpu_access = cpu_access || placement == Placement::Host;
        let window = if cpu_access { &mut self.cpu_va } else { &mut self.gpu_va };
        let va = window.alloc(size, page)?;
        let r = match placement {
            Placement::Vram => self.alloc_vram_at(va, size, page, cpu_access, false),
            Placement::Host => self.alloc_host_at(va, size),
        };
        if r.is_err() {
            let window = if cpu_access { &mut self.cpu_va } else { &mut self.gpu_va };
            window.release(va, size);
        }
        r
    }

    fn alloc_vram_at(
        &mut self,
        va: u64,
        size: u64,
        page: u64,
        cpu_access: bool,
        contiguous: bool,
    ) -> Result<Buffer, NvkError> {
        let huge = page > SMALL_PAGE;
        // NVOS32_ATTR_PHYSICALITY 28:27 (CONTIGUOUS 2, ALLOW_NONCONTIGUOUS 3),
        // NVOS32_ATTR_PAGE_SIZE 24:23 (HUGE 3).
        let attr = drf(28, 27, if contiguous { 2 } else { 3 }) | if huge { drf(24, 23, 3) } else { 0 };
        // NVOS32_ATTR2_GPU_CACHEABLE 3:2 YES, PAGE_SIZE_HUGE 21:20 2MB, ZBC 1:0 PREFER_NO_ZBC.
        let attr2 = drf(3, 2, 1) | if huge { drf(21, 20, 1) } else { 0 } | drf(1, 0, 1);
        // MAP_NOT_REQUIRED | MEMORY_HANDLE_PROVIDED | ALIGNMENT_FORCE | IGNORE_BANK_PLACEMENT
        // | PERSISTENT_VIDMEM.
        let flags = 0x8000 | 0x4000 | 0x100 | 0x1 | 0x10000;
        let mut p = MemoryAllocParams {
            owner: self.rm.root(),
            type_: 0, // NVOS32_TYPE_IMAGE
            flags,
            attr,
            attr2,
            format: 6,
            size,
            alignment: page,
            limit: size - 1,
            ..Default::default()
        };
        let handle = self.rm.alloc(self.device, cls::NV1_MEMORY_USER, Some(&mut p))?;
        let cpu = if cpu_access {
            match self.map_to_cpu_at(handle, va, size, drf(25, 23, 2)) {
                Ok(p) => Some(p),
                Err(e) => {
                    let _ = self.rm.free(self.device, handle);
                    return Err(e);
                }
            }
        } else {
            None
        };
        let buf = Buffer { gpu_va: va, size, placement: Placement::Vram, cpu, handle, page };
        if let Err(e) = self.map_to_gpu(&buf) {
            self.release(&buf);
            return Err(e);
        }
        Ok(buf)
    }

    fn alloc_host_at(&mut self, va: u64, size: u64) -> Result<Buffer, NvkError> {
        let cpu = mmap_fixed(va, size, -1, "host memory")?;
        self.next_host_handle += 1;
        // NVOS02_FLAGS_PHYSICALITY 7:4 NONCONTIGUOUS, COHERENCY 15:12 CACHED, MAPPING 31:30 NO_MAP.
        let flags = drf(7, 4, 1) | drf(15, 12, 1) | drf(31, 30, 1);
        let handle = match self.rm.alloc_os_descriptor(
            self.dev_file.as_raw_fd(),
            self.device,
            self.next_host_handle,
            flags,
            cpu.as_ptr(),
            size,
        ) {
            Ok(h) => h,
            Err(e) => {
                munmap(cpu, size);
                return Err(e);
            }
        };
        let buf = Buffer { gpu_va: va, size, placement: Placement::Host, cpu: Some(cpu), handle, page: SMALL_PAGE };
        if let Err(e) = self.map_to_gpu(&buf) {
            self.release(&buf);
            return Err(e);
        }
        Ok(buf)
    }

    /// Maps an RM memory object at `va` in the CPU (through a fresh GPU file, as the
    /// kernel driver ties one mapping to one file).
    fn map_to_cpu_at(&self, handle: Handle, va: u64, size: u64, flags: u32) -> Result<NonNull<u8>, NvkError> {
        let file = open_gpu_file(&self.rm, self.card.minor_number)?;
        self.rm.map_memory(file.as_raw_fd(), self.device, handle, size, flags)?;
        mmap_fixed(va, size, file.as_raw_fd(), "video memory through BAR1")
    }

    /// Places `buf` at `buf.gpu_va`: a UVM external range, RM's own record of the
    /// mapping, and UVM's page-table mapping.
    fn map_to_gpu(&self, buf: &Buffer) -> Result<(), NvkError> {
        self.uvm.create_external_range(buf.gpu_va, buf.size)?;
        // NVOS46_FLAGS_PAGE_SIZE 11:8 4KB, CACHE_SNOOP 4:4 ENABLE, DMA_OFFSET_FIXED 15:15 TRUE.
        let flags = drf(11, 8, 1) | drf(4, 4, 1) | drf(15, 15, 1);
        let r = self
            .rm
            .map_dma(self.device, self.virtmem, buf.handle, buf.size, flags, buf.gpu_va)
            .and_then(|got| {
                if got == buf.gpu_va {
                    Ok(())
                } else {
                    Err(NvkError::Submit(format!("RM mapped at {got:#x}, wanted {:#x}", buf.gpu_va)))
                }
            })
            .and_then(|()| {
                self.uvm.map_external(self.uuid, self.rm.ctl_fd(), self.rm.root(), buf.handle, buf.gpu_va, buf.size)
            });
        if r.is_err() {
            let _ = self.uvm.free(buf.gpu_va, buf.size);
        }
        r
    }

    /// Undoes whatever of an allocation exists; errors are ignored (used on
    /// failure paths and in `free`).
    fn release(&mut self, buf: &Buffer) {
        let _ = self.uvm.free(buf.gpu_va, buf.size);
        if let Some(p) = buf.cpu {
            munmap(p, buf.size);
        }
        let _ = self.rm.free(self.device, buf.handle);
        let window = if buf.cpu.is_some() { &mut self.cpu_va } else { &mut self.gpu_va };
        window.release(buf.gpu_va, buf.size);
    }

    /// Frees a buffer: GPU mapping, CPU mapping, RM object, VA range.
    pub fn free(&mut self, buf: Buffer) {
        self.release(&buf);
    }

    /// Creates the compute and copy channels in one channel group, sharing one
    /// VA-space context, with rings and USERD in one video-memory area.
    pub fn create_channels(&mut self, entries: u32) -> Result<(), NvkError> {
        let ring_bytes = u64::from(entries) * 8;
        let slot = (ring_bytes + 0x1000).next_power_of_two().max(0x10_0000);
        let area_size = slot * 2;
        let va = self.cpu_va.alloc(area_size, HUGE_PAGE)?;
        let area = self.alloc_vram_at(va, area_size, SMALL_PAGE, true, true)?;

        // The error notifier: uncached system memory (NV01_MEMORY_SYSTEM, NOTIFIER).
        let mut np = MemoryAllocParams {
            owner: self.rm.root(),
            type_: 13, // NVOS32_TYPE_NOTIFIER
            flags: 0x8000 | 0x4000 | 0x100 | 0x1,
            attr: drf(28, 27, 3) | drf(26, 25, 1), // noncontiguous, LOCATION_PCI
            attr2: drf(3, 2, 2) | drf(1, 0, 1),    // GPU_CACHEABLE_NO, PREFER_NO_ZBC
            format: 6,
            size: 48 << 20,
            alignment: SMALL_PAGE,
            limit: (48 << 20) - 1,
            ..Default::default()
        };
        let notifier_handle = self.rm.alloc(self.device, cls::NV01_MEMORY_SYSTEM, Some(&mut np))?;
        let nva = self.gpu_va.alloc(48 << 20, SMALL_PAGE)?;
        let notifier = Buffer {
            gpu_va: nva,
            size: 48 << 20,
            placement: Placement::Host,
            cpu: None,
            handle: notifier_handle,
            page: SMALL_PAGE,
        };
        self.map_to_gpu(&notifier)?;

        let mut cs = CtxShareAllocParams {
            h_va_space: self.vaspace,
            flags: ctxshare_flags::SUBCONTEXT.encode(ctxshare_flags::SUBCONTEXT_ASYNC),
            ..Default::default()
        };
        let ctxshare = self.rm.alloc(self.channel_group, cls::FERMI_CONTEXT_SHARE_A, Some(&mut cs))?;

        let make = |dev: &mut Self, offset: u64, engine_class: u32| -> Result<RmChannel, NvkError> {
            let mut p = ChannelAllocParams {
                h_object_error: notifier.handle,
                h_object_buffer: area.handle,
                gp_fifo_offset: area.gpu_va + offset,
                gp_fifo_entries: entries,
                h_context_share: ctxshare,
                ..Default::default()
            };
            p.h_userd_memory[0] = area.handle;
            p.userd_offset[0] = offset + ring_bytes;
            let handle = dev.rm.alloc(dev.channel_group, dev.classes.gpfifo, Some(&mut p))?;
            let engine = dev.rm.alloc::<u8>(handle, engine_class, None)?;
            if engine_class == dev.classes.compute {
                let mut dbg = DebuggerAllocParams {
                    h_app_client: dev.rm.root(),
                    h_class3d_object: engine,
                    ..Default::default()
                };
                dev.debugger = dev.rm.alloc(dev.device, cls::GT200_DEBUGGER, Some(&mut dbg))?;
            }
            let mut tok = ctrl::WorkSubmitToken { work_submit_token: u32::MAX };
            dev.rm.control(handle, ctrl::WorkSubmitToken::CMD, &mut tok)?;
            let base = dev.cpu_va.alloc(0x400_0000, 0x1000)?;
            let mut rc = sys::UvmRegisterChannelParams::default();
            rc.gpu_uuid = dev.uuid;
            rc.rm_ctrl_fd = dev.rm.ctl_fd();
            rc.h_client = dev.rm.root();
            rc.h_channel = handle;
            rc.base = base;
            rc.length = 0x400_0000;
            dev.uvm.call(&mut rc, "UVM_REGISTER_CHANNEL")?;
            Ok(RmChannel { handle, token: tok.work_submit_token, ring_offset: offset, entries })
        };
        let compute_class = self.classes.compute;
        let copy_class = self.classes.copy;
        let compute = make(self, 0, compute_class)?;
        let copy = make(self, slot, copy_class)?;
        let mut sched = ctrl::GpfifoSchedule { b_enable: 1, b_skip_submit: 0, b_skip_enable: 0 };
        self.rm.control(self.channel_group, ctrl::GpfifoSchedule::CMD, &mut sched)?;

        self.channel_area = Some(area);
        self.notifier = Some(notifier);
        self.compute = Some(compute);
        self.copy = Some(copy);
        Ok(())
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        munmap(self.usermode, 0x10000);
        // Freeing the RM client (in RmClient's Drop) frees every object; UVM ranges
        // go with the UVM file.
    }
}

/// The usermode doorbell: `Bar0`-style 32-bit writes into the mapped region.
pub struct Doorbell {
    base: NonNull<u8>,
}

impl nvbare_core::hal::Bar0 for Doorbell {
    fn read32(&self, offset: u32) -> u32 {
        assert!(offset < 0x10000 && offset % 4 == 0, "usermode offset {offset:#x} out of range");
        // SAFETY: the usermode mapping is 0x10000 bytes and lives as long as the
        // Device; the offset is checked above; MMIO needs volatile access.
        unsafe { self.base.as_ptr().add(offset as usize).cast::<u32>().read_volatile() }
    }
    fn write32(&self, offset: u32, value: u32) {
        assert!(offset < 0x10000 && offset % 4 == 0, "usermode offset {offset:#x} out of range");
        // SAFETY: as in `read32`.
        unsafe { self.base.as_ptr().add(offset as usize).cast::<u32>().write_volatile(value) }
    }
}

/// Opens `/dev/nvidia<minor>` and registers it with our control file, as the
/// kernel driver requires before it accepts mappings through it.
fn open_gpu_file(rm: &RmClient, minor: u32) -> Result<File, NvkError> {
    let path: &'static str = Box::leak(format!("/dev/nvidia{minor}").into_boxed_str());
    let f = open_dev(path)?;
    let mut reg = NvIoctlRegisterFd { ctl_fd: rm.ctl_fd() };
    sys::ioctl(f.as_raw_fd(), sys::iowr(sys::NV_ESC_REGISTER_FD, size_of_val(&reg)), &mut reg)
        .map_err(|source| NvkError::Ioctl { op: "register fd", source })?;
    Ok(f)
}

/// Maps an RM object (usermode region, memory) anywhere in the CPU's space.
fn map_rm_object(
    rm: &RmClient,
    minor: u32,
    device: Handle,
    object: Handle,
    len: u64,
    flags: u32,
) -> Result<NonNull<u8>, NvkError> {
    let file = open_gpu_file(rm, minor)?;
    rm.map_memory(file.as_raw_fd(), device, object, len, flags)?;
    // SAFETY: a fresh shared mapping of the GPU file that RM just prepared.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(NvkError::Mmap { what: "usermode region", source: std::io::Error::last_os_error() });
    }
    NonNull::new(p.cast()).ok_or(NvkError::Mmap { what: "usermode region", source: std::io::Error::other("null") })
}

fn read_gr_info(rm: &RmClient, subdevice: Handle) -> Result<GrInfo, NvkError> {
    use ctrl::gr_index as ix;
    let wanted = [ix::LITTER_NUM_GPCS, ix::LITTER_NUM_TPC_PER_GPC, ix::LITTER_NUM_SM_PER_TPC, ix::MAX_WARPS_PER_SM, ix::SM_VERSION];
    let v = ctrl::gr_info(rm, subdevice, &wanted)?;
    let mut g = GrInfo {
        gpcs: v[0],
        tpcs_per_gpc: v[1],
        sms_per_tpc: v[2],
        max_warps_per_sm: v[3],
        sm_version: v[4],
        sm_count: 0,
    };
    g.sm_count = ctrl::gr_info(rm, subdevice, &[ix::NUM_SMS]).map(|v| v[0]).unwrap_or(g.gpcs * g.tpcs_per_gpc * g.sms_per_tpc);
    Ok(g)
}
