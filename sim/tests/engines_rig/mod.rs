//! A test rig for the engines: a simulated GPU, page tables built with `nvbare_mmu` in its
//! VRAM, buffers in VRAM and host memory mapped at GPU VAs, and channels recorded in the
//! world as GSP-RM would record them. Pushbuffers, GPFIFO entries and QMDs are built here from
//! NVIDIA's class headers (never by nvbare's driver code).
//!
//! Header facts used (open-gpu-doc classes/host/clc56f.h, clc86f.h):
//! - method header `NVC56F_DMA_SEC_OP` 31:29 (INC_METHOD 1, NON_INC_METHOD 3, IMMD_DATA 4,
//!   ONE_INC 5), `_METHOD_COUNT` 28:16, `_METHOD_SUBCHANNEL` 15:13, `_METHOD_ADDRESS` 11:0
//!   (method byte offset >> 2);
//! - `NVC86F_GP_ENTRY0_GET` 31:2 (VA bits 31:2), `GP_ENTRY1_GET_HI` 7:0 (VA 39:32),
//!   `_LEVEL` 9, `_LENGTH` 30:10 (words), `_SYNC` 31;
//! - USERD `GPGet` at 0x88, `GPPut` at 0x8c (`Nvc56fControl_struct`).

#![allow(dead_code)]

pub mod cubin;
pub mod qmd;

use std::sync::Arc;

use nvbare_core::hal::{Wait, poll_until};
use nvbare_mmu::{
    AccessError, AddressSpace, Aperture, NoTlb, PhysAllocator, PhysRange, PteAttributes, TableAddr,
    TableAperture, TableMemory, VaAllocator,
};
use nvbare_sim::device::{ChannelRecord, Engine, VaSpaceRecord};
use nvbare_sim::memory::{Target, Vram};
use nvbare_sim::platform::SimClock;
use nvbare_sim::units::fifo::DOORBELL;
use nvbare_sim::{FaultPlan, SimChip, SimGpu};

/// `NVC56F_SEM_ADDR_LO` … `NVC56F_SEM_EXECUTE`.
pub const SEM_ADDR_LO: u32 = 0x5c;
/// `NVC56F_SEM_EXECUTE`: OPERATION 2:0 (ACQUIRE 0, RELEASE 1, ACQ_STRICT_GEQ 2, ACQ_CIRC_GEQ
/// 3, ACQ_AND 4, ACQ_NOR 5, REDUCTION 6), RELEASE_WFI 20, PAYLOAD_SIZE 24 (64BIT 1),
/// RELEASE_TIMESTAMP 25, REDUCTION 30:27, REDUCTION_FORMAT 31.
pub const SEM_RELEASE: u32 = 1;
pub const SEM_ACQ_CIRC_GEQ: u32 = 3;
pub const SEM_ACQ_AND: u32 = 4;
pub const SEM_REDUCTION: u32 = 6;
pub const SEM_WFI: u32 = 1 << 20;
pub const SEM_64BIT: u32 = 1 << 24;
pub const SEM_TIMESTAMP: u32 = 1 << 25;
/// `NVC56F_SET_OBJECT`, `NVC56F_NOP`, `NVC56F_WFI`, `NVC56F_MEM_OP_D`.
pub const SET_OBJECT: u32 = 0x0;
pub const NOP: u32 = 0x8;
pub const WFI: u32 = 0x78;
pub const MEM_OP_C: u32 = 0x30;
pub const MEM_OP_D: u32 = 0x34;

/// Page-table memory: the simulated GPU's VRAM, written as a driver writes it through BAR1.
pub struct VramTables(pub Arc<Vram>);

impl TableMemory for VramTables {
    fn read_u64(&self, at: TableAddr) -> Result<u64, AccessError> {
        match at.aperture {
            TableAperture::Video => self
                .0
                .read_u64(at.addr)
                .map_err(|_| AccessError { at, len: 8 }),
            _ => Err(AccessError { at, len: 8 }),
        }
    }
    fn write_u64s(&mut self, at: TableAddr, values: &[u64]) -> Result<(), AccessError> {
        let err = AccessError {
            at,
            len: values.len() as u64 * 8,
        };
        if at.aperture != TableAperture::Video {
            return Err(err);
        }
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.0.write(at.addr, &bytes).map_err(|_| err)
    }
}

/// Memory the rig mapped: where it is for the CPU, and its GPU VA.
#[derive(Clone, Copy, Debug)]
pub struct Buffer {
    /// GPU virtual address.
    pub va: u64,
    /// Bytes.
    pub len: u64,
    /// Where byte 0 is.
    pub at: Target,
}

