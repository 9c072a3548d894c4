//! What the simulated GSP-RM reports about the GPU: its name and UUID, GR facts, FB facts,
//! the graphics context-buffer sizes, and `GspStaticConfigInfo` (`gsp_static_config.h`) for
//! `GET_GSP_STATIC_INFO`. GH100 values are the H200's (`h200-machine.md`); the chip table
//! has the rest.

use nvbare_gsp::abi::{GspStaticConfigInfo, Nv2080CtrlFbRegionInfo};
use nvbare_gsp::rm::ctrl::gr::{CONTEXT_BUFFER_ID_COUNT, EngineContextBufferInfo, gr_info_index};
use zerocopy::FromZeros;

use super::fmc::WprLayout;
use crate::chip::ChipSpec;

/// The driver version GSP-RM reports (`NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2`).
pub const DRIVER_VERSION: &str = "570.144";
/// The internal client GSP-RM creates for the kernel RM's internal controls, and its
/// device and subdevice (`GspStaticConfigInfo.hInternalClient/Device/Subdevice`).
pub const INTERNAL_CLIENT: u32 = 0xc1e0_0000;
/// The internal device.
pub const INTERNAL_DEVICE: u32 = 0x5c00_0080;
/// The internal subdevice.
pub const INTERNAL_SUBDEVICE: u32 = 0x5c00_2080;

/// The marketing name, without the simulator's note ("NVIDIA H200").
pub fn gpu_name(spec: &ChipSpec) -> &'static str {
    let p = spec.product;
    p.split(" (").next().unwrap_or(p)
}

/// A stable UUID for the simulated GPU (16 bytes): SHA-384 of the chip and its PCI ids.
pub fn uuid(spec: &ChipSpec) -> [u8; 16] {
    let h = crate::firmware::sha384(
        format!("nvbare-sim {} {:04x}", spec.name, spec.device_id).as_bytes(),
    );
    let mut u = [0u8; 16];
    u.copy_from_slice(&h[..16]);
    u
}

/// The UUID as `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn uuid_text(spec: &ChipSpec) -> String {
    let u = uuid(spec);
    let hex: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// FP32 lanes per SM: 64 on sm_80 (GA100: the A100's 6912 CUDA cores on 108 SMs), 128 on
/// every other simulated SM.
fn fp32_lanes_per_sm(spec: &ChipSpec) -> u32 {
    if spec.sm_version == 0x800 { 64 } else { 128 }
}

/// `NV2080_CTRL_GR_INFO_INDEX_*` value `index` (None: an index the model does not know).
pub fn gr_info(spec: &ChipSpec, index: u32) -> Option<u32> {
    use gr_info_index as ix;
    Some(match index {
        ix::SM_VERSION => spec.sm_version,
        ix::MAX_WARPS_PER_SM => spec.max_warps_per_sm,
        ix::MAX_THREADS_PER_WARP => 32,
        ix::MAX_SP_PER_SM => fp32_lanes_per_sm(spec),
        ix::LITTER_NUM_GPCS => spec.gpcs,
        ix::LITTER_NUM_FBPS => spec.gpcs,
        ix::LITTER_NUM_TPC_PER_GPC => spec.tpcs_per_gpc,
        // "GPU Cores" (ctrl2080gr.h): FP32 lanes of the enabled SMs (16896 on the H200).
        ix::GPU_CORE_COUNT => spec.sm_count * fp32_lanes_per_sm(spec),
        ix::LITTER_NUM_SM_PER_TPC => spec.sms_per_tpc,
        ix::LITTER_NUM_LTCS => spec.gpcs * 2,
        ix::MAX_SUBCONTEXT_COUNT => 64,
        i if i <= ix::MAX => 0,
        _ => return None,
    })
}

