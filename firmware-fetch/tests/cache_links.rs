//! Cached names that are one file (hard links, symbolic links, linked directories): each
//! name is verified against its own pinned hash (issue 14, defect 2).

mod support;

use nvbare_firmware_fetch::{
    Cache, FetchError, FetchOptions, Origin, PinnedFile, Progress, Source, fetch_files,
};
use std::path::Path;
use support::pin;

const ALPHA: &[u8] = b"alpha chip's booter";
const BETA: &[u8] = b"beta chip's booter, other bytes";

struct Setup {
    _tmp: tempfile::TempDir,
    cache: Cache,
    source: std::path::PathBuf,
    a: &'static PinnedFile,
    b: &'static PinnedFile,
}

/// Pins `a` (ALPHA) and `b` (BETA), a source tree holding both right, and an empty cache.
fn setup(a_path: &str, b_path: &str) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let a = pin(a_path, ALPHA);
    let b = pin(b_path, BETA);
    let source = tmp.path().join("source");
    for (f, bytes) in [(a, ALPHA), (b, BETA)] {
        let p = source.join(f.path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    let cache = Cache::new(tmp.path().join("cache"));
    Setup {
        _tmp: tmp,
        cache,
        source,
        a,
        b,
    }
}

fn put(cache: &Cache, file: &PinnedFile, bytes: &[u8]) {
    let p = cache.path_of(file);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

fn run(s: &Setup) -> Result<nvbare_firmware_fetch::FetchReport, FetchError> {
    fetch_files(
        &[s.a, s.b],
        &FetchOptions {
            cache: s.cache.clone(),
            sources: vec![Source::Dir(s.source.clone())],
            progress: Progress::new(true),
        },
    )
}

fn origin_of(report: &nvbare_firmware_fetch::FetchReport, file: &PinnedFile) -> Origin {
    report
        .files
        .iter()
        .find(|(f, _)| f.path == file.path)
        .unwrap()
        .1
        .clone()
}

fn link_b_to_a(s: &Setup, symbolic: bool) {
    let (a, b) = (s.cache.path_of(s.a), s.cache.path_of(s.b));
    std::fs::create_dir_all(b.parent().unwrap()).unwrap();
    if symbolic {
        std::os::unix::fs::symlink(&a, &b).unwrap();
    } else {
        std::fs::hard_link(&a, &b).unwrap();
    }
}

#[test]
fn a_name_linked_to_another_chips_file_is_not_verified_by_it() {
    for symbolic in [false, true] {
        let s = setup(
            "nvidia/a/gsp/booter-570.144.bin",
            "nvidia/b/gsp/booter-570.144.bin",
        );
        put(&s.cache, s.a, ALPHA);
        link_b_to_a(&s, symbolic);
        let report = run(&s).unwrap();
        // b held a's bytes: it is altered, replaced from the source, and reported so.
        assert_eq!(report.replaced.len(), 1, "symbolic={symbolic}");
        assert_eq!(report.replaced[0].0.path, s.b.path);
        assert_eq!(report.replaced[0].1.size, ALPHA.len() as u64);
        assert!(matches!(origin_of(&report, s.b), Origin::Source(_)));
        assert_eq!(origin_of(&report, s.a), Origin::Cache);
        assert_eq!(std::fs::read(s.cache.path_of(s.a)).unwrap(), ALPHA);
        assert_eq!(std::fs::read(s.cache.path_of(s.b)).unwrap(), BETA);
    }
}

#[test]
fn the_reverse_link_reports_only_the_altered_name_with_the_bytes_it_held() {
    // a holds b's bytes and b is a hard link to it: a is altered, b is valid. Before the
    // fix b inherited a's verdict ("altered (sha256 X, expected X)") and was fetched again.
    let s = setup(
        "nvidia/a/gsp/booter-570.144.bin",
        "nvidia/b/gsp/booter-570.144.bin",
    );
    put(&s.cache, s.a, BETA);
    link_b_to_a(&s, false);
    let report = run(&s).unwrap();
    let replaced: Vec<(&str, bool)> = report
        .replaced
        .iter()
        .map(|(f, m)| (f.path, m.sha256 == f.sha256))
        .collect();
    assert_eq!(replaced, [(s.a.path, false)]);
    assert_eq!(origin_of(&report, s.b), Origin::Cache);
    assert_eq!(std::fs::read(s.cache.path_of(s.a)).unwrap(), ALPHA);
    assert_eq!(std::fs::read(s.cache.path_of(s.b)).unwrap(), BETA);
}

#[test]
fn a_linked_directory_that_cannot_hold_both_files_is_an_error_not_verified() {
    // nvidia/b -> a: a/gsp/booter and b/gsp/booter are one file, pinned differently.
    let s = setup(
        "nvidia/a/gsp/booter-570.144.bin",
        "nvidia/b/gsp/booter-570.144.bin",
    );
    put(&s.cache, s.a, ALPHA);
    let nvidia = s.cache.root().join("nvidia");
    std::os::unix::fs::symlink(Path::new("a"), nvidia.join("b")).unwrap();
    let err = run(&s).unwrap_err();
    assert!(matches!(err, FetchError::LinkedInCache { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("nvidia/") && msg.contains("remove those links"),
        "{msg}"
    );
}
