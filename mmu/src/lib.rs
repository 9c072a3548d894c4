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
//!
//! ```
//! use nvbare_mmu::*;
//! // Page tables in 1 MiB of (here simulated) VRAM; user memory elsewhere in VRAM.
//! let memory = VecMemory::new(TableAperture::Video, 0, 1 << 20);
//! let tables = PhysAllocator::new(0, 1 << 20)?;
//! let mut space = AddressSpace::new(MmuVersion::Ver3, TableAperture::Video, memory, tables, NoTlb)?;
//! let mut vram = PhysAllocator::new(1 << 30, 16 << 30)?;
//! let mut vas = VaAllocator::new(1 << 32, 1 << 40)?;
//!
//! let pa = vram.alloc(4 << 20, 2 << 20)?;
//! let va = vas.alloc(4 << 20, 2 << 20)?;
//! let stats = space.map(va, &[PhysRange::new(pa, 4 << 20)], PteAttributes::new(Aperture::Video))?;
//! assert_eq!(stats.pages_by_size, [0, 0, 2, 0]); // two 2 MiB pages
//!
//! // The walker reads the raw tables as the GPU would.
//! let t = walk::walk(space.format(), space.memory(), space.root(), va + 5)?.expect("mapped");
//! assert_eq!((t.pa, t.page_size), (pa + 5, PageSize::Size2M));
//!
//! space.unmap(va, 4 << 20)?;
//! assert_eq!(space.table_count(), 1); // emptied tables went back to the allocator
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! Notes on the hardware formats:
//! - Turing has no 512 MiB pages; use [`PageSizes::NO_512M`] there (Ampere and later have them).
//! - In ver2 dual PDEs, NO_ATS (bit 5) lies inside ADDRESS_BIG (bits 53:4); entries with a big
//!   page table leave it clear.
//! - Unmapped PTEs are written as zero. A zero 64 KiB PTE (ver3 PCF INVALID) lets the MMU fall
//!   through to the 4 KiB table of the same dual PDE, which is how both coexist in one 2 MiB.
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
