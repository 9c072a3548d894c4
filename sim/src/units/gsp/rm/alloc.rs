//! `GSP_RM_ALLOC` and `ALLOC_MEMORY`: the generic checks of [`super`] and each class's
//! constructor checks (the `*Construct_IMPL` functions of OpenRM 570.144 named per class).
//!
//! Parents (each resource's `pParentList` in OpenRM's resource list): a device under a
//! client; a subdevice, virtual-memory range, debugger or memory under a device; a VA space
//! or channel group under a device or subdevice; a context share under a channel group; a
//! GPFIFO channel under a device or channel group; engine objects under a channel; usermode
//! under a subdevice.

use nvbare_gsp::abi::{RpcAllocMemory, RpcGspRmAlloc};
use nvbare_gsp::rm::NvStatus;
use nvbare_gsp::rm::alloc::{
    ChannelGroupAllocParams, CopyEngineAllocParams, DebuggerAllocParams, DeviceAllocParams,
    HopperUsermodeAllocParams, MemoryVirtualAllocParams, RootClientAllocParams,
    SubdeviceAllocParams, VaSpaceAllocParamsV570,
};
use nvbare_gsp::rm::classes as cls;
use zerocopy::FromBytes;

use super::{Handle, Kind, Object, RmDb, RmError, is_client_class, rm_err};
use crate::device::{Cx, Engine, VaSpaceRecord};

/// What a class makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClassKind {
    Device,
    Subdevice,
    VirtualMemory,
    VaSpace,
    ChannelGroup,
    ContextShare,
    Gpfifo,
    Compute,
    Copy,
    OtherEngine,
    Debugger,
    Usermode,
    Memory,
}

fn classify(class: u32) -> Option<ClassKind> {
    Some(match class {
        cls::NV01_DEVICE_0 => ClassKind::Device,
        cls::NV20_SUBDEVICE_0 => ClassKind::Subdevice,
        cls::NV01_MEMORY_VIRTUAL | cls::NV50_MEMORY_VIRTUAL => ClassKind::VirtualMemory,
        cls::FERMI_VASPACE_A => ClassKind::VaSpace,
        cls::KEPLER_CHANNEL_GROUP_A => ClassKind::ChannelGroup,
        cls::FERMI_CONTEXT_SHARE_A => ClassKind::ContextShare,
        cls::GT200_DEBUGGER => ClassKind::Debugger,
        cls::NV01_MEMORY_SYSTEM
        | cls::NV01_MEMORY_LOCAL_PRIVILEGED
        | cls::NV01_MEMORY_LOCAL_USER
        | cls::NV01_MEMORY_SYSTEM_OS_DESCRIPTOR => ClassKind::Memory,
        c if (c & 0xff) == 0x6f && c >= cls::VOLTA_CHANNEL_GPFIFO_A => ClassKind::Gpfifo,
        c if (c & 0xff) == 0xc0 => ClassKind::Compute,
        c if (c & 0xff) == 0xb5 => ClassKind::Copy,
        c if (c & 0xff) == 0x61 => ClassKind::Usermode,
        c if (c & 0xff) == 0x97 || c == cls::HOPPER_SEC2_WORK_LAUNCH_A => ClassKind::OtherEngine,
        _ => return None,
    })
}

/// Whether an object of kind `parent` may hold one of `child`.
fn parent_ok(child: ClassKind, parent: &Kind) -> bool {
    use ClassKind as C;
    matches!(
        (child, parent),
        (C::Device, Kind::Client)
            | (
                C::Subdevice | C::VirtualMemory | C::Debugger | C::Memory,
                Kind::Device
            )
            | (C::VaSpace | C::ChannelGroup, Kind::Device | Kind::Subdevice)
            | (C::ContextShare, Kind::ChannelGroup { .. })
            | (C::Gpfifo, Kind::Device | Kind::ChannelGroup { .. })
            | (C::Compute | C::Copy | C::OtherEngine, Kind::Channel { .. })
            | (C::Usermode, Kind::Subdevice)
    )
}

/// Reads the class's parameter block: `Ok(None)` for no parameters where the class takes
/// none, `NV_ERR_INVALID_ARGUMENT` for a block of another size (`rmapiGetClassAllocParamSize`,
/// which `rpcRmApiAlloc_GSP` sizes the block with).
pub(super) fn params<T: FromBytes>(
    raw: &[u8],
    optional: bool,
    class: u32,
) -> Result<Option<T>, RmError> {
    let want = core::mem::size_of::<T>();
    if raw.is_empty() && optional {
        return Ok(None);
    }
    if raw.len() != want {
        return rm_err(
            NvStatus::ERR_INVALID_ARGUMENT,
            format!(
                "class {class:#x} takes {want} bytes of parameters{}, got {} \
                 (rmapiGetClassAllocParamSize)",
                if optional { " or none" } else { "" },
                raw.len()
            ),
        );
    }
    Ok(T::read_from_bytes(raw).ok())
}

