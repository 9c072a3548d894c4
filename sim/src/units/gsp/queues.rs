//! The two shared-memory message queues between the CPU and GSP-RM, seen from GSP-RM.
//!
//! Found the way GSP-RM finds them: the `RMARGS` libos region is a `GSP_ARGUMENTS_CACHED`
//! whose `messageQueueInitArguments` give the bus address of a page table
//! (`sharedMemPhysAddr`, one `RmPhysAddr` per 4 KiB page of the whole shared area, the
//! table's own pages first: `GspMsgQueuesInit`, message_queue_cpu.c) and the byte offsets of
//! the command and status queues in that area. Every access goes through the table, so the
//! pages need not be contiguous.
//!
//! Protocol (`msgq.c`, `msgq_priv.h`, `message_queue_priv.h`, `GspMsgQueueSendCommand` and
//! `GspMsgQueueReceiveStatus`, message_queue_cpu.c):
//! - each queue starts with the writer's `msgqTxHeader`; the command queue's is written by
//!   the CPU (`msgqTxCreate`), the status queue's by GSP-RM when it links;
//! - both sides set `MSGQ_FLAGS_SWAP_RX`, so a reader's `msgqRxHeader.readPtr` lives in its
//!   *own* queue (GSP-RM's read pointer of the command queue at status queue + `rxHdrOff`,
//!   the CPU's read pointer of the status queue at command queue + `rxHdrOff`);
//! - a message is `GSP_MSG_QUEUE_ELEMENT` + RPC header + payload spanning `elemCount` 4 KiB
//!   entries (wrapping at the end of the ring), whose 64-bit XOR checksum over
//!   `GSP_MSG_QUEUE_ELEMENT_HDR_SIZE + rpc.length` bytes (zero-padded to 8) is zero, with
//!   `seqNum` counting messages in each direction from 0.

use nvbare_gsp::abi::{
    GSP_MSG_QUEUE_ELEMENT_HDR_SIZE, GSP_MSG_QUEUE_ELEMENT_SIZE_MAX, GSP_MSG_QUEUE_ELEMENT_SIZE_MIN,
    GspMsgQueueElement, MSGQ_VERSION, MessageQueueInitArguments, MsgqRxHeader, MsgqTxHeader,
    RpcMessageHeader,
};
use zerocopy::{FromBytes, IntoBytes};

use crate::memory::{Bus, BusFault, Target};

/// `MSGQ_FLAGS_SWAP_RX` (`msgq.h`).
pub const MSGQ_FLAGS_SWAP_RX: u32 = 1;
/// `GSP_MSG_QUEUE_HEADER_ALIGN`: the rx header follows the tx header at this alignment.
const HEADER_ALIGN: usize = 16;
/// Page size of the shared area (`RM_PAGE_SIZE`).
const PAGE: usize = 4096;
/// Most page-table entries accepted (the table of a 2 x 256 KiB layout has 129).
const MAX_PTES: u32 = 1 << 16;
/// `sizeof(GSP_MSG_QUEUE_ELEMENT)`: element header and RPC header.
pub const ELEMENT_BYTES: usize = core::mem::size_of::<GspMsgQueueElement>();

/// Why the queues could not be linked.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The page table is malformed.
    #[error("message queue page table: {0}")]
    PageTable(String),
    /// The CPU's command queue header is not what `msgqRxLink` accepts.
    #[error("command queue header: {0}")]
    CommandHeader(String),
    /// A page of the shared area could not be reached.
    #[error("shared queue memory: {0}")]
    Bus(#[from] BusFault),
}

/// The shared area, addressed by byte offset through its page table.
#[derive(Clone, Debug)]
pub struct SharedArea {
    ptes: Vec<u64>,
}

