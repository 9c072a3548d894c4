//! A QMD field: a named bit range `hi:lo` of the QMD seen as one little-endian bit string
//! (the `MW(hi:lo)` of NVIDIA's `cl*qmd.h` headers).

/// A bit range in a QMD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QmdField {
    /// The header's name without the `NVxxxx_QMDVyy_zz_` prefix; indexed fields read `NAME(i)`.
    pub name: &'static str,
    /// Highest bit, inclusive.
    pub hi: u32,
    /// Lowest bit.
    pub lo: u32,
    /// For an element of an indexed family `NAME(i)`: `i`.
    pub index: Option<u32>,
}

impl QmdField {
    /// A field named `name` over bits `hi:lo`.
    pub const fn new(name: &'static str, hi: u32, lo: u32) -> Self {
        Self {
            name,
            hi,
            lo,
            index: None,
        }
    }

    /// Element `index` of the family `name(i)`, over bits `hi:lo`.
    pub const fn indexed(name: &'static str, hi: u32, lo: u32, index: u32) -> Self {
        Self {
            name,
            hi,
            lo,
            index: Some(index),
        }
    }

    /// Width in bits (1..=32 for every field this crate writes).
    pub const fn width(&self) -> u32 {
        self.hi - self.lo + 1
    }

    /// Largest value the field holds.
    pub const fn max(&self) -> u64 {
        if self.width() >= 64 {
            u64::MAX
        } else {
            (1u64 << self.width()) - 1
        }
    }

    /// Reads the field from `words`. Out-of-range bits read as 0.
    pub fn get(&self, words: &[u32]) -> u64 {
        let mut v = 0u64;
        for bit in self.lo..=self.hi {
            let w = words.get((bit / 32) as usize).copied().unwrap_or(0);
            v |= (((w >> (bit % 32)) & 1) as u64) << (bit - self.lo);
        }
        v
    }

    /// Writes `value` into the field; `false` (and nothing written) if it does not fit or the
    /// field lies past the end of `words`.
    #[must_use]
    pub fn set(&self, words: &mut [u32], value: u64) -> bool {
        if value > self.max() || (self.hi / 32) as usize >= words.len() {
            return false;
        }
        for bit in self.lo..=self.hi {
            let w = &mut words[(bit / 32) as usize];
            let b = ((value >> (bit - self.lo)) & 1) as u32;
            *w = (*w & !(1 << (bit % 32))) | (b << (bit % 32));
        }
        true
    }
}

/// An indexed field family, `NAME(i)` at `lo + i*stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QmdArray {
    /// Field name without index.
    pub name: &'static str,
    /// Bits of element 0.
    pub hi: u32,
    /// Bits of element 0.
    pub lo: u32,
    /// Bits between elements.
    pub stride: u32,
    /// Elements this crate may use.
    pub count: u32,
}

impl QmdArray {
    /// The family `name(i)` with element 0 at `hi:lo`, `stride` bits apart, `count` elements.
    pub const fn new(name: &'static str, hi: u32, lo: u32, stride: u32, count: u32) -> Self {
        Self {
            name,
            hi,
            lo,
            stride,
            count,
        }
    }

    /// Element `i` (`None` past `count`).
    pub fn at(&self, i: u32) -> Option<QmdField> {
        (i < self.count).then(|| {
            QmdField::indexed(
                self.name,
                self.hi + i * self.stride,
                self.lo + i * self.stride,
                i,
            )
        })
    }
}
