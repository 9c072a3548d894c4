//! The RM object tree a GPU is driven through, built once for every backend:
//!
//! ```text
//! client ─ device (NV01_DEVICE_0) ─┬─ subdevice (NV20_SUBDEVICE_0)
//!                                  ├─ VA space (FERMI_VASPACE_A)
//!                                  ├─ graphics channel group (KEPLER_CHANNEL_GROUP_A)
//!                                  │    ├─ context share (FERMI_CONTEXT_SHARE_A, async)
//!                                  │    └─ compute channel (*_CHANNEL_GPFIFO_A) ─ compute object
//!                                  ├─ copy channel group on COPYn (its own runlist)
//!                                  │    └─ copy channel ─ copy object (engine instance n)
//!                                  └─ debugger (GT200_DEBUGGER, on the compute object)
//! ```
//! CUDA builds the same tree (traced on the H200). Where the backends differ the step is a
//! [`Backend`] method; nothing here asks which backend it runs on.

use alloc::vec::Vec;
use core::fmt;

use nvbare_gsp::rm::alloc::{
    ChannelAllocParams, ChannelGroupAllocParams, CopyEngineAllocParams, CtxShareAllocParams,
    DebuggerAllocParams, SubdeviceAllocParams,
};
use nvbare_gsp::rm::alloc_flags::{ctxshare_flags, engine_type};
use nvbare_gsp::rm::classes as cls;
use nvbare_gsp::rm::ctrl::channel::{
    GpfifoScheduleParamsV570, GpfifoScheduleParamsV580, WorkSubmitTokenParams,
};
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::root::{ClassListV2ParamsV570, ClassListV2ParamsV580};
use zerocopy::FromZeros;

pub use super::copy_engines::{COPY_ENGINES, copy_engine_order};
use super::{Classes, Handle, RmAbi, RmApi};
use crate::gpfifo::GP_ENTRY_SIZE;
use crate::gpu::{Backend, Buffer, GpuError};

/// The step of setting up or driving the GPU that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Opening the GPU through the backend (device nodes, the RM client).
    Open,
    /// Reading what the device object needs (device instance).
    DeviceParams,
    /// `NV01_DEVICE_0`.
    AllocDevice,
    /// `NV20_SUBDEVICE_0`.
    AllocSubdevice,
    /// The class list.
    ClassList,
    /// The backend's own setup over the device.
    Attach,
    /// `FERMI_VASPACE_A`.
    AllocVaSpace,
    /// Binding the VA space (UVM registration, or the page directory).
    BindVaSpace,
    /// Graphics-engine facts.
    GrInfo,
    /// `KEPLER_CHANNEL_GROUP_A`.
    AllocChannelGroup,
    /// GPU memory.
    AllocMemory,
    /// What all channels share (error notifier).
    PrepareChannels,
    /// `FERMI_CONTEXT_SHARE_A`.
    AllocContextShare,
    /// The backend's part of a channel's parameters (instance memory, USERD).
    ChannelParams,
    /// `*_CHANNEL_GPFIFO_A`.
    AllocChannel,
    /// The compute or copy object on a channel.
    AllocEngineObject,
    /// The engine's context (golden context, promotion).
    InitEngine,
    /// `GT200_DEBUGGER`.
    AllocDebugger,
    /// `NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN`.
    WorkSubmitToken,
    /// Registering a channel beside RM (UVM).
    RegisterChannel,
    /// `NVA06C_CTRL_CMD_GPFIFO_SCHEDULE`.
    ScheduleChannelGroup,
    /// Servicing the GPU's events during a wait.
    ServiceEvents,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Open => "opening the GPU",
            Self::DeviceParams => "reading the device's identity",
            Self::AllocDevice => "allocating the device object (NV01_DEVICE_0)",
            Self::AllocSubdevice => "allocating the subdevice (NV20_SUBDEVICE_0)",
            Self::ClassList => "reading the class list",
            Self::Attach => "attaching to the device",
            Self::AllocVaSpace => "allocating the GPU VA space (FERMI_VASPACE_A)",
            Self::BindVaSpace => "binding the GPU VA space",
            Self::GrInfo => "reading the graphics engine's facts",
            Self::AllocChannelGroup => "allocating a channel group (KEPLER_CHANNEL_GROUP_A)",
            Self::AllocMemory => "allocating GPU memory",
            Self::PrepareChannels => "preparing channel resources (error notifier)",
            Self::AllocContextShare => "allocating the context share (FERMI_CONTEXT_SHARE_A)",
            Self::ChannelParams => "providing a channel's memory",
            Self::AllocChannel => "allocating a GPFIFO channel",
            Self::AllocEngineObject => "allocating an engine object on a channel",
            Self::InitEngine => "initialising an engine's context",
            Self::AllocDebugger => "allocating the debugger (GT200_DEBUGGER)",
            Self::WorkSubmitToken => "reading a channel's work-submit token",
            Self::RegisterChannel => "registering a channel",
            Self::ScheduleChannelGroup => "scheduling a channel group",
            Self::ServiceEvents => "servicing GPU events",
        })
    }
}

