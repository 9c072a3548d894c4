//! nvbare-mmu: the GPU's page tables, built by us.
//!
//! On the VFIO path nobody builds the GPU's page tables but this crate. It knows the two MMU
//! formats ([`Format::VER2`] for Turing–Ada, [`Format::VER3`] for Hopper–Blackwell), encodes
//! their entries ([`Pte`], [`Pde`], [`DualPde`]), allocates VRAM ([`PhysAllocator`]) and virtual
//! addresses ([`VaAllocator`]), maintains an [`AddressSpace`] (`map`, `unmap`, `translate`)
//! in any [`TableMemory`], and resolves addresses the way the GPU does with an independent
//! walker ([`walk::walk`]).
//!
//! Pure data logic: `no_std` + `alloc`, no unsafe code.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

mod address_space;
pub mod entry;
mod error;
pub mod format;
mod hooks;
mod map;
pub mod memory;
mod phys_alloc;
mod va_alloc;
pub mod walk;

pub use address_space::AddressSpace;
pub use entry::{Aperture, DualPde, KIND_GENERIC_MEMORY, Pde, Pte, PteAttributes};
pub use error::{AccessError, MmuError};
pub use format::{Field, Format, Level, LevelKind, MmuVersion, PageSize, PageSizes};
pub use hooks::{CountingTlb, NoTlb, TableAllocator, TlbInvalidate};
pub use map::{MapStats, PhysRange};
pub use memory::{TableAddr, TableAperture, TableMemory, VecMemory};
pub use phys_alloc::PhysAllocator;
pub use va_alloc::VaAllocator;
pub use walk::{Translation, WalkError};
