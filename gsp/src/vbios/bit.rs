//! The BIOS Information Table (open-gpu-doc `BIOS-Information-Table.html`, "BIT Header",
//! "BIT Token Structure", "Parsing Rules"; OpenRM `kernel_gsp_fwsec.c`, `BIT_HEADER_V1_00`,
//! `BIT_TOKEN_V1_00`, `s_vbiosFindBitHeader`).
//!
//! The header: id 0xB8FF (u16), "BIT\0", BCD version (u16), header size, token size, token
//! count, checksum (u8 each): 12 bytes (`BIT_HEADER_V1_00_FMT "1w1d1w4b"`), found by its id
//! and signature, valid when its header-size bytes sum to 0. The tokens follow at
//! header-size, token-size apart: id, data version (u8), data size (u16), data pointer (u16
//! in 6-byte tokens, u32 in 8-byte ones, `BIT_TOKEN_V1_00_FMT_SIZE_6 "2b2w"`, `_SIZE_8
//! "2b1w1d"`). A data pointer is an offset from the ROM's start (OpenRM reads it so); 0 means
//! no data.

use alloc::vec::Vec;

use super::{Bytes, VbiosError};

/// The header's first six bytes: id 0xB8FF (little-endian) and "BIT\0".
pub const BIT_MAGIC: [u8; 6] = [0xFF, 0xB8, b'B', b'I', b'T', 0];
/// Bytes of the v1.00 header (`BIT_HEADER_V1_00_FMT "1w1d1w4b"`).
pub const HEADER_SIZE: usize = 12;
/// Smallest token (`BIT_TOKEN_V1_00_SIZE_6`).
pub const TOKEN_SIZE_6: usize = 6;
/// Token with a 32-bit pointer (`BIT_TOKEN_V1_00_SIZE_8`).
pub const TOKEN_SIZE_8: usize = 8;
/// The BIOS data token (`BIT_TOKEN_BIOSDATA`, 'B').
pub const TOKEN_BIOSDATA: u8 = 0x42;
/// The falcon data token (`BIT_TOKEN_FALCON_DATA`, 'p').
pub const TOKEN_FALCON_DATA: u8 = 0x70;
/// The falcon data token's version with the ucode table pointer (`BIT_DATA_FALCON_DATA_V2`).
pub const FALCON_DATA_VERSION: u8 = 2;

/// The BIT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bit {
    /// Where the header is, from the ROM's start.
    pub offset: usize,
    /// Its BCD version (0x0100 is 1.00).
    pub bcd_version: u16,
    /// Its header size.
    pub header_size: u8,
    /// Its token size.
    pub token_size: u8,
    /// The tokens.
    pub tokens: Vec<BitToken>,
    /// The BIOS version from the BIOS data token, if it has one.
    pub bios_version: Option<BiosVersion>,
}

/// One BIT token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitToken {
    /// Its id.
    pub id: u8,
    /// Its data's version.
    pub version: u8,
    /// Its data's size.
    pub size: u16,
    /// Its data's offset from the ROM's start (0: none).
    pub ptr: u32,
}

impl BitToken {
    /// Whether its data lies within a ROM of `len` bytes (a null pointer's does not).
    pub fn in_rom(&self, len: usize) -> bool {
        let ptr = super::usize_of(self.ptr);
        self.ptr != 0
            && ptr
                .checked_add(usize::from(self.size))
                .is_some_and(|e| e <= len)
    }

    /// The token's name in the BIT document ("FALCON_DATA"), or "" for an id it does not list.
    pub fn name(&self) -> &'static str {
        match self.id {
            0x32 => "I2C_PTRS",
            0x41 => "DAC_PTRS",
            0x42 => "BIOSDATA",
            0x43 => "CLOCK_PTRS",
            0x44 => "DFP_PTRS",
            0x49 => "NVINIT_PTRS",
            0x4C => "LVDS_PTRS",
            0x4D => "MEMORY_PTRS",
            0x4E => "NOP",
            0x50 => "PERF_PTRS",
            0x52 => "BRIDGE_FW_DATA",
            0x53 => "STRING_PTRS",
            0x54 => "TMDS_PTRS",
            0x55 => "DISPLAY_PTRS",
            0x56 => "VIRTUAL_PTRS",
            0x63 => "32BIT_PTRS",
            0x64 => "DP_PTRS",
            0x70 => "FALCON_DATA",
            0x75 => "UEFI_DATA",
            0x78 => "MXM_DATA",
            _ => "",
        }
    }
}

