//! The boot structures in DMA memory, as OpenRM builds them for an FSP boot
//! (`kgspInitRm_IMPL` → `kgspPrepareBootBinaryImage`, `_kgspPrepareGspRmBinaryImage`,
//! `_kgspInitLibosLoggingStructures`, `kgspSetupLibosInitArgs`, `kgspPopulateGspRmInitArgs`,
//! `GspMsgQueuesInit`; `kgspCalculateFbLayout_GH100`, `kgspSetupGspFmcArgs_GH100`,
//! `kfspSetupGspImages`):
//!
//! | region | holds | contiguous |
//! |---|---|---|
//! | radix3 | level-0..2 page tables, then the GSP-RM `.fwimage` | no (the tables describe it) |
//! | signature | the chip's `.fwsignature_*` | yes |
//! | bootloader | the bootloader's loadable image | yes |
//! | 5 log buffers | put pointer, then the PTEs of the buffer (OpenRM writes them), 64 KiB | yes |
//! | queues | page table, command queue, status queue (2 × 256 KiB) | no (page table) |
//! | RMARGS | `GSP_ARGUMENTS_CACHED` | yes |
//! | libos args | `LibosMemoryRegionInitArgument`s of the log buffers and RMARGS | yes |
//! | WPR meta | `GspFwWprMeta` (sizes only; GSP-FMC places WPR2) | yes |
//! | FMC boot params | `GSP_FMC_BOOT_PARAMS` | yes |
//! | FMC image | the FMC's `image` section | yes |

use alloc::vec::Vec;

use nvbare_gsp::boot::wpr_meta::{WprMetaInputs, wpr_meta_fmc};
use nvbare_gsp::boot::{
    LOG_BUFFER_NAMES, LibosRegion, Radix3Layout, fmc_boot_params, gsp_arguments_cached,
    libos_init_args_page,
};
use nvbare_gsp::firmware::{GspRmImage, RiscvBootloader};
use nvbare_gsp::msgq::SharedQueueLayout;
use zerocopy::IntoBytes;

use super::error::BootErrorKind;
use super::firmware::BootImages;
use super::layout::FbLayout;
use super::memory::{BootMemory, Region};
use crate::gsp_rpc::LogBuffer;
use crate::gsp_rpc::queues::{QueueSetupError, SharedQueues};
use crate::hal::{DMA_PAGE, Platform};
use crate::shared::SharedMem;

/// Size of each libos log buffer (`_kgspInitLibosLoggingStructures`, release builds: 64 KiB
/// for every buffer).
pub const LOG_BUFFER_SIZE: usize = 0x10000;

/// Bus addresses of what was built, for the COT payload and the checks after boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootAddresses {
    /// Page 0 of the radix3 buffer (`sysmemAddrOfRadix3Elf`).
    pub radix3: u64,
    /// `GspFwWprMeta`.
    pub wpr_meta: u64,
    /// The libos init-argument page (`bootArgsOffset`).
    pub libos_args: u64,
    /// `GSP_FMC_BOOT_PARAMS` (`gspBootArgsSysmemOffset`).
    pub fmc_boot_params: u64,
    /// The FMC image (`gspFmcSysmemOffset`).
    pub fmc_image: u64,
}

/// What the structures stage hands on.
#[derive(Debug)]
pub struct Built {
    /// Bus addresses.
    pub addresses: BootAddresses,
    /// The shared queues (command header written).
    pub queues: SharedQueues,
    /// The log buffers, for diagnostics.
    pub logs: Vec<LogBuffer>,
}

fn write(mem: &SharedMem, offset: usize, data: &[u8], region: Region) -> Result<(), BootErrorKind> {
    mem.write_bytes(offset, data)
        .map_err(|source| BootErrorKind::Memory {
            what: region.what(),
            source,
        })
}

/// Allocates `region` and fills it with `data` at offset 0; returns its bus address.
fn alloc_with(
    platform: &mut impl Platform,
    memory: &mut BootMemory,
    region: Region,
    data: &[u8],
) -> Result<u64, BootErrorKind> {
    let m = memory.alloc(platform, region, data.len(), true)?;
    write(&m.cpu, 0, data, region)?;
    // PANIC: alloc checked there is one bus address per page, and at least one page.
    Ok(m.bus_pages[0])
}

/// What both boot paths build: the images, logs, queues and arguments, and what the WPR
/// metadata says of them.
#[derive(Debug)]
pub struct SharedBuilt {
    /// The WPR metadata's image fields.
    pub inputs: WprMetaInputs,
    /// Bus address of page 0 of the radix3 buffer.
    pub radix3: u64,
    /// Bus address of the libos init-argument page.
    pub libos_args: u64,
    /// The shared queues.
    pub queues: SharedQueues,
    /// The log buffers.
    pub logs: Vec<LogBuffer>,
}

/// Allocates `region` holding `data` (contiguous); returns its bus address.
pub fn alloc_region(
    platform: &mut impl Platform,
    memory: &mut BootMemory,
    region: Region,
    data: &[u8],
) -> Result<u64, BootErrorKind> {
    alloc_with(platform, memory, region, data)
}

