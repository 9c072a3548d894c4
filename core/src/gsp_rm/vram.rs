//! The CPU's ways into VRAM, and the page-table memory written through them.
//!
//! - [`VramWindow`]: BAR1 in physical mode (BAR1 offset = VRAM address, as tinygrad binds it:
//!   `NV_VIRTUAL_FUNCTION_PRIV_FUNC_BAR1_BLOCK_LOW_ADDR` MODE 0), or PRAMIN, the 1 MiB BAR0
//!   window that `NV_XAL_EP_BAR0_WINDOW` points anywhere in VRAM, where BAR1 is absent or
//!   cannot be used (some IOMMUs fault BAR1 writes: the notes' tinygrad pitfalls).
//! - [`TableMirror`]: page-table memory as `nvbare_mmu` writes it. Every table page written is
//!   kept in CPU memory too, so the address space reads tables back from there (a BAR read
//!   costs microseconds); the ranges written since the last [`TableMirror::flush`] go to VRAM
//!   through the window in one pass, followed by one TLB invalidate.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::sync::atomic::{Ordering, fence};

use nvbare_mmu::{AccessError, TableAddr, TableAperture, TableMemory, TlbInvalidate};

use super::error::MemoryError;
use crate::chip::Arch;
use crate::hal::{Bar0, Platform, PollError, Wait, try_poll_until};
use crate::regs::fb::{
    PRAMIN, PRAMIN_SIZE, PbusBar0Window, PbusBar1Block, PbusBindStatus, XalEpBar0Window,
};
use crate::regs::vm::{VfBar1BlockHighAddr, VfBar1BlockLowAddr, VfMmuInvalidate};
use crate::shared::SharedMem;

/// How the CPU reaches VRAM.
#[derive(Clone, Debug)]
pub enum VramWindow {
    /// BAR1 in physical mode: offset = VRAM address, for the first `len` bytes of VRAM.
    Bar1(SharedMem),
    /// The PRAMIN window in BAR0 (slow: 32-bit register writes), moved by the register of
    /// this architecture (`NV_PBUS_BAR0_WINDOW` to Ada, `NV_XAL_EP_BAR0_WINDOW` after).
    Pramin(Arch),
}

/// PRAMIN's window moves in steps of 64 KiB (`NV_XAL_EP_BAR0_WINDOW_BASE_SHIFT`).
const PRAMIN_STEP: u64 = 1 << 16;

impl VramWindow {
    /// Bytes of VRAM the CPU reaches directly (BAR1's size; 0 for PRAMIN, which reaches all
    /// of VRAM but gives no mapping a `SharedMem` could hold).
    pub fn mapped_len(&self) -> u64 {
        match self {
            // CAST: usize to u64 is lossless on every target nvbare builds for.
            Self::Bar1(m) => m.len() as u64,
            Self::Pramin(_) => 0,
        }
    }

    /// The architecture whose PRAMIN window register to use (`None` through BAR1: any).
    fn arch(&self) -> Option<Arch> {
        match self {
            Self::Pramin(a) => Some(*a),
            Self::Bar1(_) => None,
        }
    }

    /// A CPU view of VRAM `[pa, pa + size)` that the GPU sees at `gpu_va`, through BAR1.
    pub fn view(&self, pa: u64, size: u64, gpu_va: u64) -> Result<SharedMem, MemoryError> {
        let window = self.mapped_len();
        let no_window = MemoryError::NoCpuWindow { pa, size, window };
        let end = pa
            .checked_add(size)
            .ok_or(MemoryError::NoCpuWindow { pa, size, window })?;
        match self {
            Self::Bar1(m) if end <= window => {
                // CAST: both below the window's length, a usize.
                Ok(m.slice(pa as usize, size as usize)?.with_gpu_va(gpu_va))
            }
            _ => Err(no_window),
        }
    }

    /// Writes `words` (little-endian) to VRAM at `pa` (8-byte aligned).
    pub fn write_words(&self, bar0: &impl Bar0, pa: u64, words: &[u64]) -> Result<(), MemoryError> {
        match self {
            Self::Bar1(m) if pa + words.len() as u64 * 8 <= self.mapped_len() => {
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                // CAST: inside the window's length, a usize.
                Ok(m.write_bytes_u64(pa as usize, &bytes)?)
            }
            _ => {
                pramin_write(bar0, self.arch(), pa, words.iter().copied());
                Ok(())
            }
        }
    }

