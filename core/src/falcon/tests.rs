//! Falcon control against a fake register space: a falcon with IMEM/DMEM ports, a DMA
//! engine reading a fake sysmem, an engine reset with scrubbing, and a CPU that "runs" by
//! writing its mailboxes and halting.

extern crate std;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::vec;
use std::vec::Vec;

use super::hal::{Ga102, Tu102};
use super::hs::{HsBoot, execute};
use super::load::{BromParams, DmaTarget, MemLoad};
use super::{Engine, Falcon, FalconError};
use crate::hal::{Bar0, Clock};

const SEC2: u32 = 0x840000;
const GSP: u32 = 0x110000;

struct StepClock(Cell<u64>);

impl Clock for StepClock {
    fn now_ns(&self) -> u64 {
        // Every read advances 1 us, so bounded waits end.
        let t = self.0.get() + 1_000;
        self.0.set(t);
        t
    }
    fn delay_ns(&self, ns: u64) {
        self.0.set(self.0.get() + ns);
    }
}

#[derive(Default)]
struct FakeFalcon {
    base: u32,
    regs: RefCell<HashMap<u32, u32>>,
    imem: RefCell<Vec<u8>>,
    imem_tags: RefCell<Vec<(u32, u32)>>,
    imem_secure: Cell<bool>,
    dmem: RefCell<Vec<u8>>,
    sysmem: RefCell<HashMap<u64, u8>>,
    /// Reads of the scrub status left before scrubbing ends (`u32::MAX`: never).
    scrub_reads: Cell<u32>,
    resets: RefCell<Vec<bool>>,
    reset_ready: bool,
    started: Cell<bool>,
    never_halts: bool,
    /// MAILBOX0 the "ucode" leaves.
    result: u32,
    imem_port: Cell<u32>,
    dmem_port: Cell<u32>,
}

impl FakeFalcon {
    fn new(base: u32) -> Self {
        Self {
            base,
            imem: RefCell::new(vec![0; 0x10000]),
            dmem: RefCell::new(vec![0; 0x10000]),
            ..Self::default()
        }
    }

    fn reg(&self, off: u32) -> u32 {
        self.regs
            .borrow()
            .get(&(self.base + off))
            .copied()
            .unwrap_or(0)
    }

    fn scrubbing(&self) -> bool {
        let left = self.scrub_reads.get();
        if left == 0 {
            return false;
        }
        if left != u32::MAX {
            self.scrub_reads.set(left - 1);
        }
        true
    }
}

impl Bar0 for FakeFalcon {
    fn read32(&self, offset: u32) -> u32 {
        match offset.wrapping_sub(self.base) {
            // HWCFG2: RISCV (10), MEM_SCRUBBING (12), RESET_READY (31).
            0x0f4 => {
                (1 << 10)
                    | (u32::from(self.scrubbing()) << 12)
                    | (u32::from(self.reset_ready) << 31)
            }
            // DMACTL: DMEM/IMEM scrubbing (1, 2).
            0x10c => {
                if self.scrubbing() {
                    0b110
                } else {
                    0
                }
            }
            // CPUCTL: HALTED (4) once started (unless it never halts), ALIAS_EN kept.
            0x100 => {
                let halted = self.started.get() && !self.never_halts;
                (u32::from(halted) << 4) | (self.reg(0x100) & (1 << 6))
            }
            // DMATRFCMD: idle, never full.
            0x118 => 0b10,
            // HWCFG: 64 KiB of IMEM (256 blocks).
            0x108 => 0x100,
            // BCR_CTRL: VALID follows every write.
            0x1668 => self.reg(0x1668) | 1,
            // PMC_BOOT_0 is outside the falcon: 0x0a000000 would be absolute.
            _ if offset == 0 => 0x1720_00a1,
            _ => self.regs.borrow().get(&offset).copied().unwrap_or(0),
        }
    }

