//! PCI device id → chip, for naming a GPU before BAR0 is read (`nvbare list`).
//!
//! NVIDIA allocates device ids per chip in blocks of 0x80 (0x40 for GA102): every id in the
//! "Compatible GPUs" table of OpenRM 570.144's README falls in the block of its chip (checked
//! by the tests below against that table, through the product names). The id only names the
//! chip for display; opening a GPU identifies it from `NV_PMC_BOOT_42` (`nvbare_core::chip`).

use nvbare_core::chip::{Chip, KNOWN_BOARDS};

/// Device-id blocks, `(first, last, chip)`, inclusive.
const ID_BLOCKS: &[(u16, u16, Chip)] = &[
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

/// The chip behind PCI device id `device_id` (vendor 0x10de), if the id is in a known block.
pub fn chip_of_device_id(device_id: u16) -> Option<Chip> {
    Chip::from_pci_device_id(device_id).or_else(|| {
        ID_BLOCKS
            .iter()
            .find(|(first, last, _)| (*first..=*last).contains(&device_id))
            .map(|&(_, _, chip)| chip)
    })
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
