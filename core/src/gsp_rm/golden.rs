//! The graphics engine's golden context and each compute channel's context promotion.
//!
//! With GSP-RM the kernel RM provides the graphics context buffers itself: once per boot it
//! builds the golden context image on a channel of its own (a client, device, subdevice and
//! VA space beside the user's, the server-reserved PDEs copied to that VA space, a
//! privileged GPFIFO channel with the compute and copy objects), and for every compute
//! channel it allocates the main, patch and PM buffers and promotes them with
//! `NV2080_CTRL_CMD_GPU_PROMOTE_CTX`, physically (GSP-RM initialises them) and then
//! virtually. tinygrad's `init_golden_image` and `rpc_rm_alloc` do exactly this on GA10x,
//! AD10x and GB20x; the sizes come from `NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_CONTEXT_
//! BUFFERS_INFO`.

use alloc::vec::Vec;

use nvbare_gsp::rm::alloc::{
    ChannelAllocParams, DeviceAllocParams, SubdeviceAllocParams, VaSpaceAllocParamsV570,
};
use nvbare_gsp::rm::alloc_flags::{channel_flags, device_va_mode, engine_type};
use nvbare_gsp::rm::classes as cls;
use nvbare_gsp::rm::ctrl::channel::CopyServerReservedPdesParams;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::gr::{
    GrContextBuffersInfo, GrGetContextBuffersInfoParams, PromoteCtxBufferEntry, PromoteCtxParams,
    context_buffer_id as info, promote_buffer_id as id,
};

use super::GspRm;
use super::error::GspRmError;
use super::memory::{GspMemory, SERVER_RESERVED};
use crate::gpu::{Buffer, MemoryRequest, Placement};
use crate::hal::Platform;
use crate::rm::{Classes, Handle};

/// One context buffer: which, how large, and how it is promoted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextBuffer {
    /// `NV2080_CTRL_GPU_PROMOTE_CTX_BUFFER_ID_*`.
    pub id: u16,
    /// Bytes (rounded to its alignment).
    pub size: u64,
    /// Alignment.
    pub align: u64,
    /// Promoted physically (GSP-RM initialises it).
    pub phys: bool,
    /// Promoted at a GPU VA.
    pub virt: bool,
    /// Per channel (not part of the golden context).
    pub per_channel: bool,
}

/// `physAttr` of a physical promotion, as tinygrad sends it (video memory).
const PHYS_ATTR_VIDMEM: u32 = 0x4;
/// The golden channel's GPFIFO entries and where its USERD sits in its 4 KiB area: right
/// after the ring would be +0x100 (tinygrad's choice), but OpenRM programs USERD's address
/// `>> NV_RAMUSERD_BASE_SHIFT` (`kchannelGetUserdInfo`/`userdShift`, kernel_channel_gv100.c;
/// `1 << NV_RAMUSERD_BASE_SHIFT` is USERD's size and alignment, kernel_fifo_gm107.c), 512
/// bytes: +0x100 would be read as +0x000, the ring itself. The golden channel never runs
/// work, which is why tinygrad's works; +0x200 is what the hardware field can hold.
const GOLDEN_ENTRIES: u32 = 32;
const GOLDEN_USERD: u64 = 0x200;
const _: () =
    assert!(GOLDEN_USERD >= GOLDEN_ENTRIES as u64 * 8 && GOLDEN_USERD.is_multiple_of(512));
/// The golden channel's `cid` and `internalFlags`, as tinygrad sends them (RM's own
/// channel id space, flags of a kernel-internal channel).
const GOLDEN_CID: u32 = 3;
const GOLDEN_INTERNAL_FLAGS: u32 = 0x1a;

