//! RM helpers of the test driver: handles, the objects every RM test starts with, channel
//! parameters as the kernel RM gives them to GSP-RM, and a scheduled compute channel.

use nvbare_gsp::abi::*;
use nvbare_gsp::rm::NvStatus;
use nvbare_gsp::rm::alloc::*;
use nvbare_gsp::rm::classes as cls;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_sim::{FaultPlan, SimChip};
use zerocopy::IntoBytes;

use super::Rig;

pub const CLIENT: u32 = 0xc100_0000;
pub const DEVICE: u32 = 0xcf00_0001;
pub const SUBDEVICE: u32 = 0xcf00_0002;
pub const VASPACE: u32 = 0xcf00_0003;
pub const TSG: u32 = 0xcf00_0004;
pub const CTXSHARE: u32 = 0xcf00_0005;
pub const CHANNEL: u32 = 0xcf00_0006;
pub const COMPUTE: u32 = 0xcf00_0007;
pub const COPY: u32 = 0xcf00_0008;
pub const DEBUGGER: u32 = 0xcf00_0009;

pub fn booted(chip: SimChip) -> Option<Rig> {
    let mut rig = Rig::new(chip, FaultPlan::default())?;
    rig.boot();
    Some(rig)
}

pub fn ok(r: (NvStatus, Vec<u8>), what: &str) -> Vec<u8> {
    assert_eq!(r.0, NvStatus::OK, "{what}");
    r.1
}

pub fn status(r: (NvStatus, Vec<u8>)) -> NvStatus {
    r.0
}

/// The classes of `chip` tinygrad and nvbare pick (GPFIFO, compute, copy).
pub fn classes(chip: SimChip) -> (u32, u32, u32) {
    match chip {
        SimChip::Gh100 => (
            cls::HOPPER_CHANNEL_GPFIFO_A,
            cls::HOPPER_COMPUTE_A,
            cls::HOPPER_DMA_COPY_A,
        ),
        SimChip::Gb202 => (
            cls::BLACKWELL_CHANNEL_GPFIFO_A,
            cls::BLACKWELL_COMPUTE_B,
            cls::BLACKWELL_DMA_COPY_B,
        ),
        SimChip::Gb100 => (
            cls::BLACKWELL_CHANNEL_GPFIFO_A,
            cls::BLACKWELL_COMPUTE_A,
            cls::BLACKWELL_DMA_COPY_A,
        ),
        // AMPERE_CHANNEL_GPFIFO_A, AMPERE_COMPUTE_B / ADA_COMPUTE_A, AMPERE_DMA_COPY_B.
        SimChip::Ga102 => (0xc56f, 0xc7c0, 0xc7b5),
        SimChip::Ad102 => (0xc56f, 0xc9c0, 0xc7b5),
        SimChip::Ga100 => (0xc56f, 0xc6c0, 0xc6b5),
        // TURING_CHANNEL_GPFIFO_A, TURING_COMPUTE_A, TURING_DMA_COPY_A.
        SimChip::Tu102 => (0xc46f, 0xc5c0, 0xc5b5),
    }
}

/// Channel parameters as the kernel RM gives GSP-RM (instance, USERD, RAMFC and method
/// buffer described in VRAM, `ADDR_FBMEM` = 2).
pub fn channel_params(vram: u64, entries: u32, ctxshare: u32) -> ChannelAllocParams {
    let desc = |base, size| MemoryDescParams {
        base,
        size,
        address_space: 2,
        cache_attrib: 0,
    };
    ChannelAllocParams {
        gp_fifo_offset: 0x10_0000_0000,
        gp_fifo_entries: entries,
        h_context_share: ctxshare,
        instance_mem: desc(vram, 0x1000),
        ramfc_mem: desc(vram, 0x200),
        userd_mem: desc(vram + 0x1000, 0x200),
        mthdbuf_mem: desc(vram + 0x2000, 0x5000),
        ..Default::default()
    }
}

