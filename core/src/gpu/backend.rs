//! What [`Gpu`](super::Gpu) needs of a way to reach the GPU: the RM API, memory at GPU
//! virtual addresses the backend chooses, the usermode region (doorbell and GPU timer), a
//! clock, and the steps where the kernel-driver path and the VFIO path really differ.
//!
//! Two implementations: `host::nvk::Nvk` (NVIDIA's kernel driver owns the GPU: RM ioctls,
//! UVM, buffers whose CPU mapping sits at their GPU address) and `core::gsp_rm::GspRm` (RM
//! over RPCs to the GSP-RM we booted; our own VRAM allocator and page tables, CPU access to
//! VRAM through a BAR1 window that does not sit at the GPU address). Shared code never
//! assumes a CPU address equals a GPU address and never asks which backend it runs on.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use nvbare_gsp::rm::alloc::{ChannelAllocParams, DeviceAllocParams};
use zerocopy::{FromBytes, IntoBytes};

use crate::hal::{Bar0, Clock, PciAddress};
use crate::rm::{Classes, FaultReport, GrInfo, Handle, RmApi};
use crate::shared::{SharedMem, SharedMemError};

/// Where a buffer's pages live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Video memory (HBM on the H200).
    Vram,
    /// System memory the GPU reaches over PCIe.
    Host,
}

/// What a caller asks of a new buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRequest {
    /// Bytes (the backend rounds up to its page size).
    pub size: u64,
    /// Video or host memory.
    pub placement: Placement,
    /// Whether the CPU needs a view of it (host memory always has one).
    pub cpu_access: bool,
    /// Physically contiguous (channel rings and USERD).
    pub contiguous: bool,
    /// Minimum GPU VA alignment in bytes (0: the backend's page size).
    pub align: u64,
}

impl MemoryRequest {
    /// `size` bytes at `placement`, CPU-visible when `cpu_access`.
    pub const fn new(size: u64, placement: Placement, cpu_access: bool) -> Self {
        Self {
            size,
            placement,
            cpu_access,
            contiguous: false,
            align: 0,
        }
    }
}

/// One GPU-visible allocation: GPU VA, size, placement, an optional CPU view, and the
/// backend's record of it (`M`: RM handle and mappings on nvk, VRAM range and page tables on
/// the VFIO path).
#[derive(Debug)]
pub struct Buffer<M> {
    gpu_va: u64,
    size: u64,
    placement: Placement,
    cpu: Option<SharedMem>,
    memory: M,
}

impl<M> Buffer<M> {
    /// A buffer the backend made: `size` bytes at `gpu_va`, with `cpu` its CPU view (whose own
    /// `gpu_va` is `gpu_va`).
    pub fn new(
        gpu_va: u64,
        size: u64,
        placement: Placement,
        cpu: Option<SharedMem>,
        memory: M,
    ) -> Self {
        Self {
            gpu_va,
            size,
            placement,
            cpu,
            memory,
        }
    }

    /// GPU virtual address of byte 0.
    pub fn gpu_va(&self) -> u64 {
        self.gpu_va
    }

    /// Size in bytes (rounded up to the page size used).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Where its pages live.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// Whether the CPU can reach it.
    pub fn has_cpu_view(&self) -> bool {
        self.cpu.is_some()
    }

    /// A safe view for reading and writing the buffer from the CPU (volatile, bounds-checked
    /// accesses), borrowed from the buffer; `None` when it was allocated without CPU access.
    pub fn view(&self) -> Option<BufferView<'_>> {
        self.cpu.as_ref().map(|mem| BufferView { mem })
    }

    /// The CPU view as shared memory, for the GPU layer's own rings and semaphores (which live
    /// as long as the buffer they sit in).
    pub(crate) fn shared(&self) -> Option<&SharedMem> {
        self.cpu.as_ref()
    }

    /// The backend's record of the allocation.
    pub fn memory(&self) -> &M {
        &self.memory
    }

    /// The backend's record, the buffer given up (for the backend's `free_memory`). The CPU
    /// view goes with the buffer: nothing outside the GPU layer ever holds one of its own, so
    /// no access can outlive the mapping.
    pub fn into_memory(self) -> M {
        self.memory
    }
}

