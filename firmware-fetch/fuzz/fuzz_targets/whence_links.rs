#![no_main]
//! WHENCE text and link lookups from an untrusted tree: never a panic or a hang, and every
//! resolved path is normalized and inside the tree.
use libfuzzer_sys::fuzz_target;
use nvbare_firmware_fetch::links::LinkTable;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (whence, query) = text
        .split_once('\0')
        .unwrap_or((&text, "nvidia/gh100/gsp/gsp-570.144.bin"));
    let table = LinkTable::from_whence(whence);
    if let Some(resolved) = table.resolve(query) {
        assert!(!resolved.starts_with('/'));
        assert!(
            !resolved
                .split('/')
                .any(|p| p == ".." || p == "." || p.is_empty())
                || resolved.is_empty()
        );
    }
});
