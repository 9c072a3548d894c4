//! The channel side of `GSP_RM_ALLOC`: context shares (`kctxshareapiConstruct_IMPL`,
//! kernel_ctxshare.c) and GPFIFO channels (`kchannelConstruct_IMPL`, kernel_channel.c),
//! which become `World::channels` records.

use nvbare_gsp::rm::NvStatus;
use nvbare_gsp::rm::alloc::{ChannelAllocParams, CtxShareAllocParams, MemoryDescParams};
use zerocopy::IntoBytes;

use super::alloc::{engine_of, params};
use super::{Handle, Kind, Object, RmDb, RmError, rm_err};
use crate::device::{ChannelRecord, Cx};
use crate::memory::Target;

/// `FERMI_CONTEXT_SHARE_A` (`kctxshareapiConstruct_IMPL`, kernel_ctxshare.c).
pub(super) fn context_share(
    db: &mut RmDb,
    c: Handle,
    tsg: Handle,
    class: u32,
    raw: &mut [u8],
) -> Result<Kind, RmError> {
    let mut p = params::<CtxShareAllocParams>(raw, false, class)?.unwrap_or_default();
    let Some(Kind::VaSpace { id: vaspace }) = db.object(c, p.h_va_space).map(|o| o.kind.clone())
    else {
        return rm_err(
            NvStatus::ERR_INVALID_OBJECT_HANDLE,
            format!(
                "hVASpace {:#x} is not a VA space (kctxshareapiConstruct_IMPL)",
                p.h_va_space
            ),
        );
    };
    let mode = p.flags & 3;
    let Some(Object {
        kind: Kind::ChannelGroup { subctx_used, .. },
        ..
    }) = db.object_mut(c, tsg)
    else {
        return rm_err(
            NvStatus::ERR_INVALID_OBJECT_PARENT,
            "context share outside a channel group",
        );
    };
    // NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SPECIFIED (2) names the id; the others pick one.
    let id = if mode == 2 {
        p.subctx_id
    } else {
        (!*subctx_used).trailing_zeros()
    };
    if p.flags & !3 != 0 || id >= 64 || *subctx_used & (1 << id) != 0 {
        return rm_err(
            NvStatus::ERR_INVALID_ARGUMENT,
            format!(
                "flags {:#x} / subctxId {id}: a free subcontext of 64 (kctxshareapiConstruct_IMPL)",
                p.flags
            ),
        );
    }
    *subctx_used |= 1 << id;
    p.subctx_id = id;
    raw.copy_from_slice(p.as_bytes());
    Ok(Kind::ContextShare {
        vaspace,
        subctx: id,
    })
}

/// Where a `NV_MEMORY_DESC_PARAMS` points (`addressSpace` 1 = `ADDR_SYSMEM`, 2 = `ADDR_FBMEM`).
fn described(what: &str, m: &MemoryDescParams) -> Result<Target, RmError> {
    match m.address_space {
        _ if m.size == 0 => rm_err(
            NvStatus::ERR_INVALID_ARGUMENT,
            format!(
                "{what} is empty: GSP-RM takes the channel memory the kernel RM describes \
                 (kchannelConstruct_IMPL)"
            ),
        ),
        1 => Ok(Target::Bus(m.base)),
        2 => Ok(Target::Vram(m.base)),
        a => rm_err(
            NvStatus::ERR_INVALID_ARGUMENT,
            format!("{what}.addressSpace {a} is neither ADDR_SYSMEM (1) nor ADDR_FBMEM (2)"),
        ),
    }
}

/// A GPFIFO channel (`kchannelConstruct_IMPL`, kernel_channel.c).
pub(super) fn gpfifo(
    db: &mut RmDb,
    cx: &mut Cx,
    c: Handle,
    parent: &Object,
    class: u32,
    raw: &mut [u8],
) -> Result<Kind, RmError> {
    let p = params::<ChannelAllocParams>(raw, false, class)?.unwrap_or_default();
    let invalid = |why: String| {
        rm_err::<Kind>(
            NvStatus::ERR_INVALID_ARGUMENT,
            format!("{why} (kchannelConstruct_IMPL)"),
        )
    };
    // The ring size goes to RAMFC as log2 (NV_RAMFC_GP_BASE_HI_LIMIT2, dev_ram.h).
    if !p.gp_fifo_entries.is_power_of_two()
        || p.gp_fifo_entries < 2
        || !p.gp_fifo_offset.is_multiple_of(8)
    {
        return invalid(format!(
            "gpFifoEntries {} / gpFifoOffset {:#x}: a power of two of at least 2 entries at an \
             8-byte aligned VA",
            p.gp_fifo_entries, p.gp_fifo_offset
        ));
    }
    let (engine, runlist, group_vaspace) = match parent.kind {
        Kind::ChannelGroup {
            engine,
            runlist,
            vaspace,
            ..
        } => (engine, runlist, vaspace),
        _ => match engine_of(db, p.engine_type) {
            Some((e, r)) => (e, r, None),
            None => {
                return invalid(format!(
                    "engineType {:#x} outside a channel group",
                    p.engine_type
                ));
            }
        },
    };
    let vaspace = match (p.h_context_share, p.h_va_space) {
        // A channel of a group that names a VA space runs in it (a copy engine's own
        // group, as CUDA allocates it: no context share).
        (0, 0) => match group_vaspace {
            Some(v) => v,
            None => {
                return invalid(
                    "neither hContextShare nor hVASpace, in no channel group with a VA space"
                        .into(),
                );
            }
        },
        (0, v) => match db.object(c, v).map(|o| &o.kind) {
            Some(Kind::VaSpace { id }) => *id,
            _ => return invalid(format!("hVASpace {v:#x} is not a VA space")),
        },
        (s, _) => match db.object(c, s).map(|o| (&o.kind, o.parent)) {
            Some((Kind::ContextShare { vaspace, .. }, _)) => *vaspace,
            _ => return invalid(format!("hContextShare {s:#x} is not a context share")),
        },
    };
    let instance = described("instanceMem", &p.instance_mem)?;
    let userd = described("userdMem", &p.userd_mem)?;
    described("ramfcMem", &p.ramfc_mem)?;
    described("mthdbufMem", &p.mthdbuf_mem)?;
    // Channel ids: one space for all engines on GSP-RM (gsp_fw_heap.h's note).
    let used: Vec<u32> = cx.world.channels.values().map(|r| r.chid).collect();
    let chid = (db.next_chid..db.next_chid + 2048)
        .map(|i| i % 2048)
        .find(|i| !used.contains(i))
        .ok_or(RmError {
            status: NvStatus::ERR_INSUFFICIENT_RESOURCES,
            why: "all 2048 channel ids are in use".into(),
        })?;
    db.next_chid = chid + 1;
    let token = runlist << 16 | chid;
    let generation = cx.world.new_channel_generation();
    cx.world.channels.insert(
        token,
        ChannelRecord {
            chid,
            runlist,
            engine,
            instance: Some(instance),
            userd,
            gpfifo_va: p.gp_fifo_offset,
            gpfifo_entries: p.gp_fifo_entries,
            vaspace,
            classes: Vec::new(),
            enabled: false,
            error: None,
            generation,
        },
    );
    cx.log.info(
        "gsp",
        format!(
            "channel {chid} (runlist {runlist}, {engine:?}, class {class:#x}): GPFIFO {:#x} x {}, USERD {userd:?}",
            p.gp_fifo_offset, p.gp_fifo_entries
        ),
    );
    Ok(Kind::Channel {
        token,
        promoted: false,
    })
}
