//! The first serial port (COM1, I/O port 0x3f8) as the console.

/// COM1's data port.
const COM1: u16 = 0x3f8;

/// Writes to COM1, polling its line status register.
pub struct Com1;

fn outb(port: u16, value: u8) {
    // SAFETY: port I/O to the UART's own registers; no memory is touched.
    unsafe {
        core::arch::asm!("out dx, al", in("dx") port, in("al") value, options(nomem, nostack))
    };
}

fn inb(port: u16) -> u8 {
    let v: u8;
    // SAFETY: as in `outb`.
    unsafe { core::arch::asm!("in al, dx", out("al") v, in("dx") port, options(nomem, nostack)) };
    v
}

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
