//! The engines on arbitrary input (whatever a driver put in memory): a pushbuffer of random
//! words, a QMD of random bytes, random copy parameters. The channel may halt; the device
//! must not fall over: another channel still runs afterwards.

mod engines_rig;

use engines_rig::*;
use nvbare_sim::device::Engine;
use nvbare_sim::{FaultPlan, SimChip};
use proptest::prelude::*;

/// The classes allocated on every channel here (both chips' compute and copy classes).
const CLASSES: [u32; 4] = [0xcbc0, 0xc8b5, 0xcec0, 0xcab5];

/// After whatever `ch` did, a fresh channel's release still lands.
fn still_alive(rig: &mut Rig) {
    let sem = rig.sys_buffer(4096);
    let mut ok = rig.channel(Engine::Graphics, &CLASSES);
    let mut p = Push::new();
    p.release(sem.va, 0x600d);
    rig.submit(&mut ok, p.words());
    rig.wait("a healthy channel after the random one", |r| {
        r.read_u64(&sem, 0) == 0x600d
    });
}

fn chip(gb: bool) -> SimChip {
    if gb { SimChip::Gb202 } else { SimChip::Gh100 }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_pushbuffers(words in proptest::collection::vec(any::<u32>(), 1..300), gb in any::<bool>()) {
        let mut rig = Rig::new(chip(gb), FaultPlan::default());
        let mut ch = rig.channel(Engine::Graphics, &CLASSES);
        // Bind the engines first so random methods reach them too.
        let mut p = Push::new();
        p.inc(1, SET_OBJECT, &[if gb { 0xcec0 } else { 0xcbc0 }])
            .inc(4, SET_OBJECT, &[if gb { 0xcab5 } else { 0xc8b5 }]);
        p.0.extend_from_slice(&words);
        rig.submit(&mut ch, p.words());
        rig.settle();
        still_alive(&mut rig);
    }

    #[test]
    fn random_qmds(bytes in proptest::collection::vec(any::<u8>(), 384), gb in any::<bool>()) {
        let mut rig = Rig::new(chip(gb), FaultPlan::default());
        let qmd = rig.vram_buffer(4096);
        rig.write(&qmd, 0, &bytes);
        let mut ch = rig.channel(Engine::Graphics, &CLASSES);
        let mut p = Push::new();
        p.inc(1, SET_OBJECT, &[if gb { 0xcec0 } else { 0xcbc0 }])
            .inc(1, 0x2b4, &[(qmd.va >> 8) as u32])
            .inc(1, 0x2c0, &[9]);
        rig.submit(&mut ch, p.words());
        rig.settle();
        still_alive(&mut rig);
    }

    #[test]
    fn random_copies(args in proptest::collection::vec(any::<u32>(), 10), gb in any::<bool>()) {
        let mut rig = Rig::new(chip(gb), FaultPlan::default());
        let mut ch = rig.channel(Engine::Copy(0), &CLASSES);
        let class = if gb { 0xcab5 } else { 0xc8b5 };
        let mut p = Push::new();
        // Small lines, so a copy that does map moves little.
        p.inc(4, SET_OBJECT, &[class])
            .inc(4, 0x400, &args[..4])
            .inc(4, 0x410, &[args[4], args[5], args[6] & 0xffff, args[7] & 0xff])
            .inc(4, 0x240, &args[4..8])
            .inc(4, 0x300, &[args[9]]);
        rig.submit(&mut ch, p.words());
        rig.settle();
        still_alive(&mut rig);
    }
}
