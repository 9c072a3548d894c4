//! What the CLI tests share: running `nvbare` as a user runs it (the binary, its output read
//! back, a signal sent when a line appears), the firmware cache, and a simulator served over
//! tinygrad's remote protocol in the test process.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nvbare_sim::SimChip;
use nvbare_sim::remote::{ServeConfig, Server, serve};

pub const NVBARE: &str = env!("CARGO_BIN_EXE_nvbare");

/// The longest any command here may run before the test kills it and fails.
// TIMEOUT: 240 s: the slowest command here (a demo over the remote protocol in a debug build)
// takes about 25 s alone and 60 s with the other tests and builds beside it; the boot's own
// waits are bounded by seconds. Only a hung nvbare waits this long.
pub const LIMIT: Duration = Duration::from_secs(240);

/// The firmware cache holding `chip`'s files, or `None` after saying the test skipped.
pub fn firmware(chip: &str) -> Option<PathBuf> {
    let root = match std::env::var_os("NVBARE_FIRMWARE_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/nvbare/firmware"),
    };
    let dir = root.join("nvidia").join(chip).join("gsp");
    let have = ["fmc", "gsp", "bootloader"]
        .iter()
        .all(|n| dir.join(format!("{n}-570.144.bin")).is_file());
    if have {
        return Some(root);
    }
    let msg = format!(
        "no 570.144 firmware for {chip} under {} (set NVBARE_FIRMWARE_DIR or run `nvbare \
         firmware fetch --chip all`)",
        dir.display()
    );
    if std::env::var("NVBARE_REQUIRE_FIRMWARE").as_deref() == Ok("1") {
        panic!("{msg} and NVBARE_REQUIRE_FIRMWARE=1");
    }
    eprintln!("skipped: {msg}");
    None
}

/// `nvbare ARGS...` with the firmware cache `fw`, and none of the caller's settings.
pub fn nvbare(fw: Option<&PathBuf>, args: &[&str]) -> Command {
    let mut c = Command::new(NVBARE);
    c.args(args)
        .env_remove("RUST_LOG")
        .env_remove("NVBARE_TUNE")
        .env_remove("NVBARE_FIRMWARE_DIR");
    if let Some(fw) = fw {
        c.env("NVBARE_FIRMWARE_DIR", fw);
    }
    c
}

/// What a finished command printed, and how it ended.
pub struct Ran {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn both(&self) -> String {
        format!("--- stdout\n{}--- stderr\n{}", self.stdout, self.stderr)
    }

    /// Checks every word is in stdout and stderr together.
    pub fn says(&self, words: &[&str]) {
        let all = self.both();
        for w in words {
            assert!(all.contains(w), "{w:?} missing from:\n{all}");
        }
    }

    /// The line of stdout that holds every word of `words`.
    pub fn line_with(&self, words: &[&str]) -> &str {
        self.stdout
            .lines()
            .find(|l| words.iter().all(|w| l.contains(w)))
            .unwrap_or_else(|| panic!("no line with {words:?} in:\n{}", self.both()))
    }

    pub fn succeeded(&self) -> &Self {
        assert!(self.status.success(), "{}", self.both());
        self
    }
}

/// Which stream a line came from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Out,
    Err,
}

/// Runs `cmd`; when a line of `stream` holds `marker`, does `then` to the process (its pid).
/// Kills it and fails if it runs past [`LIMIT`] or `marker` never comes.
pub fn run_watched(
    mut cmd: Command,
    marker: Option<(Stream, &str)>,
    then: impl FnOnce(u32),
) -> Ran {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nvbare");
    let pid = child.id();
    let (tx, rx) = mpsc::channel::<(Stream, String)>();
    let readers: Vec<_> = [
        (
            Stream::Out,
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        ),
        (Stream::Err, Box::new(child.stderr.take().unwrap())),
    ]
    .into_iter()
    .map(|(stream, r)| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(r).lines() {
                let Ok(line) = line else { break };
                if tx.send((stream, line)).is_err() {
                    break;
                }
            }
        })
    })
    .collect();
    drop(tx);
    let start = Instant::now();
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let mut then = Some(then);
    let mut pending = marker;
    loop {
        let left = LIMIT.saturating_sub(start.elapsed());
        match rx.recv_timeout(left) {
            Ok((stream, line)) => {
                if let Some((s, m)) = pending
                    && s == stream
                    && line.contains(m)
                {
                    pending = None;
                    if let Some(f) = then.take() {
                        f(pid);
                    }
                }
                let buf = if stream == Stream::Out {
                    &mut stdout
                } else {
                    &mut stderr
                };
                buf.push_str(&line);
                buf.push('\n');
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("nvbare ran past {LIMIT:?}:\n{stdout}\n{stderr}");
            }
        }
    }
    for r in readers {
        let _ = r.join();
    }
    let status = child.wait().expect("wait for nvbare");
    if let Some((_, m)) = pending {
        panic!("nvbare never printed {m:?}:\n{stdout}\n{stderr}");
    }
    Ran {
        status,
        stdout,
        stderr,
    }
}

pub fn run(cmd: Command) -> Ran {
    run_watched(cmd, None, |_| {})
}

/// A simulated `chip` served over tinygrad's remote protocol on a free loopback port, its
/// firmware read from `fw`.
pub fn server(chip: SimChip, fw: &PathBuf) -> Server {
    let s = serve(ServeConfig::new(chip, "127.0.0.1:0".parse().unwrap(), 1))
        .expect("serve the simulator");
    s.gpus()[0].set_firmware_dir(fw);
    s
}

pub fn wpr2_up(s: &Server) -> bool {
    let p = nvbare_sim::SimPlatform::new(s.gpus()[0].clone());
    nvbare_core::boot::identify::wpr2_up(&p)
}

/// The path of the committed cubin with `vector_add` for SM `sm` (the shared table's).
pub fn cubin(sm: u32) -> String {
    let k = nvbare_test_kernels::for_sm(sm).expect("committed test kernels for this SM");
    format!("{}/../{}", env!("CARGO_MANIFEST_DIR"), k.path)
}
