//! The channel group and its GPFIFO channels: compute and copy channels with
//! their rings and USERD in one video-memory area, work-submit tokens, UVM
//! registration, the debugger on the compute engine, and the attempt to give
//! the copy channel a channel group of its own on an asynchronous copy engine.

use nvbare_gsp::rm::alloc::{
    ChannelAllocParams, ChannelGroupAllocParams, CopyEngineAllocParams, CtxShareAllocParams,
    DebuggerAllocParams, MemoryAllocParams,
};
use nvbare_gsp::rm::alloc_flags::{ctxshare_flags, engine_type, nvos32_type};
use nvbare_gsp::rm::classes as cls;
use nvbare_gsp::rm::ctrl::cmd;

use super::{Device, HUGE_PAGE, RmChannel, SMALL_PAGE, va_alloc};
use crate::nvk::NvkError;
use crate::nvk::ctrl;
use crate::nvk::flags;
use crate::nvk::mem::{Buffer, Placement};
use crate::nvk::rm::Handle;
use crate::nvk::sys;

impl Device {
    /// Adds one engine's refusal to [`Self::copy_group_error`].
    fn note_copy_error(&mut self, e: String) {
        match &mut self.copy_group_error {
            Some(all) => {
                all.push_str("; ");
                all.push_str(&e);
            }
            None => self.copy_group_error = Some(e),
        }
    }

