//! The compute engine: grid launches from QMDs (`SEND_PCAS_A` + `SEND_SIGNALING_PCAS2_B`,
//! clcbc0.h / clcec0.h), their release semaphores, and the engine's report semaphore.
//!
//! A launch reads the QMD through the channel's MMU, decodes it with [`crate::decode::qmd`]
//! (version 4 for HOPPER_COMPUTE_A, 5 for BLACKWELL_COMPUTE_B), and checks it against the
//! chip ([`limits`]): QMD type GRID_CTA, grid and block dimensions, registers, barriers, the
//! shared-memory carveout, constant buffers valid and mapped, the program mapped.
//!
//! SASS is not executed. The program's code is read through the MMU up to the branch-to-self
//! that ends every kernel nvcc emits; the committed test kernels are recognised by the hash
//! of that code and run by a native model ([`kernels`]) that reads its parameters from
//! constant bank 0 and its data through the MMU. Any other kernel completes (its releases are
//! written) and the simulator says plainly that it did not run it: a warning in its log and
//! `EngineCounters::kernels_not_executed`.

pub mod kernels;
pub mod known;
pub mod limits;

use crate::decode::qmd::{self, QmdInfo};
use crate::device::Cx;
use crate::units::fifo::Stop;
use crate::units::fifo::semaphore::{self, Reduction, Release};
use crate::units::mmu::{self, Requester};

/// State the channel's compute methods set (clcbc0.h `SET_SHADER_*`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ComputeState {
    /// `SET_SHADER_SHARED_MEMORY_WINDOW_A/B`.
    pub shared_window: Option<u64>,
    /// `SET_SHADER_LOCAL_MEMORY_WINDOW_A/B`.
    pub local_window: Option<u64>,
    /// `SET_SHADER_LOCAL_MEMORY_A/B`: the local-memory backing store.
    pub local_memory: Option<u64>,
    /// `SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A/B`: bytes per TPC.
    pub local_memory_per_tpc: u64,
}

/// `SEND_SIGNALING_PCAS2_B_PCAS_ACTION` values that schedule the grid: SCHEDULE,
/// INVALIDATE_COPY_SCHEDULE, PREFETCH_SCHEDULE, INVALIDATE_PREFETCH_COPY_SCHEDULE,
/// INVALIDATE_PREFETCH_COPY_FORCE_REQUIRE_SCHEDULING.
const SCHEDULING: [u32; 5] = [0x2, 0x3, 0x9, 0xa, 0xb];
/// Actions that only touch caches or prefetch: NOP, INVALIDATE, PREFETCH.
const NOT_SCHEDULING: [u32; 3] = [0x0, 0x1, 0x8];
/// Dependent QMDs followed from one launch at most (a chain longer than this is a loop).
const MAX_CHAIN: u32 = 1 << 16;
/// Bytes of the QMD_TYPE field's QMD: bits 25:23 in V04 (clcbc0qmd.h), 153:151 in V05
/// (clcec0qmd.h); GRID_CTA = 2.
const QMD_TYPE_GRID_CTA: u64 = 2;

/// `REPORT_SEMAPHORE_EXECUTE` fields (clcbc0.h): OPERATION 1:0 (RELEASE 0), STRUCTURE_SIZE
/// 4:3 (FOUR_WORDS 0, ONE_WORD 1, TWO_WORDS 2), REDUCTION_ENABLE 6, REDUCTION_OP 9:7,
/// REDUCTION_FORMAT 11:10 (UNSIGNED 0, SIGNED 1).
const REPORT_OP_RELEASE: u32 = 0;

fn bits(q: &[u8], hi: u32, lo: u32) -> u64 {
    (lo..=hi).fold(0, |v, b| {
        let byte = q.get((b / 8) as usize).copied().unwrap_or(0);
        v | (u64::from(byte >> (b % 8) & 1) << (b - lo))
    })
}

