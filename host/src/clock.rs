//! The host's clock for platform waits: `std::time::Instant`, spinning for short delays and
//! sleeping for long ones (boot steps poll for milliseconds; a spin would hold a core).

use std::time::{Duration, Instant};

use nvbare_core::hal::Clock;

/// Delays at least this long sleep; shorter ones spin.
const SLEEP_FROM_NS: u64 = 50_000;

/// `std::time::Instant` as a [`Clock`].
#[derive(Clone, Copy, Debug)]
pub struct HostClock(Instant);

impl HostClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        HostClock(Instant::now())
    }
}

impl Default for HostClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for HostClock {
    fn now_ns(&self) -> u64 {
        // CAST: u64 nanoseconds cover 584 years of uptime.
        self.0.elapsed().as_nanos() as u64
    }

    fn delay_ns(&self, ns: u64) {
        if ns >= SLEEP_FROM_NS {
            std::thread::sleep(Duration::from_nanos(ns));
        } else {
            let end = self.now_ns().saturating_add(ns);
            while self.now_ns() < end {
                std::hint::spin_loop();
            }
        }
    }
}
