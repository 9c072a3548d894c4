//! Chip identification: which GPU sits behind BAR0, and what that decides.
//!
//! A chip is named by `NV_PMC_BOOT_42`: `ARCHITECTURE` (bits 29:24) and `IMPLEMENTATION`
//! (bits 23:20), together `CHIP_ID` (bits 29:20). The architecture values mirror
//! `NV_PMC_BOOT_42_ARCHITECTURE_*` in hwref `nv_ref.h`; the implementation values mirror
//! `NV2080_CTRL_MC_ARCH_INFO_IMPLEMENTATION_*` in `ctrl2080mc.h` (both checked by
//! `tests/regs_hwref.rs`).

use core::fmt;

use crate::regs::PmcBoot42;

/// A GPU architecture: the unit at which register layouts and boot paths change.
///
/// Blackwell is two architectures to the hardware (`NV_PMC_BOOT_42_ARCHITECTURE_GB100` and
/// `_GB200`), with different register maps, so it is two variants here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arch {
    /// `NV_PMC_BOOT_42_ARCHITECTURE_TU100` (0x16).
    Turing,
    /// `NV_PMC_BOOT_42_ARCHITECTURE_GA100` (0x17).
    Ampere,
    /// `NV_PMC_BOOT_42_ARCHITECTURE_GH100` (0x18).
    Hopper,
    /// `NV_PMC_BOOT_42_ARCHITECTURE_AD100` (0x19).
    Ada,
    /// `NV_PMC_BOOT_42_ARCHITECTURE_GB100` (0x1A): data-centre Blackwell.
    BlackwellGb10x,
    /// `NV_PMC_BOOT_42_ARCHITECTURE_GB200` (0x1B): client Blackwell.
    BlackwellGb20x,
}

impl Arch {
    /// Every architecture this crate knows, in `BOOT_42` order.
    pub const ALL: [Arch; 6] = [
        Arch::Turing,
        Arch::Ampere,
        Arch::Hopper,
        Arch::Ada,
        Arch::BlackwellGb10x,
        Arch::BlackwellGb20x,
    ];

    /// The `NV_PMC_BOOT_42_ARCHITECTURE` value of this architecture.
    pub const fn boot42_architecture(self) -> u8 {
        match self {
            Arch::Turing => 0x16,
            Arch::Ampere => 0x17,
            Arch::Hopper => 0x18,
            Arch::Ada => 0x19,
            Arch::BlackwellGb10x => 0x1a,
            Arch::BlackwellGb20x => 0x1b,
        }
    }

    /// The architecture with `NV_PMC_BOOT_42_ARCHITECTURE` value `value`, if known.
    pub fn from_boot42_architecture(value: u8) -> Option<Arch> {
        Arch::ALL
            .into_iter()
            .find(|arch| arch.boot42_architecture() == value)
    }

    /// The architecture of a GPU whose SMs are `sm` as nvcc numbers them (75 Turing, 80-87
    /// Ampere, 89 Ada, 90 Hopper, 100-119 data-centre Blackwell, 120-129 client Blackwell): what
    /// a backend that never reads `BOOT_42` (the kernel-driver path) knows of the chip.
    pub const fn from_sm_version(sm: u32) -> Option<Arch> {
        match sm {
            75 => Some(Arch::Turing),
            80..=87 => Some(Arch::Ampere),
            89 => Some(Arch::Ada),
            90 => Some(Arch::Hopper),
            100..=119 => Some(Arch::BlackwellGb10x),
            120..=129 => Some(Arch::BlackwellGb20x),
            _ => None,
        }
    }

    /// The hwref name suffix of this architecture (`NV_PMC_BOOT_42_ARCHITECTURE_<suffix>`).
    pub const fn hwref_name(self) -> &'static str {
        match self {
            Arch::Turing => "TU100",
            Arch::Ampere => "GA100",
            Arch::Hopper => "GH100",
            Arch::Ada => "AD100",
            Arch::BlackwellGb10x => "GB100",
            Arch::BlackwellGb20x => "GB200",
        }
    }

    /// The GPU page-table format of this architecture.
    pub const fn mmu_format(self) -> MmuFormat {
        match self {
            Arch::Turing | Arch::Ampere | Arch::Ada => MmuFormat::Ver2,
            Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x => MmuFormat::Ver3,
        }
    }

    /// How GSP-RM is started on this architecture.
    pub const fn boot_path(self) -> BootPath {
        match self {
            Arch::Turing | Arch::Ampere | Arch::Ada => BootPath::Sec2Booter,
            Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x => BootPath::FspChainOfTrust,
        }
    }
}

