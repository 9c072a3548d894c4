//! The GPU layer (`nvbare_core::gpu`) without a GPU: over the test backend (heap memory at
//! its own VAs, recorded RM calls, a front end that runs pushbuffers through the simulator's
//! independent decoder when a doorbell rings). Channel setup, launches, copies, the arena,
//! the pool, waits, timeouts and fault reports, asserted on the RM calls made and on what
//! the decoded methods and QMDs say.

use nvbare_core::gpu::{Gpu, GpuConfig, GpuError, Placement};
use nvbare_core::rm::{Engine, FaultReport, MmuFault, Step};
use nvbare_core::sem::SemaphoreError;
use nvbare_gsp::rm::alloc::{
    ChannelAllocParams, ChannelGroupAllocParams, CopyEngineAllocParams, CtxShareAllocParams,
    DebuggerAllocParams,
};
use nvbare_gsp::rm::alloc_flags::{ctxshare_flags, engine_type};
use nvbare_gsp::rm::classes as cls;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_sim::decode::Operation;
use nvbare_tests::test_backend::{RmCall, TestBackend, params_of};

const SM90: &[u8] = include_bytes!("../../core/tests/data/cubin/kernels.sm_90.cubin");
const SM80: &[u8] = include_bytes!("../../core/tests/data/cubin/kernels.sm_80.cubin");

/// Small rings and pushbuffers: the test backend's memory is heap memory.
fn config() -> GpuConfig {
    GpuConfig {
        ring_entries: 64,
        compute_pushbuffer: 256 << 10,
        copy_pushbuffer: 64 << 10,
        arena: 1 << 20,
        // TIMEOUT: the test front end runs at the doorbell, so a wait that is not satisfied at
        // once never will be; 2 s only bounds a broken test.
        timeout_ns: 2_000_000_000,
        // TIMEOUT: fault polls every 5 ms keep the fault tests short.
        fault_poll_ns: 5_000_000,
        ..GpuConfig::default()
    }
}

fn open_with(b: TestBackend, c: GpuConfig) -> Gpu<TestBackend> {
    match Gpu::open(b, c) {
        Ok(g) => g,
        Err(e) => panic!("open: {e}"),
    }
}

fn open() -> Gpu<TestBackend> {
    open_with(TestBackend::new(), config())
}

/// What an RM call is, in one word, for comparing sequences.
fn shape(c: &RmCall) -> (&'static str, u32) {
    match c {
        RmCall::Alloc { class, .. } => ("alloc", *class),
        RmCall::Control { cmd, .. } => ("control", *cmd),
        RmCall::Free { .. } => ("free", 0),
    }
}

fn handle_of(calls: &[RmCall], class: u32, nth: usize) -> u32 {
    calls
        .iter()
        .filter_map(|c| match c {
            RmCall::Alloc {
                class: k, handle, ..
            } if *k == class && *handle != 0 => Some(*handle),
            _ => None,
        })
        .nth(nth)
        .expect("allocated")
}

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

