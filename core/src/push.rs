//! Pushbuffers: the stream of method headers and data words that the GPU's front end
//! (host, "PBDMA") fetches from memory and dispatches to the engine bound on a subchannel.
//!
//! Header formats (host class, e.g. `clc56f.h` `NVC56F_DMA_*`): bits 31:29 the opcode
//! (1 incrementing, 3 non-incrementing, 4 immediate, 5 increment-once, 7 end of segment),
//! 28:16 the count (or the immediate data), 15:13 the subchannel, 11:0 the method's byte
//! offset divided by 4.

use alloc::vec::Vec;
use core::fmt;

/// Largest count of data words one header can carry (13 bits).
pub const MAX_METHOD_COUNT: usize = 0x1fff;
/// Largest value an immediate-data header can carry (13 bits).
pub const MAX_IMMEDIATE: u32 = 0x1fff;
/// Largest method byte offset (12-bit dword address).
pub const MAX_METHOD: u32 = 0x3ffc;

/// One of the eight subchannels an engine object is bound to with `SET_OBJECT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Subchannel(u8);

impl Subchannel {
    /// The subchannel used here for host-class methods (semaphores, WFI); any would do.
    pub const HOST: Subchannel = Subchannel(0);
    /// The subchannel the compute object is bound to (as NVIDIA's and tinygrad's drivers do).
    pub const COMPUTE: Subchannel = Subchannel(1);
    /// The subchannel the copy-engine object is bound to.
    pub const COPY: Subchannel = Subchannel(4);

    /// A subchannel by number, 0 to 7.
    pub fn new(n: u8) -> Result<Self, PushError> {
        if n < 8 {
            Ok(Subchannel(n))
        } else {
            Err(PushError::SubchannelOutOfRange(n))
        }
    }

    /// The number, 0 to 7.
    pub fn index(self) -> u8 {
        self.0
    }
}

/// The kind of a method header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderKind {
    /// Data word `i` goes to method `method + 4*i` (`SEC_OP_INC_METHOD`, 1).
    Incrementing,
    /// Every data word goes to the same method (`SEC_OP_NON_INC_METHOD`, 3).
    NonIncrementing,
    /// The 13-bit value in the header itself goes to the method (`SEC_OP_IMMD_DATA_METHOD`, 4).
    Immediate,
    /// The first word goes to `method`, the rest to `method + 4` (`SEC_OP_ONE_INC`, 5).
    IncrementOnce,
    /// Ends the pushbuffer segment early (`SEC_OP_END_PB_SEGMENT`, 7).
    EndSegment,
}

impl HeaderKind {
    /// The 3-bit opcode in bits 31:29.
    pub const fn opcode(self) -> u32 {
        match self {
            Self::Incrementing => 1,
            Self::NonIncrementing => 3,
            Self::Immediate => 4,
            Self::IncrementOnce => 5,
            Self::EndSegment => 7,
        }
    }
}

/// A pushbuffer could not encode what was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushError {
    /// The method offset is not a multiple of 4.
    MethodMisaligned(u32),
    /// The method offset is above 0x3ffc, the largest a header can address.
    MethodOutOfRange(u32),
    /// An immediate value does not fit the header's 13 bits.
    ImmediateTooLarge(u32),
    /// A subchannel number above 7.
    SubchannelOutOfRange(u8),
    /// A header with no data words.
    EmptyMethod(u32),
    /// More data words than one header's 13-bit count holds.
    CountTooLarge(u32),
    /// A GPU address that the method needs aligned is not.
    AddressMisaligned {
        /// The address.
        va: u64,
        /// The alignment it needs, in bytes.
        align: u64,
    },
    /// A GPU address wider than the method's address field.
    AddressTooWide {
        /// The address.
        va: u64,
        /// How many bits the field holds.
        bits: u32,
    },
    /// A size or count outside what the engine accepts.
    BadSize {
        /// What the size is of.
        what: &'static str,
        /// The value given.
        value: u64,
        /// The largest accepted.
        max: u64,
    },
}

/// Checks that `va` is `align`-aligned and below `2^bits`.
pub fn check_address(va: u64, align: u64, bits: u32) -> Result<(), PushError> {
    if !va.is_multiple_of(align) {
        return Err(PushError::AddressMisaligned { va, align });
    }
    if bits < 64 && va >> bits != 0 {
        return Err(PushError::AddressTooWide { va, bits });
    }
    Ok(())
}

