//! An independent decoder of what the GPU front end fetches: pushbuffer words back into method
//! writes, method writes back into operations (semaphores, copies, grid launches), and QMDs
//! back into launch parameters.
//!
//! It shares no tables with `nvbare-core`'s encoders: the method numbers and QMD field
//! positions here were transcribed separately from NVIDIA's class headers (and are checked
//! against them by `sim/tests/decode_*.rs`), so a round trip through both catches mistakes in
//! either. The simulator executes what this decoder reports.

pub mod qmd;

use std::collections::HashMap;
use std::fmt;

/// One 32-bit write to a method of the object on a subchannel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodWrite {
    /// Subchannel 0..=7.
    pub subchannel: u8,
    /// Method byte offset.
    pub method: u32,
    /// The value written.
    pub value: u32,
}

/// A pushbuffer that cannot be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// A header announces more data words than the segment holds.
    Truncated {
        /// Word index of the header.
        at: usize,
        /// Words it announced.
        count: u32,
    },
    /// A header with an opcode the front end rejects (or that this decoder does not model).
    BadOpcode {
        /// Word index.
        at: usize,
        /// The header word.
        word: u32,
    },
    /// A trigger method fired on a subchannel with no object bound.
    Unbound {
        /// Subchannel.
        subchannel: u8,
        /// Method.
        method: u32,
    },
    /// A method (or field) the bound class does not have.
    NotInClass {
        /// The class.
        class: u32,
        /// Method.
        method: u32,
        /// What is missing, with the header that says so.
        why: &'static str,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Truncated { at, count } => write!(
                f,
                "header at word {at} announces {count} data words past the end of the segment"
            ),
            Self::BadOpcode { at, word } => {
                write!(f, "word {at} ({word:#010x}) is not a method header")
            }
            Self::Unbound { subchannel, method } => write!(
                f,
                "method {method:#x} on subchannel {subchannel} with no object bound (missing SET_OBJECT)"
            ),
            Self::NotInClass { class, method, why } => {
                write!(f, "method {method:#x} of class {class:#06x}: {why}")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// Expands pushbuffer words into method writes, as the front end does. Stops at an
/// end-of-segment header.
pub fn method_writes(words: &[u32]) -> Result<Vec<MethodWrite>, DecodeError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let h = words[i];
        let opcode = h >> 29;
        let count = (h >> 16) & 0x1fff;
        let subchannel = ((h >> 13) & 7) as u8;
        let method = (h & 0xfff) << 2;
        match opcode {
            // SEC_OP 1 incrementing, 3 non-incrementing, 5 increment-once.
            1 | 3 | 5 => {
                let n = count as usize;
                let data = words
                    .get(i + 1..i + 1 + n)
                    .ok_or(DecodeError::Truncated { at: i, count })?;
                for (k, &value) in data.iter().enumerate() {
                    let m = match opcode {
                        1 => method + 4 * k as u32,
                        3 => method,
                        _ => method + if k == 0 { 0 } else { 4 },
                    };
                    out.push(MethodWrite {
                        subchannel,
                        method: m,
                        value,
                    });
                }
                i += 1 + n;
            }
            // SEC_OP 4: immediate data in the count field.
            4 => {
                out.push(MethodWrite {
                    subchannel,
                    method,
                    value: count,
                });
                i += 1;
            }
            7 => break,
            // A zero word is NVC56F_DMA_NOP (opcode 0, tert op 0, count 0).
            0 if h == 0 => i += 1,
            _ => return Err(DecodeError::BadOpcode { at: i, word: h }),
        }
    }
    Ok(out)
}

/// A GPFIFO entry as the front end reads it (`NVC86F_GP_ENTRY0/1`): `None` for a control
/// entry (length 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// GPU VA of the pushbuffer segment (bits 39:2).
    pub va: u64,
    /// Length in 32-bit words.
    pub words: u32,
    /// `LEVEL_SUBROUTINE`.
    pub subroutine: bool,
    /// `SYNC_WAIT`.
    pub sync_wait: bool,
}

