//! PCI device id → chip, for naming a GPU before BAR0 is read (`nvbare list`).
//!
//! The blocks are `nvbare_core::chip::DEVICE_ID_BLOCKS` (the boot needs them too, to know
//! which readiness waits come before BAR0 may be read); the tests here check them against
//! OpenRM 570.144's README. The id only names the chip for display; opening a GPU identifies
//! it from `NV_PMC_BOOT_42` (`nvbare_core::chip`).

use nvbare_core::chip::{Chip, KNOWN_BOARDS};

#[cfg(test)]
use nvbare_core::chip::DEVICE_ID_BLOCKS as ID_BLOCKS;

/// The chip behind PCI device id `device_id` (vendor 0x10de), if the id is in a known block.
pub fn chip_of_device_id(device_id: u16) -> Option<Chip> {
    Chip::from_pci_device_id(device_id)
}

/// The board's marketing name, for the boards `nvbare_core::chip` names.
pub fn board_name(device_id: u16) -> Option<&'static str> {
    KNOWN_BOARDS
        .iter()
        .find(|b| b.device_id == device_id)
        .map(|b| b.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvbare_core::chip::Arch;
    use std::path::Path;

    #[test]
    fn blocks_are_disjoint_and_ordered() {
        for w in ID_BLOCKS.windows(2) {
            assert!(w[0].0 <= w[0].1 && w[0].1 < w[1].0, "{w:?}");
        }
    }

    #[test]
    fn hopper_boards_of_the_notes() {
        for id in [0x2330, 0x2331, 0x2321, 0x2335, 0x233b, 0x2342] {
            assert_eq!(chip_of_device_id(id), Some(Chip::GH100), "{id:#x}");
        }
        assert_eq!(board_name(0x2335), Some("H200 SXM"));
        assert_eq!(chip_of_device_id(0x2b85), Some(Chip::GB202));
        assert_eq!(chip_of_device_id(0x2684), Some(Chip::AD102));
        assert_eq!(chip_of_device_id(0x1234), None);
        assert_eq!(chip_of_device_id(0x2a00), None);
    }

    /// The architecture a product name implies (NVIDIA's naming, independent of the ids).
    fn arch_of_name(name: &str) -> Option<Arch> {
        // Ordered: earlier patterns win ("Quadro RTX 5000" is Turing, "RTX 5000 Ada" Ada).
        const NAMES: &[(&[&str], Arch)] = &[
            (&["H100", "H200", "H800", "H20", "GH200"], Arch::Hopper),
            (&["GB200", "B200"], Arch::BlackwellGb10x),
            (&["GeForce RTX 50", "Blackwell"], Arch::BlackwellGb20x),
            (
                &["A100", "A800", "A30", "AX800", "PG506", "PG509"],
                Arch::Ampere,
            ),
            (
                &[
                    "Ada",
                    "GeForce RTX 40",
                    "RTX 3050 A ",
                    "L40",
                    "L20",
                    "L4",
                    "L2",
                ],
                Arch::Ada,
            ),
            (
                &["GeForce RTX 30", "RTX A", "A10", "A16", "A40", "RTX 2050"],
                Arch::Ampere,
            ),
            (
                &["MX570", "CMP 70HX", "CMP 90HX", "NVIDIA A2"],
                Arch::Ampere,
            ),
            (
                &["GeForce RTX 20", "GTX 16", "Quadro", "TITAN RTX", "MX450"],
                Arch::Turing,
            ),
            (
                &["MX550", "CMP", "NVIDIA T", "Matrox D-Series", "DGX Display"],
                Arch::Turing,
            ),
        ];
        NAMES
            .iter()
            .find(|(pats, _)| pats.iter().any(|p| name.contains(p)))
            .map(|&(_, arch)| arch)
    }

    /// Every device id of OpenRM 570.144's "Compatible GPUs" table maps to a chip of the
    /// architecture its product name implies.
    #[test]
    fn every_openrm_readme_id_maps_to_its_architecture() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/reference/open-gpu-kernel-modules-570.144/README.md");
        let Ok(text) = std::fs::read_to_string(&path) else {
            assert!(
                std::env::var_os("NVBARE_REQUIRE_REFERENCE").is_none(),
                "{} missing",
                path.display()
            );
            eprintln!("skipped: {} not found", path.display());
            return;
        };
        let mut checked = 0;
        let mut wrong = Vec::new();
        for line in text.lines() {
            let cols: Vec<&str> = line.split('|').map(str::trim).collect();
            if cols.len() < 3 || cols[1].is_empty() || cols[1].starts_with("Product") {
                continue;
            }
            let Some(id) = cols[2]
                .split_whitespace()
                .next()
                .and_then(|s| u16::from_str_radix(s, 16).ok())
            else {
                continue;
            };
            let name = cols[1];
            let chip = chip_of_device_id(id);
            if chip.map(Chip::arch) != arch_of_name(name) {
                wrong.push(format!("{id:#06x} {name} -> {chip:?}"));
            }
            checked += 1;
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
        assert!(checked > 600, "{checked} rows");
        eprintln!("pci ids: {checked} README rows checked");
    }
}
