//! The bare-metal side: entry point, panic handler, allocator, console, clock, the board's
//! `Platform`, and the program that drives the GPU.

mod board;
mod clock;
mod heap;
mod program;
mod serial;

use core::fmt::Write;

#[global_allocator]
static HEAP: heap::BumpHeap = heap::BumpHeap::new();

/// The loader jumps here with the stack set up and the addresses in [`board`] mapped
/// (identity, uncached for the BARs and ECAM).
#[unsafe(no_mangle)]
pub extern "C" fn _start() -> ! {
    let mut out = serial::Com1::init();
    match program::run(&mut out) {
        Ok(()) => {
            let _ = writeln!(out, "nvbare-embed: done");
        }
        Err(e) => {
            let _ = writeln!(out, "nvbare-embed: {e}");
        }
    }
    halt()
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let mut out = serial::Com1::init();
    let _ = writeln!(out, "nvbare-embed panicked: {info}");
    halt()
}

/// Stops the CPU for good.
fn halt() -> ! {
    loop {
        // SAFETY: `hlt` only waits for an interrupt; with them masked it stops the CPU.
        unsafe { core::arch::asm!("cli; hlt", options(nomem, nostack)) };
    }
}
