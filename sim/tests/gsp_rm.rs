//! The simulated GSP-RM's object database: every NV_STATUS path of the generic and
//! per-class checks, the allocations and controls nvbare and tinygrad use with what they
//! set up in the world (VA spaces, channels), continuation records, and the events a
//! channel fault raises. Parameter blocks from `nvbare_gsp::rm` (checked against the SDK
//! headers); RPCs from the test's own driver ([`gsp_rig`]).

mod gsp_rig;

use gsp_rig::*;
use nvbare_gsp::abi::*;
use nvbare_gsp::rm::NvStatus;
use nvbare_gsp::rm::alloc::*;
use nvbare_gsp::rm::classes as cls;
use nvbare_gsp::rm::ctrl::channel::*;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::debugger::ReadMmuFaultInfoParams;
use nvbare_gsp::rm::ctrl::fb::fb_info_index;
use nvbare_gsp::rm::ctrl::gr::*;
use nvbare_gsp::rm::ctrl::root::BuildVersionV2Params;
use nvbare_gsp::rm::ctrl::subdevice::*;
use nvbare_gsp::rm::r570::{ClassListV2Params, FbGetInfoV2Params};
use nvbare_sim::device::{Engine, MmuFaultRecord, Signal};
use nvbare_sim::memory::{Access, Target};
use nvbare_sim::{FaultPlan, SimChip};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

const CLIENT: u32 = 0xc100_0000;
const DEVICE: u32 = 0xcf00_0001;
const SUBDEVICE: u32 = 0xcf00_0002;
const VASPACE: u32 = 0xcf00_0003;
const TSG: u32 = 0xcf00_0004;
const CTXSHARE: u32 = 0xcf00_0005;
const CHANNEL: u32 = 0xcf00_0006;
const COMPUTE: u32 = 0xcf00_0007;
const COPY: u32 = 0xcf00_0008;
const DEBUGGER: u32 = 0xcf00_0009;

fn booted(chip: SimChip) -> Option<Rig> {
    let mut rig = Rig::new(chip, FaultPlan::default())?;
    rig.boot();
    Some(rig)
}

fn ok(r: (NvStatus, Vec<u8>), what: &str) -> Vec<u8> {
    assert_eq!(r.0, NvStatus::OK, "{what}");
    r.1
}

fn status(r: (NvStatus, Vec<u8>)) -> NvStatus {
    r.0
}

/// The classes of `chip` tinygrad and nvbare pick (GPFIFO, compute, copy).
fn classes(chip: SimChip) -> (u32, u32, u32) {
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
    }
}

