//! The GPU layer without a GPU, part 3: GPU-side ordering between the compute and copy queues
//! (`Gpu::wait_on`) and GPU timestamps of launches and copies (`Gpu::times`), over the test
//! backend, whose front end holds a channel at an unsatisfied acquire until another channel's
//! release satisfies it.

mod gpu_common;
use gpu_common::*;

use nvbare_core::gpu::{GpuError, LaunchConfig, Placement, STAMP_PAIRS};
use nvbare_core::rm::Engine;
use nvbare_sim::decode::{HostSemaphoreOp, Operation};

/// The index in `ops` of the first operation on channel `ch` that `f` accepts.
fn index_of(ops: &[(&'static str, Operation)], ch: &str, f: impl Fn(&Operation) -> bool) -> usize {
    ops.iter()
        .position(|(c, op)| *c == ch && f(op))
        .unwrap_or_else(|| panic!("no such operation on {ch}"))
}

#[test]
fn a_kernel_waits_for_a_copy_and_a_copy_for_the_kernel_with_no_cpu_wait() {
    let mut gpu = open();
    let k = gpu.load(SM90, "empty_kernel").unwrap();
    let n = 1 << 20;
    let src = gpu.alloc(n, Placement::Host, true).unwrap();
    let vram = gpu.alloc(n, Placement::Vram, false).unwrap();
    let dst = gpu.alloc(n, Placement::Host, true).unwrap();
    let data: Vec<u8> = (0..n as usize).map(|i| (i * 13 % 253) as u8).collect();
    src.view().unwrap().write(0, &data).unwrap();

    // Everything is submitted while the GPU runs nothing: no CPU wait can order it.
    gpu.backend().gpu().running = false;
    let copy_in = gpu.copy_timed(vram.gpu_va(), src.gpu_va(), n).unwrap();
    gpu.wait_on(Engine::Compute, copy_in.fence).unwrap();
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [32, 1, 1],
        dynamic_shared: 0,
    };
    let kernel = gpu.launch_timed(&k, &cfg, &[]).unwrap();
    gpu.wait_on(Engine::Copy, kernel.fence).unwrap();
    let copy_out = gpu.copy_timed(dst.gpu_va(), vram.gpu_va(), n).unwrap();
    assert!(!gpu.is_done(copy_in.fence));

    let handle = gpu.backend().gpu_handle();
    {
        let mut m = handle.lock().unwrap();
        m.running = true;
        m.run_all();
        let copy_tl = copy_in.fence.value;
        let ops = &m.ops;
        let released_in = index_of(
            ops,
            "copy",
            |op| matches!(op, Operation::CopySemaphoreRelease { value, .. } if *value == copy_tl),
        );
        let acquired = index_of(
            ops,
            "compute",
            |op| matches!(op, Operation::HostSemaphore { op: HostSemaphoreOp::AcquireCircGeq, value, .. } if *value == copy_tl),
        );
        let launched = index_of(ops, "compute", |op| {
            matches!(op, Operation::LaunchQmd { .. })
        });
        let copy_out_acquire = index_of(
            ops,
            "copy",
            |op| matches!(op, Operation::HostSemaphore { op: HostSemaphoreOp::AcquireCircGeq, value, .. } if *value == kernel.fence.value),
        );
        let out = index_of(
            ops,
            "copy",
            |op| matches!(op, Operation::Copy { dst: d, .. } if *d == dst.gpu_va()),
        );
        assert!(
            released_in < acquired && acquired < launched,
            "the launch ran after the copy's release: {released_in} {acquired} {launched}"
        );
        assert!(
            launched < copy_out_acquire && copy_out_acquire < out,
            "the copy out ran after the grid: {launched} {copy_out_acquire} {out}"
        );
    }
    let (a, b, c) = (
        gpu.times(&copy_in).unwrap(),
        gpu.times(&kernel).unwrap(),
        gpu.times(&copy_out).unwrap(),
    );
    for t in [a, b, c] {
        assert!(t.start_ns < t.end_ns, "{t:?}");
    }
    assert!(
        a.end_ns <= b.start_ns,
        "kernel started before its input: {a:?} {b:?}"
    );
    assert!(
        b.end_ns <= c.start_ns,
        "copy out started before the kernel ended: {b:?} {c:?}"
    );
    assert_eq!(dst.view().unwrap().to_vec().unwrap(), data);
    // The acquires did not advance either timeline: one value per launch and copy.
    assert_eq!(gpu.completed(Engine::Copy), copy_out.fence.value);
    assert_eq!(gpu.completed(Engine::Compute), kernel.fence.value);
}

#[test]
fn a_wait_on_a_passed_fence_or_the_same_queue_submits_nothing() {
    let mut gpu = open();
    let f = gpu.copy(0x1000_0000, 0x1000_0000, 0).unwrap();
    gpu.wait(f).unwrap();
    let before = gpu.backend().gpu().ops.len();
    gpu.wait_on(Engine::Compute, f).unwrap();
    gpu.wait_on(Engine::Copy, f).unwrap();
    assert_eq!(gpu.backend().gpu().ops.len(), before);
}

#[test]
fn stamps_overwritten_by_later_timed_ops_are_an_error_not_a_wrong_time() {
    let mut gpu = open();
    let buf = gpu.alloc(0x1000, Placement::Host, true).unwrap();
    let first = gpu
        .copy_timed(buf.gpu_va(), buf.gpu_va() + 0x800, 16)
        .unwrap();
    let mut last = first;
    for _ in 0..STAMP_PAIRS {
        last = gpu
            .copy_timed(buf.gpu_va(), buf.gpu_va() + 0x800, 16)
            .unwrap();
    }
    match gpu.times(&first) {
        Err(GpuError::StampsReused { tag: 1, found }) => assert_eq!(found, STAMP_PAIRS + 1),
        r => panic!("read stamps of a reused pair: {r:?}"),
    }
    let t = gpu.times(&last).unwrap();
    assert!(t.start_ns < t.end_ns);
}

#[test]
fn a_channel_held_at_an_acquire_resumes_there_without_redoing_what_came_before() {
    use nvbare_core::push::PushBuffer;
    use nvbare_core::sem::{self, HostRelease};
    let mut gpu = open();
    let flag = gpu.alloc(0x1000, Placement::Host, true).unwrap();
    let next_copy = gpu.submitted(Engine::Copy).value + 1;
    let copy_timeline = {
        // The copy timeline's address: the one a compute `wait_on` acquires.
        gpu.backend().gpu().running = false;
        let f = gpu.copy(flag.gpu_va() + 0x100, flag.gpu_va(), 0).unwrap();
        gpu.wait_on(Engine::Compute, f).unwrap();
        let handle = gpu.backend().gpu_handle();
        let mut m = handle.lock().unwrap();
        m.running = true;
        m.run_all();
        m.ops
            .iter()
            .find_map(|(_, op)| match op {
                Operation::HostSemaphore {
                    op: HostSemaphoreOp::AcquireCircGeq,
                    va,
                    value,
                    ..
                } if *value == next_copy => Some(*va),
                _ => None,
            })
            .expect("the acquire ran once the copy released")
    };
    // Release 1, acquire a copy not yet submitted, release 2: the channel stops at the
    // acquire, and the copy's release lets it go on from there.
    let mut pb = PushBuffer::new();
    let on_fetch = HostRelease::ON_FETCH;
    sem::host_release(&mut pb, flag.gpu_va(), 1, on_fetch).unwrap();
    sem::host_acquire(&mut pb, copy_timeline, next_copy + 1).unwrap();
    sem::host_release(&mut pb, flag.gpu_va(), 2, on_fetch).unwrap();
    let c = gpu.submit(Engine::Compute, pb).unwrap();
    let flag_view = flag.view().unwrap();
    assert_eq!(flag_view.read_u32(0).unwrap(), 1, "held at the acquire");
    assert!(!gpu.is_done(c));
    let f = gpu.copy(flag.gpu_va() + 0x100, flag.gpu_va(), 0).unwrap();
    assert_eq!(f.value, next_copy + 1);
    gpu.wait(c).unwrap();
    assert_eq!(flag_view.read_u32(0).unwrap(), 2);
    let m = gpu.backend().gpu();
    let ones = m
        .ops
        .iter()
        .filter(|(_, op)| {
            matches!(op, Operation::HostSemaphore { va, value: 1, .. } if *va == flag.gpu_va())
        })
        .count();
    assert_eq!(ones, 1, "the release before the acquire ran once");
}
