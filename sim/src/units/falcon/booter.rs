//! The booter, the signed heavy-secure ucode SEC2 runs on Turing to Ada: `booter_load` checks
//! the WPR meta, extends WPR2 from the FRTS region FWSEC made to GSP-RM's whole carve-out and
//! starts the GSP's RISC-V core on the bootloader; `booter_unload` tears WPR2 down after
//! GSP-RM unloaded.
//!
//! What the boot ROM checks before either runs, against the real firmware file
//! (`nvidia/<chip>/gsp/booter_{load,unload}-570.144.bin`, parsed by
//! `nvbare_gsp::firmware::hs_ucode`):
//! - IMEM holds the application's code (the load header's app 0) as secure code at the
//!   virtual address of its offset in the image, and BOOTVEC is that address
//!   (`s_executeBooterUcode_TU102` loads it so; tinygrad's `execute_hs` the same way);
//! - DMEM holds the OS data (`os_data_offset`, `os_data_size`) with the signature the SEC2
//!   fuse selects at the patch location (`s_patchBooterUcodeSignature`, kernel_gsp_booter.c:
//!   `sigIndex = numSigs - 1 - fuseVer`, the fuse read by `ksec2ReadUcodeFuseVersion_GA100`);
//! - `BROM_PARAADDR(0)` is the patch location inside DMEM, `BROM_ENGIDMASK` and
//!   `BROM_CURR_UCODE_ID` are the file's patch metadata, `MOD_SEL` is RSA3K.
//!
//! On TU10x/GA100 falcons ([`FalconGen::Tu102`]) the booter comes in by PIO instead
//! (`KGSP_FLCN_UCODE_BOOT_DIRECT`, `s_prepareHsFalconDirect`): the OS code (load header's
//! `os_code_offset`/`size`) non-secure at IMEM 0 tagged with its offset, the application's
//! code secure after it tagged with its offset, the patched OS data at DMEM 0, BOOTVEC 0
//! ("start of non-secure code") and `FBIF_CTL.ALLOW_PHYS_NO_CTX` set
//! (`kflcnDisableCtxReq_HAL`); there are no boot-ROM parameter registers to check, and Turing
//! has no ucode fuses (its signature is `numSigs - 1 - 0`).
//!
//! `booter_load` takes the WPR meta's address from MAILBOX0/1 (`kgspExecuteBooterLoad_TU102`
//! puts it there) and checks it as `kgspCalculateFbLayout_TU102` fills it; its result is
//! MAILBOX0: 0 on success (OpenRM and tinygrad test it). The simulator's codes for a refusal
//! are [`BooterError`]'s.

use nvbare_gsp::abi::{GSP_FW_WPR_META_MAGIC, GSP_FW_WPR_META_REVISION, GspFwWprMeta};
use nvbare_gsp::firmware::HsUcode;

use super::{FBIF_CTL, FalconCore, MOD_SEL_RSA3K};
use crate::chip::FalconGen;
use crate::device::Cx;
use crate::firmware;
use crate::memory::Target;
use crate::units::gsp::fmc::{self, FmcStep, WprLayout};

const MIB: u64 = 1 << 20;

/// Which booter ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BooterKind {
    /// `booter_load`.
    Load,
    /// `booter_unload`.
    Unload,
}

impl BooterKind {
    /// The firmware file's name.
    pub fn file(self) -> &'static str {
        match self {
            BooterKind::Load => "booter_load",
            BooterKind::Unload => "booter_unload",
        }
    }
}

/// A refused booter run: the code left in MAILBOX0 and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("booter error {code:#x}: {why}")]
pub struct BooterError {
    /// MAILBOX0 (the simulator's: 0xb0 boot ROM, 0xb1 WPR meta, 0xb2 layout, 0xb3 images,
    /// 0xb4 FRTS, 0xb5 GSP core, 0xb6 firmware missing).
    pub code: u32,
    /// What was wrong.
    pub why: String,
}

fn err<T>(code: u32, why: impl Into<String>) -> Result<T, BooterError> {
    Err(BooterError {
        code,
        why: why.into(),
    })
}