/// The BIOS version of the BIOS data token (`BIT_DATA_BIOSDATA_BINVER`: a u32 and the OEM
/// byte), printed as NVIDIA prints it: 94.02.5C.00.0A.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BiosVersion {
    /// The binary version (5.40.00.01 is 0x05400001).
    pub version: u32,
    /// The OEM version.
    pub oem: u8,
}

impl core::fmt::Display for BiosVersion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let [a, b, c, d] = self.version.to_be_bytes();
        write!(f, "{a:02X}.{b:02X}.{c:02X}.{d:02X}.{:02X}", self.oem)
    }
}

/// Finds and reads the BIT in `rom`: the first id+signature whose header sums to 0; the
/// first bad checksum is the error when none does.
pub fn find(rom: &[u8]) -> Result<Bit, VbiosError> {
    let b = Bytes(rom);
    let mut bad_sum = None;
    // Bounded: one step per byte of the ROM.
    for (offset, w) in rom.windows(BIT_MAGIC.len()).enumerate() {
        if w != BIT_MAGIC {
            continue;
        }
        let header_size = b.u8("BIT header", offset + 8)?;
        let token_size = b.u8("BIT header", offset + 9)?;
        let head = b.slice(
            "BIT header",
            offset,
            usize::from(header_size).max(HEADER_SIZE),
        )?;
        let sum = head[..usize::from(header_size)]
            .iter()
            .fold(0u8, |s, &x| s.wrapping_add(x));
        if sum != 0 {
            bad_sum.get_or_insert(VbiosError::BitChecksum { offset, sum });
            continue;
        }
        if usize::from(header_size) < HEADER_SIZE || usize::from(token_size) < TOKEN_SIZE_6 {
            return Err(VbiosError::BitSizes {
                header_size,
                token_size,
            });
        }
        return read(rom, offset);
    }
    Err(bad_sum.unwrap_or(VbiosError::NoBit))
}

fn read(rom: &[u8], offset: usize) -> Result<Bit, VbiosError> {
    let b = Bytes(rom);
    let h = b.slice("BIT header", offset, HEADER_SIZE)?;
    let header_size = h[8];
    let token_size = h[9];
    let count = h[10];
    let first = offset + usize::from(header_size);
    let step = usize::from(token_size);
    b.slice("BIT tokens", first, usize::from(count) * step)?;
    // Bounded: `count` is a byte.
    let tokens: Vec<BitToken> = (0..usize::from(count))
        .map(|i| {
            let t = first + i * step;
            let ptr = if step >= TOKEN_SIZE_8 {
                b.u32("BIT token", t + 4)?
            } else {
                u32::from(b.u16("BIT token", t + 4)?)
            };
            Ok(BitToken {
                id: b.u8("BIT token", t)?,
                version: b.u8("BIT token", t + 1)?,
                size: b.u16("BIT token", t + 2)?,
                ptr,
            })
        })
        .collect::<Result<_, VbiosError>>()?;
    // OpenRM reads the version from a BIOS data token of version 1 or 2 with more than 5
    // bytes; informational, so one that points outside the ROM is left out.
    let bios_version = tokens
        .iter()
        .find(|t| t.id == TOKEN_BIOSDATA && matches!(t.version, 1 | 2) && t.size > 5)
        .filter(|t| t.in_rom(rom.len()))
        .and_then(|t| {
            let p = super::usize_of(t.ptr);
            Some(BiosVersion {
                version: b.u32("BIOS data", p).ok()?,
                oem: b.u8("BIOS data", p + 4).ok()?,
            })
        });
    Ok(Bit {
        offset,
        bcd_version: u16::from_le_bytes([h[6], h[7]]),
        header_size,
        token_size,
        tokens,
        bios_version,
    })
}

impl Bit {
    /// The falcon ucode table pointer of the first falcon-data token (`BIT_DATA_FALCON_DATA_V2`,
    /// a u32), or `None` without one.
    pub fn falcon_ucode_table_ptr(&self, rom: &[u8]) -> Result<Option<u32>, VbiosError> {
        let Some(t) = self.tokens.iter().find(|t| t.id == TOKEN_FALCON_DATA) else {
            return Ok(None);
        };
        if t.version != FALCON_DATA_VERSION || t.size < 4 {
            return Err(VbiosError::FalconDataToken {
                version: t.version,
                size: t.size,
            });
        }
        if !t.in_rom(rom.len()) {
            return Err(VbiosError::TokenOutside {
                id: t.id,
                ptr: t.ptr,
                size: t.size,
                len: rom.len(),
            });
        }
        Bytes(rom)
            .u32("falcon data", super::usize_of(t.ptr))
            .map(Some)
    }
}