/// Builds every boot structure of `images` into DMA memory held by `memory` (the FSP path:
/// the shared structures, then the WPR sizes, the FMC boot parameters and the FMC). On
/// error, what was allocated stays in `memory` for the caller to free.
pub fn build(
    platform: &mut impl Platform,
    memory: &mut BootMemory,
    images: &BootImages<'_>,
    layout: &FbLayout,
) -> Result<Built, BootErrorKind> {
    let shared = build_shared(platform, memory, &images.gsp, &images.bootloader)?;
    let meta = wpr_meta_fmc(&shared.inputs, &layout.sizes);
    let wpr_meta = alloc_with(platform, memory, Region::WprMeta, meta.as_bytes())?;

    let params = fmc_boot_params(wpr_meta, shared.libos_args);
    let fmc_boot_params = alloc_with(platform, memory, Region::FmcBootParams, params.as_bytes())?;
    let fmc_image = alloc_with(platform, memory, Region::FmcImage, images.fmc.image)?;

    Ok(Built {
        addresses: BootAddresses {
            radix3: shared.radix3,
            wpr_meta,
            libos_args: shared.libos_args,
            fmc_boot_params,
            fmc_image,
        },
        queues: shared.queues,
        logs: shared.logs,
    })
}

/// Builds what both paths share: GSP-RM behind its radix3 tables, its signature, the
/// bootloader, the log buffers, the queues, RMARGS and the libos arguments.
pub fn build_shared(
    platform: &mut impl Platform,
    memory: &mut BootMemory,
    gsp: &GspRmImage<'_>,
    boot: &RiscvBootloader<'_>,
) -> Result<SharedBuilt, BootErrorKind> {
    // The GSP-RM image behind its radix3 tables.
    let image = gsp.image;
    let radix =
        Radix3Layout::for_image(image.len() as u64).map_err(|_| BootErrorKind::Structure {
            what: "radix3 tables",
            why: "the GSP-RM image is empty or larger than 512 GiB",
        })?;
    // CAST: page counts of an image held in memory fit usize.
    let pages = radix.total_pages() as usize;
    let m = memory.alloc(platform, Region::Radix3, pages * DMA_PAGE, false)?;
    let tables =
        radix
            .build_tables(&m.bus_pages[..pages])
            .map_err(|_| BootErrorKind::Structure {
                what: "radix3 tables",
                why: "the platform's page addresses are not 4 KiB aligned",
            })?;
    write(&m.cpu, 0, &tables, Region::Radix3)?;
    // CAST: as above.
    write(&m.cpu, radix.image_offset() as usize, image, Region::Radix3)?;
    let radix3 = m.bus_pages[0];

    let signature = alloc_with(platform, memory, Region::Signature, gsp.signature)?;
    let bootloader = alloc_with(platform, memory, Region::Bootloader, boot.image)?;

    // Libos log buffers: the put pointer (0) then the PTEs of the buffer's pages.
    let mut logs = Vec::with_capacity(LOG_BUFFER_NAMES.len());
    let mut regions = Vec::with_capacity(LOG_BUFFER_NAMES.len() + 1);
    for (i, name) in LOG_BUFFER_NAMES.iter().enumerate() {
        // CAST: five buffers.
        let region = Region::Log(i as u8);
        let m = memory.alloc(platform, region, LOG_BUFFER_SIZE, true)?;
        let mut ptes = Vec::with_capacity(m.bus_pages.len() * 8);
        for p in &m.bus_pages[..LOG_BUFFER_SIZE / DMA_PAGE] {
            ptes.extend_from_slice(&p.to_le_bytes());
        }
        write(&m.cpu, 8, &ptes, region)?;
        regions.push(LibosRegion {
            name,
            pa: m.bus_pages[0],
            // CAST: 64 KiB.
            size: LOG_BUFFER_SIZE as u64,
        });
        logs.push(LogBuffer {
            name,
            mem: m
                .cpu
                .slice(0, LOG_BUFFER_SIZE)
                .map_err(|source| BootErrorKind::Memory {
                    what: region.what(),
                    source,
                })?,
        });
    }

    // The message queues: page table of the whole block, then the command queue's header.
    let qlayout = SharedQueueLayout::default_sizes();
    let m = memory.alloc(platform, Region::Queues, qlayout.total_size(), false)?;
    let pt = qlayout
        .page_table(&m.bus_pages[..qlayout.total_pages()])
        .map_err(BootErrorKind::Queues)?;
    write(&m.cpu, 0, &pt, Region::Queues)?;
    let queue_mem =
        m.cpu
            .slice(0, qlayout.total_size())
            .map_err(|source| BootErrorKind::Memory {
                what: Region::Queues.what(),
                source,
            })?;
    let queues_pa = m.bus_pages[0];
    let queues = SharedQueues::new(queue_mem, qlayout).map_err(|e| match e {
        QueueSetupError::Layout(e) => BootErrorKind::Queues(e),
        QueueSetupError::Memory(source) => BootErrorKind::Memory {
            what: Region::Queues.what(),
            source,
        },
    })?;

    // RMARGS, then the libos argument page naming the log buffers and RMARGS.
    let rm_args = gsp_arguments_cached(qlayout.init_arguments(queues_pa));
    let rm_args_pa = alloc_with(platform, memory, Region::RmArgs, rm_args.as_bytes())?;
    regions.push(LibosRegion {
        name: "RMARGS",
        pa: rm_args_pa,
        // CAST: one page.
        size: DMA_PAGE as u64,
    });
    let libos_args = alloc_with(
        platform,
        memory,
        Region::LibosArgs,
        &libos_init_args_page(&regions),
    )?;

    // What the WPR metadata says of the images.
    let desc = &boot.desc;
    let inputs = WprMetaInputs {
        radix3_sysmem_addr: radix3,
        radix3_image_size: image.len() as u64,
        bootloader_sysmem_addr: bootloader,
        bootloader_size: boot.image.len() as u64,
        bootloader_code_offset: desc.monitor_code_offset.into(),
        bootloader_data_offset: desc.monitor_data_offset.into(),
        bootloader_manifest_offset: desc.manifest_offset.into(),
        signature_sysmem_addr: signature,
        signature_size: gsp.signature.len() as u64,
    };
    Ok(SharedBuilt {
        inputs,
        radix3,
        libos_args,
        queues,
        logs,
    })
}
