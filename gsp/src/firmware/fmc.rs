//! The FMC (first mutable code) `fmc-570.144.bin` of FSP-booted chips (Hopper, Blackwell):
//! a 32-bit ELF with sections `image` (what GSP runs first), `hash` (SHA-384 of `image`),
//! `signature` and `publickey`, which the driver hands to FSP in the COT payload.

use super::{ElfFile, FirmwareError};
use sha2::{Digest, Sha384};

/// The signature scheme FSP checks, which fixes the sizes of `signature` and `publickey`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FmcSignatureScheme {
    /// Hopper: RSA-3072 (384-byte signature, 384-byte public key).
    Rsa3072,
    /// Blackwell: ECDSA P-384 (96-byte r‖s signature, 97-byte uncompressed point).
    EcdsaP384,
}

impl FmcSignatureScheme {
    pub fn signature_len(self) -> usize {
        match self {
            FmcSignatureScheme::Rsa3072 => 384,
            FmcSignatureScheme::EcdsaP384 => 96,
        }
    }

    pub fn public_key_len(self) -> usize {
        match self {
            FmcSignatureScheme::Rsa3072 => 384,
            FmcSignatureScheme::EcdsaP384 => 97,
        }
    }

    /// The scheme for a linux-firmware directory name: gh100 → RSA-3K, gb* → ECDSA P-384.
    pub fn for_firmware_dir(dir: &str) -> Option<FmcSignatureScheme> {
        if dir == "gh100" {
            Some(FmcSignatureScheme::Rsa3072)
        } else if dir.starts_with("gb") {
            Some(FmcSignatureScheme::EcdsaP384)
        } else {
            None
        }
    }
}

/// SHA-384 digest length.
pub const FMC_HASH_LEN: usize = 48;

#[derive(Debug, Clone)]
pub struct FmcImage<'a> {
    pub image: &'a [u8],
    pub hash: [u8; FMC_HASH_LEN],
    pub signature: &'a [u8],
    pub public_key: &'a [u8],
    pub scheme: FmcSignatureScheme,
}

impl<'a> FmcImage<'a> {
    /// Parses the FMC and checks its section sizes against `scheme` and its `hash`
    /// against the SHA-384 of `image`.
    pub fn parse(
        bytes: &'a [u8],
        scheme: FmcSignatureScheme,
    ) -> Result<FmcImage<'a>, FirmwareError> {
        let elf = ElfFile::parse(bytes)?;
        if elf.class_bits != 32 {
            return Err(FirmwareError::UnsupportedElf {
                reason: "the FMC must be ELF32",
            });
        }
        let image = elf.require("image")?;
        let hash_section = elf.require("hash")?;
        let signature = elf.require("signature")?;
        let public_key = elf.require("publickey")?;
        let sized = |what, found: &[u8], expected: usize| {
            if found.len() == expected {
                Ok(())
            } else {
                Err(FirmwareError::WrongSize {
                    what,
                    found: found.len() as u64,
                    expected: expected as u64,
                })
            }
        };
        sized("FMC hash section", hash_section, FMC_HASH_LEN)?;
        sized("FMC signature section", signature, scheme.signature_len())?;
        sized("FMC publickey section", public_key, scheme.public_key_len())?;
        let mut hash = [0u8; FMC_HASH_LEN];
        hash.copy_from_slice(hash_section);
        let computed: [u8; FMC_HASH_LEN] = Sha384::digest(image).into();
        if computed != hash {
            return Err(FirmwareError::FmcHashMismatch {
                stored: hash,
                computed,
            });
        }
        Ok(FmcImage {
            image,
            hash,
            signature,
            public_key,
            scheme,
        })
    }
}
