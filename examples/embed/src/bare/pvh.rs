//! What the PVH loader hands over: `struct hvm_start_info` (Xen's
//! `public/arch-x86/hvm/start_info.h`, version 1), its module list and memory map.

use core::mem::size_of;

use super::memory;

/// `XEN_HVM_START_MAGIC_VALUE`.
const MAGIC: u32 = 0x336e_c578;
/// `XEN_HVM_MEMMAP_TYPE_RAM`.
pub const RAM: u32 = 1;

/// `struct hvm_start_info`.
#[repr(C)]
struct StartInfo {
    magic: u32,
    version: u32,
    flags: u32,
    nr_modules: u32,
    modlist_paddr: u64,
    cmdline_paddr: u64,
    rsdp_paddr: u64,
    // Version 1.
    memmap_paddr: u64,
    memmap_entries: u32,
    reserved: u32,
}

/// `struct hvm_modlist_entry`: one module (QEMU passes `-initrd` as the only one).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Module {
    /// Its physical address.
    pub paddr: u64,
    /// Its size in bytes.
    pub size: u64,
    cmdline_paddr: u64,
    reserved: u64,
}

/// `struct hvm_memmap_table_entry`: one range of the E820-style memory map.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MemoryRange {
    /// Start.
    pub addr: u64,
    /// Length in bytes.
    pub size: u64,
    /// `XEN_HVM_MEMMAP_TYPE_*` ([`RAM`] is usable RAM).
    pub kind: u32,
    reserved: u32,
}

// The header's sizes (start_info.h documents the offsets: 0x38, 0x20 and 0x18 bytes).
const _: () = assert!(size_of::<StartInfo>() == 0x38);
const _: () = assert!(size_of::<Module>() == 0x20);
const _: () = assert!(size_of::<MemoryRange>() == 0x18);

/// The start info, read.
pub struct Boot {
    /// Where the start info itself lies.
    pub at: u64,
    /// The memory map.
    pub memory_map: &'static [MemoryRange],
    /// The modules.
    pub modules: &'static [Module],
    /// The ACPI RSDP's physical address, 0 if the loader gave none.
    pub rsdp: u64,
}

impl Boot {
    /// Reads the start info at `paddr` (what the stub got in `ebx`).
    pub fn read(paddr: u64) -> Result<Self, &'static str> {
        if paddr == 0 || !paddr.is_multiple_of(8) {
            return Err(
                "no hvm_start_info (ebx was 0 or unaligned): boot this with QEMU's -kernel (PVH)",
            );
        }
        // SAFETY: the PVH loader's contract: ebx holds the address of an hvm_start_info in
        // RAM below 4 GiB (identity mapped), which nobody writes after the entry.
        let info: &StartInfo = unsafe { memory::loader_struct(paddr) };
        if info.magic != MAGIC {
            return Err("hvm_start_info has the wrong magic: not booted through PVH");
        }
        if info.version < 1 || info.memmap_entries == 0 {
            return Err("hvm_start_info has no memory map (version 0): use QEMU 4.0 or newer");
        }
        // SAFETY: as above, for the tables the start info points to, of the sizes it gives.
        let (memory_map, modules) = unsafe {
            (
                // CAST: u32 counts fit usize.
                memory::loader_slice(info.memmap_paddr, info.memmap_entries as usize),
                memory::loader_slice(info.modlist_paddr, info.nr_modules as usize),
            )
        };
        Ok(Self {
            at: paddr,
            memory_map,
            modules,
            rsdp: info.rsdp_paddr,
        })
    }

    /// Bytes of RAM in the map.
    pub fn ram_bytes(&self) -> u64 {
        self.memory_map
            .iter()
            .filter(|r| r.kind == RAM)
            .map(|r| r.size)
            .sum()
    }
}
