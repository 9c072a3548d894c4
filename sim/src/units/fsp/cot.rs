//! The FSP's side of a packet: MCTP and NVDM headers, the chain-of-trust (COT) payload and
//! the reply.
//!
//! Headers (`fsp_mctp_format.h`, `fsp_nvdm_format.h`): dword 0 is the MCTP transport header
//! (SOM 31, EOM 30, SEQ 29:28, TAG 26:24, SEID 23:16), dword 1 the message header (TYPE
//! 6:0 = 0x7e vendor-defined PCI, VENDOR_ID 23:8 = 0x10de, NVDM_TYPE 31:24). OpenRM sends
//! the COT as a single packet (SOM and EOM) to SEID 0 (`kfspNvdmToSeid_GH100`).
//!
//! The COT payload is `NVDM_PAYLOAD_COT` (`kern_fsp_cot_payload.h`), filled by
//! `kfspPrepareBootCommands_GH100` and `kfspSetupGspImages`: every field is checked against
//! what those functions put there for this chip ([`crate::chip::CotFacts`]) and against the
//! real FMC file: the image in DMA memory must hash (SHA-384) to `hash384`, and `hash384`,
//! `publicKey` and `signature` must be the FMC file's `hash`, `publickey` and `signature`
//! sections (zero beyond them).
//!
//! Error codes (`kern_fsp_retval.h`) and what OpenRM makes of them
//! (`kfspErrorCode2NvStatusMap_GH100`): a malformed or mismatching payload gets
//! `FSP_ERR_IFS_ERR_INVALID_DATA` (NV_ERR_INVALID_DATA), a COT while WPR2 is up or after the
//! FMC was started `FSP_ERR_IFS_ERR_INVALID_STATE` (NV_ERR_INVALID_DATA), an NVDM type the
//! model does not serve `FSP_ERR_IFS_ERR_NOT_SUPPORTED` (NV_ERR_GENERIC), and a missing
//! firmware file on the simulator's side `FSP_ERR_IFR_FILE_NOT_FOUND`.
//!
//! WPR2 left up: OpenRM refuses to boot GSP-RM when WPR2 is already up
//! (`_kgspBootGspRm`, kernel_gsp.c: "unexpected WPR2 already up, cannot proceed with booting
//! GSP ... may need to be reset", NV_ERR_INVALID_STATE). On Hopper the FSP's COT command is
//! what sets up FRTS in vidmem (`frtsVidmemOffset`/`Size`), the step that raises WPR2 on
//! earlier chips (`kernel_gsp_frts_tu102.c`, "no initialized WPR2 found"), so the model's FSP
//! refuses the command with `FSP_ERR_IFS_ERR_INVALID_STATE`: the boot fails at once with an
//! error the driver can report, instead of a GSP that never comes up.

use nvbare_gsp::abi::{GspFmcBootParams, NvdmPayloadCot};
use zerocopy::{FromBytes, IntoBytes};

use crate::device::{Cx, Signal};
use crate::firmware;
use crate::memory::{Bus, Target};

/// `NVDM_TYPE_COT`.
pub const NVDM_TYPE_COT: u8 = 0x14;
/// `NVDM_TYPE_FSP_RESPONSE`.
pub const NVDM_TYPE_FSP_RESPONSE: u8 = 0x15;
/// `NVDM_TYPE_CAPS_QUERY` (OpenRM asks it for clock boost, `kfspCheckForClockBoostCapability`).
pub const NVDM_TYPE_CAPS_QUERY: u8 = 0x16;
/// `MCTP_MSG_HEADER_TYPE_VENDOR_PCI`.
pub const MCTP_TYPE_VENDOR_PCI: u32 = 0x7e;
/// `MCTP_MSG_HEADER_VENDOR_ID_NV`.
pub const MCTP_VENDOR_ID_NV: u32 = 0x10de;

/// `FSP_OK`.
pub const FSP_OK: u32 = 0x00;
/// `FSP_ERR_IFS_ERR_INVALID_STATE`.
pub const FSP_ERR_INVALID_STATE: u32 = 0x9e;
/// `FSP_ERR_IFR_FILE_NOT_FOUND`.
pub const FSP_ERR_FILE_NOT_FOUND: u32 = 0x9f;
/// `FSP_ERR_IFS_ERR_NOT_SUPPORTED`.
pub const FSP_ERR_NOT_SUPPORTED: u32 = 0xa0;
/// `FSP_ERR_IFS_ERR_INVALID_DATA`.
pub const FSP_ERR_INVALID_DATA: u32 = 0xa1;