    /// Writes zeros to `len` bytes (a multiple of 8) of VRAM at `pa` (8-byte aligned): the
    /// context buffers GSP-RM initialises must be cleared first (`ctrl2080gpu.h`).
    pub fn zero(&self, bar0: &impl Bar0, pa: u64, len: u64) -> Result<(), MemoryError> {
        match self {
            Self::Bar1(m) if pa + len <= self.mapped_len() => {
                // CAST: inside the window's length, a usize.
                Ok(m.fill(pa as usize, len as usize, 0)?)
            }
            _ => {
                pramin_write(
                    bar0,
                    self.arch(),
                    pa,
                    core::iter::repeat_n(0, (len / 8) as usize),
                );
                Ok(())
            }
        }
    }
}

/// Writes `words` from VRAM address `pa` on through PRAMIN, moving the window as needed.
fn pramin_write(bar0: &impl Bar0, arch: Option<Arch>, pa: u64, words: impl Iterator<Item = u64>) {
    let mut base = u64::MAX;
    for (i, w) in words.enumerate() {
        let at = pa + 8 * i as u64;
        if at < base || at + 8 > base + u64::from(PRAMIN_SIZE) {
            base = at & !(PRAMIN_STEP - 1);
            // CAST: VRAM addresses >> 16 fit the BASE field for any VRAM below 256 GiB on GH100
            // (BASE is 21:0 there, gh100 pri_nv_xal_ep.h), 512 GiB on GB10x (22:0) and 1 TiB
            // before Hopper (23:0).
            match arch {
                Some(Arch::Turing | Arch::Ampere | Arch::Ada) => PbusBar0Window::default()
                    .with_base((base >> 16) as u32)
                    .write(bar0),
                _ => XalEpBar0Window::default()
                    .with_base((base >> 16) as u32)
                    .write(bar0),
            }
        }
        // CAST: below PRAMIN_SIZE.
        let off = PRAMIN + (at - base) as u32;
        // High dword first: a PTE's or PDE's valid bit is bit 0 of the low dword, so the
        // entry becomes valid only once its address bits are all written (a walk between
        // the two stores sees the old entry, never a valid one with a stale high half).
        // CAST: the halves of the word.
        bar0.write32(off + 4, (w >> 32) as u32);
        bar0.write32(off, w as u32);
    }
}

// TIMEOUT: OpenRM bounds both the BAR1 bind wait (kbusBindBar1_GH100) and the pending
// TLB invalidate wait (kgmmuCheckPendingInvalidates_TU102, called with the caller's
// gpuSetTimeout) by GPU_TIMEOUT_DEFAULT, 4 s on silicon. Both take microseconds.
const BIND_AND_INVALIDATE_TIMEOUT_NS: u64 = 4_000_000_000;

/// Polls `register` until `done` holds, the way OpenRM waits for a BAR1 bind or a TLB
/// invalidate: bounded, and an all-ones read of a vanished device is "gone", not "busy".
fn wait_register<P: Platform>(
    p: &P,
    what: &'static str,
    register: impl Fn(&P) -> u32,
    done: impl Fn(u32) -> bool,
) -> Result<(), MemoryError> {
    let wait = Wait::spin(what, BIND_AND_INVALIDATE_TIMEOUT_NS);
    let mut last = 0;
    try_poll_until(p.clock(), wait, || {
        last = register(p);
        if done(last) {
            return Ok(Some(()));
        }
        if last == u32::MAX && !p.is_present() {
            return Err(MemoryError::DeviceGone { what });
        }
        Ok(None)
    })
    .map_err(|e| match e {
        PollError::Failed(e) => e,
        PollError::TimedOut(timed_out) => MemoryError::RegisterStuck {
            what,
            value: last,
            timed_out,
        },
    })
}

