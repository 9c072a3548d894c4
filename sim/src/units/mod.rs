//! The simulated GPU's blocks, one [`Unit`] each.
//!
//! - [`identity`]: chip identity (`PMC_BOOT_0/42`), VRAM size, WPR2, the GPU timer, PRAMIN.
//! - [`mmu`]: translation through the driver's page tables, the TLB, MMU faults.
//! - [`flush`]: the sysmem flush buffer's registers, and the read every system membar makes.
//! - [`fifo`]: doorbells, GPFIFO fetch, pushbuffer methods, host semaphores.
//! - [`ce`]: the copy engine (run by the channels that use it).
//! - [`compute`]: QMD launches, checked per chip; the test kernels' native models.
//! - [`fsp`]: the FSP: EMEM channel, chain of trust, FSP-ready scratch (Hopper, Blackwell).
//! - [`gfw`]: what the GPU's own firmware leaves on the booter path: the VBIOS in the PROM
//!   window, GFW-boot scratch, FWSEC's status scratch, ucode-version fuses (Turing to Ada).
//! - [`falcon`]: a falcon engine's registers, IMEM/DMEM, DMA and boot ROM; FWSEC and the booter.
//! - [`sec2`]: SEC2, which runs the booter (booter path).
//! - [`gsp`]: the GSP: falcon registers, GSP-FMC, GSP-RM and its RM object database.
//!
//! A unit claims BAR0 offsets by address range; the first unit in [`all`]'s order that
//! claims an offset gets it, so the more specific units come first.

pub mod ce;
pub mod compute;
pub mod falcon;
pub mod fifo;
pub mod flush;
pub mod fsp;
pub mod gfw;
pub mod gsp;
pub mod identity;
pub mod mmu;
pub mod sec2;

use crate::chip::{BootModel, ChipSpec};
use crate::device::Unit;

/// Every unit of a `spec` chip in its power-on state, in decode order.
pub fn all(spec: &'static ChipSpec) -> Vec<Box<dyn Unit>> {
    let mut units: Vec<Box<dyn Unit>> = vec![
        Box::new(identity::Identity::new(spec)),
        Box::new(mmu::Mmu::new()),
        Box::new(flush::SysmemFlush::new(spec)),
        Box::new(fifo::Fifo::new()),
    ];
    match spec.boot {
        BootModel::FspChainOfTrust => units.push(Box::new(fsp::Fsp::new(spec))),
        BootModel::Booter => {
            units.push(Box::new(gfw::Gfw::new(spec)));
            units.push(Box::new(sec2::Sec2::new(spec)));
        }
    }
    units.push(Box::new(gsp::Gsp::new(spec)));
    units
}