impl fmt::Display for PushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::MethodMisaligned(m) => write!(
                f,
                "method {m:#x} is not 4-byte aligned; methods are byte offsets of 32-bit registers"
            ),
            Self::MethodOutOfRange(m) => write!(
                f,
                "method {m:#x} is above {MAX_METHOD:#x}, the largest a pushbuffer header can address"
            ),
            Self::ImmediateTooLarge(v) => write!(
                f,
                "immediate value {v:#x} does not fit 13 bits; send it as an incrementing method"
            ),
            Self::SubchannelOutOfRange(s) => write!(f, "subchannel {s} does not exist; use 0 to 7"),
            Self::EmptyMethod(m) => write!(
                f,
                "method {m:#x} was given no data words; pass at least one"
            ),
            Self::AddressMisaligned { va, align } => write!(
                f,
                "GPU address {va:#x} must be {align}-byte aligned here; align the allocation"
            ),
            Self::AddressTooWide { va, bits } => write!(
                f,
                "GPU address {va:#x} does not fit the method's {bits}-bit address field; map it lower"
            ),
            Self::BadSize { what, value, max } => write!(
                f,
                "{what} of {value:#x} is outside what the engine accepts (at most {max:#x})"
            ),
            Self::CountTooLarge(n) => write!(
                f,
                "{n} data words do not fit one header (at most {MAX_METHOD_COUNT}); use PushBuffer::method, which splits"
            ),
        }
    }
}

impl core::error::Error for PushError {}

fn check_method(method: u32) -> Result<(), PushError> {
    if !method.is_multiple_of(4) {
        return Err(PushError::MethodMisaligned(method));
    }
    if method > MAX_METHOD {
        return Err(PushError::MethodOutOfRange(method));
    }
    Ok(())
}

/// Encodes one method header. `count_or_data` is the number of data words that follow, or the
/// immediate value for [`HeaderKind::Immediate`].
pub fn encode_header(
    kind: HeaderKind,
    subchannel: Subchannel,
    method: u32,
    count_or_data: u32,
) -> Result<u32, PushError> {
    if kind == HeaderKind::EndSegment {
        return Ok(kind.opcode() << 29);
    }
    check_method(method)?;
    if count_or_data > MAX_IMMEDIATE {
        return Err(if kind == HeaderKind::Immediate {
            PushError::ImmediateTooLarge(count_or_data)
        } else {
            PushError::CountTooLarge(count_or_data)
        });
    }
    Ok(header(kind, subchannel, method, count_or_data))
}

/// A method header's fields (`NVC56F_DMA_*`), low bits first.
#[bitfield_struct::bitfield(u32)]
#[derive(PartialEq, Eq)]
pub struct MethodHeader {
    /// `METHOD_ADDRESS` 11:0: the method's byte offset / 4.
    #[bits(12)]
    pub method_dword: u16,
    /// Bit 12 (unused).
    #[bits(1)]
    __: u8,
    /// `METHOD_SUBCHANNEL` 15:13.
    #[bits(3)]
    pub subchannel: u8,
    /// `METHOD_COUNT` (or `IMMD_DATA`) 28:16.
    #[bits(13)]
    pub count: u16,
    /// `SEC_OP` 31:29.
    #[bits(3)]
    pub opcode: u8,
}

/// The header bits, for callers that already checked `method` and the count.
const fn header(kind: HeaderKind, subchannel: Subchannel, method: u32, count_or_data: u32) -> u32 {
    // CAST: the caller checked method <= 0x3ffc and count <= 0x1fff; subchannel < 8 and the
    // opcode < 8 by construction.
    MethodHeader::new()
        .with_method_dword((method >> 2) as u16)
        .with_subchannel(subchannel.0)
        .with_count(count_or_data as u16)
        .with_opcode(kind.opcode() as u8)
        .into_bits()
}

/// A growing pushbuffer segment: method headers and their data, as 32-bit words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushBuffer {
    words: Vec<u32>,
}

impl PushBuffer {
    /// An empty pushbuffer.
    pub fn new() -> Self {
        Self { words: Vec::new() }
    }

    /// An empty pushbuffer with room for `words` words.
    pub fn with_capacity(words: usize) -> Self {
        Self {
            words: Vec::with_capacity(words),
        }
    }

    /// The words so far.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether nothing has been pushed.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Size in bytes.
    pub fn byte_len(&self) -> usize {
        self.words.len() * 4
    }

    /// Forgets all words, keeping the allocation.
    pub fn clear(&mut self) {
        self.words.clear();
    }

    /// Appends another pushbuffer's words.
    pub fn append(&mut self, other: &PushBuffer) {
        self.words.extend_from_slice(&other.words);
    }