/// Channel parameters as the kernel RM gives GSP-RM (instance, USERD, RAMFC and method
/// buffer described in VRAM, `ADDR_FBMEM` = 2).
fn channel_params(vram: u64, entries: u32, ctxshare: u32) -> ChannelAllocParams {
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
fn basic_objects(rig: &mut Rig) {
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

#[test]
fn generic_alloc_and_control_checks_give_resservs_statuses() {
    let Some(mut rig) = booted(SimChip::Gh100) else {
        return;
    };
    let root = RootClientAllocParams::default();
    basic_objects(&mut rig);
    // _serverCreateEntryAndLockForNewClient.
    assert_eq!(
        status(rig.rm_alloc(CLIENT, 0, CLIENT, cls::NV01_ROOT, root.as_bytes())),
        NvStatus::ERR_INSERT_DUPLICATE_NAME
    );
    assert_eq!(
        status(rig.rm_alloc(0, 0, 0, cls::NV01_ROOT, root.as_bytes())),
        NvStatus::ERR_INVALID_OBJECT_HANDLE
    );
    let dp = DeviceAllocParams::default();
    // _serverLockClientWithLockInfo.
    assert_eq!(
        status(rig.rm_alloc(
            0xc100_0099,
            0xc100_0099,
            0xd0,
            cls::NV01_DEVICE_0,
            dp.as_bytes()
        )),
        NvStatus::ERR_INVALID_OBJECT_HANDLE
    );
    // serverAllocResourceUnderLock: unknown parent, wrong parent class, unknown class.
    assert_eq!(
        status(rig.rm_alloc(CLIENT, 0x1234, 0xd0, cls::NV01_DEVICE_0, dp.as_bytes())),
        NvStatus::ERR_OBJECT_NOT_FOUND
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CLIENT, 0xd0, cls::NV20_SUBDEVICE_0, &[0; 4])),
        NvStatus::ERR_INVALID_OBJECT_PARENT
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, DEVICE, 0xd0, cls::AMPERE_COMPUTE_A, &[])),
        NvStatus::ERR_INVALID_CLASS,
        "not on GH100's list"
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, DEVICE, 0xd0, 0xbeef, &[])),
        NvStatus::ERR_INVALID_CLASS
    );
    // clientValidateNewResourceHandle_IMPL.
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CLIENT, CLIENT, cls::NV01_DEVICE_0, dp.as_bytes())),
        NvStatus::ERR_INVALID_OBJECT_HANDLE
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CLIENT, 0, cls::NV01_DEVICE_0, dp.as_bytes())),
        NvStatus::ERR_INVALID_OBJECT_HANDLE
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CLIENT, DEVICE, cls::NV01_DEVICE_0, dp.as_bytes())),
        NvStatus::ERR_INSERT_DUPLICATE_NAME
    );
    // deviceConstruct_IMPL / subdeviceConstruct_IMPL / parameter sizes.
    let bad_dev = DeviceAllocParams {
        device_id: 1,
        ..Default::default()
    };
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CLIENT, 0xd1, cls::NV01_DEVICE_0, bad_dev.as_bytes())),
        NvStatus::ERR_INVALID_CLASS
    );
    let bad_mode = DeviceAllocParams {
        va_mode: 5,
        ..Default::default()
    };
    assert_eq!(
        status(rig.rm_alloc(
            CLIENT,
            CLIENT,
            0xd1,
            cls::NV01_DEVICE_0,
            bad_mode.as_bytes()
        )),
        NvStatus::ERR_INVALID_ARGUMENT
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CLIENT, 0xd1, cls::NV01_DEVICE_0, &[0; 12])),
        NvStatus::ERR_INVALID_ARGUMENT
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, DEVICE, 0xd1, cls::NV20_SUBDEVICE_0, &[0; 4])),
        NvStatus::ERR_INSUFFICIENT_RESOURCES
    );
    assert_eq!(
        status(rig.rm_alloc(
            CLIENT,
            DEVICE,
            0xd1,
            cls::NV20_SUBDEVICE_0,
            &1u32.to_le_bytes()
        )),
        NvStatus::ERR_INVALID_CLASS
    );
    // Memory is the kernel RM's to allocate; GSP-RM takes it described by ALLOC_MEMORY.
    assert_eq!(
        status(rig.rm_alloc(
            CLIENT,
            DEVICE,
            0xd5,
            cls::NV01_MEMORY_LOCAL_USER,
            MemoryAllocParams::default().as_bytes()
        )),
        NvStatus::ERR_NOT_SUPPORTED
    );
    // Controls: serverControl, resControlLookup_IMPL.
    let cl = ClassListV2Params::new_zeroed();
    assert_eq!(
        status(rig.rm_control(
            CLIENT,
            0xdead,
            cmd::NV0080_GPU_GET_CLASSLIST_V2,
            cl.as_bytes()
        )),
        NvStatus::ERR_OBJECT_NOT_FOUND
    );
    assert_eq!(
        status(rig.rm_control(
            0xc1aa_aaaa,
            DEVICE,
            cmd::NV0080_GPU_GET_CLASSLIST_V2,
            cl.as_bytes()
        )),
        NvStatus::ERR_INVALID_OBJECT_HANDLE
    );
    assert_eq!(
        status(rig.rm_control(
            CLIENT,
            SUBDEVICE,
            cmd::NV0080_GPU_GET_CLASSLIST_V2,
            cl.as_bytes()
        )),
        NvStatus::ERR_NOT_SUPPORTED
    );
    assert_eq!(
        status(rig.rm_control(
            CLIENT,
            DEVICE,
            cmd::NV0080_GPU_GET_CLASSLIST_V2,
            &cl.as_bytes()[..100]
        )),
        NvStatus::ERR_INVALID_PARAM_STRUCT
    );
    assert_eq!(
        status(rig.rm_control(CLIENT, SUBDEVICE, 0x2080_1201, &[0; 32])),
        NvStatus::ERR_NOT_SUPPORTED,
        "GR_GET_INFO has a pointer"
    );
    assert_eq!(
        status(rig.rm_control(CLIENT, SUBDEVICE, 0x2080_ffff, &[])),
        NvStatus::ERR_NOT_SUPPORTED
    );
    // Free: clientFreeResource_IMPL.
    let free = |c: u32, o: u32| {
        [
            c.to_le_bytes(),
            0u32.to_le_bytes(),
            o.to_le_bytes(),
            0u32.to_le_bytes(),
        ]
        .concat()
    };
    let (_, p) = rig.call(RpcFunction::Free.as_u32(), &free(CLIENT, 0x4242));
    assert_eq!(
        u32::from_le_bytes(p[12..16].try_into().unwrap()),
        NvStatus::ERR_OBJECT_NOT_FOUND.0
    );
    let (_, p) = rig.call(RpcFunction::Free.as_u32(), &free(CLIENT, SUBDEVICE));
    assert_eq!(u32::from_le_bytes(p[12..16].try_into().unwrap()), 0);
    assert_eq!(
        status(rig.rm_control(
            CLIENT,
            SUBDEVICE,
            cmd::NV2080_GPU_GET_GID_INFO,
            GidInfoParams::new_zeroed().as_bytes()
        )),
        NvStatus::ERR_OBJECT_NOT_FOUND,
        "freed"
    );
}

