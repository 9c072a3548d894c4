//! The GPU layer (`nvbare_core::gpu`) without a GPU, part 1: opening. Over the test backend
//! (heap memory at its own VAs, recorded RM calls, a front end that runs pushbuffers through
//! the simulator's independent decoder when a doorbell rings): the RM object tree's order,
//! parents and parameters, the copy-engine fallback, and errors that name their step.

mod gpu_common;
use gpu_common::*;

use nvbare_core::gpu::{Gpu, GpuConfig, GpuError};
use nvbare_core::rm::Step;
use nvbare_gsp::rm::alloc::{
    ChannelAllocParams, ChannelGroupAllocParams, CopyEngineAllocParams, CtxShareAllocParams,
    DebuggerAllocParams,
};
use nvbare_gsp::rm::alloc_flags::{ctxshare_flags, engine_type};
use nvbare_gsp::rm::classes as cls;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_sim::decode::Operation;
use nvbare_tests::test_backend::{RmCall, TestBackend, params_of};

#[test]
fn object_tree_is_built_once_in_order_with_its_parameters() {
    let gpu = open();
    let calls = &gpu.backend().calls;
    let seen: Vec<_> = calls.iter().map(shape).collect();
    let want = [
        ("alloc", cls::NV01_DEVICE_0),
        ("alloc", cls::NV20_SUBDEVICE_0),
        ("control", cmd::NV0080_GPU_GET_CLASSLIST_V2),
        ("alloc", cls::FERMI_VASPACE_A),
        ("alloc", cls::KEPLER_CHANNEL_GROUP_A),
        ("alloc", cls::FERMI_CONTEXT_SHARE_A),
        ("alloc", cls::HOPPER_CHANNEL_GPFIFO_A),
        ("alloc", cls::HOPPER_COMPUTE_A),
        ("alloc", cls::GT200_DEBUGGER),
        ("control", cmd::NVC36F_GPFIFO_GET_WORK_SUBMIT_TOKEN),
        // The copy engines' physical units, to try the best-fed one first (COPY2, 1, 3, 4).
        ("control", cmd::NV2080_CE_GET_CE_PCE_MASK),
        ("control", cmd::NV2080_CE_GET_CE_PCE_MASK),
        ("control", cmd::NV2080_CE_GET_CE_PCE_MASK),
        ("control", cmd::NV2080_CE_GET_CE_PCE_MASK),
        ("alloc", cls::KEPLER_CHANNEL_GROUP_A),
        ("alloc", cls::HOPPER_CHANNEL_GPFIFO_A),
        ("alloc", cls::HOPPER_DMA_COPY_A),
        ("control", cmd::NVC36F_GPFIFO_GET_WORK_SUBMIT_TOKEN),
        ("control", cmd::NVA06C_GPFIFO_SCHEDULE),
        ("control", cmd::NVA06C_GPFIFO_SCHEDULE),
    ];
    assert_eq!(seen, want, "{calls:#?}");

    // The tree: parents and the parameters that tie it together.
    let client = 0xc1d0_0001;
    let device = handle_of(calls, cls::NV01_DEVICE_0, 0);
    let vaspace = handle_of(calls, cls::FERMI_VASPACE_A, 0);
    let gr_group = handle_of(calls, cls::KEPLER_CHANNEL_GROUP_A, 0);
    let copy_group = handle_of(calls, cls::KEPLER_CHANNEL_GROUP_A, 1);
    let ctxshare = handle_of(calls, cls::FERMI_CONTEXT_SHARE_A, 0);
    let compute_ch = handle_of(calls, cls::HOPPER_CHANNEL_GPFIFO_A, 0);
    let copy_ch = handle_of(calls, cls::HOPPER_CHANNEL_GPFIFO_A, 1);
    let compute_obj = handle_of(calls, cls::HOPPER_COMPUTE_A, 0);
    let parents: Vec<(u32, u32)> = calls
        .iter()
        .filter_map(|c| match c {
            RmCall::Alloc { parent, class, .. } => Some((*class, *parent)),
            _ => None,
        })
        .collect();
    assert_eq!(parents[0], (cls::NV01_DEVICE_0, client));
    assert_eq!(parents[1], (cls::NV20_SUBDEVICE_0, device));
    assert_eq!(parents[4], (cls::FERMI_CONTEXT_SHARE_A, gr_group));
    assert_eq!(parents[5], (cls::HOPPER_CHANNEL_GPFIFO_A, gr_group));
    assert_eq!(parents[6], (cls::HOPPER_COMPUTE_A, compute_ch));
    assert_eq!(parents[7], (cls::GT200_DEBUGGER, device));
    assert_eq!(parents[9], (cls::HOPPER_CHANNEL_GPFIFO_A, copy_group));
    assert_eq!(parents[10], (cls::HOPPER_DMA_COPY_A, copy_ch));

    let alloc = |class, nth| {
        calls
            .iter()
            .filter(|c| c.class() == Some(class))
            .nth(nth)
            .expect("allocated")
    };
    let g: ChannelGroupAllocParams = params_of(alloc(cls::KEPLER_CHANNEL_GROUP_A, 0));
    assert_eq!((g.engine_type, g.h_va_space), (engine_type::GRAPHICS, 0));
    let g: ChannelGroupAllocParams = params_of(alloc(cls::KEPLER_CHANNEL_GROUP_A, 1));
    assert_eq!(
        (g.engine_type, g.h_va_space),
        (engine_type::copy(2).unwrap(), vaspace),
        "the copy channel's own group names COPY2 and the VA space"
    );
    let cs: CtxShareAllocParams = params_of(alloc(cls::FERMI_CONTEXT_SHARE_A, 0));
    assert_eq!(cs.h_va_space, vaspace);
    assert_eq!(
        cs.flags,
        ctxshare_flags::SUBCONTEXT.encode(ctxshare_flags::SUBCONTEXT_ASYNC)
    );
    let c: ChannelAllocParams = params_of(alloc(cls::HOPPER_CHANNEL_GPFIFO_A, 0));
    assert_eq!((c.gp_fifo_entries, c.h_context_share), (64, ctxshare));
    // The backend's part: USERD right after the ring (64 entries x 8 bytes), as a physical
    // descriptor of memory it allocated.
    assert_eq!(c.userd_mem.size, 0x200);
    assert_eq!(c.userd_mem.base & 0xfff, 64 * 8);
    assert_ne!(c.instance_mem.base, 0);
    let x: ChannelAllocParams = params_of(alloc(cls::HOPPER_CHANNEL_GPFIFO_A, 1));
    assert_eq!(
        x.h_context_share, 0,
        "no context share in a copy engine's group"
    );
    assert_eq!(
        x.gp_fifo_offset - c.gp_fifo_offset,
        1 << 20,
        "second channel slot"
    );
    let ce: CopyEngineAllocParams = params_of(alloc(cls::HOPPER_DMA_COPY_A, 0));
    assert_eq!(
        (ce.version, ce.engine_type),
        (CopyEngineAllocParams::VERSION_INSTANCE, 2)
    );
    let d: DebuggerAllocParams = params_of(alloc(cls::GT200_DEBUGGER, 0));
    assert_eq!((d.h_app_client, d.h_class3d_object), (client, compute_obj));
    let sched: Vec<u32> = calls
        .iter()
        .filter_map(|c| match c {
            RmCall::Control {
                object,
                cmd,
                params,
            } if *cmd == cmd::NVA06C_GPFIFO_SCHEDULE => {
                assert_eq!(params.len(), 2, "570.144's schedule block");
                Some(*object)
            }
            _ => None,
        })
        .collect();
    assert_eq!(sched, [copy_group, gr_group]);
    assert_eq!(gpu.channels().copy_engine, Some(2));
    assert_eq!(gpu.objects().classes.compute, cls::HOPPER_COMPUTE_A);

    // The one-time setup ran on both channels: compute bound with its windows, copy bound.
    let m = gpu.backend().gpu();
    let ops: Vec<_> = m.ops.iter().map(|(ch, op)| (*ch, op.clone())).collect();
    assert!(ops.contains(&(
        "compute",
        Operation::SetObject {
            subchannel: 1,
            class: cls::HOPPER_COMPUTE_A
        }
    )));
    assert!(ops.contains(&("compute", Operation::SharedWindow(0x7294_0000_0000))));
    assert!(ops.contains(&(
        "copy",
        Operation::SetObject {
            subchannel: 4,
            class: cls::HOPPER_DMA_COPY_A
        }
    )));
}

