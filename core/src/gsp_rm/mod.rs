//! RM over the GSP-RM nvbare booted: [`GspRm<P>`] is the VFIO path's [`Backend`], so the
//! same [`Gpu`] that drives a GPU through NVIDIA's kernel driver drives one we own.
//!
//! - The RM API ([`RmApi`]): `GSP_RM_ALLOC`, `GSP_RM_CONTROL` and `FREE` RPCs in our root
//!   client, with handles we choose ([`handles`]); an `NV_STATUS` other than `NV_OK` is a
//!   [`GspRmError::Refused`] naming the class or command.
//! - Memory ([`memory`]): our own VRAM and VA allocators, page tables in VRAM written
//!   through BAR1 (physical mode) or PRAMIN ([`vram`]), host memory from the platform's DMA
//!   allocator; `SET_PAGE_DIRECTORY` points the VA space at our root.
//! - Channels ([`channel`]): instance block, RAMFC, USERD and method buffer described
//!   physically in the allocation parameters; work-submit tokens with the runlist (bit 30
//!   on GB20x); the usermode doorbell at BAR0 0xbb0000 + 0x90.
//! - The golden context and each compute channel's context promotion (`golden`).
//! - Events (`events`): MMU faults and robust-channel errors from the status queue as
//!   typed [`FaultReport`]s.
//!
//! [`GspRm::open`] boots GSP-RM and builds the GPU layer over it; [`GspRm::close`] frees
//! every RM object and all memory, unloads GSP-RM, waits for its core to halt and gives the
//! platform back. A GPU whose process died without closing is found with WPR2 up by the
//! next open, whose boot resets it.

pub mod channel;
pub mod error;
mod events;
mod golden;
pub mod handles;
pub mod memory;
mod rm_calls;
pub mod vram;

use alloc::boxed::Box;
use alloc::vec::Vec;

use nvbare_gsp::abi::Nv0080CtrlDmaSetPageDirectoryParams;
use nvbare_gsp::rm::alloc::{ChannelAllocParams, DeviceAllocParams, VaSpaceAllocParamsV570};
use nvbare_gsp::rm::alloc_flags::{device_va_mode, vaspace_flags};
use nvbare_gsp::rm::ctrl::channel::set_page_directory_flags as spd;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::subdevice::{DEVICE_INFO_TABLE_MAX_DEVICES, FifoDeviceInfoTableParams};
use nvbare_gsp::rpc::commands::Command;
use nvbare_gsp::rpc::events::GspMessage;

pub use error::{GspRmError, MemoryError, OpenError, RmCall};
pub use golden::ContextBuffer;
pub use memory::{GspMemory, MemoryUse};

use crate::boot::{self, BootError, BootOptions, Firmware, Gsp, TeardownReport};
use crate::chip::{Arch, FIRMWARE_VERSION, MmuFormat};
use crate::gpfifo::BAR0_USERMODE_BASE;
use crate::gpu::{Backend, Buffer, CardInfo, Gpu, GpuConfig, MemoryRequest};
use crate::hal::Platform;
use crate::rm::{Classes, FaultReport, GrInfo, Handle, RmApi};
use channel::Channels;
use handles::Handles;
use memory::MemoryManager;
use vram::VramWindow;

/// Our root client.
pub const CLIENT: Handle = 0xc1d0_0000;
/// The client of the golden-context channel (RM's own work, beside ours).
pub const GOLDEN_CLIENT: Handle = 0xc1d0_0001;

/// How the CPU writes VRAM (page tables, buffers' CPU views).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VramAccess {
    /// Through BAR1 when the platform maps it, else PRAMIN.
    #[default]
    Auto,
    /// Page tables through PRAMIN (BAR1 writes fault behind some IOMMUs); VRAM buffers then
    /// have no CPU view.
    Pramin,
}

/// How to open a GPU over GSP-RM.
#[derive(Clone, Debug, Default)]
pub struct GspRmOptions {
    /// How to boot GSP-RM (registry, wait bounds, firmware checks).
    pub boot: BootOptions,
    /// The GPU layer's sizes and wait bounds.
    pub gpu: GpuConfig,
    /// How the CPU reaches VRAM.
    pub vram_access: VramAccess,
}

