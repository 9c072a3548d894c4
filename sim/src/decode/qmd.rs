//! Decodes a QMD (version 2, 3, 4 or 5) back into launch parameters.
//!
//! Field positions transcribed from `clc5c0qmd.h` (V02_03, Turing), `clc6c0qmd.h` (V03_00),
//! `clcbc0qmd.h` (V04_00) and `clcec0qmd.h` (V05_00); `sim/tests/decode_qmd_fields.rs` checks
//! every one against them.

use std::fmt;

/// A named bit range `hi:lo` (header name without prefix; `NAME(i)` families give element 0
/// and a stride).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bits {
    /// Header name.
    pub name: &'static str,
    /// High bit.
    pub hi: u32,
    /// Low bit.
    pub lo: u32,
    /// For `NAME(i)` families: bits between elements (0 for plain fields).
    pub stride: u32,
}

const fn b(name: &'static str, hi: u32, lo: u32) -> Bits {
    Bits {
        name,
        hi,
        lo,
        stride: 0,
    }
}

const fn arr(name: &'static str, hi: u32, lo: u32, stride: u32) -> Bits {
    Bits {
        name,
        hi,
        lo,
        stride,
    }
}

/// Where the decoder reads each field in one version.
#[derive(Clone, Copy, Debug)]
pub struct Table {
    /// Major version.
    pub major: u32,
    /// Bytes.
    pub size: usize,
    /// Named plain fields, in the order `Table::field` indexes them.
    pub fields: &'static [Bits],
    /// CONSTANT_BUFFER_{VALID, ADDR_LOWER, ADDR_UPPER, SIZE_SHIFTED4} families.
    pub cbuf: [Bits; 4],
    /// Shift of constant buffer addresses.
    pub cbuf_shift: u32,
    /// Release slots: [enable, payload64, addr_lower, addr_upper, payload_lower, payload_upper].
    pub releases: &'static [[Bits; 6]],
    /// V02_03's release slots (32-bit payloads, own structure and reduction fields); empty on
    /// the other versions.
    pub releases32: &'static [Release32],
}

/// One V02_03 release slot (`clc5c0qmd.h`): `SEMAPHORE_RELEASE_ENABLEn` and the `RELEASEn_*`
/// fields.
#[derive(Clone, Copy, Debug)]
pub struct Release32 {
    /// `SEMAPHORE_RELEASE_ENABLEn`.
    pub enable: Bits,
    /// `RELEASEn_ADDRESS_LOWER`.
    pub addr_lower: Bits,
    /// `RELEASEn_ADDRESS_UPPER`.
    pub addr_upper: Bits,
    /// `RELEASEn_PAYLOAD` (32 bits).
    pub payload: Bits,
    /// `RELEASEn_STRUCTURE_SIZE` (FOUR_WORDS 0, ONE_WORD 1).
    pub structure_size: Bits,
    /// `RELEASEn_REDUCTION_ENABLE`.
    pub reduction_enable: Bits,
    /// `RELEASEn_REDUCTION_OP` (RED_ADD 0 .. RED_XOR 7, as the later versions').
    pub reduction_op: Bits,
    /// `RELEASEn_REDUCTION_FORMAT` (UNSIGNED_32 0, SIGNED_32 1).
    pub reduction_format: Bits,
}

impl Release32 {
    /// Every field, for checks against the header.
    pub fn fields(&self) -> [Bits; 8] {
        [
            self.enable,
            self.addr_lower,
            self.addr_upper,
            self.payload,
            self.structure_size,
            self.reduction_enable,
            self.reduction_op,
            self.reduction_format,
        ]
    }
}

// Indices into `fields`.
const GRID: usize = 0; // 3
const BLOCK: usize = 3; // 3
const REGS: usize = 6;
const BARRIERS: usize = 7;
const PROG_LO: usize = 8;
const PROG_HI: usize = 9;
const SMEM: usize = 10;
const SLM_LOW: usize = 11;
const SLM_HIGH: usize = 12;
const DEP_PTR: usize = 13;
const DEP_EN: usize = 14;
const MIN_CFG: usize = 15;
const MAX_CFG: usize = 16;
const TARGET_CFG: usize = 17;

