//! The pinned GSP-RM 570.144 firmware set: every file's path in the linux-firmware tree,
//! its size and its SHA-256, compiled into the crate so that a user's clone needs nothing else.
//!
//! This table is a copy of `shared/firmware/570.144.sha256` (read from Debian's
//! `firmware-nvidia-graphics` 20260916-1~bpo13+1, byte-identical to upstream linux-firmware);
//! a test compares the two whenever the shared list is present.

/// The firmware version every file of the set belongs to.
pub const FIRMWARE_VERSION: &str = "570.144";

/// One file of the pinned set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedFile {
    /// Path relative to the root of a linux-firmware tree, e.g. `nvidia/gh100/gsp/fmc-570.144.bin`.
    pub path: &'static str,
    /// Exact size in bytes.
    pub size: u64,
    /// SHA-256 of the file's bytes.
    pub sha256: [u8; 32],
}

impl PinnedFile {
    /// The file name without its directory, e.g. `fmc-570.144.bin`.
    pub fn file_name(&self) -> &'static str {
        self.path.rsplit('/').next().unwrap_or(self.path)
    }

    /// The pinned SHA-256 as lowercase hex.
    pub fn sha256_hex(&self) -> String {
        crate::digest::to_hex(&self.sha256)
    }
}

const fn hex_nibble(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => panic!("pinned SHA-256 must be lowercase hex"),
    }
}

/// Decodes a 64-character lowercase hex digest at compile time.
const fn sha(hex: &str) -> [u8; 32] {
    let h = hex.as_bytes();
    assert!(h.len() == 64, "pinned SHA-256 must have 64 hex digits");
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = hex_nibble(h[2 * i]) << 4 | hex_nibble(h[2 * i + 1]);
        i += 1;
    }
    out
}

const fn pin(sha256: &str, size: u64, path: &'static str) -> PinnedFile {
    PinnedFile {
        path,
        size,
        sha256: sha(sha256),
    }
}

/// Every file of the pinned set, in the order of `570.144.sha256`.
pub const PINNED_FILES: &[PinnedFile] = &[
    pin(
        "7bb181f544a942299bbf4642da6d9bb58bfed8459725094e2ace56647cd3ec8c",
        59272,
        "nvidia/tu102/gsp/booter_load-570.144.bin",
    ),
    pin(
        "5c7f1aa37d045cc20bb81584a830e8dfa4483f1cd63943de83a58c4be19a1782",
        39304,
        "nvidia/tu102/gsp/booter_unload-570.144.bin",
    ),
    pin(
        "12e987b636c2f00fa40f42fd95097515c0817b158119c584049a37faf38f8f96",
        4196,
        "nvidia/tu102/gsp/bootloader-570.144.bin",
    ),
    pin(
        "b37776a511b4a00901e4e3ac568db917086d3bf439f85bc9b3e4adc7338a0aff",
        816,
        "nvidia/tu102/gsp/gen_bootloader-570.144.bin",
    ),
    pin(
        "3052aee2872182a14d8d7c069e3a14fe4642405894b24692c4aca4101dfb1809",
        28542040,
        "nvidia/tu102/gsp/gsp-570.144.bin",
    ),
    pin(
        "46bafe32b2d1f59713fc8369b5e59e7267d7da4413ad6486aef69d50daa764cd",
        60664,
        "nvidia/ga100/gsp/booter_load-570.144.bin",
    ),
    pin(
        "33bea24690c3880a82b47b1a67cbd3cb48707d1c9c26a5db40df6e9682de4da6",
        40440,
        "nvidia/ga100/gsp/booter_unload-570.144.bin",
    ),
    pin(
        "e7670009c98791b8030953ab1d22ecdbf3e073744d928fa15f6267de4eceaad3",
        4196,
        "nvidia/ga100/gsp/bootloader-570.144.bin",
    ),
    pin(
        "b37776a511b4a00901e4e3ac568db917086d3bf439f85bc9b3e4adc7338a0aff",
        816,
        "nvidia/ga100/gsp/gen_bootloader-570.144.bin",
    ),
    pin(
        "3052aee2872182a14d8d7c069e3a14fe4642405894b24692c4aca4101dfb1809",
        28542040,
        "nvidia/ga100/gsp/gsp-570.144.bin",
    ),
    pin(
        "4497e3eff7e95c774b8a569d17b27c08c9650158d10b229d2be81cdcad9a085b",
        61304,
        "nvidia/ga102/gsp/booter_load-570.144.bin",
    ),
    pin(
        "8e63db5b78d7d3e349f20a2d11099c3d7109081393cb09ffc0a28133324ae009",
        41080,
        "nvidia/ga102/gsp/booter_unload-570.144.bin",
    ),
    pin(
        "82428f532240727e95bb3083fbaaba9b2cc7b937314323f2d546ce7245f27fad",
        24684,
        "nvidia/ga102/gsp/bootloader-570.144.bin",
    ),
    pin(
        "a8c3ebeed280323aedb51c061f321e73379cce7a9ae643a33dd03915df027f7f",
        63571696,
        "nvidia/ga102/gsp/gsp-570.144.bin",
    ),
    pin(
        "8b293e19b637c5e22c87a2428d1c71bb13e0904e8a88ac6b3c6c1f2679c6e37a",
        57720,
        "nvidia/ad102/gsp/booter_load-570.144.bin",
    ),
    pin(
        "975b85a14ded8e430d30f000c3c1afdd55c15dee04f35ff9dfd876acd7e67186",
        41592,
        "nvidia/ad102/gsp/booter_unload-570.144.bin",
    ),
    pin(
        "65ab2e6b6e0fca95365c4deac79a34582abcfeb15b6ae234138f22e7183118a8",
        36972,
        "nvidia/ad102/gsp/bootloader-570.144.bin",
    ),
    pin(
        "a8c3ebeed280323aedb51c061f321e73379cce7a9ae643a33dd03915df027f7f",
        63571696,
        "nvidia/ad102/gsp/gsp-570.144.bin",
    ),
    pin(
        "c397358e5c4258dab070966589c7b172eb00771fd15d0bb74b8e22f327c1909b",
        8312,
        "nvidia/ad102/gsp/scrubber-570.144.bin",
    ),
    pin(
        "2176e42f05729ac4dd93ed6cd1b4c6c5650b6aa79c115dfcd9f26a71c1d8d82e",
        168044,
        "nvidia/gh100/gsp/bootloader-570.144.bin",
    ),
    pin(
        "f3ce25f3897c860e4cdde183ebf09b254d94a5d8191d666c12afb33cc7121107",
        166600,
        "nvidia/gh100/gsp/fmc-570.144.bin",
    ),
    pin(
        "a8c3ebeed280323aedb51c061f321e73379cce7a9ae643a33dd03915df027f7f",
        63571696,
        "nvidia/gh100/gsp/gsp-570.144.bin",
    ),
    pin(
        "daebc2235c9756f2418c2116815a4bb94fc330506f5af60d883e4a740d397062",
        200812,
        "nvidia/gb100/gsp/bootloader-570.144.bin",
    ),
    pin(
        "bc7497c2d8116cceec2fe5638081d60b8f9c0e3dceb0b57dc93950c84909ce21",
        198028,
        "nvidia/gb100/gsp/fmc-570.144.bin",
    ),
    pin(
        "a8c3ebeed280323aedb51c061f321e73379cce7a9ae643a33dd03915df027f7f",
        63571696,
        "nvidia/gb100/gsp/gsp-570.144.bin",
    ),
    pin(
        "d40b48e431d1707dc77af3605db358ed7a32ebfc2830eb74de2eddb4d3025071",
        200812,
        "nvidia/gb202/gsp/bootloader-570.144.bin",
    ),
    pin(
        "cb59a35c1d4bd1274d7267fd10243c29f843ff41c851b9cbd59f5af2ddd7fece",
        199820,
        "nvidia/gb202/gsp/fmc-570.144.bin",
    ),
    pin(
        "a8c3ebeed280323aedb51c061f321e73379cce7a9ae643a33dd03915df027f7f",
        63571696,
        "nvidia/gb202/gsp/gsp-570.144.bin",
    ),
];

