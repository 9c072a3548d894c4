//! `nvbare firmware fetch`: the command line over [`crate::fetch`].

use crate::cache::Cache;
use crate::fetch::{FetchOptions, fetch};
use crate::progress::Progress;
use crate::source::Source;
use crate::{FetchError, parse_chip_selection};
use std::path::PathBuf;

/// `nvbare firmware ...`
#[derive(Debug, clap::Subcommand)]
pub enum FirmwareCommand {
    /// Get GSP-RM 570.144 firmware for a chip, verify every file's SHA-256, and cache it.
    Fetch(FetchArgs),
}

/// `nvbare firmware fetch --chip CHIP [--from DIR|FILE.deb|URL] [--cache DIR] [--quiet]`
#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// tu102 ga100 ga102 ad102 gh100 gb100 gb202, a chip of those families (ad104, h200, ...), or all.
    #[arg(long)]
    pub chip: String,
    /// Take the files only from here: a firmware directory, a firmware-nvidia-graphics .deb,
    /// or an http(s):// URL of a linux-firmware tree. Without it: the cache, /lib/firmware,
    /// Debian's package via apt-get download, upstream linux-firmware.
    #[arg(long, value_name = "DIR|FILE.deb|URL")]
    pub from: Option<String>,
    /// Cache directory [default: $XDG_CACHE_HOME/nvbare/firmware, else
    /// $HOME/.cache/nvbare/firmware].
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// No progress bars and no summary line; errors are still printed.
    #[arg(long)]
    pub quiet: bool,
}

/// Runs a `firmware` subcommand.
pub fn run(command: FirmwareCommand) -> Result<(), FetchError> {
    match command {
        FirmwareCommand::Fetch(args) => run_fetch(args),
    }
}

fn run_fetch(args: FetchArgs) -> Result<(), FetchError> {
    let chips = parse_chip_selection(&args.chip)?;
    let cache = Cache::new(match args.cache {
        Some(dir) => dir,
        None => Cache::default_root()?,
    });
    let sources = match &args.from {
        Some(from) => vec![Source::from_argument(from)?],
        None => Source::defaults(&cache),
    };
    let options = FetchOptions {
        cache,
        sources,
        progress: Progress::new(args.quiet),
    };
    let report = fetch(&chips, &options)?;
    if !args.quiet {
        println!("{}", report.summary());
    }
    Ok(())
}
