//! The whole submission path as a backend drives it, against a model front end: a channel over
//! shared memory, the one-time compute setup, a copy, a kernel launch from a real sm_90 cubin
//! with a QMD release, and a host acquire that makes compute wait for the copy. The model reads
//! GPPut from USERD, fetches each GPFIFO entry's segment by GPU VA, decodes it with the
//! independent decoder, "executes" semaphore releases and writes GPGet back.

use nvbare_core::compute::{self, ComputeSetup, PcasAction};
use nvbare_core::copy;
use nvbare_core::cubin::Cubin;
use nvbare_core::gpfifo::{Channel, GP_ENTRY_SIZE, GpFifo, USERD_GP_GET, USERD_GP_PUT, USERD_SIZE};
use nvbare_core::hal::{Bar0, Clock};
use nvbare_core::launch::{self, ComputeContext, LaunchConfig};
use nvbare_core::push::{PushBuffer, Subchannel};
use nvbare_core::qmd::QmdVersion;
use nvbare_core::sem::{self, HostRelease, Semaphore, SemaphoreError};
use nvbare_core::shared::SharedMem;
use nvbare_sim::decode::qmd::decode_qmd;
use nvbare_sim::decode::{Decoder, HostSemaphoreOp, Operation, gp_entry};
use std::cell::{Cell, RefCell};

/// GPU-visible memory: one heap block mapped at `BASE`.
const BASE: u64 = 0x10_0000_0000;
const SIZE: usize = 1 << 20;

struct Memory {
    _backing: Vec<u64>,
    mem: SharedMem,
}

impl Memory {
    fn new() -> Self {
        let mut backing = vec![0u64; SIZE / 8];
        // SAFETY: `backing` lives as long as `mem` (both in this struct) and is only reached
        // through `mem`.
        let mem = unsafe { SharedMem::from_raw(backing.as_mut_ptr() as *mut u8, SIZE, BASE) };
        Self {
            _backing: backing,
            mem,
        }
    }
    fn at(&self, va: u64, len: usize) -> SharedMem {
        self.mem.slice((va - BASE) as usize, len).unwrap()
    }
}

struct Doorbell(RefCell<Vec<u32>>);
impl Bar0 for Doorbell {
    fn read32(&self, _: u32) -> u32 {
        0
    }
    fn write32(&self, offset: u32, value: u32) {
        assert_eq!(offset, 0x90, "doorbell offset in the usermode region");
        self.0.borrow_mut().push(value);
    }
}

struct FakeClock(Cell<u64>);
impl Clock for FakeClock {
    fn now_ns(&self) -> u64 {
        self.0.set(self.0.get() + 1000);
        self.0.get()
    }
    fn delay_ns(&self, ns: u64) {
        self.0.set(self.0.get() + ns);
    }
}

/// A front end: fetches published entries, decodes segments, performs host/copy/compute
/// semaphore releases (compute: at "grid completion", i.e. when the QMD is launched).
struct FrontEnd {
    get: u32,
    decoder: Decoder,
    ops: Vec<Operation>,
}

impl FrontEnd {
    fn run(
        &mut self,
        m: &Memory,
        ring_va: u64,
        userd_va: u64,
        entries: u32,
        stop_at_acquire: bool,
    ) {
        let userd = m.at(userd_va, USERD_SIZE);
        let put = userd.read_u32(USERD_GP_PUT).unwrap();
        while self.get != put {
            let raw = m
                .at(ring_va, entries as usize * 8)
                .read_u64(self.get as usize * GP_ENTRY_SIZE)
                .unwrap();
            let e = gp_entry(raw).unwrap();
            let seg = m.at(e.va, e.words as usize * 4);
            let words: Vec<u32> = (0..e.words as usize)
                .map(|i| seg.read_u32(4 * i).unwrap())
                .collect();
            for op in self.decoder.decode(&words).unwrap() {
                match &op {
                    Operation::HostSemaphore {
                        va,
                        value,
                        op: HostSemaphoreOp::Release { .. },
                        ..
                    }
                    | Operation::CopySemaphoreRelease { va, value, .. } => {
                        m.at(*va, 8).write_u64(0, *value).unwrap()
                    }
                    Operation::HostSemaphore {
                        va,
                        value,
                        op: HostSemaphoreOp::AcquireCircGeq,
                        ..
                    } if stop_at_acquire && m.at(*va, 8).read_u64(0).unwrap() < *value => {
                        return; // stalled: GPGet stays on this entry
                    }
                    Operation::LaunchQmd { qmd_va, .. } => {
                        let q = m.at(*qmd_va, 384);
                        let mut bytes = vec![0u8; 384];
                        q.read_bytes(0, &mut bytes).unwrap();
                        for r in decode_qmd(&bytes, 4).unwrap().releases {
                            m.at(r.va, 8).write_u64(0, r.payload).unwrap();
                        }
                    }
                    _ => {}
                }
                self.ops.push(op);
            }
            self.get = (self.get + 1) % entries;
            userd.write_u32(USERD_GP_GET, self.get).unwrap();
        }
    }
}

