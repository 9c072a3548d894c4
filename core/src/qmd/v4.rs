//! QMD version 04_00 (HOPPER_COMPUTE_A 0xcbc0): 384 bytes.
//! Positions from `clcbc0qmd.h` `NVCBC0_QMDV04_00_*` (checked by `core/tests/submit_qmd_fields.rs`).

use super::field::{QmdArray, QmdField as F};
use super::{DependentFields, LatchFields, Layout, QmdVersion, ReleaseFields};

const fn release(i: u32, names: [&'static str; 4], base: u32) -> ReleaseFields {
    // RELEASE_*(i) control bits at 320 + 16i; RELEASE_SEMAPHOREn_* words at `base`.
    let c = 320 + 16 * i;
    ReleaseFields {
        enable: F::indexed("RELEASE_ENABLE", c, c, i),
        structure_size: F::indexed("RELEASE_STRUCTURE_SIZE", c + 2, c + 1, i),
        membar_type: F::indexed("RELEASE_MEMBAR_TYPE", c + 3, c + 3, i),
        payload64b: Some(F::indexed("RELEASE_PAYLOAD64B", c + 12, c + 12, i)),
        addr_lower: F::new(names[0], base + 31, base),
        addr_upper: F::new(names[1], base + 56, base + 32),
        payload_lower: F::new(names[2], base + 95, base + 64),
        payload_upper: Some(F::new(names[3], base + 127, base + 96)),
    }
}

const RELEASES: [ReleaseFields; 3] = [
    release(
        0,
        [
            "RELEASE_SEMAPHORE0_ADDR_LOWER",
            "RELEASE_SEMAPHORE0_ADDR_UPPER",
            "RELEASE_SEMAPHORE0_PAYLOAD_LOWER",
            "RELEASE_SEMAPHORE0_PAYLOAD_UPPER",
        ],
        640,
    ),
    release(
        1,
        [
            "RELEASE_SEMAPHORE1_ADDR_LOWER",
            "RELEASE_SEMAPHORE1_ADDR_UPPER",
            "RELEASE_SEMAPHORE1_PAYLOAD_LOWER",
            "RELEASE_SEMAPHORE1_PAYLOAD_UPPER",
        ],
        768,
    ),
    release(
        2,
        [
            "RELEASE_SEMAPHORE2_ADDR_LOWER",
            "RELEASE_SEMAPHORE2_ADDR_UPPER",
            "RELEASE_SEMAPHORE2_PAYLOAD_LOWER",
            "RELEASE_SEMAPHORE2_PAYLOAD_UPPER",
        ],
        896,
    ),
];

/// The V04_00 layout.
pub const LAYOUT: Layout = Layout {
    version: QmdVersion::V4,
    major_version: F::new("QMD_MAJOR_VERSION", 583, 580),
    minor_version: F::new("QMD_MINOR_VERSION", 579, 576),
    qmd_type: Some(F::new("QMD_TYPE", 25, 23)),
    qmd_group_id: F::new("QMD_GROUP_ID", 21, 16),
    sm_global_caching_enable: None,
    api_visible_call_limit: F::new("API_VISIBLE_CALL_LIMIT", 568, 568),
    sampler_index: F::new("SAMPLER_INDEX", 569, 569),
    invalidate_caches: [
        F::new("INVALIDATE_TEXTURE_HEADER_CACHE", 602, 602),
        F::new("INVALIDATE_TEXTURE_SAMPLER_CACHE", 603, 603),
        F::new("INVALIDATE_TEXTURE_DATA_CACHE", 604, 604),
        F::new("INVALIDATE_SHADER_DATA_CACHE", 605, 605),
        F::new("INVALIDATE_INSTRUCTION_CACHE", 606, 606),
        F::new("INVALIDATE_SHADER_CONSTANT_CACHE", 607, 607),
    ],
    cwd_membar_type: F::new("CWD_MEMBAR_TYPE", 1137, 1136),
    grid: [
        F::new("GRID_WIDTH", 1055, 1024),
        F::new("GRID_HEIGHT", 1071, 1056),
        F::new("GRID_DEPTH", 1103, 1088),
    ],
    block: [
        F::new("CTA_THREAD_DIMENSION0", 1167, 1152),
        F::new("CTA_THREAD_DIMENSION1", 1183, 1168),
        F::new("CTA_THREAD_DIMENSION2", 1199, 1184),
    ],
    register_count: F::new("REGISTER_COUNT", 1208, 1200),
    barrier_count: F::new("BARRIER_COUNT", 1215, 1211),
    program_lower: F::new("PROGRAM_ADDRESS_LOWER", 1247, 1216),
    program_upper: F::new("PROGRAM_ADDRESS_UPPER", 1272, 1248),
    program_shift: 0,
    prefetch_lower_shifted8: F::new("PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED", 1375, 1344),
    prefetch_upper_shifted8: F::new("PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED", 1392, 1376),
    prefetch_size: F::new("PROGRAM_PREFETCH_SIZE", 1401, 1393),
    sass_version: F::new("SASS_VERSION", 543, 536),
    shared_memory_size: F::new("SHARED_MEMORY_SIZE", 601, 584),
    shared_memory_shift: 0,
    min_sm_config_shared: F::new("MIN_SM_CONFIG_SHARED_MEM_SIZE", 613, 608),
    max_sm_config_shared: F::new("MAX_SM_CONFIG_SHARED_MEM_SIZE", 619, 614),
    target_sm_config_shared: F::new("TARGET_SM_CONFIG_SHARED_MEM_SIZE", 625, 620),
    local_memory_low: F::new("SHADER_LOCAL_MEMORY_LOW_SIZE", 535, 512),
    local_memory_high: F::new("SHADER_LOCAL_MEMORY_HIGH_SIZE", 567, 544),
    local_memory_shift: 0,
    cbuf_addr_lower: QmdArray::new("CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6", 1567, 1536, 64, 8),
    cbuf_addr_upper: QmdArray::new("CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6", 1586, 1568, 64, 8),
    cbuf_addr_shift: 6,
    cbuf_size_shifted4: QmdArray::new("CONSTANT_BUFFER_SIZE_SHIFTED4", 1599, 1587, 64, 8),
    cbuf_valid: QmdArray::new("CONSTANT_BUFFER_VALID", 416, 416, 4, 8),
    cbuf_invalidate: QmdArray::new("CONSTANT_BUFFER_INVALIDATE", 419, 419, 4, 8),
    cbuf_prefetch: Some(QmdArray::new("CONSTANT_BUFFER_PREFETCH", 418, 417, 4, 8)),
    releases: &RELEASES,
    dependent: DependentFields {
        pointer_shifted8: F::new("DEPENDENT_QMD0_POINTER", 479, 448),
        enable: F::indexed("DEPENDENT_QMD_ENABLE", 368, 368, 0),
        action: F::indexed("DEPENDENT_QMD_ACTION", 371, 369, 0),
        prefetch: Some(F::indexed("DEPENDENT_QMD_PREFETCH", 372, 372, 0)),
    },
    cwd_membar_task_chasing: Some(F::new("CWD_MEMBAR_TASK_CHASING_ENABLE", 382, 382)),
    latch: Some(LatchFields {
        enable_program_pre_exit: F::new("ENABLE_PROGRAM_PRE_EXIT", 1151, 1151),
        arrive_valid: F::new("ARRIVE_AT_LATCH_VALID", 28, 28),
        arrive_id: F::new("ARRIVE_AT_LATCH_ID", 1503, 1472),
        wait_valid: F::new("WAIT_ON_LATCH_VALID", 29, 29),
        wait_id: F::new("WAIT_ON_LATCH_ID", 1535, 1504),
        acquire_invalidate_shader_data: F::new(
            "LATCH_ACQUIRE_INVALIDATE_SHADER_DATA_CACHE",
            1406,
            1406,
        ),
        acquire_invalidate_texture_data: F::new(
            "LATCH_ACQUIRE_INVALIDATE_TEXTURE_DATA_CACHE",
            1407,
            1407,
        ),
    }),
};
