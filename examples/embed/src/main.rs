//! nvbare embedded in a bare-metal program: what a unikernel or a hypervisor provides to boot
//! GSP-RM and run work on an NVIDIA GPU with no operating system and no NVIDIA driver.
//!
//! Built for `x86_64-unknown-none` (`cargo build -p nvbare-embed --target
//! x86_64-unknown-none`), it links `nvbare-core`, `nvbare-gsp` and `nvbare-mmu` and supplies
//! the rest itself (`bare`): a global allocator over a static heap, a panic handler, a
//! serial console, a TSC clock, and a [`Platform`](nvbare_core::hal::Platform) for a GPU at
//! fixed addresses — BAR0 and BAR1 mapped by the loader, PCI config through ECAM, DMA memory
//! from a bump allocator over a fixed physical region whose bus addresses are its physical
//! addresses (no IOMMU). It boots GSP-RM, opens the GPU over it, runs a vector add, checks
//! it and closes the GPU.
//!
//! On a hosted target this is a stub that says how to build it.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
extern crate alloc;

#[cfg(target_os = "none")]
mod bare;

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!(
        "nvbare-embed is a bare-metal program: build it with \
         `cargo build -p nvbare-embed --target x86_64-unknown-none`"
    );
}