/// What a driver does to get a compute and a copy channel (tinygrad's NVDevice init and
/// nvbare's host device), with the answers and world state checked.
fn channel_flow(chip: SimChip) {
    let Some(mut rig) = booted(chip) else { return };
    let spec = chip.spec();
    let (gpfifo, compute, copy) = classes(chip);
    basic_objects(&mut rig);
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
    let bad_vs = VaSpaceAllocParamsV570 {
        big_page_size: 0x3000,
        ..Default::default()
    };
    assert_eq!(
        status(rig.rm_alloc(
            CLIENT,
            DEVICE,
            0xe0,
            cls::FERMI_VASPACE_A,
            bad_vs.as_bytes()
        )),
        NvStatus::ERR_INVALID_ARGUMENT
    );
    // SET_PAGE_DIRECTORY names the root: World::vaspaces records it.
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
    assert_eq!(h.rpc_result, 0);
    let roots: Vec<_> = rig
        .gpu
        .with_world(|w| w.vaspaces.values().map(|v| v.page_dir).collect());
    assert_eq!(roots, [Some(Target::Vram(0x20_0000))]);
    let mut bad_spd = spd;
    bad_spd.params.h_va_space = DEVICE;
    let (h, _) = rig.call(RpcFunction::SetPageDirectory.as_u32(), bad_spd.as_bytes());
    assert_eq!(h.rpc_result, NvStatus::ERR_INVALID_OBJECT_HANDLE.0);
    // Channel group, context share, channel.
    let tsg = ChannelGroupAllocParams {
        engine_type: 1,
        ..Default::default()
    };
    assert_eq!(
        status(
            rig.rm_alloc(
                CLIENT,
                DEVICE,
                0xe1,
                cls::KEPLER_CHANNEL_GROUP_A,
                ChannelGroupAllocParams {
                    engine_type: 0x55,
                    ..tsg
                }
                .as_bytes()
            )
        ),
        NvStatus::ERR_INVALID_ARGUMENT
    );
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
    assert_eq!(
        status(
            rig.rm_alloc(
                CLIENT,
                TSG,
                0xe2,
                cls::FERMI_CONTEXT_SHARE_A,
                CtxShareAllocParams {
                    h_va_space: DEVICE,
                    ..cs
                }
                .as_bytes()
            )
        ),
        NvStatus::ERR_INVALID_OBJECT_HANDLE
    );
    assert_eq!(
        status(rig.rm_alloc(
            CLIENT,
            DEVICE,
            0xe2,
            cls::FERMI_CONTEXT_SHARE_A,
            cs.as_bytes()
        )),
        NvStatus::ERR_INVALID_OBJECT_PARENT
    );
    let out = ok(
        rig.rm_alloc(
            CLIENT,
            TSG,
            CTXSHARE,
            cls::FERMI_CONTEXT_SHARE_A,
            cs.as_bytes(),
        ),
        "context share",
    );
    assert_eq!(
        CtxShareAllocParams::read_from_bytes(&out)
            .unwrap()
            .subctx_id,
        0,
        "subcontext 0 assigned"
    );
    assert_eq!(
        status(rig.rm_alloc(
            CLIENT,
            TSG,
            0xe3,
            cls::KEPLER_CHANNEL_GROUP_A,
            tsg.as_bytes()
        )),
        NvStatus::ERR_INVALID_OBJECT_PARENT
    );
    let vram = 0x4000_0000;
    assert_eq!(
        status(rig.rm_alloc(
            CLIENT,
            TSG,
            0xe4,
            gpfifo,
            channel_params(vram, 1000, CTXSHARE).as_bytes()
        )),
        NvStatus::ERR_INVALID_ARGUMENT,
        "1000 entries"
    );
    let mut no_inst = channel_params(vram, 1024, CTXSHARE);
    no_inst.instance_mem = MemoryDescParams::default();
    assert_eq!(
        status(rig.rm_alloc(CLIENT, TSG, 0xe4, gpfifo, no_inst.as_bytes())),
        NvStatus::ERR_INVALID_ARGUMENT,
        "no instance memory"
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
    let chans: Vec<_> = rig
        .gpu
        .with_world(|w| w.channels.clone().into_iter().collect());
    assert_eq!(chans.len(), 1);
    let (token, ch) = &chans[0];
    assert_eq!(*token, ch.runlist << 16 | ch.chid);
    assert_eq!(
        (ch.engine, ch.gpfifo_va, ch.gpfifo_entries, ch.enabled),
        (Engine::Graphics, 0x10_0000_0000, 1024, false)
    );
    assert_eq!(
        (ch.userd, ch.instance),
        (Target::Vram(vram + 0x1000), Some(Target::Vram(vram)))
    );
    // Engine objects.
    ok(
        rig.rm_alloc(CLIENT, CHANNEL, COMPUTE, compute, &[]),
        "compute object",
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CHANNEL, 0xe5, compute, &[])),
        NvStatus::ERR_INVALID_STATE,
        "one per channel"
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, DEVICE, 0xe5, compute, &[])),
        NvStatus::ERR_INVALID_OBJECT_PARENT
    );
    ok(
        rig.rm_alloc(CLIENT, CHANNEL, COPY, copy, &[]),
        "copy object",
    );
    let classes_now: Vec<u32> = rig.gpu.with_world(|w| w.channels[token].classes.clone());
    assert_eq!(classes_now, [compute, copy]);
    let dbg = DebuggerAllocParams {
        h_app_client: CLIENT,
        h_class3d_object: COMPUTE,
        ..Default::default()
    };
    assert_eq!(
        status(
            rig.rm_alloc(
                CLIENT,
                DEVICE,
                0xe6,
                cls::GT200_DEBUGGER,
                DebuggerAllocParams {
                    h_class3d_object: CHANNEL,
                    ..dbg
                }
                .as_bytes()
            )
        ),
        NvStatus::ERR_INVALID_OBJECT_PARENT
    );
    assert_eq!(
        status(
            rig.rm_alloc(
                CLIENT,
                DEVICE,
                0xe6,
                cls::GT200_DEBUGGER,
                DebuggerAllocParams {
                    h_debugger_client_obsolete: 1,
                    ..dbg
                }
                .as_bytes()
            )
        ),
        NvStatus::ERR_INVALID_ARGUMENT
    );
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
    // Work-submit token: GSP-RM gives the channel id.
    let out = ok(
        rig.rm_control(
            CLIENT,
            CHANNEL,
            cmd::NVC36F_GPFIFO_GET_WORK_SUBMIT_TOKEN,
            &u32::MAX.to_le_bytes(),
        ),
        "token",
    );
    assert_eq!(u32::from_le_bytes(out[..4].try_into().unwrap()), ch.chid);
    // Scheduling the group enables its channels.
    ok(
        rig.rm_control(CLIENT, TSG, cmd::NVA06C_GPFIFO_SCHEDULE, &[1, 0]),
        "schedule",
    );
    assert!(rig.gpu.with_world(|w| w.channels[token].enabled));
    // Device info, GR info and context buffers, promotion, reserved PDEs.
    let out = ok(
        rig.rm_control(
            CLIENT,
            SUBDEVICE,
            cmd::NV2080_FIFO_GET_DEVICE_INFO_TABLE,
            FifoDeviceInfoTableParams::default().as_bytes(),
        ),
        "device info",
    );
    let di = FifoDeviceInfoTableParams::read_from_bytes(&out).unwrap();
    let gr = di
        .returned()
        .iter()
        .find(|e| e.engine_data[engine_data_index::RM_ENGINE_TYPE] == 1)
        .expect("GR0 listed");
    assert_eq!(gr.engine_data[engine_data_index::RUNLIST], ch.runlist);
    let out = ok(
        rig.rm_control(
            CLIENT,
            SUBDEVICE,
            cmd::NV2080_INTERNAL_STATIC_KGR_GET_INFO,
            InternalStaticGrGetInfoParams::default().as_bytes(),
        ),
        "GR info",
    );
    let info = InternalStaticGrGetInfoParams::read_from_bytes(&out).unwrap();
    let gi = |i: u32| info.engine_info[0].info_list[i as usize].data;
    assert_eq!(gi(gr_info_index::SM_VERSION), spec.sm_version);
    assert_eq!(
        gi(gr_info_index::GPU_CORE_COUNT),
        spec.sm_count * gi(gr_info_index::MAX_SP_PER_SM)
    );
    assert_eq!(
        gi(gr_info_index::LITTER_NUM_GPCS)
            * gi(gr_info_index::LITTER_NUM_TPC_PER_GPC)
            * gi(gr_info_index::LITTER_NUM_SM_PER_TPC),
        spec.gpcs * spec.tpcs_per_gpc * 2
    );
    let out = ok(
        rig.rm_control(
            CLIENT,
            SUBDEVICE,
            cmd::NV2080_INTERNAL_STATIC_KGR_GET_CONTEXT_BUFFERS_INFO,
            GrGetContextBuffersInfoParams::default().as_bytes(),
        ),
        "ctx buffers",
    );
    let cb = GrGetContextBuffersInfoParams::read_from_bytes(&out)
        .unwrap()
        .engine_context_buffers_info[0];
    assert!(
        cb.engine.iter().all(|e| e.size > 0 && e.alignment > 0),
        "tinygrad divides by every alignment"
    );
    let mut prom = PromoteCtxParams {
        engine_type: 1,
        h_chan_client: CLIENT,
        h_object: CHANNEL,
        entry_count: 1,
        ..Default::default()
    };
    prom.promote_entry[0] = PromoteCtxBufferEntry {
        gpu_phys_addr: 0x5000_0000,
        gpu_virt_addr: 0x20_0000_0000,
        size: u64::from(cb.engine[0].size),
        phys_attr: 4,
        buffer_id: 0,
        b_initialize: 1,
        b_nonmapped: 0,
    };
    ok(
        rig.rm_control(
            CLIENT,
            SUBDEVICE,
            cmd::NV2080_GPU_PROMOTE_CTX,
            prom.as_bytes(),
        ),
        "promote",
    );
    prom.promote_entry[0].buffer_id = 40;
    assert_eq!(
        status(rig.rm_control(
            CLIENT,
            SUBDEVICE,
            cmd::NV2080_GPU_PROMOTE_CTX,
            prom.as_bytes()
        )),
        NvStatus::ERR_INVALID_ARGUMENT
    );
    prom.h_object = COMPUTE;
    assert_eq!(
        status(rig.rm_control(
            CLIENT,
            SUBDEVICE,
            cmd::NV2080_GPU_PROMOTE_CTX,
            prom.as_bytes()
        )),
        NvStatus::ERR_INVALID_OBJECT_HANDLE
    );
    let mut pdes = CopyServerReservedPdesParams {
        page_size: 512 << 20,
        num_levels_to_copy: 3,
        virt_addr_lo: 0x10_0000_0000,
        virt_addr_hi: 0x10_1fff_ffff,
        ..Default::default()
    };
    for (i, l) in pdes.levels.iter_mut().take(3).enumerate() {
        *l = ReservedPdeLevel {
            phys_address: 0x1000 * (i as u64 + 1),
            size: 0x1000,
            aperture: 1,
            page_shift: [56, 47, 38][i],
            _pad0: [0; 3],
        };
    }
    ok(
        rig.rm_control(
            CLIENT,
            VASPACE,
            cmd::NV90F1_VASPACE_COPY_SERVER_RESERVED_PDES,
            pdes.as_bytes(),
        ),
        "reserved PDEs",
    );
    pdes.levels[1].size = 0;
    assert_eq!(
        status(rig.rm_control(
            CLIENT,
            VASPACE,
            cmd::NV90F1_VASPACE_COPY_SERVER_RESERVED_PDES,
            pdes.as_bytes()
        )),
        NvStatus::ERR_INVALID_ARGUMENT
    );
    // Identity controls.
    let out = ok(
        rig.rm_control(
            CLIENT,
            DEVICE,
            cmd::NV0080_GPU_GET_CLASSLIST_V2,
            ClassListV2Params::new_zeroed().as_bytes(),
        ),
        "class list",
    );
    let list = ClassListV2Params::read_from_bytes(&out).unwrap();
    assert_eq!(list.classes(), spec.classes);
    let out = ok(
        rig.rm_control(
            CLIENT,
            SUBDEVICE,
            cmd::NV2080_GPU_GET_NAME_STRING,
            GpuNameStringParams::default().as_bytes(),
        ),
        "name",
    );
    assert!(
        GpuNameStringParams::read_from_bytes(&out)
            .unwrap()
            .ascii()
            .unwrap()
            .starts_with("NVIDIA ")
    );
    let gid = GidInfoParams {
        flags: 2,
        ..Default::default()
    };
    let out = ok(
        rig.rm_control(
            CLIENT,
            SUBDEVICE,
            cmd::NV2080_GPU_GET_GID_INFO,
            gid.as_bytes(),
        ),
        "GID",
    );
    assert!(
        GidInfoParams::read_from_bytes(&out)
            .unwrap()
            .binary_uuid()
            .is_some()
    );
    let mut fb = FbGetInfoV2Params::new_zeroed();
    fb.fb_info_list_size = 1;
    fb.fb_info_list[0].index = fb_info_index::TOTAL_RAM_SIZE;
    let out = ok(
        rig.rm_control(CLIENT, SUBDEVICE, cmd::NV2080_FB_GET_INFO_V2, fb.as_bytes()),
        "FB info",
    );
    assert_eq!(
        u64::from(
            FbGetInfoV2Params::read_from_bytes(&out)
                .unwrap()
                .fb_info_list[0]
                .data
        ) << 10,
        spec.vram_bytes
    );
    let out = ok(
        rig.rm_control(
            CLIENT,
            CLIENT,
            cmd::NV0000_SYSTEM_GET_BUILD_VERSION_V2,
            BuildVersionV2Params::new_zeroed().as_bytes(),
        ),
        "version",
    );
    assert_eq!(
        BuildVersionV2Params::read_from_bytes(&out)
            .unwrap()
            .driver_version(),
        Some("570.144")
    );
    // PERF_BOOST: accepted and logged, nothing more.
    ok(
        rig.rm_control(
            CLIENT,
            SUBDEVICE,
            0x2080_200a,
            &[0x51, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
        ),
        "perf boost",
    );
    assert!(rig.gpu.log().contains("PERF_BOOST flags 0x51"));
    // A big ALLOC_MEMORY goes in CONTINUATION_RECORDs.
    let pages = 10_000u32;
    let am = RpcAllocMemory {
        h_client: CLIENT,
        h_device: DEVICE,
        h_memory: 0xcf00_0100,
        h_class: cls::NV01_MEMORY_SYSTEM,
        format: 6,
        length: u64::from(pages) * 4096,
        page_count: pages,
        pte_desc: PteDesc::new(0, pages as u16),
        ..Default::default()
    };
    let ptes: Vec<u8> = (0..u64::from(pages))
        .flat_map(|i| (0x10_0000 + i).to_le_bytes())
        .collect();
    let (h, _) = rig.call(
        RpcFunction::AllocMemory.as_u32(),
        &[am.as_bytes(), &ptes].concat(),
    );
    assert_eq!(
        h.rpc_result,
        0,
        "an 80 KB ALLOC_MEMORY in three records; {:?}",
        rig.gpu.log().warnings()
    );
    let (h, _) = rig.call(
        RpcFunction::AllocMemory.as_u32(),
        &[am.as_bytes(), &ptes].concat(),
    );
    assert_eq!(h.rpc_result, NvStatus::ERR_INSERT_DUPLICATE_NAME.0);
    // Freeing the group frees its channel: World::channels forgets it.
    let free = [
        CLIENT.to_le_bytes(),
        DEVICE.to_le_bytes(),
        TSG.to_le_bytes(),
        [0; 4],
    ]
    .concat();
    rig.call(RpcFunction::Free.as_u32(), &free);
    assert!(rig.gpu.with_world(|w| w.channels.is_empty()));
}

