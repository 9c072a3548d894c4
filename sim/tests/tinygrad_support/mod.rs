//! Running tinygrad 0.14.0, unmodified, against simulated GPUs served over its remote PCI
//! protocol: the venv (installed from PyPI once, git-ignored), the firmware cache (pre-filled
//! offline with our verified files by `sim/tinygrad/prefill_fw.py`), the server on a free
//! loopback port, the tinygrad process (`REMOTE=127.0.0.1:PORT DEV=PCI+NV`) and what came of
//! it: exit status, output, the server's count of commands and bytes, the simulator's
//! warnings, the time taken.
//!
//! Skips (saying why) when PyPI cannot be reached or the firmware is missing, unless
//! `NVBARE_REQUIRE_TINYGRAD=1` (then both are failures).

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use nvbare_core::hal::{Wait, poll_until};
use nvbare_sim::platform::SimClock;
use nvbare_sim::remote::{ServeConfig, ServeStats, serve};

/// The tinygrad release whose PCI path is the independent client.
const TINYGRAD: &str = "0.14.0";

/// A working tinygrad install and the firmware to give it.
pub struct Tinygrad {
    python: PathBuf,
    firmware: PathBuf,
}

/// The simulator crate's directory (this module is also compiled into host's tests).
fn sim_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../sim")
}

fn require() -> bool {
    std::env::var("NVBARE_REQUIRE_TINYGRAD").is_ok_and(|v| v == "1")
}

/// Runs `cmd`, returning its output, or a line saying what failed.
fn output(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: could not run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The venv's python with tinygrad 0.14.0 and numpy, installing them from PyPI if needed.
fn venv() -> Result<PathBuf, String> {
    let dir = sim_dir().join(".venv-tinygrad");
    let python = dir.join("bin/python");
    let check = format!(
        "import importlib.metadata as m, numpy; v = m.version('tinygrad'); \
         assert v == '{TINYGRAD}', v"
    );
    if python.is_file() && output(Command::new(&python).args(["-c", &check]), "check").is_ok() {
        return Ok(python);
    }
    output(
        Command::new("python3").args(["-m", "venv"]).arg(&dir),
        "python3 -m venv",
    )?;
    output(
        Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--timeout",
            "30",
            &format!("tinygrad=={TINYGRAD}"),
            "numpy",
        ]),
        "installing tinygrad from PyPI (is PyPI reachable?)",
    )?;
    output(
        Command::new(&python).args(["-c", &check]),
        "the installed tinygrad",
    )?;
    Ok(python)
}

/// The verified firmware set: `$NVBARE_FIRMWARE_DIR`, else the cache `nvbare firmware fetch`
/// fills; it must hold what tinygrad fetches for GB202, AD102 and GA102.
fn firmware() -> Result<PathBuf, String> {
    let dir = match std::env::var_os("NVBARE_FIRMWARE_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/nvbare/firmware"),
    };
    for f in [
        "nvidia/gb202/gsp/fmc-570.144.bin",
        "nvidia/gb202/gsp/bootloader-570.144.bin",
        "nvidia/ga102/gsp/gsp-570.144.bin",
        "nvidia/ga102/gsp/booter_load-570.144.bin",
        "nvidia/ga102/gsp/bootloader-570.144.bin",
        "nvidia/ad102/gsp/booter_load-570.144.bin",
        "nvidia/ad102/gsp/bootloader-570.144.bin",
        "nvidia/ad102/gsp/gsp-570.144.bin",
    ] {
        if !dir.join(f).is_file() {
            return Err(format!(
                "{} lacks {f}; run `nvbare firmware fetch --chip all` or set NVBARE_FIRMWARE_DIR",
                dir.display()
            ));
        }
    }
    Ok(dir)
}

/// tinygrad and the firmware, or `None` after printing why the test skips (a failure
/// instead when `NVBARE_REQUIRE_TINYGRAD=1`).
pub fn tinygrad(test: &str) -> Option<&'static Tinygrad> {
    static READY: OnceLock<Result<Tinygrad, String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        Ok(Tinygrad {
            python: venv()?,
            firmware: firmware()?,
        })
    });
    match ready {
        Ok(t) => Some(t),
        Err(why) if require() => panic!("{test}: NVBARE_REQUIRE_TINYGRAD=1 but {why}"),
        Err(why) => {
            println!("SKIPPED {test}: {why}");
            None
        }
    }
}

/// What one tinygrad run came to.
pub struct Run {
    /// Whether the process exited 0.
    pub ok: bool,
    /// Its exit status, as text.
    pub status: String,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
    /// The server's counts.
    pub stats: ServeStats,
    /// The simulated GPUs' warnings (`gpu N unit: text`).
    pub warnings: Vec<String>,
    /// GPU 0's log at info level and above (`unit: text`), what its boot did.
    pub log: Vec<String>,
    /// BAR0 offsets tinygrad touched that no unit decodes, with counts (GPU 0).
    pub unclaimed: Vec<(u32, u64)>,
    /// Wall time of the tinygrad process.
    pub elapsed: Duration,
}

