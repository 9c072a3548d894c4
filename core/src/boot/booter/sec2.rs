//! The booter on SEC2: `booter_load` (WPR metadata address in the mailboxes) starts GSP-RM
//! on the GSP's RISC-V core; `booter_unload` takes WPR2 down.
//!
//! Mirrors `kgspExecuteBooterLoad_TU102`, `kgspExecuteBooterUnloadIfNeeded_TU102`,
//! `s_executeBooterUcode_TU102` (`kernel_gsp_booter_tu102.c`) and the image preparation of
//! `kernel_gsp_booter.c`: the signature for SEC2's fuse version copied to the patch
//! location (`s_patchBooterUcodeSignature`: index `count - 1 - fuse` of several); boot from
//! HS (GA10x+: code = application 0, data = the OS data, signature at `patchLoc - dataOffset`
//! in DMEM) or direct (TU10x, GA100: OS code, application code, OS data by PIO).

use nvbare_gsp::firmware::{FirmwareError, HsUcode};

use super::error::{BooterError, BooterUcode};
use super::fwsec::fuse_version;
use crate::boot::error::BootErrorKind;
use crate::boot::hal::BooterChipHal;
use crate::boot::identify::wpr2_up;
use crate::boot::memory::{BootMemory, Region};
use crate::boot::structures::alloc_region;
use crate::falcon::hs::{HsBoot, execute};
use crate::falcon::{BromParams, Engine, Falcon};
use crate::hal::Platform;
use crate::regs::secure_boot::FuseEngine;

fn booter(e: BooterError) -> BootErrorKind {
    BootErrorKind::Booter(e)
}

/// Parses a booter file, with the booter error naming it.
pub fn parse(ucode: BooterUcode, bytes: &[u8]) -> Result<HsUcode<'_>, BootErrorKind> {
    let hs = HsUcode::parse(bytes)
        .map_err(|source| booter(BooterError::BooterFile { ucode, source }))?;
    if hs.apps.is_empty() {
        return Err(booter(BooterError::BooterFile {
            ucode,
            source: FirmwareError::BadField {
                what: "HS load header num_apps",
                value: 0,
                reason: "a booter has one application",
            },
        }));
    }
    Ok(hs)
}

/// Runs `ucode` (the file's bytes) on SEC2 with `mailboxes`; returns SEC2's mailboxes after
/// it halted, `MAILBOX0` checked to be 0.
pub fn run<P: Platform>(
    p: &mut P,
    memory: &mut BootMemory,
    hal: &BooterChipHal,
    ucode: BooterUcode,
    bytes: &[u8],
    mailboxes: (u32, u32),
    halt_ns: u64,
) -> Result<(u32, u32), BootErrorKind> {
    let hs = parse(ucode, bytes)?;
    let fuse = fuse_version(&*p, hal, FuseEngine::Sec2, hs.meta.ucode_id);
    let image = hs
        .signature_for_fuse_version(fuse)
        .and_then(|sig| hs.patched_image(sig))
        .ok_or(booter(BooterError::BooterSignature {
            ucode,
            fuse_version: fuse,
        }))?;
    let from_hs = hal.booter.falcon().boots_from_hs();
    let image_bus = if from_hs {
        Some(alloc_region(p, memory, Region::Booter, &image)?)
    } else {
        None
    };
    let boot = plan(&hs, &image, image_bus);
    let step = match ucode {
        BooterUcode::Load => "booter_load on SEC2",
        BooterUcode::Unload => "booter_unload on SEC2",
    };
    let sec2 = Falcon::new(&*p, p.clock(), Engine::Sec2, hal.booter.falcon());
    let falcon = |source| booter(BooterError::Falcon { step, source });
    sec2.reset().map_err(falcon)?;
    let out = execute(&sec2, &boot, Some(mailboxes), halt_ns).map_err(falcon)?;
    if out.0 != 0 {
        return Err(booter(BooterError::BooterFailed {
            ucode,
            mailbox0: out.0,
        }));
    }
    Ok(out)
}

/// How `hs` (its patched `image`) is loaded: from the image at `image_bus` by DMA (boot from
/// HS) or, without one, by PIO.
pub fn plan<'a>(hs: &HsUcode<'_>, image: &'a [u8], image_bus: Option<u64>) -> HsBoot<'a> {
    let load = hs.load_header;
    // PANIC: parse() checked there is an application.
    let app = hs.apps[0];
    match image_bus {
        Some(image_bus) => HsBoot::FromHs {
            image_bus,
            code_offset: app.offset,
            imem_size: app.size,
            imem_pa: 0,
            imem_va: app.offset,
            data_offset: load.os_data_offset,
            dmem_size: load.os_data_size,
            dmem_pa: 0,
            dmem_va: None,
            brom: BromParams {
                // Parse checked the patch location lies in the image; the data offset is
                // below it in every booter (else the signature would patch code).
                signature_dmem_offset: hs.patch_location.wrapping_sub(load.os_data_offset),
                engine_id_mask: hs.meta.engine_id_mask,
                ucode_id: hs.meta.ucode_id,
            },
        },
        None => HsBoot::Direct {
            image,
            imem_ns: (load.os_code_offset, load.os_code_size),
            imem_sec: (app.offset, app.size),
            data: (load.os_data_offset, load.os_data_size),
        },
    }
}