/// The boot ROM's checks of what the driver loaded into SEC2; which booter it is.
pub fn check_load(
    cx: &Cx,
    core: &FalconCore,
    fuse_version: u32,
) -> Result<BooterKind, BooterError> {
    if let Some(e) = &core.dma_error {
        return err(0xb0, format!("a DMA into SEC2 failed: {e}"));
    }
    let mut last = String::new();
    for kind in [BooterKind::Load, BooterKind::Unload] {
        let file = firmware::load(cx.firmware_dir, cx.spec.name, kind.file()).map_err(|e| {
            BooterError {
                code: 0xb6,
                why: e.to_string(),
            }
        })?;
        let hs = HsUcode::parse(&file.bytes).map_err(|e| BooterError {
            code: 0xb6,
            why: format!("{}: {e:?}", file.path.display()),
        })?;
        let Some(app) = hs.apps.first() else {
            return err(0xb6, format!("{} has no application", file.path.display()));
        };
        let code = &hs.image[app.offset as usize..(app.offset + app.size) as usize];
        match core.imem_virtual(app.offset, code.len(), true) {
            Ok(loaded) if loaded == code => {}
            Ok(_) => {
                last = format!("IMEM at {:#x} is not {}'s code", app.offset, kind.file());
                continue;
            }
            Err(e) => {
                last = e;
                continue;
            }
        }
        let lh = &hs.load_header;
        let pio = core.generation == FalconGen::Tu102;
        if pio {
            let (at, len) = (lh.os_code_offset, lh.os_code_size);
            let os = hs
                .image
                .get(at as usize..at as usize + len as usize)
                .ok_or_else(|| BooterError {
                    code: 0xb6,
                    why: format!("{}'s OS code lies outside its image", kind.file()),
                })?;
            if core.imem_virtual(at, os.len(), false).ok().as_deref() != Some(os) {
                return err(
                    0xb0,
                    format!(
                        "IMEM tagged {at:#x} does not hold {}'s OS code (s_prepareHsFalconDirect \
                         loads it non-secure at IMEM 0)",
                        kind.file()
                    ),
                );
            }
            if core.held(FBIF_CTL) & (1 << 7) == 0 {
                return err(
                    0xb0,
                    "FBIF_CTL.ALLOW_PHYS_NO_CTX is clear: kflcnDisableCtxReq_HAL sets it before \
                     s_prepareHsFalconDirect's load",
                );
            }
        }
        let start = if pio { 0 } else { app.offset };
        if core.bootvec != start {
            return err(
                0xb0,
                format!(
                    "BOOTVEC {:#x}, {} starts at {start:#x}",
                    core.bootvec,
                    kind.file()
                ),
            );
        }
        let data =
            &hs.image[lh.os_data_offset as usize..(lh.os_data_offset + lh.os_data_size) as usize];
        let pkc = hs.patch_location - lh.os_data_offset;
        let sig = hs
            .signature_for_fuse_version(fuse_version)
            .ok_or_else(|| BooterError {
                code: 0xb0,
                why: format!(
                    "{} has no signature for fuse version {fuse_version}",
                    kind.file()
                ),
            })?;
        let brom = [
            ("BROM_PARAADDR(0)", core.pkc_offset(), pkc),
            (
                "BROM_ENGIDMASK",
                core.engine_id_mask(),
                hs.meta.engine_id_mask,
            ),
            ("BROM_CURR_UCODE_ID", core.ucode_id(), hs.meta.ucode_id),
            ("MOD_SEL", core.mod_sel(), MOD_SEL_RSA3K),
        ];
        for (name, got, want) in brom.into_iter().filter(|_| !pio) {
            if got != want {
                return err(
                    0xb0,
                    format!("{name} is {got:#x}; {} needs {want:#x}", kind.file()),
                );
            }
        }
        let Some(dmem) = core.dmem.get(..data.len()) else {
            return err(0xb0, "DMEM is smaller than the booter's data");
        };
        let (ps, pe) = (pkc as usize, pkc as usize + sig.len());
        if dmem[ps..pe] != *sig {
            return err(
                0xb0,
                format!(
                    "DMEM {ps:#x}..{pe:#x} does not hold the signature for SEC2 fuse version \
                     {fuse_version}: the boot ROM refuses {}",
                    kind.file()
                ),
            );
        }
        if let Some(i) = (0..data.len()).find(|&i| !(ps..pe).contains(&i) && dmem[i] != data[i]) {
            return err(
                0xb0,
                format!("DMEM byte {i:#x} differs from {}'s data", kind.file()),
            );
        }
        return Ok(kind);
    }
    err(
        0xb0,
        format!("SEC2's IMEM holds no booter the simulator knows: {last}"),
    )
}

