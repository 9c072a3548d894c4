//! The program on the GPU: boot GSP-RM and open the GPU over it, run a vector add and check
//! every sum, close (GSP-RM unloaded, the GPU's DMA stopped), and check that every byte of
//! DMA memory came back.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use nvbare_core::boot::Firmware;
use nvbare_core::gpu::{Gpu, GpuConfig, Placement};
use nvbare_core::gsp_rm::{GspRm, GspRmOptions};
use nvbare_core::hal::{Clock, Platform};

use super::board::Board;
use super::report::Report;

/// Floats added.
const N: u32 = 1 << 16;
/// The launch arena (QMDs and constant banks): a few launches in flight need far less than
/// the hosted default's 64 MiB, and its CPU-side shadow comes from the heap.
const ARENA_BYTES: u64 = 4 << 20;

/// Runs the program on `board` with `fw`, one report line per step.
pub fn run(r: &mut Report, board: Board, fw: &Firmware<'_>) {
    let clock = *board.clock();
    let dma_bytes = board.dma_free_bytes();
    let t = clock.now_ns();
    let options = GspRmOptions {
        gpu: GpuConfig {
            arena: ARENA_BYTES,
            ..GpuConfig::default()
        },
        ..GspRmOptions::default()
    };
    let opened = GspRm::open(board, fw, &options)
        .map(|gpu| {
            let g = gpu.backend().gsp();
            let detail = format!(
                "{} booted GSP-RM ({}) in {} and opened the GPU over it",
                g.report().chip,
                gpu.info().rm,
                nvbare_core::hal::Nanos(g.report().host_ns() + g.report().waited_ns()),
            );
            (gpu, detail)
        })
        .map_err(|f| f.to_string());
    let Some(mut gpu) = r.step("gsp-boot", Some((&clock, t)), opened) else {
        return;
    };
    r.note(format_args!("{}", gpu.backend().gsp().report()));
    let detail = format!(
        "{}, sm_{}, {} SMs, {} MiB VRAM",
        gpu.info().name,
        gpu.sm(),
        gpu.gr().sm_count,
        gpu.info().vram_bytes >> 20
    );
    r.step("gpu-info", None, Ok::<_, String>(((), detail)));

    let t = clock.now_ns();
    let added = vector_add(&mut gpu);
    r.step("vector-add", Some((&clock, t)), added);

    let t = clock.now_ns();
    let (board, closed) = GspRm::close(gpu);
    let closed = closed
        .map(|c| {
            let t = c.teardown;
            let detail = format!(
                "{} RM objects freed; GSP-RM unloaded {}, RISC-V halted {}, GPU reset {}, \
                 WPR2 left up {}; {} boot allocations given back",
                c.objects_freed, t.unloaded, t.halted, t.reset, t.wpr2_left_up, t.freed
            );
            ((), detail)
        })
        .map_err(|e| e.to_string());
    r.step("close", Some((&clock, t)), closed);

    let back = board.dma_free_bytes();
    let returned = if back == dma_bytes {
        Ok(((), format!("{} MiB free again", back >> 20)))
    } else {
        Err(format!(
            "{} KiB of DMA memory not given back",
            (dma_bytes - back) >> 10
        ))
    };
    r.step("dma-returned", None, returned);
}

/// Loads `vector_add`, adds two vectors of [`N`] floats in VRAM, reads the sums back through
/// BAR1 and counts the wrong ones; frees everything.
fn vector_add(gpu: &mut Gpu<GspRm<Board>>) -> Result<((), String), String> {
    // The committed test kernels (`core/tests/data/cubin/kernels.cu`) for the GPU found: the
    // program links all of them (about 147 KiB), since it learns the SM only at run time.
    let sm = gpu.sm();
    let cubin = nvbare_test_kernels::for_sm(sm)
        .ok_or_else(|| format!("no committed test kernels for sm_{sm}"))?
        .cubin;
    let k = gpu.load(cubin, "vector_add").map_err(|e| e.to_string())?;
    let bytes = u64::from(N) * 4;
    let mut bufs = Vec::new();
    for _ in 0..3 {
        bufs.push(
            gpu.alloc(bytes, Placement::Vram, true)
                .map_err(|e| e.to_string())?,
        );
    }
    let floats =
        |f: &dyn Fn(u32) -> f32| -> Vec<u8> { (0..N).flat_map(|i| f(i).to_le_bytes()).collect() };
    // CAST: i < 2^16 is exact in f32.
    let (a, b) = (floats(&|i| i as f32), floats(&|i| 2.0 * i as f32));
    for (buf, data) in bufs.iter().zip([&a, &b]) {
        let v = buf
            .view()
            .ok_or("a VRAM buffer without a CPU view (BAR1)")?;
        v.write(0, data).map_err(|e| e.to_string())?;
    }
    let mut params = Vec::new();
    for buf in &bufs {
        params.extend_from_slice(&buf.gpu_va().to_le_bytes());
    }
    params.extend_from_slice(&N.to_le_bytes());
    // CAST: a u32 size fits usize.
    params.resize(k.info.param_size as usize, 0);
    let f = gpu
        .launch(&k, [N / 256, 1, 1], [256, 1, 1], &params)
        .map_err(|e| e.to_string())?;
    gpu.wait(f).map_err(|e| e.to_string())?;
    // CAST: 256 KiB.
    let mut c = alloc::vec![0u8; bytes as usize];
    let v = bufs[2]
        .view()
        .ok_or("a VRAM buffer without a CPU view (BAR1)")?;
    v.read(0, &mut c).map_err(|e| e.to_string())?;
    let wrong = c
        .chunks_exact(4)
        .enumerate()
        // CAST: i < 2^16 is exact in f32.
        .filter(|(i, w)| f32::from_le_bytes([w[0], w[1], w[2], w[3]]) != 3.0 * *i as f32)
        .count();
    for buf in bufs {
        gpu.free(buf);
    }
    gpu.unload(k).map_err(|e| e.to_string())?;
    if wrong == 0 {
        Ok(((), format!("{N} floats, every sum right")))
    } else {
        Err(format!("{wrong} of {N} sums wrong"))
    }
}
