//! What can go wrong emulating RM over GSP-RM: a call GSP-RM refused (its `NV_STATUS`,
//! naming the class or command), an RPC that did not complete, memory that could not be
//! had or mapped, and opening or closing the GPU.

use alloc::boxed::Box;
use core::fmt;

use nvbare_gsp::rm::classes;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rpc::RpcResult;
use nvbare_gsp::rpc::commands::CommandError;
use nvbare_mmu::MmuError;

use crate::boot::BootError;
use crate::gpu::GpuError;
use crate::gsp_rpc::RpcError;
use crate::hal::PlatformError;
use crate::rm::{Handle, NoClass};
use crate::shared::SharedMemError;

/// One RM call made to GSP-RM, as an error names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmCall {
    /// `GSP_RM_ALLOC` of `class` under `parent`.
    Alloc {
        /// The class.
        class: u32,
        /// The parent.
        parent: Handle,
    },
    /// `GSP_RM_CONTROL` `cmd` on `object`.
    Control {
        /// The command.
        cmd: u32,
        /// The object.
        object: Handle,
    },
    /// `FREE` of `object`.
    Free {
        /// The object.
        object: Handle,
    },
    /// `SET_PAGE_DIRECTORY` of a VA space.
    SetPageDirectory {
        /// The VA space.
        vaspace: Handle,
    },
}

impl fmt::Display for RmCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Alloc { class, parent } => {
                write!(f, "GSP_RM_ALLOC of class {class:#06x}")?;
                if let Some(n) = classes::name_of(class) {
                    write!(f, " ({n})")?;
                }
                write!(f, " under {parent:#x}")
            }
            Self::Control { cmd: c, object } => {
                write!(f, "GSP_RM_CONTROL {c:#010x}")?;
                if let Some((n, _, _)) = cmd::ALL.iter().find(|e| e.2 == c) {
                    write!(f, " ({n})")?;
                }
                write!(f, " on {object:#x}")
            }
            Self::Free { object } => write!(f, "FREE of {object:#x}"),
            Self::SetPageDirectory { vaspace } => {
                write!(f, "SET_PAGE_DIRECTORY of VA space {vaspace:#x}")
            }
        }
    }
}

/// Memory the RM emulation could not provide.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// No VRAM, VA range or page-table memory of the size asked.
    #[error("{what}: {source}")]
    Exhausted {
        /// What was being allocated ("VRAM", "GPU virtual addresses", "a page table").
        what: &'static str,
        /// The allocator's error.
        #[source]
        source: MmuError,
    },
    /// Writing the page tables failed (a table outside the window that reaches VRAM).
    #[error("page tables: {0}")]
    PageTables(#[source] MmuError),
    /// The platform could not provide DMA memory.
    #[error("DMA memory: {0}")]
    Dma(#[source] PlatformError),
    /// VRAM the CPU must see lies beyond the BAR1 window (or there is none).
    #[error(
        "VRAM {pa:#x}+{size:#x} needs a CPU view but BAR1 reaches only {window:#x} bytes; \
         allocate it without CPU access, or enable resizable BAR in the firmware setup"
    )]
    NoCpuWindow {
        /// Physical address.
        pa: u64,
        /// Bytes.
        size: u64,
        /// Bytes BAR1 reaches (0 without BAR1).
        window: u64,
    },
    /// A channel's USERD offset lies outside the buffer given for it.
    #[error(
        "USERD at offset {offset:#x} lies outside its {buffer:#x}-byte buffer: a caller bug \
         (USERD must be inside the channel's USERD buffer)"
    )]
    UserdOutsideBuffer {
        /// The offset asked for.
        offset: u64,
        /// The buffer's size.
        buffer: u64,
    },
    /// A CPU access through BAR1 or PRAMIN fell outside the window.
    #[error("VRAM window: {0}")]
    Window(#[from] SharedMemError),
    /// A BAR1 bind or TLB invalidate never completed.
    #[error(
        "{what} never completed (register reads {value:#x}): {timed_out}; reset the GPU and \
         try again"
    )]
    RegisterStuck {
        /// What was waited for.
        what: &'static str,
        /// The register's last value.
        value: u32,
        /// The wait.
        timed_out: crate::hal::TimedOut,
    },
    /// The device vanished while a BAR1 bind or TLB invalidate was awaited.
    #[error("{what}: the GPU no longer answers (config space reads all ones)")]
    DeviceGone {
        /// What was waited for.
        what: &'static str,
    },
    /// A DMA allocation whose bus addresses cannot be mapped (not 4 KiB pages).
    #[error("DMA memory at bus address {bus:#x} is not 4 KiB aligned: a platform bug")]
    BadDmaPage {
        /// The bus address.
        bus: u64,
    },
}