/// The context buffers, from GSP-RM's sizes (tinygrad's `grctx_bufs`): main (the graphics
/// context, 256 KiB more than GSP-RM says), PM and patch (the patch size), the bundle,
/// page-pool, attribute (2 MiB aligned) and RTV buffers (virtual only), FECS events, and the
/// two priv access maps. Buffers GSP-RM gives no size are left out.
pub fn context_buffers(i: &GrContextBuffersInfo) -> Vec<ContextBuffer> {
    let sized = |index: u16, extra: u64, align: Option<u64>| {
        let e = i.engine[usize::from(index)];
        let align = align.unwrap_or(u64::from(e.alignment)).max(0x1000);
        let size = (u64::from(e.size) + extra).next_multiple_of(align);
        (size, align)
    };
    let spec = [
        (
            id::MAIN,
            sized(info::GRAPHICS, 0x4_0000, None),
            true,
            true,
            false,
        ),
        (
            id::PM,
            sized(info::GRAPHICS_PATCH, 0, None),
            true,
            true,
            true,
        ),
        (
            id::PATCH,
            sized(info::GRAPHICS_PATCH, 0, None),
            true,
            true,
            false,
        ),
        (
            id::BUFFER_BUNDLE_CB,
            sized(info::GRAPHICS_BUNDLE_CB, 0, None),
            false,
            true,
            false,
        ),
        (
            id::PAGEPOOL,
            sized(info::GRAPHICS_PAGEPOOL_GLOBAL, 0, None),
            false,
            true,
            false,
        ),
        (
            id::ATTRIBUTE_CB,
            sized(info::GRAPHICS_ATTRIBUTE_CB, 0, Some(2 << 20)),
            false,
            true,
            false,
        ),
        (
            id::RTV_CB_GLOBAL,
            sized(info::GRAPHICS_RTV_CB_GLOBAL, 0, None),
            false,
            true,
            false,
        ),
        (
            id::FECS_EVENT,
            sized(info::GRAPHICS_FECS_EVENT, 0, None),
            true,
            true,
            false,
        ),
        (
            id::PRIV_ACCESS_MAP,
            sized(info::GRAPHICS_PRIV_ACCESS_MAP, 0, None),
            true,
            false,
            false,
        ),
        (
            id::UNRESTRICTED_PRIV_ACCESS_MAP,
            sized(info::GRAPHICS_PRIV_ACCESS_MAP, 0, None),
            true,
            true,
            false,
        ),
    ];
    spec.iter()
        .filter(|(_, (size, _), ..)| *size > 0)
        .map(
            |&(id, (size, align), phys, virt, per_channel)| ContextBuffer {
                id,
                size,
                align,
                phys,
                virt,
                per_channel,
            },
        )
        .collect()
}

/// How one promotion call describes its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Promote {
    /// As each buffer's description says (the golden channel: one call).
    AsDescribed,
    /// Physical addresses only, the buffers initialised (a compute channel's first call).
    Physical,
    /// Virtual addresses only (its second call).
    Virtual,
}

/// The `PROMOTE_CTX` entry of `b` at `mem`.
fn entry(b: &ContextBuffer, mem: &Buffer<GspMemory>, how: Promote) -> PromoteCtxBufferEntry {
    let (phys, virt) = match how {
        Promote::AsDescribed => (b.phys, b.virt),
        Promote::Physical => (true, false),
        Promote::Virtual => (false, true),
    };
    PromoteCtxBufferEntry {
        gpu_phys_addr: if phys {
            mem.memory().vram_addr(0).unwrap_or(0)
        } else {
            0
        },
        gpu_virt_addr: if virt { mem.gpu_va() } else { 0 },
        size: if phys { b.size } else { 0 },
        phys_attr: if phys { PHYS_ATTR_VIDMEM } else { 0 },
        buffer_id: b.id,
        b_initialize: u8::from(phys),
        b_nonmapped: u8::from(phys && !virt),
    }
}

