//! Semaphore memory operations every engine performs the same way: releases of a 32- or
//! 64-bit payload, with or without the GPU timer beside it, optionally as a reduction, and
//! the acquire comparisons of the host (`NVC56F_SEM_EXECUTE`, clc56f.h).
//!
//! Layout of a release with a timestamp (a "four-word" semaphore): the payload at +0 (4 or
//! 8 bytes) and the 64-bit GPU timer at +8 (clc56f.h `RELEASE_TIMESTAMP`, clc8b5.h
//! `RELEASE_FOUR_WORD_SEMAPHORE`, clcbc0qmd.h `RELEASE_STRUCTURE_SIZE_SEMAPHORE_FOUR_WORDS`).

use crate::device::Cx;
use crate::units::mmu::{self, MemError, Requester};

/// An atomic operation a release can apply instead of a plain write. Each engine encodes
/// them differently; callers map their field to this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Exclusive or.
    Xor,
    /// And.
    And,
    /// Or.
    Or,
    /// Add.
    Add,
    /// Wrapping increment: `old >= payload ? 0 : old + 1`.
    Inc,
    /// Wrapping decrement: `old == 0 || old > payload ? payload : old - 1`.
    Dec,
}

impl Reduction {
    /// The host's and the copy engine's encoding (`NVC56F_SEM_EXECUTE_REDUCTION`,
    /// `NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION`: IMIN 0 … DEC 7; the copy engine's float
    /// reductions 0xa..=0xc are not modeled).
    pub fn from_host(v: u32) -> Option<Reduction> {
        Some(match v {
            0 => Reduction::Min,
            1 => Reduction::Max,
            2 => Reduction::Xor,
            3 => Reduction::And,
            4 => Reduction::Or,
            5 => Reduction::Add,
            6 => Reduction::Inc,
            7 => Reduction::Dec,
            _ => return None,
        })
    }

    /// The compute engine's encoding (`RED_ADD` 0 … `RED_XOR` 7 in clcbc0.h / clcbc0qmd.h).
    pub fn from_compute(v: u32) -> Option<Reduction> {
        Some(match v {
            0 => Reduction::Add,
            1 => Reduction::Min,
            2 => Reduction::Max,
            3 => Reduction::Inc,
            4 => Reduction::Dec,
            5 => Reduction::And,
            6 => Reduction::Or,
            7 => Reduction::Xor,
            _ => return None,
        })
    }

    /// `old` combined with `v` in a `bits`-wide unsigned (or, for min/max, `signed`) word.
    fn apply(self, old: u64, v: u64, bits: u32, signed: bool) -> u64 {
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        };
        let (old, v) = (old & mask, v & mask);
        let sext = |x: u64| {
            let shift = 64 - bits;
            // CAST: reinterpreting the bits as signed, on purpose.
            ((x << shift) as i64) >> shift
        };
        let r = match self {
            Reduction::Min if signed => {
                if sext(old) <= sext(v) {
                    old
                } else {
                    v
                }
            }
            Reduction::Max if signed => {
                if sext(old) >= sext(v) {
                    old
                } else {
                    v
                }
            }
            Reduction::Min => old.min(v),
            Reduction::Max => old.max(v),
            Reduction::Xor => old ^ v,
            Reduction::And => old & v,
            Reduction::Or => old | v,
            Reduction::Add => old.wrapping_add(v),
            Reduction::Inc => {
                if old >= v {
                    0
                } else {
                    old + 1
                }
            }
            Reduction::Dec => {
                if old == 0 || old > v {
                    v
                } else {
                    old - 1
                }
            }
        };
        r & mask
    }
}

/// One release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Release {
    /// Address.
    pub va: u64,
    /// Payload.
    pub payload: u64,
    /// 64-bit payload (else 32-bit).
    pub payload64: bool,
    /// Write the GPU timer at `va + 8`.
    pub timestamp: bool,
    /// Combine with memory instead of writing.
    pub reduction: Option<(Reduction, bool)>,
}

