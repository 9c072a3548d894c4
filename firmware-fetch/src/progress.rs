//! Progress bars for downloads and unpacking (indicatif), silent under `--quiet`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Makes progress bars, or hidden ones when quiet.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    quiet: bool,
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        Progress { quiet }
    }

    /// A byte-count bar of `len` bytes (0 when unknown) labelled `message`.
    pub fn bytes(&self, len: u64, message: impl Into<String>) -> ProgressBar {
        if self.quiet {
            return ProgressBar::hidden();
        }
        let bar = if len == 0 {
            ProgressBar::new_spinner()
        } else {
            ProgressBar::new(len)
        };
        bar.set_draw_target(ProgressDrawTarget::stderr());
        let template = if len == 0 {
            "{spinner} {msg} {bytes} ({bytes_per_sec})"
        } else {
            "{msg:28} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(message.into());
        bar
    }

    /// A line for the user (stderr), unless quiet.
    pub fn note(&self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }
}
