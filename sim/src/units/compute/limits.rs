//! What a QMD may ask of each chip's compute engine, and the checks of a decoded QMD against
//! it.
//!
//! Field meanings: clcbc0qmd.h (QMD V04_00, Hopper) and clcec0qmd.h (V05_00, Blackwell).
//! Limits: the CUDA C++ Programming Guide's table of technical specifications per compute
//! capability (8.0, 8.6, 8.9, 9.0, 10.0 and 12.0): grid x < 2^31, y and z ≤ 65535; block x, y ≤ 1024, z ≤
//! 64, at most 1024 threads; 255 registers per thread from a 64 K-register file; 16 named
//! barriers; shared memory per SM 164 KiB (8.0), 228 KiB (9.0, 10.0) and 100 KiB (8.6, 8.9,
//! 12.0). The `*_SM_CONFIG_SHARED_MEM_SIZE` fields encode a shared-memory carveout of
//! `(value - 1) × 4 KiB` (how both mesa's NAK and tinygrad fill them: `KiB / 4 + 1`).

use crate::chip::ChipSpec;
use crate::decode::qmd::QmdInfo;

/// One chip's compute facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComputeLimits {
    /// SM architecture, for messages ("sm_90").
    pub sm: &'static str,
    /// QMD major version the chip's compute class uses.
    pub qmd_major: u32,
    /// Shared memory an SM gives one CTA at most, bytes (the driver's 1 KiB reservation
    /// included, as drivers count it in the QMD).
    pub shared_per_sm: u32,
    /// Constant bank 0 offset of the first kernel parameter (`EIATTR_PARAM_CBANK` of nvcc's
    /// output: 0x210 for sm_90, 0x380 for sm_120; core/tests/data/cubin/*.cuobjdump-elf.txt).
    pub param_base: u64,
}

/// The compute facts of `spec`'s chip (by architecture, `PMC_BOOT_42` 29:24).
pub fn of(spec: &ChipSpec) -> Option<ComputeLimits> {
    match spec.pmc_boot_42 >> 24 & 0x3f {
        // GA100 (architecture 0x17, implementation 0): sm_80, AMPERE_COMPUTE_A with QMD
        // V03_00 (clc6c0qmd.h); compute capability 8.0 gives an SM 164 KiB of shared memory
        // (the CUDA guide's table); EIATTR_PARAM_CBANK 0x160 (kernels.sm_80.cuobjdump-elf.txt).
        0x17 if spec.pmc_boot_42 >> 20 & 0xf == 0 => Some(ComputeLimits {
            sm: "sm_80",
            qmd_major: 3,
            shared_per_sm: 164 << 10,
            param_base: 0x160,
        }),
        // TU10x (sm_75): TURING_COMPUTE_A with QMD V02_03 (clc5c0qmd.h); compute capability
        // 7.5 gives an SM (and a CTA) 64 KiB of shared memory; kernel parameters at cbuf0
        // 0x160 (EIATTR_PARAM_CBANK of kernels.sm_75.cuobjdump-elf.txt).
        0x16 => Some(ComputeLimits {
            sm: "sm_75",
            qmd_major: 2,
            shared_per_sm: 64 << 10,
            param_base: 0x160,
        }),
        // GA10x (sm_86) and AD10x (sm_89): QMD V03_00 (clc6c0qmd.h, which AMPERE_COMPUTE_B and
        // ADA_COMPUTE_A launch); compute capabilities 8.6 and 8.9 give an SM 100 KiB of shared
        // memory; kernel parameters at cbuf0 0x160 (tinygrad's ops_nv places them there for
        // QMD v3 chips).
        0x17 => Some(ComputeLimits {
            sm: "sm_86",
            qmd_major: 3,
            shared_per_sm: 100 << 10,
            param_base: 0x160,
        }),
        0x19 => Some(ComputeLimits {
            sm: "sm_89",
            qmd_major: 3,
            shared_per_sm: 100 << 10,
            param_base: 0x160,
        }),
        0x18 => Some(ComputeLimits {
            sm: "sm_90",
            qmd_major: 4,
            shared_per_sm: 228 << 10,
            param_base: 0x210,
        }),
        // GB10x: sm_100, BLACKWELL_COMPUTE_A with QMD V05_00 (clcdc0qmd.h); compute
        // capability 10.0 gives an SM 228 KiB of shared memory; EIATTR_PARAM_CBANK 0x380
        // (kernels.sm_100.cuobjdump-elf.txt).
        0x1a => Some(ComputeLimits {
            sm: "sm_100",
            qmd_major: 5,
            shared_per_sm: 228 << 10,
            param_base: 0x380,
        }),
        0x1b => Some(ComputeLimits {
            sm: "sm_120",
            qmd_major: 5,
            shared_per_sm: 100 << 10,
            param_base: 0x380,
        }),
        _ => None,
    }
}

