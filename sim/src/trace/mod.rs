//! A record of what a driver did to the simulated GPUs: every BAR0 and PCI config access,
//! resets, and every host-memory (bus address) region the GPUs' DMA touched, for comparing
//! two drivers' boots (issue 17: tinygrad's GB202 boot against nvbare's, `CONFORMANCE.md`).
//!
//! - [`Trace`]: the recorder, shared by the GPUs of one server ([`SimGpu::set_trace`]). Off
//!   (no trace attached) it costs one `OnceLock` load per access.
//! - Repeated reads collapse: a read of the same register with the same value as one of the
//!   last [`POLL_WINDOW`] events, with only reads since, adds to that event's count instead of
//!   a new event (a poll loop over one or a few registers becomes one event per register and
//!   value: "read 0xad00bc = 0x0 ×412").
//! - DMA is recorded as coalesced bus-address ranges per GPU and direction, with the number
//!   of driver events recorded before the first touch (where in the boot it happened).
//! - [`names`]: BAR0 register names from NVIDIA's published hwref headers, read at run time
//!   from a directory (the simulator compiles in no names and depends on no header reader).
//! - [`compare`]: the differences between two traces, as stable keys.
//!
//! [`SimGpu::set_trace`]: crate::SimGpu::set_trace

pub mod compare;
pub mod names;

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::memory::Access;

/// DMA ranges closer than this merge into one (a unit that reads one byte of every page of a
/// table is one range, not a range per page).
pub const DMA_GAP: u64 = 0x1000;

/// How many recent events a repeated read may merge into (enough for a poll loop that reads
/// a few registers per round, as the FSP queue waits do: head and tail).
pub const POLL_WINDOW: usize = 4;

/// What a driver did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A BAR0 register read.
    Bar0Read,
    /// A BAR0 register write.
    Bar0Write,
    /// A config-space read.
    CfgRead,
    /// A config-space write.
    CfgWrite,
    /// A function-level reset.
    Reset,
}

impl Kind {
    /// The word the trace file uses.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Bar0Read => "bar0 r",
            Kind::Bar0Write => "bar0 w",
            Kind::CfgRead => "cfg r",
            Kind::CfgWrite => "cfg w",
            Kind::Reset => "reset",
        }
    }

    /// Whether this is a read.
    pub fn is_read(self) -> bool {
        matches!(self, Kind::Bar0Read | Kind::CfgRead)
    }
}

/// One driver access (or several identical reads collapsed into one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// What.
    pub kind: Kind,
    /// Which GPU of the server.
    pub gpu: u32,
    /// BAR0 or config offset (0 for a reset).
    pub offset: u32,
    /// Access size in bytes (4 for BAR0; 1, 2 or 4 for config; 0 for a reset).
    pub size: u32,
    /// The value read or written.
    pub value: u32,
    /// How many identical accesses this event stands for (≥ 1).
    pub count: u64,
    /// The simulator unit that decoded the offset ("-" where none did: it read as 0).
    pub unit: &'static str,
}

/// One coalesced range of bus addresses a GPU's DMA touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaRegion {
    /// Which GPU.
    pub gpu: u32,
    /// Read or write.
    pub access: Access,
    /// First bus address.
    pub start: u64,
    /// One past the last.
    pub end: u64,
    /// Driver events recorded before the first access of the range.
    pub after_event: usize,
}

#[derive(Debug, Default)]
struct State {
    events: Vec<Event>,
    /// `(gpu, write?)` → start → (end, after_event).
    dma: BTreeMap<(u32, bool), BTreeMap<u64, (u64, usize)>>,
}

/// The recorder. Shared (an `Arc`) by the GPUs it records.
#[derive(Debug, Default)]
pub struct Trace {
    state: Mutex<State>,
}

impl Trace {
    /// An empty trace.
    pub fn new() -> Trace {
        Trace::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records one access, collapsing a repeated read (see the module documentation).
    pub fn record(&self, e: Event) {
        let mut st = self.lock();
        if e.kind.is_read() {
            let n = st.events.len();
            for prev in st.events[n.saturating_sub(POLL_WINDOW)..].iter_mut().rev() {
                if !prev.kind.is_read() {
                    break;
                }
                if (prev.kind, prev.gpu, prev.offset, prev.size, prev.value)
                    == (e.kind, e.gpu, e.offset, e.size, e.value)
                {
                    prev.count += e.count;
                    return;
                }
            }
        }
        st.events.push(e);
    }

    /// Records a DMA access of `len` bytes at bus address `addr`, merged with the ranges it
    /// overlaps or comes within [`DMA_GAP`] of.
    pub fn record_dma(&self, gpu: u32, access: Access, addr: u64, len: u64) {
        if len == 0 {
            return;
        }
        let mut st = self.lock();
        let after = st.events.len();
        let map = st.dma.entry((gpu, access == Access::Write)).or_default();
        let (mut start, mut end, mut first) = (addr, addr.saturating_add(len), after);
        // Ranges that start at most DMA_GAP past `end` and end at most DMA_GAP before `start`
        // merge.
        let touching: Vec<u64> = map
            .range(..=end.saturating_add(DMA_GAP))
            .rev()
            .take_while(|(_, (e, _))| e.saturating_add(DMA_GAP) >= start)
            .map(|(&s, _)| s)
            .collect();
        for s in touching {
            if let Some((e, f)) = map.remove(&s) {
                start = start.min(s);
                end = end.max(e);
                first = first.min(f);
            }
        }
        map.insert(start, (end, first));
    }

    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        self.lock().events.clone()
    }

