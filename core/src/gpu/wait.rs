//! Waiting for work: fences reached, faults found while waiting, stalls reported with how
//! long the wait really lasted, and waits a caller can stop (Ctrl-C).

use super::{Backend, Engine, Fence, Gpu, GpuError, queue_index};
use crate::hal::Deadline;
use crate::rm::{FaultReport, Step, fault, tree::at};
use crate::sem::SemaphoreError;

/// How a wait that may be stopped ([`Gpu::wait_unless`]) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitEnd {
    /// The fence was reached.
    Reached,
    /// The stop check said to give up first; the work may still be running.
    Stopped {
        /// How long the wait had lasted.
        waited_ns: u64,
    },
}

/// A compute wait asks the debugger for SM and MMU errors every this many fault-poll slices
/// (once a second at the default 50 ms), besides the events it services every slice.
const DEBUGGER_EVERY_SLICES: u32 = 20;

impl<B: Backend> Gpu<B> {
    /// Waits for `fence`, up to the configured timeout.
    pub fn wait(&mut self, fence: Fence) -> Result<(), GpuError<B::Error>> {
        self.wait_for(fence, self.config.timeout_ns)
    }

    /// Waits up to `timeout_ns` for `fence`. Between slices a compute wait asks whether the
    /// channel faulted and a copy wait services the backend's events, so a fault is reported
    /// within a slice instead of at the timeout; a timeout reports what faulted, if anything
    /// did, and how long the whole wait lasted.
    pub fn wait_for(&mut self, fence: Fence, timeout_ns: u64) -> Result<(), GpuError<B::Error>> {
        match self.wait_inner(fence, timeout_ns, None)? {
            // Only a wait given a stop check ends stopped.
            WaitEnd::Reached | WaitEnd::Stopped { .. } => Ok(()),
        }
    }

    /// [`Self::wait_for`] that also asks `stop` between slices (every
    /// [`GpuConfig::fault_poll_ns`](super::GpuConfig::fault_poll_ns), on either engine) and gives up when it says so: a user's
    /// Ctrl-C. A stopped wait leaves the work running; the caller tears down (or waits again).
    pub fn wait_unless(
        &mut self,
        fence: Fence,
        timeout_ns: u64,
        mut stop: impl FnMut() -> bool,
    ) -> Result<WaitEnd, GpuError<B::Error>> {
        self.wait_inner(fence, timeout_ns, Some(&mut stop))
    }

    fn wait_inner(
        &mut self,
        fence: Fence,
        timeout_ns: u64,
        mut stop: Option<&mut dyn FnMut() -> bool>,
    ) -> Result<WaitEnd, GpuError<B::Error>> {
        let i = queue_index(fence.engine);
        if self.queues[i].reached(fence.value) {
            return Ok(WaitEnd::Reached);
        }
        // TIMEOUT: the caller's (the configured 10 s by default); see GpuConfig::timeout_ns.
        let deadline = Deadline::after(self.backend.clock(), timeout_ns);
        // Both engines wait in slices: between them a compute wait asks for faults (events
        // and the debugger), a copy wait services the backend's events, so a copy channel
        // GSP-RM stopped (an Xid, an MMU fault) is reported within a slice, not at the
        // timeout.
        let slice_ns = self.config.fault_poll_ns;
        // The first slice needs no clock read of its own: a round trip's wait reads the clock
        // here and once in the semaphore wait.
        let mut slice = slice_ns.min(timeout_ns);
        let mut slices: u32 = 0;
        let mut last_get = None;
        loop {
            let e = match self.queues[i].wait(fence.value, self.backend.clock(), slice) {
                Ok(()) => return Ok(WaitEnd::Reached),
                Err(e) => e,
            };
            if deadline.expired(self.backend.clock()) {
                let waited_ns = deadline.elapsed_ns(self.backend.clock());
                return Err(self.stalled(e, waited_ns));
            }
            slices = slices.wrapping_add(1);
            self.queues[i].ring_again_if_unfetched(self.backend.usermode(), &mut last_get);
            // Events every slice; where they report channel faults (GSP-RM), the debugger's
            // error states (a few RM calls of kilobytes each) only every
            // DEBUGGER_EVERY_SLICES slices, and in full when the wait fails. Without fault
            // events (nvk) the debugger is the fault source: every slice.
            let ask_debugger =
                !self.backend.faults_by_event() || slices.is_multiple_of(DEBUGGER_EVERY_SLICES);
            let found = match fence.engine {
                Engine::Compute => self.fault_report_asking(ask_debugger)?,
                // The debugger knows only the compute channel's SMs: a copy wait asks the
                // events alone.
                Engine::Copy => self
                    .backend
                    .service_events()
                    .map_err(at(Step::ServiceEvents))?,
            };
            if let Some(report) = found {
                log::warn!("fault while waiting for {fence:?}: {report}");
                return Err(GpuError::Fault {
                    report: alloc::boxed::Box::new(report),
                    then: e,
                });
            }
            if let Some(stop) = stop.as_mut()
                && stop()
            {
                return Ok(WaitEnd::Stopped {
                    waited_ns: deadline.elapsed_ns(self.backend.clock()),
                });
            }
            slice = slice_ns.min(deadline.remaining_ns(self.backend.clock()));
        }
    }

    /// How often waits on `engine` rang its doorbell again because the front end had fetched
    /// nothing for a slice with entries pending (see `Queue::ring_again_if_unfetched`): a
    /// lost doorbell recovered, or a busy channel nudged harmlessly.
    pub fn doorbell_rerings(&self, engine: Engine) -> u64 {
        self.queues[queue_index(engine)].rerings
    }

    /// What faulted, asking the backend's event source and the debugger.
    pub fn fault_report(&mut self) -> Result<Option<FaultReport>, GpuError<B::Error>> {
        self.fault_report_asking(true)
    }

    /// What faulted by the backend's events, and by the debugger too when `debugger` is set
    /// or the events name a fault (the debugger then adds the SM and MMU details).
    fn fault_report_asking(
        &mut self,
        debugger: bool,
    ) -> Result<Option<FaultReport>, GpuError<B::Error>> {
        let events = self
            .backend
            .service_events()
            .map_err(at(Step::ServiceEvents))?;
        if !debugger && events.is_none() {
            return Ok(None);
        }
        let debugger = fault::read(
            &mut self.backend,
            self.channels.debugger,
            self.channels.compute.handle,
            self.objects.gr.sm_count,
        );
        Ok(match (events, debugger) {
            (Some(mut a), Some(b)) => {
                a.merge(b);
                Some(a)
            }
            (a, b) => a.or(b),
        })
    }

    /// The error of a wait that ran out of time after `waited_ns` in all (its last slice's
    /// timeout knows only the slice).
    fn stalled(&mut self, mut e: SemaphoreError, waited_ns: u64) -> GpuError<B::Error> {
        if let SemaphoreError::Timeout(t) = &mut e {
            t.waited_ns = waited_ns;
        }
        match self.fault_report() {
            Ok(Some(report)) => GpuError::Fault {
                report: alloc::boxed::Box::new(report),
                then: e,
            },
            _ => GpuError::Wait(e),
        }
    }

    /// Waits for all submitted work.
    pub fn sync(&mut self) -> Result<(), GpuError<B::Error>> {
        self.wait(self.submitted(Engine::Compute))?;
        self.wait(self.submitted(Engine::Copy))
    }
}
