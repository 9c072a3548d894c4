//! The CPU sequencer: register programs GSP-RM asks the CPU to run
//! (`NV_VGPU_MSG_EVENT_GSP_RUN_CPU_SEQUENCER`).
//!
//! The event payload is `rpc_run_cpu_sequencer_v17_00` (a 40-byte header: `bufferSizeDWord`,
//! `cmdIndex`, `regSaveArea[8]`) followed by `commandBuffer[]`, a stream of dwords: an opcode
//! (`GSP_SEQ_BUF_OPCODE`, `rmgspseq.h`) and its fixed-size payload. This module decodes that
//! stream into typed [`SequencerStep`]s; executing them (register access, delays, falcon
//! control) belongs to the core.
//!
//! Mirrors `kgspExecuteSequencerBuffer_IMPL` (`kernel_gsp.c`) for the common opcodes and
//! `kgspExecuteSequencerCommand_GA102` (`arch/ampere/kernel_gsp_ga102.c`) for
//! `CORE_RESUME`, with the same validity rules: `bufferSizeDWord != 0`,
//! `cmdIndex < bufferSizeDWord`, each payload inside `cmdIndex`, `REG_STORE` index below
//! `GSP_SEQ_BUF_REG_SAVE_SIZE`. Unknown opcodes are errors (OpenRM's arch handler rejects them
//! too).

use alloc::vec::Vec;
use core::fmt;

use crate::abi::{GSP_SEQ_BUF_REG_SAVE_SIZE, GspSeqBufOpcode, RpcRunCpuSequencer};
use zerocopy::{FromBytes, IntoBytes};

/// `sizeof(rpc_run_cpu_sequencer_v17_00)` without `commandBuffer[]`.
pub const SEQUENCER_HEADER_SIZE: usize = size_of::<RpcRunCpuSequencer>();
/// `GSP_SEQ_BUF_REG_SAVE_SIZE`, `rmgspseq.h`.
pub const REG_SAVE_SIZE: usize = GSP_SEQ_BUF_REG_SAVE_SIZE;

/// One decoded sequencer command, in the order GSP-RM wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SequencerStep {
    /// Write `val` to BAR0 register `addr`.
    RegWrite { addr: u32, val: u32 },
    /// Read `addr`, clear the bits in `mask`, OR in `val`, write back
    /// (see [`SequencerStep::modified`]).
    RegModify { addr: u32, mask: u32, val: u32 },
    /// Poll until `reg(addr) & mask == val`; `timeout_us` 0 means the default GPU timeout;
    /// `error` is GSP-RM's code to report on timeout (`GSP_SEQUENCER_BUFFER_ERR`).
    RegPoll {
        addr: u32,
        mask: u32,
        val: u32,
        timeout_us: u32,
        error: u32,
    },
    /// Busy-wait this many microseconds.
    DelayUs(u32),
    /// Read `addr` into `regSaveArea[index]` (index already checked `< 8`).
    RegStore { addr: u32, index: u8 },
    /// Reset the GSP falcon and disable its context requirement
    /// (`kflcnReset_HAL` + `kflcnDisableCtxReq_HAL`).
    CoreReset,
    /// Start the GSP falcon CPU (`kflcnStartCpu_HAL`).
    CoreStart,
    /// Wait until the GSP falcon halts (`kflcnWaitForHalt_HAL`).
    CoreWaitForHalt,
    /// Resume GSP-RM after suspend: reset to RISC-V, mailboxes = libos args, start SEC2
    /// booter and wait for its handoff (`kgspExecuteSequencerCommand_GA102`).
    CoreResume,
}

impl SequencerStep {
    /// The value a [`SequencerStep::RegModify`] writes given the register's current value:
    /// `(old & !mask) | val`, exactly as `kgspExecuteSequencerBuffer_IMPL` does (it does not
    /// mask `val`).
    pub fn modified(old: u32, mask: u32, val: u32) -> u32 {
        (old & !mask) | val
    }