/// Launches the QMD at `qmd_va` (and the QMDs it chains) for `who`, whose compute object is
/// of `class`.
pub fn launch(
    cx: &mut Cx,
    who: &Requester,
    class: u32,
    qmd_va: u64,
    action: u32,
    state: &ComputeState,
) -> Result<(), Stop> {
    if NOT_SCHEDULING.contains(&action) {
        return Ok(());
    }
    if !SCHEDULING.contains(&action) {
        return Err(Stop::Invalid(format!(
            "SEND_SIGNALING_PCAS2_B PCAS_ACTION {action:#x} is not modeled (only the actions \
             that schedule a grid, and NOP/INVALIDATE/PREFETCH)"
        )));
    }
    let Some(lim) = limits::of(cx.spec) else {
        return Err(Stop::Invalid(format!(
            "the simulator models no compute engine for {}",
            cx.spec.name
        )));
    };
    let major = qmd::major_for_class(class).filter(|&m| m == lim.qmd_major);
    let Some(major) = major else {
        return Err(Stop::Invalid(format!(
            "compute class {class:#06x} does not launch QMD version {} ({} on {})",
            lim.qmd_major, lim.sm, cx.spec.name
        )));
    };
    let mut va = qmd_va;
    for _ in 0..MAX_CHAIN {
        let (q, raw) = run_one(cx, who, major, va, &lim, state)?;
        let Some(next) = q.dependent else {
            return Ok(());
        };
        if major == 2 {
            // V02_03 (clc5c0qmd.h) has no action: DEPENDENT_QMD_SCHEDULE_ENABLE schedules the
            // dependent, DEPENDENT_QMD_TYPE (142) says what it is, GRID 1 or QUEUE 0.
            let kind = bits(&raw, 142, 142);
            if kind != 1 {
                return Err(Stop::Invalid(format!(
                    "QMD at {va:#x}: DEPENDENT_QMD_TYPE QUEUE (only GRID dependents are modeled)"
                )));
            }
            va = next;
            continue;
        }
        // DEPENDENT_QMD0_ACTION: 371:369 in V04 (clcbc0qmd.h), 339:337 in V05 (clcec0qmd.h);
        // QMD_SCHEDULE 1 and QMD_INVALIDATE_COPY_SCHEDULE 3 launch the next QMD.
        let action = if major == 5 {
            bits(&raw, 339, 337)
        } else {
            bits(&raw, 371, 369)
        };
        if !matches!(action, 1 | 3) {
            return Err(Stop::Invalid(format!(
                "QMD at {va:#x}: DEPENDENT_QMD0_ACTION {action} (only QMD_SCHEDULE and \
                 QMD_INVALIDATE_COPY_SCHEDULE are modeled)"
            )));
        }
        va = next;
    }
    Err(Stop::Invalid(format!(
        "QMD {qmd_va:#x} chains more than {MAX_CHAIN} dependent QMDs (a loop?)"
    )))
}