/// The engine and runlist of `NV2080_ENGINE_TYPE` `rm_type` on this chip.
pub(super) fn engine_of(db: &RmDb, rm_type: u32) -> Option<(Engine, u32)> {
    let e = db
        .spec
        .engines
        .iter()
        .find(|e| e.rm_engine_type == rm_type)?;
    let engine = match rm_type {
        0x01 => Engine::Graphics,
        t => Engine::Copy(t - 0x09),
    };
    Some((engine, e.runlist))
}

/// Handles `GSP_RM_ALLOC`; `raw` are the parameters (updated in place for the reply).
pub fn rm_alloc(
    db: &mut RmDb,
    cx: &mut Cx,
    req: &RpcGspRmAlloc,
    raw: &mut [u8],
) -> Result<(), RmError> {
    let (c, class) = (req.h_client, req.h_class);
    if is_client_class(class) {
        if let Some(p) = params::<RootClientAllocParams>(raw, true, class)?
            && p.h_client != 0
            && p.h_client != c
        {
            return rm_err(
                NvStatus::ERR_INVALID_ARGUMENT,
                format!(
                    "NV0000_ALLOC_PARAMETERS.hClient {:#x} is not the RPC's client {c:#x}",
                    p.h_client
                ),
            );
        }
        return db.add_client(c);
    }
    let kind = match classify(class) {
        Some(k) if db.spec.classes.contains(&class) => k,
        _ => {
            return rm_err(
                NvStatus::ERR_INVALID_CLASS,
                format!(
                    "class {class:#x} is not in {}'s class list (serverAllocResourceUnderLock)",
                    db.spec.name
                ),
            );
        }
    };
    db.client(c)?;
    let hparent = if req.h_parent == 0 { c } else { req.h_parent };
    let Some(parent) = db.object(c, hparent).cloned() else {
        return rm_err(
            NvStatus::ERR_OBJECT_NOT_FOUND,
            format!("parent {hparent:#x} not found in client {c:#x} (clientGetResourceRef)"),
        );
    };
    if !parent_ok(kind, &parent.kind) {
        return rm_err(
            NvStatus::ERR_INVALID_OBJECT_PARENT,
            format!(
                "class {class:#x} cannot live under {hparent:#x} (class {:#x}) \
                 (serverAllocResourceUnderLock, pParentList)",
                parent.class
            ),
        );
    }
    let h = req.h_object;
    if h == 0 || h == c {
        return rm_err(
            NvStatus::ERR_INVALID_OBJECT_HANDLE,
            format!(
                "handle {h:#x} is 0 or the client's own (clientValidateNewResourceHandle_IMPL)"
            ),
        );
    }
    if db.object(c, h).is_some() {
        return rm_err(
            NvStatus::ERR_INSERT_DUPLICATE_NAME,
            format!(
                "handle {h:#x} already exists in client {c:#x} (clientValidateNewResourceHandle_IMPL)"
            ),
        );
    }
    let made = construct(db, cx, kind, class, c, hparent, &parent, raw)?;
    if let Some(client) = db.clients.get_mut(&c) {
        client.objects.insert(
            h,
            Object {
                class,
                parent: hparent,
                kind: made,
            },
        );
    }
    Ok(())
}

