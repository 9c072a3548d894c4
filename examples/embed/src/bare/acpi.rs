//! Just enough ACPI to find PCI Express configuration space and a timer: the RSDP (from the
//! PVH start info, else the BIOS area scan of ACPI 6.5 §5.2.5.1), the RSDT/XSDT, the MCFG
//! table (PCI Firmware 3.3 §4.1.2) whose first entry gives segment 0's ECAM base and bus
//! range, and the FADT's power-management timer port (ACPI 6.5 §5.2.9, `PM_TMR_BLK`).

use super::memory;

/// ECAM of PCI segment 0.
#[derive(Clone, Copy, Debug)]
pub struct Mcfg {
    /// The base address (bus 0).
    pub base: u64,
    /// The first bus it decodes.
    pub first_bus: u8,
    /// The last bus it decodes.
    pub last_bus: u8,
}

/// Bytes of ACPI memory.
fn bytes(paddr: u64, len: usize) -> &'static [u8] {
    // SAFETY: ACPI tables lie in RAM the firmware reserved for them (identity mapped below
    // 4 GiB), written before the loader ran and never after; callers take addresses from
    // the RSDP chain and lengths from the tables' headers.
    unsafe { memory::loader_slice(paddr, len) }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from(u32_at(b, at)) | u64::from(u32_at(b, at + 4)) << 32
}

fn sums_to_zero(b: &[u8]) -> bool {
    b.iter().fold(0u8, |a, &x| a.wrapping_add(x)) == 0
}

/// A table at `paddr` (its header's length, checked against its checksum).
fn table(paddr: u64) -> Option<&'static [u8]> {
    if paddr == 0 {
        return None;
    }
    // CAST: a u32 length fits usize on x86_64.
    let len = u32_at(bytes(paddr, 36), 4) as usize;
    // A header claiming less than itself or more than 1 MiB is not a table.
    if !(36..=1 << 20).contains(&len) {
        return None;
    }
    let t = bytes(paddr, len);
    sums_to_zero(t).then_some(t)
}

/// The RSDP: the loader's, else the first valid one in the BIOS read-only area.
fn rsdp(given: u64) -> Option<&'static [u8]> {
    let valid = |at: u64| {
        let r = bytes(at, 20);
        (&r[..8] == b"RSD PTR " && sums_to_zero(r)).then_some(r)
    };
    if given != 0 {
        return valid(given);
    }
    (0xe_0000..0x10_0000).step_by(16).find_map(valid)
}

/// The table with `signature`, through the RSDP at `rsdp_paddr` (0: search).
fn find(rsdp_paddr: u64, signature: &[u8; 4]) -> Result<&'static [u8], &'static str> {
    let r = rsdp(rsdp_paddr).ok_or("no ACPI RSDP (is this a PC with ACPI?)")?;
    // ACPI 2.0+: the XSDT (64-bit entries); before that the RSDT (32-bit entries).
    // PANIC: none; `rsdp` checked 20 bytes, a revision 2 RSDP has 36.
    let revision = r[15];
    let (sdt, entry) = if revision >= 2 {
        // CAST: identity mapped: the pointer is the physical address.
        (table(u64_at(bytes(r.as_ptr() as u64, 36), 24)), 8)
    } else {
        (table(u64::from(u32_at(r, 16))), 4)
    };
    let sdt = sdt.ok_or("the ACPI RSDT/XSDT is missing or fails its checksum")?;
    // PANIC: none; `table` checked the length is at least the 36-byte header.
    sdt[36..]
        .chunks_exact(entry)
        .map(|e| {
            if entry == 8 {
                u64_at(e, 0)
            } else {
                u64::from(u32_at(e, 0))
            }
        })
        .filter_map(table)
        .find(|t| &t[..4] == signature)
        .ok_or("an ACPI table is missing")
}

/// The ACPI power-management timer's I/O port (`PM_TMR_BLK`; a 3.579545 MHz counter), if
/// the FADT gives one.
pub fn pm_timer_port(rsdp_paddr: u64) -> Option<u16> {
    let fadt = find(rsdp_paddr, b"FACP").ok()?;
    let port = u32_at(fadt.get(..80)?, 76);
    // CAST: I/O ports are 16-bit; a larger value is not a port.
    (port != 0 && port <= 0xffff).then_some(port as u16)
}

/// Segment 0's ECAM from the MCFG table, through the RSDP at `rsdp_paddr` (0: search).
pub fn find_mcfg(rsdp_paddr: u64) -> Result<Mcfg, &'static str> {
    let mcfg = find(rsdp_paddr, b"MCFG")
        .map_err(|_| "no ACPI MCFG table: this machine has no PCI Express ECAM (QEMU: -M q35)")?;
    // Header (36) and 8 reserved bytes, then 16-byte entries: base, segment, bus range.
    let e = mcfg
        .get(44..60)
        .ok_or("the ACPI MCFG table has no entries")?;
    if u16::from_le_bytes([e[8], e[9]]) != 0 {
        return Err("the ACPI MCFG's first entry is not PCI segment 0");
    }
    Ok(Mcfg {
        base: u64_at(e, 0),
        first_bus: e[10],
        last_bus: e[11],
    })
}
