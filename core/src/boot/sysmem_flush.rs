//! The sysmem flush buffer: one page of DMA memory that every system membar reads, held for
//! GSP-RM's whole life and programmed before the FSP chain of trust.
//!
//! OpenRM allocates it in `kmemsysConstructEngine_IMPL` for a GSP client, before GSP boots
//! ("Setting up the sysmem flush buffer needs to be done very early ... it's required for
//! the GPU to perform a system flush"), one `RM_PAGE_SIZE` page aligned to the register's
//! shift, and frees it only at destruction; `kern_mem_sys_ga100.c`: "The sysmembar flush
//! does a zero byte read of sysmem ... The actual memory does have to be valid and
//! allocated at all times because an actual read may be issued." nouveau does the same
//! (`flush_page_init` in `fb/gh100.c`, `fb/gb202.c`). Unprogrammed, every flush reads bus
//! address 0: behind an IOMMU an IOVA fault on GSP-RM's first queue write, a TLB
//! invalidate's SYS_MEMBAR, every membar'd semaphore release.
//!
//! The page is a boot region ([`Region::SysmemFlush`]), so it is freed with the rest of the
//! boot's memory, after the teardown halted GSP-RM (or after the reset of a failed boot).

use super::error::BootErrorKind;
use super::memory::{BootMemory, Region};
use crate::chip::Arch;
use crate::hal::{DMA_PAGE, Platform};
use crate::regs::fb::write_sysmem_flush_address;

/// Allocates the flush page and programs its bus address into `arch`'s registers; returns
/// the address.
pub fn program(
    p: &mut impl Platform,
    memory: &mut BootMemory,
    arch: Arch,
) -> Result<u64, BootErrorKind> {
    let page = memory.alloc(p, Region::SysmemFlush, DMA_PAGE, true)?;
    // PANIC: BootMemory::alloc checked one bus address per page, and a page was asked.
    let address = page.bus_pages[0];
    write_sysmem_flush_address(&*p, arch, address).map_err(BootErrorKind::SysmemFlush)?;
    log::debug!("boot: sysmem flush buffer at bus address {address:#x}");
    Ok(address)
}
