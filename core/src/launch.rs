//! Turning "run kernel K of this cubin on this grid with these parameters" into the bytes the
//! GPU reads: constant bank 0 (driver slots + parameters) and a QMD, after checking the launch
//! against the hardware's limits. The caller writes both to GPU memory and pushes
//! [`crate::compute::launch_qmd`] (or chains the QMD with [`Qmd::set_dependent`]).
//!
//! The driver slots of constant bank 0 were read from nvcc's output for each architecture
//! (`core/tests/data/cubin/cuobjdump-notes.md`): block and grid dimensions, the generic bases
//! of the shared and local windows, and the initial stack pointer.

use crate::cubin::{Kernel, ModuleImage};
use crate::qmd::{ConstantBuffer, Qmd, QmdError, QmdParams, QmdVersion, SharedMemoryConfig};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

/// The initial stack pointer nvcc's code loads from its slot: 0x240 below the top of the 16 MiB
/// local window, the region the high local memory size covers.
pub const STACK_TOP: u32 = 0x00ff_fdc0;
/// Bytes above [`STACK_TOP`] that count as local memory of every thread that has a stack.
pub const STACK_RESERVE: u32 = 0x240;
/// Shared memory the hardware reserves at the start of every CTA's window on sm_90 and later
/// (nvcc's code places user shared data from 0x400; the `.nv.shared.<k>` size includes it).
pub const RESERVED_SHARED: u32 = 0x400;

/// Where the driver fills values in constant bank 0, per architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cbuf0Slots {
    /// blockDim x, y, z (u32 each).
    pub block_dim: u32,
    /// gridDim x, y, z (u32 each).
    pub grid_dim: u32,
    /// Generic base of the shared window (u64).
    pub shared_window: u32,
    /// Generic base of the local window (u64).
    pub local_window: u32,
    /// Initial stack pointer (u32).
    pub stack_top: u32,
    /// Bytes bank 0 must span for these slots.
    pub min_size: u32,
}

impl Cbuf0Slots {
    /// The slots nvcc's code reads on `sm` (75, 80, 86, 89, 90, 100, 120 checked; other
    /// 8x/9x/1xx by family), or `None`. sm_75 reads the same offsets as sm_8x
    /// (`cuobjdump -sass kernels.sm_75.cubin`: `c[0x0][0x0]`..`[0x28]`, parameters at 0x160).
    pub fn for_sm(sm: u32) -> Option<Self> {
        match sm {
            75 | 80..=99 => Some(Self {
                block_dim: 0x0,
                grid_dim: 0xc,
                shared_window: 0x18,
                local_window: 0x20,
                stack_top: 0x28,
                min_size: 0x30,
            }),
            100..=129 => Some(Self {
                block_dim: 0x360,
                grid_dim: 0x370,
                shared_window: 0x2f0,
                local_window: 0x2f8,
                stack_top: 0x37c,
                min_size: 0x380,
            }),
            _ => None,
        }
    }
}

/// Bytes constant bank 0 spans for `kernel` (before rounding): the compiler's section, the
/// driver slots and the parameters, whichever reaches furthest.
pub fn cbuf0_size(slots: &Cbuf0Slots, kernel: &Kernel<'_>) -> u32 {
    kernel
        .cbuf0_size
        .max(slots.min_size)
        // Cubin::parse checks offset + size against cbuf0_size; saturating all the same.
        .max(kernel.param_offset.saturating_add(kernel.param_size))
}

/// The hardware's launch limits for one GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchLimits {
    /// Threads per CTA.
    pub max_threads_per_block: u32,
    /// CTA size per axis.
    pub max_block: [u32; 3],
    /// Grid size per axis.
    pub max_grid: [u32; 3],
    /// Registers per thread.
    pub max_registers_per_thread: u32,
    /// Register file per SM (32-bit registers).
    pub registers_per_sm: u32,
    /// Shared memory one CTA may use, bytes (opt-in maximum, excluding the reserved 1 KiB).
    pub max_shared_per_block: u32,
    /// SM shared-memory carveouts, KiB, ascending.
    pub carveouts_kib: &'static [u32],
}

/// Turing (compute capability 7.5): 96 KiB of L1 and shared memory per SM, of which shared
/// memory takes 32 or 64 KiB (CUDA's Turing tuning guide, "Unified Shared Memory/L1/Texture
/// Cache").
const CARVEOUT_TU10X: &[u32] = &[32, 64];
const CARVEOUT_GA100: &[u32] = &[0, 8, 16, 32, 64, 100, 132, 164];
const CARVEOUT_GA10X: &[u32] = &[0, 8, 16, 32, 64, 100];
const CARVEOUT_GH100: &[u32] = &[0, 8, 16, 32, 64, 100, 132, 164, 196, 228];

