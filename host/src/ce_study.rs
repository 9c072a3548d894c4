//! `nvbare bench --copy-engine`: the copy engine on its own (issue 20, item 6). Which
//! logical copy engines (LCEs) RM exposes, their capabilities and physical copy units
//! (PCEs), which one the copy channel runs on, and device-to-device copies through it in
//! several shapes: one launch or many, pipelined or not. With `NVBARE_CE_START_AT` (Unix
//! time in ms) the timed copies start at that moment, so several processes, each on its
//! own engine (`--copy-engine N`), copy at once and their sum is the engines' together.

use std::fmt::Write;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nvbare_core::copy::{self, launch_dma};
use nvbare_core::gpu::{Backend, Gpu, GpuError, Placement};
use nvbare_core::push::{PushBuffer, Subchannel};
use nvbare_core::rm::Engine;
use nvbare_gsp::rm::alloc_flags::engine_type;
use nvbare_gsp::rm::ctrl::ce::{CeGetAllCapsParams, CePceMaskParams, MAX_CES, caps_names};
use nvbare_gsp::rm::ctrl::cmd;
use zerocopy::IntoBytes;

use crate::bench::{BenchError, check, view};

/// One line per CE RM reports present: its caps and PCE mask.
fn ce_table<B: Backend>(gpu: &mut Gpu<B>, out: &mut String) {
    let sub = gpu.objects().subdevice;
    let mine = gpu.channels().copy_engine;
    let mut all = CeGetAllCapsParams::default();
    if let Err(e) =
        gpu.backend_mut()
            .control_raw(sub, cmd::NV2080_CE_GET_ALL_CAPS, all.as_mut_bytes())
    {
        let _ = writeln!(out, "CE_GET_ALL_CAPS refused: {e}");
        return;
    }
    let _ = writeln!(
        out,
        "copy engines RM reports (present {:#x}); the copy channel runs on {}",
        all.present,
        mine.map_or("the graphics group's engine".into(), |c| format!("COPY{c}"))
    );
    for ce in 0..MAX_CES as u32 {
        if all.present & (1 << ce) == 0 {
            continue;
        }
        let Some(et) = engine_type::copy(ce) else {
            continue;
        };
        let mut p = CePceMaskParams {
            ce_engine_type: et,
            pce_mask: 0,
        };
        let pces = match gpu.backend_mut().control_raw(
            sub,
            cmd::NV2080_CE_GET_CE_PCE_MASK,
            p.as_mut_bytes(),
        ) {
            Ok(()) => format!(
                "PCE mask {:#06x} ({} PCEs)",
                p.pce_mask,
                p.pce_mask.count_ones()
            ),
            Err(e) => format!("PCE mask refused: {e}"),
        };
        // PANIC: ce < MAX_CES.
        let caps: Vec<_> = caps_names(all.caps_tbl[ce as usize]).collect();
        let _ = writeln!(
            out,
            "  COPY{ce:<2} {pces:<24} {}{}",
            caps.join(" "),
            if mine == Some(ce) { "  <- ours" } else { "" }
        );
    }
}

/// How one device-to-device variant launches its copy.
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// Bytes per `LAUNCH_DMA`.
    chunk: u64,
    /// `PIPELINED` after the first launch (else every launch `NON_PIPELINED`).
    pipelined: bool,
}

/// Appends `len` bytes of copy in launches of `shape.chunk` bytes.
fn push_copy(
    pb: &mut PushBuffer,
    dst: u64,
    src: u64,
    len: u64,
    shape: Shape,
) -> Result<(), nvbare_core::push::PushError> {
    let mut off = 0;
    while off < len {
        let n = (len - off).min(shape.chunk).min(copy::MAX_COPY_CHUNK);
        let (s, d) = (src + off, dst + off);
        pb.method(
            Subchannel::COPY,
            copy::OFFSET_IN_UPPER,
            // CAST: the high and low halves of 57-bit VAs.
            &[(s >> 32) as u32, s as u32, (d >> 32) as u32, d as u32],
        )?;
        // CAST: n ≤ MAX_COPY_CHUNK (2 GiB) fits 32 bits.
        pb.method(Subchannel::COPY, copy::LINE_LENGTH_IN, &[n as u32])?;
        let kind = if shape.pipelined && off > 0 {
            launch_dma::DATA_TRANSFER_PIPELINED
        } else {
            launch_dma::DATA_TRANSFER_NON_PIPELINED
        };
        pb.method(
            Subchannel::COPY,
            copy::LAUNCH_DMA,
            &[kind | launch_dma::SRC_PITCH | launch_dma::DST_PITCH],
        )?;
        off += n;
    }
    Ok(())
}

fn timed_copy<B: Backend>(
    gpu: &mut Gpu<B>,
    dst: u64,
    src: u64,
    len: u64,
    shape: Shape,
) -> Result<f64, GpuError<B::Error>> {
    let mut pb = PushBuffer::new();
    push_copy(&mut pb, dst, src, len, shape)?;
    let t = Instant::now();
    let f = gpu.submit(Engine::Copy, pb)?;
    gpu.wait(f)?;
    Ok(len as f64 / t.elapsed().as_secs_f64() / 1e9)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Waits until `NVBARE_CE_START_AT` (Unix ms), when set and in the future (at most 10 s).
fn start_barrier() -> Option<u128> {
    let at: u128 = std::env::var("NVBARE_CE_START_AT").ok()?.parse().ok()?;
    let now = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    };
    let wait = at.saturating_sub(now()).min(10_000);
    // CAST: at most 10 000 ms.
    std::thread::sleep(Duration::from_millis(wait as u64));
    Some(at)
}