/// `NV2080_CTRL_FB_INFO_INDEX_*` value `index`; sizes in KiB as `ctrl2080fb.h` gives them.
pub fn fb_info(spec: &ChipSpec, index: u32) -> Option<u32> {
    use nvbare_gsp::rm::ctrl::fb::fb_info_index as ix;
    // CAST: sizes in KiB fit 32 bits below 4 TiB.
    let kib = |b: u64| (b >> 10) as u32;
    Some(match index {
        ix::BAR1_SIZE | ix::BAR1_AVAIL_SIZE => kib(spec.bar1_size),
        ix::RAM_SIZE | ix::TOTAL_RAM_SIZE | ix::USABLE_RAM_SIZE => kib(spec.vram_bytes),
        ix::HEAP_SIZE | ix::HEAP_FREE => kib(spec.vram_bytes - (256 << 20)),
        ix::BUS_WIDTH => 5120,
        ix::L2CACHE_SIZE => 50 << 20,
        ix::LTC_COUNT => spec.gpcs * 2,
        _ => return None,
    })
}

/// The graphics engine's context buffers (`NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_CONTEXT_BUFFERS_INFO`):
/// every id with a non-zero size and alignment (tinygrad rounds sizes up to the alignment,
/// dividing by it).
pub fn context_buffers(spec: &ChipSpec) -> [EngineContextBufferInfo; CONTEXT_BUFFER_ID_COUNT] {
    let mut out = [EngineContextBufferInfo::default(); CONTEXT_BUFFER_ID_COUNT];
    for (i, e) in out.iter_mut().enumerate() {
        // CAST: small indices.
        let i = i as u32;
        *e = match i {
            // The main graphics context scales with the SMs.
            0 => EngineContextBufferInfo {
                size: 0x8_0000 + spec.sm_count * 0x2000,
                alignment: 0x1000,
            },
            // The page pool is 2 MiB aligned.
            0x0d | 0x12 => EngineContextBufferInfo {
                size: 0x20_0000,
                alignment: 0x20_0000,
            },
            _ => EngineContextBufferInfo {
                size: 0x1_0000 + i * 0x1000,
                alignment: 0x1000,
            },
        };
    }
    out
}

/// `GspStaticConfigInfo` for `GET_GSP_STATIC_INFO`.
pub fn static_info(spec: &ChipSpec, wpr: &WprLayout) -> GspStaticConfigInfo {
    let mut s = GspStaticConfigInfo::new_zeroed();
    let uuid = uuid(spec);
    s.gid_info.index = 0;
    // NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY (2), TYPE_SHA1 (0).
    s.gid_info.flags = 2;
    s.gid_info.length = 16;
    s.gid_info.data[..16].copy_from_slice(&uuid);
    // One region: all of FB below the non-WPR heap.
    s.fb_region_info_params.num_fb_regions = 1;
    s.fb_region_info_params.fb_region[0] = Nv2080CtrlFbRegionInfo {
        base: 0,
        limit: wpr.non_wpr_heap - 1,
        reserved: 0,
        performance: 100,
        support_compressed: 1,
        support_iso: 0,
        b_protected: 0,
        black_list: [0; 17],
    };
    // Bits of the engines the table lists (RM_ENGINE_TYPE numbering).
    for e in spec.engines {
        s.engine_caps[(e.rm_engine_type / 32) as usize] |= 1 << (e.rm_engine_type % 32);
    }
    s.fb_length = spec.vram_bytes;
    s.fbio_mask = (1 << spec.gpcs) - 1;
    s.fbp_mask = (1 << spec.gpcs) - 1;
    s.fb_bus_width = 5120;
    s.l2_cache_size = 50 << 20;
    let name = gpu_name(spec).as_bytes();
    s.gpu_name_string[..name.len()].copy_from_slice(name);
    let short = spec.name.to_uppercase();
    s.gpu_short_name_string[..short.len()].copy_from_slice(short.as_bytes());
    for (i, b) in name.iter().enumerate() {
        s.gpu_name_string_unicode[i] = u16::from(*b);
    }
    s.b_is_tesla = u8::from(spec.name.starts_with("gh"));
    s.b_is_mig_supported = u8::from(spec.name.starts_with("gh"));
    s.vbios_sub_vendor = u32::from(spec.subsystem.0);
    s.vbios_sub_device = u32::from(spec.subsystem.1);
    s.b_vbios_valid = 1;
    s.h_internal_client = INTERNAL_CLIENT;
    s.h_internal_device = INTERNAL_DEVICE;
    s.h_internal_subdevice = INTERNAL_SUBDEVICE;
    s.fw_wpr_layout_offset.non_wpr_heap_offset = wpr.non_wpr_heap;
    s.fw_wpr_layout_offset.frts_offset = wpr.frts;
    s
}
