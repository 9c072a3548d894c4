//! The bare-metal side: the PVH boot stub, the machine (memory map, heap, page tables, clock,
//! ACPI, PCI), the board's `Platform`, the firmware module, and the program that drives the
//! GPU; each step reported on COM1, and QEMU told the outcome through `isa-debug-exit`.

mod acpi;
mod board;
mod boot;
mod clock;
mod firmware;
mod heap;
mod memory;
mod paging;
mod pci;
mod port;
mod program;
mod pvh;
mod report;
mod serial;

use alloc::format;
use core::fmt::Write;

use nvbare_core::boot::Firmware;
use nvbare_core::chip::Chip;
use nvbare_core::hal::Clock;

use board::{Bars, Board};
use pci::Ecam;
use report::Report;

#[global_allocator]
static HEAP: heap::BumpHeap = heap::BumpHeap::new();

/// The boot stub calls this in long mode, on its stack, with the identity map of the first
/// 512 GiB, and the physical address of PVH's `hvm_start_info`.
extern "C" fn kmain(start_info: u32) -> ! {
    let mut r = Report::new(serial::Com1::init());
    let _ = writeln!(r.out, "NVBARE-EMBED up");
    if let Some((board, fw)) = machine(&mut r, u64::from(start_info)) {
        program::run(&mut r, board, &fw);
    }
    let ok = r.finish();
    let _ = writeln!(
        r.out,
        "nvbare-embed: heap high-water {} KiB",
        HEAP.peak() >> 10
    );
    port::qemu_exit(if ok { 0 } else { 1 });
    halt()
}

/// A failed step before the heap exists: its line, without allocating.
fn early_failure<T>(r: &mut Report, step: &str, e: &'static str) -> Option<T> {
    r.step::<(), _>(step, None, Err(e));
    None
}

/// The machine: memory, heap, page tables, clock, the GPU on the PCI bus, its BARs, and the
/// firmware module; the board and the firmware for the program.
fn machine(r: &mut Report, start_info: u64) -> Option<(Board, Firmware<'static>)> {
    let boot = match pvh::Boot::read(start_info) {
        Ok(b) => b,
        Err(e) => return early_failure(r, "boot", e),
    };
    let layout = match memory::layout(&boot) {
        Ok(l) => l,
        Err(e) => return early_failure(r, "memory", e),
    };
    // SAFETY: `memory::layout` chose free RAM for the heap (no image, loader table or
    // module in it); given once, before the first allocation.
    unsafe { HEAP.init(layout.heap.0, layout.heap.1) };
    let detail = format!(
        "PVH start info at {:#x}: {} MiB RAM in {} map entries, {} module(s); image {:#x}..{:#x}",
        boot.at,
        boot.ram_bytes() >> 20,
        boot.memory_map.len(),
        boot.modules.len(),
        memory::image().0,
        memory::image().1,
    );
    r.step("boot", None, Ok::<_, &str>(((), detail)));
    let detail = format!(
        "heap {} MiB at {:#x}, DMA {} MiB at {:#x}",
        layout.heap.1 >> 20,
        layout.heap.0,
        layout.dma.1 >> 20,
        layout.dma.0
    );
    r.step("memory", None, Ok::<_, &str>(((), detail)));
    // SAFETY: once, the stub's tables live, `memory_map` the machine's.
    let mut paging = unsafe { paging::Paging::take_over(boot.memory_map) };
    let clock = clock::Tsc::new(acpi::pm_timer_port(boot.rsdp));
    r.note(format_args!(
        "TSC at {} MHz (from {})",
        clock.hz() / 1_000_000,
        clock.source()
    ));

    let t = clock.now_ns();
    let found = acpi::find_mcfg(boot.rsdp).and_then(|mcfg| {
        let ecam = Ecam(mcfg);
        let (f, id, class) = ecam.find_gpu().ok_or(
            "no NVIDIA display controller on the PCI bus (QEMU: -device vfio-user-pci,socket=...)",
        )?;
        let detail = format!(
            "{:02x}:{:02x}.{} {:04x}:{:04x} class {class:06x} (ECAM {:#x}, buses {}..={})",
            f.bus,
            f.device,
            f.function,
            id & 0xffff,
            id >> 16,
            mcfg.base,
            mcfg.first_bus,
            mcfg.last_bus
        );
        Ok(((ecam, f, id), detail))
    });
    let (ecam, gpu, id) = r.step("gpu-found", Some((&clock, t)), found)?;
    // CAST: the device id is the dword's high half.
    let device = (id >> 16) as u16;

    let bars = (|| {
        let bar = |i| ecam.bar(gpu, i);
        let bars = Bars {
            bar0: bar(0).ok_or("BAR0 is not a memory BAR")?,
            bar1: bar(1).ok_or("BAR1 is not a memory BAR")?,
            bar3: bar(3),
        };
        for (start, len) in [Some(bars.bar0), Some(bars.bar1), bars.bar3]
            .into_iter()
            .flatten()
        {
            if start == 0 {
                return Err("a BAR without an address (the firmware assigned none)");
            }
            paging.map_mmio(start, len)?;
        }
        // As after a reset: the boot turns memory decoding on, and bus mastering only
        // once nothing of an earlier boot can still run (core::boot::identify).
        let cmd = ecam.read(gpu, pci::COMMAND, 2).unwrap_or(0);
        ecam.write(gpu, pci::COMMAND, 2, cmd & !pci::COMMAND_MASTER);
        let mib = |b: (u64, u64)| format!("{:#x} ({} MiB)", b.0, b.1 >> 20);
        let detail = format!(
            "BAR0 {}, BAR1 {}, BAR3 {}; PCI_COMMAND was {cmd:#06x}, bus mastering off until the boot asks",
            mib(bars.bar0),
            mib(bars.bar1),
            bars.bar3.map_or("none".into(), mib)
        );
        Ok((bars, detail))
    })();
    let bars = r.step("bars", None, bars)?;

    let fw = (|| {
        let chip = Chip::from_pci_device_id(device)
            .ok_or_else(|| format!("PCI device id {device:#06x} is not a chip nvbare knows"))?;
        let module = boot
            .modules
            .first()
            .ok_or("no boot module: give QEMU the firmware archive with -initrd")?;
        // SAFETY: the module lies in RAM the loader filled before the entry, identity mapped,
        // excluded from the heap and DMA (`memory::layout`), never written.
        // CAST: a module in RAM below 4 GiB has a size that fits usize.
        let archive = unsafe { memory::loader_slice::<u8>(module.paddr, module.size as usize) };
        let fw = firmware::for_chip(archive, chip)?;
        let detail = format!(
            "nvidia/{}/gsp from the boot module ({} MiB at {:#x}): fmc {}, gsp {}, bootloader {} bytes",
            chip.firmware_dir(),
            module.size >> 20,
            module.paddr,
            fw.fmc.len(),
            fw.gsp.len(),
            fw.bootloader.len()
        );
        Ok::<_, alloc::string::String>((fw, detail))
    })();
    let fw = r.step("firmware", None, fw)?;
    Some((Board::new(clock, ecam, gpu, bars, layout.dma), fw))
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let mut out = serial::Com1::init();
    let _ = writeln!(out, "NVBARE-CHECK panic fail {info}");
    let _ = writeln!(out, "NVBARE-CHECK done fail panicked");
    port::qemu_exit(1);
    halt()
}

/// Stops the CPU for good.
fn halt() -> ! {
    loop {
        // SAFETY: `hlt` only waits for an interrupt; with them masked it stops the CPU.
        unsafe { core::arch::asm!("cli; hlt", options(nomem, nostack)) };
    }
}
