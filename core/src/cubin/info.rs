//! `.nv.info` attribute records: `[format u8][attribute u8][u16]` then, for format
//! `EIFMT_SVAL` (4), the u16 is a byte count of data that follows; for the other formats the
//! u16 is the value itself.

use super::CubinError;
use super::elf::{u16_at, u32_at};

/// `EIFMT_SVAL`: sized data follows.
pub const EIFMT_SVAL: u8 = 4;

/// Attribute numbers (`EIATTR_*`) this loader reads.
pub mod attr {
    /// Max threads per CTA (`__launch_bounds__`), [x, y, z].
    pub const MAX_THREADS: u8 = 0x05;
    /// Parameter bank: [kernel's constant0 section symbol u32][offset u16][size u16].
    pub const PARAM_CBANK: u8 = 0x0a;
    /// Required CTA size (`reqntid`), [x, y, z].
    pub const REQNTID: u8 = 0x10;
    /// Stack frame of a function: [symbol u32][bytes u32].
    pub const FRAME_SIZE: u8 = 0x11;
    /// Minimum stack of a kernel including callees: [symbol u32][bytes u32].
    pub const MIN_STACK_SIZE: u8 = 0x12;
    /// One kernel parameter: [index u32][ordinal u16][offset u16][flags+size u32].
    pub const KPARAM_INFO: u8 = 0x17;
    /// Parameter bytes in the constant bank (u16 value).
    pub const CBANK_PARAM_SIZE: u8 = 0x19;
    /// `maxrregcount` (u16 value).
    pub const MAXREG_COUNT: u8 = 0x1b;
    /// CRS stack size: [symbol u32][bytes u32].
    pub const CRS_STACK_SIZE: u8 = 0x1e;
    /// Maximum stack: [symbol u32][bytes u32].
    pub const MAX_STACK_SIZE: u8 = 0x23;
    /// Registers per thread: [symbol u32][count u32].
    pub const REGCOUNT: u8 = 0x2f;
    /// Named barriers used (u16 value).
    pub const NUM_BARRIERS: u8 = 0x4c;
}

/// One attribute record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attribute<'a> {
    /// `EIFMT_*`.
    pub format: u8,
    /// `EIATTR_*`.
    pub attr: u8,
    /// The u16 value (non-SVAL formats) or data length (SVAL).
    pub value: u16,
    /// The data (SVAL only).
    pub data: &'a [u8],
}

impl Attribute<'_> {
    /// The SVAL data as a pair of u32 (symbol, value), as REGCOUNT/FRAME_SIZE use.
    pub fn symbol_value(&self) -> Result<(u32, u32), CubinError> {
        Ok((
            u32_at(self.data, 0, "attribute data")?,
            u32_at(self.data, 4, "attribute data")?,
        ))
    }

    /// The SVAL data as three u32 (MAX_THREADS, REQNTID).
    pub fn xyz(&self) -> Result<[u32; 3], CubinError> {
        Ok([
            u32_at(self.data, 0, "attribute data")?,
            u32_at(self.data, 4, "attribute data")?,
            u32_at(self.data, 8, "attribute data")?,
        ])
    }

    /// PARAM_CBANK: (symbol, offset, size).
    pub fn param_cbank(&self) -> Result<(u32, u16, u16), CubinError> {
        Ok((
            u32_at(self.data, 0, "attribute data")?,
            u16_at(self.data, 4, "attribute data")?,
            u16_at(self.data, 6, "attribute data")?,
        ))
    }
}

/// Iterates over the records of an `.nv.info` section; a malformed record ends the iteration
/// with an error.
pub struct Attributes<'a> {
    data: &'a [u8],
    off: usize,
    failed: bool,
}

impl<'a> Attributes<'a> {
    /// Records of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self {
            data,
            off: 0,
            failed: false,
        }
    }
}

impl<'a> Iterator for Attributes<'a> {
    type Item = Result<Attribute<'a>, CubinError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.off >= self.data.len() {
            return None;
        }
        let res = (|| {
            let h = super::elf::bytes(self.data, self.off, 4, "attribute header")?;
            let (format, attr) = (h[0], h[1]);
            let value = u16::from_le_bytes([h[2], h[3]]);
            let mut data: &[u8] = &[];
            let mut len = 4;
            if format == EIFMT_SVAL {
                data =
                    super::elf::bytes(self.data, self.off + 4, value as usize, "attribute data")?;
                len += value as usize;
            }
            self.off += len;
            Ok(Attribute {
                format,
                attr,
                value,
                data,
            })
        })();
        if res.is_err() {
            self.failed = true;
        }
        Some(res)
    }
}
