//! Layout of the shared queue memory: self-mapping page table, command queue, status queue.
//!
//! Mirrors `_getMsgQueueParams` and `GspMsgQueuesInit` (`message_queue_cpu.c`) and
//! `msgqTxCreate` (`msgq.c`) for the command queue header the CPU writes.

use alloc::vec::Vec;

use super::{ELEMENT_SIZE, MsgqError};
use crate::abi::{MessageQueueInitArguments, MsgqTxHeader};

/// `MSGQ_FLAGS_SWAP_RX`: read pointers live in the peer queue's header page.
pub const MSGQ_FLAGS_SWAP_RX: u32 = 1;
/// Default size of each queue in OpenRM 570.144 (`defaultCommandQueueSize`, 256 KiB).
pub const DEFAULT_QUEUE_SIZE: u32 = 0x40000;

/// Sizes and offsets of the shared queue block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedQueueLayout {
    /// Bytes of the command queue (header page + elements).
    pub cmd_queue_size: u32,
    /// Bytes of the status queue (header page + elements).
    pub stat_queue_size: u32,
    /// Number of page-table entries: one per 4 KiB page of the whole block, including the
    /// page-table pages themselves (`pageTableEntryCount`).
    pub pte_count: u32,
    /// Bytes of the page table, rounded up to 4 KiB (`pageTableSize`).
    pub page_table_size: u32,
}

impl SharedQueueLayout {
    /// Layout for the given queue sizes (each a multiple of 4 KiB with room for the header
    /// page and at least two elements).
    pub fn new(cmd_queue_size: u32, stat_queue_size: u32) -> Result<Self, MsgqError> {
        for s in [cmd_queue_size, stat_queue_size] {
            if s as usize & (ELEMENT_SIZE - 1) != 0 || (s as usize) < 3 * ELEMENT_SIZE {
                return Err(MsgqError::BadLayout {
                    why: "each queue size must be a multiple of 4 KiB and at least 12 KiB \
                          (header page plus two elements)",
                });
            }
        }
        let queue_pages = (cmd_queue_size as u64 + stat_queue_size as u64) / ELEMENT_SIZE as u64;
        // numPtes += NV_DIV_AND_CEIL(numPtes * sizeof(RmPhysAddr), RM_PAGE_SIZE)
        let pt_pages = (queue_pages * 8).div_ceil(ELEMENT_SIZE as u64);
        let pte_count = queue_pages + pt_pages;
        let page_table_size = (pte_count * 8).next_multiple_of(ELEMENT_SIZE as u64);
        Ok(Self {
            cmd_queue_size,
            stat_queue_size,
            pte_count: pte_count as u32,
            page_table_size: page_table_size as u32,
        })
    }

    /// The layout OpenRM and tinygrad use: two 256 KiB queues.
    pub fn default_sizes() -> Self {
        match Self::new(DEFAULT_QUEUE_SIZE, DEFAULT_QUEUE_SIZE) {
            Ok(l) => l,
            Err(_) => unreachable!("default queue sizes are valid"),
        }
    }

    /// Total bytes of the block.
    pub fn total_size(&self) -> usize {
        self.page_table_size as usize + self.cmd_queue_size as usize + self.stat_queue_size as usize
    }

    /// Number of 4 KiB pages of the block (one bus address each).
    pub fn total_pages(&self) -> usize {
        self.total_size() / ELEMENT_SIZE
    }

    /// Offset of the command queue in the block (`cmdQueueOffset`).
    pub fn cmd_queue_offset(&self) -> u64 {
        u64::from(self.page_table_size)
    }

    /// Offset of the status queue in the block (`statQueueOffset`).
    pub fn stat_queue_offset(&self) -> u64 {
        u64::from(self.page_table_size) + u64::from(self.cmd_queue_size)
    }

