//! Chip names as users type them, and the firmware directory each one boots from.

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

/// Chip and product names accepted besides the directory names themselves.
const ALIASES: &[(&str, FirmwareChip)] = &[
    ("tu104", FirmwareChip::Tu102),
    ("tu106", FirmwareChip::Tu102),
    ("ga103", FirmwareChip::Ga102),
    ("ga104", FirmwareChip::Ga102),
    ("ga106", FirmwareChip::Ga102),
    ("ga107", FirmwareChip::Ga102),
    ("a100", FirmwareChip::Ga100),
    ("ad103", FirmwareChip::Ad102),
    ("ad104", FirmwareChip::Ad102),
    ("ad106", FirmwareChip::Ad102),
    ("ad107", FirmwareChip::Ad102),
    ("h100", FirmwareChip::Gh100),
    ("h200", FirmwareChip::Gh100),
    ("h800", FirmwareChip::Gh100),
    ("gh200", FirmwareChip::Gh100),
    ("gb102", FirmwareChip::Gb100),
    ("b100", FirmwareChip::Gb100),
    ("b200", FirmwareChip::Gb100),
    ("gb203", FirmwareChip::Gb202),
    ("gb205", FirmwareChip::Gb202),
    ("gb206", FirmwareChip::Gb202),
    ("gb207", FirmwareChip::Gb202),
];

/// Parses `--chip`: a firmware directory name, a chip or product of one of those families
/// (`ad104` → ad102, `h200` → gh100), or `all`. Case does not matter.
pub fn parse_chip_selection(name: &str) -> Result<Vec<FirmwareChip>, FetchError> {
    let lower = name.trim().to_ascii_lowercase();
    if lower == "all" {
        return Ok(FirmwareChip::ALL.to_vec());
    }
    FirmwareChip::ALL
        .iter()
        .copied()
        .find(|c| c.dir_name() == lower)
        .or_else(|| ALIASES.iter().find(|(a, _)| *a == lower).map(|(_, c)| *c))
        .map(|c| vec![c])
        .ok_or_else(|| FetchError::UnknownChip {
            given: name.to_owned(),
        })
}

/// The names `parse_chip_selection` accepts, for the unknown-chip message.
pub fn known_chip_names() -> String {
    let dirs: Vec<&str> = FirmwareChip::ALL.iter().map(|c| c.dir_name()).collect();
    let aliases: Vec<String> = ALIASES
        .iter()
        .map(|(a, c)| format!("{a}→{}", c.dir_name()))
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
