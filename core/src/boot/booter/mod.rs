//! The booter path (Turing, Ampere, Ada): after the shared identification, the VBIOS's
//! FWSEC carves out FRTS and raises WPR2 on the GSP falcon, `booter_load` on SEC2 starts
//! GSP-RM on the GSP's RISC-V core, and GSP-RM may ask the host to run CPU sequencer
//! programs, before it reports `GSP_INIT_DONE` and at any time after. Teardown runs FWSEC-SB and `booter_unload`
//! after GSP-RM halted, so WPR2 is down and the next boot needs no reset.
//!
//! | step | where | OpenRM |
//! |---|---|---|
//! | reset if WPR2 up | [`crate::boot::identify`] | `kgspIsWpr2Up_TU102` |
//! | layout | [`gsp::boot::wpr_meta::wpr_meta_ampere_ada`](nvbare_gsp::boot::wpr_meta::wpr_meta_ampere_ada) | `kgspCalculateFbLayout_TU102` |
//! | VBIOS, FWSEC-FRTS | [`fwsec`] | `kgspParseFwsecUcodeFromVbiosImg`, `kgspPrepareForFwsecFrts_TU102`, `kgspExecuteFwsec_TU102` |
//! | GSP into RISC-V, libos args, `booter_load` | [`sec2`] | `kgspBootstrap_TU102`, `kgspProgramLibosBootArgsAddr_TU102`, `kgspExecuteBooterLoad_TU102` |
//! | sequencer (any wait), `GSP_INIT_DONE` | [`sequencer`], [`crate::gsp_rpc`] | `kgspWaitForRmInitDone`, `_kgspProcessRpcEvent`, `kgspExecuteSequencerBuffer_IMPL` |
//! | FWSEC-SB, `booter_unload` | [`teardown`] | `kgspTeardown_TU102`, `kgspExecuteBooterUnloadIfNeeded_TU102` |
//!
//! Falcon control itself is [`crate::falcon`]; what differs by chip, [`crate::boot::hal`]'s
//! [`BooterHal`](crate::boot::hal::BooterHal).

pub mod error;
pub mod fwsec;
pub mod sec2;
pub mod sequencer;
pub mod teardown;

use alloc::vec::Vec;

use nvbare_gsp::abi::RpcEvent;
use nvbare_gsp::boot::wpr_meta::{FmcWprSizes, wpr_meta_ampere_ada};
use nvbare_gsp::firmware::{GspRmImage, RiscvBootloader};
use nvbare_gsp::vbios::fwsec::FwsecCommand;
use nvbare_gsp::vbios::{self, FwsecInfo};
use zerocopy::IntoBytes;

pub use error::{BooterError, BooterUcode};

use super::error::FirmwareFile;
use super::hal::BooterChipHal;
use super::memory::{BootMemory, Region};
use super::report::Timeline;
use super::structures::{alloc_region, build_shared};
use super::{
    BootErrorKind, BootOptions, Booted, FbLayout, Firmware, Stage, Timeouts, gsp_init, identify,
    static_info, sysmem_flush,
};
use crate::falcon::{Engine, Falcon};
use crate::gsp_rpc::{DiagnosticsSource, GspRpc, RpcErrorKind};
use crate::hal::Platform;
use crate::regs::fb::UsableFbSizeInMb;

/// The booter path's files beyond GSP-RM and its bootloader.
#[derive(Clone, Copy, Debug, Default)]
pub struct BooterFirmware<'a> {
    /// `booter_load-570.144.bin`.
    pub booter_load: &'a [u8],
    /// `booter_unload-570.144.bin`.
    pub booter_unload: &'a [u8],
    /// The board's VBIOS (a ROM file, sysfs `rom`); `None` reads BAR0's PROM window.
    pub vbios: Option<&'a [u8]>,
    /// `gen_bootloader-570.144.bin` (Turing, GA100: FWSEC v2 runs through it; empty
    /// elsewhere).
    pub generic_bootloader: &'a [u8],
}

