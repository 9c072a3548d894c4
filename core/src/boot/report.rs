//! The boot report: per stage, the host-side time (the work, without the time spent
//! waiting on the device) and the time waited, for the CLI's timeline and BENCHMARKS.md.

use alloc::vec::Vec;
use core::fmt;

use super::error::Stage;
use crate::chip::Chip;
use crate::hal::{Clock, Nanos, PollError, TimedOut, Wait, poll_until, try_poll_until};

/// The time one stage took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageTime {
    /// The stage.
    pub stage: Stage,
    /// Host-side work: the stage's duration minus its waits.
    pub host_ns: u64,
    /// Time spent waiting on the device (polls included).
    pub waited_ns: u64,
}

/// How a boot went, stage by stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootReport {
    /// The chip booted.
    pub chip: Chip,
    /// Whether WPR2 was up at the start (a previous boot's secure state), so the GPU was
    /// reset.
    pub reset_for_wpr2: bool,
    /// The stages, in order.
    pub stages: Vec<StageTime>,
}

impl BootReport {
    /// Host-side work over all stages.
    pub fn host_ns(&self) -> u64 {
        self.stages.iter().map(|s| s.host_ns).sum()
    }

    /// Time waited on the device over all stages.
    pub fn waited_ns(&self) -> u64 {
        self.stages.iter().map(|s| s.waited_ns).sum()
    }

    /// The time of `stage`, if it ran.
    pub fn stage(&self, stage: Stage) -> Option<StageTime> {
        self.stages.iter().copied().find(|s| s.stage == stage)
    }
}

impl fmt::Display for BootReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "boot timeline ({}):", self.chip)?;
        writeln!(f, "  {:<20} {:>12} {:>12}", "stage", "host work", "waited")?;
        for s in &self.stages {
            writeln!(
                f,
                "  {:<20} {:>12} {:>12}",
                s.stage.name(),
                alloc::format!("{}", Nanos(s.host_ns)),
                alloc::format!("{}", Nanos(s.waited_ns)),
            )?;
        }
        write!(
            f,
            "  {:<20} {:>12} {:>12}",
            "total",
            alloc::format!("{}", Nanos(self.host_ns())),
            alloc::format!("{}", Nanos(self.waited_ns()))
        )
    }
}

/// Measures the stages of a boot: every device wait of the boot goes through
/// [`Timeline::poll`] / [`Timeline::try_poll`] (or is added with [`Timeline::add_waited`]),
/// so the rest of a stage's time is host-side work.
#[derive(Debug)]
pub struct Timeline {
    stages: Vec<StageTime>,
    current: Option<(Stage, u64, u64)>,
    waited_ns: u64,
}

impl Timeline {
    /// An empty timeline.
    pub fn new() -> Self {
        Self {
            stages: Vec::new(),
            current: None,
            waited_ns: 0,
        }
    }

    /// Ends the current stage (if any) and starts `stage`.
    pub fn begin(&mut self, clock: &impl Clock, stage: Stage) {
        self.end(clock);
        log::debug!("boot: {stage}");
        self.current = Some((stage, clock.now_ns(), self.waited_ns));
    }

    /// Ends the current stage.
    pub fn end(&mut self, clock: &impl Clock) {
        if let Some((stage, start, waited0)) = self.current.take() {
            let total = clock.now_ns().saturating_sub(start);
            let waited = (self.waited_ns - waited0).min(total);
            log::debug!(
                "boot: {stage} done: {} of work, {} waited",
                Nanos(total - waited),
                Nanos(waited)
            );
            self.stages.push(StageTime {
                stage,
                host_ns: total - waited,
                waited_ns: waited,
            });
        }
    }

    /// The stage running now.
    pub fn stage(&self) -> Option<Stage> {
        self.current.map(|c| c.0)
    }

    /// Counts `ns` as waited (a wait made elsewhere, such as an RPC's).
    pub fn add_waited(&mut self, ns: u64) {
        self.waited_ns += ns;
    }

    /// A fixed delay (`Clock::delay_ns`), counted as waiting.
    pub fn delay(&mut self, clock: &impl Clock, ns: u64) {
        let start = clock.now_ns();
        clock.delay_ns(ns);
        self.waited_ns += clock.now_ns().saturating_sub(start);
    }

    /// [`poll_until`], counted as waiting.
    pub fn poll<T>(
        &mut self,
        clock: &impl Clock,
        wait: Wait,
        probe: impl FnMut() -> Option<T>,
    ) -> Result<T, TimedOut> {
        let start = clock.now_ns();
        let r = poll_until(clock, wait, probe);
        self.waited_ns += clock.now_ns().saturating_sub(start);
        r
    }

    /// [`try_poll_until`], counted as waiting.
    pub fn try_poll<T, E>(
        &mut self,
        clock: &impl Clock,
        wait: Wait,
        probe: impl FnMut() -> Result<Option<T>, E>,
    ) -> Result<T, PollError<E>> {
        let start = clock.now_ns();
        let r = try_poll_until(clock, wait, probe);
        self.waited_ns += clock.now_ns().saturating_sub(start);
        r
    }

    /// The finished report.
    pub fn finish(mut self, clock: &impl Clock, chip: Chip, reset_for_wpr2: bool) -> BootReport {
        self.end(clock);
        BootReport {
            chip,
            reset_for_wpr2,
            stages: self.stages,
        }
    }
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;

    struct StepClock(Cell<u64>);
    impl Clock for StepClock {
        fn now_ns(&self) -> u64 {
            self.0.get()
        }
        fn delay_ns(&self, ns: u64) {
            self.0.set(self.0.get() + ns);
        }
    }

    #[test]
    fn waits_are_not_host_work() {
        let clock = StepClock(Cell::new(0));
        let mut t = Timeline::new();
        t.begin(&clock, Stage::Fsp);
        clock.0.set(1_000); // host work
        let mut n = 0;
        t.poll(&clock, Wait::pausing("x", 1_000_000, 10_000), || {
            n += 1;
            (n == 5).then_some(())
        })
        .unwrap();
        clock.0.set(clock.0.get() + 500); // more host work
        t.begin(&clock, Stage::Lockdown);
        t.add_waited(0);
        let r = t.finish(&clock, Chip::GH100, false);
        let fsp = r.stage(Stage::Fsp).unwrap();
        assert_eq!(fsp.host_ns, 1_500);
        assert_eq!(fsp.waited_ns, 30_000);
        assert_eq!(r.stages.len(), 2);
        assert_eq!(r.host_ns(), 1_500);
        let text = alloc::format!("{r}");
        assert!(
            text.contains("FSP chain of trust") && text.contains("30.0 us"),
            "{text}"
        );
    }
}