    /// The `GSP_SEQ_BUF_OPCODE` of this step.
    pub fn kind(&self) -> GspSeqBufOpcode {
        match self {
            Self::RegWrite { .. } => GspSeqBufOpcode::RegWrite,
            Self::RegModify { .. } => GspSeqBufOpcode::RegModify,
            Self::RegPoll { .. } => GspSeqBufOpcode::RegPoll,
            Self::DelayUs(_) => GspSeqBufOpcode::DelayUs,
            Self::RegStore { .. } => GspSeqBufOpcode::RegStore,
            Self::CoreReset => GspSeqBufOpcode::CoreReset,
            Self::CoreStart => GspSeqBufOpcode::CoreStart,
            Self::CoreWaitForHalt => GspSeqBufOpcode::CoreWaitForHalt,
            Self::CoreResume => GspSeqBufOpcode::CoreResume,
        }
    }

    /// The opcode number of this step.
    pub fn opcode(&self) -> u32 {
        self.kind() as u32
    }

    /// Appends this step's opcode and payload dwords (the inverse of decoding; used by the
    /// simulator and tests to build sequencer events).
    pub fn encode_into(&self, out: &mut Vec<u32>) {
        out.push(self.opcode());
        match *self {
            Self::RegWrite { addr, val } => out.extend_from_slice(&[addr, val]),
            Self::RegModify { addr, mask, val } => out.extend_from_slice(&[addr, mask, val]),
            Self::RegPoll {
                addr,
                mask,
                val,
                timeout_us,
                error,
            } => out.extend_from_slice(&[addr, mask, val, timeout_us, error]),
            Self::DelayUs(us) => out.push(us),
            Self::RegStore { addr, index } => out.extend_from_slice(&[addr, u32::from(index)]),
            Self::CoreReset | Self::CoreStart | Self::CoreWaitForHalt | Self::CoreResume => {}
        }
    }
}

/// A decoded `RUN_CPU_SEQUENCER` event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuSequencer {
    /// `bufferSizeDWord`: capacity of GSP-RM's command buffer.
    pub buffer_size_dwords: u32,
    /// `regSaveArea` as GSP-RM sent it (RM fills it for `REG_STORE`).
    pub reg_save_area: [u32; REG_SAVE_SIZE],
    /// The commands, in order.
    pub steps: Vec<SequencerStep>,
}

/// Why a sequencer payload was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SequencerError {
    /// Payload shorter than the 40-byte header.
    TruncatedHeader { len: usize },
    /// `bufferSizeDWord` is 0 (OpenRM: `NV_ERR_INVALID_STATE`).
    EmptyBuffer,
    /// `cmdIndex >= bufferSizeDWord` (OpenRM: `NV_ERR_INVALID_DATA`).
    CmdIndexOutOfRange {
        cmd_index: u32,
        buffer_size_dwords: u32,
    },
    /// The payload holds fewer than `cmdIndex` command dwords.
    CommandsTruncated {
        cmd_index: u32,
        available_dwords: usize,
    },
    /// An opcode outside `GSP_SEQ_BUF_OPCODE`, at dword `at` of the command buffer.
    UnknownOpcode { opcode: u32, at: usize },
    /// An opcode whose payload runs past `cmdIndex`.
    PayloadPastEnd { opcode: u32, at: usize },
    /// `REG_STORE` with `index >= GSP_SEQ_BUF_REG_SAVE_SIZE`.
    RegStoreIndex { index: u32, at: usize },
}

impl fmt::Display for SequencerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TruncatedHeader { len } => {
                write!(
                    f,
                    "CPU sequencer payload of {len} bytes is shorter than its 40-byte header"
                )
            }
            Self::EmptyBuffer => write!(f, "CPU sequencer bufferSizeDWord is 0"),
            Self::CmdIndexOutOfRange {
                cmd_index,
                buffer_size_dwords,
            } => write!(
                f,
                "CPU sequencer cmdIndex {cmd_index} not below bufferSizeDWord {buffer_size_dwords}"
            ),
            Self::CommandsTruncated {
                cmd_index,
                available_dwords,
            } => write!(
                f,
                "CPU sequencer cmdIndex {cmd_index} but only {available_dwords} dwords present"
            ),
            Self::UnknownOpcode { opcode, at } => {
                write!(f, "CPU sequencer: unknown opcode {opcode:#x} at dword {at}")
            }
            Self::PayloadPastEnd { opcode, at } => {
                write!(
                    f,
                    "CPU sequencer: opcode {opcode} at dword {at} runs past cmdIndex"
                )
            }
            Self::RegStoreIndex { index, at } => {
                write!(
                    f,
                    "CPU sequencer: REG_STORE index {index} >= 8 at dword {at}"
                )
            }
        }
    }
}

