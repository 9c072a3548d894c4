//! Timeline semaphores: 16 bytes of GPU-visible memory holding a 64-bit payload at +0 and, when
//! released with a timestamp ("four-word" release), the GPU's global timer in ns at +8.
//!
//! Engines release a semaphore by writing a payload; host (the channel's front end) can also
//! acquire one, stalling the channel until the payload reaches a value. Payloads only grow, so
//! "value >= target" is the completion test, and one semaphore serves as a timeline.

use crate::gpfifo::{ChannelState, GpFifo};
use crate::hal::{Clock, Nanos, Wait, poll_until};
use crate::push::{PushBuffer, PushError, Subchannel, check_address, host};
use crate::shared::{SharedMem, SharedMemError};
use core::fmt;

/// Bytes a semaphore occupies: payload (8) and timestamp (8).
pub const SEMAPHORE_SIZE: usize = 16;
/// Width of the GPU addresses semaphore methods accept (`SEM_ADDR_HI` 24:0 + 32 low bits).
pub const SEMAPHORE_VA_BITS: u32 = 57;

/// A wait ran out of time, with the state of the channel that should have released it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitTimeout {
    /// The channel expected to release the semaphore, with its GPGet/GPPut.
    pub channel: ChannelState,
    /// The semaphore's GPU address.
    pub semaphore_va: u64,
    /// The payload last read.
    pub value: u64,
    /// The payload waited for.
    pub target: u64,
    /// How long the wait lasted.
    pub waited_ns: u64,
}

/// What went wrong with a semaphore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SemaphoreError {
    /// The memory given is smaller than 16 bytes or not 16-byte aligned on the GPU.
    BadMemory {
        /// GPU VA of the memory.
        va: u64,
        /// Its size.
        len: usize,
    },
    /// The payload did not reach the target in time.
    Timeout(WaitTimeout),
    /// Shared-memory access failed.
    Memory(SharedMemError),
}

impl From<SharedMemError> for SemaphoreError {
    fn from(e: SharedMemError) -> Self {
        Self::Memory(e)
    }
}

impl fmt::Display for SemaphoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadMemory { va, len } => write!(
                f,
                "semaphore memory at {va:#x} ({len} bytes) must be >= 16 bytes and 16-byte aligned; allocate it so"
            ),
            Self::Timeout(t) => write!(
                f,
                "semaphore at {:#x} stayed at {} (waiting for {}) for {}: {} is stalled; check for an MMU fault or an acquire that nothing releases",
                t.semaphore_va,
                t.value,
                t.target,
                Nanos(t.waited_ns),
                t.channel
            ),
            Self::Memory(e) => write!(f, "semaphore memory: {e}"),
        }
    }
}

impl core::error::Error for SemaphoreError {}

/// A 64-bit timeline semaphore in GPU-visible memory.
#[derive(Clone, Debug)]
pub struct Semaphore {
    mem: SharedMem,
}

impl Semaphore {
    /// A semaphore over the first 16 bytes of `mem`, which must be 16-byte aligned on the GPU
    /// (and 8 on the CPU) and addressable by semaphore methods.
    pub fn new(mem: SharedMem) -> Result<Self, SemaphoreError> {
        let bad = SemaphoreError::BadMemory {
            va: mem.gpu_va(),
            len: mem.len(),
        };
        if mem.len() < SEMAPHORE_SIZE || check_address(mem.gpu_va(), 16, SEMAPHORE_VA_BITS).is_err()
        {
            return Err(bad);
        }
        // Both words readable: bounds and CPU alignment checked once, here.
        mem.read_u64(8)?;
        Ok(Self { mem })
    }

    /// The GPU address of the payload.
    pub fn gpu_va(&self) -> u64 {
        self.mem.gpu_va()
    }

    /// The current payload (one volatile 64-bit read).
    pub fn value(&self) -> u64 {
        // Cannot fail: `new` checked bounds and alignment.
        self.mem.read_u64(0).unwrap_or(0)
    }

    /// The GPU timer (ns) written by the last release that asked for a timestamp.
    pub fn timestamp(&self) -> u64 {
        self.mem.read_u64(8).unwrap_or(0)
    }

