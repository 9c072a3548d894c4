//! Bit fields inside 32-bit RM flag and attribute words.
//!
//! NVIDIA's headers describe a field as `#define NAME high:low` and its values as plain
//! numbers (`NAME_VALUE`). [`BitField`] is that `high:low` pair; `encode` places a value
//! in the field and `decode` reads it back out of a word.

/// A `high:low` bit range of a 32-bit word, as NVIDIA's `DRF` macros use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitField {
    /// Highest bit of the field, inclusive.
    pub high: u32,
    /// Lowest bit of the field.
    pub low: u32,
}

impl BitField {
    /// The range `high:low`, for `const` definitions: a range with `high < low` or
    /// `high > 31` stops the build there. At run time use [`BitField::try_new`].
    pub const fn new(high: u32, low: u32) -> Self {
        match Self::try_new(high, low) {
            Some(f) => f,
            None => panic!("bit field must satisfy 31 >= high >= low"),
        }
    }

    /// The range `high:low`, or `None` unless `31 >= high >= low`.
    pub const fn try_new(high: u32, low: u32) -> Option<Self> {
        if high >= low && high < 32 {
            Some(Self { high, low })
        } else {
            None
        }
    }

    /// Number of bits in the field.
    pub const fn width(self) -> u32 {
        self.high - self.low + 1
    }

    /// The field's bits set, in place.
    pub const fn mask(self) -> u32 {
        (u32::MAX >> (32 - self.width())) << self.low
    }

    /// `value` shifted into the field; bits of `value` wider than the field are dropped.
    pub const fn encode(self, value: u32) -> u32 {
        (value << self.low) & self.mask()
    }

    /// The field's value in `word`.
    pub const fn decode(self, word: u32) -> u32 {
        (word & self.mask()) >> self.low
    }

    /// `word` with the field replaced by `value`.
    pub const fn set(self, word: u32, value: u32) -> u32 {
        (word & !self.mask()) | self.encode(value)
    }
}

#[cfg(test)]
mod tests {
    use super::BitField;

    #[test]
    fn encode_places_value_between_low_and_high() {
        let f = BitField::new(7, 4);
        assert_eq!(f.width(), 4);
        assert_eq!(f.mask(), 0xf0);
        assert_eq!(f.encode(1), 0x10);
        assert_eq!(f.encode(0x1f), 0xf0, "bits beyond the field are dropped");
        assert_eq!(f.decode(0xabcd_ef5a), 0x5);
        assert_eq!(f.set(0xffff_ffff, 0), 0xffff_ff0f);
    }

    #[test]
    fn try_new_rejects_inverted_or_too_high_ranges() {
        assert_eq!(BitField::try_new(3, 4), None);
        assert_eq!(BitField::try_new(32, 0), None);
        assert_eq!(
            BitField::try_new(31, 31),
            Some(BitField { high: 31, low: 31 })
        );
    }

    #[test]
    fn full_and_single_bit_fields() {
        let all = BitField::new(31, 0);
        assert_eq!(all.mask(), u32::MAX);
        assert_eq!(all.encode(0xdead_beef), 0xdead_beef);
        let top = BitField::new(31, 31);
        assert_eq!(top.encode(1), 0x8000_0000);
        assert_eq!(top.decode(0x8000_0000), 1);
    }
}