/// Runs the study; `quick` copies 64 MiB instead of 1 GiB.
pub fn run<B: Backend>(
    gpu: &mut Gpu<B>,
    quick: bool,
    stop: fn() -> bool,
) -> Result<String, BenchError<B::Error>> {
    let started = Instant::now();
    let mut out = String::new();
    ce_table(gpu, &mut out);
    let size: u64 = if quick { 64 << 20 } else { 1 << 30 };
    let check_len: u64 = 64 << 20;
    let host = gpu.alloc(check_len, Placement::Host, true)?;
    let d0 = gpu.alloc(size, Placement::Vram, false)?;
    let d1 = gpu.alloc(size, Placement::Vram, false)?;
    let (h, a, b) = (host.gpu_va(), d0.gpu_va(), d1.gpu_va());

    // The shapes: one launch (nvbare's copies), and launches of 256, 64, 16 and 2 MiB.
    let mut shapes = vec![
        (
            "1 launch, NON_PIPELINED (nvbare's copy)",
            Shape {
                chunk: size,
                pipelined: false,
            },
        ),
        (
            "64 MiB launches, NON_PIPELINED",
            Shape {
                chunk: 64 << 20,
                pipelined: false,
            },
        ),
    ];
    for (name, chunk) in [
        ("256 MiB launches, PIPELINED", 256u64 << 20),
        ("64 MiB launches, PIPELINED", 64 << 20),
        ("16 MiB launches, PIPELINED", 16 << 20),
        ("2 MiB launches, PIPELINED", 2 << 20),
    ] {
        shapes.push((
            name,
            Shape {
                chunk,
                pipelined: true,
            },
        ));
    }

    // Each shape copies correctly: 64 MiB of a pattern in, across, out, compared.
    let pattern: Vec<u8> = (0..check_len / 8)
        .flat_map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes())
        .collect();
    view(&host)?
        .write_u64s(0, &pattern)
        .map_err(GpuError::from)?;
    let f = gpu.copy(a, h, check_len)?;
    gpu.wait(f)?;
    for (name, shape) in &shapes {
        let small = Shape {
            chunk: shape.chunk.min(check_len / 4).max(2 << 20),
            ..*shape
        };
        // The destination zeroed first, so a copy that did nothing is caught.
        view(&host)?
            .fill(0, pattern.len(), 0)
            .map_err(GpuError::from)?;
        let f = gpu.copy(b, h, check_len)?;
        gpu.wait(f)?;
        let mut pb = PushBuffer::new();
        push_copy(&mut pb, b, a, check_len, small).map_err(GpuError::from)?;
        let f = gpu.submit(Engine::Copy, pb)?;
        gpu.wait(f)?;
        let f = gpu.copy(h, b, check_len)?;
        gpu.wait(f)?;
        let mut back = vec![0u8; pattern.len()];
        view(&host)?.read(0, &mut back).map_err(GpuError::from)?;
        if let Some(byte) = back.iter().zip(&pattern).position(|(x, y)| x != y) {
            let _ = writeln!(out, "{name}: WRONG DATA from byte {byte}");
            return Err(BenchError::WrongData {
                what: "a copy-engine D2D copy",
                byte,
            });
        }
    }
    let _ = writeln!(out, "every shape copied 64 MiB byte-exact");

    let barrier = start_barrier();
    let t0 = Instant::now();
    let _ = writeln!(
        out,
        "{} D2D through the copy engine alone, GB/s (bytes copied / time; median of 5, rounds interleaved):",
        if quick { "64 MiB" } else { "1 GiB" }
    );
    let mut results: Vec<Vec<f64>> = vec![Vec::new(); shapes.len()];
    for _ in 0..5 {
        check(stop, started)?;
        for (i, (_, shape)) in shapes.iter().enumerate() {
            results[i].push(timed_copy(gpu, b, a, size, *shape)?);
        }
    }
    let span = t0.elapsed().as_secs_f64();
    for ((name, _), r) in shapes.iter().zip(results.iter_mut()) {
        let min = r.iter().copied().fold(f64::INFINITY, f64::min);
        let max = r.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(out, "  {name:<42} {:7.2} [{min:.2}, {max:.2}]", median(r));
    }
    let total = (shapes.len() * 5) as u64 * size;
    let _ = writeln!(
        out,
        "all timed copies: {:.2} GB/s over {:.3} s{}",
        total as f64 / span / 1e9,
        span,
        barrier.map_or(String::new(), |at| format!(" (started at {at} ms)"))
    );
    let _ = writeln!(
        out,
        "doorbell re-rings: compute {}, copy {}",
        gpu.doorbell_rerings(Engine::Compute),
        gpu.doorbell_rerings(Engine::Copy)
    );
    gpu.free(host);
    gpu.free(d0);
    gpu.free(d1);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_splits_into_launches_of_the_chunk() {
        let mut pb = PushBuffer::new();
        push_copy(
            &mut pb,
            0x2000_0000,
            0x1000_0000,
            5 << 20,
            Shape {
                chunk: 2 << 20,
                pipelined: true,
            },
        )
        .unwrap();
        // Three launches of three methods each: OFFSET_* (4 words), LINE_LENGTH_IN, LAUNCH_DMA.
        let w = pb.words();
        let launches: Vec<u32> = w
            .windows(2)
            .filter(|p| p[0] & 0x1fff == copy::LAUNCH_DMA >> 2 && p[0] >> 29 != 0)
            .map(|p| p[1])
            .collect();
        assert_eq!(launches.len(), 3, "{w:x?}");
        assert_eq!(launches[0] & 3, launch_dma::DATA_TRANSFER_NON_PIPELINED);
        assert_eq!(launches[1] & 3, launch_dma::DATA_TRANSFER_PIPELINED);
    }
}