    /// The DMA ranges so far, in order of first touch.
    pub fn dma(&self) -> Vec<DmaRegion> {
        let st = self.lock();
        let mut out: Vec<DmaRegion> = st
            .dma
            .iter()
            .flat_map(|(&(gpu, write), m)| {
                m.iter()
                    .map(move |(&start, &(end, after_event))| DmaRegion {
                        gpu,
                        access: if write { Access::Write } else { Access::Read },
                        start,
                        end,
                        after_event,
                    })
            })
            .collect();
        out.sort_by_key(|r| (r.after_event, r.start));
        out
    }

    /// Writes the trace as text, one line per event then one per DMA range, naming BAR0
    /// offsets with `names` where it has a name:
    ///
    /// ```text
    /// 12 gpu0 bar0 r 0x00ad00bc = 0x00000000 ×412 [fsp] NV_THERM_I2CS_SCRATCH
    /// dma gpu0 write 0x100000000..0x100001000 (4096 bytes) after event 345
    /// ```
    pub fn write_text(&self, out: &mut impl Write, names: &names::RegisterNames) -> io::Result<()> {
        writeln!(
            out,
            "# nvbare sim trace: event gpu kind offset = value [×repeats] [unit] name"
        )?;
        for (i, e) in self.events().iter().enumerate() {
            writeln!(out, "{i} {}", Line { e, names })?;
        }
        for r in self.dma() {
            writeln!(
                out,
                "dma gpu{} {} {:#x}..{:#x} ({} bytes) after event {}",
                r.gpu,
                r.access,
                r.start,
                r.end,
                r.end - r.start,
                r.after_event
            )?;
        }
        Ok(())
    }
}

/// One event as a trace line (without its index).
struct Line<'a> {
    e: &'a Event,
    names: &'a names::RegisterNames,
}

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.e;
        write!(f, "gpu{} {}", e.gpu, e.kind.word())?;
        match e.kind {
            Kind::Reset => return Ok(()),
            Kind::CfgRead | Kind::CfgWrite => {
                write!(f, " {:#05x}/{} = {:#x}", e.offset, e.size, e.value)?
            }
            Kind::Bar0Read | Kind::Bar0Write => {
                write!(f, " {:#010x} = {:#010x}", e.offset, e.value)?
            }
        }
        if e.count > 1 {
            write!(f, " ×{}", e.count)?;
        }
        if matches!(e.kind, Kind::Bar0Read | Kind::Bar0Write) {
            write!(f, " [{}]", e.unit)?;
            if let Some(n) = self.names.name(e.offset) {
                write!(f, " {n}")?;
            }
        }
        Ok(())
    }
}

/// Where a GPU records: the trace and its index on the server. Set at most once
/// ([`SimGpu::set_trace`](crate::SimGpu::set_trace)); shared by the GPU's driver side and its
/// bus (DMA).
#[derive(Clone, Debug, Default)]
pub struct Tap(Arc<OnceLock<(Arc<Trace>, u32)>>);

impl Tap {
    /// Attaches `trace` (recording as GPU `gpu`); false if one was attached already.
    pub fn attach(&self, trace: Arc<Trace>, gpu: u32) -> bool {
        self.0.set((trace, gpu)).is_ok()
    }

    /// The trace and GPU index, if tracing.
    #[inline]
    pub fn get(&self) -> Option<(&Trace, u32)> {
        self.0.get().map(|(t, g)| (&**t, *g))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: Kind, offset: u32, value: u32) -> Event {
        Event {
            kind,
            gpu: 0,
            offset,
            size: 4,
            value,
            count: 1,
            unit: "-",
        }
    }

    #[test]
    fn poll_loops_collapse_and_writes_break_them() {
        let t = Trace::new();
        for _ in 0..5 {
            t.record(ev(Kind::Bar0Read, 0x8f2c00, 0));
            t.record(ev(Kind::Bar0Read, 0x8f2c04, 0));
        }
        t.record(ev(Kind::Bar0Read, 0x8f2c00, 8));
        t.record(ev(Kind::Bar0Write, 0x8f2c00, 8));
        t.record(ev(Kind::Bar0Read, 0x8f2c00, 8));
        let e = t.events();
        let got: Vec<(u32, u32, u64)> = e.iter().map(|e| (e.offset, e.value, e.count)).collect();
        assert_eq!(
            got,
            [
                (0x8f2c00, 0, 5),
                (0x8f2c04, 0, 5),
                (0x8f2c00, 8, 1),
                (0x8f2c00, 8, 1),
                (0x8f2c00, 8, 1)
            ]
        );
        assert_eq!(e[3].kind, Kind::Bar0Write);
    }

    #[test]
    fn dma_ranges_coalesce_where_they_touch() {
        let t = Trace::new();
        t.record_dma(0, Access::Read, 0x1000, 0x100);
        t.record(ev(Kind::Bar0Write, 0, 0));
        t.record_dma(0, Access::Read, 0x1100, 0x100);
        t.record_dma(0, Access::Read, 0x4000, 0x10);
        t.record_dma(0, Access::Read, 0x5008, 0x10);
        t.record_dma(0, Access::Read, 0x0f00, 0x200);
        t.record_dma(0, Access::Write, 0x1000, 4);
        let d = t.dma();
        let got: Vec<(bool, u64, u64, usize)> = d
            .iter()
            .map(|r| (r.access == Access::Write, r.start, r.end, r.after_event))
            .collect();
        assert_eq!(
            got,
            [
                (false, 0xf00, 0x1200, 0),
                (true, 0x1000, 0x1004, 1),
                (false, 0x4000, 0x5018, 1)
            ]
        );
    }
}
