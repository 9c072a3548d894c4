//! The seams between the core and whatever reaches the GPU.
//!
//! - [`Bar0`]: 32-bit register access (BAR0 on a GPU we own; the usermode doorbell page on
//!   the kernel-driver path).
//! - [`Clock`]: a monotonic clock and a short delay.
//! - [`Platform`]: everything the VFIO path needs of a PCI function: BAR0, a CPU window onto
//!   VRAM through BAR1, DMA memory with the bus addresses the device must use, PCI config
//!   space, reset. `host::vfio`, the simulator and tinygrad's remote protocol implement it;
//!   a unikernel or hypervisor provides its own.
//! - [`poll_until`] / [`Deadline`]: the one way anything in nvbare waits. Every wait says what
//!   it waits for; its timeout is justified where it is chosen (`// TIMEOUT:` comments).

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use crate::shared::SharedMem;

/// 32-bit register access to BAR0.
pub trait Bar0 {
    /// Reads the 32-bit register at byte offset `offset`.
    fn read32(&self, offset: u32) -> u32;
    /// Writes the 32-bit register at byte offset `offset`.
    fn write32(&self, offset: u32, value: u32);
}

impl<B: Bar0 + ?Sized> Bar0 for &B {
    fn read32(&self, offset: u32) -> u32 {
        (**self).read32(offset)
    }
    fn write32(&self, offset: u32, value: u32) {
        (**self).write32(offset, value)
    }
}

/// A monotonic clock and a short delay, for polling with timeouts.
pub trait Clock {
    /// Nanoseconds since an arbitrary, fixed origin.
    fn now_ns(&self) -> u64;
    /// Waits at least `ns` nanoseconds (may spin, may sleep).
    fn delay_ns(&self, ns: u64);
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now_ns(&self) -> u64 {
        (**self).now_ns()
    }
    fn delay_ns(&self, ns: u64) {
        (**self).delay_ns(ns)
    }
}

/// A wait that ran out of time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedOut {
    /// What was waited for ("FSP ready (NV_THERM_I2CS_SCRATCH == 0xff)").
    pub what: &'static str,
    /// How long the wait lasted, in ns.
    pub waited_ns: u64,
    /// The timeout it was given, in ns.
    pub timeout_ns: u64,
}

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "timed out after {} waiting for {} (limit {})",
            Nanos(self.waited_ns),
            self.what,
            Nanos(self.timeout_ns)
        )
    }
}

impl core::error::Error for TimedOut {}

/// A duration in ns that prints in the unit a person reads (`850 ns`, `12.5 us`, `3.20 ms`,
/// `14.0 s`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nanos(pub u64);

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        // CAST: display only; f64 holds any duration here to well under a ns per second.
        let x = ns as f64;
        if ns < 1_000 {
            write!(f, "{ns} ns")
        } else if ns < 1_000_000 {
            write!(f, "{:.1} us", x / 1e3)
        } else if ns < 1_000_000_000 {
            write!(f, "{:.2} ms", x / 1e6)
        } else {
            write!(f, "{:.1} s", x / 1e9)
        }
    }
}

/// How one wait polls: what it is for, how long it may take, and what it does between polls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    /// What the wait is for; carried into [`TimedOut`].
    pub what: &'static str,
    /// The longest the wait may take, in ns.
    pub timeout_ns: u64,
    /// Pause between polls in ns; 0 spins (for waits of microseconds, where a poll is one
    /// load from memory).
    pub pause_ns: u64,
}

impl Wait {
    /// A spinning wait for `what` of at most `timeout_ns`.
    pub const fn spin(what: &'static str, timeout_ns: u64) -> Self {
        Self {
            what,
            timeout_ns,
            pause_ns: 0,
        }
    }

    /// A wait for `what` of at most `timeout_ns` that pauses `pause_ns` between polls (for
    /// boot steps that take milliseconds and whose poll is a register read).
    pub const fn pausing(what: &'static str, timeout_ns: u64, pause_ns: u64) -> Self {
        Self {
            what,
            timeout_ns,
            pause_ns,
        }
    }
}

/// A point in time by which something must be done, on a [`Clock`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    start_ns: u64,
    timeout_ns: u64,
}

impl Deadline {
    /// `timeout_ns` from now.
    pub fn after(clock: &impl Clock, timeout_ns: u64) -> Self {
        Self {
            start_ns: clock.now_ns(),
            timeout_ns,
        }
    }

