//! FSP chain-of-trust boot messages (Hopper, Blackwell): the `NVDM_PAYLOAD_COT` that tells
//! FSP where GSP-FMC and its boot parameters are, the MCTP/NVDM framing of messages to FSP,
//! and the parsing of FSP's command response.
//!
//! Mirrors `kern_fsp_gh100.c`: `kfspPrepareBootCommands_GH100` (payload fields and the FRTS
//! vidmem offset from the end of FB), `kfspSetupGspImages` (hash, signature, public key),
//! `kfspCreateMctpHeader_GH100` / `kfspCreateNvdmHeader_GH100` (`fsp_mctp_format.h`),
//! `kfspSendMessage` (`kern_fsp.c`, single packet), `kfspValidateMctpPayloadHeader_GH100`,
//! `kfspProcessCommandResponse_GH100` and `kfspErrorCode2NvStatusMap_GH100`.

use alloc::vec::Vec;
use core::fmt;

use crate::abi::NvdmPayloadCot;
use crate::firmware::FMC_HASH_LEN;
use zerocopy::{FromZeros, IntoBytes};

/// `NVDM_TYPE_COT`.
pub const NVDM_TYPE_COT: u8 = 0x14;
/// `NVDM_TYPE_FSP_RESPONSE`.
pub const NVDM_TYPE_FSP_RESPONSE: u8 = 0x15;
/// `MCTP_MSG_HEADER_TYPE_VENDOR_PCI`.
pub const MCTP_MSG_TYPE_VENDOR_PCI: u8 = 0x7e;
/// `MCTP_MSG_HEADER_VENDOR_ID_NV`.
pub const MCTP_VENDOR_ID_NV: u16 = 0x10de;
/// `FSP_EMEM_CHANNEL_RM_SIZE`: the largest packet RM may send or receive.
pub const FSP_MAX_PACKET: usize = 1024;
/// `kfspGetExtraReservedMemorySize_GH100`.
pub const FSP_EXTRA_RESERVED: u64 = 4 * 1024;
/// `memmgrGetFBEndReserveSizeEstimate` on GH100 and older (`_GM107`, mem_mgr_gm107.c:
/// `ESTIMATED_RESERVE_FB = 0x200000`).
pub const FB_END_RESERVE_ESTIMATE: u64 = 0x200000;
/// `memmgrGetFBEndReserveSizeEstimate` on Blackwell (`_GB100`, mem_mgr_gb100.c:
/// `ESTIMATED_RESERVE_FB = 0x220000`; OpenRM's generated `g_mem_mgr_nvoc.c` installs it for
/// "GB100 | GB102 | GB10B | GB202 | GB203 | GB205 | GB206 | GB207").
pub const FB_END_RESERVE_ESTIMATE_BLACKWELL: u64 = 0x220000;
/// The PMU reservation at the end of FB on Blackwell (`kpmuReservedMemorySizeGet`: 8 MiB
/// backing store + 16 MiB surfaces + 4 KiB misc, aligned up to 128 KiB). nouveau's r570
/// `r570_wpr_libos3_gb10x` and `r570_wpr_libos3_gb20x` (nvkm/subdev/gsp/rm/r570/rm.c) both
/// set `rsvd_size_pmu = ALIGN(0x0800000 + 0x1000000 + 0x0001000, 0x20000)`; tinygrad sends
/// the same for GB20x.
pub const PMU_RESERVED_BLACKWELL: u32 =
    (0x80_0000 + 0x100_0000 + 0x1000u32).next_multiple_of(0x2_0000);

/// The FSP-side numbers of a COT boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CotParams {
    /// `version`: 1 on GH100, 2 on Blackwell (`cotPayloadVersion`).
    pub version: u16,
    /// `frtsVidmemOffset`: distance of FRTS from the end of FB ([`frts_vidmem_offset`]).
    pub frts_vidmem_offset: u64,
    /// `frtsVidmemSize`: 1 MiB.
    pub frts_vidmem_size: u32,
    /// `gspFmcSysmemOffset`: bus address of the FMC ELF's `image` section.
    pub gsp_fmc_sysmem_addr: u64,
    /// `gspBootArgsSysmemOffset`: bus address of `GSP_FMC_BOOT_PARAMS`.
    pub boot_args_sysmem_addr: u64,
}

/// The FRTS offset from the end of FB that FSP uses (`kfspPrepareBootCommands_GH100`): the
/// chip's end-of-FB reserve estimate ([`FB_END_RESERVE_ESTIMATE`] or
/// [`FB_END_RESERVE_ESTIMATE_BLACKWELL`]), plus, when the PMU reserves memory, 4 KiB extra and
/// the PMU reserve, aligned up to 2 MiB; plus the boot-retry WPR end margin aligned up to
/// 2 MiB.
pub fn frts_vidmem_offset(
    end_reserve_estimate: u64,
    pmu_reserved: u64,
    wpr_end_margin: u64,
) -> u64 {
    let mut off = end_reserve_estimate;
    if pmu_reserved != 0 {
        off = (off + FSP_EXTRA_RESERVED + pmu_reserved).next_multiple_of(0x200000);
    }
    off + wpr_end_margin.next_multiple_of(0x200000)
}

