//! The sysmem flush buffer: the page every system membar reads.
//!
//! `kern_mem_sys_ga100.c`: "The sysmembar flush does a zero byte read of sysmem if there was
//! a sysmem write since the last flush. The actual memory does have to be valid and allocated
//! at all times because an actual read may be issued." The address comes from the chip's
//! flush registers ([`ChipSpec::sysmem_flush`]), which the driver programs before GSP boots
//! (`kmemsysConstructEngine_IMPL`, nouveau's `flush_page_init`); their reset value is 0.
//!
//! The simulator makes that read on every system membar it models ([`membar`]): GSP-RM's
//! first queue write (its RISC-V stores reach sysmem through the same hub), a TLB invalidate
//! with `SYS_MEMBAR`, a copy-engine semaphore release after copies with `FLUSH_ENABLE`, a
//! QMD's release (the CWD membar), a host semaphore release. A flush address never
//! programmed is bus address 0; one the IOMMU does not map faults, as DMAR faults on a
//! real machine, and the read names the address. Without an IOMMU (`FaultPlan::no_iommu`:
//! tinygrad's remote protocol) bus addresses are physical and the read always lands in RAM.

use crate::chip::ChipSpec;
use crate::device::{Cx, Unit};
use crate::memory::Target;

/// The flush registers as the driver wrote them, per `(HI, LO)` pair.
#[derive(Debug)]
pub struct SysmemFlush {
    pairs: Vec<(u32, u32)>,
}

impl SysmemFlush {
    /// Power-on state: every register 0 (`_ADR_INIT` 0).
    pub fn new(spec: &ChipSpec) -> SysmemFlush {
        SysmemFlush {
            pairs: vec![(0, 0); spec.sysmem_flush.len()],
        }
    }

    /// The address the hub reads, once every pair holds the same non-zero one.
    fn address(&self, shifted: bool) -> Option<u64> {
        let (hi, lo) = *self.pairs.first()?;
        // GA100..AD10x: ADR_39_08 in LO, ADR_63_40 (23:0) in HI (ga100 dev_fb.h).
        let addr = if shifted {
            u64::from(hi & 0xff_ffff) << 40 | u64::from(lo) << 8
        } else {
            u64::from(hi & 0xf_ffff) << 32 | u64::from(lo & 0xffff_ff00)
        };
        (addr != 0 && self.pairs.iter().all(|p| *p == (hi, lo))).then_some(addr)
    }
}

impl Unit for SysmemFlush {
    fn name(&self) -> &'static str {
        "flush"
    }

    fn claims(&self, spec: &ChipSpec, offset: u32) -> bool {
        spec.sysmem_flush
            .iter()
            .any(|&(hi, lo)| offset == hi || offset == lo)
    }

    fn read(&mut self, cx: &mut Cx, offset: u32) -> u32 {
        for (i, &(hi, lo)) in cx.spec.sysmem_flush.iter().enumerate() {
            if offset == hi {
                return self.pairs[i].0;
            }
            if offset == lo {
                return self.pairs[i].1;
            }
        }
        0
    }

    fn write(&mut self, cx: &mut Cx, offset: u32, value: u32) {
        for (i, &(hi, lo)) in cx.spec.sysmem_flush.iter().enumerate() {
            if offset == hi {
                self.pairs[i].0 = value;
            } else if offset == lo {
                self.pairs[i].1 = value;
            }
        }
        cx.world.sysmem_flush = self.address(cx.spec.sysmem_flush_shifted);
        if let Some(a) = cx.world.sysmem_flush {
            cx.log.debug(
                "flush",
                format!("sysmem flush buffer at bus address {a:#x}"),
            );
        }
    }
}

/// The read a system membar makes of the flush buffer, by `who` (for the log): an error
/// naming the address when it was never programmed or the bus (the IOMMU) does not map it.
pub fn membar(cx: &mut Cx, who: &str) -> Result<(), String> {
    // Without an IOMMU, bus addresses are physical: a read outside the host memory the
    // simulator holds lands in some other RAM page and does no harm.
    if cx.faults.no_iommu {
        let addr = cx.world.sysmem_flush.unwrap_or(0);
        if cx.bus.read_u32(Target::Bus(addr)).is_err() {
            cx.log.debug(
                "flush",
                format!("{who}: flush read of physical address {addr:#x} (no IOMMU)"),
            );
        }
        return Ok(());
    }
    let why = match cx.world.sysmem_flush {
        None => format!(
            "{who}: system membar read the sysmem flush buffer at bus address 0x0: the flush \
             registers were never programmed (kmemsysProgramSysmemFlushBuffer; IOMMU fault)"
        ),
        Some(addr) => match cx.bus.read_u32(Target::Bus(addr)) {
            Ok(_) => return Ok(()),
            Err(e) => format!(
                "{who}: system membar read the sysmem flush buffer at bus address {addr:#x}, \
                 which faults: {e} (IOMMU fault)"
            ),
        },
    };
    cx.world.flush_faults += 1;
    cx.log.warn("flush", why.clone());
    Err(why)
}
