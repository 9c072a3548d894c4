//! Boot structures the CPU prepares for GSP-RM: libos memory-region arguments (log buffers
//! and `RMARGS`), `GSP_ARGUMENTS_CACHED`, radix3 page tables for the image ([`radix3`]),
//! the WPR metadata and FB-heap sizing ([`wpr_meta`]) and the FMC boot parameters of the FSP
//! path ([`fmc`]).

pub mod fmc;
pub mod radix3;
pub mod wpr_meta;

use alloc::vec::Vec;

use crate::abi::{
    GspArgumentsCached, LIBOS_MEMORY_REGION_CONTIGUOUS, LIBOS_MEMORY_REGION_LOC_SYSMEM,
    LibosMemoryRegionInitArgument, MessageQueueInitArguments,
};
use zerocopy::{FromZeros, IntoBytes};

pub use fmc::fmc_boot_params;
pub use radix3::{Radix3Error, Radix3Layout};
pub use wpr_meta::{HeapFamily, WprMetaInputs, gsp_fw_heap_size};

/// Packs up to eight ASCII characters into a `u64`, first character most significant:
/// `_kgspGenerateInitArgId` (`kernel_gsp.c`). `"LOGINIT"` -> `0x004c_4f47_494e_4954`.
pub fn init_arg_id(name: &str) -> u64 {
    name.bytes()
        .take(8)
        .fold(0u64, |id, c| (id << 8) | u64::from(c))
}

/// One libos memory region: a physically contiguous sysmem buffer GSP-RM finds by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LibosRegion<'a> {
    /// The region's name (`"LOGINIT"`, `"RMARGS"`), at most 8 characters.
    pub name: &'a str,
    /// Bus address.
    pub pa: u64,
    /// Bytes.
    pub size: u64,
}

impl LibosRegion<'_> {
    /// The `LibosMemoryRegionInitArgument` for this region (contiguous, in sysmem).
    pub fn to_init_argument(&self) -> LibosMemoryRegionInitArgument {
        LibosMemoryRegionInitArgument {
            id8: init_arg_id(self.name),
            pa: self.pa,
            size: self.size,
            kind: LIBOS_MEMORY_REGION_CONTIGUOUS,
            loc: LIBOS_MEMORY_REGION_LOC_SYSMEM,
            _pad0: [0; 6],
        }
    }
}

/// The names of the five libos log buffers in the order GSP-RM 570.144 expects them
/// (`LOGINIT` first for early init logging, `kgspSetupLibosInitArgs_IMPL`), as tinygrad
/// registers them.
pub const LOG_BUFFER_NAMES: [&str; 5] = ["LOGINIT", "LOGINTR", "LOGRM", "LOGMNOC", "LOGKRNL"];

/// The libos init-argument page contents: the entries for `regions`, in order, then zeros
/// up to `LIBOS_MEMORY_REGION_INIT_ARGUMENTS_MAX` (4 KiB). Its bus address goes to the GSP
/// falcon's mailbox (Ampere/Ada) or `GSP_FMC_BOOT_PARAMS.gspRmParams.bootArgsOffset`.
pub fn libos_init_args_page(regions: &[LibosRegion<'_>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(crate::abi::LIBOS_MEMORY_REGION_INIT_ARGUMENTS_MAX);
    for r in regions {
        out.extend_from_slice(r.to_init_argument().as_bytes());
    }
    out.resize(
        out.len()
            .max(crate::abi::LIBOS_MEMORY_REGION_INIT_ARGUMENTS_MAX),
        0,
    );
    out
}

/// The standard region list: five log buffers of `log_size` bytes each, back to back from
/// `log_base` (`LOGINIT`, `LOGINTR`, `LOGRM`, `LOGMNOC`, `LOGKRNL`), then `RMARGS` (4 KiB at
/// `rm_args_pa`, holding [`gsp_arguments_cached`]).
pub fn standard_regions(
    log_base: u64,
    log_size: u64,
    rm_args_pa: u64,
) -> [LibosRegion<'static>; 6] {
    let log = |i: usize| LibosRegion {
        name: LOG_BUFFER_NAMES[i],
        pa: log_base + log_size * i as u64,
        size: log_size,
    };
    [
        log(0),
        log(1),
        log(2),
        log(3),
        log(4),
        LibosRegion {
            name: "RMARGS",
            pa: rm_args_pa,
            size: 0x1000,
        },
    ]
}

/// `GSP_ARGUMENTS_CACHED` as the CPU fills it for a cold boot (`kgspPopulateGspRmInitArgs`):
/// the queue arguments, `bDmemStack` set, no suspend/resume state, no profiler buffer,
/// GPU instance 0.
pub fn gsp_arguments_cached(queues: MessageQueueInitArguments) -> GspArgumentsCached {
    let mut a = GspArgumentsCached::new_zeroed();
    a.message_queue_init_arguments = queues;
    a.b_dmem_stack = 1;
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_arg_ids_pack_big_endian() {
        assert_eq!(init_arg_id("LOGINIT"), 0x004c_4f47_494e_4954);
        assert_eq!(init_arg_id("RMARGS"), u64::from_be_bytes(*b"\0\0RMARGS"));
        assert_eq!(init_arg_id("ABCDEFGHIJ"), u64::from_be_bytes(*b"ABCDEFGH"));
    }

    #[test]
    fn standard_page_has_six_regions() {
        let page = libos_init_args_page(&standard_regions(0x10_0000, 0x10000, 0x20_0000));
        assert_eq!(page.len(), 4096);
        let entry = |i: usize| &page[i * 32..i * 32 + 32];
        assert_eq!(&entry(2)[0..8], &init_arg_id("LOGRM").to_le_bytes());
        assert_eq!(&entry(2)[8..16], &0x12_0000u64.to_le_bytes());
        assert_eq!(&entry(5)[16..26], &[0, 0x10, 0, 0, 0, 0, 0, 0, 1, 1]);
        assert!(entry(6).iter().all(|&b| b == 0));
    }
}