    /// Sets the payload from the CPU (to initialise, or to release a GPU acquire).
    pub fn signal_from_cpu(&self, value: u64) {
        // Cannot fail: `new` checked bounds and alignment.
        let _ = self.mem.write_u64(0, value);
    }

    /// Whether the payload has reached `target`.
    pub fn reached(&self, target: u64) -> bool {
        self.value() >= target
    }

    /// Polls until the payload reaches `target`, or `timeout_ns` passes; a timeout names
    /// `channel` (the channel expected to release it) with its GPGet/GPPut.
    ///
    /// A payload that already reached `target` costs one load and no clock read; a spinning
    /// wait reads the clock once per 64 polls ([`poll_until`]).
    pub fn wait(
        &self,
        target: u64,
        clock: &impl Clock,
        timeout_ns: u64,
        channel: &GpFifo,
    ) -> Result<(), SemaphoreError> {
        // TIMEOUT: the caller's; it knows what the channel runs (a launch round trip is
        // microseconds, a 1 GiB copy tens of milliseconds).
        let wait = Wait::spin("a timeline semaphore to reach its target", timeout_ns);
        poll_until(clock, wait, || self.reached(target).then_some(())).map_err(|t| {
            SemaphoreError::Timeout(WaitTimeout {
                channel: channel.state(),
                semaphore_va: self.gpu_va(),
                value: self.value(),
                target,
                waited_ns: t.waited_ns,
            })
        })
    }
}

/// How a host semaphore release behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostRelease {
    /// Wait for the engines on the channel to go idle first (`RELEASE_WFI_EN`), so the release
    /// means "all earlier work finished". Without it the release means "host reached here".
    pub wait_for_idle: bool,
    /// Also write the GPU timer at +8 (`RELEASE_TIMESTAMP_EN`).
    pub timestamp: bool,
}

impl HostRelease {
    /// Release after all earlier work finished, with a timestamp.
    pub const AFTER_IDLE: HostRelease = HostRelease {
        wait_for_idle: true,
        timestamp: true,
    };
    /// Release as soon as host reaches the method (marks pushbuffer progress).
    pub const ON_FETCH: HostRelease = HostRelease {
        wait_for_idle: false,
        timestamp: false,
    };
}

fn host_sem(
    pb: &mut PushBuffer,
    va: u64,
    align: u64,
    payload: u64,
    execute: u32,
) -> Result<(), PushError> {
    check_address(va, align, SEMAPHORE_VA_BITS)?;
    pb.method(
        Subchannel::HOST,
        host::SEM_ADDR_LO,
        &[
            va as u32,
            (va >> 32) as u32,
            payload as u32,
            (payload >> 32) as u32,
            execute,
        ],
    )?;
    Ok(())
}

/// Host methods (`SEM_ADDR_LO..SEM_EXECUTE`) that write the 64-bit `value` to the semaphore at
/// `va` (8-byte aligned; 16 with a timestamp).
pub fn host_release(
    pb: &mut PushBuffer,
    va: u64,
    value: u64,
    how: HostRelease,
) -> Result<(), PushError> {
    let mut execute = host::sem_op::RELEASE | host::SEM_EXECUTE_PAYLOAD_64BIT;
    if how.wait_for_idle {
        execute |= host::SEM_EXECUTE_RELEASE_WFI;
    }
    if how.timestamp {
        execute |= host::SEM_EXECUTE_RELEASE_TIMESTAMP;
    }
    let align = if how.timestamp { 16 } else { 8 };
    host_sem(pb, va, align, value, execute)
}

/// Host methods that stall the channel until the 64-bit payload at `va` is >= `value`
/// (`ACQ_CIRC_GEQ`, 64-bit, as tinygrad's driver waits): the way one queue waits for another.
pub fn host_acquire(pb: &mut PushBuffer, va: u64, value: u64) -> Result<(), PushError> {
    host_sem(
        pb,
        va,
        8,
        value,
        host::sem_op::ACQ_CIRC_GEQ | host::SEM_EXECUTE_PAYLOAD_64BIT,
    )
}

/// Host `WFI` (wait for idle) on all engines of the channel.
pub fn host_wait_for_idle(pb: &mut PushBuffer) -> Result<(), PushError> {
    pb.method(Subchannel::HOST, host::WFI, &[1])?;
    Ok(())
}
