//! The GPU layer (`nvbare_core::gpu`) without a GPU, part 2: work. Over the test backend:
//! launches read back from their QMD and bank 0, copies, arena reuse and exhaustion, the
//! pool, timeouts naming the channel, typed fault reports, GPFIFO space running out.

mod gpu_common;
use gpu_common::*;

use nvbare_core::gpu::{GpuConfig, GpuError, Placement};
use nvbare_core::rm::{Engine, FaultReport, MmuFault};
use nvbare_core::sem::SemaphoreError;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_sim::decode::Operation;
use nvbare_tests::test_backend::TestBackend;

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
fn a_launch_that_was_not_submitted_gives_its_arena_slot_back() {
    let arena = 16 << 10;
    let c = GpuConfig {
        ring_entries: 4,
        arena,
        timeout_ns: 20_000_000,
        ..config()
    };
    let mut gpu = open_with(TestBackend::new(), c);
    let k = gpu.load(SM90, "empty_kernel").unwrap();
    gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]).unwrap();
    let f = gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]).unwrap();
    gpu.wait(f).unwrap();
    let slot = {
        let m = gpu.backend().gpu();
        m.launches[1].qmd_va - m.launches[0].qmd_va
    };
    let fit = arena / slot;
    // A ring of 4 holds 3 entries the GPU has not fetched: the 4th launch is not submitted.
    gpu.backend().gpu().running = false;
    for _ in 0..3 {
        gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]).unwrap();
    }
    let e = gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]).unwrap_err();
    assert!(matches!(e, GpuError::Submit(_)), "{e}");
    let handle = gpu.backend().gpu_handle();
    {
        let mut m = handle.lock().unwrap();
        m.running = true;
        m.run_all();
    }
    // Slots 0..3 are done, the failed launch's slot 3 is free again: from slot 3 to the end
    // and then slots 0 and 1 hold `fit - 1` slots of one batch. Had the failed launch kept
    // slot 3 for a value never submitted, only `fit - 2` would fit.
    let f = gpu
        .launch_many(&k, [1, 1, 1], [1, 1, 1], &[], (fit - 1) as u32)
        .unwrap();
    gpu.wait(f).unwrap();
    // A batch larger than the arena is refused at once, not after a wait for itself.
    let e = gpu
        .launch_many(&k, [1, 1, 1], [1, 1, 1], &[], (fit + 1) as u32)
        .unwrap_err();
    assert!(matches!(e, GpuError::ArenaTooSmall { .. }), "{e}");
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
fn a_long_compute_wait_asks_the_debugger_only_now_and_then() {
    let c = GpuConfig {
        fault_poll_ns: 1_000_000,
        ..config()
    };
    let mut gpu = open_with(TestBackend::new(), c);
    let k = gpu.load(SM90, "empty_kernel").unwrap();
    gpu.backend().gpu().running = false;
    let f = gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]).unwrap();
    let asked = |gpu: &nvbare_core::gpu::Gpu<TestBackend>| {
        gpu.backend()
            .calls
            .iter()
            .filter(|c| c.cmd() == Some(cmd::NV83DE_DEBUG_READ_MMU_FAULT_INFO))
            .count()
    };
    let before = asked(&gpu);
    let e = gpu.wait_for(f, 100_000_000).unwrap_err();
    assert!(e.is_timeout(), "{e}");
    // At most 100 slices of 1 ms: the debugger every 20th, and once for the timeout's report
    // (it was asked every slice).
    let n = asked(&gpu) - before;
    assert!((1..=6).contains(&n), "the debugger was asked {n} times");
}

#[test]
fn without_fault_events_a_long_compute_wait_asks_the_debugger_every_slice() {
    // nvk has no event source: the debugger is how a wait learns of a fault, so throttling
    // it would make a faulting kernel's report up to DEBUGGER_EVERY_SLICES slices late.
    let c = GpuConfig {
        fault_poll_ns: 1_000_000,
        ..config()
    };
    let mut backend = TestBackend::new();
    backend.fault_events = false;
    let mut gpu = open_with(backend, c);
    let k = gpu.load(SM90, "empty_kernel").unwrap();
    gpu.backend().gpu().running = false;
    let f = gpu.launch(&k, [1, 1, 1], [1, 1, 1], &[]).unwrap();
    let asked = |gpu: &nvbare_core::gpu::Gpu<TestBackend>| {
        gpu.backend()
            .calls
            .iter()
            .filter(|c| c.cmd() == Some(cmd::NV83DE_DEBUG_READ_MMU_FAULT_INFO))
            .count()
    };
    let before = asked(&gpu);
    let e = gpu.wait_for(f, 100_000_000).unwrap_err();
    assert!(e.is_timeout(), "{e}");
    // Up to 100 slices of 1 ms, each asking (the test clock advances as it is read).
    let n = asked(&gpu) - before;
    assert!(n > 6, "the debugger was asked only {n} times");
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
fn a_copy_wait_reports_a_fault_the_backend_learns_of_within_a_slice() {
    // GSP-RM stops a copy channel (an Xid, an MMU fault on a flush or a copy) and says so by
    // an event: the copy wait services events between slices, so it reports the fault at
    // once instead of after the whole timeout (as it did when only compute waits asked).
    let c = GpuConfig {
        fault_poll_ns: 1_000_000,
        ..config()
    };
    let mut gpu = open_with(TestBackend::new(), c);
    gpu.backend().gpu().running = false;
    let r = FaultReport {
        mmu_without_address: Some(0x41),
        ..FaultReport::default()
    };
    gpu.backend_mut().inject_event(r.clone());
    let f = gpu.copy(VA_DST, VA_SRC, 0).unwrap();
    let started = std::time::Instant::now();
    let e = gpu.wait_for(f, 10_000_000_000).unwrap_err();
    assert_eq!(e.fault(), Some(&r), "{e}");
    // Ten slices at most, far from the 10 s timeout (the test clock is the test backend's).
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "{e}");
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

/// A doorbell the front end missed (run 29 on the H200: GPGet one behind GPPut for 10 s): the
/// wait sees no fetch for a whole slice with an entry pending, rings again, and completes.
#[test]
fn a_lost_doorbell_is_rung_again_by_the_wait() {
    let mut gpu = open_with(TestBackend::new(), config());
    let k = gpu.load(SM90, "empty_kernel").unwrap();
    assert_eq!(gpu.doorbell_rerings(Engine::Compute), 0);
    gpu.backend().gpu().lose_doorbells = 1;
    let rung = gpu.backend().gpu().doorbells.len();
    let f = gpu.launch(&k, [1, 1, 1], [32, 1, 1], &[]).unwrap();
    assert!(!gpu.is_done(f), "the launch's doorbell was lost");
    let t = std::time::Instant::now();
    gpu.wait(f).expect("the wait recovers the launch");
    assert_eq!(gpu.doorbell_rerings(Engine::Compute), 1);
    assert_eq!(
        gpu.backend().gpu().doorbells.len(),
        rung + 2,
        "rung once more"
    );
    // Two slices of 5 ms: one to see GPGet, one to see it has not moved.
    assert!(
        t.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        t.elapsed()
    );
    // A wait that progresses rings nothing again.
    let f = gpu.launch(&k, [1, 1, 1], [32, 1, 1], &[]).unwrap();
    gpu.wait(f).unwrap();
    assert_eq!(gpu.doorbell_rerings(Engine::Compute), 1);
}
