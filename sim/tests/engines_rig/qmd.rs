//! QMDs built here from the field positions of clc5c0qmd.h (V02_03, Turing), clc6c0qmd.h
//! (V03_00, Ampere and Ada),
//! clcbc0qmd.h (V04_00, Hopper) and clcec0qmd.h (V05_00, Blackwell), bit by bit (not with the
//! simulator's decoder tables).

/// `MW(hi:lo)` positions of the fields a launch fills, per version.
pub struct Layout {
    pub major: u32,
    /// QMD_TYPE (V04 on; V03_00 has none).
    pub qmd_type: Option<(u32, u32)>,
    pub major_version: (u32, u32),
    pub grid: [(u32, u32); 3],
    pub block: [(u32, u32); 3],
    pub registers: (u32, u32),
    pub barriers: (u32, u32),
    /// (lower, upper, shift)
    pub program: ((u32, u32), (u32, u32), u32),
    /// (field, shift)
    pub shared: ((u32, u32), u32),
    pub sm_config: [(u32, u32); 3],
    /// VALID(0) bit and stride; ADDR_LOWER_SHIFTED6(0), ADDR_UPPER_SHIFTED6(0),
    /// SIZE_SHIFTED4(0) with stride 64.
    pub cbuf_valid: (u32, u32),
    pub cbuf_addr_lo: (u32, u32),
    pub cbuf_addr_hi: (u32, u32),
    pub cbuf_size: (u32, u32),
    /// How far the constant-buffer address is shifted (6: `_SHIFTED6`; 0 on V03_00).
    pub cbuf_shift: u32,
    /// RELEASE_ENABLE(0) (stride 16), STRUCTURE_SIZE(0), PAYLOAD64B(0); SEMAPHORE0 address
    /// lower/upper and payload lower/upper.
    pub release_enable: u32,
    pub release_structure: (u32, u32),
    /// PAYLOAD64B (V02_03 has none: 32-bit payloads).
    pub release_payload64: Option<u32>,
    /// Address lower, upper, payload lower.
    pub release0: [(u32, u32); 3],
    /// Payload upper (none on V02_03).
    pub release0_payload_upper: Option<(u32, u32)>,
    /// DEPENDENT_QMD0_POINTER, DEPENDENT_QMD0_ENABLE, DEPENDENT_QMD0_ACTION.
    pub dependent: ((u32, u32), u32, (u32, u32)),
}

/// V02_03 (clc5c0qmd.h): no QMD_TYPE; SEMAPHORE_RELEASE_ENABLE0 (138) with a 32-bit
/// RELEASE0_PAYLOAD; one dependent (DEPENDENT_QMD_POINTER, _SCHEDULE_ENABLE 141, _TYPE 142,
/// GRID 1).
pub const V2: Layout = Layout {
    major: 2,
    qmd_type: None,
    major_version: (583, 580),
    grid: [(415, 384), (431, 416), (463, 448)],
    block: [(607, 592), (623, 608), (639, 624)],
    registers: (656, 648),
    barriers: (959, 955),
    program: ((1567, 1536), (1584, 1568), 0),
    shared: ((561, 544), 0),
    sm_config: [(568, 562), (575, 569), (663, 657)],
    cbuf_valid: (640, 1),
    cbuf_addr_lo: (1055, 1024),
    cbuf_addr_hi: (1072, 1056),
    cbuf_size: (1087, 1075),
    cbuf_shift: 0,
    release_enable: 138,
    release_structure: (799, 799),
    release_payload64: None,
    release0: [(767, 736), (775, 768), (831, 800)],
    release0_payload_upper: None,
    dependent: ((511, 480), 141, (142, 142)),
};

/// V03_00 (clc6c0qmd.h): no QMD_TYPE; constant buffers as byte addresses; releases at
/// 768..895.
pub const V3: Layout = Layout {
    major: 3,
    qmd_type: None,
    major_version: (583, 580),
    grid: [(415, 384), (431, 416), (463, 448)],
    block: [(607, 592), (623, 608), (639, 624)],
    registers: (656, 648),
    barriers: (767, 763),
    program: ((1567, 1536), (1584, 1568), 0),
    shared: ((561, 544), 0),
    sm_config: [(567, 562), (574, 569), (662, 657)],
    cbuf_valid: (640, 1),
    cbuf_addr_lo: (1055, 1024),
    cbuf_addr_hi: (1072, 1056),
    cbuf_size: (1087, 1075),
    cbuf_shift: 0,
    release_enable: 823,
    release_structure: (831, 830),
    release_payload64: Some(829),
    release0: [(799, 768), (807, 800), (863, 832)],
    release0_payload_upper: Some((895, 864)),
    // DEPENDENT_QMD0_POINTER 511:480; _ENABLE 512; _ACTION 515:513.
    dependent: ((511, 480), 512, (515, 513)),
};

pub const V4: Layout = Layout {
    major: 4,
    qmd_type: Some((25, 23)),
    major_version: (583, 580),
    grid: [(1055, 1024), (1071, 1056), (1103, 1088)],
    block: [(1167, 1152), (1183, 1168), (1199, 1184)],
    registers: (1208, 1200),
    barriers: (1215, 1211),
    program: ((1247, 1216), (1272, 1248), 0),
    shared: ((601, 584), 0),
    sm_config: [(613, 608), (619, 614), (625, 620)],
    cbuf_valid: (416, 4),
    cbuf_addr_lo: (1567, 1536),
    cbuf_addr_hi: (1586, 1568),
    cbuf_size: (1599, 1587),
    cbuf_shift: 6,
    release_enable: 320,
    release_structure: (322, 321),
    release_payload64: Some(332),
    release0: [(671, 640), (696, 672), (735, 704)],
    release0_payload_upper: Some((767, 736)),
    // DEPENDENT_QMD0_POINTER 479:448; DEPENDENT_QMD_ENABLE(0) 368; _ACTION(0) 371:369.
    dependent: ((479, 448), 368, (371, 369)),
};

