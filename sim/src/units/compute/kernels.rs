//! The committed test kernels, recognised by their code and run by native models.
//!
//! A kernel's code is what the GPU would fetch from `PROGRAM_ADDRESS`: read here through the
//! channel's MMU, 16-byte instruction by instruction, up to and including the branch-to-self
//! (`BRA` with offset -16, `4779fc00fcffffffffff…`) that ends every kernel nvcc emits for
//! sm_90, sm_100 and sm_120. Its FNV-1a 64 hash names it in [`KNOWN`] (the table is in
//! [`super::known`]): the kernels of `core/tests/data/cubin/kernels.cu` (sm_90, sm_100 and
//! sm_120) and `host/data/bench_kernels.cu` (sm_90 and sm_100), from the committed cubins
//! (`sim/tests/engines_compute.rs` re-derives every hash from them with its own ELF reader).
//! nvcc emits the same code for some kernels on sm_100 and sm_120: such a kernel has an entry
//! for each, and the chip's SM picks one. FNV is for recognition, not security: a kernel crafted
//! to collide would be run as the model it collides with.
//!
//! Each model does what the CUDA source says, with the launch's grid and block, its
//! parameters read from constant bank 0 at the chip's parameter offset, and every load and
//! store through the MMU (so an unmapped pointer faults as the kernel's would).

use crate::decode::qmd::QmdInfo;
use crate::device::Cx;
use crate::units::fifo::Stop;
use crate::units::mmu::{self, MemError, Requester};

pub use super::known::KNOWN;
use super::limits::ComputeLimits;

/// The instruction that ends a kernel: `BRA` to itself (the first 10 bytes; the last 6 hold
/// scheduling control that does not name the instruction), as sm_90..sm_120 encode it.
const BRA_SELF: [u8; 10] = [0x47, 0x79, 0xfc, 0x00, 0xfc, 0xff, 0xff, 0xff, 0xff, 0xff];
/// The same on sm_80..sm_89 (Ampere, Ada): the last instruction of every kernel in
/// `core/tests/data/cubin/kernels.sm_86.cubin` and `.sm_89.cubin` (`cuobjdump -sass`: `BRA`
/// to its own address).
const BRA_SELF_SM8X: [u8; 10] = [0x47, 0x79, 0x00, 0x00, 0xf0, 0xff, 0xff, 0xff, 0xff, 0xff];
/// Bytes of one sm_90/sm_100/sm_120 instruction.
const INSTRUCTION: usize = 16;
/// Longest code searched for its end.
const MAX_CODE: u64 = 1 << 20;
/// Elements moved per step of a model (bounds its buffers).
const CHUNK: u64 = 1 << 18;

/// What a kernel does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// Nothing visible (`empty_kernel`, `spin_cycles`).
    Nothing,
    /// `c[i] = a[i] + b[i]` for `i < n` (floats).
    VectorAdd,
    /// Each block reverses its `blockDim.x` floats of `data` (through a 256-float tile).
    ReverseBlock,
    /// `out[gid] = ((tid * 7 + k) & 63) * k + tid`.
    LocalArray,
    /// `*addr = value` (one thread).
    StoreValue,
    /// `out[blockIdx.x] = atomicAdd(&launch_counter, 1)` from thread x 0 of each block; the
    /// counter's address is in constant bank 4 (its R_CUDA_64 relocation).
    CountLaunches,
    /// `out[0..6] = blockDim.xyz, gridDim.xyz`.
    Dims,
    /// `n` 16-byte elements from `src` to `dst`, whatever the grid (grid-stride loops).
    CopyAll,
    /// Elements `i < n` with `i < gridDim.x * blockDim.x` (one per thread).
    CopyFlat,
    /// Elements `i < n` with `i < gridDim.x * 2 * blockDim.x` (two per thread).
    CopyFlat2,
}

/// A recognised kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Known {
    /// Its name in the CUDA source.
    pub name: &'static str,
    /// The SM architecture its code is for.
    pub sm: &'static str,
    /// FNV-1a 64 of its code.
    pub hash: u64,
    /// What it does.
    pub model: Model,
}

/// FNV-1a 64 of `code`.
pub fn code_hash(code: &[u8]) -> u64 {
    code.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The kernel whose code is `code`, if it is one of [`KNOWN`]: the entry for `sm` where the
/// same code is known for several SMs, else any (whose SM [`run`] then refuses).
pub fn recognise(code: &[u8], sm: &str) -> Option<&'static Known> {
    let h = code_hash(code);
    let all = || {
        KNOWN
            .iter()
            .chain(super::known::KNOWN_SM8X.iter().flatten())
    };
    all()
        .find(|k| k.hash == h && k.sm == sm)
        .or_else(|| all().find(|k| k.hash == h))
}