/// Performs `r` for `who`.
///
/// The timestamp is written before the payload: software polls the payload as the sign that
/// the work is done and reads the timestamp after it (a four-word semaphore is one report to
/// the GPU), so whoever sees the payload must see its timestamp too. The other way round, a
/// reader on another thread could see the payload and a timestamp not yet written.
pub fn release(cx: &mut Cx, who: &Requester, r: &Release) -> Result<(), MemError> {
    let bytes = if r.payload64 { 8 } else { 4 };
    let mut value = r.payload;
    if let Some((op, signed)) = r.reduction {
        let old = read_payload(cx, who, r.va, r.payload64)?;
        value = op.apply(old, r.payload, bytes * 8, signed);
    }
    if r.timestamp {
        // A payload that cannot be written faults at its own address, timestamp or not.
        mmu::translate(cx, who, r.va, crate::memory::Access::Write)?;
        mmu::write(cx, who, r.va.wrapping_add(8), &cx.now_ns.to_le_bytes())?;
        // The timestamp's stores are visible before the payload's to a reader that
        // synchronises on the payload.
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
    }
    // CAST: the low `bytes` bytes of the payload.
    mmu::write(cx, who, r.va, &value.to_le_bytes()[..bytes as usize])?;
    cx.world.engines.semaphore_releases += 1;
    Ok(())
}

/// Reads a semaphore's payload.
pub fn read_payload(
    cx: &mut Cx,
    who: &Requester,
    va: u64,
    payload64: bool,
) -> Result<u64, MemError> {
    if payload64 {
        mmu::read_u64(cx, who, va)
    } else {
        mmu::read_u32(cx, who, va).map(u64::from)
    }
}

/// The host's acquire conditions (`NVC56F_SEM_EXECUTE_OPERATION`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// `ACQUIRE`: memory == value.
    Equal,
    /// `ACQ_STRICT_GEQ`: memory >= value, unsigned.
    StrictGeq,
    /// `ACQ_CIRC_GEQ`: memory - value >= 0 in wrapping (signed) arithmetic.
    CircGeq,
    /// `ACQ_AND`: memory & value != 0.
    And,
    /// `ACQ_NOR`: !(memory | value) != 0.
    Nor,
}

impl Acquire {
    /// Whether `mem` satisfies the condition against `value` in a 32- or 64-bit word.
    pub fn satisfied(self, mem: u64, value: u64, payload64: bool) -> bool {
        let mask = if payload64 {
            u64::MAX
        } else {
            u64::from(u32::MAX)
        };
        let (mem, value) = (mem & mask, value & mask);
        match self {
            Acquire::Equal => mem == value,
            Acquire::StrictGeq => mem >= value,
            Acquire::CircGeq => {
                let d = mem.wrapping_sub(value) & mask;
                // The sign bit of the word-wide difference.
                let sign = if payload64 { 1 << 63 } else { 1 << 31 };
                d & sign == 0
            }
            Acquire::And => mem & value != 0,
            Acquire::Nor => !(mem | value) & mask != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquire_conditions_follow_the_host_class() {
        assert!(Acquire::CircGeq.satisfied(5, 5, true));
        assert!(
            Acquire::CircGeq.satisfied(1, u64::MAX, true),
            "wrapped past"
        );
        assert!(!Acquire::CircGeq.satisfied(4, 5, true));
        assert!(
            Acquire::CircGeq.satisfied(2, 0xffff_fff0, false),
            "32-bit wrap"
        );
        assert!(!Acquire::StrictGeq.satisfied(2, 0xffff_fff0, false));
        assert!(
            Acquire::Equal.satisfied(0x1_0000_0007, 7, false),
            "upper half ignored"
        );
        assert!(Acquire::And.satisfied(0b110, 0b010, false));
        assert!(!Acquire::Nor.satisfied(0xffff_fff0, 0xf, false));
        assert!(Acquire::Nor.satisfied(0xffff_ff00, 0xf, false));
    }

    #[test]
    fn reductions() {
        assert_eq!(Reduction::Add.apply(u64::from(u32::MAX), 2, 32, false), 1);
        assert_eq!(Reduction::Min.apply(0xffff_ffff, 1, 32, true), 0xffff_ffff);
        assert_eq!(Reduction::Min.apply(0xffff_ffff, 1, 32, false), 1);
        assert_eq!(Reduction::Inc.apply(5, 5, 32, false), 0);
        assert_eq!(Reduction::Inc.apply(4, 5, 32, false), 5);
        assert_eq!(Reduction::Dec.apply(0, 9, 64, false), 9);
        assert_eq!(Reduction::Dec.apply(3, 9, 64, false), 2);
        assert_eq!(Reduction::from_compute(0), Some(Reduction::Add));
        assert_eq!(Reduction::from_host(0), Some(Reduction::Min));
        assert_eq!(Reduction::from_host(0xa), None);
    }
}
