//! Running FWSEC on the GSP falcon: FRTS at boot (`kgspBootstrap_TU102` →
//! `kgspExecuteFwsec_TU102`), SB at teardown (`kgspTeardown_TU102`); the VBIOS read through
//! BAR0's PROM window.
//!
//! After FRTS, `NV_VBIOS_FWSECLIC_FRTS_ERR_CODE` (scratch 0x0E, bits 31:16) must be 0,
//! WPR2 must be up and its low end must be the FRTS region's (`frtsOffset >> 12`). After SB,
//! the GFW scratch's PLM must let level 0 read, GFW boot must read completed and
//! `NV_VBIOS_FWSECLIC_SB_ERR_CODE` (scratch 0x15, bits 15:0) must be 0.

use alloc::vec::Vec;

use nvbare_gsp::firmware::GenericBootloader;
use nvbare_gsp::vbios::fwsec::{FwsecCommand, FwsecError, prepare, prepare_v2};
use nvbare_gsp::vbios::{self, FwsecDesc, FwsecInfo, VbiosError};

use super::error::BooterError;
use crate::boot::error::BootErrorKind;
use crate::boot::hal::BooterChipHal;
use crate::boot::memory::{BootMemory, Region};
use crate::boot::structures::alloc_region;
use crate::falcon::hs::{HsBoot, execute};
use crate::falcon::{BromParams, Engine, Falcon};
use crate::hal::{Bar0, Platform};
use crate::regs::fb::{GfwBootProgress, PfbWpr2AddrHi, PfbWpr2AddrLo};
use crate::regs::secure_boot::{
    FRTS_SCRATCH_INDEX, FuseEngine, Gc6SecureScratch05PrivLevelMask, PROM_DATA, PROM_SIZE,
    PbusSwScratch, SB_SCRATCH_INDEX,
};

/// Reads the VBIOS through BAR0's PROM window (`NV_PROM_DATA`), 32 bits at a time, as far
/// as its image chain reaches (read in 4 KiB steps, never past the 1 MiB window).
pub fn read_prom(bar: &dyn Bar0) -> Result<Vec<u8>, VbiosError> {
    const STEP: usize = 4096;
    let limit = PROM_SIZE as usize;
    let mut data: Vec<u8> = Vec::new();
    let mut want = STEP;
    loop {
        while data.len() < want {
            // CAST: data.len() < 1 MiB.
            let word = bar.read32(PROM_DATA + data.len() as u32);
            data.extend_from_slice(&word.to_le_bytes());
        }
        let next = match vbios::rom_extent(&data) {
            Ok(end) if end <= data.len() => {
                data.truncate(end);
                return Ok(data);
            }
            Ok(end) => end,
            Err(VbiosError::Truncated { offset, need, .. }) => offset.saturating_add(need),
            // No ROM signature, or no PC-AT image, yet: it may start further in.
            Err(VbiosError::NoRom { .. } | VbiosError::NoPcAtImage { .. })
                if data.len() < limit =>
            {
                data.len() * 2
            }
            Err(e) => return Err(e),
        };
        // Bounded: `want` grows every turn and stops at the window's end.
        let next = next.next_multiple_of(STEP).max(data.len() + STEP);
        if data.len() >= limit {
            return vbios::rom_extent(&data).map(|_| data);
        }
        want = next.min(limit);
    }
}

/// The fused version of `engine`'s ucode `ucode_id` (0 where the chip has no such fuse).
pub fn fuse_version(bar: &dyn Bar0, hal: &BooterChipHal, engine: FuseEngine, ucode_id: u32) -> u32 {
    hal.booter
        .ucode_fuse_address(engine, ucode_id)
        .map_or(0, |a| bar.read32(a) & 0xffff)
}

fn booter(e: BooterError) -> BootErrorKind {
    BootErrorKind::Booter(e)
}