/// A failed open: the error and the platform back (GSP-RM unloaded, or never booted).
pub struct OpenFailure<P> {
    /// What went wrong.
    pub error: OpenError,
    /// The platform.
    pub platform: P,
    /// How the unload went, when GSP-RM had booted.
    pub teardown: Option<Result<TeardownReport, BootError>>,
}

impl<P> core::fmt::Debug for OpenFailure<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("OpenFailure")
            .field("error", &self.error)
            .field("teardown", &self.teardown)
            .finish_non_exhaustive()
    }
}

impl<P> core::fmt::Display for OpenFailure<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.error.fmt(f)
    }
}

/// How a close went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CloseReport {
    /// RM objects freed with the clients.
    pub objects_freed: usize,
    /// Memory still in use after the RM emulation freed its own: buffers the caller still
    /// holds (their VRAM is reclaimed by the next boot; their DMA memory stays with the
    /// platform until it is dropped).
    pub left: MemoryUse,
    /// The unload.
    pub teardown: TeardownReport,
}

/// Why a close was not clean (the platform comes back either way).
#[derive(Debug, thiserror::Error)]
pub enum CloseError {
    /// Freeing the RM clients failed; GSP-RM was unloaded anyway, and `teardown` says how
    /// that went (the unload's report is not lost with the free's error).
    #[error("freeing the RM objects: {source}")]
    Free {
        /// The first free that failed.
        #[source]
        source: GspRmError,
        /// The unload that followed it.
        teardown: TeardownReport,
    },
    /// Unloading GSP-RM failed (the GPU was reset where the platform can).
    #[error("unloading GSP-RM: {0}")]
    Teardown(#[source] BootError),
}

/// The unload's outcome of a shutdown made because an open failed (a failure to free the
/// RM objects is not reported: the open's own error is).
// The result goes into `OpenFailure::teardown` as it is (that field's type).
#[allow(clippy::result_large_err)]
fn teardown_of(r: Result<CloseReport, CloseError>) -> Result<TeardownReport, BootError> {
    match r {
        Ok(c) => Ok(c.teardown),
        Err(CloseError::Teardown(e)) => Err(e),
        Err(CloseError::Free { teardown, .. }) => Ok(teardown),
    }
}

/// RM over a GSP-RM we booted: the VFIO path's backend.
pub struct GspRm<P: Platform> {
    gsp: Gsp<P>,
    client: Handle,
    golden_client: Handle,
    handles: Handles,
    mm: MemoryManager,
    channels: Channels,
    /// The context buffers GSP-RM's sizes call for.
    context: Vec<ContextBuffer>,
    /// Memory that lives until shutdown: the golden context's (and a channel's context
    /// buffers until its promotion succeeded).
    resident: Vec<Buffer<GspMemory>>,
    /// Each compute channel's promoted context buffers, freed with the channel.
    channel_context: alloc::collections::BTreeMap<Handle, Vec<Buffer<GspMemory>>>,
    device: Handle,
    subdevice: Handle,
    arch: Arch,
    device_id: u16,
}

impl<P: Platform> core::fmt::Debug for GspRm<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GspRm")
            .field("chip", &self.gsp.chip())
            .field("objects", &self.handles.len())
            .field("memory", &self.mm.in_use())
            .finish_non_exhaustive()
    }
}

fn boxed<P>(
    error: OpenError,
    platform: P,
    teardown: Option<Result<TeardownReport, BootError>>,
) -> Box<OpenFailure<P>> {
    Box::new(OpenFailure {
        error,
        platform,
        teardown,
    })
}