impl SharedArea {
    /// Reads the page table `args` describes.
    pub fn new(bus: &Bus, args: &MessageQueueInitArguments) -> Result<SharedArea, LinkError> {
        let (base, count) = (args.shared_mem_phys_addr, args.page_table_entry_count);
        if !base.is_multiple_of(PAGE as u64) || count == 0 || count > MAX_PTES {
            return Err(LinkError::PageTable(format!(
                "sharedMemPhysAddr {base:#x} / pageTableEntryCount {count}: a page-aligned table \
                 of 1..{MAX_PTES} entries"
            )));
        }
        let mut raw = vec![0u8; count as usize * 8];
        bus.read(Target::Bus(base), &mut raw)?;
        let ptes: Vec<u64> = raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        if ptes[0] != base {
            return Err(LinkError::PageTable(format!(
                "entry 0 is {:#x}, not the table's own page {base:#x} (GspMsgQueuesInit maps the \
                 table first)",
                ptes[0]
            )));
        }
        let mut probe = [0u8; 1];
        for (i, &p) in ptes.iter().enumerate() {
            if !p.is_multiple_of(PAGE as u64) {
                return Err(LinkError::PageTable(format!(
                    "entry {i} ({p:#x}) is not page aligned"
                )));
            }
            bus.read(Target::Bus(p), &mut probe)?;
        }
        Ok(SharedArea { ptes })
    }

    /// Bytes covered.
    pub fn len(&self) -> usize {
        self.ptes.len() * PAGE
    }

    /// Whether the area is empty (never, once built).
    pub fn is_empty(&self) -> bool {
        self.ptes.is_empty()
    }

    fn span(&self, offset: usize, len: usize) -> Result<(), BusFault> {
        if offset.checked_add(len).is_none_or(|e| e > self.len()) {
            return Err(BusFault::Iommu {
                addr: offset as u64,
                len: len as u64,
                access: crate::memory::Access::Read,
            });
        }
        Ok(())
    }

    /// Reads `out.len()` bytes at `offset`.
    pub fn read(&self, bus: &Bus, offset: usize, out: &mut [u8]) -> Result<(), BusFault> {
        self.span(offset, out.len())?;
        let mut done = 0;
        while done < out.len() {
            let at = offset + done;
            let n = (PAGE - at % PAGE).min(out.len() - done);
            let addr = self.ptes[at / PAGE] + (at % PAGE) as u64;
            bus.read(Target::Bus(addr), &mut out[done..done + n])?;
            done += n;
        }
        Ok(())
    }

    /// Writes `data` at `offset`.
    pub fn write(&self, bus: &Bus, offset: usize, data: &[u8]) -> Result<(), BusFault> {
        self.span(offset, data.len())?;
        let mut done = 0;
        while done < data.len() {
            let at = offset + done;
            let n = (PAGE - at % PAGE).min(data.len() - done);
            let addr = self.ptes[at / PAGE] + (at % PAGE) as u64;
            bus.write(Target::Bus(addr), &data[done..done + n])?;
            done += n;
        }
        Ok(())
    }

    fn read_u32(&self, bus: &Bus, offset: usize) -> Result<u32, BusFault> {
        let mut b = [0u8; 4];
        self.read(bus, offset, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn write_u32(&self, bus: &Bus, offset: usize, v: u32) -> Result<(), BusFault> {
        self.write(bus, offset, &v.to_le_bytes())
    }
}

/// The XOR checksum of `message_queue_priv.h` (`_checkSum32`) over `bytes`, zero-padded to 8.
pub fn checksum(bytes: &[u8]) -> u32 {
    let mut acc = 0u64;
    for chunk in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        acc ^= u64::from_le_bytes(w);
    }
    // CAST: the two halves of the 64-bit XOR.
    (acc >> 32) as u32 ^ acc as u32
}

/// One message as GSP-RM received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    /// The RPC header.
    pub header: RpcMessageHeader,
    /// The payload (`rpc.length - sizeof(header)` bytes).
    pub payload: Vec<u8>,
}

/// Why a command could not be taken. The elements are consumed either way (GSP-RM drops a
/// message it cannot read).
#[derive(Debug, thiserror::Error)]
pub enum BadCommand {
    /// The queue memory could not be read.
    #[error("{0}")]
    Bus(#[from] BusFault),
    /// The element is malformed.
    #[error("{0}")]
    Malformed(String),
    /// The CPU's write pointer lies outside the ring: nothing is read
    /// (`msgqRxGetReadAvailable`, msgq.c, answers 0 when `writePtr >= msgCount`).
    #[error(
        "the command queue's writePtr {write_ptr} is not below its msgCount {msg_count}; \
         nothing read"
    )]
    WritePtr {
        /// The write pointer the CPU published.
        write_ptr: u32,
        /// Entries in the ring.
        msg_count: u32,
    },
}

