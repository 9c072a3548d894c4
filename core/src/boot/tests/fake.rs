//! A small scripted GPU for the boot's error paths: BAR0 registers, an FSP that answers
//! the COT message over EMEM, a GSP-FMC whose lockdown release can be delayed or fail, and
//! a GSP-RM that finds its queues through the boot structures (FMC boot params → libos
//! args → RMARGS → the queue page table) and answers RPCs, all as a [`Script`] says.
//!
//! This file holds the script, what the fake saw, its state and the platform (DMA memory,
//! config space, reset); the registers are `fake_bar0.rs`'s, GSP-RM is `fake_gsp.rs`'s and
//! the booter path's falcons are `fake_booter.rs`'s.
//!
//! DMA memory is host memory at made-up bus addresses; pages of a non-contiguous allocation
//! are handed out in reverse bus order, so only page tables find them.

extern crate std;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::vec;
use std::vec::Vec;

use nvbare_gsp::abi::NvdmPayloadCot;
use nvbare_gsp::fsp::NVDM_TYPE_FSP_RESPONSE;
use nvbare_gsp::msgq::{MsgQueue, QueueGeometry, RpcQueue, SharedQueueLayout};
use zerocopy::{FromBytes, IntoBytes};

use crate::hal::{BarInfo, Clock, DMA_PAGE, DmaMemory, PciAddress, Platform, PlatformError};
use crate::shared::SharedMem;

pub const GH100_BOOT42: u32 = 0x180a_1000;
pub const GB202_BOOT42: u32 = 0x1b2a_1000;
pub const AD102_BOOT42: u32 = 0x192a_1000;

/// What the fake GPU does wrong (the default: nothing).
#[derive(Clone, Debug)]
pub struct Script {
    pub boot42: u32,
    pub fb_mib: u32,
    pub wpr2_up: bool,
    pub wpr2_sticky: bool,
    pub reset_unsupported: bool,
    pub fsp_never_ready: bool,
    pub fsp_busy: bool,
    pub fsp_silent: bool,
    pub fsp_error_code: u32,
    pub fsp_reply_type: u8,
    pub fsp_reply_command: u32,
    pub fsp_reply_len: Option<u32>,
    pub emem_no_autoinc: bool,
    /// HWCFG2 reads 0xbadf4100 this many times after COT (`u32::MAX`: forever).
    pub target_locked_reads: u32,
    /// Then lockdown (bit 13) stays set this many reads (`u32::MAX`: forever).
    pub lockdown_reads: u32,
    /// The boot-args address sits in MAILBOX0/1 while locked (not an error).
    pub mailbox_holds_boot_args: bool,
    pub fmc_error: Option<u32>,
    /// An FMC error code that appears in MAILBOX0 only as lockdown is released.
    pub fmc_error_on_release: Option<u32>,
    pub riscv_not_running: bool,
    pub gsp_silent: bool,
    pub no_init_done: bool,
    pub init_done_result: u32,
    pub os_error_before_init: Option<&'static str>,
    pub sequencer: bool,
    pub registry_fails: Option<u32>,
    pub corrupt_reply_to: Option<u32>,
    pub rpc_failure: Option<(u32, u32)>,
    pub no_reply_to: Option<u32>,
    /// GSP-RM publishes a write pointer outside its ring with its reply to this function.
    pub bad_write_ptr_with: Option<u32>,
    /// The reply to this function comes only after the next doorbell.
    pub late_reply_to: Option<u32>,
    /// The next reply to this function is lost (GSP-RM did the call).
    pub lose_reply_to: Option<u32>,
    pub no_halt: bool,
    pub log_words: u64,
    /// `PCI_COMMAND` as an earlier user left it.
    pub command_at_start: u32,
    /// Booter path: the ROM behind the PROM window.
    pub vbios: Option<Vec<u8>>,
    /// Booter path: FWSEC-FRTS's error code (0: it raises WPR2).
    pub frts_error: u16,
    /// Booter path: the booter's MAILBOX0 when it halts.
    pub booter_error: u32,
    /// Booter path: GSP-RM sends a real sequencer program before INIT_DONE.
    pub sequencer_program: bool,
    /// Booter path: devinit never reports GFW boot complete.
    pub gfw_not_done: bool,
    /// Booter path: devinit's FWSEC never halts on the GSP falcon.
    pub devinit_never_halts: bool,
    /// Booter path: the GSP falcon's CPUCTL and the GFW scratch read all ones (BAR0 not
    /// answering, config space does).
    pub gfw_reads_all_ones: bool,
    /// Booter path: at `UNLOADING_GUEST_DRIVER` GSP-RM sends a sequencer program and
    /// answers only once the CPU ran it.
    pub sequencer_at_unload: bool,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            boot42: GH100_BOOT42,
            fb_mib: 143_771,
            wpr2_up: false,
            wpr2_sticky: false,
            reset_unsupported: false,
            fsp_never_ready: false,
            fsp_busy: false,
            fsp_silent: false,
            fsp_error_code: 0,
            fsp_reply_type: NVDM_TYPE_FSP_RESPONSE,
            fsp_reply_command: 0x14,
            fsp_reply_len: None,
            emem_no_autoinc: false,
            target_locked_reads: 3,
            lockdown_reads: 3,
            mailbox_holds_boot_args: false,
            fmc_error: None,
            fmc_error_on_release: None,
            riscv_not_running: false,
            gsp_silent: false,
            no_init_done: false,
            init_done_result: 0,
            os_error_before_init: None,
            sequencer: false,
            registry_fails: None,
            corrupt_reply_to: None,
            rpc_failure: None,
            no_reply_to: None,
            late_reply_to: None,
            lose_reply_to: None,
            bad_write_ptr_with: None,
            no_halt: false,
            log_words: 0,
            command_at_start: 0,
            vbios: None,
            frts_error: 0,
            booter_error: 0,
            sequencer_program: false,
            gfw_not_done: false,
            devinit_never_halts: false,
            gfw_reads_all_ones: false,
            sequencer_at_unload: false,
        }
    }
}