/// Graphics-engine facts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GrInfo {
    /// GPCs in the design.
    pub gpcs: u32,
    /// TPCs per GPC.
    pub tpcs_per_gpc: u32,
    /// SMs per TPC.
    pub sms_per_tpc: u32,
    /// Warps an SM holds.
    pub max_warps_per_sm: u32,
    /// `0x900` on Hopper.
    pub sm_version: u32,
    /// Enabled SMs.
    pub sm_count: u32,
}

impl GrInfo {
    /// The SM version as nvcc numbers it (90 on Hopper, 120 on GB20x).
    pub fn sm(&self) -> u32 {
        match self.sm_version {
            // NV2080_CTRL_GR_INFO_SM_VERSION_10_04: what RM reports on GB20x, whose ISA is
            // sm_120 (tinygrad maps it so; ctrl2080gr.h has no 12.x value).
            0xa04 => 120,
            v => (v >> 8) * 10 + (v & 0xf),
        }
    }
}

/// The engines a GPU runs work on, each with a channel and a timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// The compute engine (graphics channel group).
    Compute,
    /// The copy engine (its own channel group on an asynchronous copy engine when it can).
    Copy,
}

impl Engine {
    /// The engine's channel label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Compute => "compute",
            Self::Copy => "copy",
        }
    }
}

/// The device-level objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceObjects {
    /// `NV01_DEVICE_0`.
    pub device: Handle,
    /// `NV20_SUBDEVICE_0`.
    pub subdevice: Handle,
    /// `FERMI_VASPACE_A`.
    pub vaspace: Handle,
    /// The graphics channel group.
    pub channel_group: Handle,
    /// The chosen classes.
    pub classes: Classes,
    /// Every class the GPU offers.
    pub class_list: Vec<u32>,
    /// Graphics-engine facts.
    pub gr: GrInfo,
}

/// Wraps a backend error as the failure of `step`.
pub(crate) fn at<E: core::error::Error + 'static>(step: Step) -> impl FnOnce(E) -> GpuError<E> {
    move |source| GpuError::Backend { step, source }
}

/// The GPU's class list (`NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2`, in the RM's layout).
pub fn class_list<R: RmApi>(rm: &mut R, device: Handle) -> Result<Vec<u32>, R::Error> {
    Ok(match rm.abi() {
        RmAbi::R570 => {
            let mut cl = ClassListV2ParamsV570::new_zeroed();
            rm.control(device, cmd::NV0080_GPU_GET_CLASSLIST_V2, &mut cl)?;
            cl.classes().to_vec()
        }
        RmAbi::R580 => {
            let mut cl = ClassListV2ParamsV580::new_zeroed();
            rm.control(device, cmd::NV0080_GPU_GET_CLASSLIST_V2, &mut cl)?;
            cl.classes().to_vec()
        }
    })
}

/// Enables (schedules) every channel of channel group `group` (`NVA06C_CTRL_CMD_GPFIFO_SCHEDULE`,
/// in the RM's layout).
pub fn schedule<R: RmApi>(rm: &mut R, group: Handle) -> Result<(), R::Error> {
    match rm.abi() {
        RmAbi::R570 => {
            let mut p = GpfifoScheduleParamsV570 {
                b_enable: 1,
                b_skip_submit: 0,
            };
            rm.control(group, cmd::NVA06C_GPFIFO_SCHEDULE, &mut p)
        }
        RmAbi::R580 => {
            let mut p = GpfifoScheduleParamsV580 {
                b_enable: 1,
                b_skip_submit: 0,
                b_skip_enable: 0,
            };
            rm.control(group, cmd::NVA06C_GPFIFO_SCHEDULE, &mut p)
        }
    }
}