/// GSP-RM's two queues.
#[derive(Debug)]
pub struct Queues {
    area: SharedArea,
    /// Byte offsets of the queues in the area, and their sizes.
    cmd: (usize, usize),
    stat: (usize, usize),
    /// The CPU's command queue header (as linked).
    cmd_tx: MsgqTxHeader,
    /// Our status queue header.
    stat_tx: MsgqTxHeader,
    /// Next command entry to read, and the sequence number it must carry.
    cmd_read: u32,
    cmd_seq: u32,
    /// Sequence number of our next status message.
    stat_seq: u32,
}

impl Queues {
    /// Links the queues: checks the CPU's command queue header as `msgqRxLink` does,
    /// creates the status queue header as `msgqTxCreate` does, and zeroes our read pointer.
    pub fn link(
        bus: &Bus,
        area: SharedArea,
        args: &MessageQueueInitArguments,
    ) -> Result<Queues, LinkError> {
        let (cmd_off, stat_off) = (args.cmd_queue_offset, args.stat_queue_offset);
        let page = PAGE as u64;
        let bad = |why: String| Err(LinkError::CommandHeader(why));
        if cmd_off % page != 0
            || stat_off % page != 0
            || cmd_off == 0
            || stat_off <= cmd_off
            || stat_off >= area.len() as u64
        {
            return Err(LinkError::PageTable(format!(
                "cmdQueueOffset {cmd_off:#x} / statQueueOffset {stat_off:#x}: page-aligned, after \
                 the page table, command before status, inside the {:#x}-byte area",
                area.len()
            )));
        }
        // CAST: both below area.len(), a usize.
        let (cmd_off, stat_off) = (cmd_off as usize, stat_off as usize);
        let cmd_size = stat_off - cmd_off;
        let stat_size = area.len() - stat_off;
        let mut raw = [0u8; core::mem::size_of::<MsgqTxHeader>()];
        area.read(bus, cmd_off, &mut raw)?;
        let tx = MsgqTxHeader::read_from_bytes(&raw).unwrap_or_default();
        let msg = GSP_MSG_QUEUE_ELEMENT_SIZE_MIN as u32;
        // msgqRxLink's checks, in its order.
        if tx.version != MSGQ_VERSION {
            return bad(format!(
                "version {} (MSGQ_VERSION is {MSGQ_VERSION})",
                tx.version
            ));
        }
        if tx.size as usize != cmd_size {
            return bad(format!(
                "size {:#x}, but the queue spans {cmd_size:#x} bytes up to statQueueOffset",
                tx.size
            ));
        }
        if tx.msg_size != msg {
            return bad(format!(
                "msgSize {:#x}, GSP-RM links with GSP_MSG_QUEUE_ELEMENT_SIZE_MIN {msg:#x}",
                tx.msg_size
            ));
        }
        if (tx.rx_hdr_off as usize) < raw.len()
            || (tx.entry_off as usize) < HEADER_ALIGN.max(raw.len()) + 4
            || !(tx.entry_off as usize).is_multiple_of(PAGE)
            || tx.entry_off as usize + PAGE > cmd_size
        {
            return bad(format!(
                "rxHdrOff {:#x} / entryOff {:#x}: the rx header after the tx header, page-aligned \
                 entries inside the queue",
                tx.rx_hdr_off, tx.entry_off
            ));
        }
        if tx.msg_count != (tx.size - tx.entry_off) / msg {
            return bad(format!(
                "msgCount {}, (size - entryOff) / msgSize is {}",
                tx.msg_count,
                (tx.size - tx.entry_off) / msg
            ));
        }
        if tx.flags & MSGQ_FLAGS_SWAP_RX == 0 {
            return bad(format!(
                "flags {:#x} without MSGQ_FLAGS_SWAP_RX: GSP-RM swaps rx headers",
                tx.flags
            ));
        }
        if tx.write_ptr >= tx.msg_count {
            return bad(format!("writePtr {} beyond msgCount", tx.write_ptr));
        }
        // msgqTxCreate(statusQueue, size, GSP_MSG_QUEUE_ELEMENT_SIZE_MIN,
        // GSP_MSG_QUEUE_HEADER_ALIGN, GSP_MSG_QUEUE_ELEMENT_ALIGN, MSGQ_FLAGS_SWAP_RX).
        let rx_hdr_off = raw.len().next_multiple_of(HEADER_ALIGN);
        let entry_off = (rx_hdr_off + core::mem::size_of::<MsgqRxHeader>()).next_multiple_of(PAGE);
        // CAST: queue sizes are below 4 GiB (the area is at most 256 MiB).
        let stat_tx = MsgqTxHeader {
            version: MSGQ_VERSION,
            size: stat_size as u32,
            msg_size: msg,
            msg_count: ((stat_size - entry_off) / PAGE) as u32,
            write_ptr: 0,
            flags: MSGQ_FLAGS_SWAP_RX,
            rx_hdr_off: rx_hdr_off as u32,
            entry_off: entry_off as u32,
        };
        if stat_size < entry_off + PAGE {
            return Err(LinkError::PageTable(format!(
                "status queue of {stat_size:#x} bytes holds no entry"
            )));
        }
        // Our read pointer of the command queue, in our own queue (swapped), starts at 0.
        area.write_u32(bus, stat_off + rx_hdr_off, 0)?;
        area.write(bus, stat_off, stat_tx.as_bytes())?;
        Ok(Queues {
            area,
            cmd: (cmd_off, cmd_size),
            stat: (stat_off, stat_size),
            cmd_tx: tx,
            stat_tx,
            cmd_read: 0,
            cmd_seq: 0,
            stat_seq: 0,
        })
    }

