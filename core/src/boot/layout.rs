//! VRAM size and the FB layout of an FSP boot: what nvbare asks GSP-FMC to reserve at the
//! top of FB (the `GspFwWprMeta` sizes) and where FSP puts FRTS.
//!
//! On Hopper and Blackwell the CPU sends sizes only; GSP-FMC's ACR places WPR2 and patches
//! the offsets (`kgspCalculateFbLayout_GH100`, which draws the layout, top of FB down:
//! VGA workspace, PMU reservation, FRTS, boot binary, GSP-RM ELF, GSP-RM heap, WPR metadata,
//! non-WPR heap). [`FbLayout::reserved_top`] estimates how much that takes, so that nothing
//! else is placed there; once GSP-RM runs, `GET_GSP_STATIC_INFO` reports the real start
//! (`fwWprLayoutOffset.nonWprHeapOffset`).

use nvbare_gsp::boot::wpr_meta::FmcWprSizes;

use super::error::BootErrorKind;
use super::hal::ChipHal;
use crate::hal::Bar0;
use crate::regs::fb::UsableFbSizeInMb;

const MB: u64 = 1 << 20;
/// The smallest VRAM a supported GPU has; a smaller reading means the register is wrong.
const MIN_FB_MB: u32 = 1024;

/// The FB layout requested of GSP-FMC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FbLayout {
    /// Usable VRAM in bytes (`NV_USABLE_FB_SIZE_IN_MB` << 20).
    pub fb_size: u64,
    /// The sizes in `GspFwWprMeta` (VGA workspace, PMU reserve, non-WPR heap, FRTS, heap).
    pub sizes: FmcWprSizes,
    /// Distance of FRTS from the end of FB (`frtsVidmemOffset`).
    pub frts_offset_from_end: u64,
}

impl FbLayout {
    /// Reads the VRAM size and computes the layout for `hal`'s chip.
    pub fn read(bar: &impl Bar0, hal: &ChipHal) -> Result<Self, BootErrorKind> {
        let mib = UsableFbSizeInMb::read(bar).value();
        if mib < MIN_FB_MB || mib == u32::MAX {
            return Err(BootErrorKind::ImplausibleVram { mib });
        }
        Ok(Self::for_size(u64::from(mib) * MB, hal))
    }

    /// The layout for `fb_size` bytes of usable VRAM.
    pub fn for_size(fb_size: u64, hal: &ChipHal) -> Self {
        Self {
            fb_size,
            sizes: hal.fb.wpr_sizes(fb_size),
            frts_offset_from_end: hal.fb.frts_offset_from_end(),
        }
    }

    /// Where FRTS starts (FSP's copy of the VBIOS-provided data): `frtsVidmemOffset`
    /// below the end of FB, 1 MiB long.
    pub fn frts_start(&self) -> u64 {
        self.fb_size - self.frts_offset_from_end - self.sizes.frts_size
    }

    /// Bytes at the top of FB the firmware takes, for an image of `elf_size` bytes and a
    /// boot binary of `boot_size`: FRTS and everything above it, the boot binary (4 KiB
    /// aligned), the ELF (64 KiB aligned), the heap, 1 MiB for the WPR metadata and the
    /// WPR/LSB headers, the non-WPR heap; rounded up to 2 MiB.
    pub fn reserved_top(&self, elf_size: u64, boot_size: u64) -> u64 {
        (self.frts_offset_from_end
            + self.sizes.frts_size
            + boot_size.next_multiple_of(0x1000)
            + elf_size.next_multiple_of(0x10000)
            + self.sizes.heap_size
            + MB
            + self.sizes.non_wpr_heap_size)
            .next_multiple_of(2 * MB)
    }

    /// Checks the firmware fits below the top of FB, leaving at least half of VRAM.
    pub fn check_fits(&self, elf_size: u64, boot_size: u64) -> Result<(), BootErrorKind> {
        let needed = self.reserved_top(elf_size, boot_size);
        if needed > self.fb_size / 2 {
            return Err(BootErrorKind::LayoutDoesNotFit {
                fb_size: self.fb_size,
                needed,
            });
        }
        Ok(())
    }

    /// Usable VRAM below what the firmware may take.
    pub fn usable_below(&self, elf_size: u64, boot_size: u64) -> u64 {
        self.fb_size
            .saturating_sub(self.reserved_top(elf_size, boot_size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boot::hal::for_chip;
    use crate::chip::Chip;

    struct FbSize(u32);
    impl Bar0 for FbSize {
        fn read32(&self, offset: u32) -> u32 {
            assert_eq!(offset, 0x1183a4);
            self.0
        }
        fn write32(&self, _: u32, _: u32) {}
    }

    #[test]
    fn h200_layout() {
        let hal = for_chip(Chip::GH100).fsp().unwrap();
        let l = FbLayout::read(&FbSize(143_771), &hal).unwrap();
        assert_eq!(l.fb_size, 143_771 * MB);
        assert_eq!(l.sizes.heap_size, 0x9200000);
        assert_eq!(l.frts_start(), l.fb_size - 3 * MB);
        // The GH100 image (0x3c99000 bytes) and bootloader (0x29000 rounded) take
        // 2 + 1 + 0.16 + 60.6 + 146 + 1 + 2 MiB -> 214 MiB.
        let reserved = l.reserved_top(0x3c99000, 0x28f6c);
        assert_eq!(reserved, 214 * MB);
        l.check_fits(0x3c99000, 0x28f6c).unwrap();
        assert_eq!(l.usable_below(0x3c99000, 0x28f6c), l.fb_size - 214 * MB);
    }

    #[test]
    fn gb202_frts_sits_below_the_pmu_reserve() {
        let hal = for_chip(Chip::GB202).fsp().unwrap();
        let l = FbLayout::for_size(32 * 1024 * MB, &hal);
        assert_eq!(l.sizes.heap_size, 0x8700000);
        assert_eq!(l.frts_start(), l.fb_size - 0x1C00000 - MB);
    }

    #[test]
    fn gb100_reserves_the_pmu_memory_above_frts() {
        // A B200-sized FB: the PMU reserve moves FRTS (and everything below it) down by
        // 0x1C00000 - 0x200000 = 26 MiB compared with GH100's layout.
        let gb = FbLayout::for_size(180 * 1024 * MB, &for_chip(Chip::GB100).fsp().unwrap());
        let gh = FbLayout::for_size(180 * 1024 * MB, &for_chip(Chip::GH100).fsp().unwrap());
        assert_eq!(gb.frts_start(), gb.fb_size - 0x1C00000 - MB);
        assert_eq!(gb.sizes.heap_size, gh.sizes.heap_size);
        assert_eq!(
            gb.reserved_top(0x3c99000, 0x28f6c),
            gh.reserved_top(0x3c99000, 0x28f6c) + 26 * MB
        );
    }

    #[test]
    fn implausible_sizes_are_errors() {
        let hal = for_chip(Chip::GH100).fsp().unwrap();
        for mib in [0, 512, u32::MAX] {
            assert!(matches!(
                FbLayout::read(&FbSize(mib), &hal),
                Err(BootErrorKind::ImplausibleVram { .. })
            ));
        }
        let l = FbLayout::read(&FbSize(1024), &hal).unwrap();
        l.check_fits(0x3c99000, 0x28f6c).unwrap();
        assert!(matches!(
            l.check_fits(400 << 20, 0x28f6c),
            Err(BootErrorKind::LayoutDoesNotFit { .. })
        ));
    }
}
