//! The typed error of every firmware parser.

use alloc::string::String;
use core::fmt;

/// Why a firmware file could not be parsed. Each variant names the part of the file that
/// is wrong; `Display` adds the remedy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FirmwareError {
    /// A structure or region points outside the file (or outside its containing region).
    OutOfBounds {
        what: &'static str,
        offset: u64,
        len: u64,
        file_len: u64,
    },
    /// A magic number is wrong: not this kind of file.
    BadMagic {
        what: &'static str,
        found: u32,
        expected: u32,
    },
    /// The ELF header is not one this firmware uses.
    UnsupportedElf { reason: &'static str },
    /// A required ELF section is absent.
    MissingSection { name: &'static str },
    /// A header field has a value no valid file has.
    BadField {
        what: &'static str,
        value: u64,
        reason: &'static str,
    },
    /// A section has the wrong size for this chip's signature scheme.
    WrongSize {
        what: &'static str,
        found: u64,
        expected: u64,
    },
    /// The FMC's `hash` section is not the SHA-384 of its `image` section.
    FmcHashMismatch {
        stored: [u8; 48],
        computed: [u8; 48],
    },
    /// `.fwversion` names another release than 570.144.
    WrongVersion { found: String },
}

fn hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for b in bytes {
        write!(f, "{b:02x}")?;
    }
    Ok(())
}

impl fmt::Display for FirmwareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FirmwareError::OutOfBounds {
                what,
                offset,
                len,
                file_len,
            } => write!(
                f,
                "{what}: bytes {offset:#x}..+{len:#x} lie outside the {file_len:#x} bytes available"
            )?,
            FirmwareError::BadMagic {
                what,
                found,
                expected,
            } => write!(f, "{what} is {found:#x}, expected {expected:#x}")?,
            FirmwareError::UnsupportedElf { reason } => write!(f, "unsupported ELF: {reason}")?,
            FirmwareError::MissingSection { name } => write!(f, "ELF section {name} is missing")?,
            FirmwareError::BadField {
                what,
                value,
                reason,
            } => write!(f, "{what} = {value:#x}: {reason}")?,
            FirmwareError::WrongSize {
                what,
                found,
                expected,
            } => write!(f, "{what} is {found} bytes, expected {expected}")?,
            FirmwareError::FmcHashMismatch { stored, computed } => {
                f.write_str("FMC hash section ")?;
                hex(f, stored)?;
                f.write_str(" is not SHA-384(image) ")?;
                hex(f, computed)?;
            }
            FirmwareError::WrongVersion { found } => {
                write!(f, ".fwversion is {found:?}, expected \"570.144\"")?
            }
        }
        f.write_str(
            "; the firmware file is truncated, tampered or not the 570.144 release: \
             fetch it again with `nvbare firmware fetch --chip CHIP`",
        )
    }
}

impl core::error::Error for FirmwareError {}