/// The class's constructor: its parameter checks and what it sets up.
#[allow(clippy::too_many_arguments)]
fn construct(
    db: &mut RmDb,
    cx: &mut Cx,
    kind: ClassKind,
    class: u32,
    c: Handle,
    hparent: Handle,
    parent: &Object,
    raw: &mut [u8],
) -> Result<Kind, RmError> {
    let invalid = |why: String| rm_err::<()>(NvStatus::ERR_INVALID_ARGUMENT, why);
    match kind {
        ClassKind::Device => {
            if let Some(p) = params::<DeviceAllocParams>(raw, true, class)? {
                if p.device_id != 0 {
                    return rm_err(
                        NvStatus::ERR_INVALID_CLASS,
                        format!(
                            "deviceId {} is not a GPU (deviceConstruct_IMPL)",
                            p.device_id
                        ),
                    );
                }
                if p.va_mode > 2 {
                    invalid(format!(
                        "vaMode {} is not an NV_DEVICE_ALLOCATION_VAMODE",
                        p.va_mode
                    ))?;
                }
                if p.h_client_share != 0 && !db.clients.contains_key(&p.h_client_share) {
                    invalid(format!(
                        "hClientShare {:#x} is not a client",
                        p.h_client_share
                    ))?;
                }
            }
            Ok(Kind::Device)
        }
        ClassKind::Subdevice => {
            let id =
                params::<SubdeviceAllocParams>(raw, true, class)?.map_or(0, |p| p.sub_device_id);
            if id != 0 {
                return rm_err(
                    NvStatus::ERR_INVALID_CLASS,
                    format!("subDeviceId {id} is not a subdevice (subdeviceConstruct_IMPL)"),
                );
            }
            let taken = db
                .client(c)?
                .objects
                .values()
                .any(|o| o.parent == hparent && o.kind == Kind::Subdevice);
            if taken {
                return rm_err(
                    NvStatus::ERR_INSUFFICIENT_RESOURCES,
                    "the device already has subdevice 0 (subdeviceConstruct_IMPL)",
                );
            }
            Ok(Kind::Subdevice)
        }
        ClassKind::VirtualMemory => {
            if let Some(p) = params::<MemoryVirtualAllocParams>(raw, true, class)?
                && p.limit != 0
                && p.limit < p.offset
            {
                invalid(format!("limit {:#x} below offset {:#x}", p.limit, p.offset))?;
            }
            Ok(Kind::VirtualMemory)
        }
        ClassKind::VaSpace => {
            let p = params::<VaSpaceAllocParamsV570>(raw, true, class)?.unwrap_or_default();
            // A 57-bit VA on ver3 MMUs (dev_mmu.h: PD4 covers bit 56).
            let end = p.va_base.checked_add(p.va_size);
            if !matches!(p.big_page_size, 0 | 0x1_0000 | 0x2_0000)
                || end.is_none_or(|e| e > 1 << 57)
                || p.index > 1
            {
                invalid(format!(
                    "VA space index {} / bigPageSize {:#x} / vaBase {:#x} + vaSize {:#x}: index \
                     0 or 1, 64 or 128 KiB big pages, inside 57 bits (vaspaceapiConstruct_IMPL)",
                    p.index, p.big_page_size, p.va_base, p.va_size
                ))?;
            }
            let id = db.next_vaspace;
            db.next_vaspace += 1;
            cx.world
                .vaspaces
                .insert(id, VaSpaceRecord { page_dir: None });
            Ok(Kind::VaSpace { id })
        }
        ClassKind::ChannelGroup => {
            let p = params::<ChannelGroupAllocParams>(raw, false, class)?.unwrap_or_default();
            let Some((engine, runlist)) = engine_of(db, p.engine_type) else {
                return rm_err(
                    NvStatus::ERR_INVALID_ARGUMENT,
                    format!(
                        "engineType {:#x} is not an engine of {} (kchangrpapiConstruct_IMPL)",
                        p.engine_type, db.spec.name
                    ),
                );
            };
            let vaspace = match (p.h_va_space, db.object(c, p.h_va_space).map(|o| &o.kind)) {
                (0, _) => None,
                (_, Some(Kind::VaSpace { id })) => Some(*id),
                _ => {
                    return rm_err(
                        NvStatus::ERR_INVALID_ARGUMENT,
                        format!(
                            "hVASpace {:#x} is not a VA space (kchangrpapiConstruct_IMPL)",
                            p.h_va_space
                        ),
                    );
                }
            };
            Ok(Kind::ChannelGroup {
                engine,
                runlist,
                subctx_used: 0,
                scheduled: false,
                vaspace,
            })
        }
        ClassKind::ContextShare => super::channel::context_share(db, c, hparent, class, raw),
        ClassKind::Gpfifo => super::channel::gpfifo(db, cx, c, parent, class, raw),
        ClassKind::Compute | ClassKind::Copy | ClassKind::OtherEngine => {
            let Kind::Channel { token, .. } = parent.kind else {
                return rm_err(
                    NvStatus::ERR_INVALID_OBJECT_PARENT,
                    "engine object outside a channel",
                );
            };
            match kind {
                ClassKind::Copy => {
                    if let Some(p) = params::<CopyEngineAllocParams>(raw, true, class)?
                        && p.version > CopyEngineAllocParams::VERSION_ENGINE_TYPE
                    {
                        invalid(format!(
                            "NVB0B5_ALLOCATION_PARAMETERS version {}",
                            p.version
                        ))?;
                    }
                }
                // NV_GR_ALLOCATION_PARAMETERS (4 dwords) are optional.
                _ if !raw.is_empty() && raw.len() != 16 => {
                    invalid(format!(
                        "class {class:#x} takes 16 bytes of parameters or none, got {}",
                        raw.len()
                    ))?;
                }
                _ => {}
            }
            let Some(ch) = cx.world.channels.get_mut(&token) else {
                return rm_err(NvStatus::ERR_INVALID_CHANNEL, "the channel is gone");
            };
            if kind == ClassKind::Compute && ch.engine != Engine::Graphics {
                return rm_err(
                    NvStatus::ERR_INVALID_ARGUMENT,
                    format!(
                        "compute class {class:#x} on a channel of {:?} (kgrobjConstruct_IMPL)",
                        ch.engine
                    ),
                );
            }
            if ch.classes.contains(&class) {
                return rm_err(
                    NvStatus::ERR_INVALID_STATE,
                    format!("the channel already has an object of class {class:#x}"),
                );
            }
            ch.classes.push(class);
            Ok(Kind::EngineObject)
        }
        ClassKind::Debugger => {
            let p = params::<DebuggerAllocParams>(raw, false, class)?.unwrap_or_default();
            if p.h_debugger_client_obsolete != 0 {
                invalid("hDebuggerClient_Obsolete is set (ksmdbgssnConstruct_IMPL)".into())?;
            }
            let app = if p.h_app_client == 0 {
                c
            } else {
                p.h_app_client
            };
            let object = db.object(app, p.h_class3d_object).cloned();
            let Some(Object {
                kind: Kind::EngineObject,
                parent: ch,
                ..
            }) = object
            else {
                return rm_err(
                    NvStatus::ERR_INVALID_OBJECT_PARENT,
                    format!(
                        "hClass3dObject {:#x} of client {app:#x} is not an engine object (ksmdbgssnConstruct_IMPL)",
                        p.h_class3d_object
                    ),
                );
            };
            let Some(Kind::Channel { token, .. }) = db.object(app, ch).map(|o| o.kind.clone())
            else {
                return rm_err(
                    NvStatus::ERR_INVALID_OBJECT,
                    "the debugged object has no channel",
                );
            };
            Ok(Kind::Debugger { token })
        }
        ClassKind::Usermode => {
            params::<HopperUsermodeAllocParams>(raw, true, class)?;
            Ok(Kind::Usermode)
        }
        // With GSP-RM the kernel RM allocates memory and describes its pages to GSP-RM with
        // ALLOC_MEMORY (rpc_alloc_memory_v13_01); the memory classes have no GSP-RM
        // constructor the RPC reaches.
        ClassKind::Memory => rm_err(
            NvStatus::ERR_NOT_SUPPORTED,
            format!("class {class:#x} through GSP_RM_ALLOC: describe the memory with ALLOC_MEMORY"),
        ),
    }
}

