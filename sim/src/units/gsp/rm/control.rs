//! `GSP_RM_CONTROL`: the controls nvbare and tinygrad send, with the checks and statuses
//! of OpenRM 570.144.
//!
//! Generic checks: an unknown client `NV_ERR_INVALID_OBJECT_HANDLE`
//! (`_serverLockClientWithLockInfo`); an unknown object `NV_ERR_OBJECT_NOT_FOUND`
//! (`clientGetResourceRef` from `serverControl`, rs_server.c); a command the object does
//! not export `NV_ERR_NOT_SUPPORTED` and a parameter block of the wrong size
//! `NV_ERR_INVALID_PARAM_STRUCT` (`resControlLookup_IMPL`, rs_resource.c). A command's
//! interface is its upper 16 bits (`(class interface id << 8) | message id`).
//!
//! `NV2080_CTRL_CMD_GR_GET_INFO` carries a pointer to its list: the kernel RM answers it from
//! the static GR info it fetched with `NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_INFO`, and
//! GSP-RM does not export it (`NV_ERR_NOT_SUPPORTED`); tinygrad's PCI path asks the internal
//! one, as the kernel RM does.

use nvbare_gsp::abi::RpcGspRmControl;
use nvbare_gsp::rm::NvStatus;
use nvbare_gsp::rm::ctrl::channel::{
    BindParams, CopyServerReservedPdesParams, GpfifoScheduleParamsV570, WorkSubmitTokenParams,
};
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::debugger::{ReadAllSmErrorStatesParams, ReadMmuFaultInfoParams};
use nvbare_gsp::rm::ctrl::fb::FbFlushGpuCacheParams;
use nvbare_gsp::rm::ctrl::gr::{
    GrGetContextBuffersInfoParams, InternalStaticGrGetInfoParams, PromoteCtxParams,
};
use nvbare_gsp::rm::ctrl::root::BuildVersionV2Params;
use nvbare_gsp::rm::ctrl::subdevice::{
    FifoDeviceInfoTableParams, GidInfoParams, GpuNameStringParams, engine_data_index,
};
use nvbare_gsp::rm::r570::{ClassListV2Params, FbGetInfoV2Params};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::{Handle, Kind, RmDb, RmError, rm_err};
use crate::device::Cx;
use crate::units::gsp::facts;

/// `NV2080_CTRL_CMD_PERF_BOOST` (`ctrl2080perf.h`).
pub const NV2080_PERF_BOOST: u32 = 0x2080_200a;
/// `NV2080_CTRL_CMD_GR_GET_INFO` (`ctrl2080gr.h`).
pub const NV2080_GR_GET_INFO: u32 = 0x2080_1201;

/// `NV2080_CTRL_PERF_BOOST_PARAMS` (`ctrl2080perf.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct PerfBoostParams {
    /// `flags`.
    pub flags: u32,
    /// `duration`.
    pub duration: u32,
}

/// Runs `f` on `raw` as a `T`, or `NV_ERR_INVALID_PARAM_STRUCT` (`resControlLookup_IMPL`).
fn with<T: FromBytes + IntoBytes + Immutable>(
    raw: &mut [u8],
    cmd: u32,
    f: impl FnOnce(&mut T) -> Result<(), RmError>,
) -> Result<(), RmError> {
    let Ok(mut p) = T::read_from_bytes(raw) else {
        return rm_err(
            NvStatus::ERR_INVALID_PARAM_STRUCT,
            format!(
                "control {cmd:#010x} takes {} bytes of parameters, got {} (resControlLookup_IMPL)",
                core::mem::size_of::<T>(),
                raw.len()
            ),
        );
    };
    f(&mut p)?;
    raw.copy_from_slice(p.as_bytes());
    Ok(())
}

fn invalid<T>(why: String) -> Result<T, RmError> {
    rm_err(NvStatus::ERR_INVALID_ARGUMENT, why)
}

