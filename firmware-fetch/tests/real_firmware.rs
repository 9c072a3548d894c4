//! `fetch` on the real 570.144 files (skipped, with the reason printed, when they are not
//! in the cache; CI sets NVBARE_REQUIRE_FIRMWARE=1 after fetching them, making absence a
//! failure).

mod support;

use nvbare_firmware_fetch::{
    Cache, FetchError, FetchOptions, FirmwareChip, Origin, PINNED_FILES, Progress, Source, fetch,
    read_verified,
};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use support::{LoopbackServer, files_under};

/// The verified set fetched earlier: `$NVBARE_FIRMWARE_DIR`, else the default cache.
fn real_root(test: &str) -> Option<PathBuf> {
    let root = match std::env::var_os("NVBARE_FIRMWARE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Cache::default_root().unwrap_or_default(),
    };
    let cache = Cache::new(&root);
    let missing: Vec<&str> = PINNED_FILES
        .iter()
        .filter(|f| !cache.path_of(f).exists())
        .map(|f| f.path)
        .collect();
    if missing.is_empty() {
        return Some(root);
    }
    if std::env::var("NVBARE_REQUIRE_FIRMWARE").as_deref() == Ok("1") {
        panic!(
            "{test}: {} lacks {missing:?} and NVBARE_REQUIRE_FIRMWARE=1",
            root.display()
        );
    }
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {} lacks {} pinned files; run `nvbare firmware fetch --chip all` or set NVBARE_FIRMWARE_DIR",
        root.display(),
        missing.len()
    );
    None
}

fn options(cache: &std::path::Path, sources: Vec<Source>) -> FetchOptions {
    FetchOptions {
        cache: Cache::new(cache),
        sources,
        progress: Progress::new(true),
    }
}

#[test]
fn all_chips_from_a_firmware_tree_then_from_the_cache() {
    let Some(root) = real_root("all_chips_from_a_firmware_tree") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let opts = options(tmp.path(), vec![Source::Dir(root.clone())]);
    let first = fetch(&FirmwareChip::ALL, &opts).unwrap();
    assert_eq!(first.files.len(), PINNED_FILES.len());
    // Files with the same bytes under several chips are linked from the cache, not re-read.
    assert!(
        first
            .files
            .iter()
            .any(|(_, o)| matches!(o, Origin::Source(_)))
    );
    let second = fetch(&FirmwareChip::ALL, &opts).unwrap();
    assert!(second.files.iter().all(|(_, o)| *o == Origin::Cache));
    let _ = writeln!(
        std::io::stderr(),
        "all_chips: first {:?}, cached {:?}",
        first.elapsed,
        second.elapsed
    );
    assert_eq!(
        files_under(tmp.path()).len(),
        PINNED_FILES.len(),
        "nothing but the set"
    );
    for f in PINNED_FILES {
        assert_eq!(read_verified(&opts.cache, f).unwrap().len() as u64, f.size);
    }
}

#[test]
fn a_cached_file_altered_by_one_byte_is_detected_and_replaced() {
    let Some(root) = real_root("cached_file_altered") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let opts = options(tmp.path(), vec![Source::Dir(root)]);
    fetch(&[FirmwareChip::Gh100], &opts).unwrap();
    let fmc = PINNED_FILES
        .iter()
        .find(|f| f.path == "nvidia/gh100/gsp/fmc-570.144.bin")
        .unwrap();
    let path = opts.cache.path_of(fmc);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0x500] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(
        read_verified(&opts.cache, fmc),
        Err(FetchError::CachedFileAltered { .. })
    ));

    let report = fetch(&[FirmwareChip::Gh100], &opts).unwrap();
    assert_eq!(report.replaced.len(), 1);
    assert_eq!(report.replaced[0].0.path, fmc.path);
    assert!(
        report
            .summary()
            .contains("1 altered cached file(s) replaced"),
        "{}",
        report.summary()
    );
    read_verified(&opts.cache, fmc).unwrap();
}

#[test]
fn a_tampered_source_file_is_named_with_both_hashes_and_not_kept() {
    let Some(root) = real_root("tampered_source") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree/nvidia/gh100/gsp");
    std::fs::create_dir_all(&tree).unwrap();
    for name in [
        "bootloader-570.144.bin",
        "fmc-570.144.bin",
        "gsp-570.144.bin",
    ] {
        std::fs::copy(root.join("nvidia/gh100/gsp").join(name), tree.join(name)).unwrap();
    }
    let mut fmc = std::fs::read(tree.join("fmc-570.144.bin")).unwrap();
    fmc[1000] ^= 0x80;
    std::fs::write(tree.join("fmc-570.144.bin"), &fmc).unwrap();

    let cache_dir = tmp.path().join("cache");
    let err = fetch(
        &[FirmwareChip::Gh100],
        &options(&cache_dir, vec![Source::Dir(tmp.path().join("tree"))]),
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, FetchError::HashMismatch(_)), "{msg}");
    assert!(msg.contains("nvidia/gh100/gsp/fmc-570.144.bin"), "{msg}");
    assert!(
        msg.contains("f3ce25f3897c860e4cdde183ebf09b254d94a5d8191d666c12afb33cc7121107"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
    assert!(!cache_dir.join("nvidia/gh100/gsp/fmc-570.144.bin").exists());
    assert!(
        files_under(&cache_dir)
            .iter()
            .all(|f| !f.contains("partial") && !f.contains("fmc"))
    );
}

#[test]
fn upstream_layout_over_loopback_http_with_whence_links() {
    let Some(root) = real_root("loopback_http") else {
        return;
    };
    let mut files = HashMap::new();
    for path in [
        "nvidia/ga102/gsp/gsp-570.144.bin",
        "nvidia/gh100/gsp/bootloader-570.144.bin",
        "nvidia/gh100/gsp/fmc-570.144.bin",
    ] {
        files.insert(path.to_owned(), std::fs::read(root.join(path)).unwrap());
    }
    files.insert(
        "WHENCE".to_owned(),
        b"Link: nvidia/gh100/gsp/gsp-570.144.bin -> ../../ga102/gsp/gsp-570.144.bin\n".to_vec(),
    );
    let server = LoopbackServer::serve(files);
    let tmp = tempfile::tempdir().unwrap();
    let report = fetch(
        &[FirmwareChip::Gh100],
        &options(tmp.path(), vec![Source::Http(server.base.clone())]),
    )
    .unwrap();
    assert_eq!(report.files.len(), 3);
    assert!(
        report
            .files
            .iter()
            .all(|(_, o)| *o == Origin::Source(server.base.clone()))
    );
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(
        requests
            .iter()
            .filter(|r| r.ends_with("gsp-570.144.bin"))
            .collect::<Vec<_>>(),
        ["nvidia/ga102/gsp/gsp-570.144.bin"]
    );
}

#[test]
fn the_debian_package_when_one_is_given() {
    let Some(deb) = std::env::var_os("NVBARE_FIRMWARE_DEB").map(PathBuf::from) else {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED the_debian_package: set NVBARE_FIRMWARE_DEB to a firmware-nvidia-graphics .deb"
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let report = fetch(
        &FirmwareChip::ALL,
        &options(tmp.path(), vec![Source::Deb(deb)]),
    )
    .unwrap();
    assert_eq!(report.files.len(), PINNED_FILES.len());
    assert_eq!(files_under(tmp.path()).len(), PINNED_FILES.len());
}