/// GPU page-table format (hwref `dev_mmu.h` of the architecture).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MmuFormat {
    /// Turing to Ada: 5 levels, 49-bit virtual addresses.
    Ver2,
    /// Hopper and Blackwell: 6 levels, 57-bit virtual addresses.
    Ver3,
}

/// The GSP-RM firmware version nvbare boots ("570.144"): defined once, with the firmware
/// parsers in `nvbare-gsp`; the chip table's [`Chip::firmware_dir`] names the family of files
/// (`nvidia/<dir>/gsp/*-570.144.bin`).
pub use nvbare_gsp::firmware::FIRMWARE_VERSION;

/// How the CPU gets GSP-RM running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BootPath {
    /// FWSEC (from the VBIOS) carves out WPR2, then `booter_load` on SEC2 starts GSP-RM.
    Sec2Booter,
    /// The FSP verifies the GSP FMC (chain of trust), which then starts GSP-RM.
    FspChainOfTrust,
}

macro_rules! chips {
    ($( $(#[$doc:meta])* $chip:ident = $arch:ident, $implementation:literal, $firmware:literal; )*) => {
        /// A GPU chip this crate can identify.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Chip {
            $( $(#[$doc])* $chip, )*
        }

        impl Chip {
            /// Every chip this crate identifies.
            pub const ALL: &'static [Chip] = &[$(Chip::$chip),*];

            /// The architecture of this chip.
            pub const fn arch(self) -> Arch {
                match self { $(Chip::$chip => Arch::$arch,)* }
            }

            /// The `NV_PMC_BOOT_42_IMPLEMENTATION` value of this chip
            /// (`NV2080_CTRL_MC_ARCH_INFO_IMPLEMENTATION_<chip>`).
            pub const fn boot42_implementation(self) -> u8 {
                match self { $(Chip::$chip => $implementation,)* }
            }

            /// The chip's name as NVIDIA writes it, upper case (`"GH100"`).
            pub const fn name(self) -> &'static str {
                match self { $(Chip::$chip => stringify!($chip),)* }
            }

            /// The directory under `nvidia/` in linux-firmware that holds this chip's GSP
            /// firmware (`nvidia/<dir>/gsp/`): chips of one family share the first chip's.
            pub const fn firmware_dir(self) -> &'static str {
                match self { $(Chip::$chip => $firmware,)* }
            }
        }
    };
}

chips! {
    /// Turing TU102.
    TU102 = Turing, 0x2, "tu102";
    /// Turing TU104.
    TU104 = Turing, 0x4, "tu102";
    /// Turing TU106.
    TU106 = Turing, 0x6, "tu102";
    /// Turing TU116.
    TU116 = Turing, 0x8, "tu102";
    /// Turing TU117.
    TU117 = Turing, 0x7, "tu102";
    /// Ampere GA100 (boots the Turing way, has its own firmware).
    GA100 = Ampere, 0x0, "ga100";
    /// Ampere GA102.
    GA102 = Ampere, 0x2, "ga102";
    /// Ampere GA103.
    GA103 = Ampere, 0x3, "ga102";
    /// Ampere GA104.
    GA104 = Ampere, 0x4, "ga102";
    /// Ampere GA106.
    GA106 = Ampere, 0x6, "ga102";
    /// Ampere GA107.
    GA107 = Ampere, 0x7, "ga102";
    /// Hopper GH100 (H100, H200).
    GH100 = Hopper, 0x0, "gh100";
    /// Ada AD102.
    AD102 = Ada, 0x2, "ad102";
    /// Ada AD103.
    AD103 = Ada, 0x3, "ad102";
    /// Ada AD104.
    AD104 = Ada, 0x4, "ad102";
    /// Ada AD106.
    AD106 = Ada, 0x6, "ad102";
    /// Ada AD107.
    AD107 = Ada, 0x7, "ad102";
    /// Blackwell GB100.
    GB100 = BlackwellGb10x, 0x0, "gb100";
    /// Blackwell GB102.
    GB102 = BlackwellGb10x, 0x2, "gb100";
    /// Blackwell GB202.
    GB202 = BlackwellGb20x, 0x2, "gb202";
    /// Blackwell GB203.
    GB203 = BlackwellGb20x, 0x3, "gb202";
    /// Blackwell GB204.
    GB204 = BlackwellGb20x, 0x4, "gb202";
    /// Blackwell GB205.
    GB205 = BlackwellGb20x, 0x5, "gb202";
    /// Blackwell GB206.
    GB206 = BlackwellGb20x, 0x6, "gb202";
    /// Blackwell GB207.
    GB207 = BlackwellGb20x, 0x7, "gb202";
}

impl Chip {
    /// `NV_PMC_BOOT_42_CHIP_ID` (bits 29:20): architecture << 4 | implementation.
    pub const fn chip_id(self) -> u16 {
        ((self.arch().boot42_architecture() as u16) << 4) | self.boot42_implementation() as u16
    }

    /// The chip with `NV_PMC_BOOT_42_CHIP_ID` value `chip_id`, if known.
    pub fn from_chip_id(chip_id: u16) -> Option<Chip> {
        Chip::ALL
            .iter()
            .copied()
            .find(|chip| chip.chip_id() == chip_id)
    }

    /// Identifies the chip from a raw `NV_PMC_BOOT_42` value.
    pub fn identify(boot42: PmcBoot42) -> Result<Chip, UnknownChip> {
        Chip::from_chip_id(boot42.chip_id()).ok_or(UnknownChip {
            boot42: boot42.raw(),
        })
    }

    /// The GPU page-table format of this chip.
    pub const fn mmu_format(self) -> MmuFormat {
        self.arch().mmu_format()
    }

    /// The chip behind PCI device id `device_id` (vendor 0x10de): a board of
    /// [`KNOWN_BOARDS`], else the id's block in [`DEVICE_ID_BLOCKS`]. The boot uses it to
    /// know which readiness waits come before BAR0 may be read; `NV_PMC_BOOT_42` then has the
    /// last word.
    pub fn from_pci_device_id(device_id: u16) -> Option<Chip> {
        KNOWN_BOARDS
            .iter()
            .find(|board| board.device_id == device_id)
            .map(|board| board.chip)
            .or_else(|| {
                DEVICE_ID_BLOCKS
                    .iter()
                    .find(|(first, last, _)| (*first..=*last).contains(&device_id))
                    .map(|&(_, _, chip)| chip)
            })
    }
}

/// PCI device-id blocks, `(first, last, chip)`, inclusive. NVIDIA allocates device ids per
/// chip in blocks of 0x80 (0x40 for GA102): every id in the "Compatible GPUs" table of OpenRM
/// 570.144's README falls in the block of its chip (checked by `nvbare-host`'s `pci::ids`
/// tests against that table, through the product names).
pub const DEVICE_ID_BLOCKS: &[(u16, u16, Chip)] = &[
    (0x1e00, 0x1e7f, Chip::TU102),
    (0x1e80, 0x1eff, Chip::TU104),
    (0x1f00, 0x1f7f, Chip::TU106),
    (0x1f80, 0x1fff, Chip::TU117),
    (0x2080, 0x20ff, Chip::GA100),
    (0x2180, 0x21ff, Chip::TU116),
    (0x2200, 0x223f, Chip::GA102),
    (0x2300, 0x237f, Chip::GH100),
    (0x2400, 0x247f, Chip::GA103),
    (0x2480, 0x24ff, Chip::GA104),
    (0x2500, 0x257f, Chip::GA106),
    (0x2580, 0x25ff, Chip::GA107),
    (0x2680, 0x26ff, Chip::AD102),
    (0x2700, 0x277f, Chip::AD103),
    (0x2780, 0x27ff, Chip::AD104),
    (0x2800, 0x287f, Chip::AD106),
    (0x2880, 0x28ff, Chip::AD107),
    (0x2900, 0x297f, Chip::GB100),
    (0x2b80, 0x2bff, Chip::GB202),
    (0x2c00, 0x2c7f, Chip::GB203),
    (0x2d00, 0x2d7f, Chip::GB206),
    (0x2d80, 0x2dff, Chip::GB207),
    (0x2f00, 0x2f7f, Chip::GB205),
];

impl fmt::Display for Chip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A board whose PCI device id names its chip before BAR0 is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownBoard {
    /// PCI device id (vendor is always 0x10de).
    pub device_id: u16,
    /// Marketing name.
    pub name: &'static str,
    /// The chip on the board.
    pub chip: Chip,
}

/// Boards named in the project notes (the H200 id 0x2335 is measured on the device).
pub const KNOWN_BOARDS: &[KnownBoard] = &[
    KnownBoard {
        device_id: 0x2321,
        name: "H100 NVL",
        chip: Chip::GH100,
    },
    KnownBoard {
        device_id: 0x2330,
        name: "H100 SXM5",
        chip: Chip::GH100,
    },
    KnownBoard {
        device_id: 0x2331,
        name: "H100 PCIe",
        chip: Chip::GH100,
    },
    KnownBoard {
        device_id: 0x2335,
        name: "H200 SXM",
        chip: Chip::GH100,
    },
    KnownBoard {
        device_id: 0x233b,
        name: "H200 NVL",
        chip: Chip::GH100,
    },
];

/// `NV_PMC_BOOT_42` named a chip this crate does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownChip {
    /// The raw `NV_PMC_BOOT_42` value read.
    pub boot42: u32,
}

