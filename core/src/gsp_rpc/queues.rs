//! The CPU's side of the shared queue block in DMA memory: writing the command queue and
//! reading the status queue, through volatile copies only.
//!
//! The block ([`SharedQueueLayout`]) is: page table, command queue (our `msgqTxHeader` and,
//! at its `rxHdrOff`, our read pointer of the status queue; then the elements), status
//! queue (GSP-RM's `msgqTxHeader` and, at its `rxHdrOff`, GSP-RM's read pointer of the
//! command queue; then the elements). Both queues use `MSGQ_FLAGS_SWAP_RX`
//! (`msgq_priv.h`; `GspMsgQueuesInit`, `GspStatusQueueInit`, `GspMsgQueueSendCommand`,
//! `GspMsgQueueReceiveStatus` in `message_queue_cpu.c`).
//!
//! Each ring has a shadow copy in host memory that [`nvbare_gsp::msgq`]'s writer and reader
//! work on: a send copies only the elements it wrote to the device's memory, a receive only
//! the elements GSP-RM published.

use alloc::vec::Vec;
use core::mem::offset_of;
use core::sync::atomic::{Ordering, fence};

use nvbare_gsp::abi::{MsgqTxHeader, RpcFunction, RpcMessageHeader};
use nvbare_gsp::msgq::{
    ELEMENT_HEADER_SIZE, ELEMENT_SIZE, MsgQueue, MsgqError, QueueGeometry, ReceivedMessage,
    RpcQueue, SharedQueueLayout,
};
use zerocopy::{FromBytes, IntoBytes};

use crate::shared::{SharedMem, SharedMemError};

/// Offset of `writePtr` in a `msgqTxHeader`.
const WRITE_PTR: usize = offset_of!(MsgqTxHeader, write_ptr);

/// Why a send did not go out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// No room now (GSP-RM has not read enough yet); nothing was written.
    Full(MsgqError),
    /// Never fits, or the pointers are corrupt; nothing was written.
    Rejected(MsgqError),
    /// The memory could not be written.
    Memory(SharedMemError),
}

/// Why a receive gave nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiveError {
    /// The message at the read pointer failed validation; it was skipped. `function` is
    /// what its RPC header says it is, for what that is worth.
    Bad {
        /// The check that failed.
        error: MsgqError,
        /// The (unverified) `function` of the dropped message.
        function: u32,
    },
    /// The memory could not be read.
    Memory(SharedMemError),
}

/// The status side, once GSP-RM has written its queue header.
#[derive(Debug)]
struct StatusSide {
    geometry: QueueGeometry,
    reader: MsgQueue,
    shadow: Vec<u8>,
}

/// The CPU's side of the shared queue block.
#[derive(Debug)]
pub struct SharedQueues {
    mem: SharedMem,
    layout: SharedQueueLayout,
    cmd_geometry: QueueGeometry,
    writer: RpcQueue,
    cmd_shadow: Vec<u8>,
    status: Option<StatusSide>,
}

impl SharedQueues {
    /// Takes over the block `mem` (laid out as `layout`, its page table already written):
    /// writes the command queue's header as `msgqTxCreate` does and zeroes our read pointer.
    pub fn new(mem: SharedMem, layout: SharedQueueLayout) -> Result<Self, QueueSetupError> {
        if mem.len() < layout.total_size() {
            return Err(QueueSetupError::Layout(MsgqError::BadLayout {
                why: "the queue memory is smaller than the layout",
            }));
        }
        let header = layout.command_queue_header();
        let cmd_geometry = QueueGeometry::from_tx_header(&header, layout.cmd_queue_size as usize)
            .map_err(QueueSetupError::Layout)?;
        let writer = RpcQueue::new(cmd_geometry, 0).map_err(QueueSetupError::Layout)?;
        let base = layout.cmd_queue_offset() as usize;
        mem.write_bytes(base, header.as_bytes())
            .map_err(QueueSetupError::Memory)?;
        mem.write_u32(base + cmd_geometry.rx_hdr_off as usize, 0)
            .map_err(QueueSetupError::Memory)?;
        Ok(Self {
            mem,
            layout,
            cmd_geometry,
            writer,
            cmd_shadow: alloc::vec![0u8; cmd_geometry.ring_len()],
            status: None,
        })
    }