/// The CPU's view of a [`Buffer`], borrowed from it: the buffer cannot be freed while a view
/// lives. Every access is volatile and bounds-checked (the GPU may write the memory).
#[derive(Clone, Copy, Debug)]
pub struct BufferView<'a> {
    mem: &'a SharedMem,
}

impl BufferView<'_> {
    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.mem.len()
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.mem.is_empty()
    }

    /// Copies `out.len()` bytes from `offset`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), SharedMemError> {
        self.mem.read_bytes(offset, out)
    }

    /// Copies `data` to `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), SharedMemError> {
        self.mem.write_bytes(offset, data)
    }

    /// Copies `data` (whole 8-byte words) to `offset` (8-byte aligned) as 64-bit stores.
    pub fn write_u64s(&self, offset: usize, data: &[u8]) -> Result<(), SharedMemError> {
        self.mem.write_bytes_u64(offset, data)
    }

    /// Fills `len` bytes at `offset` with `value`.
    pub fn fill(&self, offset: usize, len: usize, value: u8) -> Result<(), SharedMemError> {
        self.mem.fill(offset, len, value)
    }

    /// The 32-bit word at `offset` (4-byte aligned).
    pub fn read_u32(&self, offset: usize) -> Result<u32, SharedMemError> {
        self.mem.read_u32(offset)
    }

    /// Writes the 32-bit word at `offset` (4-byte aligned).
    pub fn write_u32(&self, offset: usize, value: u32) -> Result<(), SharedMemError> {
        self.mem.write_u32(offset, value)
    }

    /// The 64-bit word at `offset` (8-byte aligned).
    pub fn read_u64(&self, offset: usize) -> Result<u64, SharedMemError> {
        self.mem.read_u64(offset)
    }

    /// Writes the 64-bit word at `offset` (8-byte aligned).
    pub fn write_u64(&self, offset: usize, value: u64) -> Result<(), SharedMemError> {
        self.mem.write_u64(offset, value)
    }

    /// The whole buffer, copied out.
    pub fn to_vec(&self) -> Result<Vec<u8>, SharedMemError> {
        let mut v = alloc::vec![0; self.len()];
        self.read(0, &mut v)?;
        Ok(v)
    }
}

/// What a person wants to know about the GPU and the way it is reached.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CardInfo {
    /// The marketing name ("NVIDIA H200").
    pub name: String,
    /// What runs RM ("NVIDIA kernel driver 580.159.04", "GSP-RM 570.144").
    pub rm: String,
    /// Video memory in bytes (0 when unknown).
    pub vram_bytes: u64,
    /// The PCI function, when known.
    pub pci: Option<PciAddress>,
    /// The PCI device id.
    pub device_id: u16,
}

/// A way to reach RM and the GPU's memory: everything [`Gpu`](super::Gpu) needs that is not
/// the same on every path. The default methods are what a backend needs when RM (NVIDIA's
/// kernel driver) does the step itself.
pub trait Backend: RmApi {
    /// The clock every wait uses.
    type Clock: Clock;
    /// The register space holding the usermode region (doorbell, GPU timer).
    type Usermode: Bar0;
    /// The backend's record of one allocation.
    type Memory: fmt::Debug;
    /// `FERMI_VASPACE_A`'s allocation parameters in this RM's layout.
    type VaSpaceParams: IntoBytes + FromBytes;

    /// The clock.
    fn clock(&self) -> &Self::Clock;

    /// The usermode region's register space.
    fn usermode(&self) -> &Self::Usermode;

    /// Where the usermode region starts in [`Self::usermode`]: 0 on a mapping of the usermode
    /// object (nvk), `BAR0_USERMODE_BASE` on BAR0 (VFIO).
    fn usermode_base(&self) -> u32;