#[test]
fn the_copy_channel_goes_to_the_copy_engine_with_the_most_physical_units() {
    // The H200's answer (run 34): COPY1-3 have 2 PCEs each, COPY4 has 12.
    let mut b = TestBackend::new();
    b.pce_masks = [(1, 0xa000), (2, 0x5000), (3, 0xa000), (4, 0x0fff)]
        .map(|(ce, m)| (engine_type::copy(ce).unwrap(), m))
        .to_vec();
    let gpu = open_with(b, config());
    assert_eq!(gpu.channels().copy_engine, Some(4));
    assert_eq!(gpu.channels().copy_pces, 12);
    let calls = &gpu.backend().calls;
    let groups: Vec<u32> = calls
        .iter()
        .filter(|c| c.class() == Some(cls::KEPLER_CHANNEL_GROUP_A))
        .filter_map(|c| c.params::<ChannelGroupAllocParams>())
        .map(|p| p.engine_type)
        .collect();
    // The graphics group, then one group on COPY4: nothing was tried before it.
    assert_eq!(groups[1..], [engine_type::copy(4).unwrap()]);

    // A preferred engine (`GpuConfig::copy_engine`) is tried first whatever its units.
    let mut b = TestBackend::new();
    b.pce_masks = [(2, 0x5000), (4, 0x0fff)]
        .map(|(ce, m)| (engine_type::copy(ce).unwrap(), m))
        .to_vec();
    let c = GpuConfig {
        copy_engine: Some(3),
        ..config()
    };
    let gpu = open_with(b, c);
    assert_eq!(gpu.channels().copy_engine, Some(3));
    assert_eq!(gpu.channels().copy_pces, 0, "RM said nothing about COPY3");
}

