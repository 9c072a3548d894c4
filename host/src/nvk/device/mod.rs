//! One GPU opened through the kernel driver: the RM object tree (client, device,
//! subdevice, VA space, channel group, channels), UVM registration, memory, and
//! the usermode doorbell page. Mirrors what CUDA's `cuCtxCreate` sets up.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::Mutex;

use nvbare_gsp::rm::alloc::{
    ChannelGroupAllocParams, DeviceAllocParams, MemoryVirtualAllocParams, SubdeviceAllocParams,
    VaSpaceAllocParamsV580,
};
use nvbare_gsp::rm::alloc_flags::{device_va_mode, engine_type, vaspace_flags};
use nvbare_gsp::rm::classes as cls;
use zerocopy::FromZeros;

use super::ctrl;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::subdevice::gid_flags;
use nvbare_mmu::VaAllocator;

use super::mem::{Buffer, munmap};
use super::rm::{Handle, RmClient};
use super::sys::{self, NvIoctlCardInfo, NvIoctlRegisterFd, NvProcessorUuid};
use super::uvm::Uvm;
use super::{NvkError, open_dev};

mod channels;
mod memory;

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

fn va_err(e: nvbare_mmu::MmuError) -> NvkError {
    NvkError::Va(e.to_string())
}

/// The process's GPU virtual address windows: one per process, because UVM
/// gives the whole process one GPU address space, shared by every open device.
static VA_WINDOWS: Mutex<Option<(VaAllocator, VaAllocator)>> = Mutex::new(None);

fn va_alloc(cpu_visible: bool, size: u64, align: u64) -> Result<u64, NvkError> {
    let mut g = VA_WINDOWS.lock().unwrap_or_else(|p| p.into_inner());
    if g.is_none() {
        *g = Some((
            VaAllocator::new(CPU_VISIBLE_VA.0, CPU_VISIBLE_VA.1).map_err(va_err)?,
            VaAllocator::new(GPU_ONLY_VA.0, GPU_ONLY_VA.1).map_err(va_err)?,
        ));
    }
    let (cpu, gpu) = g.as_mut().expect("initialised above");
    if cpu_visible {
        cpu.alloc(size, align)
    } else {
        gpu.alloc(size, align)
    }
    .map_err(va_err)
}

fn va_free(cpu_visible: bool, va: u64, size: u64) {
    let mut g = VA_WINDOWS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((cpu, gpu)) = g.as_mut() {
        let _ = if cpu_visible {
            cpu.free(va, size)
        } else {
            gpu.free(va, size)
        };
    }
}

fn pick(list: &[u32], wanted: &[u32], what: &'static str) -> Result<u32, NvkError> {
    wanted
        .iter()
        .copied()
        .find(|c| list.contains(c))
        .ok_or_else(|| NvkError::NoClass {
            what,
            known: wanted
                .iter()
                .map(|c| format!("{c:#06x}"))
                .collect::<Vec<_>>()
                .join(", "),
        })
}

