//! Queue Meta Data (QMD): the in-memory descriptor of one compute grid that the compute
//! engine's scheduler reads when `SEND_PCAS_A` points it there.
//!
//! Four layouts: version 2 (02_03: Turing; 256 bytes), 3 (Ampere, Ada; 256 bytes), 4 (Hopper;
//! 384 bytes) and 5 (Blackwell; 384 bytes). Each is a table of typed [`QmdField`]s in [`v2`],
//! [`v3`], [`v4`], [`v5`] whose positions `core/tests/submit_qmd_fields.rs` checks against
//! NVIDIA's `cl*qmd.h` headers.
//! [`Qmd::build`] fills any of them from one version-independent [`QmdParams`].

pub mod field;
mod layout;
pub mod v2;
pub mod v3;
pub mod v4;
pub mod v5;

use alloc::vec::Vec;
use core::fmt;
pub use field::{QmdArray, QmdField};
pub use layout::{DependentFields, LatchFields, Layout, ReleaseFields};

/// Largest QMD in words.
pub const MAX_QMD_WORDS: usize = 96;
/// QMDs are read at 256-byte aligned addresses (`SEND_PCAS_A` takes the address >> 8).
pub const QMD_ALIGN: u64 = 256;

/// A QMD layout version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QmdVersion {
    /// 02_03: TURING_COMPUTE_A (0xc5c0; `clc5c0qmd.h` is "Queue Meta Data, Version 02_03").
    V2,
    /// 03_00: AMPERE_COMPUTE_A/B (0xc6c0, 0xc7c0), ADA_COMPUTE_A (0xc9c0).
    V3,
    /// 04_00: HOPPER_COMPUTE_A (0xcbc0).
    V4,
    /// 05_00: BLACKWELL_COMPUTE_A/B (0xcdc0, 0xcec0).
    V5,
}

impl QmdVersion {
    /// The version a compute class uses, or `None` for classes this crate does not drive.
    pub fn for_compute_class(class: u32) -> Option<Self> {
        match class {
            0xc5c0 => Some(Self::V2),
            0xc6c0 | 0xc7c0 | 0xc9c0 => Some(Self::V3),
            0xcbc0 => Some(Self::V4),
            0xcdc0 | 0xcec0 => Some(Self::V5),
            _ => None,
        }
    }

    /// Size in bytes.
    pub const fn size_bytes(self) -> usize {
        match self {
            Self::V2 | Self::V3 => 256,
            Self::V4 | Self::V5 => 384,
        }
    }

    /// The field table.
    pub fn layout(self) -> &'static Layout {
        match self {
            Self::V2 => &v2::LAYOUT,
            Self::V3 => &v3::LAYOUT,
            Self::V4 => &v4::LAYOUT,
            Self::V5 => &v5::LAYOUT,
        }
    }

    /// The major version number written into `QMD_MAJOR_VERSION`.
    pub const fn major(self) -> u64 {
        match self {
            Self::V2 => 2,
            Self::V3 => 3,
            Self::V4 => 4,
            Self::V5 => 5,
        }
    }

    /// The minor version written into `QMD_VERSION` / `QMD_MINOR_VERSION` (3 for 02_03, 0 for
    /// the others).
    pub const fn minor(self) -> u64 {
        match self {
            Self::V2 => 3,
            Self::V3 | Self::V4 | Self::V5 => 0,
        }
    }
}

/// A QMD could not be built as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QmdError {
    /// A value does not fit its field.
    FieldOverflow {
        /// The field's header name.
        field: &'static str,
        /// The value.
        value: u64,
        /// The largest it holds.
        max: u64,
    },
    /// An address lacks the alignment its field requires.
    Misaligned {
        /// What the address is.
        what: &'static str,
        /// The address.
        va: u64,
        /// Required alignment.
        align: u64,
    },
    /// Constant buffer index above 7, or release slot beyond the version's slots.
    NoSuchSlot {
        /// What kind of slot.
        what: &'static str,
        /// The index asked for.
        index: u32,
    },
    /// Bytes given to [`Qmd::from_bytes`] have the wrong length.
    WrongSize {
        /// Expected bytes.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
}

impl fmt::Display for QmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::FieldOverflow { field, value, max } => write!(
                f,
                "QMD field {field} cannot hold {value:#x} (max {max:#x}); reduce the launch parameter"
            ),
            Self::Misaligned { what, va, align } => write!(
                f,
                "{what} at {va:#x} must be {align}-byte aligned for the QMD; align the allocation"
            ),
            Self::NoSuchSlot { what, index } => write!(f, "QMD has no {what} slot {index}"),
            Self::WrongSize { expected, got } => write!(
                f,
                "QMD of {got} bytes given, this version is {expected} bytes"
            ),
        }
    }
}

