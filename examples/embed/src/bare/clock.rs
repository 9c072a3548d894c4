//! A clock from the time-stamp counter. Its frequency comes from CPUID leaf 0x15 (crystal
//! clock and TSC/crystal ratio) where the CPU reports it, else from the ACPI power-management
//! timer (3.579545 MHz, ACPI 6.5 §4.8.3.3): TSC and timer read together at both ends of 50 ms,
//! each pair bracketed by two TSC reads and taken again if the CPU was away in between (a
//! virtual CPU descheduled on a busy host), so the spin between the ends, however it is
//! interrupted, does not skew the count. Without a PM timer: 10 ms of the PIT (channel 2).

use core::arch::x86_64::{__cpuid, _rdtsc};

use nvbare_core::hal::Clock;

use super::port::{inb, inl, outb};

/// The ACPI PM timer's frequency (Hz) and counter mask (24 bits; 32 where the FADT says so,
/// but the low 24 are always there).
const PM_HZ: u64 = 3_579_545;
const PM_MASK: u32 = 0x00ff_ffff;
/// PM timer ticks between the two ends: 50 ms.
const PM_SPAN: u32 = 178_977;
/// The most TSC ticks a bracketed read may take before it is taken again (~40 µs at 2.5 GHz;
/// a port read under TCG takes a few µs).
const BRACKET_TSC: u64 = 100_000;
/// The PIT's input clock (Hz) and the ticks counted: 10 ms.
const PIT_HZ: u64 = 1_193_182;
const PIT_TICKS: u16 = 11_932;

/// The TSC as nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct Tsc {
    hz: u64,
    source: &'static str,
}

fn rdtsc() -> u64 {
    // SAFETY: RDTSC reads a counter; it has no preconditions.
    unsafe { _rdtsc() }
}

impl Tsc {
    /// The TSC, its frequency from CPUID 0x15, else the PM timer at `pm_port`, else the PIT.
    pub fn new(pm_port: Option<u16>) -> Self {
        if let Some(hz) = Self::cpuid_hz() {
            return Self {
                hz,
                source: "CPUID 0x15",
            };
        }
        match pm_port.and_then(Self::pm_hz) {
            Some(hz) => Self {
                hz,
                source: "the ACPI PM timer",
            },
            None => Self {
                hz: Self::pit_hz(),
                source: "the PIT",
            },
        }
    }

    /// The frequency in Hz.
    pub fn hz(&self) -> u64 {
        self.hz
    }

    /// Where the frequency came from.
    pub fn source(&self) -> &'static str {
        self.source
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

    /// The PM timer and the TSC at one instant: the timer read between two TSC reads close
    /// together (their midpoint), tried up to 100 times.
    fn pm_pair(port: u16) -> Option<(u64, u32)> {
        (0..100).find_map(|_| {
            let before = rdtsc();
            let pm = inl(port) & PM_MASK;
            let after = rdtsc();
            (after - before < BRACKET_TSC).then_some((before + (after - before) / 2, pm))
        })
    }

    fn pm_hz(port: u16) -> Option<u64> {
        let (t0, p0) = Self::pm_pair(port)?;
        // TIMEOUT: 50 ms of the timer; 2^32 polls bound a timer that does not count.
        for _ in 0..u32::MAX {
            if inl(port).wrapping_sub(p0) & PM_MASK >= PM_SPAN {
                break;
            }
            core::hint::spin_loop();
        }
        let (t1, p1) = Self::pm_pair(port)?;
        let ticks = u64::from(p1.wrapping_sub(p0) & PM_MASK);
        (ticks >= u64::from(PM_SPAN)).then(|| (t1 - t0) * PM_HZ / ticks)
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
