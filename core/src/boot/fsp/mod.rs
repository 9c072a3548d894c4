//! The FSP path (Hopper, Blackwell): after the shared identification, the FSP's chain of
//! trust starts GSP-FMC, which raises WPR2 and starts GSP-RM.
//!
//! | step | where | OpenRM |
//! |---|---|---|
//! | reset if WPR2 up, layout, firmware, structures | [`crate::boot`]'s shared stages | `kgspCalculateFbLayout_GH100`, `kfspSetupGspImages` |
//! | FSP ready, COT message, lockdown release | [`cot`] | `kfspSendBootCommands_GH100`, `kgspBootstrap_GH100` |
//! | GSP init, static info | [`crate::boot::gsp_init`], [`crate::boot::static_info`] | `kgspWaitForRmInitDone` |

pub mod cot;

use super::hal::ChipHal;
use super::memory::BootMemory;
use super::report::Timeline;
use super::{
    BootErrorKind, BootImages, BootOptions, Booted, FbLayout, Firmware, Stage, gsp_init, identify,
    static_info, structures, sysmem_flush,
};
use crate::gsp_rpc::{DiagnosticsSource, GspRpc};
use crate::hal::Platform;

/// The FSP path's stages after [`Stage::Identify`], for the chip `hal` names.
pub(super) fn run<P: Platform>(
    p: &mut P,
    hal: ChipHal,
    fw: &Firmware<'_>,
    opts: &BootOptions,
    tl: &mut Timeline,
    memory: &mut BootMemory,
    rpc_slot: &mut Option<GspRpc>,
) -> Result<Booted, BootErrorKind> {
    let t = &opts.timeouts;
    let fsp_boot_ns = t.fsp_boot_ns.unwrap_or(hal.fsp.boot_timeout_ns());

    tl.begin(p.clock(), Stage::Reset);
    let reset = identify::reset_if_wpr2_up(p, hal.chip.arch(), tl, t)?;

    tl.begin(p.clock(), Stage::Layout);
    let layout = FbLayout::read(&*p, &hal)?;

    tl.begin(p.clock(), Stage::FirmwareParse);
    let images = BootImages::parse(fw, &hal, opts.firmware_check)?;
    let (elf, boot) = (
        images.gsp.image.len() as u64,
        images.bootloader.image.len() as u64,
    );
    layout.check_fits(elf, boot)?;

    tl.begin(p.clock(), Stage::Structures);
    sysmem_flush::program(p, memory, hal.chip.arch())?;
    let built = structures::build(p, memory, &images, &layout)?;
    let addresses = built.addresses;
    let diagnostics = DiagnosticsSource::new(built.logs, opts.logging.clone());
    let rpc = rpc_slot.insert(GspRpc::new(built.queues, diagnostics));
    rpc.set_reply_timeout_ns(t.rpc_reply_ns);
    gsp_init::queue_init_rpcs(&*p, hal.chip.arch(), rpc, &opts.registry)?;

    tl.begin(p.clock(), Stage::Fsp);
    cot::wait_ready(&*p, &hal, tl, fsp_boot_ns)?;
    cot::chain_of_trust(
        &*p,
        &hal,
        &images,
        addresses.fmc_image,
        addresses.fmc_boot_params,
        tl,
        t,
    )?;

    tl.begin(p.clock(), Stage::Lockdown);
    cot::wait_released(
        &*p,
        addresses.fmc_boot_params,
        images.bootloader.desc.app_version,
        tl,
        t,
    )?;

    tl.begin(p.clock(), Stage::GspInit);
    gsp_init::wait_init_done(&*p, rpc, tl, t)?;

    tl.begin(p.clock(), Stage::StaticInfo);
    let before = rpc.waited_ns();
    let info = static_info::query(&mut rpc.on(&*p));
    tl.add_waited(rpc.waited_ns() - before);
    let info = info?;
    tl.end(p.clock());
    Ok(Booted {
        chip: hal.chip,
        wpr2: identify::wpr2_bounds(&*p),
        info,
        layout,
        reserved_top: layout.reserved_top(elf, boot),
        reset,
    })
}