impl LaunchLimits {
    /// Limits of an `sm` (CUDA programming guide, compute capability table).
    pub fn for_sm(sm: u32) -> Option<Self> {
        let (max_shared_per_block, carveouts_kib) = match sm {
            // Compute capability 7.5: 64 KiB of shared memory per block and per SM.
            75 => (64 * 1024, CARVEOUT_TU10X),
            80 => (163 * 1024, CARVEOUT_GA100),
            86 | 87 | 88 | 89 | 120 | 121 => (99 * 1024, CARVEOUT_GA10X),
            90 | 100 | 103 => (227 * 1024, CARVEOUT_GH100),
            _ => return None,
        };
        Some(Self {
            max_threads_per_block: 1024,
            max_block: [1024, 1024, 64],
            max_grid: [(1 << 31) - 1, 65535, 65535],
            max_registers_per_thread: 255,
            registers_per_sm: 65536,
            max_shared_per_block,
            carveouts_kib,
        })
    }
}

/// A launch the hardware cannot run, or inputs that do not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchError {
    /// A zero grid or block dimension.
    ZeroDimension,
    /// Block larger than the per-axis limit.
    BlockTooLarge {
        /// 0 = x, 1 = y, 2 = z.
        axis: usize,
        /// Requested.
        value: u32,
        /// Limit.
        max: u32,
    },
    /// Grid larger than the per-axis limit.
    GridTooLarge {
        /// 0 = x, 1 = y, 2 = z.
        axis: usize,
        /// Requested.
        value: u32,
        /// Limit.
        max: u32,
    },
    /// More threads per CTA than the hardware or the kernel's register use allows.
    TooManyThreads {
        /// Threads requested.
        threads: u32,
        /// Most this kernel can run per CTA.
        max: u32,
        /// The kernel's registers per thread.
        registers: u32,
    },
    /// The kernel's `__launch_bounds__` or `reqntid` forbid this block.
    BlockViolatesKernelBounds {
        /// Threads requested.
        threads: u32,
    },
    /// Static + dynamic shared memory above the per-CTA limit.
    SharedMemoryTooLarge {
        /// Bytes needed.
        bytes: u32,
        /// Limit.
        max: u32,
    },
    /// The kernel needs more local memory per thread than the context set up.
    LocalMemoryTooSmall {
        /// Bytes per thread needed.
        needed: u32,
        /// Bytes per thread configured.
        configured: u32,
    },
    /// Parameter bytes do not match the kernel's parameter block.
    ParamSizeMismatch {
        /// Bytes given.
        given: usize,
        /// Bytes the kernel takes.
        expected: u32,
    },
    /// The architecture has no known constant-bank layout or limits.
    UnsupportedSm(u32),
    /// A section the kernel needs is not in the image.
    SectionNotLoaded,
    /// A QMD field could not hold a value.
    Qmd(QmdError),
}

impl From<QmdError> for LaunchError {
    fn from(e: QmdError) -> Self {
        Self::Qmd(e)
    }
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const AXES: [&str; 3] = ["x", "y", "z"];
        match *self {
            Self::ZeroDimension => write!(f, "grid and block dimensions must all be at least 1"),
            Self::BlockTooLarge { axis, value, max } => write!(
                f,
                "block {} = {value} exceeds the limit {max}; use smaller blocks",
                AXES[axis]
            ),
            Self::GridTooLarge { axis, value, max } => write!(
                f,
                "grid {} = {value} exceeds the limit {max}; split the launch",
                AXES[axis]
            ),
            Self::TooManyThreads {
                threads,
                max,
                registers,
            } => write!(
                f,
                "{threads} threads per block exceed the {max} this kernel can run ({registers} registers per thread); use smaller blocks or compile with fewer registers"
            ),
            Self::BlockViolatesKernelBounds { threads } => write!(
                f,
                "a block of {threads} threads violates the kernel's __launch_bounds__/reqntid; launch the block shape it was compiled for"
            ),
            Self::SharedMemoryTooLarge { bytes, max } => write!(
                f,
                "{bytes} bytes of shared memory per block exceed the limit {max}; use less dynamic shared memory"
            ),
            Self::LocalMemoryTooSmall { needed, configured } => write!(
                f,
                "kernel needs {needed} bytes of local memory per thread, the context has {configured}; grow the local memory (compute::set_local_memory) first"
            ),
            Self::ParamSizeMismatch { given, expected } => write!(
                f,
                "{given} bytes of parameters given, the kernel takes {expected}; pack the arguments as the kernel's C signature lays them out"
            ),
            Self::UnsupportedSm(sm) => write!(f, "sm_{sm} is not supported (sm_80..sm_120 are)"),
            Self::SectionNotLoaded => write!(
                f,
                "the kernel's code or constant bank is not in the module image; build the image with Cubin::load_image"
            ),
            Self::Qmd(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for LaunchError {}

/// What one compute context (channel + compute object) was set up with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComputeContext {
    /// QMD layout of the compute class.
    pub qmd_version: QmdVersion,
    /// SM version of the GPU (90 for H100/H200).
    pub sm: u32,
    /// Shared window base given to `compute::setup`.
    pub shared_window: u64,
    /// Local window base given to `compute::setup`.
    pub local_window: u64,
    /// Local memory per thread the backing store was sized for (0: none).
    pub local_memory_per_thread: u32,
}

/// Grid, block and dynamic shared memory of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// CTAs per axis.
    pub grid: [u32; 3],
    /// Threads per CTA per axis.
    pub block: [u32; 3],
    /// Dynamic shared memory bytes.
    pub dynamic_shared: u32,
}

/// The bytes of one launch, ready to be written to GPU memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparedLaunch {
    /// The QMD (write [`Qmd::to_bytes`] at a 256-byte aligned address).
    pub qmd: Qmd,
    /// Constant bank 0 (write at the `cbuf0_va` given to [`prepare`]).
    pub cbuf0: Vec<u8>,
}