/// `sizeof(NVDM_PAYLOAD_COT)`.
pub const COT_PAYLOAD_BYTES: usize = core::mem::size_of::<NvdmPayloadCot>();
/// The FRTS size OpenRM asks for: `NV_PGC6_AON_FRTS_INPUT_WPR_SIZE_..._1MB_IN_4K << 12`.
pub const FRTS_SIZE: u64 = 0x10_0000;

/// What the FSP does about one packet.
#[derive(Debug)]
pub struct Outcome {
    /// `commandNvdmType` of the reply.
    pub command_type: u32,
    /// `errorCode` of the reply.
    pub error_code: u32,
    /// The GSP-FMC start, when the COT was accepted.
    pub start_fmc: Option<Signal>,
}

/// The reply packet, in dwords: MCTP header (SOM, EOM), message header, then
/// `NVDM_PAYLOAD_COMMAND_RESPONSE { taskId, commandNvdmType, errorCode }`.
pub fn response(nvdm_type: u8, command_type: u32, error_code: u32) -> [u32; 5] {
    [
        (1 << 31) | (1 << 30),
        MCTP_TYPE_VENDOR_PCI | (MCTP_VENDOR_ID_NV << 8) | (u32::from(nvdm_type) << 24),
        0,
        command_type,
        error_code,
    ]
}

/// A COT check that failed: the FSP error code and why.
struct Refusal(u32, String);

fn refuse<T>(code: u32, why: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal(code, why.into()))
}

/// Handles one packet of `packet.len()` bytes read from EMEM offset 0.
pub fn handle(cx: &mut Cx, packet: &[u8], fmc_started: bool) -> Outcome {
    let word = |i: usize| u32::from_le_bytes(packet[i * 4..i * 4 + 4].try_into().unwrap_or([0; 4]));
    let mctp = word(0);
    let msg = word(1);
    // CAST: an 8-bit field.
    let nvdm_type = (msg >> 24) as u8;
    let mut out = Outcome {
        command_type: u32::from(nvdm_type),
        error_code: FSP_OK,
        start_fmc: None,
    };
    let checked = check_headers(mctp, msg).and_then(|()| match nvdm_type {
        NVDM_TYPE_COT => check_cot(cx, &packet[8..], fmc_started),
        other => refuse(
            FSP_ERR_NOT_SUPPORTED,
            format!(
                "NVDM type {other:#x} is not served by the simulated FSP (only COT {NVDM_TYPE_COT:#x})"
            ),
        ),
    });
    match checked {
        Ok(start) => {
            cx.log.info(
                "fsp",
                "chain of trust accepted: GSP-FMC verified, starting it on the GSP",
            );
            out.start_fmc = Some(start);
        }
        Err(Refusal(code, why)) => {
            cx.log
                .warn("fsp", format!("refused with errorCode {code:#x}: {why}"));
            out.error_code = code;
        }
    }
    if let Some(code) = cx.faults.fsp_error {
        cx.log.warn(
            "fault",
            format!("FSP answers errorCode {code:#x} whatever the packet held"),
        );
        out.error_code = code;
        out.start_fmc = None;
    }
    out
}

/// The MCTP transport and message headers of a single-packet NVDM message to SEID 0.
fn check_headers(mctp: u32, msg: u32) -> Result<(), Refusal> {
    let (som, eom, seid) = (mctp >> 31 & 1, mctp >> 30 & 1, mctp >> 16 & 0xff);
    if som != 1 || eom != 1 {
        return refuse(
            FSP_ERR_INVALID_DATA,
            format!(
                "MCTP header {mctp:#010x}: SOM={som} EOM={eom}; the model takes single-packet \
                 messages only (SOM and EOM set, as kfspSendMessage sends a COT)"
            ),
        );
    }
    if seid != 0 {
        return refuse(
            FSP_ERR_INVALID_DATA,
            format!(
                "MCTP header {mctp:#010x}: SEID {seid}, but COT goes to SEID 0 (kfspNvdmToSeid_GH100)"
            ),
        );
    }
    if msg & 0x7f != MCTP_TYPE_VENDOR_PCI || (msg >> 8 & 0xffff) != MCTP_VENDOR_ID_NV {
        return refuse(
            FSP_ERR_INVALID_DATA,
            format!(
                "message header {msg:#010x}: not type 0x7e vendor 0x10de \
                 (kfspValidateMctpPayloadHeader_GH100)"
            ),
        );
    }
    Ok(())
}

/// Whether `len` bytes at bus address `addr` can be read by the device.
fn readable(cx: &Cx, addr: u64, len: usize) -> bool {
    bus_readable(cx.bus, addr, len)
}