/// Handles `ALLOC_MEMORY` (`rpc_alloc_memory_v13_01`): physical memory described by its
/// pages (`pteDesc.pte_pde[i]` = bus address >> 12), under a device.
pub fn alloc_memory(db: &mut RmDb, payload: &[u8]) -> Result<RpcAllocMemory, RmError> {
    let Ok((req, rest)) = RpcAllocMemory::read_from_prefix(payload) else {
        return rm_err(
            NvStatus::ERR_INVALID_ARGUMENT,
            "ALLOC_MEMORY payload too short",
        );
    };
    let (c, h) = (req.h_client, req.h_memory);
    let count = req.page_count as usize;
    if req.pte_desc.length() as usize != count
        || rest.len() < count * 8
        || req.length == 0
        || req.length > count as u64 * 4096
    {
        return rm_err(
            NvStatus::ERR_INVALID_ARGUMENT,
            format!(
                "ALLOC_MEMORY of {:#x} bytes with pageCount {count}, pteDesc.length {} and {} \
                 bytes of PTEs",
                req.length,
                req.pte_desc.length(),
                rest.len()
            ),
        );
    }
    if !matches!(
        req.h_class,
        cls::NV01_MEMORY_SYSTEM
            | cls::NV01_MEMORY_LOCAL_USER
            | cls::NV01_MEMORY_SYSTEM_OS_DESCRIPTOR
            | 0x0081
    ) {
        return rm_err(
            NvStatus::ERR_INVALID_CLASS,
            format!("ALLOC_MEMORY of class {:#x}", req.h_class),
        );
    }
    db.client(c)?;
    if !matches!(
        db.object(c, req.h_device).map(|o| &o.kind),
        Some(Kind::Device)
    ) {
        return rm_err(
            NvStatus::ERR_INVALID_OBJECT_PARENT,
            format!(
                "hDevice {:#x} is not a device of client {c:#x}",
                req.h_device
            ),
        );
    }
    if h == 0 || h == c {
        return rm_err(
            NvStatus::ERR_INVALID_OBJECT_HANDLE,
            format!("memory handle {h:#x}"),
        );
    }
    if db.object(c, h).is_some() {
        return rm_err(
            NvStatus::ERR_INSERT_DUPLICATE_NAME,
            format!("memory handle {h:#x} exists"),
        );
    }
    let pages = rest[..count * 8]
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) << 12)
        .collect();
    if let Some(client) = db.clients.get_mut(&c) {
        client.objects.insert(
            h,
            Object {
                class: req.h_class,
                parent: req.h_device,
                kind: Kind::Memory {
                    pages,
                    length: req.length,
                },
            },
        );
    }
    Ok(req)
}