/// `booter_load` with the WPR metadata at `wpr_meta` (`_kgspGetBooterLoadArgs`, normal boot).
pub fn load<P: Platform>(
    p: &mut P,
    memory: &mut BootMemory,
    hal: &BooterChipHal,
    bytes: &[u8],
    wpr_meta: u64,
    halt_ns: u64,
) -> Result<(), BootErrorKind> {
    // CAST: the low and high halves of the bus address.
    let mb = (wpr_meta as u32, (wpr_meta >> 32) as u32);
    run(p, memory, hal, BooterUcode::Load, bytes, mb, halt_ns).map(|_| ())
}

/// `booter_unload` if WPR2 is up (mailboxes 0xff: a normal unload), then WPR2 must be down.
/// Returns whether it ran.
pub fn unload<P: Platform>(
    p: &mut P,
    memory: &mut BootMemory,
    hal: &BooterChipHal,
    bytes: &[u8],
    halt_ns: u64,
) -> Result<bool, BootErrorKind> {
    if !wpr2_up(&*p) {
        return Ok(false);
    }
    run(
        p,
        memory,
        hal,
        BooterUcode::Unload,
        bytes,
        (0xff, 0xff),
        halt_ns,
    )?;
    if wpr2_up(&*p) {
        return Err(booter(BooterError::Wpr2StillUpAfterUnload));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;

    fn real(chip: &str, file: &str) -> Option<std::vec::Vec<u8>> {
        let dir = std::env::var_os("NVBARE_FIRMWARE_DIR")
            .map(std::path::PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(|h| std::path::PathBuf::from(h).join(".cache/nvbare/firmware"))
            })?;
        std::fs::read(dir.join(std::format!("nvidia/{chip}/gsp/{file}"))).ok()
    }

    /// The pinned booter files load as the falcons need: on GA10x/AD10x by DMA (the code
    /// and data start 256-byte aligned, the signature lies in DMEM), on TU10x/GA100 by PIO
    /// (every part inside the image); every fuse version up to the signature count has a
    /// signature.
    #[test]
    fn real_booter_files_load_as_the_falcons_need() {
        let mut checked = 0;
        for (chip, from_hs) in [
            ("ga102", true),
            ("ad102", true),
            ("tu102", false),
            ("ga100", false),
        ] {
            for ucode in [BooterUcode::Load, BooterUcode::Unload] {
                let Some(bytes) = real(chip, ucode.file_name()) else {
                    std::eprintln!(
                        "skipped: no {chip} {} in the firmware cache",
                        ucode.file_name()
                    );
                    continue;
                };
                let hs = parse(ucode, &bytes).unwrap();
                for fuse in 0..hs.signature_count {
                    assert!(
                        hs.signature_for_fuse_version(fuse).is_some(),
                        "{chip} fuse {fuse}"
                    );
                }
                let sig = hs.signature_for_fuse_version(0).unwrap();
                let image = hs.patched_image(sig).unwrap();
                match plan(&hs, &image, from_hs.then_some(0x1_0000_0000)) {
                    HsBoot::FromHs {
                        image_bus,
                        code_offset,
                        imem_va,
                        data_offset,
                        dmem_size,
                        brom,
                        ..
                    } => {
                        assert_eq!(
                            (image_bus + u64::from(code_offset) - u64::from(imem_va)) % 256,
                            0
                        );
                        assert_eq!(data_offset % 256, 0, "{chip} {ucode:?}");
                        assert!(
                            brom.signature_dmem_offset + hs.signature_size() <= dmem_size,
                            "{chip}"
                        );
                        assert!(brom.ucode_id != 0 && brom.engine_id_mask != 0, "{chip}");
                    }
                    HsBoot::Direct {
                        image,
                        imem_ns,
                        imem_sec,
                        data,
                    } => {
                        for (o, s) in [imem_ns, imem_sec, data] {
                            assert!((o + s) as usize <= image.len(), "{chip} {ucode:?}");
                        }
                        assert_eq!(imem_ns.1 % 4, 0);
                    }
                    HsBoot::WithLoader { .. } => panic!("booters load directly"),
                }
                checked += 1;
            }
        }
        std::eprintln!("checked {checked} real booter files");
    }
}
