//! A source that has a wrong or unreadable file, and a cache that cannot be written: each
//! reported as what it is, with the right remedy (issue 14, defects 4 and 5).

mod support;

use nvbare_firmware_fetch::source::{AptSource, SourceError};
use nvbare_firmware_fetch::{
    Cache, FetchError, FetchOptions, PinnedFile, Progress, Source, fetch_files,
};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::Path;
use support::{TarItem, build_deb, files_under, pin};

const GOOD: &[u8] = b"a booter image that is right";
const OTHER: &[u8] = b"another file, also right";

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn fetch_from(
    cache: &Path,
    source: Source,
    wanted: &[&'static PinnedFile],
) -> Result<nvbare_firmware_fetch::FetchReport, FetchError> {
    fetch_files(
        wanted,
        &FetchOptions {
            cache: Cache::new(cache),
            sources: vec![source],
            progress: Progress::new(true),
        },
    )
}

fn xz(bytes: &[u8]) -> Vec<u8> {
    let mut w =
        lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(1)).unwrap();
    w.write_all(bytes).unwrap();
    w.finish().unwrap()
}

#[test]
fn a_wrong_file_is_reported_with_its_own_size_and_hash_and_what_was_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    let good = pin("nvidia/x/gsp/good-570.144.bin", GOOD);
    let other = pin("nvidia/x/gsp/other-570.144.bin", OTHER);
    let wrong = pin("nvidia/x/gsp/wrong-570.144.bin", b"short pin");
    let wrong_bytes =
        b"a much longer file than the pinned one: only its prefix used to be measured";
    write(&tree.join(good.path), GOOD);
    write(&tree.join(other.path), OTHER);
    write(&tree.join(wrong.path), wrong_bytes);

    let cache = tmp.path().join("cache");
    let err = fetch_from(&cache, Source::Dir(tree), &[good, wrong, other]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, FetchError::HashMismatch(_)), "{msg}");
    let whole = format!(
        "sha256 {} ({} bytes)",
        nvbare_firmware_fetch::digest::to_hex(&Sha256::digest(wrong_bytes)),
        wrong_bytes.len()
    );
    assert!(msg.contains(&whole), "{msg}\nwants {whole}");
    assert!(
        msg.contains("the 2 other files were verified and cached"),
        "{msg}"
    );
    assert!(!msg.contains("nothing was kept"), "{msg}");
    assert_eq!(
        files_under(&cache),
        [
            "nvidia/x/gsp/good-570.144.bin",
            "nvidia/x/gsp/other-570.144.bin"
        ]
    );
}

#[test]
fn unreadable_and_corrupt_files_in_a_directory_are_named_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    let dir = tree.join("nvidia/x/gsp");
    let good = pin("nvidia/x/gsp/good-570.144.bin", GOOD);
    write(&tree.join(good.path), GOOD);
    let mut cut_xz = xz(OTHER);
    cut_xz.truncate(cut_xz.len() / 2);
    write(&dir.join("truncated-570.144.bin.xz"), &cut_xz);
    write(&dir.join("bad-570.144.bin.zst"), b"this is not zstd");
    std::os::unix::fs::symlink("loop-570.144.bin", dir.join("loop-570.144.bin")).unwrap();
    std::fs::create_dir_all(dir.join("dir-570.144.bin")).unwrap();
    let cases = [
        ("truncated-570.144.bin", "truncated-570.144.bin.xz"),
        ("bad-570.144.bin", "bad-570.144.bin.zst"),
        ("loop-570.144.bin", "loop-570.144.bin"),
        ("dir-570.144.bin", "dir-570.144.bin"),
    ];
    let mut wanted = vec![good];
    for (name, _) in cases {
        wanted.push(pin(&format!("nvidia/x/gsp/{name}"), OTHER));
    }
    // Each with its own content, so that none is asked for once for all.
    let wanted: Vec<&'static PinnedFile> = wanted
        .iter()
        .enumerate()
        .map(|(i, f)| match i {
            0 => *f,
            _ => pin(f.path, format!("other {i}").as_bytes()),
        })
        .collect();

    let cache = Cache::new(tmp.path().join("cache"));
    let supplied = Source::Dir(tree.clone())
        .supply(&wanted, &cache, &Progress::new(true))
        .unwrap();
    assert_eq!(supplied.stored, [good]);
    let mut unreadable: Vec<(String, String)> = supplied
        .unreadable
        .iter()
        .map(|u| {
            let name = u.path.file_name().unwrap().to_string_lossy().into_owned();
            (name, u.error.to_string())
        })
        .collect();
    unreadable.sort();
    let mut expected: Vec<&str> = cases.iter().map(|(_, on_disk)| *on_disk).collect();
    expected.sort();
    assert_eq!(
        unreadable
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        expected,
        "{unreadable:?}"
    );
    for (name, why) in &unreadable {
        assert!(!why.is_empty(), "{name}");
    }
    assert!(
        unreadable
            .iter()
            .any(|(n, why)| n.ends_with(".zst") && why.contains("zstd")),
        "{unreadable:?}"
    );

    // Through fetch, the one source's word on it is the error, with what was kept.
    let err = fetch_from(
        &tmp.path().join("cache2"),
        Source::Dir(tree),
        &[good, wanted[1]],
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, FetchError::Unreadable { .. }), "{msg}");
    assert!(msg.contains("truncated-570.144.bin.xz"), "{msg}");
    assert!(msg.contains("ends early, truncated"), "{msg}");
    assert!(msg.contains("the 1 other file was verified"), "{msg}");
}

