//! PMC: the chip identification registers (hwref `nv_ref.h`, "dev_boot" section, which the
//! headers describe as stable across generations).

use super::macros::register;

register! {
    /// `NV_PMC_BOOT_0`: legacy chip identification; the architecture is split across two
    /// fields (`ARCHITECTURE_1` is its most significant bit).
    pub struct PmcBoot0 @ [0x0000_0000] hwref("NV_PMC_BOOT_0") {
        /// Minor revision of the chip.
        minor_revision / with_minor_revision: u8 = 3:0, hwref("MINOR_REVISION");
        /// Major revision of the chip.
        major_revision / with_major_revision: u8 = 7:4, hwref("MAJOR_REVISION");
        /// Bit 5 of the architecture.
        architecture_1 / with_architecture_1: bool = 8:8, hwref("ARCHITECTURE_1");
        /// Implementation within the architecture.
        implementation / with_implementation: u8 = 23:20, hwref("IMPLEMENTATION");
        /// Bits 4:0 of the architecture.
        architecture_0 / with_architecture_0: u8 = 28:24, hwref("ARCHITECTURE_0");
    }

    /// `NV_PMC_BOOT_42`: chip identification (architecture, implementation, revision).
    pub struct PmcBoot42 @ [0x0000_0a00] hwref("NV_PMC_BOOT_42") {
        /// Minor extended revision.
        minor_extended_revision / with_minor_extended_revision: u8 = 11:8,
            hwref("MINOR_EXTENDED_REVISION");
        /// Minor revision.
        minor_revision / with_minor_revision: u8 = 15:12, hwref("MINOR_REVISION");
        /// Major revision.
        major_revision / with_major_revision: u8 = 19:16, hwref("MAJOR_REVISION");
        /// Implementation within the architecture (`GH100` is 0, `AD104` is 4).
        implementation / with_implementation: u8 = 23:20, hwref("IMPLEMENTATION");
        /// Architecture (`NV_PMC_BOOT_42_ARCHITECTURE_GH100` is 0x18).
        architecture / with_architecture: u8 = 29:24, hwref("ARCHITECTURE");
        /// Architecture and implementation together (`GH100` is 0x180).
        chip_id / with_chip_id: u16 = 29:20, hwref("CHIP_ID");
    }
}

impl PmcBoot0 {
    /// The full architecture number (`ARCHITECTURE_1` << 5 | `ARCHITECTURE_0`).
    pub fn architecture(self) -> u8 {
        (u8::from(self.architecture_1()) << 5) | self.architecture_0()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn boot42_fields_decode() {
        let reg = PmcBoot42::from_raw(0x1b2a_3500);
        assert_eq!(reg.architecture(), 0x1b);
        assert_eq!(reg.implementation(), 2);
        assert_eq!(reg.chip_id(), 0x1b2);
        assert_eq!(reg.major_revision(), 0xa);
        assert_eq!(reg.minor_revision(), 3);
        assert_eq!(reg.minor_extended_revision(), 5);
        let built = PmcBoot42::default()
            .with_architecture(0x18)
            .with_implementation(0);
        assert_eq!(built.raw(), 0x1800_0000);
        assert_eq!(PmcBoot42::ADDRESS, 0xa00);
    }

    #[test]
    fn boot0_architecture_joins_both_fields() {
        let reg = PmcBoot0::default()
            .with_architecture_1(true)
            .with_architecture_0(0x0b);
        assert_eq!(reg.architecture(), 0x2b);
    }

    #[test]
    fn debug_names_fields() {
        let text = format!("{:?}", PmcBoot42::from_raw(0x1800_0000));
        assert!(text.contains("architecture: 0x18"), "{text}");
        assert!(text.contains("raw: 0x18000000"), "{text}");
    }
}
