//! nvbare-bits: the one `hi:lo` bit-range type of nvbare.
//!
//! NVIDIA's headers write every field as `#define NAME hi:lo`: register fields (`dev_*.h`),
//! RM flag and attribute words (`nvos.h`), QMD fields (`MW(hi:lo)` of `cl*qmd.h`, over a
//! structure of up to 3072 bits), page-table entry fields (`dev_mmu.h`, 64 or 128 bits).
//! [`BitRange`] is that pair, with the operations each user needs: on a 32-bit word, on a
//! 128-bit entry, and across a little-endian array of 32-bit words.
//!
//! It is its own crate because `nvbare-gsp` (RM words) and `nvbare-mmu` (entries) depend on
//! nothing of ours and `nvbare-core` (registers, QMDs) depends on both: the type has to live
//! below all three, and it needs nothing itself.
#![no_std]
#![forbid(unsafe_code)]

/// An inclusive bit range `hi:lo`, `hi >= lo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BitRange {
    /// Highest bit, inclusive.
    pub hi: u32,
    /// Lowest bit.
    pub lo: u32,
}

impl BitRange {
    /// The highest bit a range may name (QMDs are at most 3072 bits).
    pub const MAX_BIT: u32 = 4095;

    /// The range `hi:lo`, for `const` definitions: a range with `hi < lo` or `hi` above
    /// [`Self::MAX_BIT`] stops the build there. At run time use [`Self::try_new`].
    pub const fn new(hi: u32, lo: u32) -> Self {
        match Self::try_new(hi, lo) {
            Some(r) => r,
            None => panic!("bit range must satisfy MAX_BIT >= hi >= lo"),
        }
    }

    /// The range `hi:lo`, or `None` unless `MAX_BIT >= hi >= lo`.
    pub const fn try_new(hi: u32, lo: u32) -> Option<Self> {
        if hi >= lo && hi <= Self::MAX_BIT {
            Some(Self { hi, lo })
        } else {
            None
        }
    }

    /// A field of a 32-bit word, for `const` definitions: stops the build unless
    /// `31 >= hi >= lo`.
    pub const fn word32(hi: u32, lo: u32) -> Self {
        match Self::try_word32(hi, lo) {
            Some(r) => r,
            None => panic!("a 32-bit word's field must satisfy 31 >= hi >= lo"),
        }
    }

    /// A field of a 32-bit word, or `None` unless `31 >= hi >= lo`.
    pub const fn try_word32(hi: u32, lo: u32) -> Option<Self> {
        if hi >= lo && hi < 32 {
            Some(Self { hi, lo })
        } else {
            None
        }
    }

    /// Number of bits.
    pub const fn width(self) -> u32 {
        self.hi - self.lo + 1
    }

    /// Whether the range lies inside a `bits`-bit value.
    pub const fn fits(self, bits: u32) -> bool {
        self.hi < bits
    }

    /// The largest value the range holds (saturating at `u128::MAX`).
    pub const fn max(self) -> u128 {
        if self.width() >= 128 {
            u128::MAX
        } else {
            (1u128 << self.width()) - 1
        }
    }

    // --- a 32-bit word (register values, RM flag words); bits above 31 fall away ---

    /// The range's bits set, in place in a 32-bit word.
    pub const fn mask(self) -> u32 {
        if self.lo >= 32 {
            return 0;
        }
        // CAST: the low 32 bits of the 128-bit mask.
        (self.max() << self.lo) as u32
    }

    /// `value` shifted into the range; bits of `value` wider than it are dropped.
    pub const fn encode(self, value: u32) -> u32 {
        if self.lo >= 32 {
            return 0;
        }
        (value << self.lo) & self.mask()
    }

    /// The range's value in `word`.
    pub const fn decode(self, word: u32) -> u32 {
        if self.lo >= 32 {
            return 0;
        }
        (word & self.mask()) >> self.lo
    }

    /// `word` with the range replaced by `value`.
    pub const fn set(self, word: u32, value: u32) -> u32 {
        (word & !self.mask()) | self.encode(value)
    }

    // --- a 128-bit entry (page-table entries); ranges must lie inside bits 127:0 ---

    /// One past the largest value the range holds (`1 << width`; width below 128).
    pub const fn limit(self) -> u128 {
        1u128 << self.width()
    }

    /// `value` placed in the range of a 128-bit entry; bits above the width are dropped.
    pub const fn place(self, value: u128) -> u128 {
        (value & self.max()) << self.lo
    }

    /// The range's value in a 128-bit entry.
    pub const fn get(self, entry: u128) -> u128 {
        (entry >> self.lo) & self.max()
    }

    // --- a little-endian array of 32-bit words (QMDs); at most 64 bits wide ---

