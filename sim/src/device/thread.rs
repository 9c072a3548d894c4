//! How a simulated GPU's units run, and the device thread that runs them. Every call into a
//! unit holds the device lock and gets its [`Cx`] from one place (`Inner::units_and_cx`):
//! a BAR0 access from the driver (`Inner::with_unit`, on the driver's thread), and a step or
//! a signal on the device thread (`Inner::step_all`). The thread steps every unit, delivers
//! the signals they raised, and goes again while anything happened; then it sleeps until a
//! register write kicks it, or for `IDLE_STEP` at most (see the parent module).

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Cx, Inner, State, Unit};

/// How long the device thread sleeps when no unit has work and nothing woke it: units that
/// model time (timeouts, periodic events) get a step at least this often.
const IDLE_STEP: Duration = Duration::from_millis(1);

impl Inner {
    /// The units and the [`Cx`] they run with, borrowed apart from one `State` (the units are
    /// not part of what a unit sees). The timer is read now; a caller that runs several units
    /// reads it again before each.
    fn units_and_cx<'a>(&'a self, st: &'a mut State) -> (&'a mut [Box<dyn Unit>], Cx<'a>) {
        let State {
            faults,
            config,
            world,
            units,
            firmware_dir,
            ..
        } = st;
        let cx = Cx {
            spec: self.spec,
            bus: &self.bus,
            log: &self.log,
            faults,
            config,
            world,
            now_ns: self.now_ns(),
            firmware_dir: firmware_dir.as_deref(),
        };
        (units, cx)
    }

    /// Tells the device thread there is something to look at.
    pub(super) fn kick(&self) {
        self.lock().kicked = true;
        self.wake.notify_all();
    }

    /// Runs `f` on the unit that claims `offset`; `None` (and a strictness note) if none does.
    pub(super) fn with_unit<R>(
        &self,
        offset: u32,
        f: impl FnOnce(&mut dyn Unit, &mut Cx) -> R,
    ) -> Option<R> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let Some(i) = st.units.iter().position(|u| u.claims(self.spec, offset)) else {
            let n = st.unclaimed.entry(offset).or_insert(0);
            *n += 1;
            if *n == 1 {
                self.log
                    .debug("bar0", format!("no unit decodes BAR0 offset {offset:#x}"));
            }
            return None;
        };
        let (units, mut cx) = self.units_and_cx(st);
        // PANIC: `i` is a position `units` just returned, under the same lock.
        let r = f(&mut *units[i], &mut cx);
        st.kicked = true;
        Some(r)
    }

    /// One pass over every unit, then signal delivery; true if anything happened.
    fn step_all(&self, st: &mut State) -> bool {
        let mut busy = false;
        let (units, mut cx) = self.units_and_cx(st);
        for u in units.iter_mut() {
            cx.now_ns = self.now_ns();
            busy |= u.step(&mut cx);
        }
        while let Some(s) = cx.world.signals.pop_front() {
            busy = true;
            for u in units.iter_mut() {
                cx.now_ns = self.now_ns();
                u.signal(&mut cx, &s);
            }
        }
        busy
    }

    /// The device thread: step units while they have work; sleep until woken otherwise.
    pub(super) fn run(&self) {
        let mut st = self.lock();
        while !self.stop.load(Ordering::Acquire) {
            if self.gone.load(Ordering::Acquire) {
                st = self
                    .wake
                    .wait_timeout(st, IDLE_STEP * 10)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0);
                continue;
            }
            st.kicked = false;
            if self.step_all(&mut st) {
                // Let the driver side in between steps: a step may be long.
                drop(st);
                std::thread::yield_now();
                st = self.lock();
                continue;
            }
            if !st.kicked {
                st = self
                    .wake
                    .wait_timeout(st, IDLE_STEP)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0);
            }
        }
    }
}
