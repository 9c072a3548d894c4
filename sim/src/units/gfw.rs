//! What the GPU's own firmware (GFW: devinit and the VBIOS's pre-OS code) leaves for the
//! driver on the booter path (Turing to Ada), and the VBIOS itself:
//! - the PROM window `NV_PROM_DATA` (BAR0 0x300000..0x3fffff, 1 MiB: OpenRM
//!   `s_getBaseBiosMaxSize_TU102`, tinygrad's `prep_ucode` reads it all): the chip's VBIOS
//!   image, built from the documented structures ([`super::falcon::fwsec`]), zeros after it;
//! - GFW boot done (after power-on at once; after a reset once the reboot time,
//!   `FaultPlan::reboot_ns`, has passed, BAR0 answering meanwhile):
//!   `NV_PGC6_AON_SECURE_SCRATCH_GROUP_05_PRIV_LEVEL_MASK` (0x118128)
//!   READ_PROTECTION_LEVEL0 (bit 0) enabled and `NV_PGC6_AON_SECURE_SCRATCH_GROUP_05(0)`
//!   (0x118234) GFW_BOOT_PROGRESS (7:0) = 0xff COMPLETED (ga102 `dev_gc6_island.h` and its
//!   addendum; OpenRM checks both before FWSEC-SB, kernel_gsp_frts_tu102.c lines 529-543,
//!   tinygrad's `wait_for_reset` polls both);
//! - `NV_PGC6_BSI_SECURE_SCRATCH_14` (0x1180f8) BOOT_STAGE_3_HANDOFF (26): set by the booter
//!   when it hands the GSP over (`kgspExecuteSequencerCommand_GA102`'s CORE_RESUME waits for it);
//! - `NV_PBUS_VBIOS_SCRATCH(i)` (0x1400 + 4i, tu102 `dev_bus.h`): FWSEC's statuses
//!   ([`super::falcon::fwsec::SCRATCH_FRTS`], `SCRATCH_SB`), kept in `World::vbios_scratch`;
//! - the ucode-version fuses `NV_FUSE_OPT_FPF_SEC2_UCODE1_VERSION` (0x824140) and
//!   `NV_FUSE_OPT_FPF_GSP_UCODE1_VERSION` (0x8241c0), 16 each, one per ucode id (ga100
//!   `dev_fuse.h`; `kgspReadUcodeFuseVersion_GA100` / `ksec2ReadUcodeFuseVersion_GA100` read
//!   `+ 4 * (ucodeId - 1)` and take the highest set bit plus one): the simulated chip's fuse
//!   version for FWSEC's and the booter's ucode ids, 0 for every other id;
//! - `NV_PBUS_BAR1_BLOCK` (0x1704, tu102 `dev_bus.h`): read back as written (tinygrad
//!   switches BAR1 to physical mode with 0); each write is a bind that `NV_PBUS_BIND_STATUS`
//!   (0x1710) shows pending for 50 µs.

use std::sync::Arc;

use crate::chip::ChipSpec;
use crate::device::{Cx, Unit};
use crate::units::falcon::fwsec::Fwsec;

/// `NV_PROM_DATA(0)`.
pub const PROM: u32 = 0x0030_0000;
/// The PROM window's size.
pub const PROM_SIZE: u32 = 0x0010_0000;
/// `NV_PGC6_AON_SECURE_SCRATCH_GROUP_05_PRIV_LEVEL_MASK`.
pub const GFW_PLM: u32 = 0x0011_8128;
/// `NV_PGC6_AON_SECURE_SCRATCH_GROUP_05(0)`.
pub const GFW_BOOT: u32 = 0x0011_8234;
/// `NV_PGC6_BSI_SECURE_SCRATCH_14`.
pub const BSI_SCRATCH_14: u32 = 0x0011_80f8;
/// `NV_PBUS_VBIOS_SCRATCH(0)`.
pub const VBIOS_SCRATCH: u32 = 0x0000_1400;
/// `NV_FUSE_OPT_FPF_SEC2_UCODE1_VERSION`.
pub const FUSE_SEC2_UCODE1: u32 = 0x0082_4140;
/// `NV_FUSE_OPT_FPF_GSP_UCODE1_VERSION`.
pub const FUSE_GSP_UCODE1: u32 = 0x0082_41c0;
/// `NV_PBUS_BAR1_BLOCK`.
pub const BAR1_BLOCK: u32 = 0x0000_1704;
/// `NV_PBUS_BIND_STATUS` (tu102 `dev_bus.h` gives its fields, BAR1_PENDING 0 and
/// BAR1_OUTSTANDING 1, not its address; nouveau's `tu102_bar_bar1_wait` polls 0x001710 until
/// bits 1:0 clear, as OpenRM's `kbusBar1InstBlkBind_GM107` polls the register).
pub const BIND_STATUS: u32 = 0x0000_1710;
/// How long a BAR1 bind stays pending after the `NV_PBUS_BAR1_BLOCK` write (the simulator's
/// figure, as `units::mmu`'s for the Hopper register).
const BIND_NS: u64 = 50_000;