fn dword(bytes: &[u8], i: usize) -> u32 {
    let o = i * 4;
    u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]])
}

/// Decodes a `RUN_CPU_SEQUENCER` event payload (the bytes after the RPC header).
///
/// Mirrors the parsing half of `kgspExecuteSequencerBuffer_IMPL`; any malformed input gives a
/// [`SequencerError`], never a panic.
pub fn decode_sequencer(payload: &[u8]) -> Result<CpuSequencer, SequencerError> {
    let Ok((header, cmds)) = RpcRunCpuSequencer::read_from_prefix(payload) else {
        return Err(SequencerError::TruncatedHeader { len: payload.len() });
    };
    let buffer_size_dwords = header.buffer_size_dword;
    let cmd_index = header.cmd_index;
    let reg_save_area = header.reg_save_area;
    if buffer_size_dwords == 0 {
        return Err(SequencerError::EmptyBuffer);
    }
    if cmd_index >= buffer_size_dwords {
        return Err(SequencerError::CmdIndexOutOfRange {
            cmd_index,
            buffer_size_dwords,
        });
    }
    let available_dwords = cmds.len() / 4;
    let end = cmd_index as usize;
    if end > available_dwords {
        return Err(SequencerError::CommandsTruncated {
            cmd_index,
            available_dwords,
        });
    }

    let mut steps = Vec::new();
    let mut i = 0usize;
    while i < end {
        let at = i;
        let op = dword(cmds, i);
        i += 1;
        let kind = GspSeqBufOpcode::from_u32(op)
            .ok_or(SequencerError::UnknownOpcode { opcode: op, at })?;
        let n = kind.payload_dwords();
        if i + n > end {
            return Err(SequencerError::PayloadPastEnd { opcode: op, at });
        }
        let p = |k: usize| dword(cmds, i + k);
        let step = match kind {
            GspSeqBufOpcode::RegWrite => SequencerStep::RegWrite {
                addr: p(0),
                val: p(1),
            },
            GspSeqBufOpcode::RegModify => SequencerStep::RegModify {
                addr: p(0),
                mask: p(1),
                val: p(2),
            },
            GspSeqBufOpcode::RegPoll => SequencerStep::RegPoll {
                addr: p(0),
                mask: p(1),
                val: p(2),
                timeout_us: p(3),
                error: p(4),
            },
            GspSeqBufOpcode::DelayUs => SequencerStep::DelayUs(p(0)),
            GspSeqBufOpcode::RegStore => {
                let index = p(1);
                if index as usize >= REG_SAVE_SIZE {
                    return Err(SequencerError::RegStoreIndex { index, at });
                }
                SequencerStep::RegStore {
                    addr: p(0),
                    index: index as u8,
                }
            }
            GspSeqBufOpcode::CoreReset => SequencerStep::CoreReset,
            GspSeqBufOpcode::CoreStart => SequencerStep::CoreStart,
            GspSeqBufOpcode::CoreWaitForHalt => SequencerStep::CoreWaitForHalt,
            GspSeqBufOpcode::CoreResume => SequencerStep::CoreResume,
        };
        steps.push(step);
        i += n;
    }
    Ok(CpuSequencer {
        buffer_size_dwords,
        reg_save_area,
        steps,
    })
}