/// Decodes one 8-byte GPFIFO entry.
pub fn gp_entry(raw: u64) -> Option<Segment> {
    let (lo, hi) = (raw as u32, (raw >> 32) as u32);
    let words = (hi >> 10) & 0x1f_ffff;
    (words != 0).then_some(Segment {
        va: (lo & 0xffff_fffc) as u64 | ((hi & 0xff) as u64) << 32,
        words,
        subroutine: hi & (1 << 9) != 0,
        sync_wait: hi & (1 << 31) != 0,
    })
}

/// Which engine a class number belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Compute classes (Turing 0xc5c0, Ampere 0xc6c0/0xc7c0, Ada 0xc9c0, Hopper 0xcbc0,
    /// Blackwell 0xcdc0/0xcec0).
    Compute,
    /// Copy classes (0xc5b5, 0xc6b5, 0xc7b5, 0xc8b5, 0xc9b5, 0xcab5).
    Copy,
    /// Anything else.
    Other,
}

impl Engine {
    /// The engine of `class`.
    pub fn of(class: u32) -> Self {
        match class & 0xff {
            0xc0 => Self::Compute,
            0xb5 => Self::Copy,
            _ => Self::Other,
        }
    }
}

/// A host semaphore operation (`SEM_EXECUTE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostSemaphoreOp {
    /// Write the payload.
    Release {
        /// Wait for idle first.
        wait_for_idle: bool,
        /// Also write a timestamp.
        timestamp: bool,
    },
    /// Wait until payload == value.
    AcquireEqual,
    /// Wait until payload >= value.
    AcquireStrictGeq,
    /// Wait until payload >= value (wrapping).
    AcquireCircGeq,
    /// Another operation (AND, NOR, reduction), raw.
    Other(u32),
}

/// What a pushbuffer asks the GPU to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operation {
    /// `SET_OBJECT`: bind a class to a subchannel.
    SetObject {
        /// Subchannel.
        subchannel: u8,
        /// Class number.
        class: u32,
    },
    /// Host semaphore release or acquire.
    HostSemaphore {
        /// Address.
        va: u64,
        /// Payload or comparison value.
        value: u64,
        /// 64-bit payload.
        payload64: bool,
        /// What.
        op: HostSemaphoreOp,
    },
    /// Host wait-for-idle.
    WaitForIdle,
    /// Linear copy.
    Copy {
        /// Source VA.
        src: u64,
        /// Destination VA.
        dst: u64,
        /// Bytes.
        len: u32,
    },
    /// Copy-engine semaphore release.
    CopySemaphoreRelease {
        /// Address.
        va: u64,
        /// Payload (upper half only with `payload64`).
        value: u64,
        /// 64-bit payload.
        payload64: bool,
        /// Four-word release (payload + timestamp).
        timestamp: bool,
    },
    /// Launch the QMD at `qmd_va`.
    LaunchQmd {
        /// QMD address.
        qmd_va: u64,
        /// `PCAS_ACTION`.
        action: u32,
    },
    /// Shared memory window.
    SharedWindow(u64),
    /// Local memory window.
    LocalWindow(u64),
    /// Local memory backing store address.
    LocalMemory(u64),
    /// Local memory per TPC and max SM count.
    LocalMemoryPerTpc {
        /// Bytes per TPC.
        bytes: u64,
        /// `MAX_SM_COUNT` word.
        max_sm: u32,
    },
    /// Cache invalidation (raw flags of `INVALIDATE_SHADER_CACHES_NO_WFI`).
    InvalidateCaches(u32),
    /// Compute-engine semaphore release.
    ComputeSemaphoreRelease {
        /// Address.
        va: u64,
        /// Payload.
        value: u64,
        /// 64-bit payload.
        payload64: bool,
    },
}

/// A method-level state machine: remembers register values per subchannel and turns trigger
/// methods into [`Operation`]s.
#[derive(Clone, Debug, Default)]
pub struct Decoder {
    classes: [Option<u32>; 8],
    regs: HashMap<(u8, u32), u32>,
}