impl Classes {
    /// Newest first: the first the GPU lists wins. HOPPER_* on GH100.
    pub fn choose(list: &[u32]) -> Result<Self, NvkError> {
        Ok(Self {
            gpfifo: pick(
                list,
                &[
                    cls::BLACKWELL_CHANNEL_GPFIFO_A,
                    cls::HOPPER_CHANNEL_GPFIFO_A,
                    cls::AMPERE_CHANNEL_GPFIFO_A,
                ],
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
                &[
                    cls::BLACKWELL_USERMODE_A,
                    cls::HOPPER_USERMODE_A,
                    cls::AMPERE_USERMODE_A,
                    cls::TURING_USERMODE_A,
                ],
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
    /// CPU mappings this device made and has not unmapped yet (address → length).
    cpu_maps: BTreeMap<u64, u64>,
    next_host_handle: Handle,
    pub channel_group: Handle,
    pub channel_area: Option<Buffer>,
    pub compute: Option<RmChannel>,
    pub copy: Option<RmChannel>,
    pub debugger: Handle,
    notifier: Option<Buffer>,
    /// The asynchronous copy engine the copy channel runs on, when it has a
    /// channel group of its own.
    pub copy_engine: Option<u32>,
    /// Why each attempt at a copy channel group of its own failed, if they did.
    pub copy_group_error: Option<String>,
}

impl Device {
    /// Opens GPU `index` of those the kernel driver lists and builds everything up
    /// to, but not including, the channels.
    pub fn open(index: usize) -> Result<Self, NvkError> {
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

        let mut id = ctrl::GpuIdInfoV2Params {
            gpu_id: card.gpu_id,
            ..Default::default()
        };
        rm.control(rm.root(), cmd::NV0000_GPU_GET_ID_INFO_V2, &mut id)?;

        let mut dp = DeviceAllocParams {
            device_id: id.device_instance,
            h_client_share: rm.root(),
            va_mode: device_va_mode::OPTIONAL_MULTIPLE_VASPACES,
            ..Default::default()
        };
        let device = rm.alloc(rm.root(), cls::NV01_DEVICE_0, Some(&mut dp))?;
        let subdevice = rm.alloc(
            device,
            cls::NV20_SUBDEVICE_0,
            Some(&mut SubdeviceAllocParams::default()),
        )?;
        let mut vp = MemoryVirtualAllocParams {
            limit: 0x1_ffff_ffff_ffff,
            ..Default::default()
        };
        let virtmem = rm.alloc(device, cls::NV01_MEMORY_VIRTUAL, Some(&mut vp))?;

        let mut cl = ctrl::ClassListV2::new_zeroed();
        rm.control(device, cmd::NV0080_GPU_GET_CLASSLIST_V2, &mut cl)?;
        let class_list = cl.classes().to_vec();
        let classes = Classes::choose(&class_list)?;

        // The doorbell page (NVC661 usermode region), mapped through the GPU file.
        let usermode_obj = rm.alloc::<u8>(subdevice, classes.usermode, None)?;
        let usermode = map_rm_object(&rm, card.minor_number, device, usermode_obj, 0x10000, 0)?;

        let mut vs = VaSpaceAllocParamsV580 {
            va_base: 0x1000,
            va_size: 0x0001_ffff_fb00_0000,
            flags: vaspace_flags::ENABLE_PAGE_FAULTING | vaspace_flags::IS_EXTERNALLY_OWNED,
            ..Default::default()
        };
        let vaspace = rm.alloc(device, cls::FERMI_VASPACE_A, Some(&mut vs))?;

        let mut gid = ctrl::GidInfoParams::new_zeroed();
        gid.flags = gid_flags::FORMAT.encode(gid_flags::FORMAT_BINARY);
        gid.length = 16;
        rm.control(subdevice, cmd::NV2080_GPU_GET_GID_INFO, &mut gid)?;
        let uuid = gid.binary_uuid().ok_or_else(|| {
            NvkError::Submit(format!(
                "GPU UUID: RM returned {} bytes of binary GID, expected 16",
                gid.length
            ))
        })?;

        let mut rg = sys::UvmRegisterGpuParams {
            gpu_uuid: uuid,
            rm_ctrl_fd: -1,
            ..Default::default()
        };
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

        let mut cgp = ChannelGroupAllocParams {
            engine_type: engine_type::GRAPHICS,
            ..Default::default()
        };
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
            cpu_maps: BTreeMap::new(),
            next_host_handle: 0xcf00_0000,
            channel_group,
            channel_area: None,
            compute: None,
            copy: None,
            debugger: 0,
            notifier: None,
            copy_engine: None,
            copy_group_error: None,
        })
    }

    /// The usermode region's doorbell register: writing a channel's work-submit
    /// token there makes the host engine fetch its new GPFIFO entries.
    pub fn doorbell(&self) -> Doorbell {
        Doorbell {
            base: self.usermode,
        }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        munmap(self.usermode, 0x10000);
        for (&va, &len) in &self.cpu_maps {
            if let Some(p) = NonNull::new(va as *mut u8) {
                munmap(p, len);
            }
        }
        // Freeing the RM client (in RmClient's Drop) frees every object; UVM ranges
        // go with the UVM file. Virtual addresses go back to the process windows
        // only as buffers are freed: a dropped device's VAs stay reserved.
    }
}

/// The usermode doorbell: `Bar0`-style 32-bit writes into the mapped region.
pub struct Doorbell {
    base: NonNull<u8>,
}

impl Doorbell {
    /// The 32-bit register at `offset` in the usermode page.
    fn reg(&self, offset: u32) -> *mut u32 {
        assert!(
            offset < 0x10000 && offset.is_multiple_of(4),
            "usermode offset {offset:#x} out of range"
        );
        // SAFETY: the usermode mapping is 0x10000 bytes and lives as long as the
        // Device; the offset is checked above, so the pointer stays inside it.
        unsafe { self.base.as_ptr().add(offset as usize).cast::<u32>() }
    }
}

impl nvbare_core::hal::Bar0 for Doorbell {
    fn read32(&self, offset: u32) -> u32 {
        // SAFETY: `reg` points into the live usermode mapping; MMIO needs volatile access.
        unsafe { self.reg(offset).read_volatile() }
    }
    fn write32(&self, offset: u32, value: u32) {
        // SAFETY: as in `read32`.
        unsafe { self.reg(offset).write_volatile(value) }
    }
}

/// Opens `/dev/nvidia<minor>` and registers it with our control file, as the
/// kernel driver requires before it accepts mappings through it.
fn open_gpu_file(rm: &RmClient, minor: u32) -> Result<File, NvkError> {
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
        return Err(NvkError::Mmap {
            what: "usermode region",
            source: std::io::Error::last_os_error(),
        });
    }
    NonNull::new(p.cast()).ok_or(NvkError::Mmap {
        what: "usermode region",
        source: std::io::Error::other("null"),
    })
}

fn read_gr_info(rm: &RmClient, subdevice: Handle) -> Result<GrInfo, NvkError> {
    use ctrl::gr_info_index as ix;
    let wanted = [
        ix::LITTER_NUM_GPCS,
        ix::LITTER_NUM_TPC_PER_GPC,
        ix::LITTER_NUM_SM_PER_TPC,
        ix::MAX_WARPS_PER_SM,
        ix::SM_VERSION,
    ];
    let v = ctrl::gr_info(rm, subdevice, &wanted)?;
    let mut g = GrInfo {
        gpcs: v[0],
        tpcs_per_gpc: v[1],
        sms_per_tpc: v[2],
        max_warps_per_sm: v[3],
        sm_version: v[4],
        sm_count: 0,
    };
    // Enabled SMs = FP32 cores / FP32 cores per SM (64 on GA100's sm_80, 128 on
    // every other sm_8x..sm_12x): 16896 / 128 = 132 on the H200.
    let per_sm = if g.sm_version == 0x800 { 64 } else { 128 };
    g.sm_count = match ctrl::gr_info(rm, subdevice, &[ix::GPU_CORE_COUNT]) {
        Ok(v) if v[0] > 0 => v[0] / per_sm,
        _ => g.gpcs * g.tpcs_per_gpc * g.sms_per_tpc,
    };
    Ok(g)
}