/// Runs FWSEC with `cmd` on the GSP falcon (reset first), from `rom` (the bytes from the
/// ROM's start) and its parsed `info`, then checks what the command should have done. A
/// version-2 FWSEC (Turing, GA100) runs through `generic_bootloader`.
#[allow(clippy::too_many_arguments)]
pub fn run<P: Platform>(
    p: &mut P,
    memory: &mut BootMemory,
    hal: &BooterChipHal,
    rom: &[u8],
    info: &FwsecInfo,
    cmd: FwsecCommand,
    generic_bootloader: &[u8],
    halt_ns: u64,
) -> Result<(), BootErrorKind> {
    let ucode_id = match info.desc {
        FwsecDesc::V3(d) => u32::from(d.ucode_id),
        FwsecDesc::V2(_) => {
            return run_v2(p, memory, hal, rom, info, cmd, generic_bootloader, halt_ns);
        }
    };
    let fuse = fuse_version(&*p, hal, FuseEngine::Gsp, ucode_id);
    let prepared = prepare(rom, info, cmd, fuse).map_err(|e| booter(BooterError::Fwsec(e)))?;
    let image_bus = alloc_region(p, memory, Region::Fwsec, &prepared.image)?;
    let d = prepared.desc;
    let boot = HsBoot::FromHs {
        image_bus,
        code_offset: 0,
        imem_size: d.imem_load_size,
        imem_pa: d.imem_phys_base,
        imem_va: d.imem_virt_base,
        data_offset: d.imem_load_size,
        dmem_size: d.dmem_load_size,
        dmem_pa: d.dmem_phys_base,
        dmem_va: None,
        brom: BromParams {
            signature_dmem_offset: d.pkc_data_offset,
            engine_id_mask: u32::from(d.engine_id_mask),
            ucode_id: u32::from(d.ucode_id),
        },
    };
    let gsp = Falcon::new(&*p, p.clock(), Engine::Gsp, hal.booter.falcon());
    let step = match cmd {
        FwsecCommand::Frts { .. } => "FWSEC-FRTS on the GSP falcon",
        FwsecCommand::Sb => "FWSEC-SB on the GSP falcon",
    };
    let falcon = |source| booter(BooterError::Falcon { step, source });
    gsp.reset().map_err(falcon)?;
    execute(&gsp, &boot, None, halt_ns).map_err(falcon)?;
    check(&*p, cmd).map_err(booter)
}

/// A version-2 FWSEC through the generic bootloader (`s_prepareHsFalconWithLoader`).
#[allow(clippy::too_many_arguments)]
fn run_v2<P: Platform>(
    p: &mut P,
    memory: &mut BootMemory,
    hal: &BooterChipHal,
    rom: &[u8],
    info: &FwsecInfo,
    cmd: FwsecCommand,
    generic_bootloader: &[u8],
    halt_ns: u64,
) -> Result<(), BootErrorKind> {
    if generic_bootloader.is_empty() {
        return Err(booter(BooterError::Fwsec(FwsecError::NeedsBootloader)));
    }
    let bl = GenericBootloader::parse(generic_bootloader)
        .map_err(|e| booter(BooterError::GenericBootloader(e)))?;
    let prepared = prepare_v2(rom, info, cmd).map_err(|e| booter(BooterError::Fwsec(e)))?;
    let code_bus = alloc_region(p, memory, Region::Fwsec, &prepared.code)?;
    let data_bus = alloc_region(p, memory, Region::Fwsec, &prepared.data)?;
    let boot = HsBoot::WithLoader {
        code_bus,
        data_bus,
        imem_ns: prepared.imem_ns(),
        imem_sec: prepared.imem_sec(),
        data_size: prepared.desc.dmem_load_size,
        loader: bl.code(),
        loader_start_tag: bl.desc.start_tag,
    };
    let gsp = Falcon::new(&*p, p.clock(), Engine::Gsp, hal.booter.falcon());
    let step = "FWSEC (through the generic bootloader) on the GSP falcon";
    let falcon = |source| booter(BooterError::Falcon { step, source });
    gsp.reset().map_err(falcon)?;
    execute(&gsp, &boot, None, halt_ns).map_err(falcon)?;
    check(&*p, cmd).map_err(booter)
}

/// What `kgspExecuteFwsec_TU102` checks after the command.
pub fn check(bar: &dyn Bar0, cmd: FwsecCommand) -> Result<(), BooterError> {
    let scratch = |i| {
        // PANIC: 0x0E and 0x15 are below the 64 scratch words.
        PbusSwScratch::read(&bar, i).unwrap_or_default()
    };
    match cmd {
        FwsecCommand::Frts { offset } => {
            let code = scratch(FRTS_SCRATCH_INDEX).frts_error();
            if code != 0 {
                return Err(BooterError::FrtsFailed { code });
            }
            if PfbWpr2AddrHi::read(&bar).val() == 0 {
                return Err(BooterError::Wpr2NotUp);
            }
            let lo = PfbWpr2AddrLo::read(&bar).val();
            // CAST: FB offsets in 4 KiB units fit the 20-bit field's u32.
            let expected = (offset >> 12) as u32;
            if lo != expected {
                return Err(BooterError::Wpr2Misplaced { lo, expected });
            }
        }
        FwsecCommand::Sb => {
            let sb = |what, code| Err(BooterError::SbFailed { what, code });
            if !Gc6SecureScratch05PrivLevelMask::read(&bar).read_protection_level0() {
                return sb("the GFW scratch's privilege mask was not lowered", 0);
            }
            if GfwBootProgress::read(&bar).progress() != GfwBootProgress::COMPLETED {
                return sb("GFW boot progress is not completed", 0);
            }
            let code = scratch(SB_SCRATCH_INDEX).sb_error();
            if code != 0 {
                return sb("FWSEC-SB reported an error", code);
            }
        }
    }
    Ok(())
}
