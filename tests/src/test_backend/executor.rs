//! The test backend's "GPU": heap memory at GPU VAs, and a front end that runs a channel's
//! new GPFIFO entries when its doorbell rings. Segments are decoded by the simulator's
//! independent decoder (`nvbare_sim::decode`), never by core's encoders; the executor then
//! does what the operations say where it matters to the driver: semaphore releases (host,
//! copy engine, QMD), linear copies, and it records every operation and launch.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use nvbare_core::gpfifo::{GP_ENTRY_SIZE, USERD_GP_GET, USERD_GP_PUT};
use nvbare_core::shared::MemIo;
use nvbare_sim::decode::qmd::{QmdInfo, decode_qmd, major_for_class, table};
use nvbare_sim::decode::{Decoder, HostSemaphoreOp, Operation, gp_entry};

/// One heap allocation the GPU reaches at a VA (zeroed, lazily backed by the allocator).
#[derive(Debug)]
pub struct HeapRegion(Mutex<Vec<u8>>);

impl HeapRegion {
    /// `len` zero bytes.
    pub fn new(len: usize) -> Self {
        Self(Mutex::new(vec![0; len]))
    }
    fn bytes(&self) -> MutexGuard<'_, Vec<u8>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl MemIo for HeapRegion {
    fn read(&self, offset: u64, out: &mut [u8]) {
        let b = self.bytes();
        let at = offset as usize;
        out.copy_from_slice(&b[at..at + out.len()]);
    }
    fn write(&self, offset: u64, data: &[u8]) {
        let mut b = self.bytes();
        let at = offset as usize;
        b[at..at + data.len()].copy_from_slice(data);
    }
}

/// A launch the front end ran, as its QMD says.
#[derive(Clone, Debug)]
pub struct Launch {
    /// Where the QMD was.
    pub qmd_va: u64,
    /// The decoded QMD.
    pub qmd: QmdInfo,
    /// Constant bank 0 as the grid read it when it was scheduled (empty when bank 0 is not
    /// valid or not mapped).
    pub cbuf0: Vec<u8>,
}

/// A channel the executor knows: ring, USERD, token, its own decoder state.
#[derive(Debug)]
struct FakeChannel {
    ring_va: u64,
    userd_va: u64,
    entries: u32,
    get: u32,
    decoder: Decoder,
    label: &'static str,
    /// Operations of the entry at `get` already done before an acquire held it.
    done: usize,
}

/// Memory, channels, and what ran.
#[derive(Debug, Default)]
pub struct FakeGpu {
    regions: BTreeMap<u64, Arc<HeapRegion>>,
    lens: BTreeMap<u64, u64>,
    channels: BTreeMap<u32, FakeChannel>,
    /// When false, doorbells are recorded but nothing runs (a hung GPU).
    pub running: bool,
    /// Every doorbell write, in order.
    pub doorbells: Vec<u32>,
    /// Doorbells still to lose: recorded, but the front end does not look at the channel
    /// (as when it read GPPut before the new value landed in USERD).
    pub lose_doorbells: u32,
    /// Every operation decoded, with the channel's label.
    pub ops: Vec<(&'static str, Operation)>,
    /// Every grid launched.
    pub launches: Vec<Launch>,
    /// The compute class bound on the compute channel (for the QMD version).
    pub compute_class: Option<u32>,
    /// GPU timer (ns), advanced per operation.
    pub time_ns: u64,
    /// Why the front end stopped, if it did (a decode error, an unmapped address).
    pub stopped: Option<String>,
}

impl FakeGpu {
    /// Backs `[va, va + len)` with heap memory; returns it.
    pub fn map(&mut self, va: u64, len: u64) -> Arc<HeapRegion> {
        let r = Arc::new(HeapRegion::new(len as usize));
        self.regions.insert(va, r.clone());
        self.lens.insert(va, len);
        r
    }

    /// Removes the mapping at `va`.
    pub fn unmap(&mut self, va: u64) {
        self.regions.remove(&va);
        self.lens.remove(&va);
    }