/// What teardown needs of the booter path, kept with the booted GSP-RM.
#[derive(Clone, Debug)]
pub struct BooterState {
    /// The chip's booter blocks.
    pub hal: BooterChipHal,
    /// `booter_unload`.
    pub booter_unload: Vec<u8>,
    /// The ROM (from its start) and FWSEC in it, for FWSEC-SB.
    pub rom: Vec<u8>,
    /// FWSEC as the ROM holds it.
    pub fwsec: FwsecInfo,
    /// The generic bootloader (Turing, GA100).
    pub generic_bootloader: Vec<u8>,
}

fn booter(e: BooterError) -> BootErrorKind {
    BootErrorKind::Booter(e)
}

/// The booter path's stages after [`Stage::Identify`].
#[allow(clippy::too_many_arguments)]
pub(super) fn run<P: Platform>(
    p: &mut P,
    hal: BooterChipHal,
    fw: &Firmware<'_>,
    opts: &BootOptions,
    tl: &mut Timeline,
    memory: &mut BootMemory,
    rpc_slot: &mut Option<GspRpc>,
    state: &mut Option<BooterState>,
) -> Result<Booted, BootErrorKind> {
    let t = &opts.timeouts;
    let chip = hal.chip;
    if fw.booter.booter_load.is_empty() || fw.booter.booter_unload.is_empty() {
        return Err(BootErrorKind::BootPathNotImplemented { chip });
    }

    tl.begin(p.clock(), Stage::Reset);
    let reset = identify::reset_if_wpr2_up(p, chip.arch(), tl, t)?;

    tl.begin(p.clock(), Stage::Layout);
    let mib = UsableFbSizeInMb::read(&*p).raw();
    let fb_size = u64::from(mib) << 20;
    let sizes = hal.booter.layout_sizes(fb_size);

    tl.begin(p.clock(), Stage::FirmwareParse);
    let bad = |file| move |source| BootErrorKind::Firmware { file, chip, source };
    let gsp = GspRmImage::parse(fw.gsp, hal.booter.signature_target(chip))
        .map_err(bad(FirmwareFile::GspRm))?;
    let boot = RiscvBootloader::parse(fw.bootloader).map_err(bad(FirmwareFile::Bootloader))?;
    sec2::parse(BooterUcode::Load, fw.booter.booter_load)?;
    sec2::parse(BooterUcode::Unload, fw.booter.booter_unload)?;
    let rom_bytes = match fw.booter.vbios {
        Some(v) => v.to_vec(),
        None => fwsec::read_prom(&*p).map_err(|e| booter(BooterError::Vbios(e)))?,
    };
    let parsed = vbios::parse(&rom_bytes).map_err(|e| booter(BooterError::Vbios(e)))?;
    let info = parsed.fwsec.clone().ok_or(booter(BooterError::NoFwsec))?;
    let rom = rom_bytes.get(parsed.rom_start..).unwrap_or(&[]).to_vec();

    tl.begin(p.clock(), Stage::Structures);
    sysmem_flush::program(p, memory, chip.arch())?;
    let shared = build_shared(p, memory, &gsp, &boot)?;
    let meta = wpr_meta_ampere_ada(&shared.inputs, &sizes)
        .ok_or(booter(BooterError::LayoutDoesNotFit { fb_size }))?;
    let wpr_meta = alloc_region(p, memory, Region::WprMeta, meta.as_bytes())?;
    let libos_args = shared.libos_args;
    let diagnostics = DiagnosticsSource::new(shared.logs, opts.logging.clone());
    let rpc = rpc_slot.insert(GspRpc::new(shared.queues, diagnostics));
    rpc.set_reply_timeout_ns(t.rpc_reply_ns);
    gsp_init::queue_init_rpcs(&*p, chip.arch(), rpc, &opts.registry)?;
    *state = Some(BooterState {
        hal,
        booter_unload: fw.booter.booter_unload.to_vec(),
        rom: rom.clone(),
        fwsec: info.clone(),
        generic_bootloader: fw.booter.generic_bootloader.to_vec(),
    });

    tl.begin(p.clock(), Stage::Fwsec);
    let frts = FwsecCommand::Frts {
        offset: meta.frts_offset,
    };
    let gen_bl = fw.booter.generic_bootloader;
    fwsec::run(p, memory, &hal, &rom, &info, frts, gen_bl, t.halt_ns)?;

    tl.begin(p.clock(), Stage::Booter);
    {
        let gsp_falcon = Falcon::new(&*p, p.clock(), Engine::Gsp, hal.booter.falcon());
        gsp_falcon.reset_into_riscv().map_err(|source| {
            booter(BooterError::Falcon {
                step: "the GSP's reset into RISC-V",
                source,
            })
        })?;
        // CAST: the low and high halves of the bus address (kgspProgramLibosBootArgsAddr).
        gsp_falcon.set_mailboxes(libos_args as u32, (libos_args >> 32) as u32);
    }
    sec2::load(p, memory, &hal, fw.booter.booter_load, wpr_meta, t.halt_ns)?;
    {
        let gsp_falcon = Falcon::new(&*p, p.clock(), Engine::Gsp, hal.booter.falcon());
        gsp_falcon.set_os_version(boot.desc.app_version);
        if !gsp_falcon.riscv_active() {
            return Err(booter(BooterError::RiscvNotRunning));
        }
    }

    tl.begin(p.clock(), Stage::GspInit);
    rpc.run_sequencers(sequencer::SequencerHost {
        falcons: hal.booter.falcon(),
        resume: sequencer::ResumeArgs {
            libos_args,
            app_version: boot.desc.app_version,
        },
    });
    wait_init_done(&*p, rpc, tl, t)?;

    tl.begin(p.clock(), Stage::StaticInfo);
    let before = rpc.waited_ns();
    let info = static_info::query(&mut rpc.on(&*p));
    tl.add_waited(rpc.waited_ns() - before);
    let info = info?;
    tl.end(p.clock());
    let layout = FbLayout {
        fb_size,
        sizes: FmcWprSizes {
            vga_workspace_size: sizes.vga_workspace_size,
            pmu_reserved_size: 0,
            non_wpr_heap_size: sizes.non_wpr_heap_size,
            frts_size: sizes.frts_size,
            heap_size: meta.gsp_fw_heap_size,
        },
        frts_offset_from_end: fb_size - meta.frts_offset,
    };
    Ok(Booted {
        chip,
        wpr2: identify::wpr2_bounds(&*p),
        info,
        layout,
        reserved_top: fb_size - meta.gsp_fw_rsvd_start,
        reset,
    })
}