    /// Nanoseconds since the deadline was set.
    pub fn elapsed_ns(&self, clock: &impl Clock) -> u64 {
        clock.now_ns().saturating_sub(self.start_ns)
    }

    /// Whether the deadline has passed.
    pub fn expired(&self, clock: &impl Clock) -> bool {
        self.elapsed_ns(clock) >= self.timeout_ns
    }

    /// Nanoseconds left (0 once passed).
    pub fn remaining_ns(&self, clock: &impl Clock) -> u64 {
        self.timeout_ns.saturating_sub(self.elapsed_ns(clock))
    }

    /// The [`TimedOut`] this deadline reports for `what`.
    pub fn timed_out(&self, clock: &impl Clock, what: &'static str) -> TimedOut {
        TimedOut {
            what,
            waited_ns: self.elapsed_ns(clock),
            timeout_ns: self.timeout_ns,
        }
    }
}

/// A spinning wait reads the clock once per this many polls, so a poll costs one probe.
const CLOCK_EVERY: u32 = 64;

/// Polls `probe` until it returns `Some`, or `wait.timeout_ns` passes.
///
/// The probe runs once before the clock is first read, so a condition that already holds
/// costs no clock read. A spinning wait reads the clock once per 64 polls.
pub fn poll_until<T>(
    clock: &impl Clock,
    wait: Wait,
    mut probe: impl FnMut() -> Option<T>,
) -> Result<T, TimedOut> {
    match try_poll_until(clock, wait, || Ok::<_, core::convert::Infallible>(probe())) {
        Ok(v) => Ok(v),
        Err(PollError::TimedOut(t)) => Err(t),
        Err(PollError::Failed(never)) => match never {},
    }
}

/// Why [`try_poll_until`] ended without a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollError<E> {
    /// The wait ran out of time.
    TimedOut(TimedOut),
    /// The probe reported an error (the wait ends at once).
    Failed(E),
}

impl<E: fmt::Display> fmt::Display for PollError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TimedOut(t) => t.fmt(f),
            Self::Failed(e) => e.fmt(f),
        }
    }
}

/// [`poll_until`] for a probe that can fail: `Ok(Some(v))` ends the wait with `v`, `Ok(None)`
/// polls again, `Err(e)` ends it with [`PollError::Failed`].
pub fn try_poll_until<T, E>(
    clock: &impl Clock,
    wait: Wait,
    mut probe: impl FnMut() -> Result<Option<T>, E>,
) -> Result<T, PollError<E>> {
    if let Some(v) = probe().map_err(PollError::Failed)? {
        return Ok(v);
    }
    let deadline = Deadline::after(clock, wait.timeout_ns);
    let mut polls: u32 = 0;
    loop {
        if let Some(v) = probe().map_err(PollError::Failed)? {
            return Ok(v);
        }
        if wait.pause_ns > 0 {
            if deadline.expired(clock) {
                return Err(PollError::TimedOut(deadline.timed_out(clock, wait.what)));
            }
            clock.delay_ns(wait.pause_ns);
        } else {
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(CLOCK_EVERY) && deadline.expired(clock) {
                return Err(PollError::TimedOut(deadline.timed_out(clock, wait.what)));
            }
            core::hint::spin_loop();
        }
    }
}

/// A BAR of the PCI function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarInfo {
    /// Bus address of the BAR (what the device itself is told: `GspSystemInfo.gpuPhysAddr`
    /// and friends).
    pub bus_addr: u64,
    /// Size in bytes.
    pub size: u64,
}

/// A PCI function's address: domain, bus, device, function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PciAddress {
    /// PCI domain (segment).
    pub domain: u16,
    /// Bus number.
    pub bus: u8,
    /// Device number (0..32).
    pub device: u8,
    /// Function number (0..8).
    pub function: u8,
}

impl PciAddress {
    /// `bus << 8 | device << 3 | function`, as `GspSystemInfo.nvDomainBusDeviceFunc` wants it
    /// (with the domain in bits 31:16).
    pub fn to_bdf(self) -> u64 {
        (u64::from(self.domain) << 16)
            | (u64::from(self.bus) << 8)
            | (u64::from(self.device & 0x1f) << 3)
            | u64::from(self.function & 7)
    }
}

impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

/// Size of a DMA page: the granule of [`DmaMemory::bus_pages`].
pub const DMA_PAGE: usize = 4096;