    /// Entries of the command and status queues.
    pub fn entries(&self) -> (u32, u32) {
        (self.cmd_tx.msg_count, self.stat_tx.msg_count)
    }

    /// Entries written by the CPU and not yet read (none while its write pointer is out of
    /// range).
    pub fn pending_entries(&self, bus: &Bus) -> Result<u32, BadCommand> {
        let wp = self.area.read_u32(bus, self.cmd.0 + 16)?;
        let n = self.cmd_tx.msg_count;
        if wp >= n {
            return Err(BadCommand::WritePtr {
                write_ptr: wp,
                msg_count: n,
            });
        }
        Ok((wp + n - self.cmd_read) % n)
    }

    fn cmd_entry(&self, i: u32) -> usize {
        self.cmd.0 + self.cmd_tx.entry_off as usize + (i % self.cmd_tx.msg_count) as usize * PAGE
    }

    /// Reads the next message, if a whole one is there; consumes its elements.
    pub fn receive(&mut self, bus: &Bus) -> Result<Option<Received>, BadCommand> {
        let avail = self.pending_entries(bus)?;
        if avail == 0 {
            return Ok(None);
        }
        let mut first = [0u8; ELEMENT_BYTES];
        self.area
            .read(bus, self.cmd_entry(self.cmd_read), &mut first)?;
        let (elem, _) = GspMsgQueueElement::read_from_prefix(&first)
            .map_err(|_| BadCommand::Malformed("short element".into()))?;
        let count = elem.elem_count;
        if count == 0 || count as usize > GSP_MSG_QUEUE_ELEMENT_SIZE_MAX / PAGE {
            self.consume(bus, 1)?;
            return Err(BadCommand::Malformed(format!(
                "elemCount {count} (1..16 elements of 4 KiB)"
            )));
        }
        if count > avail {
            // The CPU moves writePtr past all of a message's elements at once
            // (msgqTxSubmitBuffers), so a partial message is an error, not data in flight.
            self.consume(bus, avail)?;
            return Err(BadCommand::Malformed(format!(
                "elemCount {count} but only {avail} entries were submitted"
            )));
        }
        let mut msg = vec![0u8; count as usize * PAGE];
        for i in 0..count {
            let at = i as usize * PAGE;
            self.area.read(
                bus,
                self.cmd_entry(self.cmd_read + i),
                &mut msg[at..at + PAGE],
            )?;
        }
        self.consume(bus, count)?;
        let len = GSP_MSG_QUEUE_ELEMENT_HDR_SIZE + elem.rpc.length as usize;
        let expected_seq = self.cmd_seq;
        self.cmd_seq = self.cmd_seq.wrapping_add(1);
        if len < ELEMENT_BYTES || len > msg.len() || len.div_ceil(PAGE) != count as usize {
            return Err(BadCommand::Malformed(format!(
                "rpc.length {:#x} does not fit elemCount {count} \
                 (GSP_MSG_QUEUE_BYTES_TO_ELEMENTS of the element header plus rpc.length)",
                elem.rpc.length
            )));
        }
        let sum = checksum(&msg[..len.next_multiple_of(8)]);
        if sum != 0 {
            return Err(BadCommand::Malformed(format!(
                "checksum of the {len}-byte message is {sum:#x}, not 0 (checkSum {:#x})",
                elem.check_sum
            )));
        }
        if elem.seq_num != expected_seq {
            return Err(BadCommand::Malformed(format!(
                "seqNum {}, expected {expected_seq}",
                elem.seq_num
            )));
        }
        Ok(Some(Received {
            header: elem.rpc,
            payload: msg[ELEMENT_BYTES..len].to_vec(),
        }))
    }