#[test]
fn gh100_channel_flow() {
    channel_flow(SimChip::Gh100);
}

#[test]
fn gb202_channel_flow() {
    channel_flow(SimChip::Gb202);
}

#[test]
fn compute_on_a_copy_runlist_is_refused() {
    let Some(mut rig) = booted(SimChip::Gh100) else {
        return;
    };
    basic_objects(&mut rig);
    ok(
        rig.rm_alloc(
            CLIENT,
            DEVICE,
            VASPACE,
            cls::FERMI_VASPACE_A,
            VaSpaceAllocParamsV570::default().as_bytes(),
        ),
        "VA space",
    );
    // NV2080_ENGINE_TYPE_COPY2.
    let tsg = ChannelGroupAllocParams {
        engine_type: 0x0b,
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
        "copy TSG",
    );
    let cs = CtxShareAllocParams {
        h_va_space: VASPACE,
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
        "ctxshare",
    );
    ok(
        rig.rm_alloc(
            CLIENT,
            TSG,
            CHANNEL,
            cls::HOPPER_CHANNEL_GPFIFO_A,
            channel_params(0x800_0000, 256, CTXSHARE).as_bytes(),
        ),
        "channel",
    );
    let ch = rig
        .gpu
        .with_world(|w| w.channels.values().next().cloned().unwrap());
    assert_eq!((ch.engine, ch.runlist), (Engine::Copy(2), 3));
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CHANNEL, COMPUTE, cls::HOPPER_COMPUTE_A, &[])),
        NvStatus::ERR_INVALID_ARGUMENT
    );
    ok(
        rig.rm_alloc(
            CLIENT,
            CHANNEL,
            COPY,
            cls::HOPPER_DMA_COPY_A,
            &[0, 0, 0, 0, 0x0b, 0, 0, 0],
        ),
        "copy object",
    );
}