/// Builds a `RUN_CPU_SEQUENCER` payload from steps (for the simulator and tests): the header
/// with `bufferSizeDWord = capacity_dwords`, `cmdIndex` = dwords used, then the commands.
pub fn encode_sequencer(steps: &[SequencerStep], capacity_dwords: u32) -> Vec<u8> {
    let mut words = Vec::new();
    for s in steps {
        s.encode_into(&mut words);
    }
    let mut out = Vec::with_capacity(SEQUENCER_HEADER_SIZE + words.len() * 4);
    let header = RpcRunCpuSequencer {
        buffer_size_dword: capacity_dwords,
        cmd_index: words.len() as u32,
        reg_save_area: [0; REG_SAVE_SIZE],
    };
    out.extend_from_slice(header.as_bytes());
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_every_opcode_with_its_payload() {
        let steps = [
            SequencerStep::RegWrite {
                addr: 0x110040,
                val: 0xdead,
            },
            SequencerStep::RegModify {
                addr: 0x110100,
                mask: 0x10,
                val: 0x10,
            },
            SequencerStep::RegPoll {
                addr: 0x1100f4,
                mask: 0x1,
                val: 0x0,
                timeout_us: 5,
                error: 2,
            },
            SequencerStep::DelayUs(10),
            SequencerStep::RegStore {
                addr: 0x110040,
                index: 7,
            },
            SequencerStep::CoreReset,
            SequencerStep::CoreStart,
            SequencerStep::CoreWaitForHalt,
            SequencerStep::CoreResume,
        ];
        let bytes = encode_sequencer(&steps, 0x400);
        let seq = decode_sequencer(&bytes).unwrap();
        assert_eq!(seq.steps, steps);
        assert_eq!(seq.buffer_size_dwords, 0x400);
    }

    #[test]
    fn reg_modify_order_is_addr_mask_val() {
        // rmgspseq.h: GSP_SEQ_BUF_PAYLOAD_REG_MODIFY { addr; mask; val; }
        let mut b = encode_sequencer(&[], 16);
        b[4..8].copy_from_slice(&4u32.to_le_bytes());
        for w in [1u32, 0x100, 0xff, 0x42] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        let seq = decode_sequencer(&b).unwrap();
        assert_eq!(
            seq.steps,
            [SequencerStep::RegModify {
                addr: 0x100,
                mask: 0xff,
                val: 0x42
            }]
        );
        assert_eq!(SequencerStep::modified(0x1234, 0xff, 0x42), 0x1242);
    }

    #[test]
    fn rejects_unknown_opcode_and_bad_bounds() {
        let mut b = encode_sequencer(&[SequencerStep::CoreStart], 16);
        b[40..44].copy_from_slice(&9u32.to_le_bytes());
        assert_eq!(
            decode_sequencer(&b),
            Err(SequencerError::UnknownOpcode { opcode: 9, at: 0 })
        );

        let b = encode_sequencer(&[SequencerStep::DelayUs(1)], 2);
        assert_eq!(
            decode_sequencer(&b),
            Err(SequencerError::CmdIndexOutOfRange {
                cmd_index: 2,
                buffer_size_dwords: 2
            })
        );
        let mut b = encode_sequencer(&[SequencerStep::RegWrite { addr: 1, val: 2 }], 16);
        b[4..8].copy_from_slice(&2u32.to_le_bytes()); // opcode + 1 of 2 payload dwords
        assert_eq!(
            decode_sequencer(&b),
            Err(SequencerError::PayloadPastEnd { opcode: 0, at: 0 })
        );
        let mut b = encode_sequencer(&[SequencerStep::RegStore { addr: 1, index: 0 }], 16);
        b[48..52].copy_from_slice(&8u32.to_le_bytes());
        assert_eq!(
            decode_sequencer(&b),
            Err(SequencerError::RegStoreIndex { index: 8, at: 0 })
        );
        assert_eq!(
            decode_sequencer(&[0; 39]),
            Err(SequencerError::TruncatedHeader { len: 39 })
        );
        let mut b = encode_sequencer(&[SequencerStep::DelayUs(1)], 16);
        b.truncate(44);
        assert_eq!(
            decode_sequencer(&b),
            Err(SequencerError::CommandsTruncated {
                cmd_index: 2,
                available_dwords: 1
            })
        );
    }
}
