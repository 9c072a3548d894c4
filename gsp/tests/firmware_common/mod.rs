//! Shared by the firmware tests: where the real firmware is, and how to skip loudly.
// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

/// The firmware root: `$NVBARE_FIRMWARE_DIR`, else the cache `nvbare firmware fetch` fills.
pub fn firmware_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("NVBARE_FIRMWARE_DIR") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
    base.join("nvbare/firmware")
}

/// Reads `nvidia/<chip>/gsp/<name>` from the firmware root. `None` (after printing why,
/// uncaptured) when it is absent, unless `NVBARE_REQUIRE_FIRMWARE=1`, as in CI, where a
/// missing file fails the test.
pub fn real_file(test: &str, chip: &str, name: &str) -> Option<Vec<u8>> {
    let path = firmware_root()
        .join("nvidia")
        .join(chip)
        .join("gsp")
        .join(name);
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            if std::env::var("NVBARE_REQUIRE_FIRMWARE").as_deref() == Ok("1") {
                panic!(
                    "{test}: {} unreadable ({e}) and NVBARE_REQUIRE_FIRMWARE=1",
                    path.display()
                );
            }
            // Once per test, written to the real stderr (not the harness's capture) so a
            // skip is seen.
            static REPORTED: Mutex<Vec<String>> = Mutex::new(Vec::new());
            let mut reported = REPORTED.lock().unwrap_or_else(|e| e.into_inner());
            if reported.iter().any(|t| t == test) {
                return None;
            }
            reported.push(test.to_owned());
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: {} not present ({e}); run `nvbare firmware fetch --chip all` or set NVBARE_FIRMWARE_DIR",
                path.display()
            );
            None
        }
    }
}

/// The chips whose files the real-firmware tests parse.
pub const CHIPS: [&str; 7] = [
    "tu102", "ga100", "ga102", "ad102", "gh100", "gb100", "gb202",
];

/// tinygrad's reading of the same files (tests/fixtures/tinygrad_offsets.py).
pub fn tinygrad_fixture() -> serde_json::Value {
    serde_json::from_str(include_str!("../fixtures/tinygrad_offsets.json"))
        .expect("fixture is JSON")
}