/// Copies `s` into a NUL-terminated C string buffer.
fn put_str(buf: &mut [u8], s: &str) {
    let n = s.len().min(buf.len() - 1);
    buf[..n].copy_from_slice(&s.as_bytes()[..n]);
    buf[n..].fill(0);
}

/// Handles `GSP_RM_CONTROL`; `raw` are the parameters (updated in place for the reply).
pub fn rm_control(
    db: &mut RmDb,
    cx: &mut Cx,
    req: &RpcGspRmControl,
    raw: &mut [u8],
) -> Result<(), RmError> {
    let (c, h, command) = (req.h_client, req.h_object, req.cmd);
    db.client(c)?;
    let Some(object) = db.object(c, h).cloned() else {
        return rm_err(
            NvStatus::ERR_OBJECT_NOT_FOUND,
            format!(
                "control {command:#010x} on {h:#x}, which client {c:#x} does not have (serverControl)"
            ),
        );
    };
    let interface = command >> 16;
    let exported = match object.kind {
        Kind::Client => interface == 0x0000,
        Kind::Device => interface == 0x0080,
        Kind::Subdevice => interface == 0x2080,
        Kind::VaSpace { .. } => interface == 0x90f1,
        Kind::ChannelGroup { .. } => interface == 0xa06c,
        Kind::Channel { .. } => matches!(interface, 0xa06f | 0xc36f),
        Kind::Debugger { .. } => interface == 0x83de,
        _ => false,
    };
    let unsupported = || {
        rm_err(
            NvStatus::ERR_NOT_SUPPORTED,
            format!(
                "control {command:#010x} is not exported by {h:#x} (class {:#x}) (resControlLookup_IMPL)",
                object.class
            ),
        )
    };
    if !exported {
        return unsupported();
    }
    let spec = db.spec;
    match command {
        cmd::NV0000_SYSTEM_GET_BUILD_VERSION_V2 => {
            with::<BuildVersionV2Params>(raw, command, |p| {
                put_str(&mut p.driver_version_buffer, facts::DRIVER_VERSION);
                put_str(&mut p.version_buffer, facts::DRIVER_VERSION);
                put_str(&mut p.driver_branch, "r570_00");
                put_str(&mut p.title_buffer, "rel/gpu_drv/r570/r570_00-144");
                Ok(())
            })
        }
        cmd::NV0080_GPU_GET_CLASSLIST_V2 => with::<ClassListV2Params>(raw, command, |p| {
            // CAST: the class lists are short.
            p.num_classes = spec.classes.len() as u32;
            p.class_list.fill(0);
            p.class_list[..spec.classes.len()].copy_from_slice(spec.classes);
            Ok(())
        }),
        cmd::NV2080_GPU_GET_NAME_STRING => with::<GpuNameStringParams>(raw, command, |p| {
            let name = facts::gpu_name(spec);
            match p.gpu_name_string_flags {
                GpuNameStringParams::FLAGS_TYPE_ASCII => put_str(&mut p.gpu_name_string, name),
                GpuNameStringParams::FLAGS_TYPE_UNICODE => {
                    p.gpu_name_string.fill(0);
                    for (i, b) in name.bytes().enumerate() {
                        p.gpu_name_string[2 * i] = b;
                    }
                }
                f => {
                    return invalid(format!(
                        "gpuNameStringFlags {f} is neither ASCII nor UNICODE"
                    ));
                }
            }
            Ok(())
        }),
        cmd::NV2080_GPU_GET_GID_INFO => with::<GidInfoParams>(raw, command, |p| {
            // NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT (1:0): ASCII 0, BINARY 2; TYPE (2) SHA1 0.
            p.data.fill(0);
            match p.flags & 3 {
                0 => {
                    let t = facts::uuid_text(spec);
                    p.data[..t.len()].copy_from_slice(t.as_bytes());
                    // CAST: 40 characters and the NUL.
                    p.length = t.len() as u32 + 1;
                }
                2 => {
                    p.data[..16].copy_from_slice(&facts::uuid(spec));
                    p.length = 16;
                }
                f => return invalid(format!("GID format {f}")),
            }
            Ok(())
        }),
        cmd::NV2080_FB_GET_INFO_V2 => with::<FbGetInfoV2Params>(raw, command, |p| {
            let n = p.fb_info_list_size as usize;
            if n > p.fb_info_list.len() {
                return invalid(format!("fbInfoListSize {n}"));
            }
            for e in &mut p.fb_info_list[..n] {
                e.data = facts::fb_info(spec, e.index).ok_or_else(|| RmError {
                    status: NvStatus::ERR_INVALID_ARGUMENT,
                    why: format!("FB info index {:#x} is not modelled", e.index),
                })?;
            }
            Ok(())
        }),
        cmd::NV2080_INTERNAL_STATIC_KGR_GET_INFO => {
            with::<InternalStaticGrGetInfoParams>(raw, command, |p| {
                for (i, e) in p.engine_info[0].info_list.iter_mut().enumerate() {
                    // CAST: list indices are small.
                    e.index = i as u32;
                    e.data = facts::gr_info(spec, i as u32).unwrap_or(0);
                }
                Ok(())
            })
        }
        cmd::NV2080_INTERNAL_STATIC_KGR_GET_CONTEXT_BUFFERS_INFO => {
            with::<GrGetContextBuffersInfoParams>(raw, command, |p| {
                p.engine_context_buffers_info[0].engine = facts::context_buffers(spec);
                Ok(())
            })
        }
        cmd::NV2080_FIFO_GET_DEVICE_INFO_TABLE => {
            with::<FifoDeviceInfoTableParams>(raw, command, |p| {
                let base = p.base_index as usize;
                let rest = spec.engines.get(base..).unwrap_or_default();
                let n = rest.len().min(p.entries.len());
                p.entries = Default::default();
                for (e, spec_e) in p.entries.iter_mut().zip(rest) {
                    e.engine_data[engine_data_index::RM_ENGINE_TYPE] = spec_e.rm_engine_type;
                    e.engine_data[engine_data_index::RUNLIST] = spec_e.runlist;
                    e.num_pbdmas = 1;
                    e.pbdma_ids[0] = spec_e.runlist;
                    put_str(&mut e.engine_name, spec_e.name);
                }
                // CAST: at most 32 entries.
                p.num_entries = n as u32;
                p.b_more = u8::from(rest.len() > n);
                if cx.faults.endless_device_info {
                    cx.log.info(
                        "gsp",
                        format!(
                            "injected fault: device info table from index {base} answered \
                             with 32 entries and bMore"
                        ),
                    );
                    let cycle = spec.engines.iter().cycle().skip(base % spec.engines.len());
                    for (e, spec_e) in p.entries.iter_mut().zip(cycle) {
                        e.engine_data[engine_data_index::RM_ENGINE_TYPE] = spec_e.rm_engine_type;
                        e.engine_data[engine_data_index::RUNLIST] = spec_e.runlist;
                    }
                    // CAST: 32 entries.
                    p.num_entries = p.entries.len() as u32;
                    p.b_more = 1;
                }
                Ok(())
            })
        }
        cmd::NV2080_GPU_PROMOTE_CTX => {
            with::<PromoteCtxParams>(raw, command, |p| promote(db, cx, c, p))
        }
        NV2080_PERF_BOOST => with::<PerfBoostParams>(raw, command, |p| {
            cx.log.info(
                "gsp",
                format!(
                    "PERF_BOOST flags {:#x} duration {:#x} accepted and logged; clocks are not changed",
                    p.flags, p.duration
                ),
            );
            Ok(())
        }),
        cmd::NV2080_INTERNAL_BUS_FLUSH_WITH_SYSMEMBAR if raw.is_empty() => Ok(()),
        cmd::NV2080_FB_FLUSH_GPU_CACHE => with::<FbFlushGpuCacheParams>(raw, command, |_| Ok(())),
        cmd::NV90F1_VASPACE_COPY_SERVER_RESERVED_PDES => {
            with::<CopyServerReservedPdesParams>(raw, command, |p| {
                let n = p.num_levels_to_copy as usize;
                if n == 0 || n > p.levels.len() || p.virt_addr_lo >= p.virt_addr_hi {
                    return invalid(format!(
                        "numLevelsToCopy {n} / VA {:#x}..{:#x}",
                        p.virt_addr_lo, p.virt_addr_hi
                    ));
                }
                for (i, l) in p.levels[..n].iter().enumerate() {
                    let (addr, size, aperture) = (l.phys_address, l.size, l.aperture);
                    // GMMU_APERTURE_VIDEO (1) or a system aperture; a table of whole 8-byte
                    // entries (tinygrad's root table sits at VRAM 0 and holds 2 entries).
                    let in_vram = aperture != 1 || addr.saturating_add(size) <= spec.vram_bytes;
                    if !addr.is_multiple_of(8)
                        || size == 0
                        || !size.is_multiple_of(8)
                        || !(1..=3).contains(&aperture)
                        || !in_vram
                    {
                        return invalid(format!(
                            "reserved PDE level {i}: physAddress {addr:#x} size {size:#x} aperture {aperture}"
                        ));
                    }
                }
                cx.log.info(
                    "gsp",
                    format!(
                        "server-reserved PDEs copied: {n} levels for VA {:#x}..{:#x}",
                        p.virt_addr_lo, p.virt_addr_hi
                    ),
                );
                Ok(())
            })
        }
        cmd::NVA06C_GPFIFO_SCHEDULE => with::<GpfifoScheduleParamsV570>(raw, command, |p| {
            let on = p.b_enable != 0;
            if let Some(obj) = db.object_mut(c, h)
                && let Kind::ChannelGroup { scheduled, .. } = &mut obj.kind
            {
                *scheduled = on;
            }
            let tokens = channels_under(db, c, h);
            for t in tokens {
                if let Some(ch) = cx.world.channels.get_mut(&t) {
                    ch.enabled = on;
                }
            }
            Ok(())
        }),
        cmd::NVA06F_GPFIFO_SCHEDULE
        | cmd::NVA06F_BIND
        | cmd::NVC36F_GPFIFO_GET_WORK_SUBMIT_TOKEN => {
            let Kind::Channel { token, .. } = object.kind else {
                return unsupported();
            };
            match command {
                cmd::NVA06F_GPFIFO_SCHEDULE => {
                    with::<GpfifoScheduleParamsV570>(raw, command, |p| {
                        if let Some(ch) = cx.world.channels.get_mut(&token) {
                            ch.enabled = p.b_enable != 0;
                        }
                        Ok(())
                    })
                }
                cmd::NVA06F_BIND => with::<BindParams>(raw, command, |_| Ok(())),
                // On GSP-RM the token is the internal one, the channel id
                // (kfifoGenerateWorkSubmitTokenHal_GA100/_GB202 under RMCFG_FEATURE_PLATFORM_GSP);
                // the driver adds the runlist (and on GB20x the doorbell bit).
                _ => with::<WorkSubmitTokenParams>(raw, command, |p| {
                    p.work_submit_token = token & 0xffff;
                    Ok(())
                }),
            }
        }
        cmd::NV83DE_DEBUG_READ_ALL_SM_ERROR_STATES => {
            with::<ReadAllSmErrorStatesParams>(raw, command, |p| {
                if p.num_sms_to_read as usize > p.sm_error_state_array.len()
                    || p.starting_sm >= spec.sm_count
                {
                    return invalid(format!(
                        "numSmsToRead {} from SM {} of {}",
                        p.num_sms_to_read, p.starting_sm, spec.sm_count
                    ));
                }
                p.sm_error_state_array = [Default::default(); 100];
                let token = match object.kind {
                    Kind::Debugger { token } => token,
                    _ => 0,
                };
                let fault = db.mmu_faults.iter().any(|f| f.0 == token);
                p.mmu_fault.valid = u8::from(fault);
                Ok(())
            })
        }
        cmd::NV83DE_DEBUG_READ_MMU_FAULT_INFO => {
            with::<ReadMmuFaultInfoParams>(raw, command, |p| {
                let token = match object.kind {
                    Kind::Debugger { token } => token,
                    _ => 0,
                };
                *p = ReadMmuFaultInfoParams::default();
                let mut n = 0;
                db.mmu_faults.retain(|&(t, va, ty)| {
                    if t == token && n < p.mmu_fault_info_list.len() {
                        p.mmu_fault_info_list[n].fault_address = va;
                        p.mmu_fault_info_list[n].fault_type = ty;
                        n += 1;
                        false
                    } else {
                        true
                    }
                });
                // CAST: at most 4.
                p.count = n as u32;
                Ok(())
            })
        }
        _ => unsupported(),
    }
}

