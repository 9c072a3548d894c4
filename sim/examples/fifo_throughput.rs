//! Throughput of the simulated host: pushbuffer methods per second through doorbell → GPFIFO
//! fetch → decode → execute (issue 12, item 9: at least 1 M methods/s).
//!
//! ```text
//! cargo run --release -p nvbare-sim --example fifo_throughput [-- ENTRIES]
//! ```
//!
//! One channel on a simulated GH100 gets ENTRIES (default 200) GPFIFO entries, each a segment
//! of about 10 000 method writes in the shape a launch stream has: compute state methods
//! (the shader window pairs) and host semaphore releases (five methods each, the last writing
//! memory through the MMU). The clock runs from the doorbell to the last release landing.

#[path = "../tests/engines_rig/mod.rs"]
mod engines_rig;

use std::time::Instant;

use engines_rig::{Push, Rig, SET_OBJECT, gp_entry};
use nvbare_sim::device::Engine;
use nvbare_sim::{FaultPlan, SimChip};

const HOPPER_COMPUTE_A: u32 = 0xcbc0;
/// clcbc0.h `SET_SHADER_SHARED_MEMORY_WINDOW_A/B` and `SET_SHADER_LOCAL_MEMORY_WINDOW_A/B`.
const SHARED_WINDOW_A: u32 = 0x2a0;
const LOCAL_WINDOW_A: u32 = 0x7b0;

fn main() {
    let entries: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200)
        // The rig's ring has 256 entries: GPPut must not catch up with GPGet.
        .clamp(1, 254);
    let mut rig = Rig::new(SimChip::Gh100, FaultPlan::default());
    let sem = rig.sys_buffer(4096);
    let mut ch = rig.channel(Engine::Graphics, &[HOPPER_COMPUTE_A]);

    let mut setup = Push::new();
    setup.inc(1, SET_OBJECT, &[HOPPER_COMPUTE_A]);
    rig.submit(&mut ch, setup.words());

    // One segment, used by every entry: 1000 rounds of 2 window pairs + a release.
    let mut p = Push::new();
    for i in 0..1000u64 {
        p.inc(1, SHARED_WINDOW_A, &[0x7294, 0])
            .inc(1, LOCAL_WINDOW_A, &[0x7293, 0])
            .release(sem.va, i);
    }
    let methods_per_segment = 1000 * (2 + 2 + 5);
    let words = p.words().len() as u32;
    let va = rig.pushbuffer(p.words());
    let last = {
        // The last entry releases a distinct value, the end marker.
        let mut end = Push::new();
        end.release(sem.va + 16, 0xdead_beef);
        rig.pushbuffer(end.words())
    };
    rig.wait("the setup", |r| r.gp_get(&ch) == 1);
    let before = rig.gpu.engine_counters().methods;

    let start = Instant::now();
    for _ in 0..entries {
        rig.put_entry(&mut ch, gp_entry(va, words));
    }
    rig.put_entry(&mut ch, gp_entry(last, 5 + 1));
    rig.ring(&ch);
    rig.wait("the end marker", |r| r.read_u64(&sem, 16) == 0xdead_beef);
    let secs = start.elapsed().as_secs_f64();

    let methods = rig.gpu.engine_counters().methods - before;
    assert_eq!(
        methods,
        u64::from(entries) * methods_per_segment + 5,
        "every method ran"
    );
    // CAST: display only.
    let rate = methods as f64 / secs;
    println!(
        "{methods} methods in {entries} GPFIFO entries + 1 in {secs:.3} s: {:.2} M methods/s ({:.0} ns per method)",
        rate / 1e6,
        1e9 / rate
    );
}