/// Runs one QMD: read, check, run (or report not run), release.
fn run_one(
    cx: &mut Cx,
    who: &Requester,
    major: u32,
    qmd_va: u64,
    lim: &limits::ComputeLimits,
    state: &ComputeState,
) -> Result<(QmdInfo, Vec<u8>), Stop> {
    let table = qmd::table(major).ok_or_else(|| Stop::Invalid(format!("QMD v{major}")))?;
    let mut raw = vec![0u8; table.size];
    mmu::read(cx, who, qmd_va, &mut raw).map_err(Stop::Mem)?;
    let bad = |why: String| Stop::Invalid(format!("QMD at {qmd_va:#x}: {why}"));
    let q = qmd::decode_qmd(&raw, major).map_err(|e| bad(e.to_string()))?;
    // V03_00 (Ampere, Ada) and V02_03 (Turing) have no QMD_TYPE: clc6c0qmd.h and clc5c0qmd.h
    // define none and every such launch is a plain grid (V02_03's IS_QUEUE, bit 136, asks for
    // a queue instead, checked below).
    let qmd_type = match major {
        5 => bits(&raw, 153, 151),
        4 => bits(&raw, 25, 23),
        _ => QMD_TYPE_GRID_CTA,
    };
    if qmd_type != QMD_TYPE_GRID_CTA {
        return Err(bad(format!(
            "QMD_TYPE {qmd_type} is not GRID_CTA (2); cluster launches are not modeled"
        )));
    }
    // V02_03 IS_QUEUE (clc5c0qmd.h MW(136:136)): a queue QMD, not a grid.
    if major == 2 && bits(&raw, 136, 136) != 0 {
        return Err(bad("IS_QUEUE is set; queue QMDs are not modeled".into()));
    }
    limits::check(&q, lim).map_err(bad)?;
    if q.local_memory.iter().any(|&b| b > 0) && state.local_memory.is_none() {
        return Err(bad(format!(
            "the kernel uses {} bytes of local memory per thread but the channel set no \
             local-memory backing store (SET_SHADER_LOCAL_MEMORY_A/B)",
            q.local_memory[0].max(q.local_memory[1])
        )));
    }
    for cb in &q.cbufs {
        // Both ends of each constant buffer must be mapped (an unmapped one faults here).
        mmu::translate(cx, who, cb.va, crate::memory::Access::Read).map_err(Stop::Mem)?;
        mmu::translate(
            cx,
            who,
            cb.va + u64::from(cb.size) - 1,
            crate::memory::Access::Read,
        )
        .map_err(Stop::Mem)?;
    }
    cx.world.engines.launches += 1;
    let code = kernels::read_code(cx, who, q.program_va).map_err(Stop::Mem)?;
    let known = code.as_deref().and_then(|c| kernels::recognise(c, lim.sm));
    let ran = match known {
        Some(k) => kernels::run(cx, who, k, &q, lim)?,
        None => false,
    };
    match (known, ran) {
        (Some(k), true) => {
            cx.log.debug(
                "compute",
                format!(
                    "grid {:?} x block {:?}: {} ({}), run by its native model",
                    q.grid, q.block, k.name, lim.sm
                ),
            );
            cx.world.engines.kernels_modeled += 1;
        }
        (Some(k), false) => {
            cx.world.engines.kernels_not_executed += 1;
            cx.log.warn(
                "compute",
                format!(
                    "kernel {} at GPU VA {:#x} was NOT EXECUTED: its model does not cover a \
                     grid {:?} x block {:?} launch; the grid completes without its effects",
                    k.name, q.program_va, q.grid, q.block
                ),
            );
        }
        (None, _) => {
            cx.world.engines.kernels_not_executed += 1;
            let what = match &code {
                Some(c) => format!(
                    "{} bytes of code with hash {:#018x}",
                    c.len(),
                    kernels::code_hash(c)
                ),
                None => "code with no end the simulator can find".into(),
            };
            cx.log.warn(
                "compute",
                format!(
                    "kernel at GPU VA {:#x} ({what}) was NOT EXECUTED: the simulator runs only \
                     the committed test kernels; the grid completes without its effects",
                    q.program_va
                ),
            );
        }
    }
    // The grid's completion membar (the CWD's L1 + sysmembar per CTA) reads the sysmem flush
    // buffer before any release: a fault stops the channel.
    if !q.releases.is_empty() {
        crate::units::flush::membar(cx, "a QMD's completion membar").map_err(Stop::Invalid)?;
    }
    qmd_releases(cx, who, &raw, table, &q)?;
    Ok((q, raw))
}

