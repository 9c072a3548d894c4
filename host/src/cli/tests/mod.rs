//! Tests of the command line without a GPU: the argument grammar (`args`), the backend
//! options (`backends`), run plans (`plan`), and what nvbare prints (`output`: fault
//! reports, `--version`, error codes, `list --json`, help, Ctrl-C; `gsp_output`: the boot
//! timeline, the teardown line and the codes of the backends that boot GSP-RM).

mod args;
mod backends;
mod gsp_output;
mod output;
mod plan;

use std::path::PathBuf;

use clap::Parser;

use super::error::CliError;
use super::run::{RunArgs, RunPlan};
use super::{Cli, Command};

/// The benchmark cubin checked into the repository (sm_90).
fn bench_cubin() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/bench_kernels.sm_90.cubin"
    ))
}

/// The transcript's cubin (`host/data/cli_kernels.cu`).
fn cli_cubin() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/cli_kernels.sm_90.cubin"
    ))
}

/// `nvbare run <bench cubin> ARGS...` as clap reads it.
fn run_args(args: &[&str]) -> RunArgs {
    run_args_with(&bench_cubin(), args)
}

/// `nvbare run CUBIN ARGS...` as clap reads it.
fn run_args_with(cubin: &std::path::Path, args: &[&str]) -> RunArgs {
    let mut argv = vec!["nvbare", "run", cubin.to_str().expect("utf-8 path")];
    argv.extend_from_slice(args);
    match Cli::try_parse_from(argv).expect("parses").command {
        Command::Run(a) => a,
        other => panic!("not run: {other:?}"),
    }
}

/// The plan of `nvbare run <bench cubin> ARGS...` (no GPU is opened).
fn plan(args: &[&str]) -> Result<RunPlan, CliError> {
    RunPlan::new(&run_args(args))
}

/// The code of `plan(args)`'s error.
fn plan_error(args: &[&str]) -> (&'static str, String) {
    let e = plan(args).expect_err("an error");
    (e.code().code, e.to_string())
}
