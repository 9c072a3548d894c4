//! Where each field a launch needs lives in one QMD version ([`Layout`], one per version in
//! `v2.rs` .. `v5.rs`), and the list of them all that the header tests check.

use alloc::vec::Vec;

use super::{QmdArray, QmdField, QmdVersion};

/// Fields of one release semaphore slot.
#[derive(Clone, Copy, Debug)]
pub struct ReleaseFields {
    /// `RELEASE*_ENABLE`.
    pub enable: QmdField,
    /// `RELEASE*_STRUCTURE_SIZE` (0 four words: payload + timestamp).
    pub structure_size: QmdField,
    /// `RELEASE*_MEMBAR_TYPE` (1 `FE_SYSMEMBAR`; v2 has one `RELEASE_MEMBAR_TYPE` for both
    /// slots).
    pub membar_type: QmdField,
    /// `RELEASE*_PAYLOAD64B` (`None` on v2, whose releases carry 32-bit payloads).
    pub payload64b: Option<QmdField>,
    /// Address bits 31:0.
    pub addr_lower: QmdField,
    /// Address bits above 32.
    pub addr_upper: QmdField,
    /// Payload bits 31:0.
    pub payload_lower: QmdField,
    /// Payload bits 63:32 (`None` on v2).
    pub payload_upper: Option<QmdField>,
}

/// Fields that chain a dependent QMD (launched when this one completes).
#[derive(Clone, Copy, Debug)]
pub struct DependentFields {
    /// `DEPENDENT_QMD0_POINTER`: the next QMD's address >> 8.
    pub pointer_shifted8: QmdField,
    /// `DEPENDENT_QMD*_ENABLE`.
    pub enable: QmdField,
    /// `DEPENDENT_QMD*_ACTION` (1 `QMD_SCHEDULE`); on v2 `DEPENDENT_QMD_TYPE`, whose 1 is
    /// `GRID` (the dependent is a grid to schedule, not a queue).
    pub action: QmdField,
    /// `DEPENDENT_QMD*_PREFETCH` (`None` on v2).
    pub prefetch: Option<QmdField>,
}

/// The fields of programmatic dependent launch (v4 and later): the earlier grid lets its
/// dependent start before it completes and arrives at a latch when it has; the later grid's
/// `griddepcontrol.wait` waits on that latch. CUDA 13 sets exactly these on a graph's
/// programmatic edges on the H200 (`host/bench-results/probe/pdl_probe.cu`, run 53).
#[derive(Clone, Copy, Debug)]
pub struct LatchFields {
    /// `ENABLE_PROGRAM_PRE_EXIT`: the dependent may be scheduled once every CTA has exited or
    /// run `griddepcontrol.launch_dependents`.
    pub enable_program_pre_exit: QmdField,
    /// `ARRIVE_AT_LATCH_VALID`.
    pub arrive_valid: QmdField,
    /// `ARRIVE_AT_LATCH_ID`.
    pub arrive_id: QmdField,
    /// `WAIT_ON_LATCH_VALID`.
    pub wait_valid: QmdField,
    /// `WAIT_ON_LATCH_ID`.
    pub wait_id: QmdField,
    /// `LATCH_ACQUIRE_INVALIDATE_SHADER_DATA_CACHE`: the L1 data cache invalidated when the
    /// wait returns (the grid's start invalidate comes too early for data its predecessor
    /// writes later).
    pub acquire_invalidate_shader_data: QmdField,
    /// `LATCH_ACQUIRE_INVALIDATE_TEXTURE_DATA_CACHE`.
    pub acquire_invalidate_texture_data: QmdField,
}