    fn cmd_base(&self) -> usize {
        self.layout.cmd_queue_offset() as usize
    }

    fn stat_base(&self) -> usize {
        self.layout.stat_queue_offset() as usize
    }

    /// Whether GSP-RM's status queue header has been accepted.
    pub fn is_linked(&self) -> bool {
        self.status.is_some()
    }

    /// Tries to link the status queue (`msgqRxLink`): reads GSP-RM's `msgqTxHeader` and
    /// accepts it if it describes a ring inside the status queue. `Err` says why not (yet).
    pub fn try_link(&mut self) -> Result<(), MsgqError> {
        if self.status.is_some() {
            return Ok(());
        }
        let mut raw = [0u8; size_of::<MsgqTxHeader>()];
        self.mem
            .read_bytes(self.stat_base(), &mut raw)
            .map_err(|_| MsgqError::BadLayout {
                why: "the status queue header is outside the queue memory",
            })?;
        fence(Ordering::Acquire);
        let header = MsgqTxHeader::read_from_bytes(&raw)
            .map_err(|_| MsgqError::BadTxHeader { why: "unreadable" })?;
        let geometry =
            QueueGeometry::from_tx_header(&header, self.layout.stat_queue_size as usize)?;
        // The rx header GSP-RM reads our pointer from lives in *our* queue's header page,
        // and its own read pointer in its header page: both must lie inside a header page.
        if geometry.rx_hdr_off as usize + 4 > ELEMENT_SIZE {
            return Err(MsgqError::BadTxHeader {
                why: "rxHdrOff outside the header page",
            });
        }
        let reader = MsgQueue::new(geometry, 0)?;
        self.status = Some(StatusSide {
            geometry,
            reader,
            shadow: alloc::vec![0u8; geometry.ring_len()],
        });
        Ok(())
    }

    /// GSP-RM's read pointer of the command queue: 0 until the status queue is linked
    /// (nothing has been read before GSP-RM runs).
    fn gsp_read_ptr(&self) -> Result<u32, SharedMemError> {
        match &self.status {
            None => Ok(0),
            Some(s) => {
                let v = self
                    .mem
                    .read_u32(self.stat_base() + s.geometry.rx_hdr_off as usize)?;
                fence(Ordering::Acquire);
                Ok(v)
            }
        }
    }

    /// Queues one RPC (with continuation records if it is large) and publishes the new
    /// write pointer. Nothing is published when an error is returned.
    pub fn send(&mut self, function: RpcFunction, payload: &[u8]) -> Result<u32, SendError> {
        let read_ptr = self.gsp_read_ptr().map_err(SendError::Memory)?;
        let before = self.writer.write_ptr();
        let needed = RpcQueue::elements_needed(payload.len());
        if needed >= self.cmd_geometry.msg_count {
            return Err(SendError::Rejected(MsgqError::MessageTooLarge {
                len: payload.len(),
            }));
        }
        let records = self
            .writer
            .enqueue_rpc(&mut self.cmd_shadow, read_ptr, function.as_u32(), payload)
            .map_err(|e| match e {
                MsgqError::QueueFull { .. } => SendError::Full(e),
                other => SendError::Rejected(other),
            })?;
        let after = self.writer.write_ptr();
        let entries = self.cmd_base() + self.cmd_geometry.entry_off as usize;
        copy_elements(
            &self.cmd_shadow,
            before,
            after,
            self.cmd_geometry,
            |off, bytes| self.mem.write_bytes(entries + off, bytes),
        )
        .map_err(SendError::Memory)?;
        // The elements must be visible before the write pointer that publishes them.
        fence(Ordering::SeqCst);
        self.mem
            .write_u32(self.cmd_base() + WRITE_PTR, after)
            .map_err(SendError::Memory)?;
        fence(Ordering::SeqCst);
        Ok(records)
    }

