//! nvbare-sim: a behavioural model of NVIDIA GPUs at the BAR and DMA level.
//!
//! The model stands in for a GPU bound to vfio-pci. A [`SimGpu`] has a BAR0 register space,
//! a BAR1 window onto sparse VRAM, PCI config space and reset; it reaches host memory only
//! through the DMA mappings registered with its [`memory::SysMem`] (anything else is a
//! simulated IOMMU fault, reported). Engines run on the device's own thread, reacting to
//! doorbells and register writes as hardware does; drivers poll.
//!
//! It is worth exactly as much as it is strict and independent of our driver: it uses
//! `nvbare-gsp`'s layout-checked ABI types, `nvbare-mmu`'s walker and its own decoder
//! ([`decode`]), and none of `nvbare-core`'s boot, RM or submission logic (core is a
//! dependency for the `Platform` trait only). Ground truth is NVIDIA's headers and OpenRM's
//! sources, the real firmware files, and tinygrad's PCI driver, which boots the simulated
//! GB202 unmodified over [`remote`] (tinygrad's remote PCI protocol).
//!
//! Layout:
//! - [`chip`]: the chip table (data): identity, VRAM, SMs, classes, per-chip registers.
//! - [`memory`]: sparse VRAM, the host-memory DMA registry, the bus that resolves addresses.
//! - [`config`]: PCI config space.
//! - [`device`]: [`SimGpu`]: BAR0 dispatch, the device thread, reset, unplug.
//! - [`faults`]: fault injection, configurable per test.
//! - [`firmware`]: the simulator's own reader of the real firmware files (ELF sections, SHA-384).
//! - [`log`]: the simulator's own log (what it did, what it refused and why).
//! - [`platform`]: [`SimPlatform`], the in-process `nvbare_core::hal::Platform`.
//! - [`units`]: the blocks of the GPU (identity, FSP, GSP, MMU, host/FIFO, copy, compute).
//! - [`decode`]: the independent pushbuffer/QMD decoder.
//! - [`remote`]: the GPUs served over tinygrad's remote PCI protocol.
//! - [`vfio_user`]: a GPU served to QEMU as a vfio-user PCI device.
//! - [`trace`]: a record of a driver's BAR0, config and DMA traffic, and two records compared.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod chip;
pub mod config;
pub mod decode;
pub mod device;
pub mod faults;
pub mod firmware;
pub mod log;
pub mod memory;
pub mod platform;
pub mod remote;
pub mod trace;
pub mod units;
pub mod vfio_user;

pub use chip::{ChipSpec, SimChip};
pub use device::SimGpu;
pub use faults::FaultPlan;
pub use platform::SimPlatform;