/// Puts BAR1 in physical mode (its offsets are VRAM addresses), as tinygrad leaves it, the
/// way `kbusBindBar1_GH100` binds: `NV_VIRTUAL_FUNCTION_PRIV_FUNC_BAR1_BLOCK_LOW_ADDR` first
/// (MODE physical, TARGET VRAM, no instance block), then `_HIGH_ADDR`, whose write triggers
/// the bind ("Write to the HIGH register triggers the bind"), then wait until
/// `BAR1_PENDING` is empty and `BAR1_OUTSTANDING` false before any BAR1 access ("SW must
/// ensure that the bind has completed prior to issuing any further BAR1 requests").
///
/// Turing to Ada bind through `NV_PBUS_BAR1_BLOCK` (MODE physical, TARGET VRAM, no
/// instance block: the value tinygrad writes on every chip) and wait on
/// `NV_PBUS_BIND_STATUS` (`kbusBar1InstBlkBind_GM107`'s poll).
pub fn bar1_physical<P: Platform>(p: &P, arch: Arch) -> Result<(), MemoryError> {
    if matches!(arch, Arch::Turing | Arch::Ampere | Arch::Ada) {
        PbusBar1Block::default().write(p);
        fence(Ordering::SeqCst);
        return wait_register(
            p,
            "the BAR1 bind (NV_PBUS_BIND_STATUS BAR1_PENDING/OUTSTANDING)",
            |p| PbusBindStatus::read(p).raw(),
            |v| {
                let r = PbusBindStatus::from_raw(v);
                !r.bar1_pending() && !r.bar1_outstanding()
            },
        );
    }
    VfBar1BlockLowAddr::default()
        .with_mode(false)
        .with_target(0)
        .write(p);
    VfBar1BlockHighAddr::default().write(p);
    fence(Ordering::SeqCst);
    wait_register(
        p,
        "the BAR1 bind (BAR1_PENDING/BAR1_OUTSTANDING)",
        |p| VfBar1BlockLowAddr::read(p).raw(),
        |v| {
            let r = VfBar1BlockLowAddr::from_raw(v);
            !r.bar1_pending() && !r.bar1_outstanding()
        },
    )
}

/// Invalidates every GPU TLB entry of every address space, with a system membar, as tinygrad
/// does after changing page tables (`NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE` ALL_VA |
/// ALL_PDB | SYS_MEMBAR | TRIGGER), then waits for `TRIGGER` to read back false as
/// `kgmmuCheckPendingInvalidates_TU102` does (the header marks the field write-only, OpenRM
/// polls it all the same): until then the TLBs may still hold the old translations. The
/// fence first drains the CPU's write-combined page-table stores.
pub fn invalidate_tlb<P: Platform>(p: &P) -> Result<(), MemoryError> {
    fence(Ordering::SeqCst);
    VfMmuInvalidate::default()
        .with_all_va(true)
        .with_all_pdb(true)
        .with_sys_membar(true)
        .with_trigger(true)
        .write(p);
    wait_register(
        p,
        "the TLB invalidate (NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE_TRIGGER)",
        |p| VfMmuInvalidate::read(p).raw(),
        |v| !VfMmuInvalidate::from_raw(v).trigger(),
    )
}

/// Words per 4 KiB table page.
const PAGE_WORDS: usize = 512;

/// Page-table memory in VRAM `[base, end)`, mirrored in CPU memory, with the ranges written
/// since the last flush.
#[derive(Debug)]
pub struct TableMirror {
    base: u64,
    end: u64,
    pages: BTreeMap<u64, Box<[u64; PAGE_WORDS]>>,
    dirty: Vec<(u64, u64)>,
}

impl TableMirror {
    /// Table memory for VRAM `[base, end)`, all zero.
    pub fn new(base: u64, end: u64) -> Self {
        Self {
            base,
            end,
            pages: BTreeMap::new(),
            dirty: Vec::new(),
        }
    }

    fn check(&self, at: TableAddr, len: u64) -> Result<(), AccessError> {
        let inside = at.aperture == TableAperture::Video
            && at.addr.is_multiple_of(8)
            && at.addr >= self.base
            && at.addr.checked_add(len).is_some_and(|e| e <= self.end);
        if inside {
            Ok(())
        } else {
            Err(AccessError { at, len })
        }
    }

    /// Whether anything waits to be written to VRAM.
    pub fn is_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Writes every range written since the last flush to VRAM through `window`, merged
    /// into runs.
    pub fn flush(&mut self, bar0: &impl Bar0, window: &VramWindow) -> Result<(), MemoryError> {
        let mut dirty = core::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        let mut runs: Vec<(u64, u64)> = Vec::with_capacity(dirty.len());
        for (s, e) in dirty {
            match runs.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => runs.push((s, e)),
            }
        }
        let mut words = Vec::new();
        for (s, e) in runs {
            words.clear();
            words.extend((s..e).step_by(8).map(|a| self.word(a)));
            window.write_words(bar0, s, &words)?;
        }
        Ok(())
    }

    fn word(&self, addr: u64) -> u64 {
        let page = addr & !0xfff;
        // CAST: below 512.
        let i = ((addr & 0xfff) / 8) as usize;
        self.pages.get(&page).map_or(0, |p| p[i])
    }
}