/// What the fake saw the driver do.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    pub cot: Option<NvdmPayloadCot>,
    pub functions: Vec<u32>,
    pub falcon_os: u32,
    pub doorbells: u32,
    pub resets: u32,
    /// Bus mastering was on while WPR2 was up before our COT message (an earlier boot's GSP
    /// could write memory).
    pub master_while_wpr2_up: bool,
    pub wpr_meta: Vec<u8>,
    pub system_info: Vec<u8>,
    /// BAR0 reads other than the FSP's boot status made while the FSP had not reported its
    /// boot complete (OpenRM reads nothing else until `kfspWaitForSecureBoot` passed).
    pub reads_before_fsp_ready: u32,
    /// `(HI, LO)` of the sysmem flush registers, as last written.
    pub sysmem_flush: (u32, u32),
}

pub(super) struct Alloc {
    pub(super) mem: SharedMem,
    pub(super) _backing: Vec<u64>,
}

/// The GSP-RM side, once it runs.
pub(super) struct GspSide {
    pub(super) pages: Vec<u64>,
    pub(super) layout: SharedQueueLayout,
    pub(super) cmd: Option<(QueueGeometry, MsgQueue)>,
    pub(super) stat_geometry: QueueGeometry,
    pub(super) stat_writer: RpcQueue,
    pub(super) stat_ring: Vec<u8>,
}

pub(super) struct Device {
    pub(super) script: Script,
    pub(super) gone: bool,
    pub(super) wpr2: (u32, u32),
    pub(super) emem: Vec<u32>,
    pub(super) emem_off: u32,
    pub(super) aincw: bool,
    pub(super) aincr: bool,
    pub(super) queue: (u32, u32),
    pub(super) msgq: (u32, u32),
    pub(super) cot_done: bool,
    pub(super) target_reads: u32,
    pub(super) lockdown_reads: u32,
    pub(super) released: bool,
    pub(super) cpuctl: u32,
    pub(super) mailbox: (u32, u32),
    pub(super) gsp: Option<GspSide>,
    /// `PCI_COMMAND`: a reset clears memory decoding and bus mastering.
    pub(super) command: u32,
    pub(super) deferred: Vec<(u32, Vec<u8>)>,
    pub(super) pages: HashMap<u64, (u64, usize)>,
    pub(super) allocs: HashMap<u64, Alloc>,
    pub(super) next_bus: u64,
    pub(super) next_id: u64,
    pub(super) seen: Seen,
    /// GR info controls answered (the answer carries the count in `info_list[0]`).
    pub(super) gr_info_answers: u32,
    /// The booter path's falcons.
    pub(super) booter: super::fake_booter::BooterFake,
    pub(super) booter_seen: super::fake_booter::BooterSeen,
}

