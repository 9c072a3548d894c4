//! The copy engine (HOPPER_DMA_COPY_A 0xc8b5; methods match AMPERE_DMA_COPY_B 0xc7b5 and
//! BLACKWELL 0xc9b5/0xcab5 for what is used here): linear copies between GPU virtual addresses
//! and semaphore releases. TURING_DMA_COPY_A (0xc5b5) and AMPERE_DMA_COPY_A (0xc6b5) have the
//! same copy methods but only 32-bit semaphore payloads ([`has_64bit_semaphore`]).
//!
//! A linear copy is one "line" of `LINE_LENGTH_IN` bytes (a 32-bit count), so copies larger
//! than [`MAX_COPY_CHUNK`] are split into several launches.

use crate::push::{PushBuffer, PushError, Subchannel, check_address};

/// `NVC8B5_SET_SEMAPHORE_A` (upper address bits); `_B` (lower) and `_PAYLOAD` follow.
pub const SET_SEMAPHORE_A: u32 = 0x0240;
/// `NVC8B5_SET_SEMAPHORE_PAYLOAD_UPPER`.
pub const SET_SEMAPHORE_PAYLOAD_UPPER: u32 = 0x024c;
/// `NVC8B5_LAUNCH_DMA`.
pub const LAUNCH_DMA: u32 = 0x0300;
/// `NVC8B5_OFFSET_IN_UPPER`; `OFFSET_IN_LOWER`, `OFFSET_OUT_UPPER`, `OFFSET_OUT_LOWER` follow.
pub const OFFSET_IN_UPPER: u32 = 0x0400;
/// `NVC8B5_LINE_LENGTH_IN`.
pub const LINE_LENGTH_IN: u32 = 0x0418;

/// Fields of `LAUNCH_DMA`.
pub mod launch_dma {
    /// `DATA_TRANSFER_TYPE` 1:0 = `NON_PIPELINED` (2).
    pub const DATA_TRANSFER_NON_PIPELINED: u32 = 2;
    /// `DATA_TRANSFER_TYPE` 1:0 = `PIPELINED` (1).
    pub const DATA_TRANSFER_PIPELINED: u32 = 1;
    /// `FLUSH_ENABLE` bit 2.
    pub const FLUSH_ENABLE: u32 = 1 << 2;
    /// `SEMAPHORE_TYPE` 4:3 = `RELEASE_ONE_WORD_SEMAPHORE` (1).
    pub const SEMAPHORE_ONE_WORD: u32 = 1 << 3;
    /// `SEMAPHORE_TYPE` 4:3 = `RELEASE_FOUR_WORD_SEMAPHORE` (2): payload and timestamp.
    pub const SEMAPHORE_FOUR_WORD: u32 = 2 << 3;
    /// `SRC_MEMORY_LAYOUT` bit 7 = `PITCH`.
    pub const SRC_PITCH: u32 = 1 << 7;
    /// `DST_MEMORY_LAYOUT` bit 8 = `PITCH`.
    pub const DST_PITCH: u32 = 1 << 8;
    /// `SEMAPHORE_PAYLOAD_SIZE` bit 27 = `TWO_WORD` (64-bit payload).
    pub const SEMAPHORE_PAYLOAD_64BIT: u32 = 1 << 27;
}

/// Largest bytes per launch: 2 GiB, so `LINE_LENGTH_IN` never nears its 32-bit limit.
pub const MAX_COPY_CHUNK: u64 = 1 << 31;
/// Width of copy-engine virtual addresses (`OFFSET_*_UPPER` 24:0 + 32 low bits).
pub const COPY_VA_BITS: u32 = 57;

