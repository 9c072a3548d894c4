//! Preparing FWSEC to run: the ucode copied out of the ROM, its DMEM mapper patched with the
//! command (FRTS or SB) and the command's arguments, and the signature for the chip's fuse
//! version copied into the signature slot. Pure: the caller loads the result on the GSP
//! falcon.
//!
//! Mirrors `s_prepareForFwsec_TU102` and `s_vbiosPatchInterfaceData`
//! (`arch/turing/kernel_gsp_frts_tu102.c`) for descriptor version 3 (GA10x, AD10x: boot from
//! HS, `s_vbiosFillFlcnUcodeFromDescV3` in `kernel_gsp_fwsec.c`) and version 2 (Turing,
//! GA100: code and data for the generic bootloader, `s_vbiosFillFlcnUcodeFromDescV2`).

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use super::falcon_ucode::{
    CMD_FRTS, CMD_SB, DMEM_MAPPER_INIT_CMD, DmemMapper, FwsecDesc, FwsecDescV2, FwsecDescV3,
    FwsecInfo, SIGNATURE_SIZE,
};

/// `FWSECLIC_FRTS_REGION_MEDIA_FB`.
pub const FRTS_MEDIA_FB: u32 = 2;
/// `NV_PGC6_AON_FRTS_INPUT_WPR_SIZE_SECURE_SCRATCH_GROUP_03_0_WPR_SIZE_1MB_IN_4K`: the FRTS
/// region is 1 MiB, in 4 KiB units.
pub const FRTS_SIZE_1MB_IN_4K: u32 = 0x100;
/// `FWSECLIC_READ_VBIOS_STRUCT_FLAGS`.
pub const READ_VBIOS_FLAGS: u32 = 2;

/// What FWSEC is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FwsecCommand {
    /// Carve out the FRTS region at `offset` bytes into FB and raise WPR2 over it.
    Frts {
        /// FB offset of the region (4 KiB aligned; `GspFwWprMeta.frtsOffset`).
        offset: u64,
    },
    /// Put the pre-OS applications back (at unload).
    Sb,
}

impl FwsecCommand {
    /// The DMEM mapper's `init_cmd` value.
    pub const fn code(self) -> u32 {
        match self {
            FwsecCommand::Frts { .. } => CMD_FRTS,
            FwsecCommand::Sb => CMD_SB,
        }
    }

    /// The command buffer: `FWSECLIC_READ_VBIOS_DESC` (version 1, size 24, no GFW image,
    /// flags 2), then for FRTS `FWSECLIC_FRTS_REGION_DESC` (version 1, size 20, the offset in
    /// 4 KiB, 1 MiB, FB).
    pub fn buffer(self) -> Vec<u8> {
        let mut b = Vec::with_capacity(44);
        let mut put = |v: u32| b.extend_from_slice(&v.to_le_bytes());
        put(1);
        put(24);
        put(0); // gfwImageOffset, low
        put(0); // gfwImageOffset, high
        put(0); // gfwImageSize
        put(READ_VBIOS_FLAGS);
        if let FwsecCommand::Frts { offset } = self {
            put(1);
            put(20);
            // CAST: FB offsets in 4 KiB fit 32 bits for any FB below 16 TiB.
            put((offset >> 12) as u32);
            put(FRTS_SIZE_1MB_IN_4K);
            put(FRTS_MEDIA_FB);
        }
        b
    }
}

/// Why FWSEC cannot be prepared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FwsecError {
    /// The descriptor is version 2, which needs the generic bootloader, and none was given
    /// (or a version-3 preparation was asked of it).
    NeedsBootloader,
    /// No signature of the image is for the chip's fuse version.
    NoSignatureForFuse {
        /// The fuse version read from the chip.
        fuse_version: u32,
        /// The image's `SignatureVersions` mask.
        versions: u16,
    },
    /// The ROM holds fewer signatures than the versions mask names.
    SignatureMissing {
        /// Index wanted.
        index: usize,
        /// Signatures present.
        count: u8,
    },
    /// The command does not fit the DMEM mapper's command buffer, or a patch lands outside
    /// DMEM.
    CommandBuffer {
        /// Bytes of command.
        len: usize,
        /// The buffer's size.
        room: u32,
    },
    /// The ucode lies outside the ROM (the parser checked it: a different ROM was passed).
    OutsideRom,
}