/// The tokens of the channels directly under `tsg`.
fn channels_under(db: &RmDb, c: Handle, tsg: Handle) -> Vec<u32> {
    db.clients.get(&c).map_or_else(Vec::new, |cl| {
        cl.objects
            .values()
            .filter(|o| o.parent == tsg)
            .filter_map(|o| match o.kind {
                Kind::Channel { token, .. } => Some(token),
                _ => None,
            })
            .collect()
    })
}

/// `NV2080_CTRL_CMD_GPU_PROMOTE_CTX`: the golden context buffers of a channel's graphics
/// context (`ctrl2080gpu.h`: entries of `NV2080_CTRL_GPU_PROMOTE_CTX_BUFFER_ID_*` 0..=12).
fn promote(db: &mut RmDb, cx: &mut Cx, c: Handle, p: &mut PromoteCtxParams) -> Result<(), RmError> {
    // NV2080_ENGINE_TYPE_GRAPHICS: the only engine with a promotable context here.
    if p.engine_type != 0x01 {
        return rm_err(
            NvStatus::ERR_NOT_SUPPORTED,
            format!(
                "PROMOTE_CTX for engine type {:#x}: only GRAPHICS is modelled",
                p.engine_type
            ),
        );
    }
    let chan_client = if p.h_chan_client == 0 {
        c
    } else {
        p.h_chan_client
    };
    db.client(chan_client)?;
    let Some(Kind::Channel { token, .. }) =
        db.object(chan_client, p.h_object).map(|o| o.kind.clone())
    else {
        return rm_err(
            NvStatus::ERR_INVALID_OBJECT_HANDLE,
            format!(
                "PROMOTE_CTX hObject {:#x} is not a channel of client {chan_client:#x}",
                p.h_object
            ),
        );
    };
    let n = p.entry_count as usize;
    if n == 0 || n > p.promote_entry.len() {
        return invalid(format!("PROMOTE_CTX entryCount {n}"));
    }
    for (i, e) in p.promote_entry[..n].iter().enumerate() {
        let (id, phys, virt, size) = (e.buffer_id, e.gpu_phys_addr, e.gpu_virt_addr, e.size);
        let bad_phys = e.b_initialize != 0
            && (phys == 0
                || !phys.is_multiple_of(0x1000)
                || size == 0
                || phys
                    .checked_add(size)
                    .is_none_or(|end| end > db.spec.vram_bytes));
        if id > 12 || (phys == 0 && virt == 0) || bad_phys || !virt.is_multiple_of(0x1000) {
            return invalid(format!(
                "PROMOTE_CTX entry {i}: bufferId {id}, phys {phys:#x}, virt {virt:#x}, size {size:#x}"
            ));
        }
    }
    if let Some(obj) = db.object_mut(chan_client, p.h_object)
        && let Kind::Channel { promoted, .. } = &mut obj.kind
    {
        *promoted = true;
    }
    cx.log.info(
        "gsp",
        format!("golden context promoted for channel token {token:#x} ({n} buffers)"),
    );
    Ok(())
}
