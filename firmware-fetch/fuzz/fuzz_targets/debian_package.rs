#![no_main]
//! A downloaded .deb is outside data: ar → xz → tar → links must give stored files whose
//! bytes are the pinned ones, or an error, and leave nothing else in the cache.
use libfuzzer_sys::fuzz_target;
use nvbare_firmware_fetch::{Cache, PinnedFile, Progress, Source};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

fn wanted() -> &'static [&'static PinnedFile] {
    static WANTED: OnceLock<Vec<&'static PinnedFile>> = OnceLock::new();
    WANTED.get_or_init(|| {
        [
            "nvidia/gh100/gsp/gsp-570.144.bin",
            "nvidia/ga102/gsp/a-570.144.bin",
        ]
        .iter()
        .map(|path| {
            &*Box::leak(Box::new(PinnedFile {
                path,
                size: 3,
                sha256: Sha256::digest(b"abc").into(),
            }))
        })
        .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let tmp = tempfile::tempdir().unwrap();
    let deb = tmp.path().join("p.deb");
    std::fs::write(&deb, data).unwrap();
    let cache = Cache::new(tmp.path().join("cache"));
    if let Ok(supplied) = Source::Deb(deb).supply(wanted(), &cache, &Progress::new(true)) {
        for file in supplied.stored {
            assert_eq!(std::fs::read(cache.path_of(file)).unwrap(), b"abc");
        }
    }
    // No staging directory survives.
    if let Ok(entries) = std::fs::read_dir(cache.root()) {
        for e in entries.flatten() {
            assert!(!e.file_name().to_string_lossy().starts_with(".staging"));
        }
    }
});
