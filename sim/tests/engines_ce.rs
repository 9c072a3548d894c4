//! The copy engine: `LAUNCH_DMA` copies and semaphore releases built from clc8b5.h /
//! clcab5.h method by method, between VRAM and host memory through the MMU.

mod engines_rig;

use engines_rig::*;
use nvbare_sim::device::Engine;
use nvbare_sim::memory::Access;
use nvbare_sim::units::mmu::FAULT_PTE;
use nvbare_sim::{FaultPlan, SimChip};

const HOPPER_DMA_COPY_A: u32 = 0xc8b5;
const BLACKWELL_DMA_COPY_B: u32 = 0xcab5;
/// `BLACKWELL_DMA_COPY_A` (clc9b5.h), GB10x's copy class.
const BLACKWELL_DMA_COPY_A: u32 = 0xc9b5;
/// The copy object's subchannel (any works; tinygrad and nvbare use 4).
const CE: u32 = 4;

// clc8b5.h methods.
const SET_SEMAPHORE_A: u32 = 0x240;
const SET_SRC_PHYS_MODE: u32 = 0x260;
const LAUNCH_DMA: u32 = 0x300;
const OFFSET_IN_UPPER: u32 = 0x400;
const PITCH_IN: u32 = 0x410;
const LINE_LENGTH_IN: u32 = 0x418;
// LAUNCH_DMA fields.
const NON_PIPELINED: u32 = 2;
const FLUSH: u32 = 1 << 2;
const SEM_ONE_WORD: u32 = 1 << 3;
const SEM_FOUR_WORD: u32 = 2 << 3;
const SRC_PITCH: u32 = 1 << 7;
const DST_PITCH: u32 = 1 << 8;
const MULTI_LINE: u32 = 1 << 9;
const SRC_PHYSICAL: u32 = 1 << 12;
const SEM_PAYLOAD_64: u32 = 1 << 27;

fn copy_class(chip: SimChip) -> u32 {
    match chip {
        SimChip::Gh100 => HOPPER_DMA_COPY_A,
        SimChip::Gb202 => BLACKWELL_DMA_COPY_B,
        SimChip::Gb100 => BLACKWELL_DMA_COPY_A,
        // AMPERE_DMA_COPY_B (clc7b5.h) on GA10x and AD10x.
        SimChip::Ga102 | SimChip::Ad102 => 0xc7b5,
        // AMPERE_DMA_COPY_A (clc6b5.h) on GA100 (gpuGetClassDescriptorList_GA100).
        SimChip::Ga100 => 0xc6b5,
        // TURING_DMA_COPY_A (clc5b5.h): 32-bit semaphore payloads only.
        SimChip::Tu102 => 0xc5b5,
    }
}

fn linear_copy(p: &mut Push, src: u64, dst: u64, len: u32, extra: u32) {
    p.inc(
        CE,
        OFFSET_IN_UPPER,
        &[
            (src >> 32) as u32,
            src as u32,
            (dst >> 32) as u32,
            dst as u32,
        ],
    )
    .inc(CE, LINE_LENGTH_IN, &[len])
    .inc(
        CE,
        LAUNCH_DMA,
        &[NON_PIPELINED | SRC_PITCH | DST_PITCH | extra],
    );
}

/// Whether `class` releases 64-bit payloads (`SET_SEMAPHORE_PAYLOAD_UPPER` and
/// `SEMAPHORE_PAYLOAD_SIZE` first appear in clc7b5.h; TURING_DMA_COPY_A and
/// AMPERE_DMA_COPY_A have neither).
fn wide(class: u32) -> bool {
    !matches!(class, 0xc5b5 | 0xc6b5)
}

fn ce_release_for(class: u32, p: &mut Push, va: u64, payload: u64, kind: u32) {
    if wide(class) {
        return ce_release(p, va, payload, kind);
    }
    p.inc(
        CE,
        SET_SEMAPHORE_A,
        &[(va >> 32) as u32, va as u32, payload as u32],
    )
    .inc(CE, LAUNCH_DMA, &[FLUSH | kind]);
}

fn ce_release(p: &mut Push, va: u64, payload: u64, kind: u32) {
    p.inc(
        CE,
        SET_SEMAPHORE_A,
        &[
            (va >> 32) as u32,
            va as u32,
            payload as u32,
            (payload >> 32) as u32,
        ],
    )
    .inc(CE, LAUNCH_DMA, &[FLUSH | kind | SEM_PAYLOAD_64]);
}

