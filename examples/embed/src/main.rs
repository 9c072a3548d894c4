//! nvbare embedded in a bare-metal program: what a unikernel or a hypervisor provides to boot
//! GSP-RM and run work on an NVIDIA GPU with no operating system and no NVIDIA driver.
//!
//! Built for `x86_64-unknown-none` (`cargo build -p nvbare-embed --target
//! x86_64-unknown-none --release`), it is a PVH kernel QEMU boots with `-kernel` (no guest
//! OS, no bootloader). It links `nvbare-core`, `nvbare-gsp` and `nvbare-mmu` and supplies the
//! rest itself (`bare`): the boot stub into long mode, a global allocator, a panic handler,
//! a serial console, a TSC clock, ACPI's MCFG and PCI enumeration to find the GPU and its
//! BARs, and a [`Platform`](nvbare_core::hal::Platform) whose DMA addresses are physical
//! addresses (no IOMMU). It boots GSP-RM with the firmware from the boot module (a cpio
//! archive), opens the GPU over it, runs and checks a vector add, closes the GPU and reports
//! each step on COM1; `tests/vm/embed` runs it against the simulated GH100 and GB202 served
//! over vfio-user.
//!
//! On a hosted target this is a stub that says how to build it.
#![cfg_attr(target_os = "none", no_std, no_main)]

extern crate alloc;

#[cfg(target_os = "none")]
mod bare;

// The boot module's reader is plain code: its tests run on the host.
#[cfg(all(test, not(target_os = "none")))]
#[path = "bare/firmware.rs"]
mod firmware;

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!(
        "nvbare-embed is a bare-metal program: build it with \
         `cargo build -p nvbare-embed --target x86_64-unknown-none`"
    );
}