/// The GFW unit.
#[derive(Debug)]
pub struct Gfw {
    fwsec: Option<Arc<Fwsec>>,
    bar1_block: u32,
    /// When the last BAR1 bind completes.
    bind_done_ns: u64,
}

/// The GSP ucode fuse version FWSEC's ucode id has on this chip (one lower with
/// `FaultPlan::older_fwsec_fuse`).
pub fn fwsec_fuse_version(cx: &Cx) -> u32 {
    let v = cx.spec.booter.as_ref().map_or(0, |b| b.fwsec_fuse_version);
    if cx.faults.older_fwsec_fuse {
        v.saturating_sub(1)
    } else {
        v
    }
}

/// The fuse register value for fuse version `v` (highest set bit + 1 = `v`).
fn fuse_value(v: u32) -> u32 {
    if v == 0 { 0 } else { 1 << (v - 1) }
}

impl Gfw {
    /// Power-on state of `spec`'s chip.
    pub fn new(spec: &ChipSpec) -> Gfw {
        Gfw {
            fwsec: spec
                .booter
                .as_ref()
                .and_then(|_| Fwsec::of(spec))
                .map(Arc::new),
            bar1_block: 0,
            bind_done_ns: 0,
        }
    }
}

impl Unit for Gfw {
    fn name(&self) -> &'static str {
        "gfw"
    }

    fn claims(&self, spec: &ChipSpec, offset: u32) -> bool {
        spec.booter.is_some()
            && ((PROM..PROM + PROM_SIZE).contains(&offset)
                || matches!(
                    offset,
                    GFW_PLM | GFW_BOOT | BSI_SCRATCH_14 | BAR1_BLOCK | BIND_STATUS
                )
                || (VBIOS_SCRATCH..VBIOS_SCRATCH + 0x80).contains(&offset)
                // Turing has no ucode-version fuses (tu102 dev_fuse.h defines no FPF fuse;
                // kgspReadUcodeFuseVersion is the stub returning 0 on TU10x).
                || (!spec.is_turing()
                    && ((FUSE_SEC2_UCODE1..FUSE_SEC2_UCODE1 + 0x40).contains(&offset)
                        || (FUSE_GSP_UCODE1..FUSE_GSP_UCODE1 + 0x40).contains(&offset))))
    }

    fn read(&mut self, cx: &mut Cx, offset: u32) -> u32 {
        let b = cx.spec.booter.as_ref();
        match offset {
            // Devinit lowers the PLM and writes COMPLETED when it is done; until then after a
            // reset both read their reset values.
            GFW_PLM => u32::from(cx.now_ns >= cx.world.gfw_boot_done_ns),
            GFW_BOOT if cx.now_ns >= cx.world.gfw_boot_done_ns => 0xff,
            GFW_BOOT => 0,
            BSI_SCRATCH_14 => u32::from(cx.world.boot_stage_3_handoff) << 26,
            BAR1_BLOCK => self.bar1_block,
            BIND_STATUS if cx.now_ns < self.bind_done_ns => 0b11,
            BIND_STATUS => 0,
            o if (PROM..PROM + PROM_SIZE).contains(&o) => {
                let at = (o & !3) as usize - PROM as usize;
                let rom = self.fwsec.as_ref().map_or(&[][..], |f| &f.vbios.bytes[..]);
                let mut w = [0u8; 4];
                for (i, b) in w.iter_mut().enumerate() {
                    *b = rom.get(at + i).copied().unwrap_or(0);
                }
                u32::from_le_bytes(w)
            }
            o if (VBIOS_SCRATCH..VBIOS_SCRATCH + 0x80).contains(&o) => {
                let i = (o - VBIOS_SCRATCH) / 4;
                cx.world.vbios_scratch.get(&i).copied().unwrap_or(0)
            }
            o if (FUSE_SEC2_UCODE1..FUSE_SEC2_UCODE1 + 0x40).contains(&o) => {
                let id = (o - FUSE_SEC2_UCODE1) / 4 + 1;
                b.filter(|b| b.sec2_ucode_id == id)
                    .map_or(0, |b| fuse_value(b.sec2_fuse_version))
            }
            o => {
                let id = (o - FUSE_GSP_UCODE1) / 4 + 1;
                b.filter(|b| b.fwsec_ucode_id == id)
                    .map_or(0, |_| fuse_value(fwsec_fuse_version(cx)))
            }
        }
    }

    fn write(&mut self, cx: &mut Cx, offset: u32, value: u32) {
        match offset {
            BAR1_BLOCK => {
                self.bar1_block = value;
                self.bind_done_ns = cx.now_ns + BIND_NS;
            }
            o if (VBIOS_SCRATCH..VBIOS_SCRATCH + 0x80).contains(&o) => {
                cx.world.vbios_scratch.insert((o - VBIOS_SCRATCH) / 4, value);
            }
            o => cx.log.warn(
                "gfw",
                format!("write of {value:#x} to {o:#x} ignored: the PROM, GFW scratch and fuses are read-only"),
            ),
        }
    }
}
