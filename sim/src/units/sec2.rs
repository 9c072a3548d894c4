//! SEC2, the falcon that runs the booter on the booter path (Turing to Ada): `NV_PSEC`
//! (0x840000..0x843fff, ampere/ga102 `dev_sec_pri.h`; its RISC-V/FALCON2 registers at
//! 0x841000, `dev_falcon_second_pri.h` `NV_FALCON2_SEC_BASE`), modelled by
//! [`FalconCore`]; what a started ucode does is [`booter`]'s.
//!
//! `booter_load` with the WPR meta's address in MAILBOX0/1 raises WPR2 over GSP-RM's
//! carve-out and starts the GSP's RISC-V core ([`Signal::BooterStartedGsp`]); it refuses
//! unless the GSP's RISC-V core is selected and out of reset, as `kgspBootstrapRiscvOSEarly`
//! leaves it (`kflcnReset` then `kflcnRiscvProgramBcr`... CORE_SELECT = RISC-V) with the libos
//! arguments in the GSP's mailboxes. `booter_unload` (MAILBOX0/1 0xff for a normal unload,
//! `kgspExecuteBooterUnloadIfNeeded_TU102`) lowers WPR2 once GSP-RM halted.

use crate::chip::ChipSpec;
use crate::device::{Cx, Signal, Unit};
use crate::units::falcon::booter::{self, BooterKind};
use crate::units::falcon::{Cpu, FalconCore};

/// `NV_PSEC` base.
pub const SEC2_BASE: u32 = 0x0084_0000;
/// IMEM and DMEM of the simulated SEC2 (enough for `booter_load`: 0x8900 bytes of code,
/// 0x6200 of data on GA102).
const IMEM: usize = 64 << 10;
const DMEM: usize = 64 << 10;

/// The SEC2 unit.
#[derive(Debug)]
pub struct Sec2 {
    core: FalconCore,
    /// GSP-RM halted after an unload (or never ran): the unloader may lower WPR2.
    gsp_halted: bool,
}

impl Sec2 {
    /// Power-on state.
    pub fn new(spec: &ChipSpec) -> Sec2 {
        Sec2 {
            core: FalconCore::new("sec2", SEC2_BASE, true, IMEM, DMEM)
                .with_turing(spec.is_turing()),
            gsp_halted: true,
        }
    }

    fn run(&mut self, cx: &mut Cx) {
        let fuse = cx.spec.booter.as_ref().map_or(0, |b| b.sec2_fuse_version);
        let kind = match booter::check_load(cx, &self.core, fuse) {
            Ok(k) => k,
            Err(e) => {
                cx.log.warn("sec2", format!("{e}; SEC2 halts"));
                self.core.halt(e.code);
                return;
            }
        };
        let mb = self.core.mailbox;
        match kind {
            BooterKind::Load => {
                let meta = u64::from(mb[1]) << 32 | u64::from(mb[0]);
                match booter::load(cx, meta) {
                    Ok(wpr) => {
                        cx.world.wpr2 = wpr.registers();
                        cx.log.info(
                            "sec2",
                            format!(
                                "booter_load: WPR meta at {meta:#x} accepted, WPR2 {:#x}..{:#x} \
                                 raised, GSP RISC-V started",
                                wpr.wpr_start, wpr.wpr_end
                            ),
                        );
                        self.gsp_halted = false;
                        cx.signal(Signal::BooterStartedGsp { wpr });
                        self.core.halt(0);
                    }
                    Err(e) => {
                        cx.log.warn("sec2", format!("booter_load: {e}; SEC2 halts"));
                        self.core.halt(e.code);
                    }
                }
            }
            BooterKind::Unload => {
                if mb != [0xff, 0xff] {
                    cx.log.warn(
                        "sec2",
                        format!(
                            "booter_unload with MAILBOX0/1 {:#x}/{:#x}: a normal unload passes \
                             0xff/0xff (suspend and GC6 are not modelled)",
                            mb[0], mb[1]
                        ),
                    );
                    self.core.halt(0xb5);
                } else if !self.gsp_halted {
                    cx.log.warn(
                        "sec2",
                        "booter_unload while GSP-RM runs: unload GSP-RM (UNLOADING_GUEST_DRIVER) first",
                    );
                    self.core.halt(0xb5);
                } else {
                    cx.world.wpr2 = (0, 0);
                    cx.log.info("sec2", "booter_unload: WPR2 lowered");
                    self.core.halt(0);
                }
            }
        }
    }
}

impl Unit for Sec2 {
    fn name(&self) -> &'static str {
        "sec2"
    }

    fn claims(&self, spec: &ChipSpec, offset: u32) -> bool {
        spec.booter.is_some() && self.core.claims(offset)
    }

    fn read(&mut self, cx: &mut Cx, offset: u32) -> u32 {
        self.core.read(cx.now_ns, offset)
    }

    fn write(&mut self, cx: &mut Cx, offset: u32, value: u32) {
        self.core.write(cx, offset, value);
    }

    fn step(&mut self, cx: &mut Cx) -> bool {
        if self.core.take_start() {
            self.run(cx);
            return true;
        }
        debug_assert!(self.core.cpu != Cpu::Started);
        false
    }

    fn signal(&mut self, _cx: &mut Cx, signal: &Signal) {
        if matches!(signal, Signal::GspHalted) {
            self.gsp_halted = true;
        }
    }
}
