//! The GPU layer without a GPU, part 4: recorded sequences (`Recording`, `Gpu::finish`,
//! `Gpu::replay`) over the test backend, whose front end executes copies and semaphores, runs
//! chained QMDs and keeps each grid's QMD and bank 0 as it read them. The simulator runs a
//! sequence of real kernels in `gsp_rm_sim.rs`'s end-to-end tests
//! (`gsp_suite::scenarios::recorded_sequence`, results checked element by element).

mod gpu_common;
use gpu_common::*;

use nvbare_core::gpu::{GpuError, LaunchConfig, Placement, Recording, SequenceError};
use nvbare_core::launch::LaunchError;
use nvbare_core::rm::Engine;
use nvbare_sim::decode::{HostSemaphoreOp, Operation};
use nvbare_tests::test_backend::Launch;

fn cfg(grid: u32, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        dynamic_shared: 0,
    }
}

/// vector_add's parameters: a, b, c, n (padded to the kernel's size).
fn vadd(a: u64, b: u64, c: u64, n: u32, size: u32) -> Vec<u8> {
    let mut p = Vec::new();
    for va in [a, b, c] {
        p.extend_from_slice(&va.to_le_bytes());
    }
    p.extend_from_slice(&n.to_le_bytes());
    p.resize(size as usize, 0);
    p
}

/// The parameter bytes a grid read from its bank 0.
fn params_of(l: &Launch, offset: u32, len: usize) -> &[u8] {
    &l.cbuf0[offset as usize..offset as usize + len]
}

