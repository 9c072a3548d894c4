//! The copy engine: what a channel's `LAUNCH_DMA` asks of HOPPER_DMA_COPY_A (clc8b5.h) or
//! BLACKWELL_DMA_COPY_B (clcab5.h), the two classes' methods being the same for everything
//! here.
//!
//! Modeled: pitch-layout copies of one line (`LINE_LENGTH_IN` bytes from `OFFSET_IN` to
//! `OFFSET_OUT`) or, with `MULTI_LINE_ENABLE`, `LINE_COUNT` lines `PITCH_IN`/`PITCH_OUT`
//! apart; virtual addresses through the channel's MMU, or physical ones (`SRC_TYPE` /
//! `DST_TYPE` PHYSICAL) in the aperture `SET_SRC_PHYS_MODE` / `SET_DST_PHYS_MODE` name; the
//! semaphore release after the copy (one word, or four words with the GPU timer), 32- or
//! 64-bit, optionally as a reduction. Refused, halting the channel with the reason:
//! block-linear layouts, remapping (`REMAP_ENABLE`), secure and scrubbing copies, peer
//! apertures, the float reductions.
//!
//! Injected fault acted on here: `copy_engine_off` (copies never run and never complete: the
//! channel waits at the launch forever).

use crate::decode::Decoder;
use crate::device::Cx;
use crate::memory::Target;
use crate::units::fifo::semaphore::{self, Reduction, Release};
use crate::units::fifo::{Flow, Stop, Waiting};
use crate::units::mmu::{self, MemError, Requester};

/// `NVC8B5_LAUNCH_DMA`.
const LAUNCH_DMA: u32 = 0x300;
/// `NVC8B5_PITCH_IN`, `_PITCH_OUT`, `_LINE_COUNT`.
const PITCH_IN: u32 = 0x410;
const PITCH_OUT: u32 = 0x414;
const LINE_COUNT: u32 = 0x41c;
/// `NVC8B5_SET_SRC_PHYS_MODE`, `_SET_DST_PHYS_MODE`.
const SRC_PHYS_MODE: u32 = 0x260;
const DST_PHYS_MODE: u32 = 0x264;

/// `LAUNCH_DMA` fields (clc8b5.h).
mod launch {
    /// DATA_TRANSFER_TYPE 1:0 (NONE 0, PIPELINED 1, NON_PIPELINED 2; PREFETCH 3 on Blackwell).
    pub const TRANSFER: u32 = 0b11;
    /// FLUSH_ENABLE 2: flush the engine's writes (to system memory) before the semaphore.
    pub const FLUSH: u32 = 1 << 2;
    /// SEMAPHORE_TYPE 4:3.
    pub const SEMAPHORE_SHIFT: u32 = 3;
    /// SRC_MEMORY_LAYOUT 7 (PITCH = 1), DST_MEMORY_LAYOUT 8.
    pub const SRC_PITCH: u32 = 1 << 7;
    pub const DST_PITCH: u32 = 1 << 8;
    /// MULTI_LINE_ENABLE 9.
    pub const MULTI_LINE: u32 = 1 << 9;
    /// REMAP_ENABLE 10.
    pub const REMAP: u32 = 1 << 10;
    /// SRC_TYPE 12, DST_TYPE 13 (PHYSICAL = 1).
    pub const SRC_PHYSICAL: u32 = 1 << 12;
    pub const DST_PHYSICAL: u32 = 1 << 13;
    /// SEMAPHORE_REDUCTION 17:14, _SIGN 18 (UNSIGNED = 1), _ENABLE 19.
    pub const REDUCTION_SHIFT: u32 = 14;
    pub const REDUCTION_UNSIGNED: u32 = 1 << 18;
    pub const REDUCTION_ENABLE: u32 = 1 << 19;
    /// COPY_TYPE 21:20 (DEFAULT 0).
    pub const COPY_TYPE_SHIFT: u32 = 20;
    /// MEMORY_SCRUB_ENABLE 23.
    pub const SCRUB: u32 = 1 << 23;
}

/// Bytes moved per step of a copy (the bounce buffer's size).
const CHUNK: u64 = 4 << 20;