/// The pinned files of one firmware directory (`nvidia/<dir>/gsp/`).
pub fn files_in_dir(firmware_dir: &str) -> impl Iterator<Item = &'static PinnedFile> + '_ {
    PINNED_FILES.iter().filter(move |f| {
        f.path
            .strip_prefix("nvidia/")
            .and_then(|rest| rest.strip_prefix(firmware_dir))
            .is_some_and(|rest| rest.starts_with("/gsp/"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list in the project's shared folder, when this checkout sits next to it.
    const SHARED_LIST: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/firmware/570.144.sha256"
    );

    #[test]
    fn table_matches_shared_pinned_list() {
        let Ok(text) = std::fs::read_to_string(SHARED_LIST) else {
            println!("SKIPPED table_matches_shared_pinned_list: {SHARED_LIST} not present");
            return;
        };
        let listed: Vec<(String, u64, String)> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                let mut it = l.split_whitespace();
                let sha = it.next().unwrap().to_owned();
                let size = it.next().unwrap().parse().unwrap();
                let path = it.next().unwrap().to_owned();
                (sha, size, path)
            })
            .collect();
        let ours: Vec<(String, u64, String)> = PINNED_FILES
            .iter()
            .map(|f| (f.sha256_hex(), f.size, f.path.to_owned()))
            .collect();
        assert_eq!(ours, listed);
    }

    #[test]
    fn every_path_is_versioned_and_under_a_gsp_dir() {
        for f in PINNED_FILES {
            assert!(f.path.starts_with("nvidia/"), "{}", f.path);
            assert!(f.path.contains("/gsp/"), "{}", f.path);
            assert!(f.file_name().ends_with("-570.144.bin"), "{}", f.path);
        }
    }

    #[test]
    fn files_in_dir_selects_exact_directory() {
        let gh100: Vec<_> = files_in_dir("gh100").map(|f| f.file_name()).collect();
        assert_eq!(
            gh100,
            [
                "bootloader-570.144.bin",
                "fmc-570.144.bin",
                "gsp-570.144.bin"
            ]
        );
        assert_eq!(files_in_dir("ga10").count(), 0);
    }
}