/// Writes the QMD's enabled release semaphores.
fn qmd_releases(
    cx: &mut Cx,
    who: &Requester,
    raw: &[u8],
    table: &qmd::Table,
    q: &QmdInfo,
) -> Result<(), Stop> {
    if !table.releases32.is_empty() {
        return qmd_releases32(cx, who, raw, table, q);
    }
    // Only the enabled slots are in `q.releases`, in slot order.
    let enabled = table
        .releases
        .iter()
        .filter(|r| bits(raw, r[0].hi, r[0].lo) != 0);
    for (slot, rel) in enabled.zip(&q.releases) {
        // RELEASE_STRUCTURE_SIZE(i) is the two bits above RELEASE_ENABLE(i), REDUCTION_ENABLE
        // the fourth, REDUCTION_OP the three above it, REDUCTION_FORMAT the two above that.
        let e = slot[0].lo;
        let size = bits(raw, e + 2, e + 1);
        let reduction = if bits(raw, e + 4, e + 4) != 0 {
            // CAST: a 3-bit field.
            let op = bits(raw, e + 7, e + 5) as u32;
            let r = Reduction::from_compute(op)
                .ok_or_else(|| Stop::Invalid(format!("QMD release reduction {op}")))?;
            Some((r, bits(raw, e + 9, e + 8) == 1))
        } else {
            None
        };
        let (payload64, timestamp) = match size {
            0 => (rel.payload64, true),
            1 => (false, false),
            2 => (true, false),
            s => {
                return Err(Stop::Invalid(format!(
                    "QMD release structure size {s} is not defined"
                )));
            }
        };
        let r = Release {
            va: rel.va,
            payload: rel.payload,
            payload64,
            timestamp,
            reduction,
        };
        semaphore::release(cx, who, &r).map_err(Stop::Mem)?;
    }
    Ok(())
}

/// Writes a V02_03 QMD's enabled releases (`clc5c0qmd.h`): 32-bit payloads, FOUR_WORDS (payload
/// and timestamp) or ONE_WORD, optionally reduced.
fn qmd_releases32(
    cx: &mut Cx,
    who: &Requester,
    raw: &[u8],
    table: &qmd::Table,
    q: &QmdInfo,
) -> Result<(), Stop> {
    let enabled = table
        .releases32
        .iter()
        .filter(|r| bits(raw, r.enable.hi, r.enable.lo) != 0);
    for (slot, rel) in enabled.zip(&q.releases) {
        let f = |b: qmd::Bits| bits(raw, b.hi, b.lo);
        let reduction = if f(slot.reduction_enable) != 0 {
            // CAST: a 3-bit field.
            let op = f(slot.reduction_op) as u32;
            let r = Reduction::from_compute(op)
                .ok_or_else(|| Stop::Invalid(format!("QMD release reduction {op}")))?;
            Some((r, f(slot.reduction_format) == 1))
        } else {
            None
        };
        let r = Release {
            va: rel.va,
            payload: rel.payload,
            payload64: false,
            // STRUCTURE_SIZE FOUR_WORDS 0 (payload, then the timestamp at +8), ONE_WORD 1.
            timestamp: f(slot.structure_size) == 0,
            reduction,
        };
        semaphore::release(cx, who, &r).map_err(Stop::Mem)?;
    }
    Ok(())
}

/// The compute engine's `REPORT_SEMAPHORE_EXECUTE` (`raw` is its value).
pub fn report_semaphore(
    cx: &mut Cx,
    who: &Requester,
    va: u64,
    value: u64,
    payload64: bool,
    raw: u32,
) -> Result<(), Stop> {
    if raw & 3 != REPORT_OP_RELEASE {
        return Err(Stop::Invalid(format!(
            "REPORT_SEMAPHORE_EXECUTE {raw:#x}: only OPERATION RELEASE is modeled"
        )));
    }
    let reduction = if raw & (1 << 6) != 0 {
        let op = raw >> 7 & 7;
        let r = Reduction::from_compute(op)
            .ok_or_else(|| Stop::Invalid(format!("report semaphore reduction {op}")))?;
        Some((r, raw >> 10 & 3 == 1))
    } else {
        None
    };
    let (payload64, timestamp) = match raw >> 3 & 3 {
        0 => (payload64, true),
        1 => (false, false),
        _ => (true, false),
    };
    let r = Release {
        va,
        payload: value,
        payload64,
        timestamp,
        reduction,
    };
    semaphore::release(cx, who, &r).map_err(Stop::Mem)
}