    /// The words as little-endian bytes (what the GPU fetches).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// Writes `data[i]` to `method + 4*i`. Long data is split over several headers.
    pub fn method(
        &mut self,
        subchannel: Subchannel,
        method: u32,
        data: &[u32],
    ) -> Result<&mut Self, PushError> {
        if data.is_empty() {
            return Err(PushError::EmptyMethod(method));
        }
        // Check the whole range first so a failure leaves the buffer untouched.
        let last = method as u64 + 4 * (data.len() as u64 - 1);
        check_method(method)?;
        if last > MAX_METHOD as u64 {
            return Err(PushError::MethodOutOfRange(last.min(u32::MAX as u64) as u32));
        }
        self.push_chunks(HeaderKind::Incrementing, subchannel, method, data);
        Ok(self)
    }

    /// Writes every word of `data` to the same `method` (e.g. inline data streams).
    pub fn method_non_incrementing(
        &mut self,
        subchannel: Subchannel,
        method: u32,
        data: &[u32],
    ) -> Result<&mut Self, PushError> {
        if data.is_empty() {
            return Err(PushError::EmptyMethod(method));
        }
        check_method(method)?;
        self.push_chunks(HeaderKind::NonIncrementing, subchannel, method, data);
        Ok(self)
    }

    /// Writes `data[0]` to `method` and the rest to `method + 4`.
    pub fn method_increment_once(
        &mut self,
        subchannel: Subchannel,
        method: u32,
        data: &[u32],
    ) -> Result<&mut Self, PushError> {
        if data.is_empty() {
            return Err(PushError::EmptyMethod(method));
        }
        check_method(method)?;
        if data.len() > 1 {
            check_method(method + 4)?;
        }
        if data.len() > MAX_METHOD_COUNT {
            // Split: the first chunk carries the increment, later ones go to method + 4.
            let (first, rest) = data.split_at(MAX_METHOD_COUNT);
            self.method_increment_once(subchannel, method, first)?;
            return self.method_non_incrementing(subchannel, method + 4, rest);
        }
        let h = encode_header(
            HeaderKind::IncrementOnce,
            subchannel,
            method,
            data.len() as u32,
        )?;
        self.words.push(h);
        self.words.extend_from_slice(data);
        Ok(self)
    }

    /// Writes a 13-bit `value` to `method` with no data word.
    pub fn immediate(
        &mut self,
        subchannel: Subchannel,
        method: u32,
        value: u32,
    ) -> Result<&mut Self, PushError> {
        let h = encode_header(HeaderKind::Immediate, subchannel, method, value)?;
        self.words.push(h);
        Ok(self)
    }

    /// Ends the segment here; the front end ignores any words after it.
    pub fn end_segment(&mut self) -> &mut Self {
        self.words
            .push(header(HeaderKind::EndSegment, Subchannel(0), 0, 0));
        self
    }

    /// Appends `data` in chunks of at most [`MAX_METHOD_COUNT`] words, each behind its own
    /// header; an incrementing chunk starts where the previous one ended. The caller has
    /// checked every method the chunks address.
    fn push_chunks(&mut self, kind: HeaderKind, subchannel: Subchannel, method: u32, data: &[u32]) {
        let step = if kind == HeaderKind::Incrementing {
            4 * MAX_METHOD_COUNT as u32
        } else {
            0
        };
        for (i, chunk) in data.chunks(MAX_METHOD_COUNT).enumerate() {
            let m = method + step * i as u32;
            self.words
                .push(header(kind, subchannel, m, chunk.len() as u32));
            self.words.extend_from_slice(chunk);
        }
    }

    /// Binds engine class `class` to `subchannel` (host method `SET_OBJECT`, 0x0).
    pub fn set_object(
        &mut self,
        subchannel: Subchannel,
        class: u32,
    ) -> Result<&mut Self, PushError> {
        self.method(subchannel, crate::push::host::SET_OBJECT, &[class])
    }
}