impl<P: Platform> GspRm<P> {
    /// Boots GSP-RM on `platform` with `firmware`, sets RM up over it and opens the GPU
    /// layer (object tree, channels, engines). On failure the platform comes back, GSP-RM
    /// unloaded.
    pub fn open(
        platform: P,
        firmware: &Firmware<'_>,
        options: &GspRmOptions,
    ) -> Result<Gpu<GspRm<P>>, Box<OpenFailure<P>>> {
        let gsp = boot::boot(platform, firmware, &options.boot)
            .map_err(|f| boxed(OpenError::Boot(Box::new(f.error)), f.platform, None))?;
        let rm = Self::over(gsp, options.vram_access)?;
        Gpu::open_or_give_back(rm, options.gpu).map_err(|(e, rm)| {
            let (platform, r) = rm.shutdown();
            boxed(OpenError::Gpu(Box::new(e)), platform, Some(teardown_of(r)))
        })
    }

    /// RM over a booted GSP-RM: the clients, BAR1 in physical mode, the page tables, the
    /// golden context. On failure GSP-RM is unloaded and the platform comes back.
    pub fn over(gsp: Gsp<P>, access: VramAccess) -> Result<Self, Box<OpenFailure<P>>> {
        let window = match (access, gsp.platform().bar1()) {
            (VramAccess::Auto, Some(bar1)) => VramWindow::Bar1(bar1),
            _ => VramWindow::Pramin(gsp.chip().arch()),
        };
        let arch = gsp.chip().arch();
        let version = match arch.mmu_format() {
            MmuFormat::Ver2 => nvbare_mmu::MmuVersion::Ver2,
            MmuFormat::Ver3 => nvbare_mmu::MmuVersion::Ver3,
        };
        let usable = memory::usable_vram(&gsp.info().fb_regions, gsp.usable_vram_end());
        let mm = match MemoryManager::new(usable, version, window) {
            Ok(mm) => mm,
            Err(e) => {
                let error = OpenError::Setup {
                    step: "the memory manager",
                    source: e.into(),
                };
                let (p, t) = gsp.shutdown();
                return Err(boxed(error, p, Some(t)));
            }
        };
        // CAST: the device id is config bytes 2..4.
        let device_id = gsp.platform().config_read(2, 2).map_or(0, |v| v as u16);
        let mut rm = Self {
            gsp,
            client: CLIENT,
            golden_client: GOLDEN_CLIENT,
            handles: Handles::new(),
            mm,
            channels: Channels::default(),
            context: Vec::new(),
            resident: Vec::new(),
            channel_context: alloc::collections::BTreeMap::new(),
            device: 0,
            subdevice: 0,
            arch,
            device_id,
        };
        match rm.setup() {
            Ok(()) => Ok(rm),
            Err(error) => {
                let (p, r) = rm.shutdown();
                Err(boxed(error, p, Some(teardown_of(r))))
            }
        }
    }

    fn setup(&mut self) -> Result<(), OpenError> {
        let at = |step| move |source| OpenError::Setup { step, source };
        vram::bar1_physical(self.gsp.platform(), self.arch)
            .map_err(|e| at("BAR1 in physical mode")(e.into()))?;
        self.alloc_client(self.client)
            .map_err(at("our RM client"))?;
        self.alloc_client(self.golden_client)
            .map_err(at("the golden-context client"))?;
        let classes = Classes::choose(&self.gsp.info().classes)?;
        self.create_golden(&classes)
            .map_err(at("the golden context"))?;
        Ok(())
    }

