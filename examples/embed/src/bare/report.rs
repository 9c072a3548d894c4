//! The serial report: one machine-readable line per step, `NVBARE-CHECK <step> pass|fail
//! <detail>` (as the guest checks of tests/vm/run), with the step's time.

use core::fmt::Write;

use nvbare_core::hal::Clock;

use super::clock::Tsc;
use super::serial::Com1;

/// The steps so far.
pub struct Report {
    pub out: Com1,
    failed: usize,
    passed: usize,
}

impl Report {
    /// A report on COM1.
    pub fn new(out: Com1) -> Self {
        Self {
            out,
            failed: 0,
            passed: 0,
        }
    }

    /// One step's line: its outcome and detail, and the milliseconds since `since_ns`
    /// (on `clock`) when there is one.
    pub fn step<T, E: core::fmt::Display>(
        &mut self,
        name: &str,
        timed: Option<(&Tsc, u64)>,
        result: Result<(T, alloc::string::String), E>,
    ) -> Option<T> {
        let ms = timed.map(|(c, t0)| (c.now_ns() - t0) / 1_000_000);
        let took = |out: &mut Com1| match ms {
            Some(ms) => write!(out, " ({ms} ms)"),
            None => Ok(()),
        };
        match result {
            Ok((value, detail)) => {
                self.passed += 1;
                let _ = write!(self.out, "NVBARE-CHECK {name} pass {detail}");
                let _ = took(&mut self.out);
                let _ = writeln!(self.out);
                Some(value)
            }
            Err(e) => {
                self.failed += 1;
                let _ = write!(self.out, "NVBARE-CHECK {name} fail {e}");
                let _ = took(&mut self.out);
                let _ = writeln!(self.out);
                None
            }
        }
    }

    /// A line that is not a check (context for a person reading the transcript).
    pub fn note(&mut self, args: core::fmt::Arguments<'_>) {
        let _ = writeln!(self.out, "nvbare-embed: {args}");
    }

    /// The last line, `done`: passes when every step passed; then whether all did.
    pub fn finish(&mut self) -> bool {
        let ok = self.failed == 0;
        let verdict = if ok { "pass" } else { "fail" };
        let _ = writeln!(
            self.out,
            "NVBARE-CHECK done {verdict} {} passed, {} failed",
            self.passed, self.failed
        );
        ok
    }
}