#[test]
fn a_sequence_replays_in_order_with_patched_addresses_scalars_dims_and_copies() {
    let mut gpu = open();
    let add = gpu.load(SM90, "vector_add").unwrap();
    let store = gpu.load(SM90, "store_value").unwrap();
    let n = 4096u64;
    let host = gpu.alloc(4 * n, Placement::Host, true).unwrap();
    let vram = gpu.alloc(4 * n, Placement::Vram, false).unwrap();
    let (input, input2, out, out2) = (
        host.gpu_va(),
        host.gpu_va() + n,
        host.gpu_va() + 2 * n,
        host.gpu_va() + 3 * n,
    );
    let data: Vec<u8> = (0..n as usize).map(|i| (i * 7 % 251) as u8).collect();
    let data2: Vec<u8> = (0..n as usize).map(|i| (i * 11 % 241) as u8).collect();
    let v = host.view().unwrap();
    v.write(0, &data).unwrap();
    v.write(n as usize, &data2).unwrap();

    let mut rec = Recording::new();
    let copy_in = rec.copy(vram.gpu_va(), input, n).unwrap();
    let p = vadd(
        vram.gpu_va(),
        vram.gpu_va(),
        vram.gpu_va() + n,
        1024,
        add.info.param_size,
    );
    let l_add = rec.launch(&add, cfg(4, 256), &p).unwrap();
    let mut sp = vram.gpu_va().to_le_bytes().to_vec();
    sp.extend_from_slice(&7u64.to_le_bytes());
    let l_store = rec.launch(&store, cfg(1, 32), &sp).unwrap();
    let copy_out = rec.copy(out, vram.gpu_va(), n).unwrap();
    let mut seq = gpu.finish(rec).unwrap();
    assert_eq!(seq.launches(), 2);

    let doorbells = gpu.backend().gpu().doorbells.len();
    let ops_before = gpu.backend().gpu().ops.len();
    let r1 = gpu.replay(&mut seq).unwrap();
    gpu.wait_replay(&r1).unwrap();
    assert_eq!(
        v.to_vec().unwrap()[2 * n as usize..3 * n as usize],
        data[..]
    );
    {
        let m = gpu.backend().gpu();
        // One GPFIFO entry and one doorbell per queue.
        assert_eq!(m.doorbells.len() - doorbells, 2);
        let ops = &m.ops[ops_before..];
        let pcas = ops
            .iter()
            .filter(|(_, op)| matches!(op, Operation::LaunchQmd { .. }))
            .count();
        assert_eq!(pcas, 1, "the second launch is chained to the first");
        let [.., a, s] = &m.launches[..] else {
            unreachable!()
        };
        assert_eq!(a.qmd.dependent, Some(s.qmd_va));
        assert_eq!((a.qmd.grid, a.qmd.block), ([4, 1, 1], [256, 1, 1]));
        assert_eq!(params_of(a, add.info.param_offset, p.len()), &p[..]);
        assert_eq!(params_of(s, store.info.param_offset, 16), &sp[..]);
        // In order: the copy in's release, the compute acquire of it, the grids, the compute
        // release, the copy queue's acquire of it, the copy out.
        let pos = |f: &dyn Fn(&(&str, Operation)) -> bool| ops.iter().position(f).unwrap();
        let copied_in = pos(&|(c, op)| {
            *c == "copy" && matches!(op, Operation::Copy { dst, .. } if *dst == vram.gpu_va())
        });
        let acquired = pos(&|(c, op)| {
            *c == "compute"
                && matches!(
                    op,
                    Operation::HostSemaphore {
                        op: HostSemaphoreOp::AcquireCircGeq,
                        ..
                    }
                )
        });
        let launched = pos(&|(_, op)| matches!(op, Operation::LaunchQmd { .. }));
        let copied_out = pos(&|(c, op)| {
            *c == "copy" && matches!(op, Operation::Copy { dst, .. } if *dst == out)
        });
        let copy_waited = pos(&|(c, op)| {
            *c == "copy"
                && matches!(
                    op,
                    Operation::HostSemaphore {
                        op: HostSemaphoreOp::AcquireCircGeq,
                        ..
                    }
                )
        });
        assert!(
            copied_in < acquired
                && acquired < launched
                && launched < copy_waited
                && copy_waited < copied_out
        );
    }
    // The fences are the timelines' values: the next plain submission comes after them.
    let c = r1.compute.unwrap();
    assert_eq!(gpu.completed(Engine::Compute), c.value);
    assert_eq!(gpu.submitted(Engine::Copy), r1.copy.unwrap());

    // Patch everything a replay can change, replay again.
    seq.set_copy(copy_in, vram.gpu_va(), input2, n).unwrap();
    seq.set_arg_u64(l_add, 16, vram.gpu_va() + 2 * n).unwrap();
    seq.set_arg_u32(l_add, 24, 512).unwrap();
    seq.set_dims(l_add, [8, 2, 1], [64, 1, 1]).unwrap();
    seq.set_arg_u64(l_store, 8, 0xdead_beef).unwrap();
    seq.set_copy(copy_out, out2, vram.gpu_va(), n / 2).unwrap();
    let r2 = gpu.replay(&mut seq).unwrap();
    gpu.wait_replay(&r2).unwrap();
    assert!(r2.compute.unwrap().value > c.value);
    let all = v.to_vec().unwrap();
    assert_eq!(
        all[3 * n as usize..(3 * n + n / 2) as usize],
        data2[..n as usize / 2]
    );
    assert_eq!(
        all[2 * n as usize..3 * n as usize],
        data[..],
        "the first output kept"
    );
    {
        let m = gpu.backend().gpu();
        let [.., a, s] = &m.launches[..] else {
            unreachable!()
        };
        assert_eq!((a.qmd.grid, a.qmd.block), ([8, 2, 1], [64, 1, 1]));
        // The grid and block dimensions the code reads (bank 0's driver slots) too.
        let dims: Vec<u32> = a.cbuf0[..24]
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(dims, [64, 1, 1, 8, 2, 1]);
        let want = vadd(
            vram.gpu_va(),
            vram.gpu_va(),
            vram.gpu_va() + 2 * n,
            512,
            add.info.param_size,
        );
        assert_eq!(params_of(a, add.info.param_offset, want.len()), &want[..]);
        assert_eq!(
            params_of(s, store.info.param_offset + 8, 8),
            0xdead_beefu64.to_le_bytes()
        );
    }
    gpu.free_sequence(seq).unwrap();
    gpu.unload(add).unwrap();
    gpu.unload(store).unwrap();
}

#[test]
fn a_patch_made_while_a_replay_is_in_flight_is_used_only_by_the_next_replay() {
    let mut gpu = open();
    let store = gpu.load(SM90, "store_value").unwrap();
    let mut rec = Recording::new();
    let mut sp = 0x1000u64.to_le_bytes().to_vec();
    sp.extend_from_slice(&1u64.to_le_bytes());
    let l = rec.launch(&store, cfg(1, 1), &sp).unwrap();
    let mut seq = gpu.finish(rec).unwrap();

    gpu.backend().gpu().running = false;
    let r1 = gpu.replay(&mut seq).unwrap();
    seq.set_arg_u64(l, 8, 2).unwrap();
    assert!(!gpu.is_done(r1.compute.unwrap()));
    {
        let handle = gpu.backend().gpu_handle();
        let mut m = handle.lock().unwrap();
        m.running = true;
        m.run_all();
    }
    gpu.replay(&mut seq).unwrap();
    gpu.sync().unwrap();
    let m = gpu.backend().gpu();
    let [.., first, second] = &m.launches[..] else {
        unreachable!()
    };
    let at = store.info.param_offset + 8;
    assert_eq!(
        params_of(first, at, 8),
        1u64.to_le_bytes(),
        "in flight: unchanged"
    );
    assert_eq!(params_of(second, at, 8), 2u64.to_le_bytes());
}

