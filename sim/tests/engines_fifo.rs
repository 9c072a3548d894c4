//! Host (FIFO): doorbell → GPFIFO → pushbuffer → host methods, with GPFIFO entries and
//! pushbuffers built here from the class headers (see `engines_rig`).

mod engines_rig;

use engines_rig::*;
use nvbare_sim::device::Engine;
use nvbare_sim::units::fifo::DOORBELL;
use nvbare_sim::{FaultPlan, SimChip};

const HOPPER_COMPUTE_A: u32 = 0xcbc0;
const HOPPER_DMA_COPY_A: u32 = 0xc8b5;
const BLACKWELL_COMPUTE_B: u32 = 0xcec0;

#[test]
fn a_release_with_timestamp_and_gpget_advancing_in_userd() {
    for chip in SimChip::ALL {
        let mut rig = Rig::new(chip, FaultPlan::default());
        let sem = rig.sys_buffer(4096);
        let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A, BLACKWELL_COMPUTE_B]);
        let before = rig.gpu.now_ns();
        let mut p = Push::new();
        p.inc(0, NOP, &[0]).release(sem.va, 0x1_2345_6789);
        rig.submit(&mut ch, p.words());
        rig.wait("the release", |r| r.read_u64(&sem, 0) == 0x1_2345_6789);
        // Read after the payload, as a driver does: the simulator writes the timestamp
        // first, so it is there whenever the payload is (however the threads are scheduled).
        let ts = rig.read_u64(&sem, 8);
        assert!(
            ts >= before && ts <= rig.gpu.now_ns(),
            "the GPU timer at +8: {ts}"
        );
        rig.wait("GPGet", |r| r.gp_get(&ch) == 1);

        // A 32-bit release writes 4 bytes only, and an immediate-data header works too.
        rig.write(&sem, 0x40, &[0xee; 8]);
        let mut p = Push::new();
        p.immd(0, NOP, 0)
            .host_sem(sem.va + 0x40, 0xaabb_ccdd_1122_3344, SEM_RELEASE);
        rig.submit(&mut ch, p.words());
        rig.wait("the 32-bit release", |r| {
            r.read_u32(&sem, 0x40) == 0x1122_3344
        });
        assert_eq!(
            rig.read_u32(&sem, 0x44),
            0xeeee_eeee,
            "{}",
            chip.spec().name
        );
        rig.wait("GPGet", |r| r.gp_get(&ch) == 2);
        let c = rig.gpu.engine_counters();
        assert_eq!((c.gp_entries, c.doorbells), (2, 2));
        assert!(c.methods >= 2 + 5 + 5);
        assert_eq!(rig.error(&ch), None);
    }
}

#[test]
fn an_unsatisfied_acquire_parks_its_channel_while_others_run() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    let mut waiter = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    let mut other = rig.channel(Engine::Copy(0), &[HOPPER_DMA_COPY_A]);

    let mut p = Push::new();
    p.acquire(sem.va, 5).release(sem.va + 0x10, 1);
    rig.submit(&mut waiter, p.words());
    let mut p = Push::new();
    p.release(sem.va + 0x20, 2);
    rig.submit(&mut other, p.words());
    rig.wait("the other channel's release", |r| {
        r.read_u64(&sem, 0x20) == 2
    });
    rig.settle();
    assert_eq!(
        rig.read_u64(&sem, 0x10),
        0,
        "the waiter is parked at its acquire"
    );
    assert!(rig.gpu.engine_counters().acquires_waited >= 1);

    // Not enough yet (circular >=: 4 < 5), then enough.
    rig.write(&sem, 0, &4u64.to_le_bytes());
    rig.settle();
    assert_eq!(rig.read_u64(&sem, 0x10), 0);
    rig.write(&sem, 0, &5u64.to_le_bytes());
    rig.wait("the waiter's release after the acquire", |r| {
        r.read_u64(&sem, 0x10) == 1
    });
    assert_eq!(rig.error(&waiter), None);
}

