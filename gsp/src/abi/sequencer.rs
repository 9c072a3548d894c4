//! The CPU sequencer: register writes, polls and core resets GSP-RM asks the CPU to
//! perform (`NV_VGPU_MSG_EVENT_GSP_RUN_CPU_SEQUENCER`).
//!
//! Header: `src/nvidia/arch/nvalloc/common/inc/rmgspseq.h`. In the command buffer each
//! command is one opcode dword followed by its payload dwords (the `GSP_SEQUENCER_BUFFER_CMD`
//! union is not sent whole).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Mirrors `GSP_SEQ_BUF_OPCODE`, `rmgspseq.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum GspSeqBufOpcode {
    /// `GSP_SEQ_BUF_OPCODE_REG_WRITE`: payload [`GspSeqBufPayloadRegWrite`].
    RegWrite = 0,
    /// `GSP_SEQ_BUF_OPCODE_REG_MODIFY`: payload [`GspSeqBufPayloadRegModify`].
    RegModify = 1,
    /// `GSP_SEQ_BUF_OPCODE_REG_POLL`: payload [`GspSeqBufPayloadRegPoll`].
    RegPoll = 2,
    /// `GSP_SEQ_BUF_OPCODE_DELAY_US`: payload [`GspSeqBufPayloadDelayUs`].
    DelayUs = 3,
    /// `GSP_SEQ_BUF_OPCODE_REG_STORE`: payload [`GspSeqBufPayloadRegStore`].
    RegStore = 4,
    /// `GSP_SEQ_BUF_OPCODE_CORE_RESET`: no payload.
    CoreReset = 5,
    /// `GSP_SEQ_BUF_OPCODE_CORE_START`: no payload.
    CoreStart = 6,
    /// `GSP_SEQ_BUF_OPCODE_CORE_WAIT_FOR_HALT`: no payload.
    CoreWaitForHalt = 7,
    /// `GSP_SEQ_BUF_OPCODE_CORE_RESUME`: no payload.
    CoreResume = 8,
}

impl GspSeqBufOpcode {
    /// Every opcode, in numeric order.
    pub const ALL: [Self; 9] = [
        Self::RegWrite,
        Self::RegModify,
        Self::RegPoll,
        Self::DelayUs,
        Self::RegStore,
        Self::CoreReset,
        Self::CoreStart,
        Self::CoreWaitForHalt,
        Self::CoreResume,
    ];

    /// The opcode numbered `value`, or `None` for a number 570.144 does not define.
    pub fn from_u32(value: u32) -> Option<Self> {
        Self::ALL.get(usize::try_from(value).ok()?).copied()
    }

    /// The NVIDIA name, e.g. `"GSP_SEQ_BUF_OPCODE_REG_WRITE"`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::RegWrite => "GSP_SEQ_BUF_OPCODE_REG_WRITE",
            Self::RegModify => "GSP_SEQ_BUF_OPCODE_REG_MODIFY",
            Self::RegPoll => "GSP_SEQ_BUF_OPCODE_REG_POLL",
            Self::DelayUs => "GSP_SEQ_BUF_OPCODE_DELAY_US",
            Self::RegStore => "GSP_SEQ_BUF_OPCODE_REG_STORE",
            Self::CoreReset => "GSP_SEQ_BUF_OPCODE_CORE_RESET",
            Self::CoreStart => "GSP_SEQ_BUF_OPCODE_CORE_START",
            Self::CoreWaitForHalt => "GSP_SEQ_BUF_OPCODE_CORE_WAIT_FOR_HALT",
            Self::CoreResume => "GSP_SEQ_BUF_OPCODE_CORE_RESUME",
        }
    }

    /// Payload size in dwords (`GSP_SEQUENCER_PAYLOAD_SIZE_DWORDS`).
    pub const fn payload_dwords(self) -> usize {
        const DW: usize = core::mem::size_of::<u32>();
        match self {
            Self::RegWrite => core::mem::size_of::<GspSeqBufPayloadRegWrite>() / DW,
            Self::RegModify => core::mem::size_of::<GspSeqBufPayloadRegModify>() / DW,
            Self::RegPoll => core::mem::size_of::<GspSeqBufPayloadRegPoll>() / DW,
            Self::DelayUs => core::mem::size_of::<GspSeqBufPayloadDelayUs>() / DW,
            Self::RegStore => core::mem::size_of::<GspSeqBufPayloadRegStore>() / DW,
            Self::CoreReset | Self::CoreStart | Self::CoreWaitForHalt | Self::CoreResume => 0,
        }
    }
}

/// `GSP_SEQ_BUF_REG_SAVE_SIZE`: entries of `regSaveArea`.
pub const GSP_SEQ_BUF_REG_SAVE_SIZE: usize = 8;
/// `GSP_SEQ_BUF_REG_SAVE_MAILBOX0`.
pub const GSP_SEQ_BUF_REG_SAVE_MAILBOX0: usize = 0;
/// `GSP_SEQ_BUF_REG_SAVE_MAILBOX1`.
pub const GSP_SEQ_BUF_REG_SAVE_MAILBOX1: usize = 1;

/// Mirrors `GSP_SEQ_BUF_PAYLOAD_REG_WRITE`, `rmgspseq.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspSeqBufPayloadRegWrite {
    /// `addr`: BAR0 offset.
    pub addr: u32,
    /// `val`.
    pub val: u32,
}

/// Mirrors `GSP_SEQ_BUF_PAYLOAD_REG_MODIFY`, `rmgspseq.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspSeqBufPayloadRegModify {
    /// `addr`.
    pub addr: u32,
    /// `mask`: bits to replace.
    pub mask: u32,
    /// `val`: new value of the masked bits.
    pub val: u32,
}

/// Mirrors `GSP_SEQ_BUF_PAYLOAD_REG_POLL`, `rmgspseq.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspSeqBufPayloadRegPoll {
    /// `addr`.
    pub addr: u32,
    /// `mask`.
    pub mask: u32,
    /// `val`: wait until `(reg & mask) == val`.
    pub val: u32,
    /// `timeout`: microseconds.
    pub timeout: u32,
    /// `error`: the code to report on timeout.
    pub error: u32,
}

/// Mirrors `GSP_SEQ_BUF_PAYLOAD_DELAY_US`, `rmgspseq.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspSeqBufPayloadDelayUs {
    /// `val`: microseconds.
    pub val: u32,
}

/// Mirrors `GSP_SEQ_BUF_PAYLOAD_REG_STORE`, `rmgspseq.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
#[repr(C)]
pub struct GspSeqBufPayloadRegStore {
    /// `addr`.
    pub addr: u32,
    /// `index`: slot of `regSaveArea` to store the value in.
    pub index: u32,
}
