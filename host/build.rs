//! Records the git revision `nvbare --version` prints (`NVBARE_GIT_REVISION`), or says there
//! was none when the crate is built outside a git checkout (a source tarball, a vendored
//! copy) or without git.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn main() {
    let revision = git(&["rev-parse", "--short=12", "HEAD"]);
    // Rebuild when HEAD moves: HEAD itself (a checkout) and the ref it names (a commit);
    // `--git-path` finds them in a worktree too.
    // Only paths that exist: cargo reruns a build script whose watched path is missing on
    // every build.
    let watch = |name: &str| {
        if let Some(p) = git(&["rev-parse", "--git-path", name])
            && std::path::Path::new(&p).exists()
        {
            println!("cargo:rerun-if-changed={p}");
        }
    };
    watch("HEAD");
    watch("packed-refs");
    if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(&head_ref);
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!(
        "cargo:rustc-env=NVBARE_GIT_REVISION={}",
        revision.as_deref().unwrap_or("unknown")
    );
}