impl fmt::Display for FwsecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FwsecError::NeedsBootloader => f.write_str(
                "FWSEC's descriptor is version 2 (Turing, GA100): it runs through the generic \
                 falcon bootloader (gen_bootloader-570.144.bin), which this boot was not \
                 given; fetch the chip's firmware (nvbare firmware fetch --chip CHIP)",
            ),
            FwsecError::NoSignatureForFuse {
                fuse_version,
                versions,
            } => write!(
                f,
                "the VBIOS's FWSEC has no signature for fuse version {fuse_version} (its \
                 versions mask is {versions:#06x}): the VBIOS is older than the chip's fuses; \
                 flash the board's current VBIOS"
            ),
            FwsecError::SignatureMissing { index, count } => write!(
                f,
                "FWSEC's signature {index} is named by its versions mask but only {count} \
                 follow the descriptor: the VBIOS is damaged"
            ),
            FwsecError::CommandBuffer { len, room } => write!(
                f,
                "FWSEC's command buffer holds {room} bytes (or lies outside DMEM), the \
                 command needs {len}: the VBIOS is damaged"
            ),
            FwsecError::OutsideRom => f.write_str(
                "FWSEC's ucode lies outside the ROM given: pass the ROM it was parsed from",
            ),
        }
    }
}

impl core::error::Error for FwsecError {}

/// FWSEC ready to load (descriptor version 3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparedFwsec {
    /// The ucode, 256-byte aligned: IMEM (`imem_size` bytes) then DMEM, patched.
    pub image: Vec<u8>,
    /// The descriptor.
    pub desc: FwsecDescV3,
    /// Which signature was copied (its index among those following the descriptor).
    pub signature_index: usize,
}

impl PreparedFwsec {
    /// The DMEM part of the image.
    pub fn dmem(&self) -> &[u8] {
        let at = self.desc.imem_load_size as usize;
        let end = at + self.desc.dmem_load_size as usize;
        self.image.get(at..end).unwrap_or(&[])
    }
}

/// Which signature (index among those stored) serves fuse version `fuse_version`: the bit
/// `1 << fuse_version` must be set in `versions`, and the index counts the set bits below it
/// (`s_prepareForFwsec_TU102`'s loop).
pub fn signature_index(fuse_version: u32, versions: u16) -> Option<usize> {
    let bit = 1u32.checked_shl(fuse_version)?;
    if u32::from(versions) & bit == 0 {
        return None;
    }
    Some((u32::from(versions) & (bit - 1)).count_ones() as usize)
}

/// Writes `cmd` into the DMEM mapper of `dmem` (`s_vbiosPatchInterfaceData`): `init_cmd`,
/// then the command buffer.
fn patch_mapper(dmem: &mut [u8], m: &DmemMapper, cmd: FwsecCommand) -> Result<(), FwsecError> {
    let buffer = cmd.buffer();
    let init = m.dmem_offset as usize + DMEM_MAPPER_INIT_CMD;
    let cmd_at = m.cmd_in_buffer_offset as usize;
    let room_ok = buffer.len() <= m.cmd_in_buffer_size as usize
        && cmd_at + buffer.len() <= dmem.len()
        && init + 4 <= dmem.len();
    if !room_ok {
        return Err(FwsecError::CommandBuffer {
            len: buffer.len(),
            room: m.cmd_in_buffer_size,
        });
    }
    dmem[init..init + 4].copy_from_slice(&cmd.code().to_le_bytes());
    dmem[cmd_at..cmd_at + buffer.len()].copy_from_slice(&buffer);
    Ok(())
}

/// FWSEC with a version-2 descriptor (Turing, GA100), laid out as
/// `s_vbiosFillFlcnUcodeFromDescV2` lays it in memory for the generic bootloader: the IMEM
/// image at `IMEMPhysBase` of a code buffer, the DMEM image at `DMEMPhysBase` of a data
/// buffer (both 256-byte aligned), the DMEM mapper patched. Version 2 carries no signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparedFwsecV2 {
    /// The code buffer.
    pub code: Vec<u8>,
    /// The data buffer.
    pub data: Vec<u8>,
    /// The descriptor.
    pub desc: FwsecDescV2,
}

impl PreparedFwsecV2 {
    /// Offset and size of the non-secure code (`imemNsPa`, `IMEMLoadSize - IMEMSecSize`).
    pub fn imem_ns(&self) -> (u32, u32) {
        let d = &self.desc;
        (
            d.imem_phys_base,
            d.imem_load_size.saturating_sub(d.imem_sec_size),
        )
    }

