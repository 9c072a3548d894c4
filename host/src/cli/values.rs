//! Element types and their values: what `--arg u32:7`, `fill=1.5` and `--dump x:f32` read and
//! print. Pure data: every form is tested without a GPU.

use std::fmt;

/// A scalar type as a kernel's C signature names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// `unsigned char`.
    U8,
    /// `unsigned short`.
    U16,
    /// `unsigned int`.
    U32,
    /// `int`.
    I32,
    /// `unsigned long long` (and any pointer given as a number).
    U64,
    /// `long long`.
    I64,
    /// `float`.
    F32,
    /// `double`.
    F64,
}

impl ElemType {
    /// Every type, in the order `--help` lists them.
    pub const ALL: [ElemType; 8] = [
        ElemType::U8,
        ElemType::U16,
        ElemType::U32,
        ElemType::I32,
        ElemType::U64,
        ElemType::I64,
        ElemType::F32,
        ElemType::F64,
    ];

    /// The name used on the command line (`u32`).
    pub const fn name(self) -> &'static str {
        match self {
            ElemType::U8 => "u8",
            ElemType::U16 => "u16",
            ElemType::U32 => "u32",
            ElemType::I32 => "i32",
            ElemType::U64 => "u64",
            ElemType::I64 => "i64",
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
        }
    }

    /// Bytes per element (also its alignment in a parameter block, as in C).
    pub const fn size(self) -> usize {
        match self {
            ElemType::U8 => 1,
            ElemType::U16 => 2,
            ElemType::U32 | ElemType::I32 | ElemType::F32 => 4,
            ElemType::U64 | ElemType::I64 | ElemType::F64 => 8,
        }
    }

    /// The type named `name`.
    pub fn from_name(name: &str) -> Option<ElemType> {
        ElemType::ALL.into_iter().find(|t| t.name() == name)
    }

    fn is_float(self) -> bool {
        matches!(self, ElemType::F32 | ElemType::F64)
    }

    /// `text` as one little-endian element: integers in decimal or `0x` hex (hex gives the
    /// bit pattern, so `i32:0xffffffff` is -1), floats as Rust reads them (`1.5`, `-2e-3`,
    /// `inf`, `nan`).
    pub fn encode(self, text: &str) -> Result<Vec<u8>, BadValue> {
        let bad = || BadValue {
            ty: self,
            text: text.to_owned(),
        };
        let t = text.trim();
        if self.is_float() {
            return match self {
                ElemType::F32 => t.parse::<f32>().map(|v| v.to_le_bytes().to_vec()),
                _ => t.parse::<f64>().map(|v| v.to_le_bytes().to_vec()),
            }
            .map_err(|_| bad());
        }
        let bits = self.size() * 8;
        let value: i128 = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(hex) => {
                let v = u64::from_str_radix(&hex.replace('_', ""), 16).map_err(|_| bad())?;
                if bits < 64 && v >> bits != 0 {
                    return Err(bad());
                }
                // The bit pattern, whatever the signedness.
                return Ok(v.to_le_bytes()[..self.size()].to_vec());
            }
            None => t.replace('_', "").parse::<i128>().map_err(|_| bad())?,
        };
        let (min, max): (i128, i128) = match self {
            ElemType::I32 => (i32::MIN.into(), i32::MAX.into()),
            ElemType::I64 => (i64::MIN.into(), i64::MAX.into()),
            _ => (0, (1i128 << bits) - 1),
        };
        if value < min || value > max {
            return Err(bad());
        }
        // PANIC-free: in range, so the low `size` bytes of its two's complement are the value.
        Ok(value.to_le_bytes()[..self.size()].to_vec())
    }

    /// Element `index` of a buffer filled 0, 1, 2, … (integers wrap at their width).
    pub fn iota(self, index: u64) -> Vec<u8> {
        match self {
            // CAST: the wrap at the element's width is what iota over a small type means.
            ElemType::F32 => (index as f32).to_le_bytes().to_vec(),
            ElemType::F64 => (index as f64).to_le_bytes().to_vec(),
            _ => index.to_le_bytes()[..self.size()].to_vec(),
        }
    }

    /// One element of `bytes` (exactly [`Self::size`] of them) as a person reads it.
    pub fn show(self, bytes: &[u8]) -> String {
        let mut b = [0u8; 8];
        let n = self.size().min(bytes.len());
        b[..n].copy_from_slice(&bytes[..n]);
        let u = u64::from_le_bytes(b);
        // CAST: each arm reinterprets the element's own width.
        match self {
            ElemType::U8 | ElemType::U16 | ElemType::U32 | ElemType::U64 => u.to_string(),
            ElemType::I32 => (u as u32 as i32).to_string(),
            ElemType::I64 => (u as i64).to_string(),
            ElemType::F32 => format!("{:?}", f32::from_bits(u as u32)),
            ElemType::F64 => format!("{:?}", f64::from_bits(u)),
        }
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A value that is not of its type (or out of its range).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a {ty}{}", range_of(*ty))]
pub struct BadValue {
    /// The type asked for.
    pub ty: ElemType,
    /// The text given.
    pub text: String,
}

fn range_of(ty: ElemType) -> String {
    match ty {
        ElemType::U8 => " (0..=255)".into(),
        ElemType::U16 => " (0..=65535)".into(),
        ElemType::U32 => " (0..=4294967295 or 0x hex)".into(),
        ElemType::I32 => " (-2147483648..=2147483647 or 0x hex)".into(),
        ElemType::U64 | ElemType::I64 => " (a 64-bit integer, decimal or 0x hex)".into(),
        ElemType::F32 | ElemType::F64 => " (a number such as 1.5, -2e-3, inf)".into(),
    }
}

/// How `--dump` shows a buffer: as elements of a type, or as 32-bit hex words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpFormat {
    /// Elements of a type.
    Elem(ElemType),
    /// 32-bit words in hex (`deadbeef`), for buffers of no declared type.
    Hex,
}

