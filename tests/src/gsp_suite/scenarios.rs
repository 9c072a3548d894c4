//! The scenarios, each over an open GPU of any platform. They assert; they return what a
//! caller may want to print or compare (times, the fault report).

use std::time::{Duration, Instant};

use nvbare_core::gpu::{Buffer, Gpu, GpuError, GpuTimes, LaunchConfig, Placement};
use nvbare_core::gsp_rm::{GspRm, GspRmError};
use nvbare_core::hal::Platform;
use nvbare_core::rm::{Engine, FaultReport};

use super::kernels_for;

/// A GPU opened over GSP-RM.
pub type GspGpu<P> = Gpu<GspRm<P>>;

/// The word at byte offset `i` of the test pattern of `seed`.
fn pattern_word(seed: u64, i: u64) -> u64 {
    (i ^ seed)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .rotate_left(17)
        ^ seed
}

const CHUNK: usize = 1 << 20;

/// Writes the pattern of `seed` over the whole buffer, 1 MiB at a time.
pub fn fill<M>(buf: &Buffer<M>, seed: u64) {
    let view = buf.view().expect("a CPU view");
    let mut chunk = vec![0u8; CHUNK];
    let mut off = 0usize;
    while off < view.len() {
        let n = CHUNK.min(view.len() - off);
        for (j, w) in chunk[..n].chunks_exact_mut(8).enumerate() {
            w.copy_from_slice(&pattern_word(seed, (off / 8 + j) as u64).to_le_bytes());
        }
        view.write_u64s(off, &chunk[..n])
            .expect("write the pattern");
        off += n;
    }
}

/// Checks the buffer holds the pattern of `seed`; panics naming the first wrong word.
pub fn check<M>(buf: &Buffer<M>, seed: u64, what: &str) {
    let view = buf.view().expect("a CPU view");
    let mut chunk = vec![0u8; CHUNK];
    let mut off = 0usize;
    while off < view.len() {
        let n = CHUNK.min(view.len() - off);
        view.read(off, &mut chunk[..n]).expect("read back");
        for (j, w) in chunk[..n].chunks_exact(8).enumerate() {
            let i = (off / 8 + j) as u64;
            let got = u64::from_le_bytes(w.try_into().unwrap());
            assert_eq!(
                got,
                pattern_word(seed, i),
                "{what}: word {i} (byte {:#x}) differs",
                i * 8
            );
        }
        off += n;
    }
}

/// Every kind of allocation: VRAM with and without a CPU view, host memory (which always
/// has one), small and large; written and read back where the CPU sees them; all freed,
/// leaving the memory manager as it was.
pub fn allocations<P: Platform>(gpu: &mut GspGpu<P>) {
    let before = gpu.backend().memory_use();
    let mut bufs = Vec::new();
    for (size, placement, cpu) in [
        (4096, Placement::Vram, true),
        (100_000, Placement::Vram, true),
        (3 << 20, Placement::Vram, true),
        (64 << 20, Placement::Vram, false),
        (4096, Placement::Host, true),
        (5 << 20, Placement::Host, false),
    ] {
        let b = gpu
            .alloc(size, placement, cpu)
            .unwrap_or_else(|e| panic!("alloc {size:#x} {placement:?}: {e}"));
        assert!(b.size() >= size);
        assert_eq!(b.placement(), placement);
        assert_eq!(b.has_cpu_view(), cpu || placement == Placement::Host);
        if let Some(v) = b.view() {
            assert_eq!(v.len() as u64, b.size());
        }
        bufs.push(b);
    }
    let vas: Vec<_> = bufs.iter().map(|b| (b.gpu_va(), b.size())).collect();
    for (i, a) in vas.iter().enumerate() {
        for b in &vas[i + 1..] {
            assert!(
                a.0 + a.1 <= b.0 || b.0 + b.1 <= a.0,
                "VAs overlap: {a:x?} {b:x?}"
            );
        }
    }
    for (i, b) in bufs.iter().enumerate() {
        if b.has_cpu_view() {
            fill(b, i as u64);
        }
    }
    for (i, b) in bufs.iter().enumerate() {
        if b.has_cpu_view() {
            check(b, i as u64, "a buffer read back");
        }
    }
    let during = gpu.backend().memory_use();
    assert_eq!(during.buffers, before.buffers + bufs.len());
    for b in bufs {
        gpu.free(b);
    }
    assert_eq!(gpu.backend().memory_use(), before, "everything given back");
}

