//! What a booted GSP-RM reports about the GPU, as a typed value: `GET_GSP_STATIC_INFO`
//! (`GspStaticConfigInfo`: VRAM, name, UUID, FB regions, the internal RM handles, the
//! WPR layout GSP-FMC chose), then two RM controls on those internal handles, as kernel RM
//! makes them: `NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_INFO` (SMs, GPCs, warps, SM
//! version) and `NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2` (the classes GSP-RM offers).

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use nvbare_gsp::abi::GspStaticConfigInfo;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::gr::{InternalStaticGrGetInfoParams, gr_info_index as ix};
use nvbare_gsp::rm::ctrl::root::ClassListV2ParamsV570;
use nvbare_gsp::rpc::commands::Command;
use nvbare_gsp::rpc::events::GspMessage;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::error::BootErrorKind;
use crate::gsp_rpc::Rpc;
use crate::hal::Platform;

/// One FB region GSP-RM reports (`NV2080_CTRL_CMD_FB_GET_FB_REGION_FB_REGION_INFO`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FbRegion {
    /// First byte.
    pub base: u64,
    /// Last byte (inclusive).
    pub limit: u64,
    /// Bytes reserved by RM inside it.
    pub reserved: u64,
    /// Protected (not for clients).
    pub protected: bool,
    /// Supports compression.
    pub compressible: bool,
}

/// The internal RM client, device and subdevice GSP-RM created for kernel RM's controls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InternalHandles {
    /// `hInternalClient`.
    pub client: u32,
    /// `hInternalDevice`.
    pub device: u32,
    /// `hInternalSubdevice`.
    pub subdevice: u32,
}

/// The graphics engine's shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GrInfo {
    /// Enabled SMs.
    pub sm_count: u32,
    /// `SM_VERSION` (0x900 is sm_90).
    pub sm_version: u32,
    /// GPCs of the design (`LITTER_NUM_GPCS`).
    pub gpcs: u32,
    /// TPCs per GPC of the design.
    pub tpcs_per_gpc: u32,
    /// SMs per TPC.
    pub sms_per_tpc: u32,
    /// Warps per SM.
    pub max_warps_per_sm: u32,
}

/// What GSP-RM reports about the GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticInfo {
    /// `gpuNameString`.
    pub name: String,
    /// `gpuShortNameString`.
    pub short_name: String,
    /// The binary UUID, when GSP-RM reports one.
    pub uuid: Option<[u8; 16]>,
    /// VRAM in bytes (`fb_length`).
    pub vram_bytes: u64,
    /// The FB regions.
    pub fb_regions: Vec<FbRegion>,
    /// L2 cache bytes.
    pub l2_cache_bytes: u32,
    /// FB bus width in bits.
    pub fb_bus_width: u32,
    /// A bit per `RM_ENGINE_TYPE` present.
    pub engine_caps: Vec<u32>,
    /// The internal RM handles.
    pub internal: InternalHandles,
    /// `bar1PdeBase`.
    pub bar1_pde_base: u64,
    /// `bar2PdeBase`.
    pub bar2_pde_base: u64,
    /// Where GSP-FMC put the non-WPR heap (the lowest byte the firmware reserved).
    pub non_wpr_heap_offset: u64,
    /// Where GSP-FMC put FRTS.
    pub frts_offset: u64,
    /// Whether MIG is supported.
    pub mig_supported: bool,
    /// The graphics engine.
    pub gr: GrInfo,
    /// The classes GSP-RM offers, in its order.
    pub classes: Vec<u32>,
    /// The whole reply, for what is not decoded here.
    pub raw: Box<GspStaticConfigInfo>,
}

impl StaticInfo {
    /// Whether GSP-RM offers `class`.
    pub fn has_class(&self, class: u32) -> bool {
        self.classes.contains(&class)
    }
}

impl fmt::Display for StaticInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {} MiB VRAM, {} SMs (sm_{:x}), {} classes",
            self.name,
            self.short_name,
            self.vram_bytes >> 20,
            self.gr.sm_count,
            self.gr.sm_version >> 4,
            self.classes.len()
        )
    }
}

fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