impl core::error::Error for QmdError {}

/// One constant buffer binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstantBuffer {
    /// Bank number, 0..=7 (0 holds driver slots and the kernel parameters).
    pub index: u32,
    /// GPU VA (256-byte aligned is always safe; v4/v5 need 64).
    pub va: u64,
    /// Size in bytes (rounded up to 16).
    pub size: u32,
}

/// SM shared-memory carveout selection, each in KiB (encoded as KiB / 4 + 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedMemoryConfig {
    /// Smallest carveout the grid may run with.
    pub min_kib: u32,
    /// Preferred carveout.
    pub target_kib: u32,
    /// Largest carveout.
    pub max_kib: u32,
}

/// Everything a grid launch puts into a QMD, independent of the layout version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QmdParams {
    /// GPU VA of the kernel's first instruction (v5 needs 16-byte alignment).
    pub program_va: u64,
    /// Bytes of code, for instruction prefetch (0: no prefetch).
    pub program_size: u64,
    /// Registers per thread.
    pub register_count: u32,
    /// Named barriers used (0..=16; at least 1 if the kernel uses `__syncthreads`).
    pub barrier_count: u32,
    /// Grid in CTAs.
    pub grid: [u32; 3],
    /// CTA in threads.
    pub block: [u32; 3],
    /// Shared memory per CTA in bytes (static + dynamic + reserved).
    pub shared_memory_bytes: u32,
    /// Carveout choice.
    pub shared_config: SharedMemoryConfig,
    /// Local memory per thread in the high window (nvcc's stack), bytes.
    pub local_memory_bytes: u32,
    /// Constant buffer bindings.
    pub constant_buffers: Vec<ConstantBuffer>,
    /// `SASS_VERSION` (e.g. 0x90 for sm_90), informational for the hardware.
    pub sass_version: u8,
}

/// `QMD_TYPE_GRID_CTA`.
pub const QMD_TYPE_GRID_CTA: u64 = 2;
/// `DEPENDENT_QMD_ACTION_QMD_SCHEDULE` (v2: `DEPENDENT_QMD_TYPE_GRID`, also 1).
pub const DEPENDENT_ACTION_SCHEDULE: u64 = 1;
/// `CWD_MEMBAR_TYPE_L1_SYSMEMBAR`.
pub const CWD_MEMBAR_L1_SYSMEMBAR: u64 = 1;
/// `CONSTANT_BUFFER_PREFETCH_PREFETCH_PRE`.
pub const CONSTANT_BUFFER_PREFETCH_PRE: u64 = 1;
/// `CWD_MEMBAR_TYPE_L1_MEMBAR`: the CTAs' writes made visible GPU-wide (not to the host).
pub const CWD_MEMBAR_L1_MEMBAR: u64 = 3;

/// A QMD of one version, as words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Qmd {
    version: QmdVersion,
    words: [u32; MAX_QMD_WORDS],
}

impl Qmd {
    /// A zeroed QMD with only its version fields set.
    pub fn new(version: QmdVersion) -> Self {
        let mut q = Self {
            version,
            words: [0; MAX_QMD_WORDS],
        };
        let l = version.layout();
        // Constants that always fit.
        let _ = l.major_version.set(&mut q.words, version.major());
        let _ = l.minor_version.set(&mut q.words, version.minor());
        q
    }

    /// Parses `bytes` (exactly the version's size) as a QMD.
    pub fn from_bytes(version: QmdVersion, bytes: &[u8]) -> Result<Self, QmdError> {
        if bytes.len() != version.size_bytes() {
            return Err(QmdError::WrongSize {
                expected: version.size_bytes(),
                got: bytes.len(),
            });
        }
        let mut words = [0u32; MAX_QMD_WORDS];
        for (w, c) in words.iter_mut().zip(bytes.chunks_exact(4)) {
            *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        Ok(Self { version, words })
    }

    /// The version.
    pub fn version(&self) -> QmdVersion {
        self.version
    }

    /// The layout.
    pub fn layout(&self) -> &'static Layout {
        self.version.layout()
    }

    /// The QMD's words (64 or 96).
    pub fn words(&self) -> &[u32] {
        &self.words[..self.version.size_bytes() / 4]
    }