impl UnknownChip {
    /// The `NV_PMC_BOOT_42` value, decoded.
    pub fn register(&self) -> PmcBoot42 {
        PmcBoot42::from_raw(self.boot42)
    }
}

impl fmt::Display for UnknownChip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reg = self.register();
        write!(
            f,
            "unknown GPU: NV_PMC_BOOT_42 = {:#010x} (architecture {:#x}, implementation {:#x}, \
             chip id {:#x}); supported chips:",
            self.boot42,
            reg.architecture(),
            reg.implementation(),
            reg.chip_id(),
        )?;
        for chip in Chip::ALL {
            write!(f, " {chip}")?;
        }
        Ok(())
    }
}

impl core::error::Error for UnknownChip {}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn sm_versions_name_their_architecture() {
        assert_eq!(Arch::from_sm_version(90), Some(Arch::Hopper));
        assert_eq!(Arch::from_sm_version(86), Some(Arch::Ampere));
        assert_eq!(Arch::from_sm_version(89), Some(Arch::Ada));
        assert_eq!(Arch::from_sm_version(100), Some(Arch::BlackwellGb10x));
        assert_eq!(Arch::from_sm_version(120), Some(Arch::BlackwellGb20x));
        assert_eq!(Arch::from_sm_version(70), None);
    }

    #[test]
    fn chip_ids_are_unique_and_round_trip() {
        for chip in Chip::ALL {
            assert_eq!(Chip::from_chip_id(chip.chip_id()), Some(*chip));
        }
    }

    #[test]
    fn identifies_gh100_from_boot42() {
        // architecture 0x18, implementation 0, major revision 0xa, minor 1.
        let boot42 = PmcBoot42::from_raw(0x180a_1000);
        assert_eq!(Chip::identify(boot42), Ok(Chip::GH100));
        assert_eq!(Chip::GH100.chip_id(), 0x180);
        assert_eq!(Chip::GH100.mmu_format(), MmuFormat::Ver3);
        assert_eq!(Chip::AD104.firmware_dir(), "ad102");
        assert_eq!(Chip::GA107.firmware_dir(), "ga102");
        assert_eq!(Chip::AD104.mmu_format(), MmuFormat::Ver2);
        assert_eq!(Chip::GB203.arch().boot_path(), BootPath::FspChainOfTrust);
    }

    #[test]
    fn unknown_chip_names_boot42_and_supported_chips() {
        let err = Chip::identify(PmcBoot42::from_raw(0x1f00_0000)).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("0x1f000000"), "{text}");
        assert!(text.contains("architecture 0x1f"), "{text}");
        assert!(text.contains("GH100") && text.contains("GB207") && text.contains("TU102"));
        // Arch known, implementation not.
        assert!(Chip::identify(PmcBoot42::from_raw(0x18f0_0000)).is_err());
    }

    #[test]
    fn pci_device_ids_of_hopper_boards() {
        for id in [0x2330, 0x2331, 0x2321, 0x2335, 0x233b] {
            assert_eq!(Chip::from_pci_device_id(id), Some(Chip::GH100));
        }
        assert_eq!(Chip::from_pci_device_id(0x1234), None);
        assert_eq!(Chip::from_pci_device_id(0x2b85), Some(Chip::GB202));
        assert_eq!(Chip::from_pci_device_id(0x2901), Some(Chip::GB100));
    }
}