pub const V5: Layout = Layout {
    major: 5,
    qmd_type: Some((153, 151)),
    major_version: (471, 468),
    grid: [(1279, 1248), (1295, 1280), (1327, 1312)],
    block: [(1103, 1088), (1119, 1104), (1127, 1120)],
    registers: (1136, 1128),
    barriers: (1141, 1137),
    program: ((1055, 1024), (1076, 1056), 4),
    shared: ((1162, 1152), 7),
    sm_config: [(1168, 1163), (1174, 1169), (1180, 1175)],
    cbuf_valid: (1856, 4),
    cbuf_addr_lo: (1375, 1344),
    cbuf_addr_hi: (1394, 1376),
    cbuf_size: (1407, 1395),
    cbuf_shift: 6,
    release_enable: 288,
    release_structure: (290, 289),
    release_payload64: Some(300),
    release0: [(511, 480), (536, 512), (575, 544)],
    release0_payload_upper: Some((607, 576)),
    // DEPENDENT_QMD0_POINTER 415:384; DEPENDENT_QMD0_ENABLE 336; _ACTION 339:337.
    dependent: ((415, 384), 336, (339, 337)),
};

/// A QMD being filled.
pub struct Qmd {
    pub bytes: Vec<u8>,
    pub l: &'static Layout,
}

impl Qmd {
    /// An empty QMD (384 bytes) of layout `l` with its type and version set.
    pub fn new(l: &'static Layout) -> Qmd {
        let mut q = Qmd {
            bytes: vec![0; 384],
            l,
        };
        if let Some(t) = l.qmd_type {
            q.set(t, 2); // GRID_CTA
        }
        q.set(l.major_version, u64::from(l.major));
        q
    }

    /// Sets bits `hi:lo` to `v`.
    pub fn set(&mut self, (hi, lo): (u32, u32), v: u64) -> &mut Self {
        assert!(
            hi - lo == 63 || v >> (hi - lo + 1) == 0,
            "{v:#x} does not fit {hi}:{lo}"
        );
        for b in lo..=hi {
            let bit = (v >> (b - lo)) & 1;
            let byte = &mut self.bytes[(b / 8) as usize];
            *byte = (*byte & !(1 << (b % 8))) | ((bit as u8) << (b % 8));
        }
        self
    }

    /// A grid of `grid` blocks of `block` threads, `regs` registers, program at `prog`, no
    /// shared memory (carveout 32 KiB: `32 / 4 + 1`).
    pub fn launch(&mut self, grid: [u32; 3], block: [u32; 3], regs: u32, prog: u64) -> &mut Self {
        let l = self.l;
        for i in 0..3 {
            self.set(l.grid[i], grid[i].into());
            self.set(l.block[i], block[i].into());
        }
        self.set(l.registers, regs.into());
        self.set(l.barriers, 1);
        let (lo, hi, shift) = l.program;
        self.set(lo, (prog >> shift) & 0xffff_ffff);
        self.set(hi, prog >> shift >> 32);
        for f in l.sm_config {
            self.set(f, 9);
        }
        self
    }

    /// Binds constant buffer `i` at `va` (64-byte aligned) of `size` bytes.
    pub fn cbuf(&mut self, i: u32, va: u64, size: u32) -> &mut Self {
        let l = self.l;
        let at = |(hi, lo): (u32, u32)| (hi + 64 * i, lo + 64 * i);
        self.set(
            (
                l.cbuf_valid.0 + l.cbuf_valid.1 * i,
                l.cbuf_valid.0 + l.cbuf_valid.1 * i,
            ),
            1,
        );
        self.set(at(l.cbuf_addr_lo), (va >> l.cbuf_shift) & 0xffff_ffff);
        self.set(at(l.cbuf_addr_hi), va >> l.cbuf_shift >> 32);
        self.set(at(l.cbuf_size), u64::from(size) >> 4);
        self
    }

    /// Enables release 0: a four-word (payload + timer) 64-bit release of `payload` at `va`
    /// (32-bit on V02_03).
    pub fn release0(&mut self, va: u64, payload: u64) -> &mut Self {
        let l = self.l;
        let e = l.release_enable;
        self.set((e, e), 1);
        self.set(l.release_structure, 0);
        self.set(l.release0[0], va & 0xffff_ffff);
        self.set(l.release0[1], va >> 32);
        self.set(l.release0[2], payload & 0xffff_ffff);
        if let (Some(p64), Some(upper)) = (l.release_payload64, l.release0_payload_upper) {
            self.set((p64, p64), 1);
            self.set(upper, payload >> 32);
        }
        self
    }

    /// Chains the QMD at `va` (256-byte aligned) after this one.
    pub fn then(&mut self, va: u64) -> &mut Self {
        let ((hi, lo), en, action) = self.l.dependent;
        self.set((hi, lo), va >> 8);
        self.set((en, en), 1);
        self.set(action, 1); // QMD_SCHEDULE
        self
    }
}