/// The code at `va`, up to and including its branch-to-self; `None` if there is none in the
/// first `MAX_CODE` bytes. Reads stop at the page that holds the end, so code that ends
/// just before an unmapped page reads no further (the program itself must be mapped).
pub fn read_code(cx: &mut Cx, who: &Requester, va: u64) -> Result<Option<Vec<u8>>, MemError> {
    let mut code = Vec::new();
    while (code.len() as u64) < MAX_CODE {
        let at = va + code.len() as u64;
        let (_, in_page) = mmu::translate(cx, who, at, crate::memory::Access::Read)?;
        // CAST: bounded by MAX_CODE.
        let n = in_page.min(MAX_CODE - code.len() as u64).min(4096) as usize;
        let start = code.len();
        code.resize(start + n, 0);
        mmu::read(cx, who, at, &mut code[start..])?;
        let first = start - start % INSTRUCTION;
        let mut i = first;
        while i + INSTRUCTION <= code.len() {
            let head = &code[i..i + BRA_SELF.len()];
            if head == BRA_SELF || head == BRA_SELF_SM8X {
                code.truncate(i + INSTRUCTION);
                return Ok(Some(code));
            }
            i += INSTRUCTION;
        }
    }
    Ok(None)
}

/// A launch's shape and parameters, as a model reads them.
struct Launch<'a> {
    grid: [u64; 3],
    block: [u64; 3],
    params: &'a [u8],
}

impl Launch<'_> {
    fn u64_at(&self, off: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.params[off..off + 8]);
        u64::from_le_bytes(b)
    }
    fn u32_at(&self, off: usize) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.params[off..off + 4]);
        u32::from_le_bytes(b)
    }
    fn blocks_x_threads_x(&self) -> u64 {
        self.grid[0] * self.block[0]
    }
}

/// Bytes of parameters each model reads.
fn param_bytes(m: Model) -> usize {
    match m {
        Model::Nothing => 0,
        Model::VectorAdd => 0x1c,
        Model::ReverseBlock | Model::CountLaunches | Model::Dims => 8,
        Model::LocalArray => 0xc,
        Model::StoreValue => 0x10,
        Model::CopyAll | Model::CopyFlat | Model::CopyFlat2 => 0x18,
    }
}

fn mem(e: MemError) -> Stop {
    Stop::Mem(e)
}

/// Runs kernel `k` as launched by `q`. False if this launch's shape is one the model does not
/// cover (then nothing was done, and the caller reports the kernel as not executed).
pub fn run(
    cx: &mut Cx,
    who: &Requester,
    k: &Known,
    q: &QmdInfo,
    lim: &ComputeLimits,
) -> Result<bool, Stop> {
    if k.sm != lim.sm {
        return Err(Stop::Invalid(format!(
            "kernel {} is {} code, launched on an {} GPU",
            k.name, k.sm, lim.sm
        )));
    }
    let n = param_bytes(k.model);
    // PANIC: `limits::check` made sure constant buffer 0 is valid.
    let cb0 = q
        .cbufs
        .iter()
        .find(|c| c.index == 0)
        .expect("cbuf 0 is valid");
    if u64::from(cb0.size) < lim.param_base + n as u64 {
        return Err(Stop::Invalid(format!(
            "{}: constant buffer 0 is {} bytes, but its {n} bytes of parameters end at {:#x}",
            k.name,
            cb0.size,
            lim.param_base + n as u64
        )));
    }
    let mut params = vec![0u8; n];
    mmu::read(cx, who, cb0.va + lim.param_base, &mut params).map_err(mem)?;
    let l = Launch {
        grid: q.grid.map(u64::from),
        block: q.block.map(u64::from),
        params: &params,
    };
    match k.model {
        Model::Nothing => {}
        Model::VectorAdd => vector_add(cx, who, &l).map_err(mem)?,
        Model::ReverseBlock => {
            if l.block[0] > 256 {
                return Ok(false);
            }
            reverse_block(cx, who, &l).map_err(mem)?
        }
        Model::LocalArray => local_array(cx, who, &l).map_err(mem)?,
        Model::StoreValue => {
            let (addr, value) = (l.u64_at(0), l.u64_at(8));
            mmu::write(cx, who, addr, &value.to_le_bytes()).map_err(mem)?;
        }
        Model::CountLaunches => {
            let Some(cb4) = q.cbufs.iter().find(|c| c.index == 4 && c.size >= 8) else {
                return Ok(false);
            };
            let counter = mmu::read_u64(cx, who, cb4.va).map_err(mem)?;
            count_launches(cx, who, &l, counter).map_err(mem)?
        }
        Model::Dims => {
            let v: Vec<u8> = [l.block, l.grid]
                .iter()
                .flatten()
                // CAST: dimensions are 32-bit in the QMD.
                .flat_map(|&d| (d as u32).to_le_bytes())
                .collect();
            mmu::write(cx, who, l.u64_at(0), &v).map_err(mem)?;
        }
        Model::CopyAll | Model::CopyFlat | Model::CopyFlat2 => {
            let (src, dst, count) = (l.u64_at(0), l.u64_at(8), l.u64_at(0x10));
            let count = match k.model {
                Model::CopyFlat => count.min(l.blocks_x_threads_x()),
                Model::CopyFlat2 => count.min(2 * l.blocks_x_threads_x()),
                _ => count,
            };
            copy16(cx, who, src, dst, count).map_err(mem)?
        }
    }
    Ok(true)
}