impl DeviceObjects {
    /// Builds the device, subdevice, VA space and graphics channel group.
    pub fn create<B: Backend>(b: &mut B) -> Result<Self, GpuError<B::Error>> {
        let client = b.client();
        let mut dp = b.device_params().map_err(at(Step::DeviceParams))?;
        let device = b
            .alloc(client, cls::NV01_DEVICE_0, &mut dp)
            .map_err(at(Step::AllocDevice))?;
        let subdevice = b
            .alloc(
                device,
                cls::NV20_SUBDEVICE_0,
                &mut SubdeviceAllocParams::default(),
            )
            .map_err(at(Step::AllocSubdevice))?;
        let class_list = class_list(b, device).map_err(at(Step::ClassList))?;
        let classes = Classes::choose(&class_list)?;
        b.attach(device, subdevice, &classes)
            .map_err(at(Step::Attach))?;
        let mut vs = b.vaspace_params();
        let vaspace = b
            .alloc(device, cls::FERMI_VASPACE_A, &mut vs)
            .map_err(at(Step::AllocVaSpace))?;
        b.bind_vaspace(device, subdevice, vaspace)
            .map_err(at(Step::BindVaSpace))?;
        let gr = b.gr_info(subdevice).map_err(at(Step::GrInfo))?;
        let mut cg = ChannelGroupAllocParams {
            engine_type: engine_type::GRAPHICS,
            ..Default::default()
        };
        let channel_group = b
            .alloc(device, cls::KEPLER_CHANNEL_GROUP_A, &mut cg)
            .map_err(at(Step::AllocChannelGroup))?;
        log::debug!(
            "RM objects: device {device:#x}, subdevice {subdevice:#x}, VA space {vaspace:#x}, \
             graphics group {channel_group:#x}; classes {classes:x?}; {gr:?}"
        );
        Ok(Self {
            device,
            subdevice,
            vaspace,
            channel_group,
            classes,
            class_list,
            gr,
        })
    }
}

/// A GPFIFO channel's RM side: what the submission code needs to drive it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmChannel {
    /// The channel object.
    pub handle: Handle,
    /// The engine object on it.
    pub engine_object: Handle,
    /// What the doorbell is rung with.
    pub token: u32,
    /// Offset of the ring in the channel area; USERD follows the ring.
    pub ring_offset: u64,
    /// Ring entries.
    pub entries: u32,
}

/// An asynchronous copy engine that would not take the copy channel, and why.
#[derive(Debug)]
pub struct CopyEngineRefusal<E> {
    /// The engine tried (`COPYn`).
    pub engine: u32,
    /// The step that failed.
    pub step: Step,
    /// Why.
    pub error: E,
}

/// The channel-level objects.
#[derive(Debug)]
pub struct ChannelObjects<E> {
    /// The compute channel (graphics group, with the context share).
    pub compute: RmChannel,
    /// The copy channel.
    pub copy: RmChannel,
    /// The debugger on the compute object.
    pub debugger: Handle,
    /// The asynchronous copy engine the copy channel runs on, when it has a group of its own.
    pub copy_engine: Option<u32>,
    /// The physical copy units RM reports behind that engine (0 when RM did not say).
    pub copy_pces: u32,
    /// Why each copy engine tried before it refused (at most one per engine tried).
    pub copy_refusals: heapless::Vec<CopyEngineRefusal<E>, { COPY_ENGINES.len() + 1 }>,
}

/// Bytes of the channel area per channel for a ring of `entries`: the ring, then USERD,
/// rounded to a power of two of at least 1 MiB.
pub fn channel_slot(entries: u32) -> u64 {
    let ring_bytes = u64::from(entries) * GP_ENTRY_SIZE as u64;
    (ring_bytes + 0x1000).next_power_of_two().max(0x10_0000)
}