#[test]
fn compute_waits_for_copy_then_launches_and_releases() {
    let m = Memory::new();
    let (ring_va, userd_va, pb_va, prog_sem_va) =
        (BASE, BASE + 0x1000, BASE + 0x2000, BASE + 0x8000);
    let (timeline_va, cbuf0_va, qmd_va, code_va) =
        (BASE + 0x8100, BASE + 0x9000, BASE + 0xa000, BASE + 0x1_0000);
    let entries = 16;
    let fifo = GpFifo::new(
        "compute",
        m.at(ring_va, entries as usize * 8),
        m.at(userd_va, USERD_SIZE),
        entries,
        0x0001_0007,
        0x90,
    )
    .unwrap();
    let mut ch = Channel::new(
        fifo,
        m.at(pb_va, 0x4000),
        Semaphore::new(m.at(prog_sem_va, 16)).unwrap(),
    );
    let timeline = Semaphore::new(m.at(timeline_va, 16)).unwrap();
    let (bell, clock) = (Doorbell(RefCell::new(Vec::new())), FakeClock(Cell::new(0)));
    let mut gpu = FrontEnd {
        get: 0,
        decoder: Decoder::new(),
        ops: Vec::new(),
    };

    // One-time setup: bind compute + copy, windows.
    let mut pb = PushBuffer::new();
    ch.bind(&mut pb, Subchannel::COPY, 0xc8b5).unwrap();
    compute::setup(
        &mut pb,
        &ComputeSetup {
            compute_class: 0xcbc0,
            shared_window: 0x7294_0000_0000,
            local_window: 0x7293_0000_0000,
        },
    )
    .unwrap();
    ch.submit(&bell, &clock, 1_000_000, &pb).unwrap();
    assert_eq!(ch.binding(Subchannel::COPY), Some(0xc8b5));

    // Work: wait for timeline >= 1 (set by the "copy"), copy, launch vector_add, release 2.
    let bytes = nvbare_test_kernels::for_sm(90).unwrap().cubin;
    let cubin = Cubin::parse(bytes).unwrap();
    let image = cubin.load_image(code_va).unwrap();
    m.at(code_va, image.bytes.len())
        .write_bytes(0, &image.bytes)
        .unwrap();
    let k = cubin.kernel("vector_add").unwrap();
    let ctx = ComputeContext {
        qmd_version: QmdVersion::V4,
        sm: 90,
        shared_window: 0x7294_0000_0000,
        local_window: 0x7293_0000_0000,
        local_memory_per_thread: 0,
    };
    let mut prepared = launch::prepare(
        &ctx,
        &image,
        k,
        &LaunchConfig {
            grid: [8, 1, 1],
            block: [128, 1, 1],
            dynamic_shared: 0,
        },
        &[0; 28],
        cbuf0_va,
    )
    .unwrap();
    prepared.qmd.set_release(0, timeline_va, 2).unwrap();
    m.at(cbuf0_va, prepared.cbuf0.len())
        .write_bytes(0, &prepared.cbuf0)
        .unwrap();
    m.at(qmd_va, 384)
        .write_bytes(0, &prepared.qmd.to_bytes())
        .unwrap();

    let mut pb = PushBuffer::new();
    copy::copy_linear(&mut pb, BASE + 0x2_0000, BASE + 0x3_0000, 4096).unwrap();
    copy::release_semaphore(&mut pb, timeline_va, 1, true).unwrap();
    sem::host_acquire(&mut pb, timeline_va, 1).unwrap();
    compute::invalidate_caches(&mut pb).unwrap();
    compute::launch_qmd(&mut pb, qmd_va, PcasAction::PrefetchSchedule).unwrap();
    let ticket = ch.submit(&bell, &clock, 1_000_000, &pb).unwrap();
    assert_eq!(ticket.seq, 2);

    // Before the GPU runs, a wait times out and names the channel with its GPGet/GPPut.
    let err = timeline.wait(2, &clock, 10_000, ch.fifo()).unwrap_err();
    let SemaphoreError::Timeout(t) = err else {
        panic!("{err:?}")
    };
    assert_eq!(
        (
            t.channel.channel,
            t.channel.token,
            t.channel.gp_get,
            t.channel.gp_put
        ),
        ("compute", 0x0001_0007, 0, 2)
    );
    assert!(err.to_string().contains("GPGet 0 GPPut 2"));

    gpu.run(&m, ring_va, userd_va, entries, true);
    timeline.wait(2, &clock, 10_000, ch.fifo()).unwrap();
    ch.wait_consumed(ticket.seq, &clock, 10_000).unwrap();
    assert_eq!(bell.0.borrow().as_slice(), &[0x0001_0007, 0x0001_0007]);
    let kinds: Vec<&str> = gpu
        .ops
        .iter()
        .map(|o| match o {
            Operation::SetObject { .. } => "bind",
            Operation::LocalWindow(_) | Operation::SharedWindow(_) => "window",
            Operation::HostSemaphore {
                op:
                    HostSemaphoreOp::Release {
                        wait_for_idle: false,
                        ..
                    },
                va,
                ..
            } if *va == prog_sem_va => "progress",
            Operation::HostSemaphore {
                op: HostSemaphoreOp::AcquireCircGeq,
                ..
            } => "acquire",
            Operation::Copy { .. } => "copy",
            Operation::CopySemaphoreRelease { .. } => "copy-release",
            Operation::InvalidateCaches(_) => "invalidate",
            Operation::LaunchQmd { .. } => "launch",
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "bind",
            "bind",
            "window",
            "window",
            "progress",
            "copy",
            "copy-release",
            "acquire",
            "invalidate",
            "launch",
            "progress"
        ]
    );
}

