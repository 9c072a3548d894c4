//! The falcon ucode table the BIT's falcon-data token points to, FWSEC's descriptor (v2 and
//! v3) and, inside FWSEC's DMEM, the application interface and its DMEM mapper.
//!
//! Layouts (OpenRM 570.144 `kernel_gsp_fwsec.c`, packed little-endian as its format strings
//! say): `FALCON_UCODE_TABLE_HDR_V1` "6b" (version, header size, entry size, entry count,
//! descriptor version, descriptor size); `FALCON_UCODE_TABLE_ENTRY_V1` "2b1d" (application id,
//! target id, descriptor pointer); `FALCON_UCODE_DESC_HEADER` "1d" (bit 0: version available,
//! bits 15:8 the version, 31:16 the size); `FALCON_UCODE_DESC_V2` "15d" (60 bytes);
//! `FALCON_UCODE_DESC_V3` "9d1w2b2w" (44 bytes) followed by its RSA-3K signatures, 384 bytes
//! each (`BCRT30_RSA3K_SIG_SIZE`), then the ucode. The table and descriptor pointers are
//! relative to [`super::Vbios::expansion_rom_offset`].
//!
//! In DMEM (`kernel_gsp_frts_tu102.c`): `FALCON_APPLICATION_INTERFACE_HEADER_V1` (4 bytes:
//! version, header size, entry size, entry count) at the descriptor's InterfaceOffset, then
//! `_ENTRY_V1`s (8 bytes: id, DMEM offset); id 4 is the DMEM mapper,
//! `FALCON_APPLICATION_INTERFACE_DMEM_MAPPER_V3` (64 bytes, "DMAP" first). The checks are
//! OpenRM's (`s_vbiosFillFlcnUcodeFromDescV2`/`V3`, `s_vbiosPatchInterfaceData`).

use alloc::vec::Vec;

use super::{Bytes, VbiosError, add, usize_of};

/// Bytes of the table header (`FALCON_UCODE_TABLE_HDR_V1_SIZE_6`).
pub const TABLE_HEADER_SIZE: usize = 6;
/// The table header's version (`FALCON_UCODE_TABLE_HDR_V1_VERSION`).
pub const TABLE_VERSION: u8 = 1;
/// Bytes of a table entry (`FALCON_UCODE_TABLE_ENTRY_V1_SIZE_6`).
pub const ENTRY_SIZE: usize = 6;
/// FWSEC's license ucode (`FALCON_UCODE_ENTRY_APPID_FIRMWARE_SEC_LIC`).
pub const APPID_FWSEC_LIC: u8 = 0x05;
/// FWSEC for debug-fused boards (`FALCON_UCODE_ENTRY_APPID_FWSEC_DBG`).
pub const APPID_FWSEC_DBG: u8 = 0x45;
/// FWSEC for production boards (`FALCON_UCODE_ENTRY_APPID_FWSEC_PROD`).
pub const APPID_FWSEC_PROD: u8 = 0x85;
/// Bytes of a v2 descriptor (`FALCON_UCODE_DESC_V2_SIZE_60`).
pub const DESC_V2_SIZE: usize = 60;
/// Bytes of a v3 descriptor before its signatures (`FALCON_UCODE_DESC_V3_SIZE_44`).
pub const DESC_V3_SIZE: usize = 44;
/// Bytes of one RSA-3K signature (`BCRT30_RSA3K_SIG_SIZE`).
pub const SIGNATURE_SIZE: usize = 384;
/// Bytes of the application interface header (`FALCON_APPLICATION_INTERFACE_HEADER_V1`).
pub const INTERFACE_HEADER_SIZE: usize = 4;
/// Bytes of an application interface entry (`FALCON_APPLICATION_INTERFACE_ENTRY_V1`).
pub const INTERFACE_ENTRY_SIZE: usize = 8;
/// The DMEM mapper's interface id (`FALCON_APPLICATION_INTERFACE_ENTRY_ID_DMEMMAPPER`).
pub const INTERFACE_ID_DMEM_MAPPER: u32 = 4;
/// Bytes of the DMEM mapper (`FALCON_APPLICATION_INTERFACE_DMEM_MAPPER_V3`, 16 u32s).
pub const DMEM_MAPPER_SIZE: usize = 64;
/// The DMEM mapper's signature, "DMAP" as a little-endian u32.
pub const DMAP_SIGNATURE: u32 = u32::from_le_bytes(*b"DMAP");
/// Offset of `init_cmd` in the DMEM mapper: where FWSEC's command is patched.
pub const DMEM_MAPPER_INIT_CMD: usize = 44;
/// The FRTS command (`FALCON_APPLICATION_INTERFACE_DMEM_MAPPER_V3_CMD_FRTS`).
pub const CMD_FRTS: u32 = 0x15;
/// The secure-boot command (`FALCON_APPLICATION_INTERFACE_DMEM_MAPPER_V3_CMD_SB`).
pub const CMD_SB: u32 = 0x19;

