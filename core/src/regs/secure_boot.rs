//! Registers the booter path (Turing to Ada) reads around its heavy-secure ucode: the PROM
//! window the VBIOS is read through (hwref `dev_ext_devices.h`), the ucode fuse versions that
//! choose a signature (hwref `dev_fuse.h`), the VBIOS scratch FWSEC reports its errors in
//! (hwref `dev_bus.h`, `kernel_gsp_frts_tu102.c`) and the GFW secure scratch's privilege mask
//! FWSEC-SB checks (hwref `dev_gc6_island.h`).

use super::macros::register;
use crate::chip::Arch;

/// `NV_PROM_DATA(i)` = 0x300000 + i: BAR0's byte window onto the VBIOS ROM (Turing to Ada;
/// read in 32-bit words, as nova-core's `vbios.rs` and tinygrad read it).
pub const PROM_DATA: u32 = 0x0030_0000;
/// How much of the PROM window a VBIOS may occupy: 1 MiB (nova-core's `BIOS_MAX_SCAN_LEN`).
pub const PROM_SIZE: u32 = 0x0010_0000;

register! {
    /// `NV_PBUS_SW_SCRATCH(i)` (= `NV_PBUS_VBIOS_SCRATCH(i)`): scratch words FWSEC reports
    /// its command's result in (index 0x0E: FRTS, 0x15: SB).
    pub struct PbusSwScratch @ [0x0000_1400; stride 4; count 64]
        hwref("NV_PBUS_SW_SCRATCH"; absent [GA102],
              only Arch::Turing | Arch::Ampere | Arch::Ada)
    {
        /// The word.
        field / with_field: u32 = 31:0, hwref("FIELD"; absent [TU102]);
    }

    /// `NV_FUSE_OPT_FPF_GSP_UCODE1_VERSION`: the fused version of GSP ucode 1; ucode `n` is
    /// at + 4 (n - 1) (`kgspReadUcodeFuseVersion_GA100`). Turing has no such fuse (its HAL
    /// returns 0).
    pub struct FuseGspUcode1Version @ [0x0082_41c0]
        hwref("NV_FUSE_OPT_FPF_GSP_UCODE1_VERSION"; absent [GA102, AD102],
              only Arch::Ampere | Arch::Ada)
    {
        /// The version (a bit index into the image's signature-version mask).
        data / with_data: u16 = 15:0, hwref("DATA");
    }

    /// `NV_FUSE_OPT_FPF_SEC2_UCODE1_VERSION`: the same for SEC2 ucodes
    /// (`ksec2ReadUcodeFuseVersion_GA100`).
    pub struct FuseSec2Ucode1Version @ [0x0082_4140]
        hwref("NV_FUSE_OPT_FPF_SEC2_UCODE1_VERSION"; absent [GA102, AD102],
              only Arch::Ampere | Arch::Ada)
    {
        /// The version.
        data / with_data: u16 = 15:0, hwref("DATA");
    }

    /// `NV_PGC6_AON_SECURE_SCRATCH_GROUP_05_PRIV_LEVEL_MASK`: who may read the GFW boot
    /// scratch; FWSEC-SB lowers it (`kgspExecuteFwsec_TU102` checks level 0 may read).
    pub struct Gc6SecureScratch05PrivLevelMask @ [0x0011_8128]
        hwref("NV_PGC6_AON_SECURE_SCRATCH_GROUP_05_PRIV_LEVEL_MASK"; absent [GA100, AD102],
              only Arch::Turing | Arch::Ampere | Arch::Ada)
    {
        /// Level 0 (the CPU) may read.
        read_protection_level0 / with_read_protection_level0: bool = 0:0,
            hwref("READ_PROTECTION_LEVEL0");
    }

    /// `NV_PGC6_BSI_SECURE_SCRATCH_14`: boot-stage handoffs; SEC2 sets stage 3 when it has
    /// reloaded GSP-RM (`_kgspIsReloadCompleted`, the sequencer's `CORE_RESUME`).
    pub struct BsiSecureScratch14 @ [0x0011_80f8]
        hwref("NV_PGC6_BSI_SECURE_SCRATCH_14"; absent [GA100, AD102],
              only Arch::Turing | Arch::Ampere | Arch::Ada)
    {
        /// `_BOOT_STAGE_3_HANDOFF`: 1 = done.
        boot_stage_3_handoff / with_boot_stage_3_handoff: bool = 26:26,
            hwref("BOOT_STAGE_3_HANDOFF");
    }
}

/// `NV_VBIOS_FWSECLIC_SCRATCH_INDEX_0E`: the scratch word holding FWSEC-FRTS's error code.
pub const FRTS_SCRATCH_INDEX: usize = 0x0e;
/// `NV_VBIOS_FWSECLIC_SCRATCH_INDEX_15`: the scratch word holding FWSEC-SB's error code.
pub const SB_SCRATCH_INDEX: usize = 0x15;

impl PbusSwScratch {
    /// `NV_VBIOS_FWSECLIC_FRTS_ERR_CODE` (31:16; 0 = none), in scratch word 0x0E.
    pub fn frts_error(self) -> u16 {
        // CAST: the upper half of a u32 fits a u16.
        (self.raw() >> 16) as u16
    }

    /// `NV_VBIOS_FWSECLIC_SB_ERR_CODE` (15:0; 0 = none), in scratch word 0x15.
    pub fn sb_error(self) -> u16 {
        // CAST: the lower half, masked.
        (self.raw() & 0xffff) as u16
    }
}

/// Which falcon's fuses a ucode's version is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuseEngine {
    /// The GSP falcon (FWSEC).
    Gsp,
    /// SEC2 (booter load/unload).
    Sec2,
}

/// The BAR0 address of `engine`'s fuse for ucode `ucode_id` (1-based), or `None` where the
/// architecture has no such fuse (Turing, whose HAL reads version 0) or the id is 0 or above
/// the 16 fuses (`kgspReadUcodeFuseVersion_GA100` reads index `ucodeId - 1`).
pub fn ucode_fuse_address(arch: Arch, engine: FuseEngine, ucode_id: u32) -> Option<u32> {
    if !matches!(arch, Arch::Ampere | Arch::Ada) || !(1..=16).contains(&ucode_id) {
        return None;
    }
    let base = match engine {
        FuseEngine::Gsp => FuseGspUcode1Version::ADDRESS,
        FuseEngine::Sec2 => FuseSec2Ucode1Version::ADDRESS,
    };
    Some(base + 4 * (ucode_id - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuse_addresses_follow_openrm() {
        assert_eq!(
            ucode_fuse_address(Arch::Ampere, FuseEngine::Gsp, 1),
            Some(0x8241c0)
        );
        assert_eq!(
            ucode_fuse_address(Arch::Ada, FuseEngine::Sec2, 3),
            Some(0x824148)
        );
        assert_eq!(ucode_fuse_address(Arch::Turing, FuseEngine::Gsp, 1), None);
        assert_eq!(ucode_fuse_address(Arch::Ampere, FuseEngine::Gsp, 0), None);
        assert_eq!(ucode_fuse_address(Arch::Hopper, FuseEngine::Gsp, 1), None);
    }

    #[test]
    fn fwsec_error_codes_split_the_scratch_word() {
        let w = PbusSwScratch::from_raw(0x1234_5678);
        assert_eq!((w.frts_error(), w.sb_error()), (0x1234, 0x5678));
        assert_eq!(
            PbusSwScratch::address(FRTS_SCRATCH_INDEX).ok(),
            Some(0x1438)
        );
    }
}