    /// Offset and size of the secure code (`IMEMSecBase - IMEMVirtBase + IMEMPhysBase`,
    /// `IMEMSecSize` aligned up to 256).
    pub fn imem_sec(&self) -> (u32, u32) {
        let d = &self.desc;
        (
            d.imem_sec_base
                .wrapping_sub(d.imem_virt_base)
                .wrapping_add(d.imem_phys_base),
            d.imem_sec_size.next_multiple_of(256),
        )
    }
}

/// Copies a version-2 FWSEC out of `rom` and patches it for `cmd`.
pub fn prepare_v2(
    rom: &[u8],
    info: &FwsecInfo,
    cmd: FwsecCommand,
) -> Result<PreparedFwsecV2, FwsecError> {
    let FwsecDesc::V2(desc) = info.desc else {
        return Err(FwsecError::OutsideRom);
    };
    let imem_len = desc.imem_load_size as usize;
    let code_at = desc.imem_phys_base as usize;
    let mut code = vec![0u8; (code_at + imem_len).next_multiple_of(256)];
    let imem = rom
        .get(info.ucode_offset..info.ucode_offset + imem_len)
        .ok_or(FwsecError::OutsideRom)?;
    code[code_at..code_at + imem_len].copy_from_slice(imem);
    let (dmem_rom, dmem_len) = info.dmem;
    let data_at = desc.dmem_phys_base as usize;
    let mut data = vec![0u8; (data_at + dmem_len).next_multiple_of(256)];
    let dmem = rom
        .get(dmem_rom..dmem_rom + dmem_len)
        .ok_or(FwsecError::OutsideRom)?;
    data[data_at..data_at + dmem_len].copy_from_slice(dmem);
    patch_mapper(
        &mut data[data_at..data_at + dmem_len],
        &info.dmem_mapper,
        cmd,
    )?;
    Ok(PreparedFwsecV2 { code, data, desc })
}

/// Copies FWSEC out of `rom` (the bytes from the ROM's start, as [`FwsecInfo`]'s offsets
/// are) and patches it for `cmd` with the signature for `fuse_version`.
pub fn prepare(
    rom: &[u8],
    info: &FwsecInfo,
    cmd: FwsecCommand,
    fuse_version: u32,
) -> Result<PreparedFwsec, FwsecError> {
    let FwsecDesc::V3(desc) = info.desc else {
        return Err(FwsecError::NeedsBootloader);
    };
    let size = (desc.stored_size as usize).next_multiple_of(256);
    let mut image = rom
        .get(info.ucode_offset..info.ucode_offset + size)
        .ok_or(FwsecError::OutsideRom)?
        .to_vec();
    let dmem_at = desc.imem_load_size as usize;
    let dmem_len = desc.dmem_load_size as usize;
    let m = &info.dmem_mapper;
    let dmem = image
        .get_mut(dmem_at..dmem_at + dmem_len)
        .ok_or(FwsecError::OutsideRom)?;
    patch_mapper(dmem, m, cmd)?;

    let index = signature_index(fuse_version, desc.signature_versions).ok_or(
        FwsecError::NoSignatureForFuse {
            fuse_version,
            versions: desc.signature_versions,
        },
    )?;
    if index >= usize::from(desc.signature_count) {
        return Err(FwsecError::SignatureMissing {
            index,
            count: desc.signature_count,
        });
    }
    let (sigs_at, _) = info.signatures.ok_or(FwsecError::OutsideRom)?;
    let sig = rom
        .get(sigs_at + index * SIGNATURE_SIZE..sigs_at + (index + 1) * SIGNATURE_SIZE)
        .ok_or(FwsecError::OutsideRom)?;
    let slot = desc.pkc_data_offset as usize;
    dmem.get_mut(slot..slot + SIGNATURE_SIZE)
        .ok_or(FwsecError::OutsideRom)?
        .copy_from_slice(sig);
    Ok(PreparedFwsec {
        image,
        desc,
        signature_index: index,
    })
}

#[cfg(test)]
mod tests {
    use super::super::build::{self, Spec};
    use super::super::parse;
    use super::*;

    #[test]
    fn signature_index_counts_versions_below_the_fuse() {
        assert_eq!(signature_index(0, 0b1), Some(0));
        assert_eq!(signature_index(3, 0b1011), Some(2));
        assert_eq!(signature_index(2, 0b1011), None);
        assert_eq!(signature_index(40, 0xffff), None);
    }