/// `booter_load`'s work: the WPR meta at `meta_addr` (from MAILBOX0/1), checked against the
/// chip, the FRTS region WPR2 covers now and the real firmware; WPR2's new layout.
pub fn load(cx: &Cx, meta_addr: u64) -> Result<WprLayout, BooterError> {
    let (lo, hi) = cx.world.wpr2;
    if hi == 0 {
        return err(0xb4, "WPR2 is not up: run FWSEC-FRTS first");
    }
    let frts_region = (
        u64::from(lo >> 4) << 12,
        (u64::from(hi >> 4) << 12) + 0x1000,
    );
    let m: GspFwWprMeta =
        fmc::read_struct(cx, FmcStep::WprMeta, "the WPR meta", Target::Bus(meta_addr)).map_err(
            |e| BooterError {
                code: 0xb1,
                why: e.why,
            },
        )?;
    if m.magic != GSP_FW_WPR_META_MAGIC || m.revision != GSP_FW_WPR_META_REVISION {
        return err(
            0xb1,
            format!(
                "WPR meta magic {:#x} revision {}: GSP_FW_WPR_META_MAGIC {GSP_FW_WPR_META_MAGIC:#x} \
                 revision {GSP_FW_WPR_META_REVISION} (gsp_fw_wpr_meta.h)",
                m.magic, m.revision
            ),
        );
    }
    if (m.frts_offset, m.frts_offset + m.frts_size) != frts_region {
        return err(
            0xb4,
            format!(
                "frtsOffset {:#x} + frtsSize {:#x} is not the FRTS region FWSEC made, \
                 {:#x}..{:#x}",
                m.frts_offset, m.frts_size, frts_region.0, frts_region.1
            ),
        );
    }
    let wpr = layout(cx, &m)?;
    check_images(cx, &m)?;
    Ok(wpr)
}

