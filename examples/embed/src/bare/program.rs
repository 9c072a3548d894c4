//! The program: boot GSP-RM, open the GPU over it, run a vector add, check it, close.
//!
//! The firmware files come from the loader: it places a [`FirmwareHeader`] at
//! [`FIRMWARE_AT`] followed by the FMC, the GSP-RM image and the bootloader of the chip
//! (`nvidia/<chip>/gsp/{fmc,gsp,bootloader}-570.144.bin`).

use alloc::vec::Vec;
use core::fmt::Write;

use nvbare_core::boot::Firmware;
use nvbare_core::gpu::Placement;
use nvbare_core::gsp_rm::{GspRm, GspRmOptions};

use super::board::Board;
use super::serial::Com1;

/// Where the loader put the firmware.
pub const FIRMWARE_AT: u64 = 0x2_0000_0000;
/// The header's magic: "NVFW".
const FIRMWARE_MAGIC: u32 = u32::from_le_bytes(*b"NVFW");

/// What precedes the firmware files at [`FIRMWARE_AT`].
#[repr(C)]
struct FirmwareHeader {
    magic: u32,
    fmc_len: u32,
    gsp_len: u32,
    bootloader_len: u32,
}

/// The committed test kernels (`core/tests/data/cubin/kernels.cu`).
const SM90: &[u8] = include_bytes!("../../../../core/tests/data/cubin/kernels.sm_90.cubin");
const SM120: &[u8] = include_bytes!("../../../../core/tests/data/cubin/kernels.sm_120.cubin");

fn firmware() -> Result<Firmware<'static>, &'static str> {
    // SAFETY: the loader's contract: a header at FIRMWARE_AT, identity mapped, followed by
    // the three files, untouched for as long as the program runs.
    let h = unsafe { &*(FIRMWARE_AT as *const FirmwareHeader) };
    if h.magic != FIRMWARE_MAGIC {
        return Err("no firmware at FIRMWARE_AT (the loader puts it there)");
    }
    let base = FIRMWARE_AT + core::mem::size_of::<FirmwareHeader>() as u64;
    let file = |offset: u64, len: u32| {
        // SAFETY: as above: the files follow the header back to back.
        unsafe { core::slice::from_raw_parts((base + offset) as *const u8, len as usize) }
    };
    let (f, g, b) = (h.fmc_len, h.gsp_len, h.bootloader_len);
    Ok(Firmware {
        fmc: file(0, f),
        gsp: file(u64::from(f), g),
        bootloader: file(u64::from(f) + u64::from(g), b),
        booter: Default::default(),
    })
}

/// Runs the program, reporting on `out`.
pub fn run(out: &mut Com1) -> Result<(), alloc::string::String> {
    use alloc::string::ToString;
    let fw = firmware().map_err(|e| e.to_string())?;
    let mut gpu = GspRm::open(Board::new(), &fw, &GspRmOptions::default())
        .map_err(|f| alloc::format!("open: {}", f.error))?;
    let _ = writeln!(out, "{}", gpu.backend().gsp().report());
    let _ = writeln!(
        out,
        "{} ({}): sm_{}, {} SMs",
        gpu.info().name,
        gpu.info().rm,
        gpu.sm(),
        gpu.gr().sm_count
    );

    let cubin = match gpu.sm() {
        90 => SM90,
        120 => SM120,
        sm => return Err(alloc::format!("no committed kernels for sm_{sm}")),
    };
    let k = gpu.load(cubin, "vector_add").map_err(|e| e.to_string())?;
    let n: u32 = 1 << 16;
    let bytes = u64::from(n) * 4;
    let mut bufs = Vec::new();
    for _ in 0..3 {
        bufs.push(
            gpu.alloc(bytes, Placement::Vram, true)
                .map_err(|e| e.to_string())?,
        );
    }
    let floats =
        |f: &dyn Fn(u32) -> f32| -> Vec<u8> { (0..n).flat_map(|i| f(i).to_le_bytes()).collect() };
    let (a, b) = (floats(&|i| i as f32), floats(&|i| 2.0 * i as f32));
    for (buf, data) in bufs.iter().zip([&a, &b]) {
        if let Some(v) = buf.view() {
            v.write(0, data).map_err(|e| e.to_string())?;
        }
    }
    let mut params = Vec::new();
    for buf in &bufs {
        params.extend_from_slice(&buf.gpu_va().to_le_bytes());
    }
    params.extend_from_slice(&n.to_le_bytes());
    params.resize(k.info.param_size as usize, 0);
    let f = gpu
        .launch(&k, [n / 256, 1, 1], [256, 1, 1], &params)
        .map_err(|e| e.to_string())?;
    gpu.wait(f).map_err(|e| e.to_string())?;
    let mut c = alloc::vec![0u8; bytes as usize];
    if let Some(v) = bufs[2].view() {
        v.read(0, &mut c).map_err(|e| e.to_string())?;
    }
    let wrong = c
        .chunks_exact(4)
        .enumerate()
        .filter(|(i, w)| f32::from_le_bytes([w[0], w[1], w[2], w[3]]) != 3.0 * *i as f32)
        .count();
    let _ = writeln!(out, "vector add of {n} floats: {wrong} wrong");
    for buf in bufs {
        gpu.free(buf);
    }
    gpu.unload(k).map_err(|e| e.to_string())?;
    let (_board, r) = GspRm::close(gpu);
    let r = r.map_err(|e| e.to_string())?;
    let _ = writeln!(out, "closed: {r:?}");
    if wrong == 0 {
        Ok(())
    } else {
        Err(alloc::format!("{wrong} of {n} sums wrong"))
    }
}
