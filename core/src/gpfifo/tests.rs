use super::*;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};

struct Doorbells(RefCell<Vec<(u32, u32)>>);
impl Bar0 for Doorbells {
    fn read32(&self, _: u32) -> u32 {
        0
    }
    fn write32(&self, offset: u32, value: u32) {
        self.0.borrow_mut().push((offset, value));
    }
}

struct FakeClock(Cell<u64>);
impl Clock for FakeClock {
    fn now_ns(&self) -> u64 {
        let t = self.0.get() + 100;
        self.0.set(t);
        t
    }
    fn delay_ns(&self, ns: u64) {
        self.0.set(self.0.get() + ns);
    }
}

fn mem(buf: &mut [u64], va: u64) -> SharedMem {
    // SAFETY: the test's buffer outlives the SharedMem and is only accessed through it.
    unsafe { SharedMem::from_raw(buf.as_mut_ptr() as *mut u8, buf.len() * 8, va) }
}

/// Backing memory for a channel under test: GPFIFO ring, USERD, pushbuffer and
/// progress semaphore, at GPU VAs 0x1000, 0x2000, 0x4000 and 0x3000.
struct Rig {
    ring: Vec<u64>,
    userd: Vec<u64>,
    pb: Vec<u64>,
    sem: Vec<u64>,
}

impl Rig {
    fn new(entries: usize, pb_bytes: usize) -> Self {
        Rig {
            ring: vec![0; entries],
            userd: vec![0; USERD_SIZE / 8],
            pb: vec![0; pb_bytes / 8],
            sem: vec![0; 2],
        }
    }

    /// A channel over the rig's memory, its progress semaphore and its pushbuffer view.
    fn channel(
        &mut self,
        label: &'static str,
        token: u32,
    ) -> (Channel, crate::sem::Semaphore, SharedMem) {
        let entries = self.ring.len() as u32;
        let f = GpFifo::new(
            label,
            mem(&mut self.ring, 0x1000),
            mem(&mut self.userd, 0x2000),
            entries,
            token,
            0x90,
        )
        .unwrap();
        let sem = crate::sem::Semaphore::new(mem(&mut self.sem, 0x3000)).unwrap();
        let pb = mem(&mut self.pb, 0x4000);
        (Channel::new(f, pb.clone(), sem.clone()), sem, pb)
    }
}

#[test]
fn entry_encoding_matches_header_and_tinygrad() {
    // tinygrad: (addr//4 << 2) | (len << 42) | (1 << 41)
    let (va, len) = (0x12_3456_7890u64 & !3, 0x1234u32);
    let e = GpEntry::new(va, len).encode().unwrap();
    assert_eq!(e, ((va / 4) << 2) | ((len as u64) << 42) | (1 << 41));
    assert_eq!(GpEntry::decode(e), Some(GpEntry::new(va, len)));
    assert_eq!(
        GpEntry::new(1 << 40, 1).encode(),
        Err(GpFifoError::BadSegmentAddress(1 << 40))
    );
    assert_eq!(
        GpEntry::new(2, 1).encode(),
        Err(GpFifoError::BadSegmentAddress(2))
    );
    assert_eq!(
        GpEntry::new(0, 0).encode(),
        Err(GpFifoError::BadSegmentLength(0))
    );
    assert_eq!(
        GpEntry::new(0, 1 << 21).encode(),
        Err(GpFifoError::BadSegmentLength(1 << 21))
    );
}

#[test]
fn ring_wraps_reports_full_and_rings_doorbell() {
    let mut ring = vec![0u64; 4];
    let mut userd = vec![0u64; USERD_SIZE / 8];
    let userd_mem = mem(&mut userd, 0x2000);
    let mut f = GpFifo::new(
        "compute",
        mem(&mut ring, 0x1000),
        userd_mem.clone(),
        4,
        0x5,
        USERMODE_DOORBELL,
    )
    .unwrap();
    let bell = Doorbells(RefCell::new(Vec::new()));
    let clock = FakeClock(Cell::new(0));
    for i in 0..3 {
        f.submit(&bell, &clock, 1_000, GpEntry::new(0x10000 + i * 0x100, 4))
            .unwrap();
    }
    assert_eq!(userd_mem.read_u32(USERD_GP_PUT), Ok(3));
    assert_eq!(
        bell.0.borrow().as_slice(),
        &[(0x90, 5), (0x90, 5), (0x90, 5)]
    );
    // Full: one slot stays empty.
    let err = f
        .submit(&bell, &clock, 1_000, GpEntry::new(0x20000, 4))
        .unwrap_err();
    let GpFifoError::Timeout(st) = err else {
        panic!("{err:?}")
    };
    assert_eq!((st.gp_get, st.gp_put, st.channel), (0, 3, "compute"));
    assert!(matches!(
        f.push_entry(GpEntry::new(0x20000, 4)),
        Err(GpFifoError::Full(_))
    ));
    // GPU fetches two entries; the ring wraps.
    userd_mem.write_u32(USERD_GP_GET, 2).unwrap();
    f.submit(&bell, &clock, 1_000, GpEntry::new(0x30000, 4))
        .unwrap();
    f.submit(&bell, &clock, 1_000, GpEntry::new(0x40000, 4))
        .unwrap();
    assert_eq!(userd_mem.read_u32(USERD_GP_PUT), Ok(1));
    assert_eq!(GpEntry::decode(ring[0]).unwrap().va, 0x40000);
    assert_eq!(f.submitted(), 5);
    userd_mem.write_u32(USERD_GP_GET, 9).unwrap();
    assert!(matches!(f.gp_get(), Err(GpFifoError::CorruptGpGet(_))));
}