impl Run {
    /// The summary of the boot log: commands by type, bytes each way, seconds, and tinygrad's
    /// own count of round trips.
    pub fn summary(&self) -> String {
        let client = self
            .stdout
            .lines()
            .chain(self.stderr.lines())
            .find(|l| l.starts_with("remote: sent"))
            .unwrap_or("remote: (tinygrad printed no totals)");
        let unclaimed: Vec<String> = self
            .unclaimed
            .iter()
            .map(|(o, n)| format!("{o:#x}×{n}"))
            .collect();
        format!(
            "tinygrad {:.2} s, exit {}\n  server: {}\n  client: {client}\n  BAR0 offsets no \
             unit decodes: {}",
            self.elapsed.as_secs_f64(),
            self.status,
            self.stats,
            if unclaimed.is_empty() {
                "none".to_string()
            } else {
                unclaimed.join(" ")
            }
        )
    }

    /// Everything, for a failure message.
    pub fn dump(&self) -> String {
        format!(
            "{}\n--- stdout\n{}\n--- stderr (last 60 lines)\n{}\n--- simulator warnings\n{}\n--- server refusals\n{}",
            self.summary(),
            self.stdout,
            tail(&self.stderr, 60),
            self.warnings.join("\n"),
            self.stats.refusals.join("\n")
        )
    }
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn drain(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = r.read_to_end(&mut b);
        String::from_utf8_lossy(&b).into_owned()
    })
}

/// One tinygrad run at a time: each boots GPUs over TCP and the machine's cores are few.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

impl Tinygrad {
    /// Serves `config` on a free loopback port and runs `sim/tinygrad/<script> <args>` against
    /// it, with `env` added, for at most `timeout`.
    pub fn run(
        &self,
        test: &str,
        config: ServeConfig,
        script: &str,
        args: &[&str],
        env: &[(&str, &str)],
        timeout: Duration,
    ) -> Run {
        self.run_times(test, config, script, args, env, timeout, 1)
    }

    /// As [`Tinygrad::run`], `times` tinygrad processes one after the other against the same
    /// server (each within `timeout`); the result is the last one's status with everyone's
    /// output.
    #[allow(clippy::too_many_arguments)]
    pub fn run_times(
        &self,
        test: &str,
        mut config: ServeConfig,
        script: &str,
        args: &[&str],
        env: &[(&str, &str)],
        timeout: Duration,
        times: usize,
    ) -> Run {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        // A private cache (tinygrad's downloads) and temp dir (its lock files) per run.
        let scratch =
            std::env::temp_dir().join(format!("nvbare-tinygrad-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&scratch);
        std::fs::create_dir_all(&scratch).expect("a scratch directory");
        let cache = scratch.join("cache");
        let script_dir = sim_dir().join("tinygrad");
        let prefill = output(
            Command::new(&self.python)
                .arg(script_dir.join("prefill_fw.py"))
                .arg(&self.firmware)
                .arg(config.chip.spec().name)
                .env("XDG_CACHE_HOME", &cache),
            "pre-filling tinygrad's firmware cache",
        );
        if let Err(e) = prefill {
            panic!("{test}: {e}");
        }

        config.listen = "127.0.0.1:0".parse().expect("a literal address");
        let server = serve(config).expect("the server starts");
        let port = server.addr().port().to_string();
        let started = Instant::now();
        let (mut ok, mut last, mut stdout, mut stderr) =
            (true, String::new(), String::new(), String::new());
        for _ in 0..times {
            let mut child = Command::new(&self.python)
                .arg(script_dir.join(script))
                .args(args)
                .env("REMOTE", format!("127.0.0.1:{port}"))
                .env("DEV", "PCI+NV")
                .env("DEBUG", "1")
                .env("PYTHONUNBUFFERED", "1")
                .env("XDG_CACHE_HOME", &cache)
                .env("TMPDIR", &scratch)
                .envs(env.iter().copied())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("tinygrad's python starts");
            let out = drain(child.stdout.take().expect("piped"));
            let err = drain(child.stderr.take().expect("piped"));
            let clock = SimClock::default();
            // TIMEOUT: the caller's bound on the whole run (a boot over TCP from Python takes
            // seconds to tens of seconds; a hang is what the bound catches).
            let waited = poll_until(
                &clock,
                Wait::pausing("tinygrad to finish", timeout.as_nanos() as u64, 20_000_000),
                || child.try_wait().ok().flatten(),
            );
            let status = match waited {
                Ok(s) => s,
                Err(t) => {
                    let _ = child.kill();
                    let s = child.wait().expect("the killed child is reaped");
                    eprintln!("{test}: {t}; killed tinygrad");
                    s
                }
            };
            ok &= status.success();
            last = status.to_string();
            stdout += &out.join().unwrap_or_default();
            stderr += &err.join().unwrap_or_default();
        }
        let elapsed = started.elapsed();
        let stats = server.stats();
        let unclaimed = server.gpus()[0].unclaimed_registers();
        let log = server.gpus()[0]
            .log()
            .lines()
            .into_iter()
            .filter(|l| l.level >= nvbare_sim::log::Level::Info)
            .map(|l| format!("{}: {}", l.unit, l.text))
            .collect();
        let warnings = server
            .gpus()
            .iter()
            .enumerate()
            .flat_map(|(i, g)| {
                g.log()
                    .warnings()
                    .into_iter()
                    .map(move |w| format!("gpu {i} {w}"))
            })
            .collect();
        server.stop();
        let _ = std::fs::remove_dir_all(&scratch);
        Run {
            ok,
            status: last,
            stdout,
            stderr,
            stats,
            warnings,
            log,
            unclaimed,
            elapsed,
        }
    }
}
