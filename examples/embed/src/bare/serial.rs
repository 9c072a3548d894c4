//! The first serial port (COM1, I/O port 0x3f8, a 16550 UART) as the console.

use super::port::{inb, outb};

/// COM1's data port.
const COM1: u16 = 0x3f8;

/// Writes to COM1, polling its line status register.
pub struct Com1;

impl Com1 {
    /// 115200 baud, 8N1, FIFOs on.
    pub fn init() -> Self {
        outb(COM1 + 1, 0x00);
        outb(COM1 + 3, 0x80);
        outb(COM1, 0x01);
        outb(COM1 + 1, 0x00);
        outb(COM1 + 3, 0x03);
        outb(COM1 + 2, 0xc7);
        Com1
    }

    fn put(&self, b: u8) {
        // Line status bit 5: the transmit holding register is empty. A missing UART reads
        // 0xff, which passes too: output then goes nowhere rather than hanging.
        for _ in 0..100_000 {
            if inb(COM1 + 5) & 0x20 != 0 {
                break;
            }
            core::hint::spin_loop();
        }
        outb(COM1, b);
    }
}

impl core::fmt::Write for Com1 {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.put(b'\r');
            }
            self.put(b);
        }
        Ok(())
    }
}
