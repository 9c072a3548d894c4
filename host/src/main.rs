//! `nvbare`: the command line (its definition and commands are `nvbare_host::cli`).

fn main() -> std::process::ExitCode {
    nvbare_host::cli::main()
}