#[test]
fn a_stalled_acquire_is_reported_with_the_stalled_channel() {
    let m = Memory::new();
    let fifo = GpFifo::new(
        "copy",
        m.at(BASE, 64),
        m.at(BASE + 0x1000, USERD_SIZE),
        8,
        0x0002_0003,
        0x90,
    )
    .unwrap();
    let mut ch = Channel::new(
        fifo,
        m.at(BASE + 0x2000, 0x1000),
        Semaphore::new(m.at(BASE + 0x8000, 16)).unwrap(),
    );
    let never = Semaphore::new(m.at(BASE + 0x8100, 16)).unwrap();
    let done = Semaphore::new(m.at(BASE + 0x8200, 16)).unwrap();
    let (bell, clock) = (Doorbell(RefCell::new(Vec::new())), FakeClock(Cell::new(0)));
    let mut pb = PushBuffer::new();
    sem::host_acquire(&mut pb, never.gpu_va(), 5).unwrap();
    sem::host_release(&mut pb, done.gpu_va(), 1, HostRelease::AFTER_IDLE).unwrap();
    ch.submit(&bell, &clock, 1_000_000, &pb).unwrap();
    let mut gpu = FrontEnd {
        get: 0,
        decoder: Decoder::new(),
        ops: Vec::new(),
    };
    gpu.run(&m, BASE, BASE + 0x1000, 8, true);
    let SemaphoreError::Timeout(t) = done.wait(1, &clock, 50_000, ch.fifo()).unwrap_err() else {
        panic!()
    };
    assert_eq!(
        (
            t.channel.channel,
            t.channel.gp_get,
            t.channel.gp_put,
            t.value,
            t.target
        ),
        ("copy", 0, 1, 0, 1)
    );
    // The CPU releases the acquire; the front end proceeds.
    never.signal_from_cpu(5);
    gpu.run(&m, BASE, BASE + 0x1000, 8, true);
    done.wait(1, &clock, 50_000, ch.fifo()).unwrap();
}