/// V02_03 (Turing: TURING_COMPUTE_A, `clc5c0qmd.h`).
pub const V2: Table = Table {
    major: 2,
    size: 256,
    fields: &[
        b("CTA_RASTER_WIDTH", 415, 384),
        b("CTA_RASTER_HEIGHT", 431, 416),
        b("CTA_RASTER_DEPTH", 463, 448),
        b("CTA_THREAD_DIMENSION0", 607, 592),
        b("CTA_THREAD_DIMENSION1", 623, 608),
        b("CTA_THREAD_DIMENSION2", 639, 624),
        b("REGISTER_COUNT_V", 656, 648),
        b("BARRIER_COUNT", 959, 955),
        b("PROGRAM_ADDRESS_LOWER", 1567, 1536),
        b("PROGRAM_ADDRESS_UPPER", 1584, 1568),
        b("SHARED_MEMORY_SIZE", 561, 544),
        b("SHADER_LOCAL_MEMORY_LOW_SIZE", 951, 928),
        b("SHADER_LOCAL_MEMORY_HIGH_SIZE", 983, 960),
        b("DEPENDENT_QMD_POINTER", 511, 480),
        b("DEPENDENT_QMD_SCHEDULE_ENABLE", 141, 141),
        b("MIN_SM_CONFIG_SHARED_MEM_SIZE", 568, 562),
        b("MAX_SM_CONFIG_SHARED_MEM_SIZE", 575, 569),
        b("TARGET_SM_CONFIG_SHARED_MEM_SIZE", 663, 657),
    ],
    cbuf: [
        arr("CONSTANT_BUFFER_VALID", 640, 640, 1),
        arr("CONSTANT_BUFFER_ADDR_LOWER", 1055, 1024, 64),
        arr("CONSTANT_BUFFER_ADDR_UPPER", 1072, 1056, 64),
        arr("CONSTANT_BUFFER_SIZE_SHIFTED4", 1087, 1075, 64),
    ],
    cbuf_shift: 0,
    releases: &[],
    releases32: &[
        Release32 {
            enable: b("SEMAPHORE_RELEASE_ENABLE0", 138, 138),
            addr_lower: b("RELEASE0_ADDRESS_LOWER", 767, 736),
            addr_upper: b("RELEASE0_ADDRESS_UPPER", 775, 768),
            payload: b("RELEASE0_PAYLOAD", 831, 800),
            structure_size: b("RELEASE0_STRUCTURE_SIZE", 799, 799),
            reduction_enable: b("RELEASE0_REDUCTION_ENABLE", 794, 794),
            reduction_op: b("RELEASE0_REDUCTION_OP", 790, 788),
            reduction_format: b("RELEASE0_REDUCTION_FORMAT", 793, 792),
        },
        Release32 {
            enable: b("SEMAPHORE_RELEASE_ENABLE1", 139, 139),
            addr_lower: b("RELEASE1_ADDRESS_LOWER", 863, 832),
            addr_upper: b("RELEASE1_ADDRESS_UPPER", 871, 864),
            payload: b("RELEASE1_PAYLOAD", 927, 896),
            structure_size: b("RELEASE1_STRUCTURE_SIZE", 895, 895),
            reduction_enable: b("RELEASE1_REDUCTION_ENABLE", 890, 890),
            reduction_op: b("RELEASE1_REDUCTION_OP", 886, 884),
            reduction_format: b("RELEASE1_REDUCTION_FORMAT", 889, 888),
        },
    ],
};