    #[test]
    fn frts_command_matches_openrm_layout() {
        let b = FwsecCommand::Frts {
            offset: 0x5fe0_0000,
        }
        .buffer();
        assert_eq!(b.len(), 44);
        let w = |i: usize| u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!((w(0), w(1), w(5)), (1, 24, 2));
        assert_eq!((w(6), w(7), w(8), w(9), w(10)), (1, 20, 0x5fe00, 0x100, 2));
        assert_eq!(FwsecCommand::Sb.buffer().len(), 24);
        assert_eq!(FwsecCommand::Sb.code(), 0x19);
    }

    #[test]
    fn prepare_patches_the_mapper_command_and_the_fused_signature() {
        let built = build::build(&Spec::default());
        let v = parse(&built.bytes).unwrap();
        let info = v.fwsec.clone().unwrap();
        let rom = &built.bytes[v.rom_start..];
        let FwsecDesc::V3(desc) = info.desc else {
            panic!("v3")
        };
        // The builder's mask names its signatures; take the newest version it has.
        let fuse = 15 - desc.signature_versions.leading_zeros();
        let p = prepare(
            rom,
            &info,
            FwsecCommand::Frts {
                offset: 0x3ff0_0000,
            },
            fuse,
        )
        .unwrap();
        assert_eq!(p.signature_index, usize::from(desc.signature_count) - 1);
        let d = p.dmem();
        let m = info.dmem_mapper;
        let at = m.dmem_offset as usize + DMEM_MAPPER_INIT_CMD;
        assert_eq!(
            u32::from_le_bytes(d[at..at + 4].try_into().unwrap()),
            CMD_FRTS
        );
        let c = m.cmd_in_buffer_offset as usize;
        assert_eq!(
            &d[c..c + 44],
            &FwsecCommand::Frts {
                offset: 0x3ff0_0000
            }
            .buffer()[..]
        );
        let slot = desc.pkc_data_offset as usize;
        let sigs = info.signatures.unwrap().0 + p.signature_index * SIGNATURE_SIZE;
        assert_eq!(
            &d[slot..slot + SIGNATURE_SIZE],
            &rom[sigs..sigs + SIGNATURE_SIZE]
        );
        // IMEM untouched.
        let imem = desc.imem_load_size as usize;
        assert_eq!(
            &p.image[..imem],
            &rom[info.ucode_offset..info.ucode_offset + imem]
        );
        // A fuse version the image does not carry is an error that says what to do.
        let e = prepare(rom, &info, FwsecCommand::Sb, 14).unwrap_err();
        assert!(alloc::format!("{e}").contains("flash"), "{e}");
    }

    #[test]
    fn version_2_lays_out_code_and_data_for_the_generic_bootloader() {
        let built = build::build(&Spec {
            desc_version: 2,
            ..Spec::default()
        });
        let v = parse(&built.bytes).unwrap();
        let info = v.fwsec.clone().unwrap();
        let rom = &built.bytes[v.rom_start..];
        let p = prepare_v2(
            rom,
            &info,
            FwsecCommand::Frts {
                offset: 0x1000_0000,
            },
        )
        .unwrap();
        let d = p.desc;
        assert_eq!(p.code.len() % 256, 0);
        let at = d.imem_phys_base as usize;
        assert_eq!(
            &p.code[at..at + d.imem_load_size as usize],
            &rom[info.ucode_offset..info.ucode_offset + d.imem_load_size as usize]
        );
        let m = info.dmem_mapper;
        let data = &p.data[d.dmem_phys_base as usize..];
        let i = m.dmem_offset as usize + DMEM_MAPPER_INIT_CMD;
        assert_eq!(
            u32::from_le_bytes(data[i..i + 4].try_into().unwrap()),
            CMD_FRTS
        );
        assert_eq!(p.imem_ns().1 + d.imem_sec_size, d.imem_load_size);
    }

    #[test]
    fn version_2_needs_the_bootloader() {
        let built = build::build(&Spec {
            desc_version: 2,
            ..Spec::default()
        });
        let v = parse(&built.bytes).unwrap();
        let info = v.fwsec.clone().unwrap();
        assert_eq!(
            prepare(&built.bytes[v.rom_start..], &info, FwsecCommand::Sb, 0),
            Err(FwsecError::NeedsBootloader)
        );
    }
}