#[test]
fn a_launch_writes_a_qmd_and_bank0_that_the_decoder_reads_back() {
    let mut gpu = open();
    let k = gpu.load(SM90, "vector_add").unwrap();
    let code_va = {
        let m = gpu.backend().gpu();
        // Loading invalidated the instruction caches after writing the code.
        assert!(
            m.ops
                .iter()
                .any(|(_, op)| matches!(op, Operation::InvalidateCaches(_)))
        );
        m.launches.len()
    };
    assert_eq!(code_va, 0);
    let mut params = Vec::new();
    for va in [0x1000u64, 0x2000, 0x3000] {
        params.extend_from_slice(&va.to_le_bytes());
    }
    params.extend_from_slice(&1024u32.to_le_bytes());
    params.resize(k.info.param_size as usize, 0);
    let f = gpu.launch(&k, [4, 1, 1], [256, 1, 1], &params).unwrap();
    assert_eq!(f.engine, Engine::Compute);
    gpu.wait(f).unwrap();
    let g = gpu.launch(&k, [8, 2, 1], [128, 1, 1], &params).unwrap();
    let h = gpu.launch(&k, [8, 2, 1], [128, 1, 1], &params).unwrap();
    gpu.wait(h).unwrap();
    assert!(g.value < h.value);
    assert_eq!(gpu.completed(Engine::Compute), h.value);

    let m = gpu.backend().gpu();
    assert_eq!(m.launches.len(), 3);
    let [a, b, c] = &m.launches[..] else {
        unreachable!()
    };
    assert_eq!((a.qmd.grid, a.qmd.block), ([4, 1, 1], [256, 1, 1]));
    assert_eq!((b.qmd.grid, b.qmd.block), ([8, 2, 1], [128, 1, 1]));
    // The third reused the second's template: same shape, its own slot and release.
    assert_eq!((c.qmd.grid, c.qmd.block), (b.qmd.grid, b.qmd.block));
    assert_ne!(c.qmd_va, b.qmd_va);
    assert_eq!(c.qmd.program_va, a.qmd.program_va);
    for (l, fence) in [(a, f), (b, g), (c, h)] {
        assert_eq!(l.qmd.releases.len(), 1);
        assert_eq!(l.qmd.releases[0].payload, fence.value);
        // Bank 0 holds the parameters at the kernel's offset, read back by GPU VA.
        let bank0 = l.qmd.cbufs.iter().find(|cb| cb.index == 0).expect("bank 0");
        let mut got = vec![0u8; params.len()];
        m.read(bank0.va + u64::from(k.info.param_offset), &mut got)
            .unwrap();
        assert_eq!(got, params);
        // QMD and bank 0 sit in one arena slot, the QMD first.
        assert!(bank0.va > l.qmd_va && bank0.va - l.qmd_va < 0x1000);
    }
    drop(m);
    gpu.unload(k).unwrap();
}

#[test]
fn a_cubin_for_another_sm_is_refused_before_anything_is_allocated() {
    let mut gpu = open();
    let before = gpu.backend().allocations.len();
    let Err(e) = gpu.load(SM80, "vector_add") else {
        panic!("loaded an sm_80 cubin on sm_90")
    };
    assert!(matches!(e, GpuError::WrongSm { cubin: 80, gpu: 90 }), "{e}");
    assert_eq!(gpu.backend().allocations.len(), before);
}

#[test]
fn unload_gives_the_code_memory_back() {
    let mut gpu = open();
    let k = gpu.load(SM90, "empty_kernel").unwrap();
    let f = gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]).unwrap();
    let code = gpu.backend().gpu().launches[0].qmd.program_va;
    gpu.unload(k).unwrap();
    assert!(gpu.is_done(f));
    let freed = *gpu.backend().frees.last().unwrap();
    assert!(
        freed <= code && code < freed + 0x10000,
        "{freed:#x} {code:#x}"
    );
    assert!(!gpu.backend().gpu().is_mapped(freed));
}

#[test]
fn copies_move_bytes_and_release_the_copy_timeline() {
    let mut gpu = open();
    let n = 3 << 20;
    let src = gpu.alloc(n, Placement::Host, true).unwrap();
    let vram = gpu.alloc(n, Placement::Vram, false).unwrap();
    let dst = gpu.alloc(n, Placement::Host, true).unwrap();
    assert!(vram.view().is_none(), "no CPU view unless asked");
    let data: Vec<u8> = (0..n as usize).map(|i| (i * 7 % 251) as u8).collect();
    src.view().unwrap().write(0, &data).unwrap();
    gpu.copy(vram.gpu_va(), src.gpu_va(), n).unwrap();
    let f = gpu.copy(dst.gpu_va(), vram.gpu_va(), n).unwrap();
    assert_eq!(f.engine, Engine::Copy);
    gpu.wait(f).unwrap();
    assert_eq!(dst.view().unwrap().to_vec().unwrap(), data);
    assert_eq!(gpu.completed(Engine::Copy), f.value);
    let m = gpu.backend().gpu();
    let copies: Vec<_> = m
        .ops
        .iter()
        .filter_map(|(ch, op)| match op {
            Operation::Copy { src, dst, len } => Some((*ch, *src, *dst, *len)),
            _ => None,
        })
        .collect();
    assert_eq!(
        copies,
        [
            ("copy", src.gpu_va(), vram.gpu_va(), n as u32),
            ("copy", vram.gpu_va(), dst.gpu_va(), n as u32)
        ]
    );
    assert!(m.ops.iter().any(|(ch, op)| *ch == "copy"
        && matches!(op, Operation::CopySemaphoreRelease { value, payload64: true, .. } if *value == f.value)));
}