impl Buffer {
    /// The target of byte `off`.
    pub fn at(&self, off: u64) -> Target {
        match self.at {
            Target::Vram(p) => Target::Vram(p + off),
            Target::Bus(a) => Target::Bus(a + off),
        }
    }
}

/// A channel the rig made.
pub struct Channel {
    /// Key in `World::channels`.
    pub token: u32,
    /// The GPFIFO ring.
    pub ring: Buffer,
    /// USERD.
    pub userd: Buffer,
    /// Entries in the ring.
    pub entries: u32,
    /// Next GPPut.
    pub put: u32,
}

/// Programs the sysmem flush buffer with a page of host memory, as every driver must before
/// the engines make a system membar (kmemsysProgramSysmemFlushBuffer_GH100 / _GB10B: the
/// address as it is, HI first; kmemsysProgramSysmemFlushBuffer_GA100 on GA10x/AD10x: bits
/// 63:40 in HI, bits 39:8 in LO).
pub fn program_sysmem_flush(gpu: &SimGpu) -> u64 {
    let page = gpu.bus().sysmem.alloc(4096).unwrap();
    let (hi_v, lo_v) = if gpu.spec().sysmem_flush_shifted {
        ((page.bus >> 40) as u32, (page.bus >> 8) as u32)
    } else {
        ((page.bus >> 32) as u32, page.bus as u32)
    };
    for &(hi, lo) in gpu.spec().sysmem_flush {
        gpu.bar0_write(hi, hi_v);
        gpu.bar0_write(lo, lo_v);
    }
    page.bus
}

/// The VA space id the rig records its channels in.
pub const VASPACE: u32 = 1;

/// The rig.
pub struct Rig {
    pub gpu: Arc<SimGpu>,
    pub space: AddressSpace<VramTables, PhysAllocator, NoTlb>,
    pub vram: PhysAllocator,
    pub vas: VaAllocator,
    next_chid: u32,
    /// Pushbuffer space (host memory), bump-allocated.
    pb: Buffer,
    pb_used: u64,
}

/// Bytes of pushbuffer space a rig has.
const PB_BYTES: u64 = 4 << 20;

impl Rig {
    /// A rig on `chip` with `faults`.
    pub fn new(chip: SimChip, faults: FaultPlan) -> Rig {
        let gpu = Arc::new(SimGpu::with_faults(chip, faults).unwrap());
        // PCI_COMMAND: memory space and bus mastering on, as a driver turns them on.
        assert!(gpu.config_write(4, 2, 0x6));
        program_sysmem_flush(&gpu);
        // Page tables in VRAM [16 MiB, 48 MiB); data from 64 MiB.
        let tables = PhysAllocator::new(16 << 20, 32 << 20).unwrap();
        // The chip's own page-table format: ver2 on GA102/AD102, ver3 on Hopper and Blackwell.
        let version = nvbare_sim::units::mmu::format(gpu.spec()).version;
        let space = AddressSpace::new(
            version,
            TableAperture::Video,
            VramTables(gpu.bus().vram.clone()),
            tables,
            NoTlb,
        )
        .unwrap();
        let root = space.root().addr;
        gpu.with_world(|w| {
            w.vaspaces.insert(
                VASPACE,
                VaSpaceRecord {
                    page_dir: Some(Target::Vram(root)),
                },
            )
        });
        let mut rig = Rig {
            gpu,
            space,
            vram: PhysAllocator::new(64 << 20, 8 << 30).unwrap(),
            vas: VaAllocator::new(1 << 32, 1 << 44).unwrap(),
            next_chid: 1,
            pb: Buffer {
                va: 0,
                len: 0,
                at: Target::Vram(0),
            },
            pb_used: 0,
        };
        rig.pb = rig.sys_buffer(PB_BYTES);
        rig
    }

    /// Whether the chip is GB20x (its doorbells need RUNLIST_DOORBELL).
    pub fn gb20x(&self) -> bool {
        self.gpu.spec().pmc_boot_42 >> 24 & 0x3f == 0x1b
    }

    /// `len` bytes of VRAM mapped at a fresh VA with pages of `align` (4 KiB, 64 KiB, 2 MiB).
    pub fn vram_buffer_aligned(&mut self, len: u64, align: u64) -> Buffer {
        let len = len.next_multiple_of(align);
        let pa = self.vram.alloc(len, align).unwrap();
        let va = self.vas.alloc(len, align).unwrap();
        self.space
            .map(
                va,
                &[PhysRange::new(pa, len)],
                PteAttributes::new(Aperture::Video),
            )
            .unwrap();
        Buffer {
            va,
            len,
            at: Target::Vram(pa),
        }
    }