/// V03_00 (Ampere, Ada).
pub const V3: Table = Table {
    major: 3,
    size: 256,
    fields: &[
        b("CTA_RASTER_WIDTH", 415, 384),
        b("CTA_RASTER_HEIGHT", 431, 416),
        b("CTA_RASTER_DEPTH", 463, 448),
        b("CTA_THREAD_DIMENSION0", 607, 592),
        b("CTA_THREAD_DIMENSION1", 623, 608),
        b("CTA_THREAD_DIMENSION2", 639, 624),
        b("REGISTER_COUNT_V", 656, 648),
        b("BARRIER_COUNT", 767, 763),
        b("PROGRAM_ADDRESS_LOWER", 1567, 1536),
        b("PROGRAM_ADDRESS_UPPER", 1584, 1568),
        b("SHARED_MEMORY_SIZE", 561, 544),
        b("SHADER_LOCAL_MEMORY_LOW_SIZE", 759, 736),
        b("SHADER_LOCAL_MEMORY_HIGH_SIZE", 1623, 1600),
        b("DEPENDENT_QMD0_POINTER", 511, 480),
        b("DEPENDENT_QMD0_ENABLE", 512, 512),
        b("MIN_SM_CONFIG_SHARED_MEM_SIZE", 567, 562),
        b("MAX_SM_CONFIG_SHARED_MEM_SIZE", 574, 569),
        b("TARGET_SM_CONFIG_SHARED_MEM_SIZE", 662, 657),
    ],
    cbuf: [
        arr("CONSTANT_BUFFER_VALID", 640, 640, 1),
        arr("CONSTANT_BUFFER_ADDR_LOWER", 1055, 1024, 64),
        arr("CONSTANT_BUFFER_ADDR_UPPER", 1072, 1056, 64),
        arr("CONSTANT_BUFFER_SIZE_SHIFTED4", 1087, 1075, 64),
    ],
    cbuf_shift: 0,
    releases: &[
        [
            b("RELEASE0_ENABLE", 823, 823),
            b("RELEASE0_PAYLOAD64B", 829, 829),
            b("RELEASE0_ADDRESS_LOWER", 799, 768),
            b("RELEASE0_ADDRESS_UPPER", 807, 800),
            b("RELEASE0_PAYLOAD_LOWER", 863, 832),
            b("RELEASE0_PAYLOAD_UPPER", 895, 864),
        ],
        [
            b("RELEASE1_ENABLE", 951, 951),
            b("RELEASE1_PAYLOAD64B", 957, 957),
            b("RELEASE1_ADDRESS_LOWER", 927, 896),
            b("RELEASE1_ADDRESS_UPPER", 935, 928),
            b("RELEASE1_PAYLOAD_LOWER", 991, 960),
            b("RELEASE1_PAYLOAD_UPPER", 1023, 992),
        ],
        [
            b("RELEASE2_ENABLE", 1719, 1719),
            b("RELEASE2_PAYLOAD64B", 1725, 1725),
            b("RELEASE2_ADDRESS_LOWER", 1695, 1664),
            b("RELEASE2_ADDRESS_UPPER", 1703, 1696),
            b("RELEASE2_PAYLOAD_LOWER", 1759, 1728),
            b("RELEASE2_PAYLOAD_UPPER", 1791, 1760),
        ],
    ],
    releases32: &[],
};