/// The layout rules of `kgspCalculateFbLayout_TU102` (kernel_gsp_tu102.c, lines 673-830):
/// from the top of FB down, the VGA workspace, FRTS ending at `gspFwWprEnd`, the boot binary
/// (4 KiB aligned), the GSP-RM ELF (64 KiB aligned), the heap (1 MiB aligned), the WPR meta
/// page at `gspFwWprStart` and the non-WPR heap below it; regions in that order, none
/// overlapping. The heap is checked against the registry override's bounds
/// (`GSP_FW_HEAP_SIZE_OVERRIDE_LIBOS2_MIN_MB` 64 .. `_LIBOS3_BAREMETAL_MAX_MB` 280,
/// gsp_fw_heap.h), not one formula: OpenRM and tinygrad size it differently.
fn layout(cx: &Cx, m: &GspFwWprMeta) -> Result<WprLayout, BooterError> {
    let fb = cx.spec.vram_bytes;
    let bad = |why: String| err(0xb2, why);
    if m.fb_size != fb {
        return bad(format!("fbSize {:#x}, FB is {fb:#x}", m.fb_size));
    }
    if m.vga_workspace_offset + m.vga_workspace_size != fb
        || m.gsp_fw_wpr_end > m.vga_workspace_offset
    {
        return bad(format!(
            "VGA workspace {:#x}+{:#x} must end FB and lie above gspFwWprEnd {:#x}",
            m.vga_workspace_offset, m.vga_workspace_size, m.gsp_fw_wpr_end
        ));
    }
    if m.frts_offset + m.frts_size != m.gsp_fw_wpr_end || m.frts_size != MIB {
        return bad(format!(
            "FRTS {:#x}+{:#x} must be 1 MiB ending at gspFwWprEnd {:#x}",
            m.frts_offset, m.frts_size, m.gsp_fw_wpr_end
        ));
    }
    let order = [
        (
            "nonWprHeapOffset",
            m.non_wpr_heap_offset,
            m.non_wpr_heap_size,
            MIB,
        ),
        ("gspFwWprStart (WPR meta)", m.gsp_fw_wpr_start, 0x1000, MIB),
        (
            "gspFwHeapOffset",
            m.gsp_fw_heap_offset,
            m.gsp_fw_heap_size,
            MIB,
        ),
        (
            "gspFwOffset",
            m.gsp_fw_offset,
            m.size_of_radix3_elf,
            0x10000,
        ),
        (
            "bootBinOffset",
            m.boot_bin_offset,
            m.size_of_bootloader,
            0x1000,
        ),
        ("frtsOffset", m.frts_offset, m.frts_size, 0x1000),
    ];
    for w in order.windows(2) {
        let ((a, at, size, _), (b, bt, _, _)) = (w[0], w[1]);
        if at + size > bt {
            return bad(format!("{a} {at:#x} + {size:#x} runs into {b} {bt:#x}"));
        }
    }
    if let Some((name, v, _, align)) = order.iter().find(|(_, v, _, a)| v % a != 0) {
        return bad(format!("{name} {v:#x} is not {align:#x}-aligned"));
    }
    if m.gsp_fw_rsvd_start != m.non_wpr_heap_offset || m.non_wpr_heap_offset == 0 {
        return bad(format!(
            "gspFwRsvdStart {:#x} must be nonWprHeapOffset {:#x} (non-zero)",
            m.gsp_fw_rsvd_start, m.non_wpr_heap_offset
        ));
    }
    if !(64 * MIB..=280 * MIB).contains(&m.gsp_fw_heap_size) {
        return bad(format!(
            "gspFwHeapSize {:#x} is outside 64..280 MiB",
            m.gsp_fw_heap_size
        ));
    }
    Ok(WprLayout {
        non_wpr_heap: m.non_wpr_heap_offset,
        wpr_start: m.gsp_fw_wpr_start,
        heap: m.gsp_fw_heap_offset,
        gsp_fw: m.gsp_fw_offset,
        boot_bin: m.boot_bin_offset,
        frts: m.frts_offset,
        wpr_end: m.gsp_fw_wpr_end,
    })
}

/// The GSP-RM image (radix3), bootloader and signature against the firmware files, as the
/// GSP-FMC checks them on Hopper ([`fmc`]); the signature is this chip family's section.
fn check_images(cx: &Cx, m: &GspFwWprMeta) -> Result<(), BooterError> {
    let spec = cx.spec;
    let io = |e: firmware::FirmwareError| BooterError {
        code: 0xb6,
        why: e.to_string(),
    };
    let img = |e: fmc::FmcError| BooterError {
        code: 0xb3,
        why: e.why,
    };
    let gsp = firmware::load(cx.firmware_dir, spec.name, "gsp").map_err(io)?;
    fmc::check_radix3(cx, m, gsp.section(".fwimage").map_err(io)?).map_err(img)?;
    let boot = firmware::load(cx.firmware_dir, spec.name, "bootloader").map_err(io)?;
    let (desc, image) = boot.bootloader().map_err(io)?;
    if let Some((name, got, want)) = fmc::bootloader_mismatch(m, &desc, image) {
        return err(
            0xb3,
            format!("{name} is {got:#x}, {} says {want:#x}", boot.path.display()),
        );
    }
    fmc::compare(
        cx,
        FmcStep::Bootloader,
        "the bootloader",
        m.sysmem_addr_of_bootloader,
        image,
    )
    .map_err(img)?;
    let section = spec.cot.gsp_signature_section;
    let sig = gsp.section(section).map_err(io)?;
    if m.size_of_signature != sig.len() as u64 {
        return err(
            0xb3,
            format!(
                "sizeOfSignature {:#x}, {section} is {:#x} bytes",
                m.size_of_signature,
                sig.len()
            ),
        );
    }
    fmc::compare(
        cx,
        FmcStep::Signature,
        section,
        m.sysmem_addr_of_signature,
        sig,
    )
    .map_err(img)
}
