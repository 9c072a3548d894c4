//! Serves simulated GPUs over tinygrad's remote PCI protocol, for running tinygrad (or any
//! other client) against them by hand:
//!
//! ```text
//! cargo run -p nvbare-sim --example serve -- --chip gb202 --listen 127.0.0.1:6667 [--gpus N] [--for SECONDS] [--log]
//! (`--log`: every line of each GPU's log, debug included, when `--for` ends)
//! REMOTE=127.0.0.1:6667 DEV=PCI+NV python3 -c 'from tinygrad import Tensor; print(Tensor([1,2,3], device="NV").numpy())'
//! ```
//!
//! `RUST_LOG=nvbare_sim=debug` shows what the simulator does. With `--for`, it stops after that
//! many seconds and prints what it was asked; otherwise it serves until killed.
//! (`nvbare sim serve` is the same server behind the `nvbare` command line.)

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use nvbare_sim::SimChip;
use nvbare_sim::remote::{ServeConfig, serve};

fn usage() -> ExitCode {
    eprintln!(
        "usage: serve [--chip gh100|gb100|gb202] [--listen ADDR:PORT] [--gpus N] [--for SECONDS] \
         [--allow-remote] [--log]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut chip = SimChip::Gb202;
    let mut listen: SocketAddr = "127.0.0.1:6667".parse().expect("a literal address");
    let mut gpus = 1u32;
    let mut seconds: Option<u64> = None;
    let mut allow_remote = false;
    let mut full_log = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next();
        match a.as_str() {
            "--chip" => match value().as_deref().and_then(SimChip::from_name) {
                Some(c) => chip = c,
                None => return usage(),
            },
            "--listen" => match value().and_then(|v| v.parse().ok()) {
                Some(v) => listen = v,
                None => return usage(),
            },
            "--gpus" => match value().and_then(|v| v.parse().ok()) {
                Some(v) => gpus = v,
                None => return usage(),
            },
            "--for" => match value().and_then(|v| v.parse().ok()) {
                Some(v) => seconds = Some(v),
                None => return usage(),
            },
            "--allow-remote" => allow_remote = true,
            "--log" => full_log = true,
            _ => return usage(),
        }
    }
    let mut config = ServeConfig::new(chip, listen, gpus);
    config.allow_remote = allow_remote;
    let server = match serve(config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "serving {gpus} simulated {} GPU(s) on {}",
        chip.spec().name,
        server.addr()
    );
    match seconds {
        Some(s) => std::thread::sleep(Duration::from_secs(s)),
        None => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
    }
    println!("{}", server.stats());
    for (i, gpu) in server.gpus().iter().enumerate() {
        if full_log {
            for l in gpu.log().lines() {
                println!(
                    "gpu {i} {:>12} ns {:?} {}: {}",
                    l.at_ns, l.level, l.unit, l.text
                );
            }
            continue;
        }
        for w in gpu.log().warnings() {
            println!("gpu {i}: {w}");
        }
    }
    ExitCode::SUCCESS
}
