#![no_main]
//! FMC parser (ELF32 image/hash/signature/publickey, SHA-384 check) for both schemes.
use libfuzzer_sys::fuzz_target;
use nvbare_gsp::firmware::{FmcImage, FmcSignatureScheme};

fuzz_target!(|data: &[u8]| {
    for scheme in [FmcSignatureScheme::Rsa3072, FmcSignatureScheme::EcdsaP384] {
        if let Ok(fmc) = FmcImage::parse(data, scheme) {
            assert_eq!(fmc.signature.len(), scheme.signature_len());
            assert_eq!(fmc.public_key.len(), scheme.public_key_len());
        }
    }
});
