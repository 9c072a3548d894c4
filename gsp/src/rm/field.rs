//! Bit fields inside 32-bit RM flag and attribute words.
//!
//! NVIDIA's headers describe a field as `#define NAME high:low` and its values as plain
//! numbers (`NAME_VALUE`). [`BitField`] is that `high:low` pair: nvbare's one bit-range type
//! (`nvbare_bits::BitRange`), built with [`BitField::word32`] so a range outside a 32-bit word
//! stops the build; `encode` places a value in the field and `decode` reads it back out of a
//! word.

pub use nvbare_bits::BitRange as BitField;

#[cfg(test)]
mod tests {
    use super::BitField;

    #[test]
    fn rm_words_use_the_shared_range_as_32_bit_fields() {
        let f = BitField::word32(7, 4);
        assert_eq!(f.encode(1), 0x10);
        assert_eq!(f.decode(0xabcd_ef5a), 0x5);
        assert_eq!(BitField::try_word32(32, 0), None);
    }
}