/// Largest grid x, y, z.
const GRID_MAX: [u32; 3] = [i32::MAX as u32, 65535, 65535];
/// Largest block x, y, z, and threads per block.
const BLOCK_MAX: [u32; 3] = [1024, 1024, 64];
const THREADS_MAX: u32 = 1024;
/// Registers per thread, and per SM.
const REGISTERS_MAX: u32 = 255;
const REGISTER_FILE: u32 = 64 << 10;
/// Named barriers per CTA.
const BARRIERS_MAX: u32 = 16;
/// A constant buffer is at most 64 KiB.
const CBUF_MAX: u32 = 64 << 10;

/// Bytes of a `*_SM_CONFIG_SHARED_MEM_SIZE` value.
fn carveout(v: u32) -> u32 {
    v.saturating_sub(1) * 4096
}

/// Checks `q` against `lim`; the first violation, described.
pub fn check(q: &QmdInfo, lim: &ComputeLimits) -> Result<(), String> {
    for (i, axis) in ["x", "y", "z"].iter().enumerate() {
        if q.grid[i] == 0 || q.grid[i] > GRID_MAX[i] {
            return Err(format!(
                "grid {axis} = {} (1..={} on {})",
                q.grid[i], GRID_MAX[i], lim.sm
            ));
        }
        if q.block[i] == 0 || q.block[i] > BLOCK_MAX[i] {
            return Err(format!(
                "block {axis} = {} (1..={} on {})",
                q.block[i], BLOCK_MAX[i], lim.sm
            ));
        }
    }
    let threads = q.block.iter().product::<u32>();
    if threads > THREADS_MAX {
        return Err(format!(
            "{threads} threads per block (at most {THREADS_MAX})"
        ));
    }
    if q.registers == 0 || q.registers > REGISTERS_MAX {
        return Err(format!(
            "REGISTER_COUNT = {} (1..={REGISTERS_MAX})",
            q.registers
        ));
    }
    // Registers are given to a warp in units of 256.
    let per_warp = (q.registers * 32).next_multiple_of(256);
    if threads.div_ceil(32) * per_warp > REGISTER_FILE {
        return Err(format!(
            "{threads} threads × {} registers do not fit the SM's {REGISTER_FILE}-register file",
            q.registers
        ));
    }
    if q.barriers > BARRIERS_MAX {
        return Err(format!(
            "BARRIER_COUNT = {} (at most {BARRIERS_MAX})",
            q.barriers
        ));
    }
    let [min, max, target] = q.sm_config;
    if min == 0 || !(min <= target && target <= max) {
        return Err(format!(
            "shared-memory carveout MIN {min}, TARGET {target}, MAX {max}: each is KiB / 4 + 1 \
             and MIN <= TARGET <= MAX"
        ));
    }
    if carveout(max) > lim.shared_per_sm {
        return Err(format!(
            "MAX_SM_CONFIG_SHARED_MEM_SIZE {max} asks for a {} KiB carveout; {} SMs have {} KiB",
            carveout(max) >> 10,
            lim.sm,
            lim.shared_per_sm >> 10
        ));
    }
    if q.shared_bytes > lim.shared_per_sm || q.shared_bytes > carveout(max) {
        return Err(format!(
            "SHARED_MEMORY_SIZE {} bytes exceeds the largest carveout the QMD allows ({} KiB; \
             {} SMs have {} KiB)",
            q.shared_bytes,
            carveout(max) >> 10,
            lim.sm,
            lim.shared_per_sm >> 10
        ));
    }
    for cb in &q.cbufs {
        if cb.size == 0 || cb.size > CBUF_MAX {
            return Err(format!(
                "constant buffer {} of {} bytes (1..={CBUF_MAX})",
                cb.index, cb.size
            ));
        }
    }
    if !q.cbufs.iter().any(|c| c.index == 0) {
        return Err("constant buffer 0 (the launch's parameters) is not valid".into());
    }
    Ok(())
}
