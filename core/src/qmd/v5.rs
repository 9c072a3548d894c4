//! QMD version 05_00 (Blackwell compute, 0xcdc0/0xcec0): 384 bytes.
//! Positions from `clcec0qmd.h` `NVCEC0_QMDV05_00_*` (checked by `core/tests/submit_qmd_fields.rs`).

use super::field::{QmdArray, QmdField as F};
use super::{DependentFields, LatchFields, Layout, QmdVersion, ReleaseFields};

const fn release(i: u32, names: [&'static str; 4], base: u32) -> ReleaseFields {
    // RELEASE_*(i) control bits at 288 + 16i; RELEASE_SEMAPHOREn_* words at `base`.
    let c = 288 + 16 * i;
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
        480,
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

/// The V05_00 layout.
pub const LAYOUT: Layout = Layout {
    version: QmdVersion::V5,
    major_version: F::new("QMD_MAJOR_VERSION", 471, 468),
    minor_version: F::new("QMD_MINOR_VERSION", 467, 464),
    qmd_type: Some(F::new("QMD_TYPE", 153, 151)),
    qmd_group_id: F::new("QMD_GROUP_ID", 149, 144),
    sm_global_caching_enable: None,
    api_visible_call_limit: F::new("API_VISIBLE_CALL_LIMIT", 456, 456),
    sampler_index: F::new("SAMPLER_INDEX", 457, 457),
    invalidate_caches: [
        F::new("INVALIDATE_TEXTURE_HEADER_CACHE", 472, 472),
        F::new("INVALIDATE_TEXTURE_SAMPLER_CACHE", 473, 473),
        F::new("INVALIDATE_TEXTURE_DATA_CACHE", 474, 474),
        F::new("INVALIDATE_SHADER_DATA_CACHE", 475, 475),
        F::new("INVALIDATE_INSTRUCTION_CACHE", 476, 476),
        F::new("INVALIDATE_SHADER_CONSTANT_CACHE", 477, 477),
    ],
    cwd_membar_type: F::new("CWD_MEMBAR_TYPE", 625, 624),
    grid: [
        F::new("GRID_WIDTH", 1279, 1248),
        F::new("GRID_HEIGHT", 1295, 1280),
        F::new("GRID_DEPTH", 1327, 1312),
    ],
    block: [
        F::new("CTA_THREAD_DIMENSION0", 1103, 1088),
        F::new("CTA_THREAD_DIMENSION1", 1119, 1104),
        F::new("CTA_THREAD_DIMENSION2", 1127, 1120),
    ],
    register_count: F::new("REGISTER_COUNT", 1136, 1128),
    barrier_count: F::new("BARRIER_COUNT", 1141, 1137),
    program_lower: F::new("PROGRAM_ADDRESS_LOWER_SHIFTED4", 1055, 1024),
    program_upper: F::new("PROGRAM_ADDRESS_UPPER_SHIFTED4", 1076, 1056),
    program_shift: 4,
    prefetch_lower_shifted8: F::new("PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED", 1919, 1888),
    prefetch_upper_shifted8: F::new("PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED", 1936, 1920),
    prefetch_size: F::new("PROGRAM_PREFETCH_SIZE", 1085, 1077),
    sass_version: F::new("SASS_VERSION", 455, 448),
    shared_memory_size: F::new("SHARED_MEMORY_SIZE_SHIFTED7", 1162, 1152),
    shared_memory_shift: 7,
    min_sm_config_shared: F::new("MIN_SM_CONFIG_SHARED_MEM_SIZE", 1168, 1163),
    max_sm_config_shared: F::new("MAX_SM_CONFIG_SHARED_MEM_SIZE", 1174, 1169),
    target_sm_config_shared: F::new("TARGET_SM_CONFIG_SHARED_MEM_SIZE", 1180, 1175),
    local_memory_low: F::new("SHADER_LOCAL_MEMORY_LOW_SIZE_SHIFTED4", 1199, 1184),
    local_memory_high: F::new("SHADER_LOCAL_MEMORY_HIGH_SIZE_SHIFTED4", 1215, 1200),
    local_memory_shift: 4,
    cbuf_addr_lower: QmdArray::new("CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6", 1375, 1344, 64, 8),
    cbuf_addr_upper: QmdArray::new("CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6", 1394, 1376, 64, 8),
    cbuf_addr_shift: 6,
    cbuf_size_shifted4: QmdArray::new("CONSTANT_BUFFER_SIZE_SHIFTED4", 1407, 1395, 64, 8),
    cbuf_valid: QmdArray::new("CONSTANT_BUFFER_VALID", 1856, 1856, 4, 8),
    cbuf_invalidate: QmdArray::new("CONSTANT_BUFFER_INVALIDATE", 1859, 1859, 4, 8),
    cbuf_prefetch: Some(QmdArray::new("CONSTANT_BUFFER_PREFETCH", 1858, 1857, 4, 8)),
    releases: &RELEASES,
    dependent: DependentFields {
        pointer_shifted8: F::new("DEPENDENT_QMD0_POINTER", 415, 384),
        enable: F::new("DEPENDENT_QMD0_ENABLE", 336, 336),
        action: F::new("DEPENDENT_QMD0_ACTION", 339, 337),
        prefetch: Some(F::new("DEPENDENT_QMD0_PREFETCH", 340, 340)),
    },
    cwd_membar_task_chasing: Some(F::new("CWD_MEMBAR_TASK_CHASING_ENABLE", 350, 350)),
    latch: Some(LatchFields {
        enable_program_pre_exit: F::new("ENABLE_PROGRAM_PRE_EXIT", 639, 639),
        arrive_valid: F::new("ARRIVE_AT_LATCH_VALID", 730, 730),
        arrive_id: F::new("ARRIVE_AT_LATCH_ID", 671, 640),
        wait_valid: F::new("WAIT_ON_LATCH_VALID", 731, 731),
        wait_id: F::new("WAIT_ON_LATCH_ID", 703, 672),
        acquire_invalidate_shader_data: F::new(
            "LATCH_ACQUIRE_INVALIDATE_SHADER_DATA_CACHE",
            478,
            478,
        ),
        acquire_invalidate_texture_data: F::new(
            "LATCH_ACQUIRE_INVALIDATE_TEXTURE_DATA_CACHE",
            479,
            479,
        ),
    }),
};