    /// Reads the range from `words` (bit `i` is bit `i % 32` of `words[i / 32]`); words past
    /// the end read as 0; a range wider than 64 bits reads its low 64.
    pub fn read_words(self, words: &[u32]) -> u64 {
        // Gather the (at most three) words the range touches, then shift and mask.
        let first = (self.lo / 32) as usize;
        let mut acc = 0u128;
        for (k, idx) in (first..=(self.hi / 32) as usize).enumerate().take(4) {
            acc |= u128::from(words.get(idx).copied().unwrap_or(0)) << (32 * k);
        }
        // CAST: masked to at most 64 bits.
        ((acc >> (self.lo % 32)) & self.max().min(u128::from(u64::MAX))) as u64
    }

    /// Writes `value` into the range of `words`; `false` (and nothing written) when it does
    /// not fit the range, the range is wider than 64 bits or lies past the end of `words`.
    #[must_use]
    pub fn write_words(self, words: &mut [u32], value: u64) -> bool {
        let last = (self.hi / 32) as usize;
        if self.width() > 64 || u128::from(value) > self.max() || last >= words.len() {
            return false;
        }
        let first = (self.lo / 32) as usize;
        let shift = self.lo % 32;
        let mask = self.max() << shift;
        let bits = u128::from(value) << shift;
        for (k, w) in words[first..=last].iter_mut().enumerate() {
            // CAST: one 32-bit slice of the 128-bit mask and value.
            let m = (mask >> (32 * k)) as u32;
            *w = (*w & !m) | ((bits >> (32 * k)) as u32 & m);
        }
        true
    }
}

impl core::fmt::Display for BitRange {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}:{}", self.hi, self.lo)
    }
}

#[cfg(test)]
mod tests {
    use super::BitRange;

    #[test]
    fn word_operations_place_value_between_lo_and_hi() {
        let f = BitRange::word32(7, 4);
        assert_eq!(f.width(), 4);
        assert_eq!(f.mask(), 0xf0);
        assert_eq!(f.encode(1), 0x10);
        assert_eq!(f.encode(0x1f), 0xf0, "bits beyond the range are dropped");
        assert_eq!(f.decode(0xabcd_ef5a), 0x5);
        assert_eq!(f.set(0xffff_ffff, 0), 0xffff_ff0f);
        let all = BitRange::word32(31, 0);
        assert_eq!(all.mask(), u32::MAX);
        assert_eq!(all.encode(0xdead_beef), 0xdead_beef);
        let top = BitRange::word32(31, 31);
        assert_eq!(top.encode(1), 0x8000_0000);
        assert_eq!(top.decode(0x8000_0000), 1);
    }

    #[test]
    fn constructors_reject_inverted_or_too_high_ranges() {
        assert_eq!(BitRange::try_new(3, 4), None);
        assert_eq!(BitRange::try_word32(32, 0), None);
        assert_eq!(BitRange::try_new(32, 0), Some(BitRange { hi: 32, lo: 0 }));
        assert_eq!(BitRange::try_new(BitRange::MAX_BIT + 1, 0), None);
        assert!(BitRange::new(63, 0).fits(64) && !BitRange::new(64, 0).fits(64));
    }

    #[test]
    fn entry_operations_reach_the_top_of_128_bits() {
        let f = BitRange::new(127, 120);
        assert_eq!(f.place(0x1ab), 0xab << 120, "bits above the width dropped");
        assert_eq!(f.get(0xcd << 120 | 0xffff), 0xcd);
        assert_eq!(BitRange::new(2, 1).limit(), 4);
    }

    #[test]
    fn word_array_operations_cross_word_boundaries() {
        let mut w = [0u32; 4];
        let f = BitRange::new(79, 24);
        assert!(f.write_words(&mut w, 0x00ab_cdef_0123_4567));
        assert_eq!(f.read_words(&w), 0x00ab_cdef_0123_4567);
        assert_eq!(w, [0x6700_0000, 0xef01_2345, 0x0000_abcd, 0]);
        assert!(!f.write_words(&mut w, 1 << 56), "too wide for 56 bits");
        assert!(
            !BitRange::new(140, 130).write_words(&mut w, 1),
            "past the end"
        );
        assert_eq!(BitRange::new(140, 130).read_words(&w), 0);
    }

    proptest::proptest! {
        #[test]
        fn word_array_set_then_get_round_trips(lo in 0u32..96, width in 1u32..=64, value: u64, fill: u32) {
            let f = BitRange::new(lo + width - 1, lo);
            let mut w = [fill; 5];
            let v = if width == 64 { value } else { value & ((1 << width) - 1) };
            proptest::prop_assert!(f.write_words(&mut w, v));
            proptest::prop_assert_eq!(f.read_words(&w), v);
        }

        #[test]
        fn word_set_then_decode_round_trips(raw: u32, value: u32, lo in 0u32..32, width in 1u32..=32) {
            let hi = (lo + width - 1).min(31);
            let f = BitRange::word32(hi, lo);
            proptest::prop_assert_eq!(f.decode(f.set(raw, value)), value & (f.mask() >> lo));
            proptest::prop_assert_eq!(f.set(raw, value) & !f.mask(), raw & !f.mask());
        }
    }
}
