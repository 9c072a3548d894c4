//! A clock from the time-stamp counter. A unikernel knows its TSC frequency; here it comes
//! from CPUID leaf 0x15 (crystal clock and TSC/crystal ratio) where the CPU reports it, else
//! an assumed 2 GHz.

use core::arch::x86_64::{__cpuid, _rdtsc};

use nvbare_core::hal::Clock;

/// The assumed TSC frequency where CPUID does not say.
const FALLBACK_HZ: u64 = 2_000_000_000;

/// The TSC as nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct Tsc {
    hz: u64,
}

impl Tsc {
    /// The TSC's frequency from CPUID 0x15, or [`FALLBACK_HZ`].
    pub fn new() -> Self {
        // Leaf 0 says how many leaves there are.
        let max = __cpuid(0).eax;
        let hz = if max >= 0x15 {
            // Leaf 0x15 exists (checked above).
            let l = __cpuid(0x15);
            match (l.eax, l.ebx, l.ecx) {
                (den, num, crystal) if den != 0 && num != 0 && crystal != 0 => {
                    u64::from(crystal) * u64::from(num) / u64::from(den)
                }
                _ => FALLBACK_HZ,
            }
        } else {
            FALLBACK_HZ
        };
        Self { hz }
    }
}

impl Clock for Tsc {
    fn now_ns(&self) -> u64 {
        // SAFETY: RDTSC reads a counter; it has no preconditions.
        let t = unsafe { _rdtsc() };
        // CAST: the product fits u128; the quotient fits u64 for centuries of uptime.
        (u128::from(t) * 1_000_000_000 / u128::from(self.hz)) as u64
    }

    fn delay_ns(&self, ns: u64) {
        let end = self.now_ns().saturating_add(ns);
        while self.now_ns() < end {
            core::hint::spin_loop();
        }
    }
}