#[test]
fn acquire_and_and_reductions() {
    let mut rig = Rig::new(SimChip::Gb202, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    let mut ch = rig.channel(Engine::Graphics, &[BLACKWELL_COMPUTE_B]);
    rig.write(&sem, 0, &10u32.to_le_bytes());
    let mut p = Push::new();
    // ACQ_AND on bit 3 (clear now), then an IADD reduction (REDUCTION 5, unsigned).
    p.host_sem(sem.va + 8, 0b1000, SEM_ACQ_AND).host_sem(
        sem.va,
        7,
        SEM_REDUCTION | 5 << 27 | 1 << 31,
    );
    rig.submit(&mut ch, p.words());
    rig.settle();
    assert_eq!(rig.read_u32(&sem, 0), 10, "parked on the AND");
    rig.write(&sem, 8, &0b1100u32.to_le_bytes());
    rig.wait("the reduction", |r| r.read_u32(&sem, 0) == 17);
}

#[test]
fn set_object_must_name_a_class_allocated_on_the_channel() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    let mut p = Push::new();
    p.inc(1, SET_OBJECT, &[HOPPER_COMPUTE_A])
        .inc(4, SET_OBJECT, &[HOPPER_DMA_COPY_A]);
    p.release(sem.va, 1);
    rig.submit(&mut ch, p.words());
    let e = rig.wait_halted(&ch);
    assert!(
        e.contains("0xc8b5") && e.contains("no object of that class"),
        "{e}"
    );
    rig.settle();
    assert_eq!(
        rig.read_u64(&sem, 0),
        0,
        "nothing after the bad method runs"
    );
    // The GSP side hears about it.
    assert!(rig.gpu.log().contains("halted"));
}

#[test]
fn a_halted_channel_fetches_nothing_more_and_the_halt_is_signalled() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    // A control entry other than NOP (opcode 1, ILLEGAL) halts the channel.
    rig.put_entry(&mut ch, 1u64 << 32);
    rig.ring(&ch);
    let e = rig.wait_halted(&ch);
    assert!(e.contains("opcode 1"), "{e}");
    let mut p = Push::new();
    p.release(sem.va, 9);
    rig.submit(&mut ch, p.words());
    rig.settle();
    assert_eq!(rig.read_u64(&sem, 0), 0);
    assert_eq!(rig.gp_get(&ch), 1, "nothing fetched after the halt");
    // A zero entry (opcode NOP, no length) is fine on a fresh channel.
    let mut ok = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    rig.put_entry(&mut ok, 0);
    let mut p = Push::new();
    p.release(sem.va + 16, 3);
    rig.submit(&mut ok, p.words());
    rig.wait("after a NOP entry", |r| r.read_u64(&sem, 16) == 3);
}

#[test]
fn doorbells_that_name_no_channel_or_lack_the_gb20x_bit_are_ignored() {
    let mut rig = Rig::new(SimChip::Gb202, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    let mut ch = rig.channel(Engine::Graphics, &[BLACKWELL_COMPUTE_B]);
    let mut p = Push::new();
    p.release(sem.va, 1);
    let va = rig.pushbuffer(p.words());
    rig.put_entry(&mut ch, gp_entry(va, p.words().len() as u32));
    rig.gpu.bar0_write(DOORBELL, ch.token); // no RUNLIST_DOORBELL bit
    rig.gpu.bar0_write(DOORBELL, 0x4000_0777); // no such channel
    rig.settle();
    assert_eq!(rig.read_u64(&sem, 0), 0);
    assert_eq!(rig.gpu.engine_counters().doorbells_ignored, 2);
    assert!(rig.gpu.log().contains("RUNLIST_DOORBELL"));
    rig.ring(&ch);
    rig.wait("the proper doorbell", |r| r.read_u64(&sem, 0) == 1);
}

#[test]
fn injected_channel_stall_ignores_doorbells() {
    let faults = FaultPlan {
        channel_stall: true,
        ..Default::default()
    };
    let mut rig = Rig::new(SimChip::Gh100, faults);
    let sem = rig.sys_buffer(4096);
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    let mut p = Push::new();
    p.release(sem.va, 1);
    rig.submit(&mut ch, p.words());
    rig.settle();
    assert_eq!(rig.read_u64(&sem, 0), 0);
    assert_eq!(rig.gp_get(&ch), 0, "nothing fetched");
    assert!(
        rig.gpu
            .log()
            .warnings()
            .iter()
            .any(|w| w.contains("injected fault: channels stall"))
    );
    // Lifting the fault: the next doorbell runs the channel.
    rig.gpu.inject(|f| f.channel_stall = false);
    rig.ring(&ch);
    rig.wait("after the stall", |r| r.read_u64(&sem, 0) == 1);
}

#[test]
fn a_device_that_is_gone_runs_no_more_work() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    let mut p = Push::new();
    p.acquire(sem.va, 1).release(sem.va + 8, 7);
    rig.submit(&mut ch, p.words());
    rig.wait("the acquire to park", |r| {
        r.gpu.engine_counters().acquires_waited == 1
    });
    rig.gpu.unplug();
    rig.write(&sem, 0, &1u64.to_le_bytes());
    rig.settle();
    assert_eq!(
        rig.read_u64(&sem, 8),
        0,
        "the engines stopped with the device"
    );
}

