//! A device's view of memory ([`Bus`]): its VRAM by physical address, host memory by bus
//! address, its own BAR1 window; bus addresses only while bus mastering is on, each such
//! access recorded in the DMA trace when one is attached.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Access, BusFault, SysMem, Vram};

/// Where a device address points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// VRAM by physical address.
    Vram(u64),
    /// System memory (or a BAR1 window) by bus address.
    Bus(u64),
}

/// A device's view of memory: its VRAM, the shared host memory, and its BAR1 window.
#[derive(Clone, Debug)]
pub struct Bus {
    /// This device's VRAM.
    pub vram: Arc<Vram>,
    /// The host memory the device reaches.
    pub sysmem: Arc<SysMem>,
    /// BAR1's bus address and size: bus addresses inside it reach VRAM at the same offset.
    pub bar1: (u64, u64),
    /// Bus mastering (`PCI_COMMAND` bit 2), as the device's config space has it: every
    /// access to a bus address checks it here, whichever unit makes it.
    master: Arc<AtomicBool>,
    /// Where accesses to bus addresses are recorded, when a trace is attached.
    trace: crate::trace::Tap,
}

impl Bus {
    /// A device's view of `vram`, `sysmem` and its BAR1 at `bar1`, bus mastering off.
    pub fn new(vram: Arc<Vram>, sysmem: Arc<SysMem>, bar1: (u64, u64)) -> Bus {
        Bus {
            vram,
            sysmem,
            bar1,
            master: Arc::new(AtomicBool::new(false)),
            trace: crate::trace::Tap::default(),
        }
    }

    /// The tap DMA is recorded through (shared with the device that owns this bus).
    pub fn trace_tap(&self) -> &crate::trace::Tap {
        &self.trace
    }

    fn traced(&self, addr: u64, len: usize, access: Access) {
        if let Some((t, gpu)) = self.trace.get() {
            t.record_dma(gpu, access, addr, len as u64);
        }
    }

    /// Follows `PCI_COMMAND`'s bus-master bit (on every config write and reset).
    pub fn set_bus_master(&self, on: bool) {
        self.master.store(on, Ordering::Release);
    }

    /// Whether bus addresses may be reached.
    pub fn bus_master(&self) -> bool {
        self.master.load(Ordering::Acquire)
    }

    fn check_master(&self, addr: u64, len: usize, access: Access) -> Result<(), BusFault> {
        if self.bus_master() {
            return Ok(());
        }
        Err(BusFault::NoBusMaster {
            addr,
            len: len as u64,
            access,
        })
    }

    /// Resolves a bus address inside BAR1 to VRAM.
    fn bar1_vram(&self, addr: u64, len: usize) -> Option<u64> {
        let (base, size) = self.bar1;
        let off = addr.checked_sub(base)?;
        (off.checked_add(len as u64)? <= size).then_some(off)
    }

    /// Reads from `at`.
    pub fn read(&self, at: Target, out: &mut [u8]) -> Result<(), BusFault> {
        match at {
            Target::Vram(pa) => self.vram.read(pa, out),
            Target::Bus(addr) => match self
                .check_master(addr, out.len(), Access::Read)
                .map(|()| self.traced(addr, out.len(), Access::Read))
                .map(|()| self.bar1_vram(addr, out.len()))?
            {
                Some(pa) => self.vram.read(pa, out),
                None => self.sysmem.read(addr, out),
            },
        }
    }

    /// Writes to `at`.
    pub fn write(&self, at: Target, data: &[u8]) -> Result<(), BusFault> {
        match at {
            Target::Vram(pa) => self.vram.write(pa, data),
            Target::Bus(addr) => match self
                .check_master(addr, data.len(), Access::Write)
                .map(|()| self.traced(addr, data.len(), Access::Write))
                .map(|()| self.bar1_vram(addr, data.len()))?
            {
                Some(pa) => self.vram.write(pa, data),
                None => self.sysmem.write(addr, data),
            },
        }
    }

    /// Reads a little-endian u32 at `at`.
    pub fn read_u32(&self, at: Target) -> Result<u32, BusFault> {
        let mut b = [0; 4];
        self.read(at, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Reads a little-endian u64 at `at`.
    pub fn read_u64(&self, at: Target) -> Result<u64, BusFault> {
        let mut b = [0; 8];
        self.read(at, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Writes a little-endian u32 at `at`.
    pub fn write_u32(&self, at: Target, v: u32) -> Result<(), BusFault> {
        self.write(at, &v.to_le_bytes())
    }

    /// Writes a little-endian u64 at `at`.
    pub fn write_u64(&self, at: Target, v: u64) -> Result<(), BusFault> {
        self.write(at, &v.to_le_bytes())
    }
}