/// The scripted platform.
pub struct FakePlatform {
    pub(super) dev: RefCell<Device>,
    clock: FakeClock,
}

/// A clock that advances 1 µs per read, and by every delay.
pub struct FakeClock(Cell<u64>);

impl Clock for FakeClock {
    fn now_ns(&self) -> u64 {
        self.0.set(self.0.get() + 1_000);
        self.0.get()
    }
    fn delay_ns(&self, ns: u64) {
        self.0.set(self.0.get() + ns);
    }
}

impl FakePlatform {
    pub fn new(script: Script) -> Self {
        let command = script.command_at_start;
        let wpr2 = if script.wpr2_up {
            (0x0008_f000, 0x0008_f100)
        } else {
            (0, 0)
        };
        FakePlatform {
            dev: RefCell::new(Device {
                script,
                gone: false,
                wpr2,
                emem: vec![0; 1024],
                emem_off: 0,
                aincw: false,
                aincr: false,
                queue: (0, 0),
                msgq: (0, 0),
                cot_done: false,
                target_reads: 0,
                lockdown_reads: 0,
                released: false,
                cpuctl: 0,
                mailbox: (0, 0),
                gsp: None,
                command,
                deferred: Vec::new(),
                pages: HashMap::new(),
                allocs: HashMap::new(),
                next_bus: 0x10_0000_0000,
                next_id: 1,
                seen: Seen::default(),
                gr_info_answers: 0,
                booter: Default::default(),
                booter_seen: Default::default(),
            }),
            clock: FakeClock(Cell::new(0)),
        }
    }

    pub fn seen(&self) -> Seen {
        self.dev.borrow().seen.clone()
    }

    pub fn outstanding_dma(&self) -> usize {
        self.dev.borrow().allocs.len()
    }

    pub fn unplug(&self) {
        self.dev.borrow_mut().gone = true;
    }

    pub fn script_mut(&self) -> std::cell::RefMut<'_, Script> {
        std::cell::RefMut::map(self.dev.borrow_mut(), |d| &mut d.script)
    }

    pub fn booter_seen(&self) -> super::fake_booter::BooterSeen {
        self.dev.borrow().booter_seen.clone()
    }

    pub fn wpr2_up(&self) -> bool {
        self.dev.borrow().wpr2.1 != 0
    }

    /// GSP-RM sends an event now (after init).
    pub fn gsp_event(&self, function: u32, payload: &[u8]) {
        self.dev.borrow_mut().gsp_send(function, 0, payload);
    }
}

impl Device {
    pub(super) fn bus_read(&self, bus: u64, out: &mut [u8]) {
        let mut done = 0;
        while done < out.len() {
            let at = bus + done as u64;
            let page = at & !(DMA_PAGE as u64 - 1);
            let in_page = (at - page) as usize;
            let n = (out.len() - done).min(DMA_PAGE - in_page);
            let (id, off) = self.pages[&page];
            self.allocs[&id]
                .mem
                .read_bytes(off + in_page, &mut out[done..done + n])
                .unwrap();
            done += n;
        }
    }

    pub(super) fn bus_write(&self, bus: u64, data: &[u8]) {
        let mut done = 0;
        while done < data.len() {
            let at = bus + done as u64;
            let page = at & !(DMA_PAGE as u64 - 1);
            let in_page = (at - page) as usize;
            let n = (data.len() - done).min(DMA_PAGE - in_page);
            let (id, off) = self.pages[&page];
            self.allocs[&id]
                .mem
                .write_bytes(off + in_page, &data[done..done + n])
                .unwrap();
            done += n;
        }
    }

    pub(super) fn bus_struct<T: FromBytes + IntoBytes>(&self, bus: u64) -> T {
        let mut t = T::new_zeroed();
        self.bus_read(bus, t.as_mut_bytes());
        t
    }
}

impl Platform for FakePlatform {
    type Clock = FakeClock;