fn join(hi: u32, lo: u32) -> u64 {
    ((hi as u64) << 32) | lo as u64
}

impl Decoder {
    /// A decoder with no objects bound.
    pub fn new() -> Self {
        Self::default()
    }

    /// Binds `class` to `subchannel` as an earlier `SET_OBJECT` did.
    pub fn bind(&mut self, subchannel: u8, class: u32) {
        self.classes[subchannel as usize & 7] = Some(class);
    }

    fn reg(&self, sc: u8, m: u32) -> u32 {
        self.regs.get(&(sc, m)).copied().unwrap_or(0)
    }

    /// The last value written to `method` on `subchannel` (0 if never written): state an
    /// executor reads beside an [`Operation`] (a copy's flags, a semaphore's reduction).
    pub fn register(&self, subchannel: u8, method: u32) -> u32 {
        self.reg(subchannel & 7, method)
    }

    /// The class bound to `subchannel`, if any.
    pub fn class(&self, subchannel: u8) -> Option<u32> {
        self.classes[subchannel as usize & 7]
    }

    /// Applies one method write, as [`Decoder::decode`] does for each write of a segment: the
    /// operations it triggers (a copy launch with a semaphore triggers two, in that order).
    /// For executors that stop between methods (a channel waiting on a semaphore).
    pub fn apply(
        &mut self,
        w: MethodWrite,
    ) -> Result<(Option<Operation>, Option<Operation>), DecodeError> {
        self.write_one(w)
    }

    /// Decodes `words`, updating the bindings and registers.
    pub fn decode(&mut self, words: &[u32]) -> Result<Vec<Operation>, DecodeError> {
        let mut ops = Vec::new();
        for w in method_writes(words)? {
            let (a, b) = self.write_one(w)?;
            ops.extend(a.into_iter().chain(b));
        }
        Ok(ops)
    }