    /// Frees every RM object (both clients) and all memory the RM emulation holds, unloads
    /// GSP-RM, waits for its core to halt and gives the platform back. Buffers the caller
    /// still holds are reported in [`CloseReport::left`].
    pub fn shutdown(mut self) -> (P, Result<CloseReport, CloseError>) {
        let before = self.handles.len();
        let mut failed = None;
        for client in [self.client, self.golden_client] {
            if self.handles.get(client).is_none() {
                continue;
            }
            // After a transport failure (GSP-RM silent, the device gone) the unload below
            // would wait in vain too: do not wait twice for the frees.
            if matches!(failed, Some(GspRmError::Rpc { .. })) {
                break;
            }
            if let Err(e) = self.free_in(client, 0, client) {
                log::warn!("freeing RM client {client:#x}: {e}");
                failed.get_or_insert(e);
            }
        }
        self.handles.clear();
        self.channels.clear(&mut self.mm);
        let context = core::mem::take(&mut self.channel_context);
        for b in context.into_values().flatten() {
            self.mm.free(self.gsp.platform_mut(), b);
        }
        for b in core::mem::take(&mut self.resident) {
            self.mm.free(self.gsp.platform_mut(), b);
        }
        let left = self.mm.in_use();
        let Self { gsp, .. } = self;
        let (platform, t) = gsp.shutdown();
        let result = match (t, failed) {
            (Err(e), _) => Err(CloseError::Teardown(e)),
            (Ok(teardown), Some(source)) => Err(CloseError::Free { source, teardown }),
            (Ok(teardown), None) => Ok(CloseReport {
                objects_freed: before,
                left,
                teardown,
            }),
        };
        (platform, result)
    }

    /// Closes a GPU opened by [`Self::open`]: the GPU layer's memory, then
    /// [`Self::shutdown`]. Wait for the work first ([`Gpu::sync`]).
    pub fn close(gpu: Gpu<GspRm<P>>) -> (P, Result<CloseReport, CloseError>) {
        gpu.close().shutdown()
    }

    /// The booted GSP-RM (its static info, boot report, RPC channel).
    pub fn gsp(&self) -> &Gsp<P> {
        &self.gsp
    }

    /// The platform.
    pub fn platform(&self) -> &P {
        self.gsp.platform()
    }

    /// Memory in use now.
    pub fn memory_use(&self) -> MemoryUse {
        self.mm.in_use()
    }

    /// RM objects alive in our two clients (the clients included).
    pub fn live_objects(&self) -> usize {
        self.handles.len()
    }
}

/// `NV0080_CTRL_DMA_SET_PAGE_DIRECTORY_PARAMS.pasid` and the RPC's `pasid` for "none", as
/// tinygrad sends it.
const NO_PASID: u32 = u32::MAX;

impl<P: Platform> Backend for GspRm<P> {
    type Clock = P::Clock;
    type Usermode = P;
    type Memory = GspMemory;
    type VaSpaceParams = VaSpaceAllocParamsV570;

    fn clock(&self) -> &P::Clock {
        self.gsp.platform().clock()
    }

    fn usermode(&self) -> &P {
        self.gsp.platform()
    }

    fn usermode_base(&self) -> u32 {
        BAR0_USERMODE_BASE
    }

    fn alloc_memory(&mut self, req: &MemoryRequest) -> Result<Buffer<GspMemory>, GspRmError> {
        let (p, mm) = (self.gsp.platform_mut(), &mut self.mm);
        Ok(mm.alloc(p, req)?)
    }

    fn free_memory(&mut self, buf: Buffer<GspMemory>) {
        let (p, mm) = (self.gsp.platform_mut(), &mut self.mm);
        mm.free(p, buf)
    }

    fn device_params(&mut self) -> Result<DeviceAllocParams, GspRmError> {
        Ok(DeviceAllocParams {
            device_id: 0,
            h_client_share: self.client,
            va_mode: device_va_mode::OPTIONAL_MULTIPLE_VASPACES,
            ..Default::default()
        })
    }

    fn attach(
        &mut self,
        device: Handle,
        subdevice: Handle,
        _classes: &Classes,
    ) -> Result<(), GspRmError> {
        self.device = device;
        self.subdevice = subdevice;
        let mut base = 0;
        // Bounded by the table's size in ctrl2080fifo.h: a GSP-RM that keeps saying bMore
        // past it is answered with an error, not followed forever.
        while base < DEVICE_INFO_TABLE_MAX_DEVICES {
            let mut t = FifoDeviceInfoTableParams {
                base_index: base,
                ..Default::default()
            };
            self.control(subdevice, cmd::NV2080_FIFO_GET_DEVICE_INFO_TABLE, &mut t)?;
            let got = t.returned();
            self.channels.learn_runlists(got);
            // CAST: at most 32 entries per call.
            base += got.len() as u32;
            if t.b_more == 0 || got.is_empty() {
                return Ok(());
            }
        }
        Err(GspRmError::DeviceInfoTableTooLong { entries: base })
    }

