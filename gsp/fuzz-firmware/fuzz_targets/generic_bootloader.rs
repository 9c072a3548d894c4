#![no_main]
//! Falcon generic bootloader parser (nvfw bin header + nvfw_bl_desc).
use libfuzzer_sys::fuzz_target;
use nvbare_gsp::firmware::GenericBootloader;

fuzz_target!(|data: &[u8]| {
    if let Ok(bl) = GenericBootloader::parse(data) {
        let _ = bl.code().len() + bl.data().len();
    }
});