#[test]
fn channel_reuses_pushbuffer_after_progress() {
    use crate::push::{PushBuffer, Subchannel};
    let mut rig = Rig::new(8, 128);
    let (mut ch, sem, pb_view) = rig.channel("copy", 7);
    let bell = Doorbells(RefCell::new(Vec::new()));
    let clock = FakeClock(Cell::new(0));
    let mut pb = PushBuffer::new();
    pb.method(Subchannel::COPY, 0x300, &[1, 2, 3, 4]).unwrap(); // 5 words + 6 progress = 44 bytes
    let t1 = ch.submit(&bell, &clock, 10_000, &pb).unwrap();
    let t2 = ch.submit(&bell, &clock, 10_000, &pb).unwrap();
    assert_eq!((t1.seq, t1.va, t2.va), (1, 0x4000, 0x4000 + 44));
    // No room for a third until the GPU consumes the first.
    assert!(matches!(
        ch.submit(&bell, &clock, 10_000, &pb),
        Err(GpFifoError::Timeout(_))
    ));
    sem.signal_from_cpu(1);
    let mut small = PushBuffer::new();
    small.method(Subchannel::COPY, 0x300, &[1]).unwrap(); // 2 + 6 words = 32 bytes
    assert_eq!(
        ch.submit(&bell, &clock, 10_000, &small).unwrap().va,
        0x4000 + 88
    );
    // Wraps to 0: segment 2 (the oldest) starts at 44, past the 32 bytes needed.
    assert_eq!(ch.submit(&bell, &clock, 10_000, &small).unwrap().va, 0x4000);
    assert!(matches!(
        ch.submit(&bell, &clock, 10_000, &small),
        Err(GpFifoError::Timeout(_))
    ));
    sem.signal_from_cpu(3);
    assert_eq!(
        ch.submit(&bell, &clock, 10_000, &small).unwrap().va,
        0x4000 + 32
    );
    assert_eq!(ch.bytes_in_flight(), 64);
    // The progress release is the segment's tail: SEM_ADDR_LO.. with payload = seq.
    assert_eq!(pb_view.read_u32(44 + 5 * 4 + 4), Ok(0x3000));
    assert_eq!(pb_view.read_u32(44 + 5 * 4 + 12), Ok(2)); // payload lo of seq 2
    let mut big = PushBuffer::new();
    big.method_non_incrementing(Subchannel::COPY, 0x100, &[0; 39])
        .unwrap();
    assert!(matches!(
        ch.submit(&bell, &clock, 10_000, &big),
        Err(GpFifoError::SegmentTooLarge { .. })
    ));
}

#[test]
fn channel_trusts_progress_when_userd_gp_get_lags() {
    use crate::push::{PushBuffer, Subchannel};
    let mut rig = Rig::new(4, 512);
    let (mut ch, sem, _) = rig.channel("compute", 1);
    let bell = Doorbells(RefCell::new(Vec::new()));
    let clock = FakeClock(Cell::new(0));
    let mut pb = PushBuffer::new();
    pb.method(Subchannel::COMPUTE, 0x100, &[0]).unwrap();
    for _ in 0..3 {
        ch.submit(&bell, &clock, 10_000, &pb).unwrap();
    }
    // Ring full by USERD (GPGet still 0) ...
    assert!(matches!(
        ch.submit(&bell, &clock, 10_000, &pb),
        Err(GpFifoError::Timeout(_))
    ));
    // ... but the progress semaphore says the front end got through submission 2.
    sem.signal_from_cpu(2);
    let t = ch.submit(&bell, &clock, 10_000, &pb).unwrap();
    assert_eq!((t.seq, t.slot), (4, 3));
    assert_eq!(ch.fifo().pending().unwrap(), 2);
}

#[test]
fn channel_reads_progress_only_when_known_room_runs_out() {
    use crate::push::{PushBuffer, Subchannel};
    // 128 bytes of pushbuffer: two 44-byte segments fit, a third does not.
    let mut rig = Rig::new(8, 128);
    let (mut ch, sem, _) = rig.channel("copy", 7);
    let bell = Doorbells(RefCell::new(Vec::new()));
    let clock = FakeClock(Cell::new(0));
    let mut pb = PushBuffer::new();
    pb.method(Subchannel::COPY, 0x300, &[1, 2, 3, 4]).unwrap(); // 44 bytes with progress
    ch.submit(&bell, &clock, 10_000, &pb).unwrap();
    sem.signal_from_cpu(1);
    // Room is known without looking: the first segment is not reclaimed yet.
    assert_eq!(
        ch.submit(&bell, &clock, 10_000, &pb).unwrap().va,
        0x4000 + 44
    );
    assert_eq!(ch.bytes_in_flight(), 88);
    // No known room left: now the progress is read, both segments are freed, and the
    // emptied ring starts again at 0.
    sem.signal_from_cpu(2);
    assert_eq!(ch.submit(&bell, &clock, 10_000, &pb).unwrap().va, 0x4000);
    assert_eq!(ch.bytes_in_flight(), 44);
}
