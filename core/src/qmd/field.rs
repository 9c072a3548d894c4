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
        // Gather the (at most three) words the field touches, then shift and mask.
        let first = (self.lo / 32) as usize;
        let mut acc = 0u128;
        for (k, idx) in (first..=(self.hi / 32) as usize).enumerate() {
            acc |= (words.get(idx).copied().unwrap_or(0) as u128) << (32 * k);
        }
        ((acc >> (self.lo % 32)) as u64) & self.max()
    }

    /// Writes `value` into the field; `false` (and nothing written) if it does not fit or the
    /// field lies past the end of `words`.
    #[must_use]
    pub fn set(&self, words: &mut [u32], value: u64) -> bool {
        if value > self.max() || (self.hi / 32) as usize >= words.len() {
            return false;
        }
        let first = (self.lo / 32) as usize;
        let shift = self.lo % 32;
        let mask = (self.max() as u128) << shift;
        let bits = (value as u128) << shift;
        for (k, w) in words[first..=(self.hi / 32) as usize]
            .iter_mut()
            .enumerate()
        {
            let m = (mask >> (32 * k)) as u32;
            *w = (*w & !m) | ((bits >> (32 * k)) as u32 & m);
        }
        true
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