/// Host-class (C56F/C86F) method offsets used by this crate.
pub mod host {
    /// `NVC86F_SET_OBJECT`.
    pub const SET_OBJECT: u32 = 0x0000;
    /// `NVC86F_NON_STALL_INTERRUPT`.
    pub const NON_STALL_INTERRUPT: u32 = 0x0020;
    /// `NVC86F_MEM_OP_A` .. `_D` at 0x28..0x34.
    pub const MEM_OP_A: u32 = 0x0028;
    /// `NVC86F_SEM_ADDR_LO`; `SEM_ADDR_HI`, `SEM_PAYLOAD_LO`, `SEM_PAYLOAD_HI`, `SEM_EXECUTE` follow.
    pub const SEM_ADDR_LO: u32 = 0x005c;
    /// `NVC86F_SEM_ADDR_HI`.
    pub const SEM_ADDR_HI: u32 = 0x0060;
    /// `NVC86F_SEM_PAYLOAD_LO`.
    pub const SEM_PAYLOAD_LO: u32 = 0x0064;
    /// `NVC86F_SEM_PAYLOAD_HI`.
    pub const SEM_PAYLOAD_HI: u32 = 0x0068;
    /// `NVC86F_SEM_EXECUTE`.
    pub const SEM_EXECUTE: u32 = 0x006c;
    /// `NVC86F_WFI`.
    pub const WFI: u32 = 0x0078;

    /// `SEM_EXECUTE_OPERATION` (2:0) values.
    pub mod sem_op {
        /// `ACQUIRE`: wait until the payload equals the value.
        pub const ACQUIRE: u32 = 0;
        /// `RELEASE`: write the payload.
        pub const RELEASE: u32 = 1;
        /// `ACQ_STRICT_GEQ`: wait until payload >= value.
        pub const ACQ_STRICT_GEQ: u32 = 2;
        /// `ACQ_CIRC_GEQ`: wait until payload >= value, wrap-aware.
        pub const ACQ_CIRC_GEQ: u32 = 3;
        /// `ACQ_AND`.
        pub const ACQ_AND: u32 = 4;
        /// `ACQ_NOR`.
        pub const ACQ_NOR: u32 = 5;
        /// `REDUCTION`.
        pub const REDUCTION: u32 = 6;
    }
    /// `SEM_EXECUTE_ACQUIRE_SWITCH_TSG` bit 12.
    pub const SEM_EXECUTE_ACQUIRE_SWITCH_TSG: u32 = 1 << 12;
    /// `SEM_EXECUTE_RELEASE_WFI` bit 20.
    pub const SEM_EXECUTE_RELEASE_WFI: u32 = 1 << 20;
    /// `SEM_EXECUTE_PAYLOAD_SIZE_64BIT` (bit 24).
    pub const SEM_EXECUTE_PAYLOAD_64BIT: u32 = 1 << 24;
    /// `SEM_EXECUTE_RELEASE_TIMESTAMP_EN` (bit 25).
    pub const SEM_EXECUTE_RELEASE_TIMESTAMP: u32 = 1 << 25;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_match_tinygrad_nvm() {
        // tinygrad: (typ << 28) | (len << 16) | (subc << 13) | (mthd >> 2), typ=2 -> opcode 1.
        let h = encode_header(HeaderKind::Incrementing, Subchannel::COMPUTE, 0x2b4, 1).unwrap();
        assert_eq!(h, (2 << 28) | (1 << 16) | (1 << 13) | (0x2b4 >> 2));
    }

    #[test]
    fn bad_input_is_typed_error_and_buffer_untouched() {
        let mut pb = PushBuffer::new();
        assert_eq!(
            pb.method(Subchannel::HOST, 0x3ffc, &[1, 2]).unwrap_err(),
            PushError::MethodOutOfRange(0x4000)
        );
        assert_eq!(
            pb.method(Subchannel::HOST, 2, &[1]).unwrap_err(),
            PushError::MethodMisaligned(2)
        );
        assert_eq!(
            pb.immediate(Subchannel::HOST, 0, 0x2000).unwrap_err(),
            PushError::ImmediateTooLarge(0x2000)
        );
        assert_eq!(
            pb.method(Subchannel::HOST, 0, &[]).unwrap_err(),
            PushError::EmptyMethod(0)
        );
        assert_eq!(
            Subchannel::new(8).unwrap_err(),
            PushError::SubchannelOutOfRange(8)
        );
        assert!(pb.is_empty());
    }

    #[test]
    fn long_non_incrementing_data_is_split() {
        let data = alloc::vec![7u32; MAX_METHOD_COUNT + 5];
        let mut pb = PushBuffer::new();
        pb.method_non_incrementing(Subchannel::COPY, 0x100, &data)
            .unwrap();
        assert_eq!(pb.len(), data.len() + 2);
        assert_eq!(pb.words()[0] >> 16 & 0x1fff, MAX_METHOD_COUNT as u32);
        assert_eq!(pb.words()[MAX_METHOD_COUNT + 1] >> 16 & 0x1fff, 5);
    }
}