    /// Applies one method write; a copy launch with a semaphore yields two operations.
    fn write_one(
        &mut self,
        w: MethodWrite,
    ) -> Result<(Option<Operation>, Option<Operation>), DecodeError> {
        // Subchannels are 3 bits in a method header; mask as `bind` does.
        let (sc, m, v) = (w.subchannel & 7, w.method, w.value);
        self.regs.insert((sc, m), v);
        let r = |mm: u32| self.reg(sc, mm);
        // Host methods (< 0x100) work on every subchannel.
        match m {
            0x000 => {
                self.classes[sc as usize] = Some(v & 0xffff);
                return Ok((
                    Some(Operation::SetObject {
                        subchannel: sc,
                        class: v & 0xffff,
                    }),
                    None,
                ));
            }
            0x06c => {
                let op = match v & 7 {
                    0 => HostSemaphoreOp::AcquireEqual,
                    1 => HostSemaphoreOp::Release {
                        wait_for_idle: v & (1 << 20) != 0,
                        timestamp: v & (1 << 25) != 0,
                    },
                    2 => HostSemaphoreOp::AcquireStrictGeq,
                    3 => HostSemaphoreOp::AcquireCircGeq,
                    o => HostSemaphoreOp::Other(o),
                };
                let sem = Operation::HostSemaphore {
                    va: join(r(0x60) & 0x1ff_ffff, r(0x5c)),
                    value: join(r(0x68), r(0x64)),
                    payload64: v & (1 << 24) != 0,
                    op,
                };
                return Ok((Some(sem), None));
            }
            0x078 => return Ok((Some(Operation::WaitForIdle), None)),
            m if m < 0x100 => return Ok((None, None)),
            _ => {}
        }
        let Some(class) = self.classes[sc as usize] else {
            return match m {
                0x2c0 | 0x300 | 0x1698 | 0x168 => Err(DecodeError::Unbound {
                    subchannel: sc,
                    method: m,
                }),
                _ => Ok((None, None)),
            };
        };
        // TURING_DMA_COPY_A (clc5b5.h) and AMPERE_DMA_COPY_A (clc6b5.h) have neither
        // SET_SEMAPHORE_PAYLOAD_UPPER (0x24c) nor LAUNCH_DMA_SEMAPHORE_PAYLOAD_SIZE (27:27):
        // their releases are 32-bit.
        let narrow_copy = matches!(class, 0xc5b5 | 0xc6b5);
        if narrow_copy && m == 0x24c {
            return Err(DecodeError::NotInClass {
                class,
                method: m,
                why: "no SET_SEMAPHORE_PAYLOAD_UPPER before AMPERE_DMA_COPY_B (clc5b5.h, clc6b5.h)",
            });
        }
        if let (Engine::Copy, 0x300) = (Engine::of(class), m) {
            let semaphore = (v >> 3) & 3;
            let payload64 = v & (1 << 27) != 0;
            if narrow_copy && payload64 {
                return Err(DecodeError::NotInClass {
                    class,
                    method: m,
                    why: "LAUNCH_DMA bit 27 is not SEMAPHORE_PAYLOAD_SIZE before \
                          AMPERE_DMA_COPY_B (clc5b5.h, clc6b5.h): 32-bit releases only",
                });
            }
            let copy = (v & 3 != 0).then(|| Operation::Copy {
                src: join(r(0x400), r(0x404)),
                dst: join(r(0x408), r(0x40c)),
                len: r(0x418),
            });
            let sem = (semaphore != 0).then(|| Operation::CopySemaphoreRelease {
                va: join(r(0x240), r(0x244)),
                value: if payload64 {
                    join(r(0x24c), r(0x248))
                } else {
                    r(0x248) as u64
                },
                payload64,
                timestamp: semaphore == 2,
            });
            return Ok((copy, sem));
        }
        // TURING_COMPUTE_A (clc5c0.h) launches with SEND_SIGNALING_PCAS_B (0x2bc: INVALIDATE
        // 0:0, SCHEDULE 1:1) and has no SEND_SIGNALING_PCAS2_B (0x2c0). Its two bits read as
        // PCAS2's actions NOP 0, INVALIDATE 1, SCHEDULE 2, INVALIDATE_COPY_SCHEDULE 3.
        let turing = class == 0xc5c0;
        if turing && m == 0x2c0 {
            return Err(DecodeError::NotInClass {
                class,
                method: m,
                why: "TURING_COMPUTE_A has no SEND_SIGNALING_PCAS2_B (clc5c0.h); use \
                      SEND_SIGNALING_PCAS_B (0x2bc)",
            });
        }
        let op = match (Engine::of(class), m) {
            (Engine::Compute, 0x2bc) if turing => Some(Operation::LaunchQmd {
                qmd_va: (r(0x2b4) as u64) << 8,
                action: v & 3,
            }),
            (Engine::Compute, 0x2c0) => Some(Operation::LaunchQmd {
                qmd_va: (r(0x2b4) as u64) << 8,
                action: v & 0xf,
            }),
            (Engine::Compute, 0x2a4) => Some(Operation::SharedWindow(join(r(0x2a0), v))),
            (Engine::Compute, 0x7b4) => Some(Operation::LocalWindow(join(r(0x7b0), v))),
            (Engine::Compute, 0x794) => Some(Operation::LocalMemory(join(r(0x790), v))),
            (Engine::Compute, 0x2ec) => Some(Operation::LocalMemoryPerTpc {
                bytes: join(r(0x2e4), r(0x2e8)),
                max_sm: v,
            }),
            (Engine::Compute, 0x1698) => Some(Operation::InvalidateCaches(v)),
            (Engine::Compute, 0x168) => Some(Operation::ComputeSemaphoreRelease {
                va: join(r(0x164), r(0x160)),
                value: if v & (1 << 12) != 0 {
                    join(r(0x15c), r(0x158))
                } else {
                    r(0x158) as u64
                },
                payload64: v & (1 << 12) != 0,
            }),
            _ => None,
        };
        Ok((op, None))
    }
}
