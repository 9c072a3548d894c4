//! PCI configuration space of the simulated function (type 0 header).
//!
//! Ids and class from the chip table; BARs at the bus addresses the device was placed at;
//! COMMAND's memory-space and bus-master bits writable (a device without bus mastering
//! performs no DMA). Offsets are those of the PCI Local Bus Specification 3.0, 6.1.

use crate::chip::ChipSpec;

/// `COMMAND` (0x04) bit 1: memory space enable.
pub const COMMAND_MEMORY: u16 = 1 << 1;
/// `COMMAND` bit 2: bus master enable.
pub const COMMAND_BUS_MASTER: u16 = 1 << 2;

/// The power-management capability (PCI Bus Power Management Interface Specification 1.2,
/// chapter 3): where the capability list starts (`CAPABILITIES_PTR`, 0x34).
pub const PM_CAP: u32 = 0x60;
/// The PCI Express capability (PCIe Base Specification 7.5.3), after PM (as on GH100, whose
/// list also holds MSI and MSI-X, not modelled: the simulator raises no interrupts).
pub const PCIE_CAP: u32 = 0x78;
/// Device Control (PCIE_CAP + 8) bit 15: Initiate Function Level Reset.
pub const PCIE_DEVCTL_BCR_FLR: u16 = 1 << 15;

/// 4 KiB of config space (PCIe extended space included).
#[derive(Clone, Debug)]
pub struct ConfigSpace {
    bytes: Box<[u8; 4096]>,
    /// Values of the registers after reset, for [`ConfigSpace::reset`].
    initial: Box<[u8; 4096]>,
    /// The writable bits of the six BAR registers (0x10..0x28): the address bits at and above
    /// each BAR's size (PCI 3.0, 6.2.5.1: a BAR's low bits read back zero, which is how
    /// software sizes it; its type bits are read-only).
    bar_masks: [u32; 6],
}

impl ConfigSpace {
    /// The header of `spec` with BAR0/BAR1/BAR3 at the given bus addresses.
    pub fn new(spec: &ChipSpec, bar0: u64, bar1: u64, bar3: u64) -> ConfigSpace {
        let mut b = Box::new([0u8; 4096]);
        let put16 =
            |b: &mut [u8; 4096], at: usize, v: u16| b[at..at + 2].copy_from_slice(&v.to_le_bytes());
        let put32 =
            |b: &mut [u8; 4096], at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        put16(&mut b, 0x00, 0x10de);
        put16(&mut b, 0x02, spec.device_id);
        b[0x08] = spec.revision;
        // Class code: 0x03 display controller, subclass 0x02 (3D) for data-centre parts,
        // 0x00 (VGA) for GeForce parts.
        b[0x0a] = if spec.name.starts_with("gh") || spec.name.starts_with("gb1") {
            0x02
        } else {
            0x00
        };
        b[0x0b] = 0x03;
        // BAR0: 32-bit non-prefetchable memory; BAR1 (0x14/0x18) and BAR3 (0x1c/0x20): 64-bit
        // prefetchable memory (type bits 2:1 = 2, prefetch bit 3).
        put32(&mut b, 0x10, bar0 as u32);
        put32(&mut b, 0x14, (bar1 as u32 & !0xf) | 0xc);
        put32(&mut b, 0x18, (bar1 >> 32) as u32);
        put32(&mut b, 0x1c, (bar3 as u32 & !0xf) | 0xc);
        put32(&mut b, 0x20, (bar3 >> 32) as u32);
        put16(&mut b, 0x2c, spec.subsystem.0);
        put16(&mut b, 0x2e, spec.subsystem.1);
        b[0x3d] = 1; // INTA
        // STATUS bit 4: a capability list at CAPABILITIES_PTR.
        put16(&mut b, 0x06, 1 << 4);
        b[0x34] = PM_CAP as u8;
        // PM: id 0x01, next PCIe; PMC version 3 (bits 2:0); PMCSR: D0, No_Soft_Reset (bit 3).
        let pm = PM_CAP as usize;
        b[pm] = 0x01;
        b[pm + 1] = PCIE_CAP as u8;
        put16(&mut b, pm + 2, 0x0003);
        put16(&mut b, pm + 4, 0x0008);
        // PCIe: id 0x10, end of list; capability version 2, device/port type 0 (endpoint);
        // Device Capabilities: max payload 256 bytes (bits 2:0 = 1), FLR capable (bit 28).
        let pe = PCIE_CAP as usize;
        b[pe] = 0x10;
        b[pe + 1] = 0x00;
        put16(&mut b, pe + 2, 0x0002);
        put32(&mut b, pe + 4, (1 << 28) | 1);
        let initial = b.clone();
        let mut c = ConfigSpace {
            bytes: b,
            initial,
            bar_masks: [0; 6],
        };
        c.set_bar_size(0, spec.bar0_size);
        c.set_bar_size(1, spec.bar1_size);
        c.set_bar_size(3, spec.bar3_size);
        c
    }

    /// Sets the size BAR `bar` (0, or the 64-bit 1 and 3) decodes, for its writable bits (a
    /// vfio-user guest gets a smaller BAR1 than the chip's).
    pub fn set_bar_size(&mut self, bar: usize, size: u64) {
        // The address bits at and above the size; the type bits (3:0) stay read-only.
        let mask = !(size.max(16).next_power_of_two() - 1) & !0xf;
        match bar {
            0 => self.bar_masks[0] = mask as u32,
            1 | 3 => {
                self.bar_masks[bar] = mask as u32;
                self.bar_masks[bar + 1] = (mask >> 32) as u32;
            }
            _ => {}
        }
    }