    /// Takes the next message GSP-RM published, if any, and publishes our read pointer.
    /// A message that fails validation is skipped (so the queue keeps moving) and reported.
    pub fn receive(&mut self) -> Result<Option<ReceivedMessage>, ReceiveError> {
        let stat_base = self.stat_base();
        let rx_ptr_at = self.cmd_base() + self.cmd_geometry.rx_hdr_off as usize;
        let Some(s) = self.status.as_mut() else {
            return Ok(None);
        };
        let write_ptr = self
            .mem
            .read_u32(stat_base + WRITE_PTR)
            .map_err(ReceiveError::Memory)?;
        if write_ptr == s.reader.read_ptr() {
            return Ok(None);
        }
        // What the write pointer publishes is read only after it.
        fence(Ordering::Acquire);
        let entries = stat_base + s.geometry.entry_off as usize;
        if s.geometry.check_pointer(write_ptr).is_ok() {
            let mem = &self.mem;
            let (from, shadow) = (s.reader.read_ptr(), &mut s.shadow);
            copy_elements_in(shadow, from, write_ptr, s.geometry, |off, out| {
                mem.read_bytes(entries + off, out)
            })
            .map_err(ReceiveError::Memory)?;
        }
        let got = match s.reader.receive(&s.shadow, write_ptr) {
            Ok(m) => Ok(m),
            Err(e) => {
                let at = s.reader.read_ptr() as usize * ELEMENT_SIZE + ELEMENT_HEADER_SIZE;
                let function = s
                    .shadow
                    .get(at + offset_of!(RpcMessageHeader, function)..)
                    .and_then(|b| b.get(..4))
                    .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                // A corrupt write pointer cannot be skipped past; anything else is dropped
                // by its element count (`MsgQueue::skip`).
                let _ = s.reader.skip(&s.shadow, write_ptr);
                if let MsgqError::SequenceMismatch { got, .. } = e {
                    // Follow GSP-RM's counter from here on, or every later message fails.
                    s.reader.resync_sequence(got.wrapping_add(1));
                }
                Err(ReceiveError::Bad { error: e, function })
            }
        };
        let read_ptr = s.reader.read_ptr();
        fence(Ordering::SeqCst);
        self.mem
            .write_u32(rx_ptr_at, read_ptr)
            .map_err(ReceiveError::Memory)?;
        got
    }
}

/// Why the queue block could not be taken over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueSetupError {
    /// The layout does not fit.
    Layout(MsgqError),
    /// The memory could not be written.
    Memory(SharedMemError),
}

/// Calls `put(offset, bytes)` for the elements `[from, to)` of the ring (wrapping), in at
/// most two contiguous pieces.
fn copy_elements(
    shadow: &[u8],
    from: u32,
    to: u32,
    g: QueueGeometry,
    mut put: impl FnMut(usize, &[u8]) -> Result<(), SharedMemError>,
) -> Result<(), SharedMemError> {
    for (start, end) in element_ranges(from, to, g) {
        put(start, &shadow[start..end])?;
    }
    Ok(())
}

/// Fills `shadow` over the elements `[from, to)` (wrapping) with `get(offset, out)`.
fn copy_elements_in(
    shadow: &mut [u8],
    from: u32,
    to: u32,
    g: QueueGeometry,
    mut get: impl FnMut(usize, &mut [u8]) -> Result<(), SharedMemError>,
) -> Result<(), SharedMemError> {
    for (start, end) in element_ranges(from, to, g) {
        get(start, &mut shadow[start..end])?;
    }
    Ok(())
}