/// Links the status queue, rings the doorbell, and waits for `GSP_INIT_DONE`; the channel
/// runs every `GSP_RUN_CPU_SEQUENCER` that comes first (`kgspWaitForRmInitDone`). A program
/// that fails is the booter path's [`BooterError::Sequencer`].
fn wait_init_done<P: Platform>(
    p: &P,
    rpc: &mut GspRpc,
    tl: &mut Timeline,
    timeouts: &Timeouts,
) -> Result<(), BootErrorKind> {
    let before = rpc.waited_ns();
    rpc.watch_riscv(true);
    rpc.arm_doorbell();
    let linked = {
        let mut r = rpc.on(p);
        r.link(timeouts.status_queue_ns).map(|()| r.ring_doorbell())
    };
    let result = linked.and_then(|()| {
        rpc.on(p)
            .wait_event(RpcEvent::GspInitDone, timeouts.init_done_ns)
    });
    let result = result.map_err(|e| match e.kind {
        RpcErrorKind::SequencerFailed(failure) => booter(BooterError::Sequencer(failure)),
        _ => BootErrorKind::Rpc(e),
    });
    tl.add_waited(rpc.waited_ns() - before);
    let done = result?;
    if !done.result.is_ok() {
        return Err(BootErrorKind::InitFailed {
            result: done.result,
        });
    }
    Ok(())
}