/// V04_00 (Hopper).
pub const V4: Table = Table {
    major: 4,
    size: 384,
    fields: &[
        b("GRID_WIDTH", 1055, 1024),
        b("GRID_HEIGHT", 1071, 1056),
        b("GRID_DEPTH", 1103, 1088),
        b("CTA_THREAD_DIMENSION0", 1167, 1152),
        b("CTA_THREAD_DIMENSION1", 1183, 1168),
        b("CTA_THREAD_DIMENSION2", 1199, 1184),
        b("REGISTER_COUNT", 1208, 1200),
        b("BARRIER_COUNT", 1215, 1211),
        b("PROGRAM_ADDRESS_LOWER", 1247, 1216),
        b("PROGRAM_ADDRESS_UPPER", 1272, 1248),
        b("SHARED_MEMORY_SIZE", 601, 584),
        b("SHADER_LOCAL_MEMORY_LOW_SIZE", 535, 512),
        b("SHADER_LOCAL_MEMORY_HIGH_SIZE", 567, 544),
        b("DEPENDENT_QMD0_POINTER", 479, 448),
        arr("DEPENDENT_QMD_ENABLE", 368, 368, 5),
        b("MIN_SM_CONFIG_SHARED_MEM_SIZE", 613, 608),
        b("MAX_SM_CONFIG_SHARED_MEM_SIZE", 619, 614),
        b("TARGET_SM_CONFIG_SHARED_MEM_SIZE", 625, 620),
    ],
    cbuf: [
        arr("CONSTANT_BUFFER_VALID", 416, 416, 4),
        arr("CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6", 1567, 1536, 64),
        arr("CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6", 1586, 1568, 64),
        arr("CONSTANT_BUFFER_SIZE_SHIFTED4", 1599, 1587, 64),
    ],
    cbuf_shift: 6,
    releases: &[
        [
            arr("RELEASE_ENABLE", 320, 320, 16),
            arr("RELEASE_PAYLOAD64B", 332, 332, 16),
            b("RELEASE_SEMAPHORE0_ADDR_LOWER", 671, 640),
            b("RELEASE_SEMAPHORE0_ADDR_UPPER", 696, 672),
            b("RELEASE_SEMAPHORE0_PAYLOAD_LOWER", 735, 704),
            b("RELEASE_SEMAPHORE0_PAYLOAD_UPPER", 767, 736),
        ],
        [
            arr("RELEASE_ENABLE", 336, 336, 16),
            arr("RELEASE_PAYLOAD64B", 348, 348, 16),
            b("RELEASE_SEMAPHORE1_ADDR_LOWER", 799, 768),
            b("RELEASE_SEMAPHORE1_ADDR_UPPER", 824, 800),
            b("RELEASE_SEMAPHORE1_PAYLOAD_LOWER", 863, 832),
            b("RELEASE_SEMAPHORE1_PAYLOAD_UPPER", 895, 864),
        ],
        [
            arr("RELEASE_ENABLE", 352, 352, 16),
            arr("RELEASE_PAYLOAD64B", 364, 364, 16),
            b("RELEASE_SEMAPHORE2_ADDR_LOWER", 927, 896),
            b("RELEASE_SEMAPHORE2_ADDR_UPPER", 952, 928),
            b("RELEASE_SEMAPHORE2_PAYLOAD_LOWER", 991, 960),
            b("RELEASE_SEMAPHORE2_PAYLOAD_UPPER", 1023, 992),
        ],
    ],
    releases32: &[],
};

/// V05_00 (Blackwell).
pub const V5: Table = Table {
    major: 5,
    size: 384,
    fields: &[
        b("GRID_WIDTH", 1279, 1248),
        b("GRID_HEIGHT", 1295, 1280),
        b("GRID_DEPTH", 1327, 1312),
        b("CTA_THREAD_DIMENSION0", 1103, 1088),
        b("CTA_THREAD_DIMENSION1", 1119, 1104),
        b("CTA_THREAD_DIMENSION2", 1127, 1120),
        b("REGISTER_COUNT", 1136, 1128),
        b("BARRIER_COUNT", 1141, 1137),
        b("PROGRAM_ADDRESS_LOWER_SHIFTED4", 1055, 1024),
        b("PROGRAM_ADDRESS_UPPER_SHIFTED4", 1076, 1056),
        b("SHARED_MEMORY_SIZE_SHIFTED7", 1162, 1152),
        b("SHADER_LOCAL_MEMORY_LOW_SIZE_SHIFTED4", 1199, 1184),
        b("SHADER_LOCAL_MEMORY_HIGH_SIZE_SHIFTED4", 1215, 1200),
        b("DEPENDENT_QMD0_POINTER", 415, 384),
        b("DEPENDENT_QMD0_ENABLE", 336, 336),
        b("MIN_SM_CONFIG_SHARED_MEM_SIZE", 1168, 1163),
        b("MAX_SM_CONFIG_SHARED_MEM_SIZE", 1174, 1169),
        b("TARGET_SM_CONFIG_SHARED_MEM_SIZE", 1180, 1175),
    ],
    cbuf: [
        arr("CONSTANT_BUFFER_VALID", 1856, 1856, 4),
        arr("CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6", 1375, 1344, 64),
        arr("CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6", 1394, 1376, 64),
        arr("CONSTANT_BUFFER_SIZE_SHIFTED4", 1407, 1395, 64),
    ],
    cbuf_shift: 6,
    releases: &[
        [
            arr("RELEASE_ENABLE", 288, 288, 16),
            arr("RELEASE_PAYLOAD64B", 300, 300, 16),
            b("RELEASE_SEMAPHORE0_ADDR_LOWER", 511, 480),
            b("RELEASE_SEMAPHORE0_ADDR_UPPER", 536, 512),
            b("RELEASE_SEMAPHORE0_PAYLOAD_LOWER", 575, 544),
            b("RELEASE_SEMAPHORE0_PAYLOAD_UPPER", 607, 576),
        ],
        [
            arr("RELEASE_ENABLE", 304, 304, 16),
            arr("RELEASE_PAYLOAD64B", 316, 316, 16),
            b("RELEASE_SEMAPHORE1_ADDR_LOWER", 799, 768),
            b("RELEASE_SEMAPHORE1_ADDR_UPPER", 824, 800),
            b("RELEASE_SEMAPHORE1_PAYLOAD_LOWER", 863, 832),
            b("RELEASE_SEMAPHORE1_PAYLOAD_UPPER", 895, 864),
        ],
        [
            arr("RELEASE_ENABLE", 320, 320, 16),
            arr("RELEASE_PAYLOAD64B", 332, 332, 16),
            b("RELEASE_SEMAPHORE2_ADDR_LOWER", 927, 896),
            b("RELEASE_SEMAPHORE2_ADDR_UPPER", 952, 928),
            b("RELEASE_SEMAPHORE2_PAYLOAD_LOWER", 991, 960),
            b("RELEASE_SEMAPHORE2_PAYLOAD_UPPER", 1023, 992),
        ],
    ],
    releases32: &[],
};

