//! The radix3 page tables through which GSP-RM's boot loader reads the GSP-RM ELF image
//! from system memory.
//!
//! One buffer of 4 KiB pages holds, in order: level 0 (one page), level 1, level 2, then the
//! image. Each level-N page is an array of 512 little-endian `u64` bus addresses of the
//! level-N+1 pages (level 2 points at the image pages). The whole buffer may be physically
//! scattered: the caller supplies the bus address of every page. `sysmemAddrOfRadix3Elf` in
//! the WPR metadata is the address of page 0.
//!
//! Mirrors `kgspCreateRadix3_IMPL` (`kernel_gsp.c`): `nPages[3] = ceil(size / 4K)`,
//! `nPages[i-1] = ((nPages[i] - 1) >> 9) + 1`, `nPages[0]` must be 1.

use alloc::vec::Vec;
use core::fmt;

/// `LIBOS_MEMORY_REGION_RADIX_PAGE_SIZE`.
pub const RADIX_PAGE_SIZE: u64 = 4096;
const ENTRIES_LOG2: u32 = 12 - 3;

/// Page counts and offsets of the four radix3 levels for one image size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Radix3Layout {
    /// Pages per level: `[1, level1, level2, image]`.
    pub pages: [u64; 4],
    /// Byte offset of each level in the buffer.
    pub offsets: [u64; 4],
}

/// Why radix3 tables could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Radix3Error {
    /// A zero-sized image (OpenRM: `NV_ERR_OUT_OF_RANGE`).
    EmptyImage,
    /// An image needing more than one level-0 page (above 512 GiB).
    ImageTooLarge { size: u64 },
    /// Not exactly one bus address per page of the buffer.
    PageCount { expected: u64, got: usize },
    /// A page address not aligned to 4 KiB.
    UnalignedPage { index: usize, addr: u64 },
}

impl fmt::Display for Radix3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyImage => write!(f, "radix3: empty GSP image"),
            Self::ImageTooLarge { size } => write!(f, "radix3: image of {size} bytes too large"),
            Self::PageCount { expected, got } => {
                write!(
                    f,
                    "radix3: {got} page addresses given, the buffer has {expected} pages"
                )
            }
            Self::UnalignedPage { index, addr } => {
                write!(
                    f,
                    "radix3: page {index} address {addr:#x} not 4 KiB aligned"
                )
            }
        }
    }
}

impl Radix3Layout {
    /// The layout for an image of `image_size` bytes.
    pub fn for_image(image_size: u64) -> Result<Self, Radix3Error> {
        if image_size == 0 {
            return Err(Radix3Error::EmptyImage);
        }
        let mut pages = [0u64; 4];
        pages[3] = image_size.div_ceil(RADIX_PAGE_SIZE);
        for i in (1..4).rev() {
            pages[i - 1] = ((pages[i] - 1) >> ENTRIES_LOG2) + 1;
        }
        if pages[0] != 1 {
            return Err(Radix3Error::ImageTooLarge { size: image_size });
        }
        let mut offsets = [0u64; 4];
        let mut n = 0;
        for i in 1..4 {
            n += pages[i - 1];
            offsets[i] = n * RADIX_PAGE_SIZE;
        }
        Ok(Self { pages, offsets })
    }

    /// Pages of the three table levels.
    pub fn table_pages(&self) -> u64 {
        self.pages[0] + self.pages[1] + self.pages[2]
    }

    /// Pages of the whole buffer: tables plus image.
    pub fn total_pages(&self) -> u64 {
        self.table_pages() + self.pages[3]
    }

    /// Byte offset of the image in the buffer.
    pub fn image_offset(&self) -> u64 {
        self.offsets[3]
    }

    /// The table bytes (`table_pages() * 4096`) for the start of the buffer, given the bus
    /// address of every page of the buffer (`total_pages()` of them, in buffer order).
    /// Unused entries are zero. The image goes at [`Radix3Layout::image_offset`].
    pub fn build_tables(&self, page_addrs: &[u64]) -> Result<Vec<u8>, Radix3Error> {
        if page_addrs.len() as u64 != self.total_pages() {
            return Err(Radix3Error::PageCount {
                expected: self.total_pages(),
                got: page_addrs.len(),
            });
        }
        if let Some((index, &addr)) = page_addrs
            .iter()
            .enumerate()
            .find(|(_, a)| **a % RADIX_PAGE_SIZE != 0)
        {
            return Err(Radix3Error::UnalignedPage { index, addr });
        }
        let mut out = alloc::vec![0u8; (self.table_pages() * RADIX_PAGE_SIZE) as usize];
        // Level i's entries are the addresses of level i+1's pages, which follow all pages of
        // levels 0..=i in the buffer.
        let mut first_child = 0u64;
        for level in 0..3 {
            first_child += self.pages[level];
            let children =
                &page_addrs[first_child as usize..(first_child + self.pages[level + 1]) as usize];
            let base = self.offsets[level] as usize;
            for (k, a) in children.iter().enumerate() {
                out[base + k * 8..base + k * 8 + 8].copy_from_slice(&a.to_le_bytes());
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_of_small_and_multi_page_levels() {
        let l = Radix3Layout::for_image(1).unwrap();
        assert_eq!(l.pages, [1, 1, 1, 1]);
        assert_eq!(l.offsets, [0, 0x1000, 0x2000, 0x3000]);
        // 600 image pages -> 2 level-2 pages -> 1 level-1 page.
        let l = Radix3Layout::for_image(600 * 4096 - 5).unwrap();
        assert_eq!(l.pages, [1, 1, 2, 600]);
        assert_eq!(l.image_offset(), 4 * 4096);
        assert_eq!(Radix3Layout::for_image(0), Err(Radix3Error::EmptyImage));
        assert!(Radix3Layout::for_image((512u64 * 512 * 512 + 1) * 4096).is_err());
    }

    #[test]
    fn tables_point_at_the_next_level() {
        let l = Radix3Layout::for_image(600 * 4096).unwrap();
        let addrs: Vec<u64> = (0..l.total_pages())
            .map(|i| 0x8_0000_0000 + (i ^ 0x55) * 4096)
            .collect();
        let t = l.build_tables(&addrs).unwrap();
        let entry = |off: usize| u64::from_le_bytes(t[off..off + 8].try_into().unwrap());
        assert_eq!(entry(0), addrs[1]); // level 0 -> level 1 page
        assert_eq!(entry(8), 0);
        assert_eq!(entry(0x1000), addrs[2]); // level 1 -> both level 2 pages
        assert_eq!(entry(0x1008), addrs[3]);
        assert_eq!(entry(0x2000), addrs[4]); // level 2 -> image pages
        assert_eq!(entry(0x3000 + 87 * 8), addrs[4 + 512 + 87]);
        let mut bad = addrs.clone();
        bad[3] |= 8;
        assert_eq!(
            l.build_tables(&bad),
            Err(Radix3Error::UnalignedPage {
                index: 3,
                addr: bad[3]
            })
        );
        assert!(l.build_tables(&addrs[1..]).is_err());
    }
}
