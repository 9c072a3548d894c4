//! QMD version 02_03 (TURING_COMPUTE_A 0xc5c0): 256 bytes.
//! Positions from `clc5c0qmd.h` `NVC5C0_QMDV02_03_*` (checked by `core/tests/submit_qmd_fields.rs`).
//!
//! Where it differs from 03_00 ([`super::v3`]): two release slots, each enabled by
//! `SEMAPHORE_RELEASE_ENABLE0/1` (bits 138/139) with a 32-bit `RELEASEn_PAYLOAD`, a one-bit
//! `RELEASEn_STRUCTURE_SIZE` (FOUR_WORDS 0, ONE_WORD 1) and one `RELEASE_MEMBAR_TYPE` (366)
//! for both; one dependent QMD (`DEPENDENT_QMD_POINTER`, `_SCHEDULE_ENABLE`, `_TYPE`) without
//! prefetch; the program prefetch's upper address and size, the barrier count and the local
//! memory sizes at other places; no QMD_TYPE (every 02_03 launch is a grid).

use super::field::{QmdArray, QmdField as F};
use super::{DependentFields, Layout, QmdVersion, ReleaseFields};

/// `RELEASE_MEMBAR_TYPE`, shared by both slots.
const RELEASE_MEMBAR_TYPE: F = F::new("RELEASE_MEMBAR_TYPE", 366, 366);

const RELEASES: [ReleaseFields; 2] = [
    ReleaseFields {
        enable: F::new("SEMAPHORE_RELEASE_ENABLE0", 138, 138),
        structure_size: F::new("RELEASE0_STRUCTURE_SIZE", 799, 799),
        membar_type: RELEASE_MEMBAR_TYPE,
        payload64b: None,
        addr_lower: F::new("RELEASE0_ADDRESS_LOWER", 767, 736),
        addr_upper: F::new("RELEASE0_ADDRESS_UPPER", 775, 768),
        payload_lower: F::new("RELEASE0_PAYLOAD", 831, 800),
        payload_upper: None,
    },
    ReleaseFields {
        enable: F::new("SEMAPHORE_RELEASE_ENABLE1", 139, 139),
        structure_size: F::new("RELEASE1_STRUCTURE_SIZE", 895, 895),
        membar_type: RELEASE_MEMBAR_TYPE,
        payload64b: None,
        addr_lower: F::new("RELEASE1_ADDRESS_LOWER", 863, 832),
        addr_upper: F::new("RELEASE1_ADDRESS_UPPER", 871, 864),
        payload_lower: F::new("RELEASE1_PAYLOAD", 927, 896),
        payload_upper: None,
    },
];

/// The V02_03 layout.
pub const LAYOUT: Layout = Layout {
    version: QmdVersion::V2,
    major_version: F::new("QMD_MAJOR_VERSION", 583, 580),
    minor_version: F::new("QMD_VERSION", 579, 576),
    qmd_type: None,
    qmd_group_id: F::new("QMD_GROUP_ID", 133, 128),
    sm_global_caching_enable: Some(F::new("SM_GLOBAL_CACHING_ENABLE", 134, 134)),
    api_visible_call_limit: F::new("API_VISIBLE_CALL_LIMIT", 378, 378),
    sampler_index: F::new("SAMPLER_INDEX", 382, 382),
    invalidate_caches: [
        F::new("INVALIDATE_TEXTURE_HEADER_CACHE", 186, 186),
        F::new("INVALIDATE_TEXTURE_SAMPLER_CACHE", 187, 187),
        F::new("INVALIDATE_TEXTURE_DATA_CACHE", 188, 188),
        F::new("INVALIDATE_SHADER_DATA_CACHE", 189, 189),
        F::new("INVALIDATE_INSTRUCTION_CACHE", 190, 190),
        F::new("INVALIDATE_SHADER_CONSTANT_CACHE", 191, 191),
    ],
    cwd_membar_type: F::new("CWD_MEMBAR_TYPE", 369, 368),
    grid: [
        F::new("CTA_RASTER_WIDTH", 415, 384),
        F::new("CTA_RASTER_HEIGHT", 431, 416),
        F::new("CTA_RASTER_DEPTH", 463, 448),
    ],
    block: [
        F::new("CTA_THREAD_DIMENSION0", 607, 592),
        F::new("CTA_THREAD_DIMENSION1", 623, 608),
        F::new("CTA_THREAD_DIMENSION2", 639, 624),
    ],
    register_count: F::new("REGISTER_COUNT_V", 656, 648),
    barrier_count: F::new("BARRIER_COUNT", 959, 955),
    program_lower: F::new("PROGRAM_ADDRESS_LOWER", 1567, 1536),
    program_upper: F::new("PROGRAM_ADDRESS_UPPER", 1584, 1568),
    program_shift: 0,
    prefetch_lower_shifted8: F::new("PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED", 287, 256),
    prefetch_upper_shifted8: F::new("PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED", 1000, 992),
    prefetch_size: F::new("PROGRAM_PREFETCH_SIZE", 1009, 1001),
    sass_version: F::new("SASS_VERSION", 1023, 1016),
    shared_memory_size: F::new("SHARED_MEMORY_SIZE", 561, 544),
    shared_memory_shift: 0,
    min_sm_config_shared: F::new("MIN_SM_CONFIG_SHARED_MEM_SIZE", 568, 562),
    max_sm_config_shared: F::new("MAX_SM_CONFIG_SHARED_MEM_SIZE", 575, 569),
    target_sm_config_shared: F::new("TARGET_SM_CONFIG_SHARED_MEM_SIZE", 663, 657),
    local_memory_low: F::new("SHADER_LOCAL_MEMORY_LOW_SIZE", 951, 928),
    local_memory_high: F::new("SHADER_LOCAL_MEMORY_HIGH_SIZE", 983, 960),
    local_memory_shift: 0,
    cbuf_addr_lower: QmdArray::new("CONSTANT_BUFFER_ADDR_LOWER", 1055, 1024, 64, 8),
    cbuf_addr_upper: QmdArray::new("CONSTANT_BUFFER_ADDR_UPPER", 1072, 1056, 64, 8),
    cbuf_addr_shift: 0,
    cbuf_size_shifted4: QmdArray::new("CONSTANT_BUFFER_SIZE_SHIFTED4", 1087, 1075, 64, 8),
    cbuf_valid: QmdArray::new("CONSTANT_BUFFER_VALID", 640, 640, 1, 8),
    cbuf_invalidate: QmdArray::new("CONSTANT_BUFFER_INVALIDATE", 1074, 1074, 64, 8),
    // No CONSTANT_BUFFER_PREFETCH in clc5c0qmd.h (V04_00 adds it).
    cbuf_prefetch: None,
    releases: &RELEASES,
    dependent: DependentFields {
        pointer_shifted8: F::new("DEPENDENT_QMD_POINTER", 511, 480),
        enable: F::new("DEPENDENT_QMD_SCHEDULE_ENABLE", 141, 141),
        action: F::new("DEPENDENT_QMD_TYPE", 142, 142),
        prefetch: None,
    },
    // No CWD_MEMBAR_TASK_CHASING_ENABLE in clc5c0qmd.h.
    cwd_membar_task_chasing: None,
    latch: None,
};