#[test]
fn queues_wait_for_recorded_signals_with_new_values_every_replay() {
    let mut gpu = open();
    let empty = gpu.load(SM90, "empty_kernel").unwrap();
    let buf = gpu.alloc(0x2000, Placement::Host, true).unwrap();
    let mut rec = Recording::concurrent();
    rec.copy(buf.gpu_va() + 0x1000, buf.gpu_va(), 0x100)
        .unwrap();
    let copied = rec.signal(Engine::Copy);
    rec.wait(Engine::Compute, copied).unwrap();
    rec.launch(&empty, cfg(1, 32), &[]).unwrap();
    rec.launch(&empty, cfg(1, 32), &[]).unwrap();
    let mut seq = gpu.finish(rec).unwrap();
    for round in 0..3 {
        let before = gpu.backend().gpu().ops.len();
        let copy_base = gpu.submitted(Engine::Copy).value;
        let r = gpu.replay(&mut seq).unwrap();
        gpu.wait_replay(&r).unwrap();
        // The copy queue's signal is its first value of this replay, its end the second.
        assert_eq!(r.copy.unwrap().value, copy_base + 2, "round {round}");
        let m = gpu.backend().gpu();
        let ops = &m.ops[before..];
        let acquire = ops.iter().find_map(|(c, op)| match op {
            Operation::HostSemaphore {
                op: HostSemaphoreOp::AcquireCircGeq,
                value,
                ..
            } if *c == "compute" => Some(*value),
            _ => None,
        });
        assert_eq!(acquire, Some(copy_base + 1), "round {round}");
        // Concurrent: each launch is started by the front end, none chained.
        let pcas = ops
            .iter()
            .filter(|(_, op)| matches!(op, Operation::LaunchQmd { .. }))
            .count();
        assert_eq!(pcas, 2);
    }
}

#[test]
fn bad_recordings_and_patches_are_typed_errors() {
    let mut gpu = open();
    let add = gpu.load(SM90, "vector_add").unwrap();
    let store = gpu.load(SM90, "store_value").unwrap();
    let mut rec = Recording::new();
    match rec.launch(&add, cfg(1, 32), &[0; 8]) {
        Err(SequenceError::ParamSize {
            given: 8, expected, ..
        }) => assert_eq!(expected, add.info.param_size),
        r => panic!("{r:?}"),
    }
    assert_eq!(
        rec.copy(0x1000, 0x2000, 0),
        Err(SequenceError::CopyLength {
            len: 0,
            max: 1 << 31
        })
    );
    match gpu.finish(Recording::new()) {
        Err(GpuError::Sequence(SequenceError::Empty)) => {}
        r => panic!("{:?}", r.map(|_| ())),
    }
    // A shape the GPU refuses is found when the recording is finished.
    let mut bad = Recording::new();
    bad.launch(&store, cfg(1, 4096), &[0; 16]).unwrap();
    match gpu.finish(bad) {
        Err(GpuError::Launch { source, .. }) => {
            assert!(
                matches!(source, LaunchError::BlockTooLarge { .. }),
                "{source:?}"
            )
        }
        r => panic!("{:?}", r.map(|_| ())),
    }

    let buf = gpu.alloc(0x1000, Placement::Host, true).unwrap();
    let l = rec.launch(&store, cfg(1, 32), &[0; 16]).unwrap();
    let c = rec.copy(buf.gpu_va() + 0x100, buf.gpu_va(), 16).unwrap();
    let other = {
        let mut r = Recording::new();
        r.launch(&store, cfg(1, 32), &[0; 16]).unwrap()
    };
    let mut seq = gpu.finish(rec).unwrap();
    assert_eq!(
        seq.set_arg_u64(l, 12, 1),
        Err(SequenceError::ArgOutOfRange {
            op: l_index(&l),
            offset: 12,
            len: 8,
            size: 16
        })
    );
    assert!(matches!(
        seq.set_copy(l, 0, 0, 1),
        Err(SequenceError::WrongOp { wanted: "copy", .. })
    ));
    assert!(matches!(
        seq.set_args(c, 0, &[1]),
        Err(SequenceError::WrongOp {
            wanted: "launch",
            ..
        })
    ));
    assert!(matches!(
        seq.set_args(other, 0, &[1]),
        Err(SequenceError::OtherRecording { .. })
    ));
    assert!(matches!(
        seq.set_dims(l, [1, 1, 1], [2048, 1, 1]),
        Err(SequenceError::Launch(LaunchError::BlockTooLarge { .. }))
    ));
    assert!(matches!(
        seq.set_dims(l, [0, 1, 1], [1, 1, 1]),
        Err(SequenceError::Launch(LaunchError::ZeroDimension))
    ));
    assert!(matches!(
        seq.set_copy(c, 1 << 57, 0, 16),
        Err(SequenceError::Address(_))
    ));
    // A sequence finished on one GPU is refused by another.
    let mut second = open();
    match second.replay(&mut seq) {
        Err(GpuError::Sequence(SequenceError::OtherGpu)) => {}
        r => panic!("{r:?}"),
    }
    // The refused patches changed nothing: the sequence still replays.
    let r = gpu.replay(&mut seq).unwrap();
    gpu.wait_replay(&r).unwrap();
}