#[test]
fn channel_faults_become_gsp_rm_events() {
    let Some(mut rig) = booted(SimChip::Gh100) else {
        return;
    };
    basic_objects(&mut rig);
    ok(
        rig.rm_alloc(
            CLIENT,
            DEVICE,
            VASPACE,
            cls::FERMI_VASPACE_A,
            VaSpaceAllocParamsV570::default().as_bytes(),
        ),
        "VA space",
    );
    ok(
        rig.rm_alloc(
            CLIENT,
            DEVICE,
            TSG,
            cls::KEPLER_CHANNEL_GROUP_A,
            ChannelGroupAllocParams {
                engine_type: 1,
                ..Default::default()
            }
            .as_bytes(),
        ),
        "TSG",
    );
    ok(
        rig.rm_alloc(
            CLIENT,
            TSG,
            CTXSHARE,
            cls::FERMI_CONTEXT_SHARE_A,
            CtxShareAllocParams {
                h_va_space: VASPACE,
                ..Default::default()
            }
            .as_bytes(),
        ),
        "ctxshare",
    );
    ok(
        rig.rm_alloc(
            CLIENT,
            TSG,
            CHANNEL,
            cls::HOPPER_CHANNEL_GPFIFO_A,
            channel_params(0x800_0000, 256, CTXSHARE).as_bytes(),
        ),
        "channel",
    );
    ok(
        rig.rm_alloc(CLIENT, CHANNEL, COMPUTE, cls::HOPPER_COMPUTE_A, &[]),
        "compute",
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
    let (token, chid) = rig
        .gpu
        .with_world(|w| w.channels.iter().map(|(t, c)| (*t, c.chid)).next().unwrap());
    rig.gpu.with_world(|w| {
        w.mmu_faults.push_back(MmuFaultRecord {
            va: 0xdead_b000,
            access: Access::Write,
            fault_type: 2,
            token,
            engine: Engine::Graphics,
            at_ns: 0,
        })
    });
    rig.wait_for(RpcEvent::MmuFaultQueued.as_u32(), 2000);
    let (_, p) = rig.wait_for(RpcEvent::OsErrorLog.as_u32(), 2000);
    let log = RpcOsErrorLog::read_from_prefix(&p).unwrap().0;
    assert_eq!(
        (log.except_type, log.chid),
        (31, chid),
        "Xid 31 on the channel"
    );
    let text = String::from_utf8_lossy(&log.err_string);
    assert!(text.contains("0xdeadb000"), "{text}");
    let (_, p) = rig.wait_for(RpcEvent::RcTriggered.as_u32(), 2000);
    let rc = RpcRcTriggered::read_from_prefix(&p).unwrap().0;
    assert_eq!(
        (
            rc.chid,
            rc.except_type,
            rc.mmu_fault_addr_lo,
            rc.mmu_fault_type,
            rc.nv2080_engine_type
        ),
        (chid, 31, 0xdead_b000, 2, 1)
    );
    // The debugger reads the fault back.
    let out = ok(
        rig.rm_control(
            CLIENT,
            DEBUGGER,
            cmd::NV83DE_DEBUG_READ_MMU_FAULT_INFO,
            ReadMmuFaultInfoParams::default().as_bytes(),
        ),
        "fault info",
    );
    let fi = ReadMmuFaultInfoParams::read_from_bytes(&out).unwrap();
    assert_eq!(fi.faults().len(), 1);
    assert_eq!(fi.faults()[0].fault_address, 0xdead_b000);
    // A channel error another unit signals: an Xid and RC_TRIGGERED.
    rig.gpu.with_world(|w| {
        w.signals.push_back(Signal::ChannelError {
            token,
            reason: "illegal method".into(),
        })
    });
    let (_, p) = rig.wait_for(RpcEvent::RcTriggered.as_u32(), 2000);
    let rc = RpcRcTriggered::read_from_prefix(&p).unwrap().0;
    assert_eq!(
        (rc.chid, rc.except_type),
        (chid, 13),
        "Xid 13: a GR exception"
    );
}

#[test]
fn injected_rpc_failure_reaches_the_alloc_status() {
    let faults = FaultPlan {
        rpc_failure: Some((RpcFunction::GspRmAlloc.as_u32(), NvStatus::ERR_NO_MEMORY.0)),
        ..Default::default()
    };
    let Some(mut rig) = Rig::new(SimChip::Gb202, faults) else {
        return;
    };
    rig.boot();
    let (st, _) = rig.rm_alloc(
        CLIENT,
        0,
        CLIENT,
        cls::NV01_ROOT,
        RootClientAllocParams::default().as_bytes(),
    );
    assert_eq!(st, NvStatus::ERR_NO_MEMORY);
    rig.gpu.inject(|f| f.rpc_failure = None);
    ok(
        rig.rm_alloc(
            CLIENT,
            0,
            CLIENT,
            cls::NV01_ROOT,
            RootClientAllocParams::default().as_bytes(),
        ),
        "the client was never made",
    );
}