impl CotParams {
    /// GH100: version 1, FRTS 1 MiB at 2 MiB from the end of FB (no PMU reserve).
    pub fn gh100(gsp_fmc_sysmem_addr: u64, boot_args_sysmem_addr: u64) -> Self {
        Self {
            version: 1,
            frts_vidmem_offset: frts_vidmem_offset(FB_END_RESERVE_ESTIMATE, 0, 0),
            frts_vidmem_size: 0x100000,
            gsp_fmc_sysmem_addr,
            boot_args_sysmem_addr,
        }
    }

    /// Blackwell (GB10x and GB20x alike): version 2, the 0x220000 reserve estimate and the
    /// 0x1820000 PMU reserve -> FRTS at 0x1C00000 from the end (nouveau's r570 arithmetic,
    /// `ALIGN(0x200000 + 0x1820000, 2 MiB)`, gives the same offset).
    pub fn blackwell(gsp_fmc_sysmem_addr: u64, boot_args_sysmem_addr: u64) -> Self {
        Self {
            version: 2,
            frts_vidmem_offset: frts_vidmem_offset(
                FB_END_RESERVE_ESTIMATE_BLACKWELL,
                u64::from(PMU_RESERVED_BLACKWELL),
                0,
            ),
            frts_vidmem_size: 0x100000,
            gsp_fmc_sysmem_addr,
            boot_args_sysmem_addr,
        }
    }

    /// GB20x: [`CotParams::blackwell`].
    pub fn gb20x(gsp_fmc_sysmem_addr: u64, boot_args_sysmem_addr: u64) -> Self {
        Self::blackwell(gsp_fmc_sysmem_addr, boot_args_sysmem_addr)
    }

    /// GB10x: [`CotParams::blackwell`].
    pub fn gb10x(gsp_fmc_sysmem_addr: u64, boot_args_sysmem_addr: u64) -> Self {
        Self::blackwell(gsp_fmc_sysmem_addr, boot_args_sysmem_addr)
    }
}

/// Errors building or parsing FSP messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FspError {
    /// Public key or signature larger than its 384-byte field.
    FieldTooLarge { field: &'static str, len: usize },
    /// A message too large for one packet (multi-packet sends are not needed for COT).
    PacketTooLarge { len: usize },
    /// A reply shorter than MCTP + NVDM headers + `NVDM_PAYLOAD_COMMAND_RESPONSE`.
    ReplyTruncated { len: usize },
    /// A reply that is not a single packet (SOM and EOM set).
    NotSinglePacket { mctp: u32 },
    /// A reply whose MCTP message type or vendor id is wrong.
    BadMessageHeader { header: u32 },
    /// A reply of another NVDM type.
    UnexpectedNvdmType { nvdm_type: u8 },
}

impl fmt::Display for FspError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FieldTooLarge { field, len } => {
                write!(
                    f,
                    "FMC {field} of {len} bytes exceeds the 384-byte COT field"
                )
            }
            Self::PacketTooLarge { len } => write!(f, "FSP message of {len} bytes exceeds 1 KiB"),
            Self::ReplyTruncated { len } => write!(f, "FSP reply of {len} bytes is truncated"),
            Self::NotSinglePacket { mctp } => {
                write!(
                    f,
                    "FSP reply MCTP header {mctp:#010x} is not a single packet"
                )
            }
            Self::BadMessageHeader { header } => {
                write!(
                    f,
                    "FSP reply message header {header:#010x} is not NVIDIA vendor PCI"
                )
            }
            Self::UnexpectedNvdmType { nvdm_type } => {
                write!(f, "FSP reply NVDM type {nvdm_type:#x}, expected 0x15")
            }
        }
    }
}

fn fill_words(dst: &mut [u32], src: &[u8], field: &'static str) -> Result<(), FspError> {
    if src.len() > dst.len() * 4 {
        return Err(FspError::FieldTooLarge {
            field,
            len: src.len(),
        });
    }
    for (i, chunk) in src.chunks(4).enumerate() {
        let mut w = [0u8; 4];
        w[..chunk.len()].copy_from_slice(chunk);
        dst[i] = u32::from_le_bytes(w);
    }
    Ok(())
}