/// Appends methods copying `len` bytes from `src` to `dst` (GPU VAs), split into launches of at
/// most [`MAX_COPY_CHUNK`] bytes. `len == 0` appends nothing. Returns the number of launches.
pub fn copy_linear(pb: &mut PushBuffer, dst: u64, src: u64, len: u64) -> Result<u32, PushError> {
    check_address(src, 1, COPY_VA_BITS)?;
    check_address(dst, 1, COPY_VA_BITS)?;
    let too_wide = |va: u64| PushError::AddressTooWide {
        va,
        bits: COPY_VA_BITS,
    };
    let src_end = src.checked_add(len).ok_or(too_wide(src))?;
    let dst_end = dst.checked_add(len).ok_or(too_wide(dst))?;
    check_address(src_end.saturating_sub(1), 1, COPY_VA_BITS)?;
    check_address(dst_end.saturating_sub(1), 1, COPY_VA_BITS)?;
    let mut launches = 0;
    let mut off = 0u64;
    while off < len {
        let n = (len - off).min(MAX_COPY_CHUNK);
        let (s, d) = (src + off, dst + off);
        pb.method(
            Subchannel::COPY,
            OFFSET_IN_UPPER,
            &[(s >> 32) as u32, s as u32, (d >> 32) as u32, d as u32],
        )?;
        pb.method(Subchannel::COPY, LINE_LENGTH_IN, &[n as u32])?;
        pb.method(
            Subchannel::COPY,
            LAUNCH_DMA,
            &[launch_dma::DATA_TRANSFER_NON_PIPELINED
                | launch_dma::SRC_PITCH
                | launch_dma::DST_PITCH],
        )?;
        off += n;
        launches += 1;
    }
    Ok(launches)
}

/// Whether copy class `class` releases 64-bit semaphore payloads: `SET_SEMAPHORE_PAYLOAD_UPPER`
/// (0x24c) and `LAUNCH_DMA_SEMAPHORE_PAYLOAD_SIZE` (27:27) first appear in AMPERE_DMA_COPY_B
/// (`clc7b5.h`); TURING_DMA_COPY_A (`clc5b5.h`) and AMPERE_DMA_COPY_A (`clc6b5.h`) define
/// neither.
pub const fn has_64bit_semaphore(class: u32) -> bool {
    !matches!(class, 0xc5b5 | 0xc6b5)
}

/// [`release_semaphore`] for copy class `class`: on a class with 32-bit payloads only
/// ([`has_64bit_semaphore`]) a release of the 32-bit `value` (`SET_SEMAPHORE_A`, `_B`,
/// `_PAYLOAD`), or [`PushError::BadSize`] if `value` does not fit 32 bits.
pub fn release_semaphore_for(
    class: u32,
    pb: &mut PushBuffer,
    va: u64,
    value: u64,
    timestamp: bool,
) -> Result<(), PushError> {
    if has_64bit_semaphore(class) {
        return release_semaphore(pb, va, value, timestamp);
    }
    let payload = u32::try_from(value).map_err(|_| PushError::BadSize {
        what: "copy-engine semaphore payload (32 bits on this copy class)",
        value,
        max: u64::from(u32::MAX),
    })?;
    append_release(pb, va, &[payload], 0, timestamp)
}

/// Appends a copy-engine release of the 64-bit `value` to the semaphore at `va`, after the
/// engine's earlier copies, with a flush and (`timestamp`) the GPU timer at `va + 8`.
pub fn release_semaphore(
    pb: &mut PushBuffer,
    va: u64,
    value: u64,
    timestamp: bool,
) -> Result<(), PushError> {
    // CAST: the payload's two halves.
    append_release(
        pb,
        va,
        &[value as u32, (value >> 32) as u32],
        launch_dma::SEMAPHORE_PAYLOAD_64BIT,
        timestamp,
    )
}

/// `SET_SEMAPHORE_A..` (address, then the payload's one or two words) and the `LAUNCH_DMA`
/// that releases it with a flush; `width` is `SEMAPHORE_PAYLOAD_64BIT` for two words, else 0.
/// The semaphore is aligned to its payload (16 bytes with the timestamp).
fn append_release(
    pb: &mut PushBuffer,
    va: u64,
    payload: &[u32],
    width: u32,
    timestamp: bool,
) -> Result<(), PushError> {
    // CAST: one or two payload words.
    let align = if timestamp {
        16
    } else {
        4 * payload.len() as u64
    };
    check_address(va, align, COPY_VA_BITS)?;
    let mut words = [(va >> 32) as u32, va as u32, 0, 0];
    // PANIC: callers pass one or two words.
    words[2..2 + payload.len()].copy_from_slice(payload);
    pb.method(
        Subchannel::COPY,
        SET_SEMAPHORE_A,
        &words[..2 + payload.len()],
    )?;
    let kind = if timestamp {
        launch_dma::SEMAPHORE_FOUR_WORD
    } else {
        launch_dma::SEMAPHORE_ONE_WORD
    };
    pb.method(
        Subchannel::COPY,
        LAUNCH_DMA,
        &[launch_dma::FLUSH_ENABLE | kind | width],
    )?;
    Ok(())
}