fn pattern(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

#[test]
fn host_to_vram_to_host_with_a_four_word_release() {
    for chip in SimChip::ALL {
        let class = copy_class(chip);
        let mut rig = Rig::new(chip, FaultPlan::default());
        let len = (5 << 20) + 123;
        let staging = rig.sys_buffer(len);
        let back = rig.sys_buffer(len);
        let vram = rig.vram_buffer_aligned(8 << 20, 2 << 20);
        let sem = rig.sys_buffer(4096);
        let data = pattern(len as usize, 7);
        rig.write(&staging, 0, &data);

        let mut ch = rig.channel(Engine::Copy(0), &[class]);
        let mut p = Push::new();
        p.inc(CE, SET_OBJECT, &[class]);
        // Into VRAM at an odd offset (crossing 2 MiB pages), then back out.
        linear_copy(&mut p, staging.va, vram.va + 0x3_0001, len as u32, 0);
        linear_copy(&mut p, vram.va + 0x3_0001, back.va, len as u32, 0);
        let before = rig.gpu.now_ns();
        ce_release_for(class, &mut p, sem.va, 0xfeed_0000_0001, SEM_FOUR_WORD);
        rig.submit(&mut ch, p.words());
        // A 32-bit release writes the low word only (the word above stays 0).
        let want = if wide(class) { 0xfeed_0000_0001 } else { 1 };
        rig.wait("the copy's release", |r| r.read_u64(&sem, 0) == want);
        assert!(
            rig.read_u64(&sem, 8) >= before,
            "four words: the timer at +8"
        );
        let mut out = vec![0; len as usize];
        rig.read(&back, 0, &mut out);
        assert!(
            out == data,
            "{}: the data came back intact",
            chip.spec().name
        );
        let c = rig.gpu.engine_counters();
        assert_eq!((c.copies, c.bytes_copied), (2, 2 * len));

        // A one-word release writes the payload only.
        rig.write(&sem, 0x40, &[0xaa; 16]);
        let mut p = Push::new();
        ce_release_for(class, &mut p, sem.va + 0x40, 5, SEM_ONE_WORD);
        rig.submit(&mut ch, p.words());
        let want = if wide(class) {
            5
        } else {
            0xaaaa_aaaa_0000_0005
        };
        rig.wait("the one-word release", |r| r.read_u64(&sem, 0x40) == want);
        assert_eq!(rig.read_u64(&sem, 0x48), 0xaaaa_aaaa_aaaa_aaaa);
    }
}

/// TURING_DMA_COPY_A (clc5b5.h) has no SET_SEMAPHORE_PAYLOAD_UPPER and no
/// LAUNCH_DMA_SEMAPHORE_PAYLOAD_SIZE: a 64-bit release halts the channel, saying so.
#[test]
fn turing_copy_refuses_64_bit_releases() {
    let chip = SimChip::Tu102;
    let class = copy_class(chip);
    let mut rig = Rig::new(chip, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    let mut ch = rig.channel(Engine::Copy(0), &[class]);
    let mut p = Push::new();
    p.inc(CE, SET_OBJECT, &[class]);
    ce_release(&mut p, sem.va, 0x1_0000_0002, SEM_ONE_WORD);
    rig.submit(&mut ch, p.words());
    rig.wait("the channel to halt", |r| {
        r.gpu
            .log()
            .warnings()
            .iter()
            .any(|w| w.contains("SET_SEMAPHORE_PAYLOAD_UPPER"))
    });
    assert_eq!(rig.read_u64(&sem, 0), 0, "nothing was released");
}

#[test]
fn a_release_after_copies_without_flush_enable_is_warned_about() {
    let chip = SimChip::Gh100;
    let class = copy_class(chip);
    let mut rig = Rig::new(chip, FaultPlan::default());
    let (src, dst, sem) = (
        rig.sys_buffer(4096),
        rig.sys_buffer(4096),
        rig.sys_buffer(4096),
    );
    let mut ch = rig.channel(Engine::Copy(0), &[class]);
    let warned = |rig: &Rig| {
        rig.gpu
            .log()
            .warnings()
            .iter()
            .any(|w| w.contains("without FLUSH_ENABLE"))
    };
    // Flushed, as nvbare and tinygrad release: no warning.
    let mut p = Push::new();
    p.inc(CE, SET_OBJECT, &[class]);
    linear_copy(&mut p, src.va, dst.va, 64, 0);
    ce_release(&mut p, sem.va, 1, SEM_ONE_WORD);
    rig.submit(&mut ch, p.words());
    rig.wait("the flushed release", |r| r.read_u64(&sem, 0) == 1);
    assert!(!warned(&rig));
    // The same release without FLUSH_ENABLE.
    let mut p = Push::new();
    linear_copy(&mut p, src.va, dst.va, 64, 0);
    p.inc(
        CE,
        SET_SEMAPHORE_A,
        &[(sem.va >> 32) as u32, sem.va as u32, 2, 0],
    )
    .inc(CE, LAUNCH_DMA, &[SEM_ONE_WORD | SEM_PAYLOAD_64]);
    rig.submit(&mut ch, p.words());
    rig.wait("the unflushed release", |r| r.read_u64(&sem, 0) == 2);
    assert!(warned(&rig), "{:?}", rig.gpu.log().warnings());
}

#[test]
fn multi_line_pitch_copies_and_physical_sources() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let src = rig.vram_buffer(64 << 10);
    let dst = rig.sys_buffer(64 << 10);
    let sem = rig.sys_buffer(4096);
    let data = pattern(64 << 10, 3);
    rig.write(&src, 0, &data);
    let mut ch = rig.channel(Engine::Copy(0), &[HOPPER_DMA_COPY_A]);
    let mut p = Push::new();
    p.inc(CE, SET_OBJECT, &[HOPPER_DMA_COPY_A]);
    // 16 lines of 100 bytes, source pitch 1000, destination pitch 128.
    p.inc(CE, PITCH_IN, &[1000, 128, 100, 16]);
    linear_copy(&mut p, src.va, dst.va, 100, MULTI_LINE);
    // One line from VRAM by physical address (SET_SRC_PHYS_MODE LOCAL_FB).
    let nvbare_sim::memory::Target::Vram(src_pa) = src.at else {
        unreachable!()
    };
    p.inc(CE, SET_SRC_PHYS_MODE, &[0]);
    linear_copy(
        &mut p,
        src_pa + 0x8000,
        dst.va + 0x8000,
        0x1000,
        SRC_PHYSICAL,
    );
    ce_release(&mut p, sem.va, 1, SEM_ONE_WORD);
    rig.submit(&mut ch, p.words());
    rig.wait("the copies", |r| r.read_u64(&sem, 0) == 1);
    let mut out = vec![0; 64 << 10];
    rig.read(&dst, 0, &mut out);
    for line in 0..16 {
        assert_eq!(
            out[line * 128..line * 128 + 100],
            data[line * 1000..line * 1000 + 100]
        );
        assert_eq!(out[line * 128 + 100], 0, "nothing between the lines");
    }
    assert_eq!(out[0x8000..0x9000], data[0x8000..0x9000]);
}

#[test]
fn what_the_simulator_does_not_model_halts_the_channel_saying_so() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let a = rig.vram_buffer(4096);
    let mut ch = rig.channel(Engine::Copy(0), &[HOPPER_DMA_COPY_A]);
    let mut p = Push::new();
    p.inc(CE, SET_OBJECT, &[HOPPER_DMA_COPY_A]);
    p.inc(CE, OFFSET_IN_UPPER, &[0, a.va as u32, 0, a.va as u32 + 64])
        .inc(CE, LINE_LENGTH_IN, &[64])
        // Block-linear source (SRC_MEMORY_LAYOUT 0).
        .inc(CE, LAUNCH_DMA, &[NON_PIPELINED | DST_PITCH]);
    rig.submit(&mut ch, p.words());
    let e = rig.wait_halted(&ch);
    assert!(
        e.contains("block-linear") && e.contains("not modeled"),
        "{e}"
    );
}