/// The `NVDM_PAYLOAD_COT` for a boot: the FMC `hash` (SHA-384 of its `image`), its
/// `publickey` and `signature` sections copied in (zero-padded), FRTS in vidmem only
/// (`frtsSysmemOffset/Size` 0).
///
/// The hash is SHA-384 by type, so a hash of another length does not compile:
///
/// ```compile_fail
/// use nvbare_gsp::fsp::{CotParams, cot_payload};
/// let _ = cot_payload(&CotParams::gh100(0, 0), &[0; 47], &[], &[]);
/// ```
pub fn cot_payload(
    params: &CotParams,
    hash384: &[u8; FMC_HASH_LEN],
    public_key: &[u8],
    signature: &[u8],
) -> Result<NvdmPayloadCot, FspError> {
    let mut p = NvdmPayloadCot::new_zeroed();
    p.version = params.version;
    p.size = core::mem::size_of::<NvdmPayloadCot>() as u16;
    p.gsp_fmc_sysmem_offset = params.gsp_fmc_sysmem_addr;
    p.frts_vidmem_offset = params.frts_vidmem_offset;
    p.frts_vidmem_size = params.frts_vidmem_size;
    p.gsp_boot_args_sysmem_offset = params.boot_args_sysmem_addr;
    let mut hash = [0u32; FMC_HASH_LEN / 4];
    for (w, b) in hash.iter_mut().zip(hash384.chunks_exact(4)) {
        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    p.hash384 = hash;
    let mut key = [0u32; 96];
    fill_words(&mut key, public_key, "publicKey")?;
    p.public_key = key;
    let mut sig = [0u32; 96];
    fill_words(&mut sig, signature, "signature")?;
    p.signature = sig;
    Ok(p)
}

/// The MCTP transport header (`fsp_mctp_format.h`): SOM 31, EOM 30, SEQ 29:28, SEID 23:16.
pub fn mctp_header(som: bool, eom: bool, seid: u8, seq: u8) -> u32 {
    u32::from(som) << 31 | u32::from(eom) << 30 | u32::from(seq & 3) << 28 | u32::from(seid) << 16
}

/// The MCTP message (NVDM) header: type 0x7e in 6:0, vendor 0x10de in 23:8, NVDM type 31:24.
pub fn nvdm_header(nvdm_type: u8) -> u32 {
    u32::from(MCTP_MSG_TYPE_VENDOR_PCI)
        | u32::from(MCTP_VENDOR_ID_NV) << 8
        | u32::from(nvdm_type) << 24
}

/// A single-packet FSP message (`kfspSendMessage`): MCTP header (SOM, EOM, SEID 0, SEQ 0),
/// NVDM header, payload, zero-padded to whole dwords. Written to EMEM dword by dword; the
/// queue tail is `len - 4`.
pub fn frame_message(nvdm_type: u8, payload: &[u8]) -> Result<Vec<u8>, FspError> {
    let len = (8 + payload.len()).next_multiple_of(4);
    if len > FSP_MAX_PACKET {
        return Err(FspError::PacketTooLarge { len });
    }
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&mctp_header(true, true, 0, 0).to_le_bytes());
    out.extend_from_slice(&nvdm_header(nvdm_type).to_le_bytes());
    out.extend_from_slice(payload);
    out.resize(len, 0);
    Ok(out)
}

/// The COT boot message: [`frame_message`] of [`cot_payload`].
pub fn cot_message(payload: &NvdmPayloadCot) -> Result<Vec<u8>, FspError> {
    frame_message(NVDM_TYPE_COT, payload.as_bytes())
}

/// FSP's `NVDM_PAYLOAD_COMMAND_RESPONSE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FspResponse {
    /// `taskId`.
    pub task_id: u32,
    /// `commandNvdmType`: the NVDM type of the command answered (0x14 for COT).
    pub command_nvdm_type: u32,
    /// `errorCode`: `FSP_OK` (0) on success.
    pub error_code: u32,
}

impl FspResponse {
    /// Whether FSP accepted the command.
    pub fn is_ok(&self) -> bool {
        self.error_code == 0
    }

    /// The error's name (`kern_fsp_retval.h`) and the `NV_STATUS` OpenRM maps it to
    /// (`kfspErrorCode2NvStatusMap_GH100`).
    pub fn error_name(&self) -> (&'static str, &'static str) {
        match self.error_code {
            0x00 => ("FSP_OK", "NV_OK"),
            0x9E => ("FSP_ERR_IFS_ERR_INVALID_STATE", "NV_ERR_INVALID_DATA"),
            0x9F => ("FSP_ERR_IFR_FILE_NOT_FOUND", "NV_ERR_OBJECT_NOT_FOUND"),
            0xA0 => ("FSP_ERR_IFS_ERR_NOT_SUPPORTED", "NV_ERR_GENERIC"),
            0xA1 => ("FSP_ERR_IFS_ERR_INVALID_DATA", "NV_ERR_INVALID_DATA"),
            _ => ("unknown FSP error", "NV_ERR_GENERIC"),
        }
    }
}