impl<P: Platform> GspRm<P> {
    /// Allocates (in VRAM, mapped, zeroed where GSP-RM initialises them) the context buffers
    /// `which` of [`Self::context`], kept until shutdown.
    fn context_memory(
        &mut self,
        which: impl Fn(&ContextBuffer) -> bool,
    ) -> Result<Vec<(ContextBuffer, usize)>, GspRmError> {
        let wanted: Vec<ContextBuffer> = self.context.iter().copied().filter(which).collect();
        let mut out = Vec::with_capacity(wanted.len());
        for b in wanted {
            let req = MemoryRequest {
                align: b.align,
                contiguous: true,
                ..MemoryRequest::new(b.size, Placement::Vram, false)
            };
            let (p, mm) = (self.gsp.platform_mut(), &mut self.mm);
            let mem = mm.alloc(p, &req)?;
            if let Some(pa) = mem.memory().vram_addr(0) {
                self.mm.zero(self.gsp.platform(), pa, mem.size())?;
            }
            self.resident.push(mem);
            out.push((b, self.resident.len() - 1));
        }
        Ok(out)
    }

    /// `NV2080_CTRL_CMD_GPU_PROMOTE_CTX` of `bufs` for `channel` of `client`.
    fn promote(
        &mut self,
        client: Handle,
        subdevice: Handle,
        channel: Handle,
        bufs: &[(ContextBuffer, usize)],
        how: Promote,
    ) -> Result<(), GspRmError> {
        let mut p = PromoteCtxParams {
            engine_type: engine_type::GRAPHICS,
            h_client: client,
            h_chan_client: client,
            h_object: channel,
            ..Default::default()
        };
        for (slot, (b, i)) in p.promote_entry.iter_mut().zip(bufs) {
            *slot = entry(b, &self.resident[*i], how);
        }
        // CAST: at most PROMOTE_CONTEXT_MAX_ENTRIES (16) entries were filled.
        p.entry_count = bufs.len().min(p.promote_entry.len()) as u32;
        self.control_in(client, subdevice, cmd::NV2080_GPU_PROMOTE_CTX, &mut p)
    }

    /// Builds the golden context on a channel of the golden client (see the module text).
    pub(super) fn create_golden(&mut self, classes: &Classes) -> Result<(), GspRmError> {
        let c = self.golden_client;
        let mut dp = DeviceAllocParams {
            h_client_share: c,
            va_mode: device_va_mode::OPTIONAL_MULTIPLE_VASPACES,
            ..Default::default()
        };
        let dev = self.alloc_in(c, c, cls::NV01_DEVICE_0, &mut dp)?;
        let sub = self.alloc_in(
            c,
            dev,
            cls::NV20_SUBDEVICE_0,
            &mut SubdeviceAllocParams::default(),
        )?;
        let vs = self.alloc_in(
            c,
            dev,
            cls::FERMI_VASPACE_A,
            &mut VaSpaceAllocParamsV570::default(),
        )?;

        let levels = self.mm.server_reserved_levels(self.gsp.platform())?;
        let mut rp = CopyServerReservedPdesParams {
            page_size: SERVER_RESERVED.1,
            virt_addr_lo: SERVER_RESERVED.0,
            virt_addr_hi: SERVER_RESERVED.0 + SERVER_RESERVED.1 - 1,
            // CAST: at most GMMU_FMT_MAX_LEVELS (6).
            num_levels_to_copy: levels.len() as u32,
            ..Default::default()
        };
        for (slot, l) in rp.levels.iter_mut().zip(&levels) {
            *slot = *l;
        }
        self.control_in(
            c,
            vs,
            cmd::NV90F1_VASPACE_COPY_SERVER_RESERVED_PDES,
            &mut rp,
        )?;

        let (p, mm) = (self.gsp.platform_mut(), &mut self.mm);
        let area = mm.alloc(p, &MemoryRequest::new(0x1000, Placement::Vram, false))?;
        let mut cp = ChannelAllocParams {
            gp_fifo_offset: area.gpu_va(),
            gp_fifo_entries: GOLDEN_ENTRIES,
            engine_type: engine_type::GRAPHICS,
            cid: GOLDEN_CID,
            h_va_space: vs,
            internal_flags: GOLDEN_INTERNAL_FLAGS,
            flags: channel_flags::PRIVILEGED_CHANNEL.encode(1)
                | channel_flags::USERD_INDEX_VALUE.encode(3)
                | channel_flags::USERD_INDEX_PAGE_FIXED.encode(1),
            ..Default::default()
        };
        cp.userd_offset[0] = GOLDEN_USERD;
        let filled = self
            .channels
            .fill_params(&mut self.mm, &mut cp, &area, GOLDEN_USERD);
        self.resident.push(area);
        filled?;
        let ch = self.alloc_in(c, dev, classes.gpfifo, &mut cp)?;

        let mut ip = GrGetContextBuffersInfoParams::default();
        self.control_in(
            c,
            sub,
            cmd::NV2080_INTERNAL_STATIC_KGR_GET_CONTEXT_BUFFERS_INFO,
            &mut ip,
        )?;
        self.context = context_buffers(&ip.engine_context_buffers_info[0]);
        let bufs = self.context_memory(|b| !b.per_channel)?;
        self.promote(c, sub, ch, &bufs, Promote::AsDescribed)?;
        self.alloc_raw_in(c, ch, classes.compute, &mut [])?;
        self.alloc_raw_in(c, ch, classes.copy, &mut [])?;
        log::debug!(
            "golden context: channel {ch:#x}, {} context buffers ({} KiB)",
            bufs.len(),
            bufs.iter().map(|(b, _)| b.size).sum::<u64>() >> 10
        );
        Ok(())
    }