#[test]
fn unscheduled_channels_wait_until_scheduled() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    rig.gpu
        .with_world(|w| w.channels.get_mut(&ch.token).unwrap().enabled = false);
    let mut p = Push::new();
    p.release(sem.va, 4);
    rig.submit(&mut ch, p.words());
    rig.settle();
    assert_eq!(rig.read_u64(&sem, 0), 0);
    rig.gpu
        .with_world(|w| w.channels.get_mut(&ch.token).unwrap().enabled = true);
    rig.wait("once scheduled", |r| r.read_u64(&sem, 0) == 4);
}

#[test]
fn without_bus_mastering_nothing_reaches_host_memory() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    let vram = rig.vram_buffer(4096);
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    // PCI_COMMAND: memory space on, bus mastering off.
    assert!(rig.gpu.config_write(4, 2, 0x2));
    let mut p = Push::new();
    p.release(vram.va, 1).release(sem.va, 2);
    rig.submit(&mut ch, p.words());
    let e = rig.wait_halted(&ch);
    assert!(e.contains("bus mastering is off"), "{e}");
    // The rig's pushbuffers are in host memory: not even they can be fetched.
    assert_eq!(rig.read_u64(&vram, 0), 0);
    assert_eq!(rig.read_u64(&sem, 0), 0, "no DMA to host memory");
}

#[test]
fn gpput_is_read_again_only_after_a_doorbell() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    // Parked on an acquire the CPU satisfies later.
    let mut p = Push::new();
    p.acquire(sem.va, 1).release(sem.va + 0x100, 2);
    rig.submit(&mut ch, p.words());
    rig.settle();
    // A new entry published without a doorbell while the channel is parked...
    let mut q = Push::new();
    q.release(sem.va + 0x200, 3);
    let va = rig.pushbuffer(q.words());
    rig.put_entry(&mut ch, gp_entry(va, q.words().len() as u32));
    rig.write(&sem, 0, &1u64.to_le_bytes());
    rig.wait("the parked release", |r| r.read_u64(&sem, 0x100) == 2);
    rig.settle();
    // ...is not fetched until one rings.
    assert_eq!(
        rig.read_u64(&sem, 0x200),
        0,
        "GPPut read without a doorbell"
    );
    rig.ring(&ch);
    rig.wait("the release after the doorbell", |r| {
        r.read_u64(&sem, 0x200) == 3
    });
}

#[test]
fn a_channel_freed_and_allocated_again_starts_afresh() {
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);
    let mut p = Push::new();
    p.release(sem.va, 1);
    rig.submit(&mut ch, p.words());
    rig.wait("the first release", |r| r.read_u64(&sem, 0) == 1);
    // The same token, ring and USERD, allocated again: a new channel, GPGet 0.
    let token = ch.token;
    rig.gpu.with_world(|w| {
        let mut rec = w.channels.remove(&token).unwrap();
        rec.generation = w.new_channel_generation();
        w.channels.insert(token, rec);
    });
    let mut q = Push::new();
    q.release(sem.va, 7);
    let va = rig.pushbuffer(q.words());
    ch.put = 0;
    rig.put_entry(&mut ch, gp_entry(va, q.words().len() as u32));
    rig.ring(&ch);
    rig.wait("the new channel's first entry", |r| {
        r.read_u64(&sem, 0) == 7
    });
}