/// How long the two legs of a copy round trip took (wall clock, submission to completion).
#[derive(Clone, Copy, Debug)]
pub struct CopyTimes {
    /// Bytes per leg.
    pub bytes: u64,
    /// Host to VRAM.
    pub to_vram: Duration,
    /// VRAM to host.
    pub to_host: Duration,
}

/// `bytes` host → VRAM → host on the copy engine, checked word by word.
pub fn copy_round_trip<P: Platform>(gpu: &mut GspGpu<P>, bytes: u64) -> CopyTimes {
    let src = gpu
        .alloc(bytes, Placement::Host, true)
        .expect("host source");
    let vram = gpu.alloc(bytes, Placement::Vram, false).expect("VRAM");
    let dst = gpu
        .alloc(bytes, Placement::Host, true)
        .expect("host destination");
    fill(&src, 0x5eed);
    dst.view().unwrap().fill(0, bytes as usize, 0).unwrap();
    let t0 = Instant::now();
    let f = gpu
        .copy(vram.gpu_va(), src.gpu_va(), bytes)
        .expect("copy to VRAM");
    gpu.wait(f).expect("copy to VRAM finishes");
    let t1 = Instant::now();
    let f = gpu
        .copy(dst.gpu_va(), vram.gpu_va(), bytes)
        .expect("copy to host");
    gpu.wait(f).expect("copy to host finishes");
    let t2 = Instant::now();
    check(&dst, 0x5eed, "the round trip");
    for b in [src, vram, dst] {
        gpu.free(b);
    }
    CopyTimes {
        bytes,
        to_vram: t1 - t0,
        to_host: t2 - t1,
    }
}

/// `vector_add` (`c[i] = a[i] + b[i]`) over `n` floats in VRAM, checked element by element.
pub fn vector_add<P: Platform>(gpu: &mut GspGpu<P>, n: u32) {
    let cubin = kernels_for(gpu.sm()).expect("committed kernels for this SM");
    let k = gpu.load(cubin, "vector_add").expect("load vector_add");
    let bytes = u64::from(n) * 4;
    let bufs: Vec<_> = (0..3)
        .map(|_| gpu.alloc(bytes, Placement::Vram, true).expect("VRAM"))
        .collect();
    let floats =
        |f: &dyn Fn(u32) -> f32| -> Vec<u8> { (0..n).flat_map(|i| f(i).to_le_bytes()).collect() };
    bufs[0]
        .view()
        .unwrap()
        .write(0, &floats(&|i| i as f32))
        .unwrap();
    bufs[1]
        .view()
        .unwrap()
        .write(0, &floats(&|i| 0.5 * i as f32))
        .unwrap();
    bufs[2]
        .view()
        .unwrap()
        .fill(0, bytes as usize, 0xff)
        .unwrap();
    let mut params = Vec::new();
    for b in &bufs {
        params.extend_from_slice(&b.gpu_va().to_le_bytes());
    }
    params.extend_from_slice(&n.to_le_bytes());
    params.resize(k.info.param_size as usize, 0);
    let f = gpu
        .launch(&k, [n.div_ceil(256), 1, 1], [256, 1, 1], &params)
        .expect("launch");
    gpu.wait(f).expect("vector_add finishes");
    let mut out = vec![0u8; bytes as usize];
    bufs[2].view().unwrap().read(0, &mut out).unwrap();
    for (i, c) in out.chunks_exact(4).enumerate() {
        let got = f32::from_le_bytes(c.try_into().unwrap());
        assert_eq!(got, 1.5 * i as f32, "c[{i}]");
    }
    for b in bufs {
        gpu.free(b);
    }
    gpu.unload(k).expect("unload");
}

/// A GPU VA nothing is mapped at (inside the VA range buffers come from, far above them).
pub const UNMAPPED: u64 = 0x6fff_dead_0000;

/// `store_value` to [`UNMAPPED`]: the wait ends with a typed MMU fault naming the address.
/// The compute channel is stopped afterwards.
pub fn unmapped_store_faults<P: Platform>(gpu: &mut GspGpu<P>) -> FaultReport {
    let cubin = kernels_for(gpu.sm()).expect("committed kernels for this SM");
    let k = gpu.load(cubin, "store_value").expect("load store_value");
    let mut params = Vec::new();
    params.extend_from_slice(&UNMAPPED.to_le_bytes());
    params.extend_from_slice(&0x1234u64.to_le_bytes());
    params.resize(k.info.param_size as usize, 0);
    let f = gpu
        .launch(&k, [1, 1, 1], [1, 1, 1], &params)
        .expect("launch");
    let e: GpuError<GspRmError> = match gpu.wait(f) {
        Ok(()) => panic!("a store to an unmapped address completed"),
        Err(e) => e,
    };
    let report = e
        .fault()
        .unwrap_or_else(|| panic!("not a fault report: {e}"))
        .clone();
    assert!(
        report.mmu.iter().any(|m| m.address == UNMAPPED),
        "the fault names {UNMAPPED:#x}: {report}"
    );
    assert!(e.to_string().contains("0x6fffdead0000"), "{e}");
    report
}