    /// `len` bytes of VRAM mapped at a fresh VA (4 KiB pages).
    pub fn vram_buffer(&mut self, len: u64) -> Buffer {
        self.vram_buffer_aligned(len, 4096)
    }

    /// `len` bytes of host memory (DMA-mapped on the simulated bus) at a fresh VA, PTE
    /// aperture system coherent.
    pub fn sys_buffer(&mut self, len: u64) -> Buffer {
        let len = len.next_multiple_of(4096);
        let a = self.gpu.bus().sysmem.alloc(len as usize).unwrap();
        let va = self.vas.alloc(len, 4096).unwrap();
        self.space
            .map(
                va,
                &[PhysRange::new(a.bus, len)],
                PteAttributes::new(Aperture::SystemCoherent),
            )
            .unwrap();
        Buffer {
            va,
            len,
            at: Target::Bus(a.bus),
        }
    }

    /// The CPU writes `data` at byte `off` of `b` (host memory directly, not as a device
    /// access: bus mastering does not apply to the CPU).
    pub fn write(&self, b: &Buffer, off: u64, data: &[u8]) {
        let bus = self.gpu.bus();
        match b.at(off) {
            Target::Vram(pa) => bus.vram.write(pa, data),
            Target::Bus(addr) => bus.sysmem.write(addr, data),
        }
        .unwrap();
    }

    /// The CPU reads `out.len()` bytes at byte `off` of `b`.
    pub fn read(&self, b: &Buffer, off: u64, out: &mut [u8]) {
        let bus = self.gpu.bus();
        match b.at(off) {
            Target::Vram(pa) => bus.vram.read(pa, out),
            Target::Bus(addr) => bus.sysmem.read(addr, out),
        }
        .unwrap();
    }

    /// A u64 of `b`.
    pub fn read_u64(&self, b: &Buffer, off: u64) -> u64 {
        let mut v = [0u8; 8];
        self.read(b, off, &mut v);
        u64::from_le_bytes(v)
    }

    /// A u32 of `b`.
    pub fn read_u32(&self, b: &Buffer, off: u64) -> u32 {
        let mut v = [0u8; 4];
        self.read(b, off, &mut v);
        u32::from_le_bytes(v)
    }

    /// A channel on `engine` (runlist 0 for graphics, 1 + n for copy engine n) with objects
    /// of `classes` allocated on it, recorded as GSP-RM would, scheduled.
    pub fn channel(&mut self, engine: Engine, classes: &[u32]) -> Channel {
        let entries = 256;
        let ring = self.vram_buffer(u64::from(entries) * 8);
        let userd = self.vram_buffer(0x1000);
        let chid = self.next_chid;
        self.next_chid += 1;
        let runlist = match engine {
            Engine::Graphics => 0,
            Engine::Copy(n) => 1 + n,
        };
        let token = runlist << 16 | chid;
        let rec = ChannelRecord {
            chid,
            runlist,
            engine,
            instance: None,
            userd: userd.at,
            gpfifo_va: ring.va,
            gpfifo_entries: entries,
            vaspace: VASPACE,
            classes: classes.to_vec(),
            enabled: true,
            error: None,
            generation: 0,
        };
        self.gpu.with_world(|w| {
            let generation = w.new_channel_generation();
            w.channels
                .insert(token, ChannelRecord { generation, ..rec })
        });
        Channel {
            token,
            ring,
            userd,
            entries,
            put: 0,
        }
    }

    /// Copies `words` into pushbuffer space; its GPU VA.
    pub fn pushbuffer(&mut self, words: &[u32]) -> u64 {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let len = (bytes.len() as u64).next_multiple_of(16);
        assert!(
            self.pb_used + len <= PB_BYTES,
            "the rig's pushbuffer space is full"
        );
        let off = self.pb_used;
        self.pb_used += len;
        let pb = self.pb;
        self.write(&pb, off, &bytes);
        pb.va + off
    }

    /// Appends a raw GPFIFO entry at GPPut and publishes it (USERD GPPut), without ringing.
    pub fn put_entry(&mut self, ch: &mut Channel, entry: u64) {
        let ring = ch.ring;
        self.write(&ring, 8 * u64::from(ch.put), &entry.to_le_bytes());
        ch.put = (ch.put + 1) % ch.entries;
        let userd = ch.userd;
        self.write(&userd, 0x8c, &ch.put.to_le_bytes());
    }

