//! The controls a driver sends the simulated GSP-RM once it has a compute channel
//! (tinygrad's NVDevice init, nvbare's device): the FIFO device-info table, GR info and
//! context buffers, context promotion, reserved PDEs, the identity controls, PERF_BOOST,
//! and an ALLOC_MEMORY large enough to need continuation records. The channel comes from
//! `gsp_rig::rm::compute_channel`; `gsp_channels.rs` checks each step of getting it.

mod gsp_rig;

use nvbare_gsp::abi::*;
use nvbare_gsp::rm::NvStatus;
use nvbare_gsp::rm::classes as cls;
use nvbare_gsp::rm::ctrl::channel::*;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::fb::fb_info_index;
use nvbare_gsp::rm::ctrl::gr::*;
use nvbare_gsp::rm::ctrl::root::BuildVersionV2Params;
use nvbare_gsp::rm::ctrl::subdevice::*;
use nvbare_gsp::rm::r570::{ClassListV2Params, FbGetInfoV2Params};
use nvbare_sim::SimChip;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use gsp_rig::rm::*;

/// The controls on a scheduled compute channel, with the answers checked against the chip.
fn channel_controls(chip: SimChip) {
    let Some(mut rig) = booted(chip) else { return };
    let spec = chip.spec();
    basic_objects(&mut rig);
    compute_channel(&mut rig, chip, 0x4000_0000);
    let ch = rig
        .gpu
        .with_world(|w| w.channels.values().next().cloned().unwrap());
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
}

#[test]
fn gh100_channel_controls() {
    channel_controls(SimChip::Gh100);
}

#[test]
fn gb202_channel_controls() {
    channel_controls(SimChip::Gb202);
}