/// Where each field a launch needs lives in one QMD version.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Which version this is.
    pub version: QmdVersion,
    /// `QMD_MAJOR_VERSION`.
    pub major_version: QmdField,
    /// `QMD_VERSION` / `QMD_MINOR_VERSION`.
    pub minor_version: QmdField,
    /// `QMD_TYPE` (v4, v5), set to `GRID_CTA`.
    pub qmd_type: Option<QmdField>,
    /// `QMD_GROUP_ID`.
    pub qmd_group_id: QmdField,
    /// `SM_GLOBAL_CACHING_ENABLE` (v3 only).
    pub sm_global_caching_enable: Option<QmdField>,
    /// `API_VISIBLE_CALL_LIMIT`.
    pub api_visible_call_limit: QmdField,
    /// `SAMPLER_INDEX`.
    pub sampler_index: QmdField,
    /// `INVALIDATE_{TEXTURE_HEADER,TEXTURE_SAMPLER,TEXTURE_DATA,SHADER_DATA,INSTRUCTION,SHADER_CONSTANT}_CACHE`.
    pub invalidate_caches: [QmdField; 6],
    /// `CWD_MEMBAR_TYPE`.
    pub cwd_membar_type: QmdField,
    /// Grid size in CTAs, x/y/z.
    pub grid: [QmdField; 3],
    /// CTA size in threads, x/y/z.
    pub block: [QmdField; 3],
    /// Registers per thread.
    pub register_count: QmdField,
    /// Named barriers.
    pub barrier_count: QmdField,
    /// Program address bits 31:0 (after `program_shift`).
    pub program_lower: QmdField,
    /// Program address upper bits (after `program_shift`).
    pub program_upper: QmdField,
    /// Right shift applied to the program address (4 on v5).
    pub program_shift: u32,
    /// Instruction prefetch address >> 8, low 32 bits.
    pub prefetch_lower_shifted8: QmdField,
    /// Instruction prefetch address >> 8, upper bits.
    pub prefetch_upper_shifted8: QmdField,
    /// Instruction prefetch size in 256-byte units.
    pub prefetch_size: QmdField,
    /// `SASS_VERSION`.
    pub sass_version: QmdField,
    /// Shared memory per CTA (bytes >> `shared_memory_shift`).
    pub shared_memory_size: QmdField,
    /// Shift of `shared_memory_size` (7 on v5).
    pub shared_memory_shift: u32,
    /// Smallest SM shared-memory carveout (KiB / 4 + 1).
    pub min_sm_config_shared: QmdField,
    /// Largest SM shared-memory carveout (KiB / 4 + 1).
    pub max_sm_config_shared: QmdField,
    /// Preferred SM shared-memory carveout (KiB / 4 + 1).
    pub target_sm_config_shared: QmdField,
    /// Local memory per thread, low window (bytes >> `local_memory_shift`).
    pub local_memory_low: QmdField,
    /// Local memory per thread, high window (what nvcc's stack uses).
    pub local_memory_high: QmdField,
    /// Shift of the local memory sizes (4 on v5).
    pub local_memory_shift: u32,
    /// Constant buffer address, low 32 bits (after `cbuf_addr_shift`).
    pub cbuf_addr_lower: QmdArray,
    /// Constant buffer address, upper bits.
    pub cbuf_addr_upper: QmdArray,
    /// Shift of constant buffer addresses (6 on v4, v5).
    pub cbuf_addr_shift: u32,
    /// Constant buffer size >> 4.
    pub cbuf_size_shifted4: QmdArray,
    /// Constant buffer valid bit.
    pub cbuf_valid: QmdArray,
    /// Invalidate the constant cache for the buffer before the grid.
    pub cbuf_invalidate: QmdArray,
    /// `CONSTANT_BUFFER_PREFETCH` (v4 and later): 1 `PREFETCH_PRE`, fetch the bank before the
    /// grid starts.
    pub cbuf_prefetch: Option<QmdArray>,
    /// Release semaphore slots.
    pub releases: &'static [ReleaseFields],
    /// Chaining.
    pub dependent: DependentFields,
    /// `CWD_MEMBAR_TASK_CHASING_ENABLE` (v4 and later; CUDA 13 sets it on every graph node
    /// with a successor, run 37).
    pub cwd_membar_task_chasing: Option<QmdField>,
    /// Programmatic dependent launch (v4 and later).
    pub latch: Option<LatchFields>,
}

impl Layout {
    /// Every field this layout names (array families expanded), for checks against headers.
    pub fn fields(&self) -> Vec<QmdField> {
        let mut v = Vec::new();
        v.extend([self.major_version, self.minor_version, self.qmd_group_id]);
        v.extend(self.qmd_type);
        v.extend(self.sm_global_caching_enable);
        v.extend([
            self.api_visible_call_limit,
            self.sampler_index,
            self.cwd_membar_type,
        ]);
        v.extend(self.invalidate_caches);
        v.extend(self.grid);
        v.extend(self.block);
        v.extend([
            self.register_count,
            self.barrier_count,
            self.program_lower,
            self.program_upper,
            self.prefetch_lower_shifted8,
            self.prefetch_upper_shifted8,
            self.prefetch_size,
            self.sass_version,
            self.shared_memory_size,
            self.min_sm_config_shared,
            self.max_sm_config_shared,
            self.target_sm_config_shared,
            self.local_memory_low,
            self.local_memory_high,
        ]);
        for a in [
            self.cbuf_addr_lower,
            self.cbuf_addr_upper,
            self.cbuf_size_shifted4,
            self.cbuf_valid,
            self.cbuf_invalidate,
        ]
        .into_iter()
        .chain(self.cbuf_prefetch)
        {
            v.extend((0..a.count).filter_map(|i| a.at(i)));
        }
        for r in self.releases {
            v.extend([
                r.enable,
                r.structure_size,
                r.membar_type,
                r.addr_lower,
                r.addr_upper,
                r.payload_lower,
            ]);
            v.extend(r.payload64b);
            v.extend(r.payload_upper);
        }
        let d = self.dependent;
        v.extend([d.pointer_shifted8, d.enable, d.action]);
        v.extend(d.prefetch);
        v.extend(self.cwd_membar_task_chasing);
        if let Some(l) = self.latch {
            v.extend([
                l.enable_program_pre_exit,
                l.arrive_valid,
                l.arrive_id,
                l.wait_valid,
                l.wait_id,
                l.acquire_invalidate_shader_data,
                l.acquire_invalidate_texture_data,
            ]);
        }
        // v2's two release slots share `RELEASE_MEMBAR_TYPE`: list each field once.
        let mut unique: Vec<QmdField> = Vec::with_capacity(v.len());
        for f in v {
            if !unique.contains(&f) {
                unique.push(f);
            }
        }
        unique
    }
}