    /// Creates the compute and copy channels in one channel group, sharing one
    /// VA-space context, with rings and USERD in one video-memory area.
    pub fn create_channels(&mut self, entries: u32) -> Result<(), NvkError> {
        let ring_bytes = u64::from(entries) * 8;
        let slot = (ring_bytes + 0x1000).next_power_of_two().max(0x10_0000);
        let area_size = slot * 2;
        let va = va_alloc(true, area_size, HUGE_PAGE)?;
        let area = self.alloc_vram_at(va, area_size, SMALL_PAGE, true, true)?;

        // The error notifier: uncached system memory (NV01_MEMORY_SYSTEM, NOTIFIER).
        let (attr, attr2, flags) = flags::sysmem_uncached_alloc();
        let mut np = MemoryAllocParams {
            owner: self.rm.root(),
            type_: nvos32_type::NOTIFIER,
            flags,
            attr,
            attr2,
            format: 6,
            size: 48 << 20,
            alignment: SMALL_PAGE,
            limit: (48 << 20) - 1,
            ..Default::default()
        };
        let notifier_handle = self
            .rm
            .alloc(self.device, cls::NV01_MEMORY_SYSTEM, Some(&mut np))?;
        let nva = va_alloc(false, 48 << 20, SMALL_PAGE)?;
        let notifier = Buffer {
            gpu_va: nva,
            size: 48 << 20,
            placement: Placement::Host,
            cpu: None,
            handle: notifier_handle,
        };
        self.map_to_gpu(&notifier, false)?;

        let mut cs = CtxShareAllocParams {
            h_va_space: self.vaspace,
            flags: ctxshare_flags::SUBCONTEXT.encode(ctxshare_flags::SUBCONTEXT_ASYNC),
            ..Default::default()
        };
        let ctxshare = self.rm.alloc(
            self.channel_group,
            cls::FERMI_CONTEXT_SHARE_A,
            Some(&mut cs),
        )?;

        let make = |dev: &mut Self,
                    group: Handle,
                    ctxshare: Handle,
                    engine_type: u32,
                    offset: u64,
                    engine_class: u32,
                    copy_instance: Option<u32>|
         -> Result<RmChannel, NvkError> {
            let mut p = ChannelAllocParams {
                h_object_error: notifier.handle,
                h_object_buffer: area.handle,
                gp_fifo_offset: area.gpu_va + offset,
                gp_fifo_entries: entries,
                h_context_share: ctxshare,
                engine_type,
                ..Default::default()
            };
            p.h_userd_memory[0] = area.handle;
            p.userd_offset[0] = offset + ring_bytes;
            let handle = dev.rm.alloc(group, dev.classes.gpfifo, Some(&mut p))?;
            // A copy object names its engine instance, as CUDA's do; without it RM
            // binds a default engine, which moved the channel to the graphics
            // runlist and made UVM refuse it (work-submit token runlist 0).
            let engine = match copy_instance {
                Some(instance) => {
                    let mut cp = CopyEngineAllocParams {
                        version: CopyEngineAllocParams::VERSION_INSTANCE,
                        engine_type: instance,
                    };
                    dev.rm.alloc(handle, engine_class, Some(&mut cp))?
                }
                None => dev.rm.alloc::<u8>(handle, engine_class, None)?,
            };
            if engine_class == dev.classes.compute {
                let mut dbg = DebuggerAllocParams {
                    h_app_client: dev.rm.root(),
                    h_class3d_object: engine,
                    ..Default::default()
                };
                dev.debugger = dev
                    .rm
                    .alloc(dev.device, cls::GT200_DEBUGGER, Some(&mut dbg))?;
            }
            let mut tok = ctrl::WorkSubmitTokenParams {
                work_submit_token: u32::MAX,
            };
            dev.rm
                .control(handle, cmd::NVC36F_GPFIFO_GET_WORK_SUBMIT_TOKEN, &mut tok)?;
            // UVM maps a channel's context buffers into a VA range it is given;
            // a channel without a context share (a copy engine's own group, which
            // has no engine context) gets an empty range, as CUDA gives it.
            let (base, length) = if ctxshare == Handle::default() {
                (0, 0)
            } else {
                (va_alloc(true, 0x400_0000, 0x1000)?, 0x400_0000)
            };
            let mut rc = sys::UvmRegisterChannelParams {
                gpu_uuid: dev.uuid,
                rm_ctrl_fd: dev.rm.ctl_fd(),
                h_client: dev.rm.root(),
                h_channel: handle,
                base,
                length,
                ..Default::default()
            };
            dev.uvm.call(&mut rc, "UVM_REGISTER_CHANNEL")?;
            Ok(RmChannel {
                handle,
                token: tok.work_submit_token,
                ring_offset: offset,
                entries,
            })
        };
        let compute_class = self.classes.compute;
        let copy_class = self.classes.copy;
        let group = self.channel_group;
        let compute = make(self, group, ctxshare, 0, 0, compute_class, None)?;
        let mut sched = ctrl::GpfifoSchedule {
            b_enable: 1,
            b_skip_submit: 0,
            b_skip_enable: 0,
        };
        // The copy channel gets a channel group of its own on an asynchronous copy
        // engine, so copies run beside kernels instead of taking turns with them in
        // the graphics group. As CUDA does it (traced on the H200): the group names
        // the VA space and the engine, and there is no context share. Where no such
        // engine takes it, the copy channel joins the graphics group (as tinygrad's
        // driver always does).
        let mut copy = None;
        for ce in [2, 1, 3, 4] {
            let Some(et) = engine_type::copy(ce) else {
                continue;
            };
            let mut cg = ChannelGroupAllocParams {
                engine_type: et,
                h_va_space: self.vaspace,
                ..Default::default()
            };
            let g = match self
                .rm
                .alloc(self.device, cls::KEPLER_CHANNEL_GROUP_A, Some(&mut cg))
            {
                Ok(g) => g,
                Err(e) => {
                    self.note_copy_error(format!("COPY{ce} channel group: {e}"));
                    continue;
                }
            };
            let made =
                make(self, g, Handle::default(), 0, slot, copy_class, Some(ce)).and_then(|ch| {
                    self.rm
                        .control(g, cmd::NVA06C_GPFIFO_SCHEDULE, &mut sched)
                        .map(|()| ch)
                });
            match made {
                Ok(ch) => {
                    self.copy_engine = Some(ce);
                    copy = Some(ch);
                    break;
                }
                Err(e) => {
                    self.note_copy_error(format!("COPY{ce}: {e}"));
                    let _ = self.rm.free(self.device, g);
                }
            }
        }
        let copy = match copy {
            Some(c) => c,
            None => make(self, group, ctxshare, 0, slot, copy_class, None)?,
        };
        self.rm
            .control(self.channel_group, cmd::NVA06C_GPFIFO_SCHEDULE, &mut sched)?;

        self.channel_area = Some(area);
        self.notifier = Some(notifier);
        self.compute = Some(compute);
        self.copy = Some(copy);
        Ok(())
    }
}