/// The copy engine's registers at a `LAUNCH_DMA`, beside what the decoder's operations carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyRegs {
    /// The `LAUNCH_DMA` value.
    pub launch: u32,
    /// `LINE_COUNT`.
    pub line_count: u32,
    /// `PITCH_IN`.
    pub pitch_in: u32,
    /// `PITCH_OUT`.
    pub pitch_out: u32,
    /// `SET_SRC_PHYS_MODE`.
    pub src_phys: u32,
    /// `SET_DST_PHYS_MODE`.
    pub dst_phys: u32,
}

impl CopyRegs {
    /// The registers of the copy object on `subchannel` now.
    pub fn capture(d: &Decoder, subchannel: u8) -> CopyRegs {
        CopyRegs {
            launch: d.register(subchannel, LAUNCH_DMA),
            line_count: d.register(subchannel, LINE_COUNT),
            pitch_in: d.register(subchannel, PITCH_IN),
            pitch_out: d.register(subchannel, PITCH_OUT),
            src_phys: d.register(subchannel, SRC_PHYS_MODE),
            dst_phys: d.register(subchannel, DST_PHYS_MODE),
        }
    }
}

/// How one side of a copy is addressed.
#[derive(Clone, Copy, Debug)]
enum Side {
    Virtual,
    Physical(fn(u64) -> Target),
}

fn side(physical: bool, phys_mode: u32, which: &str) -> Result<Side, Stop> {
    if !physical {
        return Ok(Side::Virtual);
    }
    // SET_*_PHYS_MODE_TARGET 1:0: LOCAL_FB 0, COHERENT_SYSMEM 1, NONCOHERENT_SYSMEM 2, PEERMEM 3.
    match phys_mode & 3 {
        0 => Ok(Side::Physical(Target::Vram)),
        1 | 2 => Ok(Side::Physical(Target::Bus)),
        _ => Err(Stop::Invalid(format!(
            "a physical {which} in peer memory (SET_{which}_PHYS_MODE PEERMEM) is not modeled"
        ))),
    }
}

fn read_side(cx: &mut Cx, who: &Requester, s: Side, at: u64, out: &mut [u8]) -> Result<(), Stop> {
    match s {
        Side::Virtual => mmu::read(cx, who, at, out).map_err(Stop::Mem),
        Side::Physical(t) => {
            mmu::dma_allowed(cx, at, t(at)).map_err(Stop::Mem)?;
            cx.bus
                .read(t(at), out)
                .map_err(|fault| Stop::Mem(MemError::Bus { va: at, fault }))
        }
    }
}

fn write_side(cx: &mut Cx, who: &Requester, s: Side, at: u64, data: &[u8]) -> Result<(), Stop> {
    match s {
        Side::Virtual => mmu::write(cx, who, at, data).map_err(Stop::Mem),
        Side::Physical(t) => {
            mmu::dma_allowed(cx, at, t(at)).map_err(Stop::Mem)?;
            cx.bus
                .write(t(at), data)
                .map_err(|fault| Stop::Mem(MemError::Bus { va: at, fault }))
        }
    }
}