    /// Whether anything is mapped at `va`.
    pub fn is_mapped(&self, va: u64) -> bool {
        self.find(va, 1).is_some()
    }

    fn find(&self, va: u64, len: usize) -> Option<(Arc<HeapRegion>, u64)> {
        let (&base, r) = self.regions.range(..=va).next_back()?;
        let end = base + self.lens[&base];
        (va + len as u64 <= end).then(|| (r.clone(), va - base))
    }

    /// Reads `out.len()` bytes at GPU VA `va`.
    pub fn read(&self, va: u64, out: &mut [u8]) -> Result<(), String> {
        let (r, off) = self
            .find(va, out.len())
            .ok_or_else(|| format!("read of {} bytes at unmapped {va:#x}", out.len()))?;
        r.read(off, out);
        Ok(())
    }

    /// Writes `data` at GPU VA `va`.
    pub fn write(&self, va: u64, data: &[u8]) -> Result<(), String> {
        let (r, off) = self
            .find(va, data.len())
            .ok_or_else(|| format!("write of {} bytes at unmapped {va:#x}", data.len()))?;
        r.write(off, data);
        Ok(())
    }

    fn read_u32(&self, va: u64) -> Result<u32, String> {
        let mut b = [0; 4];
        self.read(va, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn read_u64(&self, va: u64) -> Result<u64, String> {
        let mut b = [0; 8];
        self.read(va, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Registers a channel rung with `token`.
    pub fn add_channel(
        &mut self,
        token: u32,
        ring_va: u64,
        userd_va: u64,
        entries: u32,
        label: &'static str,
    ) {
        self.channels.insert(
            token,
            FakeChannel {
                ring_va,
                userd_va,
                entries,
                get: 0,
                decoder: Decoder::new(),
                label,
                done: 0,
            },
        );
    }

    /// A doorbell write of `token`: runs the channel's new entries when running.
    pub fn ring(&mut self, token: u32) {
        self.doorbells.push(token);
        if self.lose_doorbells > 0 {
            self.lose_doorbells -= 1;
            return;
        }
        if self.running {
            self.run(token);
        }
    }

    /// Runs every channel's pending entries (after `running` was set again).
    pub fn run_all(&mut self) {
        let tokens: Vec<u32> = self.channels.keys().copied().collect();
        for t in tokens {
            self.run(t);
        }
    }

    /// Runs `token`'s channel, then every channel again while any made progress: a release
    /// on one channel lets another's acquire pass, with no doorbell (as the front end
    /// re-checks a pending acquire).
    fn run(&mut self, token: u32) {
        if self.stopped.is_some() {
            return;
        }
        if let Err(e) = self.try_run(token) {
            self.stopped = Some(e);
            return;
        }
        let tokens: Vec<u32> = self.channels.keys().copied().collect();
        loop {
            let before = self.ops.len();
            for &t in &tokens {
                if let Err(e) = self.try_run(t) {
                    self.stopped = Some(e);
                    return;
                }
            }
            if self.ops.len() == before {
                return;
            }
        }
    }

    fn try_run(&mut self, token: u32) -> Result<(), String> {
        let Some(mut ch) = self.channels.remove(&token) else {
            return Err(format!("doorbell with unknown token {token:#x}"));
        };
        let r = self.run_channel(&mut ch);
        self.channels.insert(token, ch);
        r
    }

    fn run_channel(&mut self, ch: &mut FakeChannel) -> Result<(), String> {
        let put = self.read_u32(ch.userd_va + USERD_GP_PUT as u64)?;
        if put >= ch.entries {
            return Err(format!("GPPut {put} outside a ring of {}", ch.entries));
        }
        while ch.get != put {
            let raw = self.read_u64(ch.ring_va + u64::from(ch.get) * GP_ENTRY_SIZE as u64)?;
            if let Some(seg) = gp_entry(raw) {
                let mut bytes = vec![0u8; seg.words as usize * 4];
                self.read(seg.va, &mut bytes)?;
                let words: Vec<u32> = bytes
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                let ops = ch
                    .decoder
                    .decode(&words)
                    .map_err(|e| format!("decode: {e:?}"))?;
                for (i, op) in ops.into_iter().enumerate().skip(ch.done) {
                    if !self.execute(&op)? {
                        // An acquire not yet satisfied: the channel waits at this operation.
                        ch.done = i;
                        return Ok(());
                    }
                    self.ops.push((ch.label, op));
                }
            }
            ch.done = 0;
            ch.get = (ch.get + 1) % ch.entries;
            self.write(ch.userd_va + USERD_GP_GET as u64, &ch.get.to_le_bytes())?;
        }
        Ok(())
    }

    fn release(
        &mut self,
        va: u64,
        value: u64,
        payload64: bool,
        timestamp: bool,
    ) -> Result<(), String> {
        self.time_ns += 1000;
        if payload64 {
            self.write(va, &value.to_le_bytes())?;
        } else {
            self.write(va, &(value as u32).to_le_bytes())?;
        }
        if timestamp {
            self.write(va + 8, &self.time_ns.to_le_bytes())?;
        }
        Ok(())
    }

    /// Does `op`; `false` when it is an acquire that does not hold yet.
    fn execute(&mut self, op: &Operation) -> Result<bool, String> {
        match *op {
            Operation::SetObject { class, .. } if class & 0xff == 0xc0 => {
                self.compute_class = Some(class);
            }
            Operation::HostSemaphore {
                va,
                value,
                payload64,
                op,
            } => match op {
                HostSemaphoreOp::Release { timestamp, .. } => {
                    self.release(va, value, payload64, timestamp)?
                }
                HostSemaphoreOp::AcquireCircGeq | HostSemaphoreOp::AcquireStrictGeq => {
                    if self.read_u64(va)? < value {
                        return Ok(false);
                    }
                }
                HostSemaphoreOp::AcquireEqual => {
                    if self.read_u64(va)? != value {
                        return Ok(false);
                    }
                }
                HostSemaphoreOp::Other(o) => return Err(format!("semaphore operation {o}")),
            },
            Operation::Copy { src, dst, len } => {
                let mut buf = vec![0u8; len as usize];
                self.read(src, &mut buf)?;
                self.write(dst, &buf)?;
            }
            Operation::CopySemaphoreRelease {
                va,
                value,
                payload64,
                timestamp,
            } => self.release(va, value, payload64, timestamp)?,
            Operation::ComputeSemaphoreRelease {
                va,
                value,
                payload64,
            } => self.release(va, value, payload64, false)?,
            Operation::LaunchQmd { qmd_va, .. } => {
                let class = self.compute_class.ok_or("launch before a compute object")?;
                let major = major_for_class(class).ok_or("no QMD version for the class")?;
                let size = table(major).ok_or("no QMD table")?.size;
                // A chained QMD (DEPENDENT_QMD0_*) runs when the one before it completes, as
                // the simulator's compute unit runs it (sim/src/units/compute/mod.rs).
                let mut va = qmd_va;
                for _ in 0..4096 {
                    let mut q = vec![0u8; size];
                    self.read(va, &mut q)?;
                    let qmd = decode_qmd(&q, major).map_err(|e| format!("QMD: {e:?}"))?;
                    for r in &qmd.releases {
                        self.release(r.va, r.payload, r.payload64, false)?;
                    }
                    let next = qmd.dependent;
                    let cbuf0 = qmd
                        .cbufs
                        .iter()
                        .find(|c| c.index == 0)
                        .and_then(|c| {
                            let mut b = vec![0u8; c.size as usize];
                            self.read(c.va, &mut b).ok().map(|()| b)
                        })
                        .unwrap_or_default();
                    self.launches.push(Launch {
                        qmd_va: va,
                        qmd,
                        cbuf0,
                    });
                    match next {
                        Some(n) => va = n,
                        None => return Ok(true),
                    }
                }
                return Err("more than 4096 chained QMDs".into());
            }
            _ => {}
        }
        Ok(true)
    }
}