#[test]
fn a_file_only_root_cannot_read_is_reported_as_permission_denied() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(0)
        == 0
    {
        eprintln!("SKIPPED permission_denied: running as root, which reads any file");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    let file = pin("nvidia/x/gsp/locked-570.144.bin", GOOD);
    let path = tree.join(file.path);
    write(&path, GOOD);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    let err = fetch_from(&tmp.path().join("cache"), Source::Dir(tree), &[file]).unwrap_err();
    assert!(err.to_string().contains("ermission denied"), "{err}");
}

/// A path whose parent is a file: creating anything under it fails (as root too).
fn unwritable_cache(tmp: &Path) -> std::path::PathBuf {
    let blocker = tmp.join("not-a-directory");
    std::fs::write(&blocker, b"a file where the cache's parent should be").unwrap();
    blocker.join("cache")
}

#[test]
fn a_cache_that_cannot_be_written_is_a_cache_error_from_every_source() {
    let tmp = tempfile::tempdir().unwrap();
    let file = pin("nvidia/x/gsp/good-570.144.bin", GOOD);
    let tree = tmp.path().join("tree");
    write(&tree.join(file.path), GOOD);
    let deb = tmp.path().join("p.deb");
    std::fs::write(
        &deb,
        build_deb(&[TarItem::File("nvidia/x/gsp/good-570.144.bin", GOOD)]),
    )
    .unwrap();

    // The cache root itself.
    let err = fetch_from(
        &unwritable_cache(tmp.path()),
        Source::Dir(tree.clone()),
        &[file],
    )
    .unwrap_err();
    assert!(matches!(err, FetchError::Cache { .. }), "{err}");

    // A cache whose firmware directory cannot be made, for a directory and a package:
    // before, "could not get ...; supply the files by hand" (or a "broken" package).
    for source in [Source::Dir(tree), Source::Deb(deb)] {
        let cache = tmp.path().join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        std::fs::write(cache.join("nvidia"), b"in the way").unwrap();
        let described = source.describe();
        let err = fetch_from(&cache, source, &[file]).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, FetchError::Cache { .. }),
            "{described}: {msg}"
        );
        assert!(
            msg.contains("--cache DIR") && msg.contains("free space"),
            "{msg}"
        );
        assert!(!msg.contains("supply the files by hand"), "{msg}");
        std::fs::remove_file(cache.join("nvidia")).unwrap();
    }
}

#[test]
fn a_package_whose_unpacking_cannot_write_is_a_cache_error_not_a_broken_package() {
    let tmp = tempfile::tempdir().unwrap();
    let file = pin("nvidia/x/gsp/good-570.144.bin", GOOD);
    let deb = tmp.path().join("p.deb");
    std::fs::write(
        &deb,
        build_deb(&[TarItem::File("nvidia/x/gsp/good-570.144.bin", GOOD)]),
    )
    .unwrap();
    let err = Source::Deb(deb)
        .supply(
            &[file],
            &Cache::new(unwritable_cache(tmp.path())),
            &Progress::new(true),
        )
        .unwrap_err();
    assert!(matches!(err, SourceError::CacheWrite { .. }), "{err}");
}

const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// A stand-in for apt-get: `update` succeeds, `download` runs `download_script` in the
/// directory apt-get would download into.
fn fake_apt_get(dir: &Path, download_script: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("apt-get");
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in update) exit 0;; download) {download_script}; exit $?;; esac; done\nexit 2\n"
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn a_failed_package_download_leaves_nothing_behind() {
    if !Path::new(KEYRING).exists() {
        eprintln!("SKIPPED failed_package_download: {KEYRING} missing (not a Debian system)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path().join("cache"));
    let work = cache.root().join(".apt");
    let file = pin("nvidia/x/gsp/good-570.144.bin", GOOD);

    // A download cut off half-way, as apt-get leaves it.
    let apt_get = fake_apt_get(
        tmp.path(),
        "mkdir -p partial && echo half > partial/firmware-nvidia-graphics_1_all.deb && \
         echo 'E: Failed to fetch' >&2 && false",
    );
    let source = Source::Apt(AptSource::new(work.clone()).with_apt_get(apt_get));
    let err = source
        .supply(&[file], &cache, &Progress::new(true))
        .unwrap_err();
    assert!(err.to_string().contains("Failed to fetch"), "{err}");
    assert!(
        files_under(cache.root())
            .iter()
            .all(|f| !f.contains("firmware-nvidia-graphics")),
        "{:?}",
        files_under(cache.root())
    );

    // A good download is unpacked, and the package removed afterwards.
    let deb = tmp.path().join("good.deb");
    std::fs::write(
        &deb,
        build_deb(&[TarItem::File("nvidia/x/gsp/good-570.144.bin", GOOD)]),
    )
    .unwrap();
    let apt_get = fake_apt_get(
        tmp.path(),
        &format!("cp {} ./firmware-nvidia-graphics_1_all.deb", deb.display()),
    );
    let source = Source::Apt(AptSource::new(work).with_apt_get(apt_get));
    let supplied = source
        .supply(&[file], &cache, &Progress::new(true))
        .unwrap();
    assert_eq!(supplied.stored, [file]);
    let left: Vec<String> = files_under(cache.root())
        .into_iter()
        .filter(|f| !f.starts_with(".apt/sources.list"))
        .collect();
    assert_eq!(left, ["nvidia/x/gsp/good-570.144.bin"]);
}