/// The falcon ucode table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UcodeTable {
    /// Where it is, from the ROM's start.
    pub offset: usize,
    /// Its header's version.
    pub version: u8,
    /// Its header's size.
    pub header_size: u8,
    /// Its entries' size.
    pub entry_size: u8,
    /// Its header's descriptor version and size bytes.
    pub desc_version: u8,
    /// See `desc_version`.
    pub desc_size: u8,
    /// The entries.
    pub entries: Vec<UcodeEntry>,
}

/// One entry of the falcon ucode table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UcodeEntry {
    /// The application id (0x85: FWSEC production, 0x45: debug, 0x05: license).
    pub app_id: u8,
    /// The target falcon's id.
    pub target_id: u8,
    /// The descriptor pointer (relative to the expansion-ROM offset).
    pub desc_ptr: u32,
    /// The descriptor's header — (version, size), or `None` when it says no version or lies
    /// outside the ROM.
    pub desc: Option<(u8, u16)>,
}

impl UcodeEntry {
    /// The application's name: "FWSEC (prod)", "FWSEC (debug)", "FWSEC (license)" or "".
    pub fn app_name(&self) -> &'static str {
        match self.app_id {
            APPID_FWSEC_PROD => "FWSEC (prod)",
            APPID_FWSEC_DBG => "FWSEC (debug)",
            APPID_FWSEC_LIC => "FWSEC (license)",
            _ => "",
        }
    }
}

/// FWSEC's descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FwsecDesc {
    /// Version 2 (boot with loader: Turing, GA100).
    V2(FwsecDescV2),
    /// Version 3 (boot from HS: GA10x, AD10x).
    V3(FwsecDescV3),
}

/// `FALCON_UCODE_DESC_V2`, after its header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct FwsecDescV2 {
    pub stored_size: u32,
    pub uncompressed_size: u32,
    pub virtual_entry: u32,
    pub interface_offset: u32,
    pub imem_phys_base: u32,
    pub imem_load_size: u32,
    pub imem_virt_base: u32,
    pub imem_sec_base: u32,
    pub imem_sec_size: u32,
    pub dmem_offset: u32,
    pub dmem_phys_base: u32,
    pub dmem_load_size: u32,
    pub alt_imem_load_size: u32,
    pub alt_dmem_load_size: u32,
}

/// `FALCON_UCODE_DESC_V3`, after its header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct FwsecDescV3 {
    pub stored_size: u32,
    pub pkc_data_offset: u32,
    pub interface_offset: u32,
    pub imem_phys_base: u32,
    pub imem_load_size: u32,
    pub imem_virt_base: u32,
    pub dmem_phys_base: u32,
    pub dmem_load_size: u32,
    pub engine_id_mask: u16,
    pub ucode_id: u8,
    pub signature_count: u8,
    pub signature_versions: u16,
}

/// FWSEC as the ROM holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FwsecInfo {
    /// Its index in the ucode table.
    pub entry: usize,
    /// Its application id.
    pub app_id: u8,
    /// Where its descriptor is, from the ROM's start.
    pub desc_offset: usize,
    /// The descriptor's size (from its header; v3's includes the signatures).
    pub desc_size: u16,
    /// The descriptor.
    pub desc: FwsecDesc,
    /// Where the v3 signatures are, from the ROM's start, and their bytes in all (v2: none).
    pub signatures: Option<(usize, usize)>,
    /// Where the ucode (IMEM then DMEM for v3) is, from the ROM's start.
    pub ucode_offset: usize,
    /// Where its DMEM image is, from the ROM's start, and its size.
    pub dmem: (usize, usize),
    /// The DMEM mapper.
    pub dmem_mapper: DmemMapper,
}