/// System memory the device can reach: a CPU view and the bus address of every 4 KiB page
/// (an IOVA behind an IOMMU, a physical address without one).
///
/// Not `Clone`: one value names one allocation, given back once through the `unsafe`
/// [`Platform::dma_free`] (a second value would be a double free).
///
/// ```compile_fail
/// # use nvbare_core::hal::DmaMemory;
/// fn twice(m: DmaMemory) -> (DmaMemory, DmaMemory) {
///     (m.clone(), m)
/// }
/// ```
/// ```compile_fail
/// # use nvbare_core::hal::{DmaMemory, Platform};
/// fn free(p: &mut impl Platform, m: DmaMemory) {
///     p.dma_free(m) // unsafe: the caller must show no view of the memory lives
/// }
/// ```
#[derive(Debug)]
pub struct DmaMemory {
    /// The CPU view. Its [`SharedMem::gpu_va`] is the bus address of byte 0.
    pub cpu: SharedMem,
    /// Bus address of each 4 KiB page, in order.
    pub bus_pages: Vec<u64>,
    /// The platform's name for this allocation (what [`Platform::dma_free`] is given back).
    pub id: u64,
}

impl DmaMemory {
    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.cpu.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.cpu.is_empty()
    }

    /// The bus address of byte `offset`, if inside.
    pub fn bus_addr(&self, offset: usize) -> Option<u64> {
        let page = self.bus_pages.get(offset / DMA_PAGE)?;
        // CAST: the remainder is below 4096.
        Some(page + (offset % DMA_PAGE) as u64)
    }

    /// Whether the pages are contiguous on the bus (one address range).
    pub fn is_contiguous(&self) -> bool {
        self.bus_pages
            .windows(2)
            .all(|w| w[1] == w[0] + DMA_PAGE as u64)
    }
}

/// What a platform could not do.
#[derive(Debug)]
pub enum PlatformError {
    /// No DMA memory of this size could be had.
    OutOfDmaMemory {
        /// Bytes asked for.
        bytes: usize,
        /// What the user can do about it ("reserve hugepages: echo 64 > ...").
        remedy: &'static str,
    },
    /// The device no longer answers (BAR0 reads return 0xffffffff, the link is down, the
    /// simulated device was unplugged).
    DeviceGone,
    /// The operation does not exist on this platform (reset on a platform that cannot).
    Unsupported(&'static str),
    /// A step of the platform failed, with the cause.
    Failed {
        /// The step ("VFIO_DEVICE_RESET", "MAP_SYSMEM").
        step: &'static str,
        /// The cause.
        source: Box<dyn core::error::Error + Send + Sync>,
    },
}

impl fmt::Display for PlatformError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OutOfDmaMemory { bytes, remedy } => {
                write!(f, "no DMA memory for {bytes} bytes; {remedy}")
            }
            Self::DeviceGone => write!(
                f,
                "the GPU no longer answers (BAR0 reads 0xffffffff): it was removed, reset by \
                 someone else or its link is down; check dmesg and the PCI bus"
            ),
            Self::Unsupported(what) => write!(f, "{what} is not supported on this platform"),
            Self::Failed { step, source } => write!(f, "{step}: {source}"),
        }
    }
}

impl core::error::Error for PlatformError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Self::Failed { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

/// A PCI function nvbare owns: what the VFIO path needs of it.
///
/// `read32`/`write32` (from [`Bar0`]) reach BAR0. BAR0 reads of a device that vanished return
/// 0xffffffff, as on PCI; callers that must tell use [`Platform::is_present`].
pub trait Platform: Bar0 {
    /// The platform's clock.
    type Clock: Clock;

    /// The clock every wait of this device uses.
    fn clock(&self) -> &Self::Clock;

    /// The function's PCI address.
    fn pci_address(&self) -> PciAddress;

    /// BAR `index` (0, 1 or 3 on NVIDIA GPUs), if present.
    fn bar_info(&self, index: u32) -> Option<BarInfo>;

    /// A CPU window onto BAR1 (VRAM through the BAR1 aperture), if the platform can map it.
    /// Its [`SharedMem::gpu_va`] is BAR1's bus address.
    fn bar1(&self) -> Option<SharedMem>;

    /// Allocates `bytes` (a multiple of [`DMA_PAGE`]) of zeroed system memory the device can
    /// reach, mapped for DMA until [`Platform::dma_free`]. `contiguous` asks for one bus
    /// address range.
    fn dma_alloc(&mut self, bytes: usize, contiguous: bool) -> Result<DmaMemory, PlatformError>;