fn decode_static(info: Box<GspStaticConfigInfo>) -> StaticInfo {
    let gid = &info.gid_info;
    let uuid = (gid.length == 16).then(|| {
        let mut u = [0u8; 16];
        u.copy_from_slice(&gid.data[..16]);
        u
    });
    let regions = &info.fb_region_info_params;
    // CAST: a count GSP-RM wrote; clamped to the array.
    let n = (regions.num_fb_regions as usize).min(regions.fb_region.len());
    StaticInfo {
        name: c_string(&info.gpu_name_string),
        short_name: c_string(&info.gpu_short_name_string),
        uuid,
        vram_bytes: info.fb_length,
        fb_regions: regions.fb_region[..n]
            .iter()
            .map(|r| FbRegion {
                base: r.base,
                limit: r.limit,
                reserved: r.reserved,
                protected: r.b_protected != 0,
                compressible: r.support_compressed != 0,
            })
            .collect(),
        l2_cache_bytes: info.l2_cache_size,
        fb_bus_width: info.fb_bus_width,
        engine_caps: info.engine_caps.to_vec(),
        internal: InternalHandles {
            client: info.h_internal_client,
            device: info.h_internal_device,
            subdevice: info.h_internal_subdevice,
        },
        bar1_pde_base: info.bar1_pde_base,
        bar2_pde_base: info.bar2_pde_base,
        non_wpr_heap_offset: info.fw_wpr_layout_offset.non_wpr_heap_offset,
        frts_offset: info.fw_wpr_layout_offset.frts_offset,
        mig_supported: info.b_is_mig_supported != 0,
        gr: GrInfo::default(),
        classes: Vec::new(),
        raw: info,
    }
}

/// An RM control on the internal handles; its returned parameters.
fn control<P: Platform>(
    rpc: &mut Rpc<'_, P>,
    client: u32,
    object: u32,
    command: u32,
    params: &[u8],
    what: &'static str,
) -> Result<Vec<u8>, BootErrorKind> {
    let c = Command::rm_control(client, object, command, params).map_err(|_| {
        BootErrorKind::Structure {
            what,
            why: "parameters too large",
        }
    })?;
    match rpc.call(&c).map_err(BootErrorKind::Rpc)?.body {
        GspMessage::RmControlReply { cmd, params, .. } if cmd == command => Ok(params),
        _ => Err(BootErrorKind::UnexpectedReply { what }),
    }
}

/// Asks GSP-RM for the static info and the GR and class queries.
pub fn query<P: Platform>(rpc: &mut Rpc<'_, P>) -> Result<StaticInfo, BootErrorKind> {
    let reply = rpc
        .call(&Command::get_gsp_static_info())
        .map_err(BootErrorKind::Rpc)?;
    let GspMessage::StaticInfo(raw) = reply.body else {
        return Err(BootErrorKind::UnexpectedReply {
            what: "GET_GSP_STATIC_INFO",
        });
    };
    let mut info = decode_static(raw);
    let h = info.internal;

    let what = "NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_INFO";
    let zero = InternalStaticGrGetInfoParams::new_zeroed();
    let params = control(
        rpc,
        h.client,
        h.subdevice,
        cmd::NV2080_INTERNAL_STATIC_KGR_GET_INFO,
        zero.as_bytes(),
        what,
    )?;
    let gr = InternalStaticGrGetInfoParams::read_from_bytes(&params)
        .map_err(|_| BootErrorKind::UnexpectedReply { what })?;
    let list = &gr.engine_info[0].info_list;
    // CAST: info indices are below GR_INFO_MAX_SIZE (0x3a).
    let v = |i: u32| list[i as usize].data;
    let mut g = GrInfo {
        sm_count: 0,
        sm_version: v(ix::SM_VERSION),
        gpcs: v(ix::LITTER_NUM_GPCS),
        tpcs_per_gpc: v(ix::LITTER_NUM_TPC_PER_GPC),
        sms_per_tpc: v(ix::LITTER_NUM_SM_PER_TPC),
        max_warps_per_sm: v(ix::MAX_WARPS_PER_SM),
    };
    // Enabled SMs = FP32 cores / FP32 cores per SM (64 on GA100's sm_80, 128 on sm_86 to
    // sm_12x), as the nvk backend derives them; the design's count when none is reported.
    let per_sm = if g.sm_version == 0x800 { 64 } else { 128 };
    g.sm_count = match v(ix::GPU_CORE_COUNT) {
        // Firmware-reported counts: a product that overflows makes no sense.
        0 => g
            .gpcs
            .checked_mul(g.tpcs_per_gpc)
            .and_then(|n| n.checked_mul(g.sms_per_tpc))
            .ok_or(BootErrorKind::UnexpectedReply { what })?,
        cores => cores / per_sm,
    };
    info.gr = g;

    let what = "NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2";
    let zero = ClassListV2ParamsV570::new_zeroed();
    let params = control(
        rpc,
        h.client,
        h.device,
        cmd::NV0080_GPU_GET_CLASSLIST_V2,
        zero.as_bytes(),
        what,
    )?;
    let list = ClassListV2ParamsV570::read_from_bytes(&params)
        .map_err(|_| BootErrorKind::UnexpectedReply { what })?;
    info.classes = list.classes().to_vec();
    Ok(info)
}