/// Whether every byte of `[addr, addr + len)` reaches memory on `bus`: one probe in each
/// 4 KiB page (the granule of DMA mappings) and the last byte, so a hole in the middle of
/// the range is found, not only a missing first or last page.
fn bus_readable(bus: &Bus, addr: u64, len: usize) -> bool {
    const PAGE: u64 = 4096;
    // CAST: usize fits u64 on the simulator's hosts.
    let Some(end) = addr.checked_add(len as u64) else {
        return false;
    };
    let mut probe = [0u8; 1];
    let mut at = addr;
    while at < end {
        if bus.read(Target::Bus(at), &mut probe).is_err() {
            return false;
        }
        at = (at / PAGE + 1) * PAGE;
    }
    len == 0 || bus.read(Target::Bus(end - 1), &mut probe).is_ok()
}

/// `array` (a `u32[96]` of the payload) holds `file` and zeros after it.
fn same_padded(array: &[u8], file: &[u8]) -> bool {
    array.len() >= file.len()
        && &array[..file.len()] == file
        && array[file.len()..].iter().all(|&b| b == 0)
}

/// Checks a COT payload; the GSP-FMC start on success.
fn check_cot(cx: &mut Cx, body: &[u8], fmc_started: bool) -> Result<Signal, Refusal> {
    if cx.world.wpr2.1 != 0 {
        return refuse(
            FSP_ERR_INVALID_STATE,
            format!(
                "WPR2 is up (NV_PFB_PRI_MMU_WPR2_ADDR_HI = {:#x}): a previous boot left secure \
                 state behind; reset the GPU first",
                cx.world.wpr2.1
            ),
        );
    }
    if fmc_started {
        return refuse(
            FSP_ERR_INVALID_STATE,
            "the GSP-FMC was already started since the last reset",
        );
    }
    if !cx.config.bus_master() {
        return refuse(
            FSP_ERR_INVALID_DATA,
            "PCI COMMAND bus mastering is off: the FSP cannot read the FMC by DMA",
        );
    }
    let facts = &cx.spec.cot;
    let invalid = |why: String| refuse::<()>(FSP_ERR_INVALID_DATA, why);
    // tinygrad pads a payload whose length is a multiple of 4 with one more zero dword
    // (`kfsp_send_msg`), which the real FSP accepts: take trailing zeros, nothing else.
    let Some((payload, rest)) = body.split_at_checked(COT_PAYLOAD_BYTES) else {
        return refuse(
            FSP_ERR_INVALID_DATA,
            format!(
                "COT payload of {} bytes, sizeof(NVDM_PAYLOAD_COT) is {COT_PAYLOAD_BYTES}",
                body.len()
            ),
        );
    };
    if rest.len() > 4 || rest.iter().any(|&b| b != 0) {
        invalid(format!(
            "{} bytes follow the COT payload (at most one zero dword of padding is taken)",
            rest.len()
        ))?;
    }
    let cot = NvdmPayloadCot::read_from_bytes(payload)
        .map_err(|_| Refusal(FSP_ERR_INVALID_DATA, "COT payload unreadable".into()))?;
    let (version, size) = (cot.version, cot.size);
    if version != facts.version {
        invalid(format!(
            "COT version {version}, {} takes version {} (cotPayloadVersion)",
            cx.spec.name, facts.version
        ))?;
    }
    if usize::from(size) != COT_PAYLOAD_BYTES {
        invalid(format!(
            "COT size field {size}, sizeof(NVDM_PAYLOAD_COT) is {COT_PAYLOAD_BYTES}"
        ))?;
    }
    let (frts_sys_off, frts_sys_size) = (cot.frts_sysmem_offset, cot.frts_sysmem_size);
    match (frts_sys_off, frts_sys_size) {
        (0, 0) => {}
        (off, size)
            if u64::from(size) == FRTS_SIZE
                && off.is_multiple_of(0x1000)
                && readable(cx, off, FRTS_SIZE as usize) => {}
        (off, size) => invalid(format!(
            "frtsSysmemOffset {off:#x} / frtsSysmemSize {size:#x}: either both 0 or 1 MiB of \
             page-aligned DMA memory (kfspPrepareBootCommands_GH100)"
        ))?,
    }
    let (frts_off, frts_size) = (cot.frts_vidmem_offset, u64::from(cot.frts_vidmem_size));
    if frts_size != FRTS_SIZE {
        invalid(format!(
            "frtsVidmemSize {frts_size:#x}, a cold boot asks for {FRTS_SIZE:#x} (1 MiB of FRTS)"
        ))?;
    }
    // A boot retry moves FRTS down by 2 MiB multiples (kgspGetWprEndMargin).
    if frts_off < facts.frts_vidmem_offset
        || !(frts_off - facts.frts_vidmem_offset).is_multiple_of(0x20_0000)
        || frts_off >= cx.spec.vram_bytes / 2
    {
        invalid(format!(
            "frtsVidmemOffset {frts_off:#x} (from the end of FB): {} expects {:#x} (plus 2 MiB \
             multiples on a retry)",
            cx.spec.name, facts.frts_vidmem_offset
        ))?;
    }
    let fmc_addr = cot.gsp_fmc_sysmem_offset;
    let boot_params = cot.gsp_boot_args_sysmem_offset;
    for (what, addr) in [
        ("gspFmcSysmemOffset", fmc_addr),
        ("gspBootArgsSysmemOffset", boot_params),
    ] {
        if addr == u64::MAX || !addr.is_multiple_of(0x1000) {
            invalid(format!(
                "{what} {addr:#x} is not a page-aligned bus address (all ones: GSP-FMC disabled)"
            ))?;
        }
    }
    if !readable(cx, boot_params, core::mem::size_of::<GspFmcBootParams>()) {
        invalid(format!(
            "gspBootArgsSysmemOffset {boot_params:#x}: the FSP cannot read GSP_FMC_BOOT_PARAMS there"
        ))?;
    }
    let file = firmware::load(cx.firmware_dir, cx.spec.name, "fmc").map_err(|e| {
        Refusal(
            FSP_ERR_FILE_NOT_FOUND,
            format!("the simulator cannot check the FMC: {e}"),
        )
    })?;
    let fmc = file.fmc().map_err(|e| {
        Refusal(
            FSP_ERR_FILE_NOT_FOUND,
            format!("the simulator cannot check the FMC: {e}"),
        )
    })?;
    // Copies: the fields of a packed struct cannot be borrowed.
    let (hash, public_key, signature) = (cot.hash384, cot.public_key, cot.signature);
    let (hash, public_key, signature) =
        (hash.as_bytes(), public_key.as_bytes(), signature.as_bytes());
    if hash != fmc.hash {
        invalid(format!(
            "hash384 is not the `hash` section of {}",
            file.path.display()
        ))?;
    }
    if fmc.public_key.len() != facts.public_key_bytes || !same_padded(public_key, fmc.public_key) {
        invalid(format!(
            "publicKey is not the {}-byte `publickey` section of {} followed by zeros",
            facts.public_key_bytes,
            file.path.display()
        ))?;
    }
    if fmc.signature.len() != facts.signature_bytes || !same_padded(signature, fmc.signature) {
        invalid(format!(
            "signature is not the {}-byte `signature` section of {} followed by zeros",
            facts.signature_bytes,
            file.path.display()
        ))?;
    }
    let mut image = vec![0u8; fmc.image.len()];
    cx.bus
        .read(Target::Bus(fmc_addr), &mut image)
        .map_err(|e| Refusal(FSP_ERR_INVALID_DATA, format!("reading the FMC image: {e}")))?;
    if firmware::sha384(&image) != *hash {
        invalid(format!(
            "SHA-384 of the {} bytes at gspFmcSysmemOffset {fmc_addr:#x} is not hash384: the \
             FMC image in memory is not the `image` section",
            image.len()
        ))?;
    }
    Ok(Signal::GspFmcStarted {
        boot_params,
        frts_vidmem: (frts_off, frts_size),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::bus_readable;
    use crate::memory::{Bus, SysMem, Vram};

    #[test]
    fn a_hole_in_the_middle_of_a_range_makes_it_unreadable() {
        let bus = Bus::new(
            Arc::new(Vram::new(1 << 20).unwrap()),
            Arc::new(SysMem::new()),
            (0x80_0000_0000, 1 << 20),
        );
        bus.set_bus_master(true);
        let a = bus.sysmem.alloc(0x2000).unwrap();
        let b = bus.sysmem.alloc(0x2000).unwrap();
        assert!(b.bus > a.bus + 0x2000, "a guard lies between them");
        assert!(bus_readable(&bus, a.bus, 0x2000));
        assert!(bus_readable(&bus, a.bus + 0x1fff, 1));
        // First and last byte are mapped, the guard between them is not.
        let whole = b.bus + 0x2000 - a.bus;
        assert!(!bus_readable(&bus, a.bus, whole as usize));
        assert!(!bus_readable(&bus, a.bus, 0x2001), "one byte past the end");
        assert!(!bus_readable(&bus, u64::MAX, 2), "wraps the bus");
        assert!(bus_readable(&bus, 0x1234, 0));
    }
}