    /// Allocates memory at a GPU VA the backend chooses, with a CPU view when asked.
    fn alloc_memory(&mut self, req: &MemoryRequest) -> Result<Buffer<Self::Memory>, Self::Error>;

    /// Frees memory (the caller guarantees the GPU no longer uses it).
    fn free_memory(&mut self, buf: Buffer<Self::Memory>);

    /// `NV01_DEVICE_0`'s allocation parameters (device instance, VA mode).
    fn device_params(&mut self) -> Result<DeviceAllocParams, Self::Error>;

    /// Called once the device, subdevice and classes are known: the backend sets up what it
    /// needs of them (nvk: the virtual-memory object it maps through, the usermode mapping).
    fn attach(
        &mut self,
        device: Handle,
        subdevice: Handle,
        classes: &Classes,
    ) -> Result<(), Self::Error>;

    /// `FERMI_VASPACE_A`'s parameters for the GPU's one VA space.
    fn vaspace_params(&self) -> Self::VaSpaceParams;

    /// Binds the new VA space (nvk: registers the GPU and the VA space with UVM; VFIO:
    /// SET_PAGE_DIRECTORY and the server-reserved PDEs).
    fn bind_vaspace(
        &mut self,
        device: Handle,
        subdevice: Handle,
        vaspace: Handle,
    ) -> Result<(), Self::Error>;

    /// Graphics-engine facts (nvk: `NV2080_CTRL_CMD_GR_GET_INFO`; VFIO: GSP static info).
    fn gr_info(&mut self, subdevice: Handle) -> Result<GrInfo, Self::Error>;

    /// Name, RM version, VRAM size, PCI address.
    fn card_info(&mut self, subdevice: Handle) -> CardInfo;

    /// Called before the first channel: what every channel of the device shares (nvk: the
    /// error notifier).
    fn prepare_channels(&mut self, _device: Handle) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Fills in what `NV_CHANNEL_ALLOC_PARAMS` needs of the backend for a channel whose ring
    /// is at `ring_offset` of `area` and USERD at `userd_offset`: RM memory handles (nvk), or
    /// instance block, RAMFC, USERD and method buffer descriptors it allocated (VFIO).
    fn channel_params(
        &mut self,
        params: &mut ChannelAllocParams,
        area: &Buffer<Self::Memory>,
        ring_offset: u64,
        userd_offset: u64,
    ) -> Result<(), Self::Error>;

    /// Called after an engine object of `class` was created on `channel` (VFIO: allocate and
    /// promote the GR context buffers; nvk: the kernel does it).
    fn init_engine(
        &mut self,
        _channel: Handle,
        _class: u32,
        _object: Handle,
    ) -> Result<(), Self::Error> {
        Ok(())
    }

    /// The doorbell token from RM's work-submit token (the VFIO path ORs in the runlist
    /// (`<< 16`) on every arch, and bit 30 on GB20x; nvk uses RM's as is).
    fn submit_token(&mut self, _channel: Handle, rm_token: u32) -> Result<u32, Self::Error> {
        Ok(rm_token)
    }

    /// Registers a new channel where something besides RM must know it (nvk: UVM, with a VA
    /// range for its context buffers when it has a context share).
    fn register_channel(
        &mut self,
        _channel: Handle,
        _has_context_share: bool,
    ) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Services the GPU's events while a wait is long (VFIO: the GSP status queue: MMU faults,
    /// robust-channel errors); returns a fault it learned of.
    fn service_events(&mut self) -> Result<Option<FaultReport>, Self::Error> {
        Ok(None)
    }

    /// Whether [`Self::service_events`] reports channel faults as they happen (GSP-RM's
    /// events on the VFIO path). Where it does, a long compute wait asks the debugger for SM
    /// and MMU error states only now and then; where it does not (nvk: no event source),
    /// the debugger is the only way to see a fault, so it is asked every slice.
    fn faults_by_event(&self) -> bool {
        false
    }
}
