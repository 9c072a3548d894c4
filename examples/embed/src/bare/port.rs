//! x86 I/O ports: the UART, the PIT and QEMU's debug-exit device live there.

/// Writes `value` to I/O port `port`.
pub fn outb(port: u16, value: u8) {
    // SAFETY: port I/O touches no memory; the callers reach only their own devices'
    // registers (COM1, the PIT, the ACPI PM timer, isa-debug-exit).
    unsafe {
        core::arch::asm!("out dx, al", in("dx") port, in("al") value, options(nomem, nostack))
    };
}

/// Reads I/O port `port`.
pub fn inb(port: u16) -> u8 {
    let v: u8;
    // SAFETY: as in `outb`.
    unsafe { core::arch::asm!("in al, dx", out("al") v, in("dx") port, options(nomem, nostack)) };
    v
}

/// Reads a 32-bit I/O port.
pub fn inl(port: u16) -> u32 {
    let v: u32;
    // SAFETY: as in `outb`.
    unsafe { core::arch::asm!("in eax, dx", out("eax") v, in("dx") port, options(nomem, nostack)) };
    v
}

/// QEMU's `isa-debug-exit` device (`-device isa-debug-exit,iobase=0xf4,iosize=4`).
const DEBUG_EXIT: u16 = 0xf4;

/// Ends QEMU through `isa-debug-exit`: QEMU exits with status `code << 1 | 1` (so 1 for 0,
/// 3 for 1). Without the device the write goes nowhere and the caller halts.
pub fn qemu_exit(code: u8) {
    outb(DEBUG_EXIT, code);
}
