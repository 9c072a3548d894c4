//! GSP-RM init over the RPC channel (`kgspInitRm_IMPL`, `kgspBootstrap_GH100`):
//!
//! 1. before boot, `GSP_SET_SYSTEM_INFO` and `SET_REGISTRY` go into the command queue,
//!    where GSP-RM finds them when it starts (`kgspQueueAsyncInitRpcs`); their replies are
//!    checked when they arrive;
//! 2. after lockdown release, the status queue is linked (`GspStatusQueueInit`, 4 s), the
//!    doorbell armed and rung, and `GSP_INIT_DONE` awaited while every other event is
//!    handled (`kgspWaitForRmInitDone`); a `GSP_RUN_CPU_SEQUENCER` is an error on this
//!    path.
//!
//! `GspSystemInfo` (`rpcGspSetSystemInfo_v17_00`): the BARs as the platform reports them,
//! the PCI ids from config space, the PCI config mirror at BAR0 0x92000 (the FSP path's;
//! 0x88000 is the booter path's, `kbifGetPciConfigSpacePriMirror`).

use nvbare_gsp::abi::RpcEvent;
use nvbare_gsp::registry::RegistryTable;
use nvbare_gsp::rpc::commands::{Command, SystemInfoInputs};

use super::Timeouts;
use super::error::BootErrorKind;
use super::report::Timeline;
use crate::chip::{Arch, BootPath};
use crate::gsp_rpc::GspRpc;
use crate::hal::{Platform, PlatformError};

/// `pciConfigMirrorBase` on Hopper and Blackwell (`kbifGetPciConfigSpacePriMirror_GH100`).
pub const PCI_CONFIG_MIRROR_FSP: u32 = 0x92000;
/// `pciConfigMirrorBase` on Turing to Ada: `DEVICE_BASE(NV_PCFG)`
/// (`kbifGetPciConfigSpacePriMirror_GM107`).
pub const PCI_CONFIG_MIRROR_PCFG: u32 = 0x88000;

/// PCI config offsets (PCI spec): vendor/device dword, revision byte, subsystem dword.
const CFG_VENDOR_DEVICE: u16 = 0x00;
const CFG_REVISION: u16 = 0x08;
const CFG_SUBSYSTEM: u16 = 0x2c;

/// What `GSP_SET_SYSTEM_INFO` tells GSP-RM about the PCI function.
pub fn system_info(p: &impl Platform, arch: Arch) -> Result<SystemInfoInputs, BootErrorKind> {
    let bar = |index| {
        p.bar_info(index)
            .map(|b| b.bus_addr)
            .ok_or(BootErrorKind::MissingBar { index })
    };
    let cfg = |offset, size| {
        p.config_read(offset, size)
            .map_err(|source: PlatformError| BootErrorKind::Platform {
                step: "reading PCI config space",
                source,
            })
    };
    Ok(SystemInfoInputs {
        bar0: bar(0)?,
        bar1: bar(1)?,
        // BAR3 (instance memory) is 0 where a platform does not expose it.
        bar3: p.bar_info(3).map_or(0, |b| b.bus_addr),
        bdf: p.pci_address().to_bdf(),
        pci_device_id: cfg(CFG_VENDOR_DEVICE, 4)?,
        pci_sub_device_id: cfg(CFG_SUBSYSTEM, 4)?,
        pci_revision_id: cfg(CFG_REVISION, 1)?,
        pci_config_mirror_base: match arch.boot_path() {
            BootPath::FspChainOfTrust => PCI_CONFIG_MIRROR_FSP,
            BootPath::Sec2Booter => PCI_CONFIG_MIRROR_PCFG,
        },
        passthrough: p.in_virtual_machine(),
    })
}

/// Queues `GSP_SET_SYSTEM_INFO` and `SET_REGISTRY` for GSP-RM to find at init.
pub fn queue_init_rpcs(
    p: &impl Platform,
    arch: Arch,
    rpc: &mut GspRpc,
    registry: &RegistryTable,
) -> Result<(), BootErrorKind> {
    let info = system_info(p, arch)?.to_system_info();
    let mut r = rpc.on(p);
    r.send(&Command::set_system_info(&info))
        .map_err(BootErrorKind::Rpc)?;
    r.send(&Command::set_registry(registry))
        .map_err(BootErrorKind::Rpc)?;
    Ok(())
}

/// Links the status queue, rings the doorbell and waits for `GSP_INIT_DONE`.
pub fn wait_init_done(
    p: &impl Platform,
    rpc: &mut GspRpc,
    tl: &mut Timeline,
    timeouts: &Timeouts,
) -> Result<(), BootErrorKind> {
    let before = rpc.waited_ns();
    rpc.watch_riscv(true);
    rpc.arm_doorbell();
    let result = {
        let mut r = rpc.on(p);
        r.link(timeouts.status_queue_ns).and_then(|()| {
            r.ring_doorbell();
            r.wait_event(RpcEvent::GspInitDone, timeouts.init_done_ns)
        })
    };
    tl.add_waited(rpc.waited_ns() - before);
    let done = result.map_err(BootErrorKind::Rpc)?;
    if !done.result.is_ok() {
        return Err(BootErrorKind::InitFailed {
            result: done.result,
        });
    }
    Ok(())
}