    fn vaspace_params(&self) -> VaSpaceAllocParamsV570 {
        VaSpaceAllocParamsV570 {
            va_base: 0x1000,
            va_size: 0x0001_ffff_fb00_0000,
            flags: vaspace_flags::ENABLE_PAGE_FAULTING | vaspace_flags::IS_EXTERNALLY_OWNED,
            ..Default::default()
        }
    }

    fn bind_vaspace(
        &mut self,
        device: Handle,
        _subdevice: Handle,
        vaspace: Handle,
    ) -> Result<(), GspRmError> {
        let (root, entries) = self.mm.root();
        let params = Nv0080CtrlDmaSetPageDirectoryParams {
            phys_address: root,
            num_entries: entries,
            flags: spd::APERTURE.encode(spd::APERTURE_VIDMEM)
                | spd::ALL_CHANNELS.encode(spd::ALL_CHANNELS_TRUE),
            h_va_space: vaspace,
            ch_id: 0,
            // ID + 1 of the one subdevice.
            sub_device_id: 1,
            pasid: NO_PASID,
        };
        let call = RmCall::SetPageDirectory { vaspace };
        let c = Command::set_page_directory(self.client, device, NO_PASID, params);
        match self.call(call, &c)? {
            GspMessage::Ack(_) => Ok(()),
            _ => Err(GspRmError::UnexpectedReply { call }),
        }
    }

    fn gr_info(&mut self, _subdevice: Handle) -> Result<GrInfo, GspRmError> {
        let g = self.gsp.info().gr;
        Ok(GrInfo {
            gpcs: g.gpcs,
            tpcs_per_gpc: g.tpcs_per_gpc,
            sms_per_tpc: g.sms_per_tpc,
            max_warps_per_sm: g.max_warps_per_sm,
            sm_version: g.sm_version,
            sm_count: g.sm_count,
        })
    }

    fn card_info(&mut self, _subdevice: Handle) -> CardInfo {
        let info = self.gsp.info();
        CardInfo {
            name: info.name.clone(),
            rm: alloc::format!("GSP-RM {FIRMWARE_VERSION}, booted by nvbare"),
            vram_bytes: info.vram_bytes,
            pci: Some(self.gsp.platform().pci_address()),
            device_id: self.device_id,
        }
    }

    fn channel_params(
        &mut self,
        params: &mut ChannelAllocParams,
        area: &Buffer<GspMemory>,
        _ring_offset: u64,
        userd_offset: u64,
    ) -> Result<(), GspRmError> {
        self.channels
            .fill_params(&mut self.mm, params, area, userd_offset)
    }

    fn init_engine(
        &mut self,
        channel: Handle,
        class: u32,
        _object: Handle,
    ) -> Result<(), GspRmError> {
        if channel::is_compute(class) {
            self.promote_channel(channel)?;
        }
        Ok(())
    }

    fn submit_token(&mut self, channel: Handle, rm_token: u32) -> Result<u32, GspRmError> {
        self.channels.token(channel, rm_token, self.arch)
    }

    fn faults_by_event(&self) -> bool {
        // MMU_FAULT_QUEUED, RC_TRIGGERED and OS_ERROR_LOG arrive on the status queue.
        true
    }

    fn service_events(&mut self) -> Result<Option<FaultReport>, GspRmError> {
        if !self.gsp.platform().is_present() {
            return Err(GspRmError::DeviceGone);
        }
        self.gsp
            .rpc()
            .poll()
            .map_err(|e| GspRmError::Events(Box::new(e)))?;
        let events: Vec<_> = self.gsp.rpc_state().drain_events().collect();
        let channels = &self.channels;
        Ok(events::fault_report(events, |chid, runlist, engine| {
            channels.owns(chid, runlist, engine)
        }))
    }
}