/// `vector_add` fed and drained by the copy queue with the order kept on the GPU: the inputs
/// are copied in from host memory, the launch waits for that copy (`Gpu::wait_on`, no CPU
/// wait), the copy back waits for the grid; the CPU waits once, for the last copy. Each op is
/// timed: returns the GPU times of copy in, kernel and copy out, checked ordered.
pub fn pipelined_vector_add<P: Platform>(gpu: &mut GspGpu<P>, n: u32) -> [GpuTimes; 3] {
    let cubin = kernels_for(gpu.sm()).expect("committed kernels for this SM");
    let k = gpu.load(cubin, "vector_add").expect("load vector_add");
    let bytes = u64::from(n) * 4;
    let host = gpu
        .alloc(bytes * 3, Placement::Host, true)
        .expect("host buffers");
    let vram = gpu.alloc(bytes * 3, Placement::Vram, false).expect("VRAM");
    let floats = (0..n)
        .flat_map(|i| (i as f32).to_le_bytes())
        .chain((0..n).flat_map(|i| (0.25 * i as f32).to_le_bytes()))
        .collect::<Vec<u8>>();
    let view = host.view().unwrap();
    view.write(0, &floats).unwrap();
    view.fill(2 * bytes as usize, bytes as usize, 0xff).unwrap();
    let copy_in = gpu
        .copy_timed(vram.gpu_va(), host.gpu_va(), 2 * bytes)
        .expect("copy in");
    gpu.wait_on(Engine::Compute, copy_in.fence)
        .expect("compute waits for the copy");
    let mut params = Vec::new();
    for i in 0..3 {
        params.extend_from_slice(&(vram.gpu_va() + i * bytes).to_le_bytes());
    }
    params.extend_from_slice(&n.to_le_bytes());
    params.resize(k.info.param_size as usize, 0);
    let cfg = LaunchConfig {
        grid: [n.div_ceil(256), 1, 1],
        block: [256, 1, 1],
        dynamic_shared: 0,
    };
    let kernel = gpu.launch_timed(&k, &cfg, &params).expect("launch");
    gpu.wait_on(Engine::Copy, kernel.fence)
        .expect("copy waits for the grid");
    let copy_out = gpu
        .copy_timed(host.gpu_va() + 2 * bytes, vram.gpu_va() + 2 * bytes, bytes)
        .expect("copy out");
    let times = [copy_in, kernel, copy_out].map(|t| gpu.times(&t).expect("timed op finishes"));
    let mut out = vec![0u8; bytes as usize];
    view.read(2 * bytes as usize, &mut out).unwrap();
    for (i, c) in out.chunks_exact(4).enumerate() {
        let got = f32::from_le_bytes(c.try_into().unwrap());
        assert_eq!(got, 1.25 * i as f32, "c[{i}]");
    }
    for t in times {
        assert!(t.start_ns <= t.end_ns, "{times:?}");
    }
    assert!(
        times[0].end_ns <= times[1].start_ns,
        "kernel before its input: {times:?}"
    );
    assert!(
        times[1].end_ns <= times[2].start_ns,
        "copy out before the kernel: {times:?}"
    );
    gpu.free(host);
    gpu.free(vram);
    gpu.unload(k).expect("unload");
    times
}

