//! Helpers shared by the `submit_*` integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// A path inside the project's `shared/` folder (beside the repository, or `$NVBARE_SHARED`).
pub fn shared_path(rel: &str) -> PathBuf {
    let base = std::env::var_os("NVBARE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let p = base.join(rel);
    assert!(
        p.exists(),
        "{} is missing: the tests read NVIDIA's headers from shared/; set NVBARE_SHARED",
        p.display()
    );
    p
}