    /// The QMD's bytes, as written to GPU memory.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.words().iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// Reads a field.
    pub fn get(&self, field: QmdField) -> u64 {
        field.get(self.words())
    }

    /// Writes a field, or says which field the value overflows.
    pub fn set(&mut self, field: QmdField, value: u64) -> Result<(), QmdError> {
        let n = self.version.size_bytes() / 4;
        if field.set(&mut self.words[..n], value) {
            Ok(())
        } else {
            Err(QmdError::FieldOverflow {
                field: field.name,
                value,
                max: field.max(),
            })
        }
    }

    fn set_shifted(
        &mut self,
        lower: QmdField,
        upper: QmdField,
        va: u64,
        shift: u32,
        what: &'static str,
    ) -> Result<(), QmdError> {
        if va & ((1u64 << shift) - 1) != 0 {
            return Err(QmdError::Misaligned {
                what,
                va,
                align: 1 << shift,
            });
        }
        let s = va >> shift;
        self.set(lower, s & 0xffff_ffff)?;
        self.set(upper, s >> 32)
    }

    /// Fills a QMD of `version` from `p`.
    pub fn build(version: QmdVersion, p: &QmdParams) -> Result<Self, QmdError> {
        let l = version.layout();
        let mut q = Self::new(version);
        if let Some(t) = l.qmd_type {
            q.set(t, QMD_TYPE_GRID_CTA)?;
        }
        q.set(l.qmd_group_id, 0x3f)?;
        if let Some(f) = l.sm_global_caching_enable {
            q.set(f, 1)?;
        }
        q.set(l.api_visible_call_limit, 1)?; // NO_CHECK
        q.set(l.sampler_index, 1)?; // VIA_HEADER_INDEX, as tinygrad
        // Texture header/sampler/data and shader data caches, as tinygrad's driver does; the
        // instruction and constant caches are invalidated by `compute::invalidate_caches` after
        // code uploads and per bank by CONSTANT_BUFFER_INVALIDATE.
        for f in &l.invalidate_caches[..4] {
            q.set(*f, 1)?;
        }
        q.set(l.cwd_membar_type, CWD_MEMBAR_L1_SYSMEMBAR)?;
        for i in 0..3 {
            q.set(l.grid[i], p.grid[i] as u64)?;
            q.set(l.block[i], p.block[i] as u64)?;
        }
        q.set(l.register_count, p.register_count as u64)?;
        q.set(l.barrier_count, p.barrier_count as u64)?;
        q.set_shifted(
            l.program_lower,
            l.program_upper,
            p.program_va,
            l.program_shift,
            "program",
        )?;
        if p.program_size > 0 {
            let pf = p.program_va >> 8;
            q.set(l.prefetch_lower_shifted8, pf & 0xffff_ffff)?;
            q.set(l.prefetch_upper_shifted8, pf >> 32)?;
            q.set(
                l.prefetch_size,
                (p.program_size >> 8).min(l.prefetch_size.max()),
            )?;
        }
        q.set(l.sass_version, p.sass_version as u64)?;
        let smem = (p.shared_memory_bytes as u64).next_multiple_of(256);
        q.set(l.shared_memory_size, smem >> l.shared_memory_shift)?;
        let cfg = |kib: u32| kib as u64 / 4 + 1;
        q.set(l.min_sm_config_shared, cfg(p.shared_config.min_kib))?;
        q.set(l.max_sm_config_shared, cfg(p.shared_config.max_kib))?;
        q.set(l.target_sm_config_shared, cfg(p.shared_config.target_kib))?;
        let lmem = (p.local_memory_bytes as u64).next_multiple_of(16);
        q.set(l.local_memory_high, lmem >> l.local_memory_shift)?;
        for cb in &p.constant_buffers {
            q.set_constant_buffer(*cb)?;
        }
        Ok(q)
    }

    /// Binds constant buffer `cb.index` (and asks for its cache lines to be invalidated).
    pub fn set_constant_buffer(&mut self, cb: ConstantBuffer) -> Result<(), QmdError> {
        let l = self.layout();
        let slot = |a: QmdArray| {
            a.at(cb.index).ok_or(QmdError::NoSuchSlot {
                what: "constant buffer",
                index: cb.index,
            })
        };
        let (lo, hi) = (slot(l.cbuf_addr_lower)?, slot(l.cbuf_addr_upper)?);
        self.set_shifted(lo, hi, cb.va, l.cbuf_addr_shift, "constant buffer")?;
        let size = (cb.size as u64).next_multiple_of(16);
        self.set(slot(l.cbuf_size_shifted4)?, size >> 4)?;
        self.set(slot(l.cbuf_valid)?, 1)?;
        self.set(slot(l.cbuf_invalidate)?, 1)
    }

