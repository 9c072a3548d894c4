//! The GPFIFO ring against a model GPU front end that fetches entries in order and writes GPGet
//! back to USERD late (or not at all for a while): the host must never overwrite an entry the
//! GPU has not fetched, the GPU must see every entry in order, and the doorbell must follow
//! every GPPut update.

use nvbare_core::gpfifo::{
    GP_ENTRY_SIZE, GpEntry, GpFifo, GpFifoError, USERD_GP_GET, USERD_GP_PUT, USERD_SIZE,
};
use nvbare_core::hal::Bar0;
use nvbare_core::shared::SharedMem;
use proptest::prelude::*;
use std::cell::RefCell;

struct Usermode(RefCell<Vec<u32>>);
impl Bar0 for Usermode {
    fn read32(&self, _: u32) -> u32 {
        0
    }
    fn write32(&self, offset: u32, value: u32) {
        assert_eq!(offset, 0x90);
        self.0.borrow_mut().push(value);
    }
}

#[derive(Clone, Debug)]
enum Step {
    /// Host submits one segment if the ring has room.
    Submit,
    /// GPU fetches up to n published entries.
    Fetch(u32),
    /// GPU writes its current GPGet back to USERD.
    WriteBack,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    proptest::collection::vec(
        prop_oneof![3 => Just(Step::Submit), 2 => (1u32..6).prop_map(Step::Fetch), 1 => Just(Step::WriteBack)],
        1..300,
    )
}

proptest! {
    #[test]
    fn host_never_overwrites_unfetched_entries(entries in 2u32..9, steps in steps()) {
        let mut ring = vec![0u64; entries as usize];
        let mut userd = vec![0u64; USERD_SIZE / 8];
        // SAFETY: both buffers outlive the SharedMems and are only read through them below.
        let ring_mem = unsafe { SharedMem::from_raw(ring.as_mut_ptr() as *mut u8, ring.len() * 8, 0x1000) };
        let userd_mem = unsafe { SharedMem::from_raw(userd.as_mut_ptr() as *mut u8, USERD_SIZE, 0x2000) };
        let mut fifo = GpFifo::new("model", ring_mem.clone(), userd_mem.clone(), entries, 0x42, 0x90).unwrap();
        let bell = Usermode(RefCell::new(Vec::new()));
        // GPU model: its own GET pointer and the count of entries it fetched.
        let (mut gpu_get, mut fetched, mut next_va) = (0u32, 0u64, 0x10_0000u64);
        let mut seen = Vec::new();
        for step in steps {
            match step {
                Step::Submit => {
                    match fifo.push_entry(GpEntry::new(next_va, 4)) {
                        Ok(_) => {
                            fifo.kick(&bell).unwrap();
                            next_va += 0x100;
                        }
                        Err(GpFifoError::Full(s)) => prop_assert_eq!(s.gp_put, fifo.gp_put()),
                        Err(e) => return Err(TestCaseError::fail(format!("{e:?}"))),
                    }
                }
                Step::Fetch(n) => {
                    let put = userd_mem.read_u32(USERD_GP_PUT).unwrap();
                    for _ in 0..n {
                        if gpu_get == put {
                            break;
                        }
                        let raw = ring_mem.read_u64(gpu_get as usize * GP_ENTRY_SIZE).unwrap();
                        seen.push(GpEntry::decode(raw).unwrap().va);
                        gpu_get = (gpu_get + 1) % entries;
                        fetched += 1;
                    }
                }
                Step::WriteBack => userd_mem.write_u32(USERD_GP_GET, gpu_get).unwrap(),
            }
            // The host never believes more was fetched than was.
            prop_assert!(fifo.completed().unwrap() <= fetched);
            prop_assert!(fifo.submitted() - fetched < entries as u64);
        }
        // In order, none lost, none duplicated.
        let want: Vec<u64> = (0..seen.len() as u64).map(|i| 0x10_0000 + 0x100 * i).collect();
        prop_assert_eq!(seen, want);
        prop_assert_eq!(bell.0.borrow().len() as u64, fifo.submitted());
        prop_assert!(bell.0.borrow().iter().all(|&t| t == 0x42));
        drop(ring);
        drop(userd);
    }
}