/// Byte ranges of the ring covering elements `[from, to)`, wrapping at `msg_count`.
fn element_ranges(from: u32, to: u32, g: QueueGeometry) -> impl Iterator<Item = (usize, usize)> {
    let e = ELEMENT_SIZE;
    let (from, to) = (from as usize, to as usize);
    let n = g.msg_count as usize;
    let (first, second) = if from <= to {
        ((from * e, to * e), (0, 0))
    } else {
        ((from * e, n * e), (0, to * e))
    };
    [first, second].into_iter().filter(|(s, t)| t > s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use nvbare_gsp::rpc::reply_header;

    struct Block(Vec<u64>);

    impl Block {
        fn new(layout: &SharedQueueLayout) -> Self {
            Block(vec![0; layout.total_size() / 8])
        }
        fn mem(&mut self) -> SharedMem {
            // SAFETY: the test's buffer outlives the SharedMem and is only accessed through it.
            unsafe { SharedMem::from_raw(self.0.as_mut_ptr() as *mut u8, self.0.len() * 8, 0) }
        }
    }

    /// Plays GSP-RM on the block: writes the status header and a message.
    fn gsp_writes(mem: &SharedMem, layout: &SharedQueueLayout, msgs: &[(u32, &[u8])]) {
        let h = layout.status_queue_header();
        let base = layout.stat_queue_offset() as usize;
        let g = QueueGeometry::from_tx_header(&h, layout.stat_queue_size as usize).unwrap();
        let mut ring = vec![0u8; g.ring_len()];
        let mut w = RpcQueue::new(g, 0).unwrap();
        for (f, p) in msgs {
            w.enqueue_with_header(&mut ring, 0, reply_header(*f, 0, p.len()), p)
                .unwrap();
        }
        let mut h = h;
        h.write_ptr = w.write_ptr();
        mem.write_bytes(base + 0x1000, &ring).unwrap();
        mem.write_bytes(base, h.as_bytes()).unwrap();
    }

    #[test]
    fn send_publishes_elements_then_the_write_pointer() {
        let layout = SharedQueueLayout::default_sizes();
        let mut block = Block::new(&layout);
        let mem = block.mem();
        let mut q = SharedQueues::new(mem.clone(), layout).unwrap();
        let base = layout.cmd_queue_offset() as usize;
        assert_eq!(mem.read_u32(base + 4), Ok(0x40000), "header written");
        q.send(RpcFunction::SetRegistry, &[1, 2, 3]).unwrap();
        assert_eq!(mem.read_u32(base + WRITE_PTR), Ok(1));
        // RPC header function at element 0 + 0x30 + 12.
        assert_eq!(mem.read_u32(base + 0x1000 + 0x3c), Ok(73));
        // A queue never fills past msgCount - 1 while GSP reads nothing.
        let big = vec![0u8; 15 * 4096];
        let mut sent = 1;
        while q.send(RpcFunction::SetRegistry, &big).is_ok() {
            sent += 16;
        }
        assert_eq!(sent, 49);
        assert!(matches!(
            q.send(RpcFunction::SetRegistry, &big),
            Err(SendError::Full(_))
        ));
        assert!(matches!(
            q.send(RpcFunction::SetRegistry, &vec![0; 0x40000]),
            Err(SendError::Rejected(_))
        ));
    }

    #[test]
    fn receive_links_reads_and_skips_corrupt_messages() {
        let layout = SharedQueueLayout::default_sizes();
        let mut block = Block::new(&layout);
        let mem = block.mem();
        let mut q = SharedQueues::new(mem.clone(), layout).unwrap();
        assert!(q.try_link().is_err(), "GSP-RM has written no header yet");
        assert_eq!(q.receive(), Ok(None));
        gsp_writes(
            &mem,
            &layout,
            &[(0x1001, &[]), (65, &[9; 10]), (76, &[1; 24])],
        );
        q.try_link().unwrap();
        let m = q.receive().unwrap().unwrap();
        assert_eq!(m.header.function, 0x1001);
        let rx = layout.cmd_queue_offset() as usize + 32;
        assert_eq!(mem.read_u32(rx), Ok(1), "read pointer published");
        // Corrupt the second message's payload: its checksum fails and it is skipped.
        let second = layout.stat_queue_offset() as usize + 0x1000 + 0x1000 + 0x50;
        mem.write_u32(second, 0xdead).unwrap();
        assert!(matches!(
            q.receive(),
            Err(ReceiveError::Bad {
                error: MsgqError::BadChecksum { .. },
                function: 65
            })
        ));
        assert_eq!(mem.read_u32(rx), Ok(2));
        let m = q.receive().unwrap().unwrap();
        assert_eq!((m.header.function, m.seq), (76, 2));
        assert_eq!(q.receive(), Ok(None));
    }

    #[test]
    fn element_ranges_wrap() {
        let g = QueueGeometry {
            msg_count: 4,
            entry_off: 0x1000,
            rx_hdr_off: 32,
        };
        let r: Vec<_> = element_ranges(3, 1, g).collect();
        assert_eq!(r, [(0x3000, 0x4000), (0, 0x1000)]);
        assert_eq!(element_ranges(2, 2, g).count(), 0);
    }
}
