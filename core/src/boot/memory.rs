//! The DMA memory of one boot: every allocation, by what it holds, so that teardown and
//! every error path give all of it back (`Platform::dma_free`), and nothing is freed twice.

use alloc::vec::Vec;

use super::error::BootErrorKind;
use crate::hal::{DMA_PAGE, DmaMemory, Platform};

/// What a DMA allocation holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Region {
    /// The radix3 page tables followed by the GSP-RM image.
    Radix3,
    /// The GSP-RM signature for the chip (`sysmemAddrOfSignature`).
    Signature,
    /// The RISC-V bootloader image (`sysmemAddrOfBootloader`).
    Bootloader,
    /// `GspFwWprMeta`.
    WprMeta,
    /// The libos init-argument page.
    LibosArgs,
    /// `GSP_ARGUMENTS_CACHED` (the `RMARGS` region).
    RmArgs,
    /// Page table, command queue and status queue.
    Queues,
    /// One libos log buffer (index into `LOG_BUFFER_NAMES`).
    Log(u8),
    /// `GSP_FMC_BOOT_PARAMS`.
    FmcBootParams,
    /// The FMC's `image` section, which FSP verifies and GSP runs first.
    FmcImage,
    /// The sysmem flush buffer (`sysmem_flush`).
    SysmemFlush,
    /// FWSEC, patched, for the GSP falcon to load by DMA (booter path, GA10x+).
    Fwsec,
    /// `booter_load` or `booter_unload`, signature patched, for SEC2 (booter path, GA10x+).
    Booter,
}

impl Region {
    /// What the region is, for errors.
    pub const fn what(self) -> &'static str {
        match self {
            Region::Radix3 => "the GSP-RM image and its radix3 tables",
            Region::Signature => "the GSP-RM signature",
            Region::Bootloader => "the RISC-V bootloader",
            Region::WprMeta => "GspFwWprMeta",
            Region::LibosArgs => "the libos init arguments",
            Region::RmArgs => "GSP_ARGUMENTS_CACHED",
            Region::Queues => "the message queues",
            Region::Log(_) => "a libos log buffer",
            Region::FmcBootParams => "GSP_FMC_BOOT_PARAMS",
            Region::FmcImage => "the FMC image",
            Region::SysmemFlush => "the sysmem flush buffer",
            Region::Fwsec => "the FWSEC ucode",
            Region::Booter => "the booter ucode",
        }
    }
}

/// The DMA allocations of one boot.
#[derive(Debug, Default)]
pub struct BootMemory {
    regions: Vec<(Region, DmaMemory)>,
}

impl BootMemory {
    /// No allocations yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allocates at least `bytes` (rounded up to whole pages) for `region`; `contiguous`
    /// asks for one bus range. The platform's answer is checked: enough bytes, one bus
    /// address per page, contiguous when asked.
    pub fn alloc(
        &mut self,
        platform: &mut impl Platform,
        region: Region,
        bytes: usize,
        contiguous: bool,
    ) -> Result<&DmaMemory, BootErrorKind> {
        let bytes = bytes.max(1).next_multiple_of(DMA_PAGE);
        let mem = platform
            .dma_alloc(bytes, contiguous)
            .map_err(|source| BootErrorKind::Dma {
                what: region.what(),
                source,
            })?;
        let why = if mem.len() < bytes {
            Some("smaller than asked")
        } else if mem.bus_pages.len() != mem.len().div_ceil(DMA_PAGE) {
            Some("not one bus address per page")
        } else if mem.bus_pages.iter().any(|a| a % DMA_PAGE as u64 != 0) {
            Some("a page bus address is not 4 KiB aligned")
        } else if contiguous && !mem.is_contiguous() {
            Some("not contiguous on the bus")
        } else {
            None
        };
        if let Some(why) = why {
            // SAFETY: `mem` was allocated just above; no view of it was taken and the device
            // was told nothing about it.
            unsafe { platform.dma_free(mem) };
            return Err(BootErrorKind::BadDmaMemory {
                what: region.what(),
                why,
            });
        }
        self.regions.push((region, mem));
        let last = self.regions.len() - 1;
        Ok(&self.regions[last].1)
    }

    /// The allocation holding `region`.
    pub fn get(&self, region: Region) -> Option<&DmaMemory> {
        self.regions
            .iter()
            .find(|(r, _)| *r == region)
            .map(|(_, m)| m)
    }

    /// The bus address of byte 0 of `region`.
    pub fn bus_addr(&self, region: Region) -> Option<u64> {
        self.get(region).and_then(|m| m.bus_pages.first().copied())
    }

    /// Number of allocations held.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// Gives every allocation back.
    ///
    /// # Safety
    /// As [`Platform::dma_free`] for every region: no view of their memory lives (the RPC
    /// channel's queues and log buffers are dropped) and the device no longer uses them
    /// (GSP-RM halted, or the device was reset, or it was never started).
    pub unsafe fn free_all(&mut self, platform: &mut impl Platform) {
        for (_, mem) in self.regions.drain(..) {
            // SAFETY: this function's contract, for every region.
            unsafe { platform.dma_free(mem) };
        }
    }
}