/// Local memory per thread a kernel needs: its stack plus the reserve above [`STACK_TOP`]
/// (0 for kernels without a stack).
pub fn local_memory_needed(kernel: &Kernel<'_>) -> u32 {
    let stack = kernel
        .min_stack_size
        .max(kernel.frame_size)
        .max(kernel.max_stack_size);
    if stack == 0 {
        0
    } else {
        // Attributes come from the cubin: saturate rather than overflow on absurd values.
        stack
            .saturating_add(STACK_RESERVE)
            .checked_next_multiple_of(32)
            .unwrap_or(u32::MAX)
    }
}

/// Checks `cfg` against `limits` and the kernel's resources.
pub fn check_limits(
    limits: &LaunchLimits,
    kernel: &Kernel<'_>,
    cfg: &LaunchConfig,
) -> Result<u32, LaunchError> {
    if cfg.grid.contains(&0) || cfg.block.contains(&0) {
        return Err(LaunchError::ZeroDimension);
    }
    for axis in 0..3 {
        if cfg.block[axis] > limits.max_block[axis] {
            return Err(LaunchError::BlockTooLarge {
                axis,
                value: cfg.block[axis],
                max: limits.max_block[axis],
            });
        }
        if cfg.grid[axis] > limits.max_grid[axis] {
            return Err(LaunchError::GridTooLarge {
                axis,
                value: cfg.grid[axis],
                max: limits.max_grid[axis],
            });
        }
    }
    let threads = cfg.block[0] as u64 * cfg.block[1] as u64 * cfg.block[2] as u64;
    // Registers are allocated per warp in 256-register units, warps in groups of 4.
    let regs = kernel.registers.max(1);
    let per_warp = (regs as u64 * 32).next_multiple_of(256);
    let by_regs = (limits.registers_per_sm as u64 / per_warp) / 4 * 4 * 32;
    let max = by_regs.min(limits.max_threads_per_block as u64) as u32;
    if regs > limits.max_registers_per_thread || threads > max as u64 {
        return Err(LaunchError::TooManyThreads {
            threads: threads.min(u32::MAX as u64) as u32,
            max,
            registers: regs,
        });
    }
    let threads = threads as u32;
    if kernel
        .max_threads
        .is_some_and(|m| threads as u64 > m[0] as u64 * m[1] as u64 * m[2] as u64)
        || kernel.required_block.is_some_and(|r| r != cfg.block)
    {
        return Err(LaunchError::BlockViolatesKernelBounds { threads });
    }
    Ok(threads)
}

fn shared_bytes(sm: u32, kernel: &Kernel<'_>, dynamic: u32) -> u32 {
    if sm < 80 {
        // Compute capability 7.x reserves no shared memory per block (the CUDA guide's
        // "shared memory reserved by CUDA driver per thread block": 0 KB on 7.x, 1 KB from
        // 8.0); nvcc's sm_75 code places user shared data from 0.
        kernel.shared_size.saturating_add(dynamic)
    } else if sm >= 90 {
        kernel
            .shared_size
            .max(RESERVED_SHARED)
            .saturating_add(dynamic)
    } else {
        // As tinygrad's driver sizes it on Ampere: the static size plus the reserved 1 KiB.
        kernel
            .shared_size
            .saturating_add(dynamic)
            .saturating_add(RESERVED_SHARED)
    }
}