#[test]
fn a_copy_from_unmapped_memory_faults_on_the_read() {
    let mut rig = Rig::new(SimChip::Gb202, FaultPlan::default());
    let dst = rig.vram_buffer(4096);
    let hole = rig.vas.alloc(1 << 20, 1 << 20).unwrap();
    let mut ch = rig.channel(Engine::Copy(0), &[BLACKWELL_DMA_COPY_B]);
    let mut p = Push::new();
    p.inc(CE, SET_OBJECT, &[BLACKWELL_DMA_COPY_B]);
    linear_copy(&mut p, hole, dst.va, 256, 0);
    rig.submit(&mut ch, p.words());
    rig.wait_halted(&ch);
    let f = rig
        .gpu
        .with_world(|w| w.mmu_faults.back().cloned())
        .unwrap();
    assert_eq!(
        (f.va, f.access, f.fault_type, f.engine),
        (hole, Access::Read, FAULT_PTE, Engine::Copy(0))
    );
}

#[test]
fn injected_copy_engine_off_copies_never_run_nor_complete() {
    let faults = FaultPlan {
        copy_engine_off: true,
        ..Default::default()
    };
    let mut rig = Rig::new(SimChip::Gb202, faults);
    let src = rig.sys_buffer(4096);
    let dst = rig.vram_buffer(4096);
    let sem = rig.sys_buffer(4096);
    rig.write(&src, 0, &[0x5a; 64]);
    let mut ch = rig.channel(Engine::Graphics, &[BLACKWELL_DMA_COPY_B, 0xcec0]);
    let mut p = Push::new();
    p.inc(CE, SET_OBJECT, &[BLACKWELL_DMA_COPY_B]);
    linear_copy(&mut p, src.va, dst.va, 64, 0);
    ce_release(&mut p, sem.va, 1, SEM_FOUR_WORD);
    rig.submit(&mut ch, p.words());
    rig.settle();
    assert_eq!(rig.read_u64(&sem, 0), 0, "never completes");
    assert_eq!(rig.read_u64(&dst, 0), 0, "never runs");
    assert_eq!(
        rig.error(&ch),
        None,
        "the channel is not in error: it waits"
    );
    assert!(
        rig.gpu
            .log()
            .warnings()
            .iter()
            .any(|w| w.contains("injected fault: the copy engine is off")),
        "{:?}",
        rig.gpu.log().warnings()
    );
    // Switched back on, the waiting copy runs.
    rig.gpu.inject(|f| f.copy_engine_off = false);
    rig.wait("the copy once the engine is on", |r| {
        r.read_u64(&sem, 0) == 1
    });
    assert_eq!(rig.read_u64(&dst, 0), 0x5a5a_5a5a_5a5a_5a5a);
}