/// `FALCON_APPLICATION_INTERFACE_DMEM_MAPPER_V3`: where FWSEC takes its command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmemMapper {
    /// Where it is in DMEM.
    pub dmem_offset: u32,
    /// Where it is, from the ROM's start.
    pub rom_offset: usize,
    /// Its version.
    pub version: u16,
    /// Its size field.
    pub size: u16,
    /// The command-in buffer's DMEM offset.
    pub cmd_in_buffer_offset: u32,
    /// The command-in buffer's size.
    pub cmd_in_buffer_size: u32,
    /// The command as built (patched to FRTS 0x15 or SB 0x19 before a run).
    pub init_cmd: u32,
    /// `ucode_cmd_mask0`, as the ucode has it (not a mask of command numbers: a real GA104's
    /// is 0x44000).
    pub cmd_mask0: u32,
}

/// Reads the table at `expansion + ptr`.
pub fn table(rom: &[u8], expansion: usize, ptr: u32) -> Result<UcodeTable, VbiosError> {
    let b = Bytes(rom);
    let offset = add("falcon ucode table", expansion, usize_of(ptr), rom.len())?;
    let h = b.slice("falcon ucode table header", offset, TABLE_HEADER_SIZE)?;
    let (version, header_size, entry_size, count) = (h[0], h[1], h[2], h[3]);
    if version != TABLE_VERSION
        || usize::from(header_size) < TABLE_HEADER_SIZE
        || usize::from(entry_size) < ENTRY_SIZE
    {
        return Err(VbiosError::UcodeTableHeader {
            version,
            header_size,
            entry_size,
        });
    }
    let first = offset + usize::from(header_size);
    let need = usize::from(count) * usize::from(entry_size);
    if first.checked_add(need).is_none_or(|e| e > rom.len()) {
        return Err(VbiosError::UcodeTableOutside {
            offset,
            count,
            entry_size,
            len: rom.len(),
        });
    }
    // Bounded: `count` is a byte.
    let entries = (0..usize::from(count))
        .map(|i| {
            let e = first + i * usize::from(entry_size);
            let desc_ptr = b.u32("falcon ucode table entry", e + 2)?;
            let app_id = b.u8("falcon ucode table entry", e)?;
            // An unused slot (application id 0 or no descriptor pointer, as real TU10x-AD10x
            // ROMs have: docs/vbios/README.md) has no descriptor; reading one at the
            // expansion ROM's start would show its first bytes as one. OpenRM reads only the
            // descriptor of the entry it picks (`kgspParseFwsecUcodeFromVbiosImg`).
            // CAST: bits 15:8 and 31:16 of a u32.
            let desc = (app_id != 0 && desc_ptr != 0)
                .then(|| expansion.checked_add(usize_of(desc_ptr)))
                .flatten()
                .and_then(|o| b.u32("", o).ok())
                .filter(|v| v & 1 != 0)
                .map(|v| ((v >> 8) as u8, (v >> 16) as u16));
            Ok(UcodeEntry {
                app_id,
                target_id: b.u8("falcon ucode table entry", e + 1)?,
                desc_ptr,
                desc,
            })
        })
        .collect::<Result<_, VbiosError>>()?;
    Ok(UcodeTable {
        offset,
        version,
        header_size,
        entry_size,
        desc_version: h[4],
        desc_size: h[5],
        entries,
    })
}

/// FWSEC from the table: the first production or license entry (OpenRM on a production
/// board), else the first debug one; `None` without any.
pub fn fwsec(
    rom: &[u8],
    expansion: usize,
    table: &UcodeTable,
) -> Result<Option<FwsecInfo>, VbiosError> {
    let pick = |ids: &[u8]| table.entries.iter().position(|e| ids.contains(&e.app_id));
    let Some(i) = pick(&[APPID_FWSEC_PROD, APPID_FWSEC_LIC]).or_else(|| pick(&[APPID_FWSEC_DBG]))
    else {
        return Ok(None);
    };
    // PANIC: `i` came from `position` over these entries.
    fwsec_at(rom, expansion, i, &table.entries[i]).map(Some)
}

