//! The simulated GSP-RM's channel side: what a driver does to get compute and copy
//! channels (tinygrad's NVDevice init, nvbare's device), with every per-class NV_STATUS path
//! and the world state it sets up (VA spaces, channels). The controls sent on such a channel
//! are in `gsp_channel_controls.rs`, the events a channel fault raises in `gsp_events.rs`.

mod gsp_rig;

use nvbare_gsp::abi::*;
use nvbare_gsp::rm::NvStatus;
use nvbare_gsp::rm::alloc::*;
use nvbare_gsp::rm::classes as cls;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_sim::SimChip;
use nvbare_sim::device::Engine;
use nvbare_sim::memory::Target;
use zerocopy::{FromBytes, IntoBytes};

use gsp_rig::rm::*;

/// What a driver does to get a compute and a copy channel (tinygrad's NVDevice init and
/// nvbare's host device), with the answers and world state checked.
fn channel_flow(chip: SimChip) {
    let Some(mut rig) = booted(chip) else { return };
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
fn a_channel_without_context_share_runs_in_its_groups_va_space() {
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
    // A copy engine's own group naming the VA space, as CUDA allocates it.
    let tsg = ChannelGroupAllocParams {
        engine_type: 0x0b,
        h_va_space: VASPACE,
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
        "copy TSG with a VA space",
    );
    ok(
        rig.rm_alloc(
            CLIENT,
            TSG,
            CHANNEL,
            cls::HOPPER_CHANNEL_GPFIFO_A,
            channel_params(0x800_0000, 256, 0).as_bytes(),
        ),
        "channel without context share or VA space",
    );
    let (ch, vaspaces) = rig.gpu.with_world(|w| {
        (
            w.channels.values().next().cloned().unwrap(),
            w.vaspaces.keys().copied().collect::<Vec<_>>(),
        )
    });
    assert_eq!(vaspaces, [ch.vaspace], "the group's VA space");
    // A group without one leaves such a channel nowhere to run.
    let bare = ChannelGroupAllocParams {
        engine_type: 0x0b,
        ..Default::default()
    };
    ok(
        rig.rm_alloc(
            CLIENT,
            DEVICE,
            TSG + 1,
            cls::KEPLER_CHANNEL_GROUP_A,
            bare.as_bytes(),
        ),
        "copy TSG without a VA space",
    );
    assert_eq!(
        status(rig.rm_alloc(
            CLIENT,
            TSG + 1,
            CHANNEL + 1,
            cls::HOPPER_CHANNEL_GPFIFO_A,
            channel_params(0x900_0000, 256, 0).as_bytes(),
        )),
        NvStatus::ERR_INVALID_ARGUMENT
    );
}
