//! The simulator's log: what the model did, and every request it refused and why.
//!
//! Lines are kept in memory (tests read them) and forwarded to the `log` crate under the
//! target `nvbare_sim` (`RUST_LOG=nvbare_sim=debug` shows them).

use std::sync::Mutex;
use std::time::Instant;

/// How much a line matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Routine detail (every RPC, every doorbell).
    Debug,
    /// What happened (boot stages, channels created).
    Info,
    /// The model refused or could not do something a driver asked for, or an injected fault
    /// fired: always a reason a driver may fail.
    Warn,
}

/// One log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// Nanoseconds since the device was made.
    pub at_ns: u64,
    /// Level.
    pub level: Level,
    /// The unit that wrote it ("fsp", "gsp", "fifo", "mmu", "ce", "compute", "bar0").
    pub unit: &'static str,
    /// The text.
    pub text: String,
}

/// Most lines kept; older ones are dropped (a soak test writes millions).
const KEEP: usize = 100_000;

/// The log of one simulated device.
#[derive(Debug)]
pub struct SimLog {
    start: Instant,
    lines: Mutex<std::collections::VecDeque<Line>>,
}

impl Default for SimLog {
    fn default() -> Self {
        Self::new()
    }
}

impl SimLog {
    /// An empty log starting now.
    pub fn new() -> SimLog {
        SimLog {
            start: Instant::now(),
            lines: Mutex::new(Default::default()),
        }
    }

    /// Adds a line.
    pub fn add(&self, level: Level, unit: &'static str, text: impl Into<String>) {
        let text = text.into();
        match level {
            Level::Debug => log::debug!(target: "nvbare_sim", "{unit}: {text}"),
            Level::Info => log::info!(target: "nvbare_sim", "{unit}: {text}"),
            Level::Warn => log::warn!(target: "nvbare_sim", "{unit}: {text}"),
        }
        let mut l = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if l.len() == KEEP {
            l.pop_front();
        }
        l.push_back(Line {
            at_ns: self.start.elapsed().as_nanos() as u64,
            level,
            unit,
            text,
        });
    }

    /// Routine detail.
    pub fn debug(&self, unit: &'static str, text: impl Into<String>) {
        self.add(Level::Debug, unit, text)
    }

    /// What happened.
    pub fn info(&self, unit: &'static str, text: impl Into<String>) {
        self.add(Level::Info, unit, text)
    }

    /// A refusal or an injected fault.
    pub fn warn(&self, unit: &'static str, text: impl Into<String>) {
        self.add(Level::Warn, unit, text)
    }

    /// A copy of the lines kept.
    pub fn lines(&self) -> Vec<Line> {
        let l = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        l.iter().cloned().collect()
    }

    /// The warnings, as text (`unit: text`).
    pub fn warnings(&self) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter(|l| l.level == Level::Warn)
            .map(|l| format!("{}: {}", l.unit, l.text))
            .collect()
    }

    /// Whether any line contains `needle`.
    pub fn contains(&self, needle: &str) -> bool {
        let l = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        l.iter().any(|x| x.text.contains(needle))
    }
}