/// Per-version shifts: (program address, shared memory size, local memory sizes).
fn shifts(major: u32) -> (u32, u32, u32) {
    if major == 5 { (4, 7, 4) } else { (0, 0, 0) }
}

/// A constant buffer binding read back from a QMD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CbufBinding {
    /// Bank.
    pub index: u32,
    /// Address.
    pub va: u64,
    /// Size in bytes.
    pub size: u32,
}

/// An enabled release semaphore read back from a QMD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QmdRelease {
    /// Address.
    pub va: u64,
    /// Payload.
    pub payload: u64,
    /// 64-bit payload.
    pub payload64: bool,
}

/// A QMD's launch, as the hardware would read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QmdInfo {
    /// 2, 3, 4 or 5.
    pub major: u32,
    /// Grid.
    pub grid: [u32; 3],
    /// Block.
    pub block: [u32; 3],
    /// Registers per thread.
    pub registers: u32,
    /// Barriers.
    pub barriers: u32,
    /// Program address.
    pub program_va: u64,
    /// Shared memory bytes.
    pub shared_bytes: u32,
    /// Carveout fields (min, max, target), raw.
    pub sm_config: [u32; 3],
    /// Local memory low/high per thread, bytes.
    pub local_memory: [u32; 2],
    /// Valid constant buffers.
    pub cbufs: Vec<CbufBinding>,
    /// Enabled releases.
    pub releases: Vec<QmdRelease>,
    /// Chained QMD.
    pub dependent: Option<u64>,
}

/// A QMD the decoder cannot read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QmdDecodeError {
    /// Not the size of the version asked for.
    BadSize(usize),
    /// Not version 2, 3, 4 or 5.
    UnknownVersion(u32),
    /// The QMD's major version field disagrees with the version asked for.
    VersionMismatch {
        /// Asked for.
        expected: u32,
        /// In the QMD.
        found: u32,
    },
}

impl fmt::Display for QmdDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadSize(n) => write!(
                f,
                "QMD of {n} bytes does not match its version (256 bytes for v2/v3, 384 for v4/v5)"
            ),
            Self::UnknownVersion(v) => write!(f, "QMD major version {v} is not 2, 3, 4 or 5"),
            Self::VersionMismatch { expected, found } => write!(
                f,
                "QMD says major version {found}, the compute class uses {expected}"
            ),
        }
    }
}

impl std::error::Error for QmdDecodeError {}

fn get(bytes: &[u8], hi: u32, lo: u32) -> u64 {
    let mut v = 0u64;
    for bit in lo..=hi {
        let byte = bytes.get((bit / 8) as usize).copied().unwrap_or(0);
        v |= (((byte >> (bit % 8)) & 1) as u64) << (bit - lo);
    }
    v
}

