//! What can go wrong driving a GPU through [`Gpu`](super::Gpu): one variant per failed step,
//! each wrapping its cause, so a caller can tell a timeout or an MMU fault from a refused
//! allocation without reading the message.

use alloc::boxed::Box;
use alloc::string::String;

use crate::cubin::CubinError;
use crate::gpfifo::GpFifoError;
use crate::launch::LaunchError;
use crate::push::PushError;
use crate::qmd::QmdError;
use crate::rm::{FaultReport, NoClass, Step};
use crate::sem::SemaphoreError;
use crate::shared::SharedMemError;

/// An error of the GPU layer over a backend whose own errors are `E`.
#[derive(Debug, thiserror::Error)]
pub enum GpuError<E: core::error::Error + 'static> {
    /// A step the backend carries out (an RM call, memory, a registration) failed.
    #[error("{step}: {source}")]
    Backend {
        /// The step.
        step: Step,
        /// The backend's error.
        #[source]
        source: E,
    },
    /// The GPU offers none of the classes nvbare drives an engine with.
    #[error(transparent)]
    NoClass(#[from] NoClass),
    /// The compute class has no QMD layout nvbare knows.
    #[error("no QMD layout for compute class {0:#x}; this chip is not supported yet")]
    NoQmdLayout(u32),
    /// The SM version has no known constant bank 0 layout.
    #[error("no constant-bank layout for sm_{0}; this chip is not supported yet")]
    NoCbufLayout(u32),
    /// A channel could not take a submission (full, stalled, bad memory).
    #[error("submission: {0}")]
    Submit(#[from] GpFifoError),
    /// A wait ran out of time (the engine is stalled); nothing reported a fault.
    #[error("{0}")]
    Wait(#[from] SemaphoreError),
    /// The GPU reported a fault while work was waited for.
    #[error("{report} (then: {then})")]
    Fault {
        /// What faulted.
        report: Box<FaultReport>,
        /// How the wait ended.
        #[source]
        then: SemaphoreError,
    },
    /// The cubin could not be parsed, or lacks the kernel.
    #[error("cubin: {0}")]
    Cubin(#[from] CubinError),
    /// The cubin was built for another SM.
    #[error("cubin is for sm_{cubin} but this GPU is sm_{gpu}; recompile with -arch=sm_{gpu}")]
    WrongSm {
        /// The cubin's SM.
        cubin: u32,
        /// The GPU's SM.
        gpu: u32,
    },
    /// A launch's shape or parameters do not fit the kernel or the GPU.
    #[error("launch of {kernel}: {source}")]
    Launch {
        /// The kernel's name.
        kernel: String,
        /// Why.
        #[source]
        source: LaunchError,
    },
    /// A QMD field could not be set.
    #[error("QMD: {0}")]
    Qmd(#[from] QmdError),
    /// Methods could not be encoded (an address too wide, a count too large).
    #[error("methods: {0}")]
    Push(#[from] PushError),
    /// A CPU access to GPU memory fell outside it.
    #[error("{0}")]
    Memory(#[from] SharedMemError),
    /// A launch's QMD and constant bank 0 do not fit the arena.
    #[error(
        "a launch needs {bytes:#x} bytes of QMD and constant bank 0; the arena has {arena:#x}: \
         configure a larger arena"
    )]
    ArenaTooSmall {
        /// Bytes needed.
        bytes: u64,
        /// Arena bytes.
        arena: u64,
    },
    /// A timed op's stamps were read after the stamp ring gave its pair to a later op.
    #[error(
        "the GPU stamps of timed op {tag} were overwritten by op {found}: read them (Gpu::times) \
         before {pairs} more timed ops are submitted",
        pairs = super::timing::STAMP_PAIRS
    )]
    StampsReused {
        /// The op's number.
        tag: u64,
        /// The number found in its pair.
        found: u64,
    },
    /// A sub-allocation outside what the pool serves.
    #[error("pool requests must be 1..={max:#x} bytes, got {size:#x}; use Gpu::alloc")]
    PoolRequest {
        /// Bytes asked for.
        size: u64,
        /// The largest the pool serves.
        max: u64,
    },
    /// The sub-allocator could not place a request.
    #[error("sub-allocator: {0}")]
    Pool(#[from] nvbare_mmu::MmuError),
    /// A recording, a patch or a replay of a recorded sequence was refused.
    #[error("recorded sequence: {0}")]
    Sequence(#[from] super::SequenceError),
    /// A buffer the GPU layer must write has no CPU view.
    #[error("buffer at {0:#x} has no CPU view; allocate it with CPU access")]
    NoCpuView(u64),
}

impl<E: core::error::Error + 'static> GpuError<E> {
    /// The fault the GPU reported, if this is one.
    pub fn fault(&self) -> Option<&FaultReport> {
        match self {
            Self::Fault { report, .. } => Some(report),
            _ => None,
        }
    }

    /// The same error with the backend's cause turned into `F` (a caller that drives several
    /// backends keeps one error type: the CLI's `BackendError`).
    pub fn map_backend<F: core::error::Error + 'static>(
        self,
        f: impl FnOnce(E) -> F,
    ) -> GpuError<F> {
        match self {
            Self::Backend { step, source } => GpuError::Backend {
                step,
                source: f(source),
            },
            Self::NoClass(e) => GpuError::NoClass(e),
            Self::NoQmdLayout(c) => GpuError::NoQmdLayout(c),
            Self::NoCbufLayout(sm) => GpuError::NoCbufLayout(sm),
            Self::Submit(e) => GpuError::Submit(e),
            Self::Wait(e) => GpuError::Wait(e),
            Self::Fault { report, then } => GpuError::Fault { report, then },
            Self::Cubin(e) => GpuError::Cubin(e),
            Self::WrongSm { cubin, gpu } => GpuError::WrongSm { cubin, gpu },
            Self::Launch { kernel, source } => GpuError::Launch { kernel, source },
            Self::Qmd(e) => GpuError::Qmd(e),
            Self::StampsReused { tag, found } => GpuError::StampsReused { tag, found },
            Self::Push(e) => GpuError::Push(e),
            Self::Memory(e) => GpuError::Memory(e),
            Self::ArenaTooSmall { bytes, arena } => GpuError::ArenaTooSmall { bytes, arena },
            Self::PoolRequest { size, max } => GpuError::PoolRequest { size, max },
            Self::Pool(e) => GpuError::Pool(e),
            Self::NoCpuView(va) => GpuError::NoCpuView(va),
            Self::Sequence(e) => GpuError::Sequence(e),
        }
    }

    /// Whether a wait ran out of time (with or without a fault report).
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            Self::Wait(SemaphoreError::Timeout(_))
                | Self::Fault {
                    then: SemaphoreError::Timeout(_),
                    ..
                }
                | Self::Submit(GpFifoError::Timeout(_))
        )
    }
}
