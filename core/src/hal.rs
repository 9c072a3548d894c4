//! The seams between the core and a platform (VFIO, the simulator, a unikernel).

/// 32-bit register access to BAR0.
pub trait Bar0 {
    /// Reads the 32-bit register at byte offset `offset`.
    fn read32(&self, offset: u32) -> u32;
    /// Writes the 32-bit register at byte offset `offset`.
    fn write32(&self, offset: u32, value: u32);
}

/// A monotonic clock and a short delay, for polling with timeouts.
pub trait Clock {
    /// Nanoseconds since an arbitrary, fixed origin.
    fn now_ns(&self) -> u64;
    /// Waits at least `ns` nanoseconds (may spin).
    fn delay_ns(&self, ns: u64);
}