#[test]
fn the_copy_channel_falls_back_engine_by_engine_then_to_the_graphics_group() {
    let mut b = TestBackend::new();
    let copy2 = engine_type::copy(2).unwrap();
    b.refuse(move |c| {
        c.class() == Some(cls::KEPLER_CHANNEL_GROUP_A)
            && c.params::<ChannelGroupAllocParams>().unwrap().engine_type == copy2
    });
    let gpu = open_with(b, config());
    assert_eq!(gpu.channels().copy_engine, Some(1));
    let r = &gpu.channels().copy_refusals;
    assert_eq!(
        (r.len(), r[0].engine, r[0].step),
        (1, 2, Step::AllocChannelGroup)
    );

    // No copy engine takes a channel: the copy channel joins the graphics group, with the
    // context share, and every refusal is kept for `nvbare info`.
    let mut b = TestBackend::new();
    // Copy objects that name an engine instance are refused; the bare one of the fallback is
    // not.
    b.refuse(|c| {
        c.class() == Some(cls::HOPPER_DMA_COPY_A) && c.params::<CopyEngineAllocParams>().is_some()
    });
    let gpu = open_with(b, config());
    assert_eq!(gpu.channels().copy_engine, None);
    let r = &gpu.channels().copy_refusals;
    assert_eq!(r.iter().map(|r| r.engine).collect::<Vec<_>>(), [2, 1, 3, 4]);
    assert!(r.iter().all(|r| r.step == Step::AllocEngineObject));
    let calls = &gpu.backend().calls;
    // Each refused group was freed again.
    assert_eq!(
        calls
            .iter()
            .filter(|c| matches!(c, RmCall::Free { .. }))
            .count(),
        4
    );
    let gr_group = handle_of(calls, cls::KEPLER_CHANNEL_GROUP_A, 0);
    let last_channel = calls
        .iter()
        .rev()
        .find(|c| c.class() == Some(cls::HOPPER_CHANNEL_GPFIFO_A))
        .unwrap();
    let RmCall::Alloc { parent, .. } = last_channel else {
        unreachable!()
    };
    assert_eq!(*parent, gr_group);
    let p: ChannelAllocParams = params_of(last_channel);
    assert_ne!(p.h_context_share, 0);
}

#[test]
fn a_gpu_without_a_known_compute_class_is_one_clear_error() {
    let mut b = TestBackend::new();
    b.class_list.retain(|&c| c != cls::HOPPER_COMPUTE_A);
    let Err(e) = Gpu::open(b, config()) else {
        panic!("opened without a compute class")
    };
    assert!(
        matches!(&e, GpuError::NoClass(n) if n.what == "compute"),
        "{e}"
    );
    assert!(e.to_string().contains("chip not supported"));
}

#[test]
fn a_refused_step_names_the_step_and_keeps_the_backend_error() {
    let mut b = TestBackend::new();
    b.refuse(|c| c.class() == Some(cls::FERMI_VASPACE_A));
    let Err(e) = Gpu::open(b, config()) else {
        panic!("opened without a VA space")
    };
    assert!(
        matches!(
            e,
            GpuError::Backend {
                step: Step::AllocVaSpace,
                ..
            }
        ),
        "{e}"
    );
    let source = std::error::Error::source(&e).expect("the backend's error as source");
    assert_eq!(source.to_string(), "RM refused an allocation");
}