/// Client, device, subdevice.
pub fn basic_objects(rig: &mut Rig) {
    ok(
        rig.rm_alloc(
            CLIENT,
            0,
            CLIENT,
            cls::NV01_ROOT,
            RootClientAllocParams::default().as_bytes(),
        ),
        "client",
    );
    let dp = DeviceAllocParams {
        h_client_share: CLIENT,
        ..Default::default()
    };
    ok(
        rig.rm_alloc(CLIENT, CLIENT, DEVICE, cls::NV01_DEVICE_0, dp.as_bytes()),
        "device",
    );
    ok(
        rig.rm_alloc(
            CLIENT,
            DEVICE,
            SUBDEVICE,
            cls::NV20_SUBDEVICE_0,
            SubdeviceAllocParams::default().as_bytes(),
        ),
        "subdevice",
    );
}

/// A scheduled compute channel as tinygrad's NVDevice init gets one, without the refused
/// variants `gsp_channels.rs` tries between the steps: a VA space with tinygrad's flags and
/// its page directory at VRAM 0x20_0000, a graphics channel group, a context share, a
/// 1024-entry channel whose instance block is at `vram`, its compute and copy objects and a
/// debugger.
pub fn compute_channel(rig: &mut Rig, chip: SimChip, vram: u64) {
    let (gpfifo, compute, copy) = classes(chip);
    let vs = VaSpaceAllocParamsV570 {
        va_base: 0x1000,
        va_size: 0x1_ffff_fb00_0000,
        // ENABLE_PAGE_FAULTING | IS_EXTERNALLY_OWNED, as tinygrad asks.
        flags: (1 << 6) | (1 << 3),
        ..Default::default()
    };
    ok(
        rig.rm_alloc(CLIENT, DEVICE, VASPACE, cls::FERMI_VASPACE_A, vs.as_bytes()),
        "VA space",
    );
    let spd = RpcSetPageDirectory {
        h_client: CLIENT,
        h_device: DEVICE,
        pasid: u32::MAX,
        params: Nv0080CtrlDmaSetPageDirectoryParams {
            phys_address: 0x20_0000,
            num_entries: 2,
            flags: 0x8,
            h_va_space: VASPACE,
            sub_device_id: 1,
            pasid: u32::MAX,
            ..Default::default()
        },
        ..Default::default()
    };
    let (h, _) = rig.call(RpcFunction::SetPageDirectory.as_u32(), spd.as_bytes());
    assert_eq!(h.rpc_result, 0, "page directory");
    let tsg = ChannelGroupAllocParams {
        engine_type: 1,
        ..Default::default()
    };
    ok(
        rig.rm_alloc(
            CLIENT,
            DEVICE,
            TSG,
            cls::KEPLER_CHANNEL_GROUP_A,
            tsg.as_bytes(),
        ),
        "TSG",
    );
    let cs = CtxShareAllocParams {
        h_va_space: VASPACE,
        flags: 1,
        ..Default::default()
    };
    ok(
        rig.rm_alloc(
            CLIENT,
            TSG,
            CTXSHARE,
            cls::FERMI_CONTEXT_SHARE_A,
            cs.as_bytes(),
        ),
        "context share",
    );
    ok(
        rig.rm_alloc(
            CLIENT,
            TSG,
            CHANNEL,
            gpfifo,
            channel_params(vram, 1024, CTXSHARE).as_bytes(),
        ),
        "channel",
    );
    ok(
        rig.rm_alloc(CLIENT, CHANNEL, COMPUTE, compute, &[]),
        "compute object",
    );
    ok(
        rig.rm_alloc(CLIENT, CHANNEL, COPY, copy, &[]),
        "copy object",
    );
    let dbg = DebuggerAllocParams {
        h_app_client: CLIENT,
        h_class3d_object: COMPUTE,
        ..Default::default()
    };
    ok(
        rig.rm_alloc(
            CLIENT,
            DEVICE,
            DEBUGGER,
            cls::GT200_DEBUGGER,
            dbg.as_bytes(),
        ),
        "debugger",
    );
    ok(
        rig.rm_control(CLIENT, TSG, cmd::NVA06C_GPFIFO_SCHEDULE, &[1, 0]),
        "schedule",
    );
}
