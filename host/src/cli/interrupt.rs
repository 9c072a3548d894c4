//! Ctrl-C: the first SIGINT (or SIGTERM) sets a flag that the long waits and loops of the GPU
//! commands check between slices, so the command stops through its normal teardown path (the
//! GPU and its channels are torn down as at any other exit); a second one ends the process at
//! once (exit 130), for a step that does not look at the flag.
//!
//! signal-hook's `flag` module installs the handlers; it needs no `unsafe` here (the handler
//! only stores to an `AtomicBool`, which is async-signal-safe).

use std::sync::atomic::{AtomicBool, Ordering};

use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};

/// Set by the signal handler.
static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Set by SIGUSR1 (`sim serve --vfio-user` only): the simulated GPU is to fall off the bus.
static UNPLUG: AtomicBool = AtomicBool::new(false);

/// The exit status of a command stopped by a signal (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Installs the handlers (once per command that checks [`requested`]). When they cannot be
/// installed, Ctrl-C keeps its default action (the process ends at once) and a warning says so.
pub fn install() {
    for signal in [SIGINT, SIGTERM] {
        // Order matters: the conditional shutdown sees the flag as it was before this signal,
        // so only a second signal ends the process.
        let installed =
            signal_hook::flag::register_conditional_shutdown(signal, EXIT_INTERRUPTED, &REQUESTED)
                .and_then(|_| signal_hook::flag::register(signal, &REQUESTED));
        if let Err(e) = installed {
            log::warn!("cannot catch signal {signal} ({e}); Ctrl-C will end nvbare at once");
        }
    }
}

/// Whether the user asked to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// `sim serve --vfio-user`: SIGUSR1 unplugs the simulated GPU (see [`unplug_requested`]).
/// Without the handler SIGUSR1 keeps its default action (the server ends), and a warning says
/// so.
pub fn install_unplug() {
    if let Err(e) = signal_hook::flag::register(SIGUSR1, &UNPLUG) {
        log::warn!("cannot catch SIGUSR1 ({e}); it will end the server instead of unplugging");
    }
}

/// Whether SIGUSR1 asked for the simulated GPU to vanish.
pub fn unplug_requested() -> bool {
    UNPLUG.load(Ordering::SeqCst)
}