    /// Rings `ch`'s doorbell.
    pub fn ring(&self, ch: &Channel) {
        let v = ch.token | if self.gb20x() { 1 << 30 } else { 0 };
        self.gpu.bar0_write(DOORBELL, v);
    }

    /// Submits `words` as one segment on `ch` and rings its doorbell.
    pub fn submit(&mut self, ch: &mut Channel, words: &[u32]) {
        let va = self.pushbuffer(words);
        self.put_entry(ch, gp_entry(va, words.len() as u32));
        self.ring(ch);
    }

    /// GPGet as the channel's USERD says.
    pub fn gp_get(&self, ch: &Channel) -> u32 {
        self.read_u32(&ch.userd, 0x88)
    }

    /// The channel's error, if it was halted.
    pub fn error(&self, ch: &Channel) -> Option<String> {
        self.gpu
            .with_world(|w| w.channels.get(&ch.token).and_then(|c| c.error.clone()))
    }

    /// Waits until `probe` holds, at most 5 s.
    pub fn wait(&self, what: &'static str, mut probe: impl FnMut(&Rig) -> bool) {
        let clock = SimClock::default();
        // TIMEOUT: the device thread runs work within microseconds of a doorbell; 5 s is a
        // hang, not a slow machine.
        let r = poll_until(&clock, Wait::pausing(what, 5_000_000_000, 100_000), || {
            probe(self).then_some(())
        });
        if let Err(e) = r {
            panic!(
                "{e}\nsimulator warnings:\n{}",
                self.gpu.log().warnings().join("\n")
            );
        }
    }

    /// Waits until `ch` is halted; its error.
    pub fn wait_halted(&self, ch: &Channel) -> String {
        self.wait("the channel to halt", |r| r.error(ch).is_some());
        self.error(ch).unwrap()
    }

    /// Gives the device thread time to do whatever it would (for checks that something does
    /// *not* happen): 50 ms, thousands of device steps.
    pub fn settle(&self) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A GPFIFO entry for a main-level segment of `words` words at `va`.
pub fn gp_entry(va: u64, words: u32) -> u64 {
    let lo = va as u32 & !3;
    let hi = ((va >> 32) as u32 & 0xff) | (words << 10);
    u64::from(hi) << 32 | u64::from(lo)
}

/// Pushbuffer words, built from the method-header format.
#[derive(Default)]
pub struct Push(pub Vec<u32>);

impl Push {
    pub fn new() -> Push {
        Push(Vec::new())
    }
    /// Incrementing method: `data` to `method`, `method + 4`, …
    pub fn inc(&mut self, sc: u32, method: u32, data: &[u32]) -> &mut Self {
        self.0
            .push(1 << 29 | (data.len() as u32) << 16 | sc << 13 | method >> 2);
        self.0.extend_from_slice(data);
        self
    }
    /// Non-incrementing method: every word of `data` to `method`.
    pub fn non_inc(&mut self, sc: u32, method: u32, data: &[u32]) -> &mut Self {
        self.0
            .push(3 << 29 | (data.len() as u32) << 16 | sc << 13 | method >> 2);
        self.0.extend_from_slice(data);
        self
    }
    /// Immediate-data method (13-bit value in the header).
    pub fn immd(&mut self, sc: u32, method: u32, value: u32) -> &mut Self {
        assert!(value < 1 << 13);
        self.0.push(4 << 29 | value << 16 | sc << 13 | method >> 2);
        self
    }
    /// A host semaphore operation on `va` with `payload` and SEM_EXECUTE `exec`.
    pub fn host_sem(&mut self, va: u64, payload: u64, exec: u32) -> &mut Self {
        self.inc(
            0,
            SEM_ADDR_LO,
            &[
                va as u32,
                (va >> 32) as u32,
                payload as u32,
                (payload >> 32) as u32,
                exec,
            ],
        )
    }
    /// A 64-bit release with WFI and a timestamp.
    pub fn release(&mut self, va: u64, payload: u64) -> &mut Self {
        self.host_sem(
            va,
            payload,
            SEM_RELEASE | SEM_WFI | SEM_64BIT | SEM_TIMESTAMP,
        )
    }
    /// A 64-bit circular >= acquire.
    pub fn acquire(&mut self, va: u64, payload: u64) -> &mut Self {
        self.host_sem(va, payload, SEM_ACQ_CIRC_GEQ | SEM_64BIT)
    }
    pub fn words(&self) -> &[u32] {
        &self.0
    }
}