/// Rounds `v` up to 256 (`RM_ALIGN_UP(StoredSize, 256)`), `None` on overflow.
fn align256(v: u32) -> Option<u64> {
    Some((u64::from(v) + 255) & !255)
}

fn range(what: &'static str, offset: u64, len: u64, limit: u64) -> Result<(), VbiosError> {
    if offset.checked_add(len).is_some_and(|e| e <= limit) {
        Ok(())
    } else {
        Err(VbiosError::UcodeRange {
            what,
            offset,
            len,
            limit,
        })
    }
}

fn fwsec_at(
    rom: &[u8],
    expansion: usize,
    entry: usize,
    e: &UcodeEntry,
) -> Result<FwsecInfo, VbiosError> {
    let b = Bytes(rom);
    let desc_offset = add(
        "FWSEC descriptor",
        expansion,
        usize_of(e.desc_ptr),
        rom.len(),
    )?;
    let v_desc = b.u32("FWSEC descriptor header", desc_offset)?;
    if v_desc & 1 == 0 {
        return Err(VbiosError::DescVersionUnavailable {
            offset: desc_offset,
        });
    }
    // CAST: bits 15:8 and 31:16 of a u32.
    let (version, size) = ((v_desc >> 8) as u8, (v_desc >> 16) as u16);
    let d = |i: usize| b.u32("FWSEC descriptor", desc_offset + 4 * i);
    let ucode_offset = add("FWSEC ucode", desc_offset, usize::from(size), rom.len())?;
    let (desc, signatures, dmem) = match version {
        2 if usize::from(size) >= DESC_V2_SIZE => {
            let v2 = FwsecDescV2 {
                stored_size: d(1)?,
                uncompressed_size: d(2)?,
                virtual_entry: d(3)?,
                interface_offset: d(4)?,
                imem_phys_base: d(5)?,
                imem_load_size: d(6)?,
                imem_virt_base: d(7)?,
                imem_sec_base: d(8)?,
                imem_sec_size: d(9)?,
                dmem_offset: d(10)?,
                dmem_phys_base: d(11)?,
                dmem_load_size: d(12)?,
                alt_imem_load_size: d(13)?,
                alt_dmem_load_size: d(14)?,
            };
            // s_vbiosFillFlcnUcodeFromDescV2: IMEM and DMEM lie within the ROM after the
            // descriptor.
            b.slice("FWSEC IMEM", ucode_offset, usize_of(v2.imem_load_size))?;
            let dmem_at = add(
                "FWSEC DMEM",
                ucode_offset,
                usize_of(v2.dmem_offset),
                rom.len(),
            )?;
            b.slice("FWSEC DMEM", dmem_at, usize_of(v2.dmem_load_size))?;
            let dmem = (dmem_at, usize_of(v2.dmem_load_size));
            (FwsecDesc::V2(v2), None, dmem)
        }
        3 if usize::from(size) >= DESC_V3_SIZE => {
            let h = b.slice("FWSEC descriptor", desc_offset, DESC_V3_SIZE)?;
            let v3 = FwsecDescV3 {
                stored_size: d(1)?,
                pkc_data_offset: d(2)?,
                interface_offset: d(3)?,
                imem_phys_base: d(4)?,
                imem_load_size: d(5)?,
                imem_virt_base: d(6)?,
                dmem_phys_base: d(7)?,
                dmem_load_size: d(8)?,
                engine_id_mask: u16::from_le_bytes([h[36], h[37]]),
                ucode_id: h[38],
                signature_count: h[39],
                signature_versions: u16::from_le_bytes([h[40], h[41]]),
            };
            // s_vbiosFillFlcnUcodeFromDescV3: the 256-aligned stored size lies within the ROM;
            // IMEM, DMEM (after IMEM) and the signature slot within it.
            let total = align256(v3.stored_size).unwrap_or(u64::MAX);
            let total_usize = usize::try_from(total).unwrap_or(usize::MAX);
            b.slice("FWSEC ucode", ucode_offset, total_usize)?;
            let imem = u64::from(v3.imem_load_size);
            range("IMEM", 0, imem, total)?;
            range("DMEM", imem, u64::from(v3.dmem_load_size), total)?;
            range(
                "signature slot (PKCDataOffset)",
                imem + u64::from(v3.pkc_data_offset),
                SIGNATURE_SIZE as u64,
                total,
            )?;
            let room = usize::from(size) - DESC_V3_SIZE;
            if usize::from(v3.signature_count) * SIGNATURE_SIZE > room {
                return Err(VbiosError::Signatures {
                    count: v3.signature_count,
                    room,
                });
            }
            let dmem = (
                ucode_offset + usize_of(v3.imem_load_size),
                usize_of(v3.dmem_load_size),
            );
            (
                FwsecDesc::V3(v3),
                Some((desc_offset + DESC_V3_SIZE, room)),
                dmem,
            )
        }
        _ => return Err(VbiosError::DescVersion { version, size }),
    };
    let interface_offset = match desc {
        FwsecDesc::V2(v) => v.interface_offset,
        FwsecDesc::V3(v) => v.interface_offset,
    };
    // PANIC: both arms checked that `dmem` lies within the ROM.
    let dmem_bytes = &rom[dmem.0..dmem.0 + dmem.1];
    let dmem_mapper = dmem_mapper(dmem_bytes, interface_offset, dmem.0)?;
    Ok(FwsecInfo {
        entry,
        app_id: e.app_id,
        desc_offset,
        desc_size: size,
        desc,
        signatures,
        ucode_offset,
        dmem,
        dmem_mapper,
    })
}