    /// The page-table bytes for the start of the block: the first `pte_count` page
    /// addresses as little-endian `u64`s, zero-padded to `page_table_size`.
    /// `page_addrs` must hold one 4 KiB-aligned bus address per page of the block.
    pub fn page_table(&self, page_addrs: &[u64]) -> Result<Vec<u8>, MsgqError> {
        if page_addrs.len() != self.total_pages() {
            return Err(MsgqError::BadLayout {
                why: "page_table needs exactly one bus address per 4 KiB page of the block \
                      (total_pages())",
            });
        }
        if page_addrs.iter().any(|a| a % ELEMENT_SIZE as u64 != 0) {
            return Err(MsgqError::BadLayout {
                why: "every page bus address must be 4 KiB aligned",
            });
        }
        let mut out = Vec::with_capacity(self.page_table_size as usize);
        for a in &page_addrs[..self.pte_count as usize] {
            out.extend_from_slice(&a.to_le_bytes());
        }
        out.resize(self.page_table_size as usize, 0);
        Ok(out)
    }

    /// `MESSAGE_QUEUE_INIT_ARGUMENTS` for `GSP_ARGUMENTS_CACHED`; `shared_mem_pa` is the bus
    /// address of the block's first page (the page table).
    pub fn init_arguments(&self, shared_mem_pa: u64) -> MessageQueueInitArguments {
        MessageQueueInitArguments {
            shared_mem_phys_addr: shared_mem_pa,
            page_table_entry_count: self.pte_count,
            _pad0: 0,
            cmd_queue_offset: self.cmd_queue_offset(),
            stat_queue_offset: self.stat_queue_offset(),
        }
    }

    /// The command queue's `msgqTxHeader` as `msgqTxCreate` writes it: 4 KiB elements after
    /// a 4 KiB header page, the rx header right after the tx header, `SWAP_RX`.
    pub fn command_queue_header(&self) -> MsgqTxHeader {
        tx_header(self.cmd_queue_size)
    }

    /// The status queue's header as GSP-RM writes it (for the simulator).
    pub fn status_queue_header(&self) -> MsgqTxHeader {
        tx_header(self.stat_queue_size)
    }
}

fn tx_header(size: u32) -> MsgqTxHeader {
    MsgqTxHeader {
        version: crate::abi::MSGQ_VERSION,
        size,
        msg_size: ELEMENT_SIZE as u32,
        msg_count: (size - ELEMENT_SIZE as u32) / ELEMENT_SIZE as u32,
        write_ptr: 0,
        flags: MSGQ_FLAGS_SWAP_RX,
        rx_hdr_off: core::mem::size_of::<MsgqTxHeader>() as u32,
        entry_off: ELEMENT_SIZE as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_layout_matches_openrm_arithmetic() {
        let l = SharedQueueLayout::default_sizes();
        // 0x80 queue pages + 1 page of PTEs.
        assert_eq!(l.pte_count, 0x81);
        assert_eq!(l.page_table_size, 0x1000);
        assert_eq!(l.cmd_queue_offset(), 0x1000);
        assert_eq!(l.stat_queue_offset(), 0x41000);
        assert_eq!(l.total_pages(), 0x81);
        let h = l.command_queue_header();
        assert_eq!(
            (h.msg_count, h.rx_hdr_off, h.entry_off, h.flags),
            (63, 32, 0x1000, 1)
        );
        let addrs: Vec<u64> = (0..0x81u64).map(|i| 0x1_0000_0000 + i * 0x3000).collect();
        let pt = l.page_table(&addrs).unwrap();
        assert_eq!(pt.len(), 0x1000);
        assert_eq!(&pt[8..16], &(0x1_0000_3000u64).to_le_bytes());
        assert!(l.page_table(&addrs[1..]).is_err());
    }

    #[test]
    fn large_queues_need_more_page_table_pages() {
        // 2 MiB + 2 MiB = 1024 pages -> 8 KiB of PTEs -> 2 more pages.
        let l = SharedQueueLayout::new(0x20_0000, 0x20_0000).unwrap();
        assert_eq!(l.pte_count, 1026);
        assert_eq!(l.page_table_size, 0x3000);
        assert!(SharedQueueLayout::new(0x1800, 0x40000).is_err());
    }
}
