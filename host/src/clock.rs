//! `std::time` as the core's clock.

use std::time::Instant;

use nvbare_core::hal::Clock;

/// A monotonic clock from `std::time::Instant`, with a spinning delay.
#[derive(Clone, Copy, Debug)]
pub struct StdClock(Instant);

impl StdClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        Self(Instant::now())
    }
}

impl Default for StdClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for StdClock {
    fn now_ns(&self) -> u64 {
        // CAST: u64 ns covers 584 years of uptime.
        self.0.elapsed().as_nanos() as u64
    }
    fn delay_ns(&self, ns: u64) {
        let end = self.now_ns() + ns;
        while self.now_ns() < end {
            std::hint::spin_loop();
        }
    }
}