/// Runs the data transfer of a `LAUNCH_DMA`: `len` bytes per line from `src` to `dst`.
pub fn copy(
    cx: &mut Cx,
    who: &Requester,
    src: u64,
    dst: u64,
    len: u32,
    regs: &CopyRegs,
) -> Result<Flow, Stop> {
    if cx.faults.copy_engine_off {
        return Ok(Flow::Wait(Waiting::Engine));
    }
    let l = regs.launch;
    let blackwell = cx.spec.pmc_boot_42 >> 24 & 0x3f >= 0x1a;
    match l & launch::TRANSFER {
        // PREFETCH (clcab5.h) moves nothing a driver can see.
        3 if blackwell => return Ok(Flow::Done),
        3 => {
            return Err(Stop::Invalid(
                "LAUNCH_DMA DATA_TRANSFER_TYPE 3 is not defined on Hopper (clc8b5.h)".into(),
            ));
        }
        _ => {}
    }
    let refuse = |what: &str| {
        Err(Stop::Invalid(format!(
            "LAUNCH_DMA {l:#x}: {what} copies are not modeled by the simulator"
        )))
    };
    if l & launch::SRC_PITCH == 0 || l & launch::DST_PITCH == 0 {
        return refuse("block-linear");
    }
    if l & launch::REMAP != 0 {
        return refuse("remapped (REMAP_ENABLE)");
    }
    if l & launch::SCRUB != 0 {
        return refuse("scrubbing (MEMORY_SCRUB_ENABLE)");
    }
    if l >> launch::COPY_TYPE_SHIFT & 3 != 0 {
        return refuse("secure or protected (COPY_TYPE)");
    }
    let s = side(l & launch::SRC_PHYSICAL != 0, regs.src_phys, "SRC")?;
    let d = side(l & launch::DST_PHYSICAL != 0, regs.dst_phys, "DST")?;
    let (lines, pitch_in, pitch_out) = if l & launch::MULTI_LINE != 0 {
        (
            regs.line_count,
            u64::from(regs.pitch_in),
            u64::from(regs.pitch_out),
        )
    } else {
        (1, 0, 0)
    };
    let len = u64::from(len);
    // CAST: bounded by CHUNK.
    let mut buf = vec![0u8; len.min(CHUNK) as usize];
    for line in 0..u64::from(lines) {
        // Addresses wrap as 64-bit sums; a wrapped one is beyond the VA space and faults.
        let (from, to) = (
            src.wrapping_add(line * pitch_in),
            dst.wrapping_add(line * pitch_out),
        );
        let mut done = 0;
        while done < len {
            // CAST: bounded by CHUNK.
            let n = (len - done).min(CHUNK) as usize;
            read_side(cx, who, s, from.wrapping_add(done), &mut buf[..n])?;
            write_side(cx, who, d, to.wrapping_add(done), &buf[..n])?;
            done += n as u64;
        }
    }
    if l & launch::FLUSH != 0 {
        cx.world.copies_unflushed.remove(&who.token);
    } else {
        cx.world.copies_unflushed.insert(who.token);
    }
    cx.world.engines.copies += 1;
    cx.world.engines.bytes_copied = cx
        .world
        .engines
        .bytes_copied
        .wrapping_add(len * u64::from(lines));
    Ok(Flow::Done)
}

/// Runs the semaphore release of a `LAUNCH_DMA` (after its copy).
pub fn release(
    cx: &mut Cx,
    who: &Requester,
    va: u64,
    value: u64,
    payload64: bool,
    timestamp: bool,
    regs: &CopyRegs,
) -> Result<Flow, Stop> {
    if cx.faults.copy_engine_off {
        return Ok(Flow::Wait(Waiting::Engine));
    }
    let l = regs.launch;
    // clc8b5.h FLUSH_ENABLE: without it the copies' writes to system memory need not be
    // visible when the semaphore says they are done (nvbare and tinygrad both set it).
    if l & launch::FLUSH != 0 {
        cx.world.copies_unflushed.remove(&who.token);
        // The flush is a system membar: it reads the sysmem flush buffer. A fault stops the
        // channel, as Xid 41 does on silicon (the second model's finding).
        crate::units::flush::membar(cx, "copy-engine flush before a semaphore release")
            .map_err(Stop::Invalid)?;
    } else if cx.world.copies_unflushed.remove(&who.token) {
        cx.log.warn(
            "ce",
            format!(
                "channel {:#x}: a copy-engine semaphore release (LAUNCH_DMA {l:#x}) follows \
                 copies without FLUSH_ENABLE: on hardware their writes to system memory may \
                 not be visible yet when the semaphore is",
                who.token
            ),
        );
    }
    if (payload64 || timestamp) && !va.is_multiple_of(8) {
        return Err(Stop::Invalid(format!(
            "copy-engine semaphore at {va:#x}: a 64-bit payload or a timestamp needs 8-byte \
             alignment"
        )));
    }
    let reduction = if l & launch::REDUCTION_ENABLE != 0 {
        let code = l >> launch::REDUCTION_SHIFT & 0xf;
        let Some(r) = Reduction::from_host(code) else {
            return Err(Stop::Invalid(format!(
                "LAUNCH_DMA {l:#x}: semaphore reduction {code:#x} (a float one, or invalid) is \
                 not modeled"
            )));
        };
        Some((r, l & launch::REDUCTION_UNSIGNED == 0))
    } else {
        None
    };
    debug_assert!(l >> launch::SEMAPHORE_SHIFT & 3 != 0);
    let r = Release {
        va,
        payload: value,
        payload64,
        timestamp,
        reduction,
    };
    semaphore::release(cx, who, &r).map_err(Stop::Mem)?;
    Ok(Flow::Done)
}