#[test]
fn arena_slots_are_reused_as_launches_complete() {
    let c = GpuConfig {
        arena: 16 << 10,
        ..config()
    };
    let mut gpu = open_with(TestBackend::new(), c);
    let k = gpu.load(SM90, "empty_kernel").unwrap();
    let mut last = gpu.submitted(Engine::Compute);
    for _ in 0..200 {
        last = gpu.launch(&k, [1, 1, 1], [32, 1, 1], &[]).unwrap();
    }
    gpu.wait(last).unwrap();
    let m = gpu.backend().gpu();
    assert_eq!(m.launches.len(), 200);
    let mut slots: Vec<u64> = m.launches.iter().map(|l| l.qmd_va).collect();
    slots.sort_unstable();
    slots.dedup();
    assert!(
        slots.len() < 40,
        "a 16 KiB arena holds a few dozen slots, got {}",
        slots.len()
    );
}

#[test]
fn a_full_arena_on_a_hung_gpu_times_out_then_recovers() {
    let c = GpuConfig {
        arena: 16 << 10,
        timeout_ns: 20_000_000,
        ..config()
    };
    let mut gpu = open_with(TestBackend::new(), c);
    let k = gpu.load(SM90, "empty_kernel").unwrap();
    gpu.backend().gpu().running = false;
    let mut launched = 0;
    let err = loop {
        match gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]) {
            Ok(_) => launched += 1,
            Err(e) => break e,
        }
        assert!(launched < 200, "the arena never filled");
    };
    assert!(err.is_timeout(), "{err}");
    assert!(launched > 4, "{launched}");
    let handle = gpu.backend().gpu_handle();
    {
        let mut m = handle.lock().unwrap();
        m.running = true;
        m.run_all();
    }
    let f = gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]).unwrap();
    gpu.wait(f).unwrap();
}

#[test]
fn a_hung_gpu_times_out_naming_the_channel_and_its_pointers() {
    let mut gpu = open();
    let k = gpu.load(SM90, "empty_kernel").unwrap();
    gpu.backend().gpu().running = false;
    let f = gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]).unwrap();
    let e = gpu.wait_for(f, 20_000_000).unwrap_err();
    let GpuError::Wait(SemaphoreError::Timeout(t)) = &e else {
        panic!("{e}")
    };
    assert_eq!(t.channel.channel, "compute");
    assert_eq!(t.target, f.value);
    assert!(t.channel.gp_put != t.channel.gp_get);
    let msg = e.to_string();
    assert!(msg.contains("GPGet") && msg.contains(" ms"), "{msg}");
    assert!(e.is_timeout() && e.fault().is_none());
    assert!(!gpu.is_done(f));
}

#[test]
fn an_mmu_fault_during_a_wait_is_a_typed_report() {
    let mut gpu = open();
    let k = gpu.load(SM90, "store_value").unwrap();
    gpu.backend().gpu().running = false;
    gpu.backend_mut().inject_mmu_fault(0x7f00_dead_0000, 2, 1);
    let f = gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[0; 16]).unwrap();
    let e = gpu.wait_for(f, 1_000_000_000).unwrap_err();
    let report = e.fault().expect("a fault report");
    assert_eq!(
        report.mmu.as_slice(),
        [MmuFault {
            address: 0x7f00_dead_0000,
            fault_type: 2,
            access_type: 1
        }]
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with(
            "GPU MMU fault at 0x7f00dead0000: PTE (address not mapped) on virtual write (then: "
        ),
        "{msg}"
    );
    // The report was read through the debugger.
    let calls = &gpu.backend().calls;
    assert!(
        calls
            .iter()
            .any(|c| c.cmd() == Some(cmd::NV83DE_DEBUG_READ_MMU_FAULT_INFO))
    );
}