    /// Reads `size` (1, 2 or 4) bytes at `offset`; `None` if the access is malformed
    /// (misaligned, crossing the end, a bad size).
    pub fn read(&self, offset: u32, size: u32) -> Option<u32> {
        let (at, n) = Self::check(offset, size)?;
        let mut v = [0u8; 4];
        v[..n].copy_from_slice(&self.bytes[at..at + n]);
        Some(u32::from_le_bytes(v))
    }

    /// Writes `size` bytes at `offset`: only COMMAND's memory and bus-master bits, the BARs'
    /// address bits and PMCSR's power state (D0/D3hot) take a write; every other byte is
    /// read-only here. `None` if malformed.
    pub fn write(&mut self, offset: u32, size: u32, value: u32) -> Option<()> {
        let (at, n) = Self::check(offset, size)?;
        let bytes = value.to_le_bytes();
        for (i, &byte) in bytes.iter().enumerate().take(n) {
            let a = at + i;
            if (0x10..0x28).contains(&a) {
                // CAST: a byte of the BAR's mask.
                let mask = (self.bar_masks[(a - 0x10) / 4] >> ((a % 4) * 8)) as u8;
                self.bytes[a] = (self.bytes[a] & !mask) | (byte & mask);
            }
            if a == 0x04 {
                let mask = (COMMAND_MEMORY | COMMAND_BUS_MASTER) as u8;
                self.bytes[a] = (self.bytes[a] & !mask) | (byte & mask);
            }
            // PMCSR PowerState (bits 1:0): D0 and D3hot take (PM spec 1.2, 3.2.4: a write of a
            // state the PMC does not advertise, D1 or D2 here, is ignored). Linux's vfio-pci
            // puts an idle device in D3hot and reads the state back; QEMU tracks it too and
            // unmaps the BARs until D0.
            if a == PM_CAP as usize + 4 && matches!(byte & 3, 0 | 3) {
                self.bytes[a] = (self.bytes[a] & !3) | (byte & 3);
            }
        }
        Some(())
    }

    fn check(offset: u32, size: u32) -> Option<(usize, usize)> {
        let n = match size {
            1 | 2 | 4 => size as usize,
            _ => return None,
        };
        let at = offset as usize;
        (at.is_multiple_of(n) && at + n <= 4096).then_some((at, n))
    }

    /// The COMMAND register.
    pub fn command(&self) -> u16 {
        u16::from_le_bytes([self.bytes[4], self.bytes[5]])
    }

    /// Whether bus mastering (DMA) is enabled.
    pub fn bus_master(&self) -> bool {
        self.command() & COMMAND_BUS_MASTER != 0
    }

    /// Back to the values after reset (COMMAND cleared: no memory decode, no DMA).
    pub fn reset(&mut self) {
        self.bytes = self.initial.clone();
    }

    /// The first 256 bytes, for the PCI config mirror GSP-RM reads in BAR0.
    pub fn header(&self) -> &[u8] {
        &self.bytes[..256]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip::SimChip;

    #[test]
    fn ids_class_and_bus_master() {
        let spec = SimChip::Gh100.spec();
        let mut c = ConfigSpace::new(spec, 0xa000_0000, 0x80_0000_0000, 0xb000_0000);
        assert_eq!(c.read(0, 4), Some(0x2335_10de));
        assert_eq!(c.read(0x0b, 1), Some(0x03), "display controller");
        assert_eq!(c.read(0x18, 4), Some(0x80), "BAR1 upper half");
        assert!(!c.bus_master());
        c.write(4, 2, 0xffff).unwrap();
        assert_eq!(c.command(), COMMAND_MEMORY | COMMAND_BUS_MASTER);
        c.write(0, 4, 0).unwrap();
        assert_eq!(c.read(0, 2), Some(0x10de), "ids are read-only");
        assert_eq!(c.read(3, 2), None, "misaligned");
        assert_eq!(c.read(4094, 4), None, "past the end");
        // Capabilities: PM (D0/D3hot) then PCIe (FLR capable).
        assert_eq!(c.read(0x34, 1), Some(PM_CAP));
        let pmcsr = PM_CAP + 4;
        c.write(pmcsr, 2, 3).unwrap();
        assert_eq!(c.read(pmcsr, 2).map(|v| v & 3), Some(3), "D3hot");
        c.write(pmcsr, 2, 1).unwrap();
        assert_eq!(
            c.read(pmcsr, 2).map(|v| v & 3),
            Some(3),
            "D1 is not advertised"
        );
        assert_eq!(c.read(PM_CAP + 1, 1), Some(PCIE_CAP));
        assert_ne!(
            c.read(PCIE_CAP + 4, 4).unwrap() & (1 << 28),
            0,
            "FLR capable"
        );
        // BARs: sized by writing all ones, then placed where software puts them.
        c.write(0x10, 4, u32::MAX).unwrap();
        assert_eq!(
            c.read(0x10, 4),
            Some(!(spec.bar0_size as u32 - 1)),
            "BAR0 sizing"
        );
        c.write(0x10, 4, 0xfd00_0000).unwrap();
        c.set_bar_size(1, 256 << 20);
        c.write(0x14, 4, 0x1000_0000).unwrap();
        c.write(0x18, 4, 0xc0).unwrap();
        assert_eq!(c.read(0x10, 4), Some(0xfd00_0000));
        assert_eq!(c.read(0x14, 4), Some(0x1000_000c), "type bits kept");
        assert_eq!(c.read(0x18, 4), Some(0xc0));
        c.reset();
        assert!(!c.bus_master());
        assert_eq!(c.read(pmcsr, 2).map(|v| v & 3), Some(0), "D0 after reset");
    }
}
