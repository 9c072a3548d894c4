//! A QMD field: a named bit range `hi:lo` of the QMD seen as one little-endian bit string
//! (the `MW(hi:lo)` of NVIDIA's `cl*qmd.h` headers), over nvbare's one bit-range type.

use nvbare_bits::BitRange;

/// A bit range in a QMD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QmdField {
    /// The header's name without the `NVxxxx_QMDVyy_zz_` prefix; indexed fields read `NAME(i)`.
    pub name: &'static str,
    /// The bits, `hi:lo`.
    pub bits: BitRange,
    /// For an element of an indexed family `NAME(i)`: `i`.
    pub index: Option<u32>,
}

impl QmdField {
    /// A field named `name` over bits `hi:lo`.
    pub const fn new(name: &'static str, hi: u32, lo: u32) -> Self {
        Self {
            name,
            bits: BitRange::new(hi, lo),
            index: None,
        }
    }

    /// Element `index` of the family `name(i)`, over bits `hi:lo`.
    pub const fn indexed(name: &'static str, hi: u32, lo: u32, index: u32) -> Self {
        Self {
            name,
            bits: BitRange::new(hi, lo),
            index: Some(index),
        }
    }

    /// Width in bits (1..=64 for every field this crate writes).
    pub const fn width(&self) -> u32 {
        self.bits.width()
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
        self.bits.read_words(words)
    }

    /// Writes `value` into the field; `false` (and nothing written) if it does not fit or the
    /// field lies past the end of `words`.
    #[must_use]
    pub fn set(&self, words: &mut [u32], value: u64) -> bool {
        self.bits.write_words(words, value)
    }
}

#[cfg(test)]
mod tests {
    use super::QmdField;

    /// The word-wise accessors agree with a bit-by-bit reference on every alignment.
    #[test]
    fn word_access_matches_bitwise_reference() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for lo in 0..100u32 {
            for width in [1u32, 2, 5, 8, 13, 17, 25, 31, 32, 33, 48, 63, 64] {
                let f = QmdField::new("T", lo + width - 1, lo);
                let mut words: [u32; 6] = core::array::from_fn(|_| next() as u32);
                let before = words;
                let v = next() & f.max();
                assert!(f.set(&mut words, v));
                for bit in 0..192u32 {
                    let get = |w: &[u32; 6]| (w[(bit / 32) as usize] >> (bit % 32)) & 1;
                    let want = if (lo..lo + width).contains(&bit) {
                        ((v >> (bit - lo)) & 1) as u32
                    } else {
                        get(&before)
                    };
                    assert_eq!(get(&words), want, "lo {lo} width {width} bit {bit}");
                }
                assert_eq!(f.get(&words), v);
            }
        }
    }
}

/// An indexed field family, `NAME(i)` at `lo + i*stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QmdArray {
    /// Field name without index.
    pub name: &'static str,
    /// Bits of element 0.
    pub bits: BitRange,
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
            bits: BitRange::new(hi, lo),
            stride,
            count,
        }
    }

    /// Element `i` (`None` past `count`).
    pub fn at(&self, i: u32) -> Option<QmdField> {
        (i < self.count).then(|| {
            QmdField::indexed(
                self.name,
                self.bits.hi + i * self.stride,
                self.bits.lo + i * self.stride,
                i,
            )
        })
    }
}