/// An op's index in its recording, as errors name it.
fn l_index(id: &nvbare_core::gpu::OpId) -> u32 {
    id.index()
}

#[test]
fn a_fault_in_a_replayed_grid_is_reported_by_the_wait_and_by_the_next_replay() {
    let mut gpu = open();
    let store = gpu.load(SM90, "store_value").unwrap();
    let mut rec = Recording::new();
    let mut sp = 0x7f00_dead_0000u64.to_le_bytes().to_vec();
    sp.extend_from_slice(&1u64.to_le_bytes());
    rec.launch(&store, cfg(1, 1), &sp).unwrap();
    let mut seq = gpu.finish(rec).unwrap();
    gpu.backend().gpu().running = false;
    gpu.backend_mut().inject_mmu_fault(0x7f00_dead_0000, 2, 1);
    let r = gpu.replay(&mut seq).unwrap();
    let e = gpu.wait_for(r.compute.unwrap(), 1_000_000_000).unwrap_err();
    assert_eq!(
        e.fault().expect("a fault report").mmu[0].address,
        0x7f00_dead_0000
    );
    let again = gpu.replay(&mut seq).unwrap_err();
    assert!(again.fault().is_some() || again.is_timeout(), "{again}");
}

/// How a chain of grids is ordered and made visible, as CUDA 13 chains a graph's nodes on the
/// H200 (the QMDs it leaves in memory, run 37, `host/bench-results/2026-12-02-run37-*`): every
/// grid with a successor ends with the GPU-scope membar and task chasing, the last one with
/// the sysmembar; no grid invalidates its bank 0, the segment invalidates the constant caches
/// once before its first grid; bank 0 is prefetched before each grid starts.
#[test]
fn a_chain_uses_gpu_membars_between_grids_and_invalidates_constants_once() {
    use nvbare_core::qmd::{CWD_MEMBAR_L1_MEMBAR, CWD_MEMBAR_L1_SYSMEMBAR, Qmd, QmdVersion};
    let mut gpu = open();
    let store = gpu.load(SM90, "store_value").unwrap();
    let host = gpu.alloc(64, Placement::Host, true).unwrap();
    let mut rec = Recording::new();
    for i in 0..3u64 {
        let mut p = host.gpu_va().to_le_bytes().to_vec();
        p.extend_from_slice(&i.to_le_bytes());
        rec.launch(&store, cfg(1, 1), &p).unwrap();
    }
    let mut seq = gpu.finish(rec).unwrap();
    let ops_before = gpu.backend().gpu().ops.len();
    let r = gpu.replay(&mut seq).unwrap();
    gpu.wait_replay(&r).unwrap();
    let m = gpu.backend().gpu();
    let [.., a, b, c] = &m.launches[..] else {
        unreachable!()
    };
    let l = QmdVersion::V4.layout();
    let chasing = l.cwd_membar_task_chasing.unwrap();
    for (launch, membar, chase, next) in [
        (a, CWD_MEMBAR_L1_MEMBAR, 1, Some(b.qmd_va)),
        (b, CWD_MEMBAR_L1_MEMBAR, 1, Some(c.qmd_va)),
        (c, CWD_MEMBAR_L1_SYSMEMBAR, 0, None),
    ] {
        let mut raw = vec![0u8; QmdVersion::V4.size_bytes()];
        m.read(launch.qmd_va, &mut raw).unwrap();
        let q = Qmd::from_bytes(QmdVersion::V4, &raw).unwrap();
        assert_eq!(q.get(l.cwd_membar_type), membar);
        assert_eq!(q.get(chasing), chase);
        assert_eq!(launch.qmd.dependent, next);
        for i in 0..l.cbuf_invalidate.count {
            assert_eq!(q.get(l.cbuf_invalidate.at(i).unwrap()), 0, "bank {i}");
        }
        // Bank 0, the parameters, is fetched before the grid starts (runs 40, 41).
        assert_eq!(q.get(l.cbuf_prefetch.unwrap().at(0).unwrap()), 1);
    }
    let ops = &m.ops[ops_before..];
    let invalidates: Vec<usize> = (0..ops.len())
        .filter(|&i| matches!(ops[i].1, Operation::InvalidateCaches(_)))
        .collect();
    let first_launch = ops
        .iter()
        .position(|(_, op)| matches!(op, Operation::LaunchQmd { .. }))
        .unwrap();
    assert_eq!(invalidates.len(), 1, "{ops:?}");
    assert!(invalidates[0] < first_launch);
    let Operation::InvalidateCaches(what) = ops[invalidates[0]].1 else {
        unreachable!()
    };
    assert_ne!(what & nvbare_core::compute::INVALIDATE_CONSTANT, 0);
    drop(m);
    gpu.free_sequence(seq).unwrap();
    gpu.free(host);
    gpu.unload(store).unwrap();
}