/// Where one channel goes and what runs on it.
struct ChannelSpec {
    group: Handle,
    ctxshare: Handle,
    offset: u64,
    class: u32,
    copy_instance: Option<u32>,
}

struct Make<'a, M> {
    dev: &'a DeviceObjects,
    area: &'a Buffer<M>,
    entries: u32,
}

impl<M> Make<'_, M> {
    /// One channel in `group` with its engine object (and, for compute, the debugger).
    fn channel<B: Backend<Memory = M>>(
        &self,
        b: &mut B,
        spec: ChannelSpec,
        debugger: &mut Handle,
    ) -> Result<RmChannel, (Step, B::Error)> {
        let ChannelSpec {
            group,
            ctxshare,
            offset,
            class,
            copy_instance,
        } = spec;
        let ring_bytes = u64::from(self.entries) * GP_ENTRY_SIZE as u64;
        let mut p = ChannelAllocParams {
            gp_fifo_offset: self.area.gpu_va() + offset,
            gp_fifo_entries: self.entries,
            h_context_share: ctxshare,
            engine_type: 0,
            ..Default::default()
        };
        b.channel_params(&mut p, self.area, offset, offset + ring_bytes)
            .map_err(|e| (Step::ChannelParams, e))?;
        let handle = b
            .alloc(group, self.dev.classes.gpfifo, &mut p)
            .map_err(|e| (Step::AllocChannel, e))?;
        // A copy object names its engine instance, as CUDA's do; without it RM binds a
        // default engine, which moved the channel to the graphics runlist and made UVM refuse
        // it (work-submit token runlist 0).
        let engine = match copy_instance {
            Some(instance) => {
                let mut cp = CopyEngineAllocParams {
                    version: CopyEngineAllocParams::VERSION_INSTANCE,
                    engine_type: instance,
                };
                b.alloc(handle, class, &mut cp)
            }
            None => b.alloc_bare(handle, class),
        }
        .map_err(|e| (Step::AllocEngineObject, e))?;
        b.init_engine(handle, class, engine)
            .map_err(|e| (Step::InitEngine, e))?;
        if class == self.dev.classes.compute {
            let mut dbg = DebuggerAllocParams {
                h_app_client: b.client(),
                h_class3d_object: engine,
                ..Default::default()
            };
            *debugger = b
                .alloc(self.dev.device, cls::GT200_DEBUGGER, &mut dbg)
                .map_err(|e| (Step::AllocDebugger, e))?;
        }
        let mut tok = WorkSubmitTokenParams {
            work_submit_token: u32::MAX,
        };
        b.control(handle, cmd::NVC36F_GPFIFO_GET_WORK_SUBMIT_TOKEN, &mut tok)
            .map_err(|e| (Step::WorkSubmitToken, e))?;
        let token = b
            .submit_token(handle, tok.work_submit_token)
            .map_err(|e| (Step::WorkSubmitToken, e))?;
        b.register_channel(handle, ctxshare != 0)
            .map_err(|e| (Step::RegisterChannel, e))?;
        Ok(RmChannel {
            handle,
            engine_object: engine,
            token,
            ring_offset: offset,
            entries: self.entries,
        })
    }
}

