//! Chip names as users type them, and the firmware directory each one boots from.

use nvbare_core::chip::Chip;

use crate::error::FetchError;

/// A firmware directory of the pinned set: `nvidia/<name>/gsp/` in linux-firmware.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FirmwareChip {
    Tu102,
    Ga100,
    Ga102,
    Ad102,
    Gh100,
    Gb100,
    Gb202,
}

impl FirmwareChip {
    /// Every firmware directory of the pinned set, in family order.
    pub const ALL: [FirmwareChip; 7] = [
        FirmwareChip::Tu102,
        FirmwareChip::Ga100,
        FirmwareChip::Ga102,
        FirmwareChip::Ad102,
        FirmwareChip::Gh100,
        FirmwareChip::Gb100,
        FirmwareChip::Gb202,
    ];

    /// The directory name under `nvidia/`, e.g. `gh100`.
    pub fn dir_name(self) -> &'static str {
        match self {
            FirmwareChip::Tu102 => "tu102",
            FirmwareChip::Ga100 => "ga100",
            FirmwareChip::Ga102 => "ga102",
            FirmwareChip::Ad102 => "ad102",
            FirmwareChip::Gh100 => "gh100",
            FirmwareChip::Gb100 => "gb100",
            FirmwareChip::Gb202 => "gb202",
        }
    }

    /// The firmware directory named `dir` (`"gh100"`), if it is one of the pinned set.
    pub fn from_dir_name(dir: &str) -> Option<FirmwareChip> {
        FirmwareChip::ALL.into_iter().find(|c| c.dir_name() == dir)
    }

    /// The firmware directory `chip` boots from, as core's chip table names it
    /// ([`Chip::firmware_dir`]); `None` only if core names a directory outside the pinned set.
    pub fn of(chip: Chip) -> Option<FirmwareChip> {
        FirmwareChip::from_dir_name(chip.firmware_dir())
    }

    /// The pinned files this chip's boot needs.
    pub fn pinned_files(self) -> impl Iterator<Item = &'static crate::PinnedFile> {
        crate::pinned::files_in_dir(self.dir_name())
    }
}

impl std::fmt::Display for FirmwareChip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.dir_name())
    }
}

/// Product names accepted besides chip names (those come from core's [`Chip`] table).
const PRODUCT_ALIASES: &[(&str, FirmwareChip)] = &[
    ("a100", FirmwareChip::Ga100),
    ("h100", FirmwareChip::Gh100),
    ("h200", FirmwareChip::Gh100),
    ("h800", FirmwareChip::Gh100),
    ("gh200", FirmwareChip::Gh100),
    ("b100", FirmwareChip::Gb100),
    ("b200", FirmwareChip::Gb100),
];

/// Parses `--chip`: a firmware directory name, any chip core's [`Chip`] table knows
/// (`ad104` → ad102, `tu116` → tu102), a product name (`h200` → gh100), or `all`. Case does
/// not matter.
pub fn parse_chip_selection(name: &str) -> Result<Vec<FirmwareChip>, FetchError> {
    let lower = name.trim().to_ascii_lowercase();
    if lower == "all" {
        return Ok(FirmwareChip::ALL.to_vec());
    }
    FirmwareChip::from_dir_name(&lower)
        .or_else(|| {
            Chip::ALL
                .iter()
                .find(|c| c.name().eq_ignore_ascii_case(&lower))
                .and_then(|c| FirmwareChip::of(*c))
        })
        .or_else(|| {
            PRODUCT_ALIASES
                .iter()
                .find(|(a, _)| *a == lower)
                .map(|(_, c)| *c)
        })
        .map(|c| vec![c])
        .ok_or_else(|| FetchError::UnknownChip {
            given: name.to_owned(),
        })
}

/// The names `parse_chip_selection` accepts, for the unknown-chip message.
pub fn known_chip_names() -> String {
    let dirs: Vec<&str> = FirmwareChip::ALL.iter().map(|c| c.dir_name()).collect();
    let aliases: Vec<String> = Chip::ALL
        .iter()
        .map(|c| (c.name().to_ascii_lowercase(), c.firmware_dir()))
        .filter(|(name, dir)| name != dir)
        .map(|(name, dir)| format!("{name}→{dir}"))
        .chain(
            PRODUCT_ALIASES
                .iter()
                .map(|(a, c)| format!("{a}→{}", c.dir_name())),
        )
        .collect();
    format!("{} or all (also {})", dirs.join(" "), aliases.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_members_map_to_their_firmware_directory() {
        assert_eq!(
            parse_chip_selection("ad104").unwrap(),
            [FirmwareChip::Ad102]
        );
        assert_eq!(parse_chip_selection("H200").unwrap(), [FirmwareChip::Gh100]);
        assert_eq!(
            parse_chip_selection("ga106").unwrap(),
            [FirmwareChip::Ga102]
        );
        assert_eq!(
            parse_chip_selection("gb100").unwrap(),
            [FirmwareChip::Gb100]
        );
        assert_eq!(parse_chip_selection("all").unwrap(), FirmwareChip::ALL);
    }

    #[test]
    fn every_core_chip_is_accepted_and_maps_to_its_firmware_dir() {
        for chip in Chip::ALL {
            for given in [chip.name().to_owned(), chip.name().to_ascii_lowercase()] {
                let selected = parse_chip_selection(&given).unwrap();
                assert_eq!(selected.len(), 1, "{given}");
                assert_eq!(selected[0].dir_name(), chip.firmware_dir(), "{given}");
            }
        }
        assert_eq!(
            parse_chip_selection("tu116").unwrap(),
            [FirmwareChip::Tu102]
        );
        assert_eq!(
            parse_chip_selection("gb204").unwrap(),
            [FirmwareChip::Gb202]
        );
    }

    #[test]
    fn unknown_chip_lists_known_ones() {
        let err = parse_chip_selection("gk104").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("gk104"), "{msg}");
        for c in FirmwareChip::ALL {
            assert!(msg.contains(c.dir_name()), "{msg}");
        }
    }

    #[test]
    fn every_chip_has_pinned_files() {
        for c in FirmwareChip::ALL {
            assert!(c.pinned_files().count() >= 3, "{c}");
            assert!(c.pinned_files().any(|f| f.file_name() == "gsp-570.144.bin"));
        }
    }
}