    /// A compute channel's context: main, PM and patch buffers, promoted physically then
    /// virtually.
    pub(super) fn promote_channel(&mut self, channel: Handle) -> Result<(), GspRmError> {
        let bufs = self.context_memory(|b| {
            matches!(b.id, id::MAIN | id::PM | id::PATCH) && b.phys && b.virt
        })?;
        let (c, sub) = (self.client, self.subdevice);
        self.promote(c, sub, channel, &bufs, Promote::Physical)?;
        self.promote(c, sub, channel, &bufs, Promote::Virtual)?;
        // Promoted: the buffers (the last ones made) belong to the channel now and go with
        // it. A failed promotion leaves them resident (GSP-RM may hold some of them).
        // PANIC: context_memory pushed exactly `bufs.len()` buffers last, so the split point
        // is within `resident`.
        let mine = self.resident.split_off(self.resident.len() - bufs.len());
        self.channel_context
            .entry(channel)
            .or_default()
            .extend(mine);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvbare_gsp::rm::ctrl::gr::EngineContextBufferInfo;

    #[test]
    fn buffers_follow_gsp_rms_sizes_as_tinygrad_lays_them_out() {
        let mut i = GrContextBuffersInfo::default();
        i.engine[usize::from(info::GRAPHICS)] = EngineContextBufferInfo {
            size: 0x12_3400,
            alignment: 0x1000,
        };
        i.engine[usize::from(info::GRAPHICS_PATCH)] = EngineContextBufferInfo {
            size: 0x1_0000,
            alignment: 0x1000,
        };
        i.engine[usize::from(info::GRAPHICS_ATTRIBUTE_CB)] = EngineContextBufferInfo {
            size: 0x3_0000,
            alignment: 0x1000,
        };
        let b = context_buffers(&i);
        let ids: Vec<u16> = b.iter().map(|b| b.id).collect();
        assert_eq!(ids, [id::MAIN, id::PM, id::PATCH, id::ATTRIBUTE_CB]);
        assert_eq!(b[0].size, 0x16_4000, "main + 256 KiB, 4 KiB aligned");
        assert!(b[1].per_channel && !b[0].per_channel);
        assert_eq!((b[3].size, b[3].align), (2 << 20, 2 << 20));
        assert!(!b[3].phys && b[3].virt);
    }
}
