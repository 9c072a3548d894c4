//! Identity and the always-there registers: `NV_PMC_BOOT_0` / `_42`, the usable VRAM size,
//! WPR2, the GPU timer (PTIMER and the usermode copy of it) and the PRAMIN window onto VRAM.
//!
//! Addresses: `nv_ref.h` (PMC_BOOT_0 0x0, PMC_BOOT_42 0xa00), `dev_fb.h` of each chip
//! (`NV_PFB_PRI_MMU_WPR2_ADDR_LO/HI` 0x1fa824/0x1fa828), `dev_fbpa.h`/`dev_fb.h`
//! (`NV_USABLE_FB_SIZE_IN_MB` 0x1183a4), `dev_timer.h` (`NV_PTIMER_TIME_0/1` 0x9400/0x9410),
//! `clc361.h` (`NVC361_TIME_0/1` at usermode + 0x80/0x84, usermode at 0xbb0000 via
//! `dev_vm.h`), `dev_ram.h` (`NV_PRAMIN` 0x700000..0x7fffff), `pri_nv_xal_ep.h`
//! (`NV_XAL_EP_BAR0_WINDOW` 0x10fd40 on Hopper and later; BASE = VRAM address >> 16).

use crate::chip::ChipSpec;
use crate::device::{Cx, Unit};
use crate::memory::Target;

/// `NV_PMC_BOOT_0`.
pub const PMC_BOOT_0: u32 = 0x0000_0000;
/// `NV_PMC_BOOT_42`.
pub const PMC_BOOT_42: u32 = 0x0000_0a00;
/// `NV_USABLE_FB_SIZE_IN_MB`.
pub const USABLE_FB_SIZE_IN_MB: u32 = 0x0011_83a4;
/// `NV_PFB_PRI_MMU_WPR2_ADDR_LO`.
pub const WPR2_ADDR_LO: u32 = 0x001f_a824;
/// `NV_PFB_PRI_MMU_WPR2_ADDR_HI`.
pub const WPR2_ADDR_HI: u32 = 0x001f_a828;
/// `NV_PTIMER_TIME_0` (bits 31:5 of the ns timer; 4:0 read as zero).
pub const PTIMER_TIME_0: u32 = 0x0000_9400;
/// `NV_PTIMER_TIME_1` (bits 60:32).
pub const PTIMER_TIME_1: u32 = 0x0000_9410;
/// Usermode region (`NV_VIRTUAL_FUNCTION_FULL_PHYS_OFFSET` + `NV_VIRTUAL_FUNCTION`).
pub const USERMODE: u32 = 0x00bb_0000;
/// `NVC361_TIME_0` in the usermode region.
pub const USERMODE_TIME_0: u32 = USERMODE + 0x80;
/// `NVC361_TIME_1` in the usermode region.
pub const USERMODE_TIME_1: u32 = USERMODE + 0x84;
/// `NV_PRAMIN`: the 1 MiB BAR0 window onto VRAM.
pub const PRAMIN: u32 = 0x0070_0000;
/// Size of the PRAMIN window.
pub const PRAMIN_SIZE: u32 = 0x0010_0000;
/// `NV_XAL_EP_BAR0_WINDOW` (Hopper and later).
pub const XAL_EP_BAR0_WINDOW: u32 = 0x0010_fd40;
/// `NV_PBUS_BAR0_WINDOW` (Turing to Ada): BASE 23:0 = VRAM address >> 16, as
/// `NV_XAL_EP_BAR0_WINDOW` later. No published header gives the address; nouveau writes
/// 0x001700 (`nvkm/subdev/instmem/nv50.c`, `nv50_instobj_acquire`'s window moves), and
/// OpenRM's `kbusSetBAR0WindowVidOffset_GM107` uses `NV_PBUS_BAR0_WINDOW`.
pub const PBUS_BAR0_WINDOW: u32 = 0x0000_1700;

/// The WPR2 a crashed previous run leaves up (lo, hi): a non-zero `ADDR_HI`.
pub const WPR2_LEFT_UP: (u32, u32) = (0x0008_f000, 0x0008_f100);

/// The identity unit.
#[derive(Debug)]
pub struct Identity {
    /// PRAMIN window base (VRAM address >> 16).
    window: u32,
}

impl Identity {
    /// Power-on state for `spec`.
    pub fn new(_spec: &ChipSpec) -> Identity {
        Identity { window: 0 }
    }

    fn pramin_target(&self, offset: u32) -> Target {
        Target::Vram((u64::from(self.window) << 16) + u64::from(offset - PRAMIN))
    }
}

impl Unit for Identity {
    fn name(&self) -> &'static str {
        "identity"
    }

    fn claims(&self, spec: &ChipSpec, offset: u32) -> bool {
        matches!(
            offset,
            PMC_BOOT_0
                | PMC_BOOT_42
                | USABLE_FB_SIZE_IN_MB
                | WPR2_ADDR_LO
                | WPR2_ADDR_HI
                | PTIMER_TIME_0
                | PTIMER_TIME_1
                | USERMODE_TIME_0
                | USERMODE_TIME_1
                | XAL_EP_BAR0_WINDOW
        ) || (PRAMIN..PRAMIN + PRAMIN_SIZE).contains(&offset)
            || (offset == PBUS_BAR0_WINDOW && spec.booter.is_some())
    }

    fn read(&mut self, cx: &mut Cx, offset: u32) -> u32 {
        match offset {
            PMC_BOOT_0 => cx.spec.pmc_boot_0,
            PMC_BOOT_42 => cx.spec.pmc_boot_42,
            // CAST: VRAM sizes in MiB fit 32 bits.
            USABLE_FB_SIZE_IN_MB => (cx.spec.vram_bytes >> 20) as u32,
            WPR2_ADDR_LO => cx.world.wpr2.0,
            WPR2_ADDR_HI => cx.world.wpr2.1,
            // CAST: the low and high words of the 64-bit timer.
            PTIMER_TIME_0 => (cx.now_ns as u32) & !0x1f,
            PTIMER_TIME_1 | USERMODE_TIME_1 => (cx.now_ns >> 32) as u32,
            USERMODE_TIME_0 => cx.now_ns as u32,
            XAL_EP_BAR0_WINDOW | PBUS_BAR0_WINDOW => self.window,
            _ => {
                let at = self.pramin_target(offset & !3);
                match cx.bus.read_u32(at) {
                    Ok(v) => v,
                    Err(e) => {
                        cx.log.warn("identity", format!("PRAMIN read: {e}"));
                        u32::MAX
                    }
                }
            }
        }
    }

    fn write(&mut self, cx: &mut Cx, offset: u32, value: u32) {
        match offset {
            XAL_EP_BAR0_WINDOW => self.window = value & 0x003f_ffff,
            // BASE 23:0; TARGET 25:24 (0 = VRAM) is kept out: the window only reaches VRAM.
            PBUS_BAR0_WINDOW => self.window = value & 0x00ff_ffff,
            o if (PRAMIN..PRAMIN + PRAMIN_SIZE).contains(&o) => {
                let at = self.pramin_target(o & !3);
                if let Err(e) = cx.bus.write_u32(at, value) {
                    cx.log.warn("identity", format!("PRAMIN write: {e}"));
                }
            }
            _ => cx.log.warn(
                "identity",
                format!("write of {value:#x} to read-only register {offset:#x} ignored"),
            ),
        }
    }
}