    fn write32(&self, offset: u32, value: u32) {
        let off = offset.wrapping_sub(self.base);
        match off {
            0x3c0 => {
                self.resets.borrow_mut().push(value & 1 != 0);
                if value & 1 == 0 && self.scrub_reads.get() == 0 {
                    self.scrub_reads.set(3);
                }
            }
            0x180 => {
                self.imem_port.set(value & 0x00ff_fffc);
                self.imem_secure.set(value & (1 << 28) != 0);
            }
            0x184 => {
                let a = self.imem_port.get() as usize;
                self.imem.borrow_mut()[a..a + 4].copy_from_slice(&value.to_le_bytes());
                self.imem_port.set(self.imem_port.get() + 4);
            }
            0x188 => self
                .imem_tags
                .borrow_mut()
                .push((self.imem_port.get(), value)),
            0x1c0 => self.dmem_port.set(value & 0x00ff_fffc),
            0x1c4 => {
                let a = self.dmem_port.get() as usize;
                self.dmem.borrow_mut()[a..a + 4].copy_from_slice(&value.to_le_bytes());
                self.dmem_port.set(self.dmem_port.get() + 4);
            }
            0x118 => {
                let base = u64::from(self.reg(0x110)) << 8 | u64::from(self.reg(0x128)) << 40;
                let src = base + u64::from(self.reg(0x11c));
                let dest = self.reg(0x114) as usize;
                let mem = if value & (1 << 4) != 0 {
                    &self.imem
                } else {
                    &self.dmem
                };
                let sys = self.sysmem.borrow();
                for i in 0..256 {
                    mem.borrow_mut()[dest + i] = sys.get(&(src + i as u64)).copied().unwrap_or(0);
                }
            }
            0x100 | 0x130 if value & 2 != 0 => {
                self.started.set(true);
                self.regs.borrow_mut().insert(self.base + 0x40, self.result);
            }
            _ => {}
        }
        if off != 0x100 || value & 2 == 0 {
            self.regs.borrow_mut().insert(offset, value);
        }
    }
}

fn clock() -> StepClock {
    StepClock(Cell::new(0))
}

#[test]
fn ga102_reset_pulses_the_engine_waits_for_scrubbing_and_selects_falcon() {
    let mut bar = FakeFalcon::new(SEC2);
    bar.reset_ready = true;
    bar.regs.borrow_mut().insert(SEC2 + 0x1668, 1 << 4);
    let c = clock();
    let f = Falcon::new(&bar, &c, Engine::Sec2, &Ga102);
    f.reset().unwrap();
    assert_eq!(*bar.resets.borrow(), vec![true, false]);
    assert_eq!(bar.scrub_reads.get(), 0, "the scrub wait polled until done");
    // Core switched to falcon: CORE_SELECT cleared.
    assert_eq!(bar.reg(0x1668) & (1 << 4), 0);
    // FALCON_RM = NV_PMC_BOOT_0.
    assert_eq!(bar.reg(0x084), 0x1720_00a1);
}

#[test]
fn ga102_pre_reset_wait_is_bounded_when_reset_ready_never_sets() {
    let bar = FakeFalcon::new(GSP);
    let c = clock();
    let f = Falcon::new(&bar, &c, Engine::Gsp, &Ga102);
    f.reset().unwrap();
    assert!(c.0.get() >= 150_000, "waited out the 150 us");
    assert_eq!(*bar.resets.borrow(), vec![true, false]);
}

#[test]
fn scrubbing_that_never_ends_is_a_timeout_naming_the_engine() {
    let bar = FakeFalcon::new(SEC2);
    bar.scrub_reads.set(u32::MAX);
    let c = clock();
    let f = Falcon::new(&bar, &c, Engine::Sec2, &Tu102).with_timeout_ns(1_000_000);
    let e = f.reset().unwrap_err();
    assert!(matches!(
        e,
        FalconError::TimedOut {
            engine: Engine::Sec2,
            ..
        }
    ));
    let msg = std::format!("{e}");
    assert!(
        msg.contains("SEC2") && msg.contains("scrubbing") && msg.contains("reset"),
        "{msg}"
    );
}

#[test]
fn reset_into_riscv_programs_the_bcr_on_ga102_only() {
    let bar = FakeFalcon::new(GSP);
    let c = clock();
    Falcon::new(&bar, &c, Engine::Gsp, &Ga102)
        .reset_into_riscv()
        .unwrap();
    // CORE_SELECT riscv | VALID | BRFETCH.
    assert_eq!(bar.reg(0x1668), (1 << 4) | 1 | (1 << 8));
    let bar = FakeFalcon::new(GSP);
    Falcon::new(&bar, &c, Engine::Gsp, &Tu102)
        .reset_into_riscv()
        .unwrap();
    assert_eq!(bar.reg(0x1668), 0, "Turing has no core switch");
}