/// What went wrong reaching RM through GSP-RM.
#[derive(Debug, thiserror::Error)]
pub enum GspRmError {
    /// GSP-RM did the call and answered with a failure status.
    #[error("GSP-RM refused {call}: {status}{}", describe(*status))]
    Refused {
        /// The call.
        call: RmCall,
        /// The `NV_STATUS`.
        status: RpcResult,
    },
    /// The call did not complete: no answer in time, GSP-RM halted, the device vanished, a
    /// corrupt reply.
    #[error("{call}: {source}")]
    Rpc {
        /// The call.
        call: RmCall,
        /// Why.
        #[source]
        source: Box<RpcError>,
    },
    /// The call's arguments cannot be encoded.
    #[error("{call}: {source}")]
    Encode {
        /// The call.
        call: RmCall,
        /// Why.
        #[source]
        source: CommandError,
    },
    /// GSP-RM answered with a reply of another kind.
    #[error("{call}: GSP-RM's reply is not a reply to it; reset the GPU and try again")]
    UnexpectedReply {
        /// The call.
        call: RmCall,
    },
    /// GSP-RM answered with a parameter block of another size than the one sent, so the
    /// parameters it filled in cannot be read back (for an allocation: the object was made,
    /// and is freed with its client).
    #[error(
        "{call}: GSP-RM's reply carries {got} bytes of parameters for the {sent} sent; the \
         firmware does not speak the 570.144 ABI nvbare was built for: check the firmware files"
    )]
    ReplySize {
        /// The call.
        call: RmCall,
        /// Bytes of parameters sent.
        sent: usize,
        /// Bytes of parameters in the reply.
        got: usize,
    },
    /// Every object handle is in use.
    #[error("all RM object handles are in use: free objects first")]
    OutOfHandles,
    /// Memory could not be provided.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// Servicing GSP-RM's status queue failed.
    #[error("servicing GSP-RM's events: {0}")]
    Events(#[source] Box<RpcError>),
    /// A channel the RM emulation did not allocate.
    #[error("channel {0:#x} was not allocated through this GSP-RM")]
    UnknownChannel(Handle),
    /// GSP-RM's device info table listed no runlist for a channel's engine, so its doorbell
    /// token cannot be made (a token for runlist 0 would ring another engine's channel).
    #[error(
        "channel {channel:#x} runs on engine type {engine_type:#x}, for which GSP-RM's device \
         info table (NV2080_CTRL_CMD_FIFO_GET_DEVICE_INFO_TABLE) lists no runlist; allocate \
         the channel on an engine the GPU has"
    )]
    UnknownRunlist {
        /// The channel.
        channel: Handle,
        /// Its `NV2080_ENGINE_TYPE`.
        engine_type: u32,
    },
    /// GSP-RM's device info table went on (`bMore`) past the
    /// `NV2080_CTRL_FIFO_GET_DEVICE_INFO_TABLE_MAX_DEVICES` entries it can have.
    #[error(
        "GSP-RM's device info table (NV2080_CTRL_CMD_FIFO_GET_DEVICE_INFO_TABLE) still had \
         more after {entries} entries, past its maximum of \
         NV2080_CTRL_FIFO_GET_DEVICE_INFO_TABLE_MAX_DEVICES = 256; the firmware is not the \
         570.144 GSP-RM or is misbehaving: reset the GPU and check the firmware files"
    )]
    DeviceInfoTableTooLong {
        /// Entries read.
        entries: u32,
    },
    /// The device no longer answers.
    #[error(
        "the GPU no longer answers (BAR0 reads 0xffffffff): it was removed or reset; check \
         dmesg and the PCI bus"
    )]
    DeviceGone,
}

fn describe(status: RpcResult) -> alloc::string::String {
    status
        .description()
        .map(|d| alloc::format!(" ({d})"))
        .unwrap_or_default()
}

impl GspRmError {
    /// The `NV_STATUS` GSP-RM refused a call with, if it did.
    pub fn status(&self) -> Option<RpcResult> {
        match self {
            Self::Refused { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// An RPC error for `call`: a failure status becomes [`GspRmError::Refused`].
    pub(crate) fn from_rpc(call: RmCall, e: RpcError) -> Self {
        match e.status() {
            Some(status) => Self::Refused { call, status },
            None => Self::Rpc {
                call,
                source: Box::new(e),
            },
        }
    }
}

/// The step of opening the GPU over GSP-RM that failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Booting GSP-RM.
    #[error("booting GSP-RM: {0}")]
    Boot(#[source] Box<BootError>),
    /// Setting up RM over the booted GSP-RM (clients, page tables, golden context).
    #[error("setting up RM over GSP-RM ({step}): {source}")]
    Setup {
        /// What was being set up.
        step: &'static str,
        /// Why it failed.
        #[source]
        source: GspRmError,
    },
    /// GSP-RM offers none of the classes nvbare drives an engine with.
    #[error("{0}")]
    NoClass(#[from] NoClass),
    /// Building the GPU layer (object tree, channels, engines).
    #[error("{0}")]
    Gpu(#[source] Box<GpuError<GspRmError>>),
}

impl OpenError {
    /// Whether this is (or wraps) a GSP-RM refusal with `status`.
    pub fn refused_with(&self) -> Option<RpcResult> {
        match self {
            Self::Setup { source, .. } => source.status(),
            Self::Gpu(e) => match &**e {
                GpuError::Backend { source, .. } => source.status(),
                _ => None,
            },
            Self::Boot(_) | Self::NoClass(_) => None,
        }
    }
}