/// Parses FSP's reply packet as read from EMEM (`MSGQ_TAIL - MSGQ_HEAD + 4` bytes):
/// a single packet with an NVIDIA vendor-PCI message header of type `FSP_RESPONSE`.
pub fn parse_response(packet: &[u8]) -> Result<FspResponse, FspError> {
    if packet.len() < 8 + 12 {
        return Err(FspError::ReplyTruncated { len: packet.len() });
    }
    let word =
        |o: usize| u32::from_le_bytes([packet[o], packet[o + 1], packet[o + 2], packet[o + 3]]);
    let mctp = word(0);
    if mctp >> 30 != 0b11 {
        return Err(FspError::NotSinglePacket { mctp });
    }
    let header = word(4);
    if header & 0x7f != u32::from(MCTP_MSG_TYPE_VENDOR_PCI)
        || (header >> 8) & 0xffff != u32::from(MCTP_VENDOR_ID_NV)
    {
        return Err(FspError::BadMessageHeader { header });
    }
    let nvdm_type = (header >> 24) as u8;
    if nvdm_type != NVDM_TYPE_FSP_RESPONSE {
        return Err(FspError::UnexpectedNvdmType { nvdm_type });
    }
    Ok(FspResponse {
        task_id: word(8),
        command_nvdm_type: word(12),
        error_code: word(16),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frts_offsets_match_gh100_and_blackwell() {
        assert_eq!(frts_vidmem_offset(FB_END_RESERVE_ESTIMATE, 0, 0), 0x200000);
        assert_eq!(PMU_RESERVED_BLACKWELL, 0x1820000);
        // OpenRM: 0x220000 + 0x1000 + 0x1820000 = 0x1A41000 -> 0x1C00000; nouveau's
        // 0x200000 + 0x1820000 = 0x1A20000 -> 0x1C00000; tinygrad's GB202 value.
        assert_eq!(
            frts_vidmem_offset(
                FB_END_RESERVE_ESTIMATE_BLACKWELL,
                PMU_RESERVED_BLACKWELL.into(),
                0
            ),
            0x1C00000
        );
        assert_eq!(
            frts_vidmem_offset(FB_END_RESERVE_ESTIMATE, PMU_RESERVED_BLACKWELL.into(), 0),
            0x1C00000
        );
        assert_eq!(CotParams::gb10x(1, 2), CotParams::gb20x(1, 2));
        // A boot retry's margin adds whole 2 MiB steps.
        assert_eq!(frts_vidmem_offset(FB_END_RESERVE_ESTIMATE, 0, 1), 0x400000);
    }

    #[test]
    fn headers_match_the_notes() {
        assert_eq!(mctp_header(true, true, 0, 0), 0xC000_0000);
        assert_eq!(nvdm_header(NVDM_TYPE_COT), 0x1410_DE7E);
    }

    #[test]
    fn cot_message_is_one_packet_of_868_bytes() {
        let p = cot_payload(
            &CotParams::gh100(0x1000, 0x2000),
            &[7; 48],
            &[1; 384],
            &[2; 384],
        )
        .unwrap();
        assert_eq!(p.as_bytes().len(), 860);
        let m = cot_message(&p).unwrap();
        assert_eq!(m.len(), 868);
        assert_eq!(&m[8..10], &1u16.to_le_bytes());
        assert_eq!(&m[10..12], &860u16.to_le_bytes());
        // A 47-byte hash is now rejected at compile time (see the `compile_fail` example
        // on `cot_payload`).
        assert!(cot_payload(&CotParams::gh100(0, 0), &[0; 48], &[0; 385], &[]).is_err());
    }

    #[test]
    fn response_parsing_checks_headers_and_reports_error_code() {
        let mut r = frame_message(NVDM_TYPE_FSP_RESPONSE, &[0; 12]).unwrap();
        r[12] = 0x14;
        r[16] = 0x9F;
        let resp = parse_response(&r).unwrap();
        assert_eq!((resp.command_nvdm_type, resp.is_ok()), (0x14, false));
        assert_eq!(resp.error_name().0, "FSP_ERR_IFR_FILE_NOT_FOUND");
        assert!(matches!(
            parse_response(&r[..19]),
            Err(FspError::ReplyTruncated { .. })
        ));
        r[7] = 0x14;
        assert!(matches!(
            parse_response(&r),
            Err(FspError::UnexpectedNvdmType { .. })
        ));
        r[0..4].copy_from_slice(&0x8000_0000u32.to_le_bytes());
        assert!(matches!(
            parse_response(&r),
            Err(FspError::NotSinglePacket { .. })
        ));
    }
}