#[test]
fn pio_loads_tag_imem_blocks_and_fill_dmem() {
    let bar = FakeFalcon::new(SEC2);
    let c = clock();
    let f = Falcon::new(&bar, &c, Engine::Sec2, &Tu102);
    let code: Vec<u8> = (0..512u32).map(|i| i as u8).collect();
    f.imem_pio(0x100, &code, true, 0x300).unwrap();
    assert_eq!(&bar.imem.borrow()[0x100..0x300], &code[..]);
    assert!(bar.imem_secure.get());
    // One tag per 256 bytes, starting at 0x300 >> 8.
    let tags: Vec<u32> = bar.imem_tags.borrow().iter().map(|t| t.1).collect();
    assert_eq!(tags, vec![3, 4]);
    f.dmem_pio(0x40, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    assert_eq!(&bar.dmem.borrow()[0x40..0x48], &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert!(matches!(
        f.imem_pio(0x10, &code, false, 0),
        Err(FalconError::BadLoad { .. })
    ));
    assert!(f.dmem_pio(0, &[1, 2, 3]).is_err());
}

#[test]
fn dma_load_copies_blocks_from_sysmem() {
    let bar = FakeFalcon::new(GSP);
    let src = 0x1_2345_6700u64;
    for i in 0..512u64 {
        bar.sysmem.borrow_mut().insert(src + i, (i * 7) as u8);
    }
    let c = clock();
    let f = Falcon::new(&bar, &c, Engine::Gsp, &Ga102);
    f.dma_load(
        DmaTarget::Dmem { set_dmtag: false },
        MemLoad {
            dest: 0x200,
            mem_offset: 0,
            src,
            size: 512,
        },
    )
    .unwrap();
    let want: Vec<u8> = (0..512u64).map(|i| (i * 7) as u8).collect();
    assert_eq!(&bar.dmem.borrow()[0x200..0x400], &want[..]);
    // DMATRFBASE = bits 39:8, BASE1 = bits 48:40.
    assert_eq!(bar.reg(0x110), (src >> 8) as u32);
    assert_eq!(bar.reg(0x128), 0);
    let bad = MemLoad {
        dest: 0,
        mem_offset: 0,
        src: src + 4,
        size: 256,
    };
    assert!(f.dma_load(DmaTarget::ImemSecure, bad).is_err());
}

#[test]
fn from_hs_boot_loads_by_dma_sets_brom_and_returns_the_mailboxes() {
    let mut bar = FakeFalcon::new(SEC2);
    bar.result = 0;
    let image_bus = 0x8000_0000u64;
    // Code at 0x100 (imem_va 0x100), data at 0x400.
    for i in 0..0x600u64 {
        bar.sysmem
            .borrow_mut()
            .insert(image_bus + i, (i >> 4) as u8);
    }
    let c = clock();
    let f = Falcon::new(&bar, &c, Engine::Sec2, &Ga102);
    let brom = BromParams {
        signature_dmem_offset: 0x20,
        engine_id_mask: 1,
        ucode_id: 3,
    };
    let boot = HsBoot::FromHs {
        image_bus,
        code_offset: 0x100,
        imem_size: 0x300,
        imem_pa: 0,
        imem_va: 0x100,
        data_offset: 0x400,
        dmem_size: 0x100,
        dmem_pa: 0,
        dmem_va: None,
        brom,
    };
    let mb = execute(&f, &boot, Some((0x1234_5000, 0x1)), 1_000_000).unwrap();
    assert_eq!(mb, (0, 1));
    // IMEM 0.. holds the code from image offset 0x100.
    assert_eq!(bar.imem.borrow()[0], 0x10);
    assert_eq!(bar.dmem.borrow()[0], 0x40);
    // BROM: PARAADDR, ENGIDMASK, UCODE_ID, MOD_SEL; BOOTVEC; FBIF.
    assert_eq!(bar.reg(0x1210), 0x20);
    assert_eq!(bar.reg(0x119c), 1);
    assert_eq!(bar.reg(0x1198), 3);
    assert_eq!(bar.reg(0x1180), 1);
    assert_eq!(bar.reg(0x104), 0x100);
    assert_eq!(
        bar.reg(0x600) & 0b111,
        0b101,
        "TRANSCFG(0) physical coherent sysmem"
    );
    assert_ne!(bar.reg(0x624) & (1 << 7), 0, "FBIF_CTL allows physical DMA");
}

#[test]
fn direct_boot_loads_by_pio_and_a_falcon_that_never_halts_times_out() {
    let mut bar = FakeFalcon::new(SEC2);
    bar.result = 0xdead;
    let image: Vec<u8> = (0..0x800u32).map(|i| (i >> 8) as u8).collect();
    let c = clock();
    let boot = HsBoot::Direct {
        image: &image,
        imem_ns: (0, 0x100),
        imem_sec: (0x100, 0x200),
        data: (0x600, 0x100),
    };
    {
        let f = Falcon::new(&bar, &c, Engine::Sec2, &Tu102);
        let mb = execute(&f, &boot, Some((0, 0)), 1_000_000).unwrap();
        assert_eq!(mb.0, 0xdead, "the ucode's error code comes back");
    }
    assert_eq!(
        bar.imem.borrow()[0x100],
        1,
        "secure code after the non-secure"
    );
    assert_eq!(bar.dmem.borrow()[0], 6);
    bar.never_halts = true;
    bar.started.set(false);
    let f = Falcon::new(&bar, &c, Engine::Sec2, &Tu102);
    let e = execute(&f, &boot, Some((0, 0)), 1_000_000).unwrap_err();
    assert!(matches!(e, FalconError::TimedOut { .. }));
    let past = HsBoot::Direct {
        image: &image,
        imem_ns: (0, 0x100),
        imem_sec: (0x700, 0x200),
        data: (0, 0),
    };
    assert!(matches!(
        execute(&f, &past, None, 1),
        Err(FalconError::BadLoad { .. })
    ));
}

#[test]
fn start_cpu_uses_the_alias_when_enabled() {
    let bar = FakeFalcon::new(GSP);
    bar.regs.borrow_mut().insert(GSP + 0x100, 1 << 6);
    let c = clock();
    let f = Falcon::new(&bar, &c, Engine::Gsp, &Ga102);
    f.start_cpu();
    assert_eq!(bar.reg(0x130), 2);
    assert!(f.halted());
}

#[test]
fn the_generic_bootloader_goes_to_the_top_of_imem_with_its_descriptor_in_dmem() {
    let bar = FakeFalcon::new(GSP);
    let c = clock();
    let f = Falcon::new(&bar, &c, Engine::Gsp, &Tu102);
    let loader: Vec<u8> = (0..300u32).map(|i| i as u8 | 1).collect();
    let boot = HsBoot::WithLoader {
        code_bus: 0x1_2345_6000,
        data_bus: 0x2_0000_0000,
        imem_ns: (0, 0x100),
        imem_sec: (0x100, 0x200),
        data_size: 0x400,
        loader: &loader,
        loader_start_tag: 0xfd,
    };
    execute(&f, &boot, None, 1_000_000).unwrap();
    // 300 bytes round up to 2 blocks: IMEM blocks 254 and 255.
    assert_eq!(&bar.imem.borrow()[254 * 256..254 * 256 + 300], &loader[..]);
    assert_eq!(bar.imem_tags.borrow()[0].1, 0xfd);
    assert_eq!(bar.reg(0x104), 0xfd00, "BOOTVEC = blStartTag << 8");
    let d = bar.dmem.borrow();
    let w = |i: usize| u32::from_le_bytes(d[4 * i..4 * i + 4].try_into().unwrap());
    assert_eq!((w(8), w(9), w(10)), (4, 0x2345_6000, 1));
    assert_eq!((w(11), w(12), w(13), w(14)), (0, 0x100, 0x100, 0x200));
    assert_eq!((w(16), w(17), w(18)), (0, 2, 0x400));
    assert_eq!(
        bar.reg(0x600 + 16) & 0b111,
        0b101,
        "TRANSCFG(4) physical coherent sysmem"
    );
}