impl Table {
    fn read(&self, q: &[u8], f: Bits, i: u32) -> u64 {
        get(q, f.hi + i * f.stride, f.lo + i * f.stride)
    }

    fn field(&self, q: &[u8], idx: usize) -> u64 {
        self.read(q, self.fields[idx], 0)
    }
}

/// The table of QMD major version `major` (2, 3, 4 or 5).
pub fn table(major: u32) -> Option<&'static Table> {
    match major {
        2 => Some(&V2),
        3 => Some(&V3),
        4 => Some(&V4),
        5 => Some(&V5),
        _ => None,
    }
}

/// The QMD major version a compute class uses.
pub fn major_for_class(class: u32) -> Option<u32> {
    match class {
        // TURING_COMPUTE_A launches V02_03 (clc5c0qmd.h, "Queue Meta Data, Version 02_03").
        0xc5c0 => Some(2),
        0xc6c0 | 0xc7c0 | 0xc9c0 => Some(3),
        0xcbc0 => Some(4),
        0xcdc0 | 0xcec0 => Some(5),
        _ => None,
    }
}

/// Decodes a QMD of major version `major` (the compute class decides it: the version field
/// alone cannot, as other versions' fields overlap it).
pub fn decode_qmd(q: &[u8], major: u32) -> Result<QmdInfo, QmdDecodeError> {
    let t = table(major).ok_or(QmdDecodeError::UnknownVersion(major))?;
    if q.len() != t.size {
        return Err(QmdDecodeError::BadSize(q.len()));
    }
    let (hi, lo) = if major == 5 { (471, 468) } else { (583, 580) };
    let found = get(q, hi, lo) as u32;
    if found != major {
        return Err(QmdDecodeError::VersionMismatch {
            expected: major,
            found,
        });
    }
    let (prog_shift, smem_shift, slm_shift) = shifts(t.major);
    let f = |i| t.field(q, i);
    let cbufs = (0..8)
        .filter(|&i| t.read(q, t.cbuf[0], i) != 0)
        .map(|i| CbufBinding {
            index: i,
            va: ((t.read(q, t.cbuf[2], i) << 32) | t.read(q, t.cbuf[1], i)) << t.cbuf_shift,
            size: (t.read(q, t.cbuf[3], i) << 4) as u32,
        })
        .collect();
    let mut releases: Vec<QmdRelease> = t
        .releases
        .iter()
        .filter(|r| t.read(q, r[0], 0) != 0)
        .map(|r| QmdRelease {
            va: (t.read(q, r[3], 0) << 32) | t.read(q, r[2], 0),
            payload: (t.read(q, r[5], 0) << 32) | t.read(q, r[4], 0),
            payload64: t.read(q, r[1], 0) != 0,
        })
        .collect();
    releases.extend(
        t.releases32
            .iter()
            .filter(|r| t.read(q, r.enable, 0) != 0)
            .map(|r| QmdRelease {
                va: (t.read(q, r.addr_upper, 0) << 32) | t.read(q, r.addr_lower, 0),
                payload: t.read(q, r.payload, 0),
                payload64: false,
            }),
    );
    Ok(QmdInfo {
        major: t.major,
        grid: [f(GRID) as u32, f(GRID + 1) as u32, f(GRID + 2) as u32],
        block: [f(BLOCK) as u32, f(BLOCK + 1) as u32, f(BLOCK + 2) as u32],
        registers: f(REGS) as u32,
        barriers: f(BARRIERS) as u32,
        program_va: ((f(PROG_HI) << 32) | f(PROG_LO)) << prog_shift,
        shared_bytes: (f(SMEM) << smem_shift) as u32,
        sm_config: [f(MIN_CFG) as u32, f(MAX_CFG) as u32, f(TARGET_CFG) as u32],
        local_memory: [
            (f(SLM_LOW) << slm_shift) as u32,
            (f(SLM_HIGH) << slm_shift) as u32,
        ],
        cbufs,
        releases,
        dependent: (f(DEP_EN) != 0).then(|| f(DEP_PTR) << 8),
    })
}