    /// Marks `n` command entries read (our rx header, in the status queue).
    fn consume(&mut self, bus: &Bus, n: u32) -> Result<(), BusFault> {
        self.cmd_read = (self.cmd_read + n) % self.cmd_tx.msg_count;
        self.area.write_u32(
            bus,
            self.stat.0 + self.stat_tx.rx_hdr_off as usize,
            self.cmd_read,
        )
    }

    /// Writes one status message (`rpc` header + `payload`), if the CPU has left room;
    /// `corrupt` flips the checksum (fault injection). False if the queue is full.
    pub fn send(
        &mut self,
        bus: &Bus,
        rpc: &RpcMessageHeader,
        payload: &[u8],
        corrupt: bool,
    ) -> Result<bool, BusFault> {
        let len = ELEMENT_BYTES + payload.len();
        let count = len.div_ceil(PAGE);
        let n = self.stat_tx.msg_count;
        // The CPU's read pointer of the status queue is in its own (command) queue.
        let rp = self
            .area
            .read_u32(bus, self.cmd.0 + self.cmd_tx.rx_hdr_off as usize)?
            % n;
        let wp = self.stat_tx.write_ptr;
        let free = (rp + n - wp - 1) % n;
        if count as u32 > free {
            return Ok(false);
        }
        let mut msg = vec![0u8; count * PAGE];
        let mut elem = GspMsgQueueElement {
            seq_num: self.stat_seq,
            // CAST: at most 16.
            elem_count: count as u32,
            rpc: *rpc,
            ..Default::default()
        };
        msg[..ELEMENT_BYTES].copy_from_slice(elem.as_bytes());
        msg[ELEMENT_BYTES..len].copy_from_slice(payload);
        elem.check_sum = checksum(&msg[..len.next_multiple_of(8)]) ^ u32::from(corrupt);
        msg[..ELEMENT_BYTES].copy_from_slice(elem.as_bytes());
        for i in 0..count {
            let at = self.stat.0
                + self.stat_tx.entry_off as usize
                // CAST: an index below msgCount.
                + ((wp + i as u32) % n) as usize * PAGE;
            self.area.write(bus, at, &msg[i * PAGE..(i + 1) * PAGE])?;
        }
        self.stat_seq = self.stat_seq.wrapping_add(1);
        // CAST: as above.
        self.stat_tx.write_ptr = (wp + count as u32) % n;
        self.area
            .write_u32(bus, self.stat.0 + 16, self.stat_tx.write_ptr)?;
        Ok(true)
    }
}
