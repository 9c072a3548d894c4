#![no_main]
//! HS ucode parser (booter_load/unload, scrubber): headers, apps, signatures, patching.
use libfuzzer_sys::fuzz_target;
use nvbare_gsp::firmware::HsUcode;

fuzz_target!(|data: &[u8]| {
    if let Ok(hs) = HsUcode::parse(data) {
        for fuse in 0..3 {
            if let Some(sig) = hs.signature_for_fuse_version(fuse) {
                let patched = hs
                    .patched_image(sig)
                    .expect("accepted files have room for a signature");
                assert_eq!(patched.len(), hs.image.len());
            }
        }
    }
});