/// A programmatic edge, as CUDA 13 writes one for a graph's programmatic dependent launch on
/// the H200 (run 53, `host/bench-results/2026-12-02-run53-pdl-probe.txt`): the earlier grid
/// sets `ENABLE_PROGRAM_PRE_EXIT`, `ARRIVE_AT_LATCH_VALID` and an ID; the later one
/// `WAIT_ON_LATCH_VALID` with that ID and both latch-acquire invalidates. Only a launch
/// recorded with `launch_programmatic` right after another launch makes one; the first launch
/// has no predecessor to wait for, and every edge of every sequence has its own ID.
#[test]
fn a_programmatic_launch_waits_on_a_latch_its_predecessor_arrives_at() {
    use nvbare_core::qmd::{Qmd, QmdVersion};
    let mut gpu = open();
    let store = gpu.load(SM90, "store_value").unwrap();
    let host = gpu.alloc(64, Placement::Host, true).unwrap();
    let params = |i: u64| {
        let mut p = host.gpu_va().to_le_bytes().to_vec();
        p.extend_from_slice(&i.to_le_bytes());
        p
    };
    let l = QmdVersion::V4.layout();
    let latch = l.latch.unwrap();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let mut rec = Recording::new();
        rec.launch_programmatic(&store, cfg(1, 1), &params(0))
            .unwrap();
        rec.launch_programmatic(&store, cfg(1, 1), &params(1))
            .unwrap();
        rec.launch(&store, cfg(1, 1), &params(2)).unwrap();
        let mut seq = gpu.finish(rec).unwrap();
        let r = gpu.replay(&mut seq).unwrap();
        gpu.wait_replay(&r).unwrap();
        let m = gpu.backend().gpu();
        let [.., a, b, c] = &m.launches[..] else {
            unreachable!()
        };
        let qmd = |va: u64| {
            let mut raw = vec![0u8; QmdVersion::V4.size_bytes()];
            m.read(va, &mut raw).unwrap();
            Qmd::from_bytes(QmdVersion::V4, &raw).unwrap()
        };
        let (qa, qb, qc) = (qmd(a.qmd_va), qmd(b.qmd_va), qmd(c.qmd_va));
        // a -> b is programmatic.
        assert_eq!(qa.get(latch.enable_program_pre_exit), 1);
        assert_eq!(qa.get(latch.arrive_valid), 1);
        let id = qa.get(latch.arrive_id);
        assert_ne!(id, 0);
        assert_eq!(qb.get(latch.wait_valid), 1);
        assert_eq!(qb.get(latch.wait_id), id);
        assert_eq!(qb.get(latch.acquire_invalidate_shader_data), 1);
        assert_eq!(qb.get(latch.acquire_invalidate_texture_data), 1);
        // The first launch waits for nothing; b -> c is an ordinary chained edge.
        assert_eq!(qa.get(latch.wait_valid), 0);
        assert_eq!(qb.get(latch.enable_program_pre_exit), 0);
        assert_eq!(qb.get(latch.arrive_valid), 0);
        assert_eq!(qc.get(latch.wait_valid), 0);
        // Still a chain, with the GPU-scope membar (CUDA keeps both on programmatic edges).
        assert_eq!(a.qmd.dependent, Some(b.qmd_va));
        assert_eq!(b.qmd.dependent, Some(c.qmd_va));
        ids.push(id);
        drop(m);
        gpu.free_sequence(seq).unwrap();
    }
    assert_ne!(
        ids[0], ids[1],
        "each sequence's edges have their own latch IDs"
    );
    gpu.free(host);
    gpu.unload(store).unwrap();
}
