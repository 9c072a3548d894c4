//! The simulated GPU's memories and the bus that resolves device addresses.
//!
//! - [`Vram`]: the GPU's video memory, sparse (one `MAP_NORESERVE` anonymous mapping the size
//!   of the chip's VRAM; only pages touched become resident, so 141 GiB costs nothing).
//! - [`SysMem`]: host memory the device may reach: allocations registered with a bus address
//!   range each (what an IOMMU would map). One `SysMem` may serve several simulated GPUs
//!   (tinygrad treats devices behind one server as peers sharing system memory).
//! - [`Bus`]: a device's view: VRAM by physical address, system memory by bus address, and the
//!   BAR1 window (a bus address inside BAR1 reaches VRAM, as peer-to-peer BAR access does).
//!   Any other address is a simulated IOMMU fault ([`BusFault`]), which the caller reports.
//!
//! Both memories are shared with the driver, which writes them from its own thread at any
//! time, as a real device's memory is. Every access here is a volatile copy through a raw
//! pointer into a mapping this module owns; no Rust reference into the memory is ever formed.
//!
//! Files: `mapping` (the raw mappings and the volatile copies), `vram`, `sysmem` (host memory
//! and the BAR1 windows on the bus), `bus` (a device's view, with the bus-master check and the
//! DMA trace).

mod bus;
mod mapping;
mod sysmem;
mod vram;

use std::fmt;

pub use bus::{Bus, Target};
pub use sysmem::{SYSMEM_BUS_BASE, SYSMEM_BUS_END, SysAlloc, SysMem};
pub use vram::Vram;

/// A device access that reached no memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BusFault {
    /// A system-memory access to a bus address no DMA mapping covers: an IOMMU fault.
    #[error(
        "IOMMU fault: device {access} of {len} bytes at bus address {addr:#x}, which no DMA \
         mapping covers"
    )]
    Iommu {
        /// Bus address.
        addr: u64,
        /// Length in bytes.
        len: u64,
        /// Read or write.
        access: Access,
    },
    /// A device access to a bus address (host memory, a BAR1) while bus mastering is off in
    /// `PCI_COMMAND`: a device that may not master the bus performs no DMA.
    #[error(
        "device {access} of {len} bytes at bus address {addr:#x} while bus mastering is off \
         (PCI_COMMAND bit 2): the device performs no DMA until the driver turns it on"
    )]
    NoBusMaster {
        /// Bus address.
        addr: u64,
        /// Length in bytes.
        len: u64,
        /// Read or write.
        access: Access,
    },
    /// A VRAM access past the end of VRAM.
    #[error("VRAM {access} of {len} bytes at {addr:#x} runs past the end of VRAM ({size:#x})")]
    VramRange {
        /// Physical VRAM address.
        addr: u64,
        /// Length in bytes.
        len: u64,
        /// VRAM size.
        size: u64,
        /// Read or write.
        access: Access,
    },
}

/// Direction of an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A read.
    Read,
    /// A write.
    Write,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Access::Read => "read",
            Access::Write => "write",
        })
    }
}

#[cfg(test)]
mod tests;