/// Shared memory per CTA for `kernel` with `dynamic` bytes of dynamic shared memory on `sm`,
/// checked against the per-block limit: the bytes the QMD is given (the reserved 1 KiB
/// included on every architecture: inside the sm_90+ section, added on sm_8x; the limit is on
/// what the kernel itself uses).
pub fn check_shared_memory(
    limits: &LaunchLimits,
    sm: u32,
    kernel: &Kernel<'_>,
    dynamic: u32,
) -> Result<u32, LaunchError> {
    let smem = shared_bytes(sm, kernel, dynamic);
    let user = if sm < 80 {
        smem
    } else {
        smem.saturating_sub(RESERVED_SHARED)
    };
    if user > limits.max_shared_per_block {
        return Err(LaunchError::SharedMemoryTooLarge {
            bytes: user,
            max: limits.max_shared_per_block,
        });
    }
    Ok(smem)
}

/// Builds constant bank 0 and the QMD of one launch. `image` must come from the kernel's cubin
/// (`Cubin::load_image`); `cbuf0_va` is where the caller will write [`PreparedLaunch::cbuf0`]
/// (256-byte aligned).
pub fn prepare(
    ctx: &ComputeContext,
    image: &ModuleImage,
    kernel: &Kernel<'_>,
    cfg: &LaunchConfig,
    params: &[u8],
    cbuf0_va: u64,
) -> Result<PreparedLaunch, LaunchError> {
    let limits = LaunchLimits::for_sm(ctx.sm).ok_or(LaunchError::UnsupportedSm(ctx.sm))?;
    let slots = Cbuf0Slots::for_sm(ctx.sm).ok_or(LaunchError::UnsupportedSm(ctx.sm))?;
    check_limits(&limits, kernel, cfg)?;
    let smem = check_shared_memory(&limits, ctx.sm, kernel, cfg.dynamic_shared)?;
    let needed = local_memory_needed(kernel);
    if needed > ctx.local_memory_per_thread {
        return Err(LaunchError::LocalMemoryTooSmall {
            needed,
            configured: ctx.local_memory_per_thread,
        });
    }
    if params.len() != kernel.param_size as usize {
        return Err(LaunchError::ParamSizeMismatch {
            given: params.len(),
            expected: kernel.param_size,
        });
    }

    // Constant bank 0: driver slots, then the parameters where the compiler put them.
    let size = cbuf0_size(&slots, kernel);
    let mut cbuf0 = vec![0u8; size.next_multiple_of(16) as usize];
    let mut put = |off: u32, bytes: &[u8]| {
        cbuf0[off as usize..off as usize + bytes.len()].copy_from_slice(bytes)
    };
    for i in 0..3 {
        put(slots.block_dim + 4 * i as u32, &cfg.block[i].to_le_bytes());
        put(slots.grid_dim + 4 * i as u32, &cfg.grid[i].to_le_bytes());
    }
    put(slots.shared_window, &ctx.shared_window.to_le_bytes());
    put(slots.local_window, &ctx.local_window.to_le_bytes());
    put(slots.stack_top, &STACK_TOP.to_le_bytes());
    put(kernel.param_offset, params);

    let program_va = image
        .section_va(kernel.text_section)
        .ok_or(LaunchError::SectionNotLoaded)?;
    let mut constant_buffers = vec![ConstantBuffer {
        index: 0,
        va: cbuf0_va,
        size: cbuf0.len() as u32,
    }];
    for b in &kernel.constant_banks {
        let va = image
            .section_va(b.section)
            .ok_or(LaunchError::SectionNotLoaded)?;
        constant_buffers.push(ConstantBuffer {
            index: b.bank,
            va,
            size: b.size.min(u32::MAX as u64) as u32,
        });
    }
    let kib = smem.div_ceil(1024);
    let target = limits
        .carveouts_kib
        .iter()
        .copied()
        .find(|&c| c >= kib)
        .unwrap_or(kib);
    let max = limits.carveouts_kib.last().copied().unwrap_or(target);
    let qmd = Qmd::build(
        ctx.qmd_version,
        &QmdParams {
            program_va,
            program_size: kernel.code_size,
            register_count: kernel.registers,
            barrier_count: kernel.barriers.max(1),
            grid: cfg.grid,
            block: cfg.block,
            shared_memory_bytes: smem,
            shared_config: SharedMemoryConfig {
                min_kib: target,
                target_kib: target,
                max_kib: max,
            },
            local_memory_bytes: ctx.local_memory_per_thread,
            constant_buffers,
            sass_version: (((ctx.sm / 10) << 4) | (ctx.sm % 10)) as u8,
        },
    )?;
    Ok(PreparedLaunch { qmd, cbuf0 })
}
