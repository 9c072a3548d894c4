#![no_main]
//! GSP-RM ELF parser: any bytes give an image or a typed error, for every chip's section.
use libfuzzer_sys::fuzz_target;
use nvbare_gsp::firmware::{ElfFile, GspRmImage, GspSignatureTarget};

fuzz_target!(|data: &[u8]| {
    let _ = ElfFile::parse(data);
    for target in [
        GspSignatureTarget::Tu10x,
        GspSignatureTarget::Ga100,
        GspSignatureTarget::Ga10x,
        GspSignatureTarget::Gh100,
        GspSignatureTarget::Gb20x,
    ] {
        if let Ok(img) = GspRmImage::parse(data, target) {
            assert_eq!(img.version, "570.144");
            assert!(!img.signature.is_empty());
        }
    }
});