impl<E: core::error::Error + 'static> ChannelObjects<E> {
    /// Creates the compute channel in the graphics group (sharing one VA-space context) and the
    /// copy channel in a group of its own on an asynchronous copy engine (falling back to the
    /// graphics group), with rings and USERD in `area` (two [`channel_slot`]s); `prefer`
    /// is the copy engine tried first (then [`COPY_ENGINES`] in order).
    pub fn create<B: Backend<Error = E>>(
        b: &mut B,
        dev: &DeviceObjects,
        area: &Buffer<B::Memory>,
        entries: u32,
        prefer: Option<u32>,
    ) -> Result<Self, GpuError<E>> {
        let slot = channel_slot(entries);
        b.prepare_channels(dev.device)
            .map_err(at(Step::PrepareChannels))?;
        let mut cs = CtxShareAllocParams {
            h_va_space: dev.vaspace,
            flags: ctxshare_flags::SUBCONTEXT.encode(ctxshare_flags::SUBCONTEXT_ASYNC),
            ..Default::default()
        };
        let ctxshare = b
            .alloc(dev.channel_group, cls::FERMI_CONTEXT_SHARE_A, &mut cs)
            .map_err(at(Step::AllocContextShare))?;
        let make = Make { dev, area, entries };
        let mut debugger = 0;
        let as_error = |(step, source)| GpuError::Backend { step, source };
        let compute = make
            .channel(
                b,
                ChannelSpec {
                    group: dev.channel_group,
                    ctxshare,
                    offset: 0,
                    class: dev.classes.compute,
                    copy_instance: None,
                },
                &mut debugger,
            )
            .map_err(as_error)?;
        // The copy channel gets a channel group of its own on an asynchronous copy engine, so
        // copies run beside kernels instead of taking turns with them in the graphics group.
        // As CUDA does it: the group names the VA space and the engine, and there is no context
        // share. Where no such engine takes it, the copy channel joins the graphics group (as
        // tinygrad's driver always does).
        let mut copy = None;
        let mut copy_engine = None;
        let mut copy_pces = 0;
        let mut copy_refusals = heapless::Vec::new();
        let order = copy_engine_order(b, dev.subdevice, prefer);
        log::debug!("copy engines to try, with their PCEs: {order:?}");
        for (ce, pces) in order {
            let Some(et) = engine_type::copy(ce) else {
                continue;
            };
            let mut cg = ChannelGroupAllocParams {
                engine_type: et,
                h_va_space: dev.vaspace,
                ..Default::default()
            };
            let g = match b.alloc(dev.device, cls::KEPLER_CHANNEL_GROUP_A, &mut cg) {
                Ok(g) => g,
                Err(error) => {
                    log::info!("COPY{ce} refused a channel group of its own: {error}");
                    // Cannot overflow: one refusal per engine tried (COPY_ENGINES and `prefer`).
                    let _ = copy_refusals.push(CopyEngineRefusal {
                        engine: ce,
                        step: Step::AllocChannelGroup,
                        error,
                    });
                    continue;
                }
            };
            let made = make
                .channel(
                    b,
                    ChannelSpec {
                        group: g,
                        ctxshare: 0,
                        offset: slot,
                        class: dev.classes.copy,
                        copy_instance: Some(ce),
                    },
                    &mut debugger,
                )
                .and_then(|ch| {
                    schedule(b, g)
                        .map(|()| ch)
                        .map_err(|e| (Step::ScheduleChannelGroup, e))
                });
            match made {
                Ok(ch) => {
                    copy_engine = Some(ce);
                    copy_pces = pces;
                    copy = Some(ch);
                    break;
                }
                Err((step, error)) => {
                    log::info!("COPY{ce} refused the copy channel ({step}): {error}");
                    // Cannot overflow: one refusal per engine tried (COPY_ENGINES and `prefer`).
                    let _ = copy_refusals.push(CopyEngineRefusal {
                        engine: ce,
                        step,
                        error,
                    });
                    let _ = b.free(dev.device, g);
                }
            }
        }
        let copy = match copy {
            Some(c) => c,
            None => make
                .channel(
                    b,
                    ChannelSpec {
                        group: dev.channel_group,
                        ctxshare,
                        offset: slot,
                        class: dev.classes.copy,
                        copy_instance: None,
                    },
                    &mut debugger,
                )
                .map_err(as_error)?,
        };
        schedule(b, dev.channel_group).map_err(at(Step::ScheduleChannelGroup))?;
        Ok(Self {
            compute,
            copy,
            debugger,
            copy_engine,
            copy_pces,
            copy_refusals,
        })
    }

    /// The channel of `engine`.
    pub fn channel(&self, engine: Engine) -> &RmChannel {
        match engine {
            Engine::Compute => &self.compute,
            Engine::Copy => &self.copy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GrInfo;

    #[test]
    fn sm_versions_read_as_nvcc_names_them() {
        let sm = |sm_version| {
            GrInfo {
                sm_version,
                ..GrInfo::default()
            }
            .sm()
        };
        assert_eq!(sm(0x800), 80);
        assert_eq!(sm(0x806), 86);
        assert_eq!(sm(0x809), 89);
        assert_eq!(sm(0x900), 90);
        assert_eq!(sm(0xa00), 100);
        assert_eq!(sm(0xa04), 120, "GB20x");
    }
}