    /// Has constant buffer `index` fetched before the grid starts (`PREFETCH_PRE`), where the
    /// layout has the field (v4 and later); a no-op on v3.
    pub fn prefetch_constant_buffer(&mut self, index: u32) -> Result<(), QmdError> {
        let Some(a) = self.layout().cbuf_prefetch else {
            return Ok(());
        };
        let f = a.at(index).ok_or(QmdError::NoSuchSlot {
            what: "constant buffer",
            index,
        })?;
        self.set(f, CONSTANT_BUFFER_PREFETCH_PRE)
    }

    /// The fields of release slot `slot`.
    fn release_fields(&self, slot: u32) -> Result<ReleaseFields, QmdError> {
        self.layout()
            .releases
            .get(slot as usize)
            .copied()
            .ok_or(QmdError::NoSuchSlot {
                what: "release semaphore",
                index: slot,
            })
    }

    /// Number of release semaphore slots.
    pub fn release_slots(&self) -> usize {
        self.layout().releases.len()
    }

    /// Makes the grid write the 64-bit `payload` (with a timestamp at +8) to `va` (16-byte
    /// aligned) when it completes, using release slot `slot`.
    ///
    /// The release has no front-end membar of its own (`MEMBAR_TYPE_FE_NONE`, as tinygrad's
    /// driver leaves it): every CTA already ends with the QMD's `CWD_MEMBAR_TYPE`
    /// (L1 + sysmembar by default), so the grid's writes are visible before the front end
    /// sees the grid complete. On the H200 the extra front-end sysmembar cost about 0.6 µs
    /// of every launch's round trip (BENCHMARKS.md). [`Qmd::set_release_membar`] adds it.
    pub fn set_release(&mut self, slot: u32, va: u64, payload: u64) -> Result<(), QmdError> {
        let r = self.release_fields(slot)?;
        if !va.is_multiple_of(16) {
            return Err(QmdError::Misaligned {
                what: "release semaphore",
                va,
                align: 16,
            });
        }
        self.set(r.addr_lower, va & 0xffff_ffff)?;
        self.set(r.addr_upper, va >> 32)?;
        match (r.payload_upper, r.payload64b) {
            (Some(upper), Some(payload64b)) => {
                self.set(r.payload_lower, payload & 0xffff_ffff)?;
                self.set(upper, payload >> 32)?;
                self.set(payload64b, 1)?;
            }
            // v2: `RELEASE*_PAYLOAD` is 32 bits; a larger payload is a FieldOverflow.
            _ => self.set(r.payload_lower, payload)?,
        }
        self.set(r.structure_size, 0)?; // FOUR_WORDS: payload + timestamp
        self.set(r.membar_type, 0)?; // FE_NONE
        self.set(r.enable, 1)
    }

    /// Makes release slot `slot` wait for a front-end sysmembar before writing
    /// (`MEMBAR_TYPE_FE_SYSMEMBAR`), for QMDs whose CWD membar is off.
    pub fn set_release_membar(&mut self, slot: u32, on: bool) -> Result<(), QmdError> {
        let r = self.release_fields(slot)?;
        self.set(r.membar_type, u64::from(on))
    }

    /// The first release slot not yet enabled.
    pub fn free_release_slot(&self) -> Option<u32> {
        self.layout()
            .releases
            .iter()
            .position(|r| self.get(r.enable) == 0)
            .map(|i| i as u32)
    }

    /// Chains the QMD at `next_va` (256-byte aligned) to be scheduled when this grid completes.
    pub fn set_dependent(&mut self, next_va: u64) -> Result<(), QmdError> {
        if !next_va.is_multiple_of(QMD_ALIGN) {
            return Err(QmdError::Misaligned {
                what: "dependent QMD",
                va: next_va,
                align: QMD_ALIGN,
            });
        }
        let d = self.layout().dependent;
        self.set(d.pointer_shifted8, next_va >> 8)?;
        self.set(d.action, DEPENDENT_ACTION_SCHEDULE)?;
        if let Some(prefetch) = d.prefetch {
            self.set(prefetch, 1)?;
        }
        self.set(d.enable, 1)
    }
}