impl DumpFormat {
    /// `hex` or a type name.
    pub fn from_name(name: &str) -> Option<DumpFormat> {
        match name {
            "hex" => Some(DumpFormat::Hex),
            _ => ElemType::from_name(name).map(DumpFormat::Elem),
        }
    }

    /// Bytes per shown item.
    pub fn size(self) -> usize {
        match self {
            DumpFormat::Elem(t) => t.size(),
            DumpFormat::Hex => 4,
        }
    }

    /// The items of `bytes` (the head of a buffer of `total` items), space-separated, then
    /// how many more the buffer holds.
    pub fn head(self, bytes: &[u8], total: usize) -> String {
        let mut shown: Vec<String> = bytes
            .chunks_exact(self.size())
            .map(|c| match self {
                DumpFormat::Elem(t) => t.show(c),
                // PANIC-free: chunks of exactly 4 bytes.
                DumpFormat::Hex => format!("{:08x}", u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            })
            .collect();
        let more = total.saturating_sub(shown.len());
        if more > 0 {
            shown.push(format!("... ({more} more)"));
        }
        shown.join(" ")
    }
}

impl fmt::Display for DumpFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DumpFormat::Elem(t) => t.fmt(f),
            DumpFormat::Hex => f.write_str("hex"),
        }
    }
}

/// A byte count: decimal or `0x` hex, optionally with `K`/`KiB`, `M`/`MiB`, `G`/`GiB`
/// (powers of 1024). `None` for anything else, zero included.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| c.is_ascii_alphabetic() && !t.starts_with("0x"))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n = match num.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => num.parse::<u64>().ok()?,
    };
    let shift = match unit {
        "" => 0,
        "K" | "k" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        _ => return None,
    };
    n.checked_mul(1 << shift).filter(|&b| b > 0)
}