/// A recorded sequence with real kernels, in order: two inputs copied in from host memory,
/// `vector_add` (c = a + b), `store_value` (a flag), `vector_add` again (d = c + c), d and the
/// flag copied out; replayed, then patched (new input addresses, a new flag value, half the
/// elements with half the grid) and replayed again. Each result is checked element by element.
pub fn recorded_sequence<P: Platform>(gpu: &mut GspGpu<P>, n: u32) {
    use nvbare_core::gpu::Recording;
    let cubin = kernels_for(gpu.sm()).expect("committed kernels for this SM");
    let add = gpu.load(cubin, "vector_add").expect("load vector_add");
    let store = gpu.load(cubin, "store_value").expect("load store_value");
    let bytes = u64::from(n) * 4;
    // Host: a, b, a2, b2, d, flag. VRAM: a, b, c, d, flag.
    let host = gpu
        .alloc(bytes * 5 + 64, Placement::Host, true)
        .expect("host");
    let vram = gpu
        .alloc(bytes * 4 + 64, Placement::Vram, false)
        .expect("VRAM");
    let (h, v) = (host.gpu_va(), vram.gpu_va());
    let hv = host.view().unwrap();
    let floats =
        |f: &dyn Fn(u32) -> f32| -> Vec<u8> { (0..n).flat_map(|i| f(i).to_le_bytes()).collect() };
    hv.write(0, &floats(&|i| i as f32)).unwrap();
    hv.write(bytes as usize, &floats(&|i| 0.5 * i as f32))
        .unwrap();
    hv.write(2 * bytes as usize, &floats(&|i| 3.0 * i as f32))
        .unwrap();
    hv.write(3 * bytes as usize, &floats(&|i| 1.0 + i as f32))
        .unwrap();
    let add_params = |a: u64, b: u64, c: u64, n: u32| {
        let mut p = Vec::new();
        for va in [a, b, c] {
            p.extend_from_slice(&va.to_le_bytes());
        }
        p.extend_from_slice(&n.to_le_bytes());
        p.resize(add.info.param_size as usize, 0);
        p
    };
    let shape = |n: u32| LaunchConfig {
        grid: [n.div_ceil(256), 1, 1],
        block: [256, 1, 1],
        dynamic_shared: 0,
    };
    let mut rec = Recording::new();
    let in_a = rec.copy(v, h, bytes).expect("copy a");
    let in_b = rec.copy(v + bytes, h + bytes, bytes).expect("copy b");
    rec.launch(&add, shape(n), &add_params(v, v + bytes, v + 2 * bytes, n))
        .expect("record add");
    let mut flag = (v + 4 * bytes).to_le_bytes().to_vec();
    flag.extend_from_slice(&0x1111u64.to_le_bytes());
    flag.resize(store.info.param_size as usize, 0);
    let st = rec.launch(&store, shape(1), &flag).expect("record store");
    let add2 = rec
        .launch(
            &add,
            shape(n),
            &add_params(v + 2 * bytes, v + 2 * bytes, v + 3 * bytes, n),
        )
        .expect("record add 2");
    rec.copy(h + 4 * bytes, v + 3 * bytes, bytes + 64)
        .expect("copy out");
    let mut seq = gpu.finish(rec).expect("finish");

    let check =
        |hv: &nvbare_core::gpu::BufferView<'_>, m: u32, f: &dyn Fn(u32) -> f32, flag: u64| {
            let mut out = vec![0u8; bytes as usize + 8];
            hv.read(4 * bytes as usize, &mut out).unwrap();
            for (i, c) in out[..bytes as usize]
                .chunks_exact(4)
                .enumerate()
                .take(m as usize)
            {
                let got = f32::from_le_bytes(c.try_into().unwrap());
                assert_eq!(got, f(i as u32), "d[{i}]");
            }
            let got = u64::from_le_bytes(out[bytes as usize..].try_into().unwrap());
            assert_eq!(got, flag, "the flag store_value wrote");
        };
    let r = gpu.replay(&mut seq).expect("replay");
    gpu.wait_replay(&r).expect("replay finishes");
    check(&hv, n, &|i| 3.0 * i as f32, 0x1111);

    // New input addresses, a new flag, half the elements over half the grid.
    seq.set_copy(in_a, v, h + 2 * bytes, bytes).unwrap();
    seq.set_copy(in_b, v + bytes, h + 3 * bytes, bytes).unwrap();
    seq.set_arg_u64(st, 8, 0x2222).unwrap();
    seq.set_arg_u32(add2, 24, n / 2).unwrap();
    seq.set_dims(add2, shape(n / 2).grid, [256, 1, 1]).unwrap();
    let r = gpu.replay(&mut seq).expect("replay 2");
    gpu.wait_replay(&r).expect("replay 2 finishes");
    check(
        &hv,
        n,
        &|i| {
            if i < n / 2 {
                2.0 * (3.0 * i as f32 + 1.0 + i as f32)
            } else {
                // Past n/2 the second grid wrote nothing: d kept the first replay's values.
                3.0 * i as f32
            }
        },
        0x2222,
    );
    gpu.free_sequence(seq).expect("free the sequence");
    gpu.free(host);
    gpu.free(vram);
    gpu.unload(add).expect("unload");
    gpu.unload(store).expect("unload");
}
