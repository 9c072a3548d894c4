//! A clock from the time-stamp counter. Its frequency comes from CPUID leaf 0x15 (crystal
//! clock and TSC/crystal ratio) where the CPU reports it, else from counting TSC ticks over
//! 10 ms of the PC's interval timer (PIT channel 2, 1.193182 MHz), which every PC and QEMU
//! machine has: the median of five counts, as a virtual CPU descheduled during one count
//! (TCG on a busy host) skews that count by milliseconds.

use core::arch::x86_64::{__cpuid, _rdtsc};

use nvbare_core::hal::Clock;

use super::port::{inb, outb};

/// The PIT's input clock (Hz).
const PIT_HZ: u64 = 1_193_182;
/// PIT ticks counted: 10 ms.
const PIT_TICKS: u16 = 11_932;
/// Counts whose median is taken.
const COUNTS: usize = 5;

/// The TSC as nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct Tsc {
    hz: u64,
}

fn rdtsc() -> u64 {
    // SAFETY: RDTSC reads a counter; it has no preconditions.
    unsafe { _rdtsc() }
}

impl Tsc {
    /// The TSC, its frequency from CPUID 0x15 or measured against the PIT.
    pub fn new() -> Self {
        let hz = Self::cpuid_hz().unwrap_or_else(|| {
            let mut hz = [0; COUNTS];
            hz.iter_mut().for_each(|h| *h = Self::pit_hz());
            hz.sort_unstable();
            hz[COUNTS / 2]
        });
        Self { hz }
    }

    /// The frequency in Hz.
    pub fn hz(&self) -> u64 {
        self.hz
    }

    fn cpuid_hz() -> Option<u64> {
        // Leaf 0 says how many leaves there are.
        if __cpuid(0).eax < 0x15 {
            return None;
        }
        let l = __cpuid(0x15);
        let (den, num, crystal) = (l.eax, l.ebx, l.ecx);
        (den != 0 && num != 0 && crystal != 0)
            .then(|| u64::from(crystal) * u64::from(num) / u64::from(den))
    }

    /// TSC ticks over [`PIT_TICKS`] of PIT channel 2 in mode 0 (its output, read at port
    /// 0x61 bit 5, rises at the terminal count; the gate is port 0x61 bit 0).
    fn pit_hz() -> u64 {
        let ctl = inb(0x61);
        outb(0x61, (ctl & !0x02) | 0x01);
        outb(0x43, 0b1011_0000);
        let [lo, hi] = PIT_TICKS.to_le_bytes();
        outb(0x42, lo);
        outb(0x42, hi);
        let t0 = rdtsc();
        // TIMEOUT: the count ends after 10 ms; 2^32 polls bound a PIT that never counts.
        for _ in 0..u32::MAX {
            if inb(0x61) & 0x20 != 0 {
                break;
            }
        }
        let ticks = rdtsc() - t0;
        outb(0x61, ctl);
        (ticks * PIT_HZ / u64::from(PIT_TICKS)).max(1)
    }
}

impl Clock for Tsc {
    fn now_ns(&self) -> u64 {
        // CAST: the product fits u128; the quotient fits u64 for centuries of uptime.
        (u128::from(rdtsc()) * 1_000_000_000 / u128::from(self.hz)) as u64
    }

    fn delay_ns(&self, ns: u64) {
        let end = self.now_ns().saturating_add(ns);
        while self.now_ns() < end {
            core::hint::spin_loop();
        }
    }
}
