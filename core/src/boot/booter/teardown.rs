//! The booter path's part of teardown, once GSP-RM halted (`kgspTeardown_TU102`): the GSP
//! falcon reset and FWSEC-SB run ("to put back PreOsApps"), then `booter_unload` on SEC2
//! takes WPR2 down (`kgspExecuteBooterUnloadIfNeeded_TU102`: skipped when WPR2 is already
//! down; WPR2 must be down afterwards). OpenRM goes on to the unloader when FWSEC-SB fails,
//! and so do we; the first error is reported.

use nvbare_gsp::vbios::FwsecDesc;
use nvbare_gsp::vbios::fwsec::FwsecCommand;

use super::{BooterState, fwsec, sec2};
use crate::boot::error::BootErrorKind;
use crate::boot::memory::BootMemory;
use crate::hal::Platform;

/// What the booter path's teardown did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BooterTeardown {
    /// FWSEC-SB ran and reported success.
    pub fwsec_sb: bool,
    /// `booter_unload` ran (WPR2 was up) and WPR2 came down.
    pub booter_unloaded: bool,
}

/// Runs FWSEC-SB and `booter_unload`; returns what ran and the first error.
pub fn run<P: Platform>(
    p: &mut P,
    memory: &mut BootMemory,
    state: &BooterState,
    halt_ns: u64,
) -> (BooterTeardown, Option<BootErrorKind>) {
    let mut done = BooterTeardown::default();
    let mut first = None;
    // FWSEC v2 (Turing, GA100) runs through the generic bootloader; without one SB is
    // skipped.
    if matches!(state.fwsec.desc, FwsecDesc::V3(_)) || !state.generic_bootloader.is_empty() {
        match fwsec::run(
            p,
            memory,
            &state.hal,
            &state.rom,
            &state.fwsec,
            FwsecCommand::Sb,
            &state.generic_bootloader,
            halt_ns,
        ) {
            Ok(()) => done.fwsec_sb = true,
            Err(e) => first = Some(e),
        }
    }
    match sec2::unload(p, memory, &state.hal, &state.booter_unload, halt_ns) {
        Ok(ran) => done.booter_unloaded = ran,
        Err(e) => {
            first.get_or_insert(e);
        }
    }
    (done, first)
}