#[test]
fn a_fault_the_backend_learns_of_ends_the_wait_too() {
    let mut gpu = open();
    let k = gpu.load(SM90, "empty_kernel").unwrap();
    gpu.backend().gpu().running = false;
    let r = FaultReport {
        mmu_without_address: Some(0x42),
        ..FaultReport::default()
    };
    gpu.backend_mut().inject_event(r.clone());
    let f = gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]).unwrap();
    let e = gpu.wait_for(f, 1_000_000_000).unwrap_err();
    assert_eq!(e.fault(), Some(&r));
}

#[test]
fn gpfifo_space_runs_out_on_a_hung_gpu() {
    let c = GpuConfig {
        ring_entries: 4,
        timeout_ns: 20_000_000,
        ..config()
    };
    let mut gpu = open_with(TestBackend::new(), c);
    gpu.backend().gpu().running = false;
    // A ring of 4 holds 3 entries the GPU has not fetched.
    for _ in 0..3 {
        gpu.copy(VA_DST, VA_SRC, 0).unwrap();
    }
    let e = gpu.copy(VA_DST, VA_SRC, 0).unwrap_err();
    assert!(matches!(e, GpuError::Submit(_)) && e.is_timeout(), "{e}");
    assert!(e.to_string().contains("channel copy"), "{e}");
    let handle = gpu.backend().gpu_handle();
    {
        let mut m = handle.lock().unwrap();
        m.running = true;
        m.run_all();
    }
    let f = gpu.copy(VA_DST, VA_SRC, 0).unwrap();
    gpu.wait(f).unwrap();
}

/// Addresses for copies of 0 bytes (no copy method is emitted, only the release).
const VA_SRC: u64 = 0x1000;
const VA_DST: u64 = 0x2000;

#[test]
fn the_pool_serves_small_buffers_from_one_chunk() {
    let mut gpu = open();
    let before = gpu.backend().allocations.len();
    let bufs: Vec<_> = (0..10).map(|_| gpu.pool_alloc(2 << 20).unwrap()).collect();
    let allocs = &gpu.backend().allocations[before..];
    assert_eq!(allocs.len(), 1, "one chunk for ten 2 MiB buffers");
    let (chunk_va, chunk_len, _) = allocs[0];
    assert_eq!(chunk_len, nvbare_core::gpu::POOL_CHUNK);
    let mut vas: Vec<u64> = bufs.iter().map(|b| b.gpu_va).collect();
    vas.sort_unstable();
    vas.dedup();
    assert_eq!(vas.len(), 10);
    assert!(
        vas.iter()
            .all(|&v| v >= chunk_va && v + (2 << 20) <= chunk_va + chunk_len)
    );
    let freed = bufs[3];
    gpu.pool_free(freed);
    assert_eq!(gpu.pool_alloc(2 << 20).unwrap().gpu_va, freed.gpu_va);
    for bad in [0, nvbare_core::gpu::MAX_POOLED + 1] {
        assert!(matches!(
            gpu.pool_alloc(bad),
            Err(GpuError::PoolRequest { .. })
        ));
    }
}

#[test]
fn buffers_have_their_own_gpu_vas_and_cpu_views() {
    let mut gpu = open();
    let b = gpu.alloc(0x3000, Placement::Host, false).unwrap();
    assert!(b.has_cpu_view(), "host memory always has a CPU view");
    let v = b.view().unwrap();
    v.write_u64(0x10, 0x1122_3344_5566_7788).unwrap();
    assert!(v.read_u32(0x2ffe).is_err(), "misaligned");
    assert!(v.read_u64(0x3000).is_err(), "past the end");
    // The GPU sees the same bytes at the buffer's VA (the CPU view is heap memory elsewhere).
    let mut got = [0u8; 8];
    gpu.backend()
        .gpu()
        .read(b.gpu_va() + 0x10, &mut got)
        .unwrap();
    assert_eq!(u64::from_le_bytes(got), 0x1122_3344_5566_7788);
    let va = b.gpu_va();
    gpu.free(b);
    assert!(!gpu.backend().gpu().is_mapped(va));
}
