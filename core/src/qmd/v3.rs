//! QMD version 03_00 (AMPERE_COMPUTE_B 0xc6c0, ADA_COMPUTE_A 0xc9c0): 256 bytes.
//! Positions from `clc6c0qmd.h` `NVC6C0_QMDV03_00_*` (checked by `core/tests/submit_qmd_fields.rs`).

use super::field::{QmdArray, QmdField as F};
use super::{DependentFields, Layout, QmdVersion, ReleaseFields};

const fn release(n: u32, base: u32) -> ReleaseFields {
    // RELEASEn_* share one layout at a per-slot base (768, 896, 1664).
    let names: [[&str; 8]; 3] = [
        [
            "RELEASE0_ENABLE",
            "RELEASE0_STRUCTURE_SIZE",
            "RELEASE0_MEMBAR_TYPE",
            "RELEASE0_PAYLOAD64B",
            "RELEASE0_ADDRESS_LOWER",
            "RELEASE0_ADDRESS_UPPER",
            "RELEASE0_PAYLOAD_LOWER",
            "RELEASE0_PAYLOAD_UPPER",
        ],
        [
            "RELEASE1_ENABLE",
            "RELEASE1_STRUCTURE_SIZE",
            "RELEASE1_MEMBAR_TYPE",
            "RELEASE1_PAYLOAD64B",
            "RELEASE1_ADDRESS_LOWER",
            "RELEASE1_ADDRESS_UPPER",
            "RELEASE1_PAYLOAD_LOWER",
            "RELEASE1_PAYLOAD_UPPER",
        ],
        [
            "RELEASE2_ENABLE",
            "RELEASE2_STRUCTURE_SIZE",
            "RELEASE2_MEMBAR_TYPE",
            "RELEASE2_PAYLOAD64B",
            "RELEASE2_ADDRESS_LOWER",
            "RELEASE2_ADDRESS_UPPER",
            "RELEASE2_PAYLOAD_LOWER",
            "RELEASE2_PAYLOAD_UPPER",
        ],
    ];
    let n = names[n as usize];
    ReleaseFields {
        enable: F::new(n[0], base + 55, base + 55),
        structure_size: F::new(n[1], base + 63, base + 62),
        membar_type: F::new(n[2], base + 51, base + 51),
        payload64b: Some(F::new(n[3], base + 61, base + 61)),
        addr_lower: F::new(n[4], base + 31, base),
        addr_upper: F::new(n[5], base + 39, base + 32),
        payload_lower: F::new(n[6], base + 95, base + 64),
        payload_upper: Some(F::new(n[7], base + 127, base + 96)),
    }
}

const RELEASES: [ReleaseFields; 3] = [release(0, 768), release(1, 896), release(2, 1664)];

/// The V03_00 layout.
pub const LAYOUT: Layout = Layout {
    version: QmdVersion::V3,
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
    barrier_count: F::new("BARRIER_COUNT", 767, 763),
    program_lower: F::new("PROGRAM_ADDRESS_LOWER", 1567, 1536),
    program_upper: F::new("PROGRAM_ADDRESS_UPPER", 1584, 1568),
    program_shift: 0,
    prefetch_lower_shifted8: F::new("PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED", 287, 256),
    prefetch_upper_shifted8: F::new("PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED", 1640, 1632),
    prefetch_size: F::new("PROGRAM_PREFETCH_SIZE", 1649, 1641),
    sass_version: F::new("SASS_VERSION", 1663, 1656),
    shared_memory_size: F::new("SHARED_MEMORY_SIZE", 561, 544),
    shared_memory_shift: 0,
    min_sm_config_shared: F::new("MIN_SM_CONFIG_SHARED_MEM_SIZE", 567, 562),
    max_sm_config_shared: F::new("MAX_SM_CONFIG_SHARED_MEM_SIZE", 574, 569),
    target_sm_config_shared: F::new("TARGET_SM_CONFIG_SHARED_MEM_SIZE", 662, 657),
    local_memory_low: F::new("SHADER_LOCAL_MEMORY_LOW_SIZE", 759, 736),
    local_memory_high: F::new("SHADER_LOCAL_MEMORY_HIGH_SIZE", 1623, 1600),
    local_memory_shift: 0,
    cbuf_addr_lower: QmdArray::new("CONSTANT_BUFFER_ADDR_LOWER", 1055, 1024, 64, 8),
    cbuf_addr_upper: QmdArray::new("CONSTANT_BUFFER_ADDR_UPPER", 1072, 1056, 64, 8),
    cbuf_addr_shift: 0,
    cbuf_size_shifted4: QmdArray::new("CONSTANT_BUFFER_SIZE_SHIFTED4", 1087, 1075, 64, 8),
    cbuf_valid: QmdArray::new("CONSTANT_BUFFER_VALID", 640, 640, 1, 8),
    cbuf_invalidate: QmdArray::new("CONSTANT_BUFFER_INVALIDATE", 1074, 1074, 64, 8),
    cbuf_prefetch: None,
    releases: &RELEASES,
    dependent: DependentFields {
        pointer_shifted8: F::new("DEPENDENT_QMD0_POINTER", 511, 480),
        enable: F::new("DEPENDENT_QMD0_ENABLE", 512, 512),
        action: F::new("DEPENDENT_QMD0_ACTION", 515, 513),
        prefetch: Some(F::new("DEPENDENT_QMD0_PREFETCH", 516, 516)),
    },
    cwd_membar_task_chasing: None,
    latch: None,
};