    /// Unmaps and frees DMA memory.
    ///
    /// # Safety
    /// No clone or [`SharedMem::slice`] of `mem.cpu` lives (the memory is unmapped and may
    /// be handed out again: a surviving view would read and write someone else's memory),
    /// and the device no longer uses it (nothing it was told about, a queue, a page table,
    /// a boot argument, still points at it, or the device was stopped).
    unsafe fn dma_free(&mut self, mem: DmaMemory);

    /// Reads `size` (1, 2 or 4) bytes of PCI config space at `offset`.
    fn config_read(&self, offset: u16, size: u8) -> Result<u32, PlatformError>;

    /// Writes `size` (1, 2 or 4) bytes of PCI config space at `offset`.
    fn config_write(&self, offset: u16, size: u8, value: u32) -> Result<(), PlatformError>;

    /// Resets the function (FLR or the platform's equivalent), clearing secure state a
    /// previous boot left behind.
    fn reset(&mut self) -> Result<(), PlatformError>;

    /// Whether this driver runs inside a virtual machine the GPU is passed through to
    /// (`bIsPassthru` of `GSP_SET_SYSTEM_INFO`: OpenRM sets it only as a hypervisor's HVM
    /// guest, `gpuSetupVirtualGuestOwnedHW`). Bare metal by default.
    fn in_virtual_machine(&self) -> bool {
        false
    }

    /// Whether the device still answers, judged from config space: its vendor id reads
    /// NVIDIA's, not all ones. Never from BAR0, which legitimately reads all ones while the
    /// GPU reboots after a reset (the FSP boots, GB20x's BAR firewall is up), as OpenRM
    /// judges a lost GPU (`kbifConfigAccessWait_GH100` reads `NV_EP_PCFG_GPU_ID`).
    fn is_present(&self) -> bool {
        matches!(self.config_read(0, 2), Ok(0x10de))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;

    /// A clock that advances 1 µs per read and per delay.
    struct StepClock(Cell<u64>);
    impl Clock for StepClock {
        fn now_ns(&self) -> u64 {
            self.0.set(self.0.get() + 1_000);
            self.0.get()
        }
        fn delay_ns(&self, ns: u64) {
            self.0.set(self.0.get() + ns);
        }
    }

    #[test]
    fn a_condition_that_holds_reads_no_clock() {
        let clock = StepClock(Cell::new(0));
        let v = poll_until(&clock, Wait::spin("x", 10), || Some(7));
        assert_eq!(v, Ok(7));
        assert_eq!(clock.0.get(), 0);
    }

    #[test]
    fn waits_end_with_what_they_waited_for() {
        let clock = StepClock(Cell::new(0));
        let mut n = 0;
        let r = poll_until(&clock, Wait::pausing("FSP ready", 100_000, 10_000), || {
            n += 1;
            None::<()>
        });
        let t = r.unwrap_err();
        assert_eq!(t.what, "FSP ready");
        assert!(t.waited_ns >= 100_000, "{t:?}");
        assert!(n > 2 && n < 20, "{n} polls");
        let msg = alloc::format!("{t}");
        assert!(msg.contains("FSP ready") && msg.contains("us"), "{msg}");
    }

    #[test]
    fn spinning_waits_succeed_late_and_fail_on_error() {
        let clock = StepClock(Cell::new(0));
        let mut n = 0;
        assert_eq!(
            poll_until(&clock, Wait::spin("x", 1_000_000_000), || {
                n += 1;
                (n == 500).then_some(n)
            }),
            Ok(500)
        );
        let r: Result<(), _> = try_poll_until(&clock, Wait::spin("x", 1_000), || Err("gone"));
        assert_eq!(r, Err(PollError::Failed("gone")));
    }

    #[test]
    fn durations_print_in_readable_units() {
        use alloc::format;
        assert_eq!(format!("{}", Nanos(850)), "850 ns");
        assert_eq!(format!("{}", Nanos(12_500)), "12.5 us");
        assert_eq!(format!("{}", Nanos(27_535_984)), "27.54 ms");
        assert_eq!(format!("{}", Nanos(14_000_000_000)), "14.0 s");
    }

    #[test]
    fn bdf_packs_as_gsp_wants() {
        let a = PciAddress {
            domain: 0,
            bus: 0x41,
            device: 0,
            function: 0,
        };
        assert_eq!(a.to_bdf(), 0x4100);
        assert_eq!(alloc::format!("{a}"), "0000:41:00.0");
    }
}