    fn clock(&self) -> &FakeClock {
        &self.clock
    }

    fn pci_address(&self) -> PciAddress {
        PciAddress {
            domain: 0,
            bus: 0x41,
            device: 0,
            function: 0,
        }
    }

    fn bar_info(&self, index: u32) -> Option<BarInfo> {
        match index {
            0 => Some(BarInfo {
                bus_addr: 0xa000_0000,
                size: 0x100_0000,
            }),
            1 => Some(BarInfo {
                bus_addr: 0x200_0000_0000,
                size: 0x40_0000_0000,
            }),
            _ => None,
        }
    }

    fn bar1(&self) -> Option<SharedMem> {
        None
    }

    fn dma_alloc(&mut self, bytes: usize, contiguous: bool) -> Result<DmaMemory, PlatformError> {
        let d = self.dev.get_mut();
        if d.gone {
            return Err(PlatformError::DeviceGone);
        }
        let mut backing = vec![0u64; bytes / 8];
        // SAFETY: the backing Vec lives in `allocs` until dma_free drops it, after the
        // caller gave the SharedMem back; its heap buffer does not move.
        let mem = unsafe { SharedMem::from_raw(backing.as_mut_ptr() as *mut u8, bytes, 0) };
        let n = bytes / DMA_PAGE;
        let base = d.next_bus;
        d.next_bus += (n as u64 + 16) * DMA_PAGE as u64;
        let bus_pages: Vec<u64> = (0..n)
            .map(|i| {
                let k = if contiguous { i } else { n - 1 - i };
                base + (k * DMA_PAGE) as u64
            })
            .collect();
        let id = d.next_id;
        d.next_id += 1;
        for (i, p) in bus_pages.iter().enumerate() {
            d.pages.insert(*p, (id, i * DMA_PAGE));
        }
        let cpu = mem.with_gpu_va(bus_pages[0]);
        d.allocs.insert(
            id,
            Alloc {
                mem,
                _backing: backing,
            },
        );
        Ok(DmaMemory { cpu, bus_pages, id })
    }

    unsafe fn dma_free(&mut self, mem: DmaMemory) {
        let d = self.dev.get_mut();
        for p in &mem.bus_pages {
            d.pages.remove(p);
        }
        d.allocs.remove(&mem.id);
    }

    fn config_read(&self, offset: u16, size: u8) -> Result<u32, PlatformError> {
        let d = self.dev.borrow();
        let mask = match size {
            1 => 0xff,
            2 => 0xffff,
            _ => u32::MAX,
        };
        // A vanished function reads all ones, as on PCI.
        if d.gone {
            return Ok(mask);
        }
        // A board of the scripted chip: the device id names its family.
        let device_id: u32 =
            match crate::chip::Chip::identify(crate::regs::PmcBoot42::from_raw(d.script.boot42)) {
                Ok(crate::chip::Chip::GH100) => 0x2335,
                Ok(crate::chip::Chip::GB100) => 0x2901,
                Ok(crate::chip::Chip::GB202) => 0x2b85,
                Ok(crate::chip::Chip::AD102) => 0x2684,
                Ok(crate::chip::Chip::GA102) => 0x2204,
                Ok(crate::chip::Chip::TU102) => 0x1e04,
                _ => 0x1234,
            };
        let dword = match offset & !3 {
            0x00 => device_id << 16 | 0x10de,
            0x04 => d.command,
            0x08 => 0xa1,
            0x2c => 0x18be_10de,
            _ => 0,
        };
        Ok((dword >> ((offset & 3) * 8)) & mask)
    }

    fn config_write(&self, offset: u16, _: u8, value: u32) -> Result<(), PlatformError> {
        if offset == 0x04 {
            let mut d = self.dev.borrow_mut();
            if d.wpr2.1 != 0 && value & 4 != 0 && d.seen.cot.is_none() {
                d.seen.master_while_wpr2_up = true;
            }
            d.command = value;
        }
        Ok(())
    }

    fn reset(&mut self) -> Result<(), PlatformError> {
        let d = self.dev.get_mut();
        if d.script.reset_unsupported {
            return Err(PlatformError::Unsupported("function-level reset"));
        }
        d.reset();
        Ok(())
    }
}