/// Finds the DMEM mapper through the application interface at `interface` in `dmem` (the
/// last entry with id 4, as OpenRM's loop leaves it); `dmem_at` is where DMEM is in the ROM.
pub fn dmem_mapper(dmem: &[u8], interface: u32, dmem_at: usize) -> Result<DmemMapper, VbiosError> {
    // CAST: usize lengths and the small size constants fit u64.
    let limit = dmem.len() as u64;
    let at = u64::from(interface);
    range(
        "application interface header",
        at,
        INTERFACE_HEADER_SIZE as u64,
        limit,
    )?;
    let b = Bytes(dmem);
    let i = usize_of(interface);
    let (version, count) = (b.u8("", i)?, b.u8("", i + 3)?);
    if count < 2 {
        return Err(VbiosError::InterfaceHeader { version, count });
    }
    let entries = at + INTERFACE_HEADER_SIZE as u64;
    let len = u64::from(count) * INTERFACE_ENTRY_SIZE as u64;
    range("application interface entries", entries, len, limit)?;
    // Bounded: `count` is a byte; the entries were checked to lie in DMEM.
    let mut found = None;
    for n in 0..usize::from(count) {
        let e = i + INTERFACE_HEADER_SIZE + n * INTERFACE_ENTRY_SIZE;
        if b.u32("", e)? == INTERFACE_ID_DMEM_MAPPER {
            found = Some(b.u32("", e + 4)?);
        }
    }
    let off = found.ok_or(VbiosError::NoDmemMapper)?;
    range(
        "DMEM mapper",
        u64::from(off),
        DMEM_MAPPER_SIZE as u64,
        limit,
    )?;
    let m = usize_of(off);
    let w = |k: usize| b.u32("", m + k);
    let signature = w(0)?;
    if signature != DMAP_SIGNATURE {
        return Err(VbiosError::DmapSignature { found: signature });
    }
    let mapper = DmemMapper {
        dmem_offset: off,
        rom_offset: dmem_at + m,
        version: b.u16("", m + 4)?,
        size: b.u16("", m + 6)?,
        cmd_in_buffer_offset: w(8)?,
        cmd_in_buffer_size: w(12)?,
        init_cmd: w(DMEM_MAPPER_INIT_CMD)?,
        cmd_mask0: w(52)?,
    };
    // s_vbiosPatchInterfaceData: the command-in buffer starts inside DMEM.
    if u64::from(mapper.cmd_in_buffer_offset) >= limit {
        return Err(VbiosError::UcodeRange {
            what: "command-in buffer",
            offset: u64::from(mapper.cmd_in_buffer_offset),
            len: u64::from(mapper.cmd_in_buffer_size),
            limit,
        });
    }
    Ok(mapper)
}