impl TableMemory for TableMirror {
    fn read_u64(&self, at: TableAddr) -> Result<u64, AccessError> {
        self.check(at, 8)?;
        Ok(self.word(at.addr))
    }

    fn write_u64s(&mut self, at: TableAddr, values: &[u64]) -> Result<(), AccessError> {
        // CAST: a slice length fits u64.
        let len = values.len() as u64 * 8;
        self.check(at, len)?;
        for (i, v) in values.iter().enumerate() {
            let addr = at.addr + 8 * i as u64;
            let page = self
                .pages
                .entry(addr & !0xfff)
                .or_insert_with(|| Box::new([0; PAGE_WORDS]));
            // CAST: below 512.
            page[((addr & 0xfff) / 8) as usize] = *v;
        }
        self.dirty.push((at.addr, at.addr + len));
        Ok(())
    }
}

/// Remembers that an invalidate is due; the RM emulation issues it after the flush.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlbDue(pub bool);

impl TlbInvalidate for TlbDue {
    fn invalidate(&mut self, _root: TableAddr, _va: u64, _size: u64) {
        self.0 = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::RefCell;

    use core::cell::Cell;

    use crate::hal::{BarInfo, Clock, DmaMemory, PciAddress, PlatformError};

    /// Register writes, recorded; reads of the BAR1 block and the invalidate register show
    /// the operation busy for `busy_reads` reads (u32::MAX: forever), then done.
    #[derive(Default)]
    struct Regs(RefCell<Vec<(u32, u32)>>, Cell<u32>, Clock1us);

    #[derive(Default)]
    struct Clock1us(Cell<u64>);
    impl Clock for Clock1us {
        fn now_ns(&self) -> u64 {
            self.0.set(self.0.get() + 1_000);
            self.0.get()
        }
        fn delay_ns(&self, ns: u64) {
            self.0.set(self.0.get() + ns);
        }
    }

    impl Regs {
        fn busy_for(reads: u32) -> Self {
            let r = Regs::default();
            r.1.set(reads);
            r
        }
    }

    impl Bar0 for Regs {
        fn read32(&self, o: u32) -> u32 {
            let busy = self.1.get();
            if busy == 0 {
                return 0;
            }
            self.1.set(busy.saturating_sub(u32::from(busy != u32::MAX)));
            // A register that stays busy: each read takes a millisecond, so the 4 s bound
            // comes after a few thousand reads.
            if busy == u32::MAX {
                self.2.delay_ns(1_000_000);
            }
            match o {
                // TRIGGER still set.
                0xb8_30b0 => 1 << 31,
                // BAR1_PENDING and BAR1_OUTSTANDING.
                0xb8_0f60 => 0b11,
                // NV_PBUS_BIND_STATUS: the same, before Hopper.
                0x1710 => 0b11,
                _ => 0,
            }
        }
        fn write32(&self, o: u32, v: u32) {
            self.0.borrow_mut().push((o, v));
        }
    }

    impl Platform for Regs {
        type Clock = Clock1us;
        fn clock(&self) -> &Clock1us {
            &self.2
        }
        fn pci_address(&self) -> PciAddress {
            PciAddress::default()
        }
        fn bar_info(&self, _: u32) -> Option<BarInfo> {
            None
        }
        fn bar1(&self) -> Option<SharedMem> {
            None
        }
        fn dma_alloc(&mut self, _: usize, _: bool) -> Result<DmaMemory, PlatformError> {
            Err(PlatformError::Unsupported("DMA"))
        }
        unsafe fn dma_free(&mut self, _: DmaMemory) {}
        fn config_read(&self, _: u16, _: u8) -> Result<u32, PlatformError> {
            Ok(0x10de)
        }
        fn config_write(&self, _: u16, _: u8, _: u32) -> Result<(), PlatformError> {
            Ok(())
        }
        fn reset(&mut self) -> Result<(), PlatformError> {
            Ok(())
        }
    }

    #[test]
    fn writes_reach_vram_once_per_flush_through_pramin() {
        let mut t = TableMirror::new(0x10_0000, 0x20_0000);
        t.write_u64s(TableAddr::video(0x10_0008), &[0x1122_3344_5566_7788, 2])
            .unwrap();
        t.write_u64s(TableAddr::video(0x10_0010), &[3]).unwrap();
        assert_eq!(t.read_u64(TableAddr::video(0x10_0010)), Ok(3));
        assert_eq!(t.read_u64(TableAddr::video(0x10_1000)), Ok(0));
        assert!(t.write_u64s(TableAddr::video(0x20_0000), &[1]).is_err());
        assert!(t.read_u64(TableAddr::video(0x10_0004)).is_err());
        let regs = Regs::default();
        t.flush(&regs, &VramWindow::Pramin(Arch::Hopper)).unwrap();
        let w = regs.0.borrow();
        // The window at VRAM 0x100000 (BASE 0x10), then two merged words' halves.
        assert_eq!(w[0], (XalEpBar0Window::ADDRESS, 0x10));
        assert_eq!(w[1], (PRAMIN + 12, 0x1122_3344), "high dword first");
        assert_eq!(
            w[2],
            (PRAMIN + 8, 0x5566_7788),
            "then the one with the valid bit"
        );
        assert_eq!(w[4], (PRAMIN + 16, 3), "the later write wins");
        assert_eq!(w.len(), 5, "one run of two words after the window");
        drop(w);
        assert!(!t.is_dirty());
        regs.0.borrow_mut().clear();
        t.flush(&regs, &VramWindow::Pramin(Arch::Hopper)).unwrap();
        assert!(regs.0.borrow().is_empty(), "nothing new to write");
    }

    #[test]
    fn pramin_moves_its_window_past_one_mib() {
        let regs = Regs::default();
        let words = (PRAMIN_SIZE / 8) as usize;
        pramin_write(
            &regs,
            Some(Arch::Hopper),
            0x3_0000,
            core::iter::repeat_n(7u64, words + 1),
        );
        let w = regs.0.borrow();
        assert_eq!(w[0], (XalEpBar0Window::ADDRESS, 0x3));
        assert_eq!(w[1], (PRAMIN + 4, 0));
        assert_eq!(w[2], (PRAMIN, 7));
        let moved = 1 + 2 * words;
        assert_eq!(w[moved], (XalEpBar0Window::ADDRESS, 0x13), "moved by 1 MiB");
        assert_eq!(w[moved + 2], (PRAMIN, 7));
        assert_eq!(w.len(), moved + 3);
    }

    #[test]
    fn before_hopper_pramin_and_bar1_use_the_pbus_registers() {
        let regs = Regs::default();
        pramin_write(&regs, Some(Arch::Ada), 0x5_0000, core::iter::once(9u64));
        assert_eq!(regs.0.borrow()[0], (PbusBar0Window::ADDRESS, 0x5));
        let regs = Regs::busy_for(3);
        bar1_physical(&regs, Arch::Ampere).unwrap();
        assert_eq!(
            regs.0.borrow()[0],
            (PbusBar1Block::ADDRESS, 0),
            "physical, VRAM"
        );
        assert_eq!(regs.1.get(), 0, "polled NV_PBUS_BIND_STATUS until idle");
        let e = bar1_physical(&Regs::busy_for(u32::MAX), Arch::Turing).unwrap_err();
        assert!(matches!(e, MemoryError::RegisterStuck { .. }), "{e:?}");
    }

    #[test]
    fn invalidate_is_tinygrads_value_then_waits_for_the_trigger_to_clear() {
        let regs = Regs::busy_for(3);
        invalidate_tlb(&regs).unwrap();
        assert_eq!(
            regs.0.borrow().as_slice(),
            &[(0xb8_30b0, (1 << 0) | (1 << 1) | (1 << 6) | (1 << 31))]
        );
        assert_eq!(regs.1.get(), 0, "polled until TRIGGER read false");
        // One that never completes is a bounded error naming the register.
        let e = invalidate_tlb(&Regs::busy_for(u32::MAX)).unwrap_err();
        assert!(
            alloc::format!("{e}").contains("MMU_INVALIDATE_TRIGGER"),
            "{e}"
        );
    }

    #[test]
    fn bar1_binds_low_then_high_and_waits_for_the_bind() {
        let regs = Regs::busy_for(2);
        bar1_physical(&regs, Arch::Hopper).unwrap();
        // kbusBindBar1_GH100: LOW first, the HIGH write triggers the bind.
        assert_eq!(
            regs.0.borrow().as_slice(),
            &[(0xb8_0f60, 0), (0xb8_0f64, 0)]
        );
        assert_eq!(
            regs.1.get(),
            0,
            "polled until PENDING and OUTSTANDING cleared"
        );
        let e = bar1_physical(&Regs::busy_for(u32::MAX), Arch::Hopper).unwrap_err();
        assert!(alloc::format!("{e}").contains("BAR1_PENDING"), "{e}");
    }
}