fn read_words(cx: &mut Cx, who: &Requester, va: u64, n: u64) -> Result<Vec<[u8; 4]>, MemError> {
    // CAST: n is bounded by CHUNK.
    let mut b = vec![0u8; n as usize * 4];
    mmu::read(cx, who, va, &mut b)?;
    Ok(b.chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect())
}

fn vector_add(cx: &mut Cx, who: &Requester, l: &Launch) -> Result<(), MemError> {
    let (a, b, c) = (l.u64_at(0), l.u64_at(8), l.u64_at(0x10));
    // CAST: `n` is an int parameter; a negative one covers no element.
    let n = (l.u32_at(0x18) as i32).max(0) as u64;
    let count = n.min(l.blocks_x_threads_x());
    let mut i = 0;
    while i < count {
        let m = (count - i).min(CHUNK);
        let x = read_words(cx, who, a.wrapping_add(4 * i), m)?;
        let y = read_words(cx, who, b.wrapping_add(4 * i), m)?;
        let out: Vec<u8> = x
            .iter()
            .zip(&y)
            .flat_map(|(p, q)| (f32::from_le_bytes(*p) + f32::from_le_bytes(*q)).to_le_bytes())
            .collect();
        mmu::write(cx, who, c.wrapping_add(4 * i), &out)?;
        i += m;
    }
    Ok(())
}

fn reverse_block(cx: &mut Cx, who: &Requester, l: &Launch) -> Result<(), MemError> {
    let data = l.u64_at(0);
    let bd = l.block[0];
    for bx in 0..l.grid[0] {
        let base = data.wrapping_add(4 * bx * bd);
        let mut w = read_words(cx, who, base, bd)?;
        w.reverse();
        mmu::write(cx, who, base, w.as_flattened())?;
    }
    Ok(())
}

fn local_array(cx: &mut Cx, who: &Requester, l: &Launch) -> Result<(), MemError> {
    let (out, k) = (l.u64_at(0), l.u32_at(8));
    let bd = l.block[0];
    // CAST: threadIdx.x is below 1024.
    let row: Vec<u8> = (0..bd as u32)
        .flat_map(|t| {
            let idx = t.wrapping_mul(7).wrapping_add(k) & 63;
            idx.wrapping_mul(k).wrapping_add(t).to_le_bytes()
        })
        .collect();
    for bx in 0..l.grid[0] {
        mmu::write(cx, who, out.wrapping_add(4 * bx * bd), &row)?;
    }
    Ok(())
}

fn count_launches(cx: &mut Cx, who: &Requester, l: &Launch, counter: u64) -> Result<(), MemError> {
    let out = l.u64_at(0);
    let mut value = mmu::read_u32(cx, who, counter)?;
    let threads = l.block.iter().product::<u64>();
    // Blocks in order, threads x fastest: the last thread with threadIdx.x == 0 of a block
    // writes its slot (the hardware's order is unspecified; this is one it may take).
    for _z in 0..l.grid[2] {
        for _y in 0..l.grid[1] {
            for bx in 0..l.grid[0] {
                // CAST: threads per block are at most 1024.
                let last_x0 = value.wrapping_add((threads - l.block[0]) as u32);
                mmu::write(cx, who, out.wrapping_add(4 * bx), &last_x0.to_le_bytes())?;
                value = value.wrapping_add(threads as u32);
            }
        }
    }
    mmu::write(cx, who, counter, &value.to_le_bytes())
}

fn copy16(cx: &mut Cx, who: &Requester, src: u64, dst: u64, count: u64) -> Result<(), MemError> {
    // Addresses and counts are the kernel's parameters, anything: an overflowing range
    // wraps, and the MMU faults on it as the kernel's accesses would.
    let total = count.saturating_mul(16);
    // CAST: bounded by CHUNK * 16.
    let mut buf = vec![0u8; total.min(CHUNK * 16) as usize];
    let mut done = 0;
    while done < total {
        // CAST: bounded by the buffer's length.
        let n = (total - done).min(buf.len() as u64) as usize;
        mmu::read(cx, who, src.wrapping_add(done), &mut buf[..n])?;
        mmu::write(cx, who, dst.wrapping_add(done), &buf[..n])?;
        done += n as u64;
    }
    Ok(())
}
