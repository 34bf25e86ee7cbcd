//! Embeds the git commit dlsim is built from (`DLSIM_GIT_COMMIT`, `unknown` outside a git
//! checkout), for the provenance metadata of every Parquet table. Reruns when HEAD or the
//! branch it points to moves, so the commit is never stale.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=DLSIM_GIT_COMMIT={commit}");
    for path in [
        git(&["rev-parse", "--git-path", "HEAD"]),
        git(&["rev-parse", "--symbolic-full-name", "HEAD"])
            .and_then(|r| git(&["rev-parse", "--git-path", &r])),
        git(&["rev-parse", "--git-path", "packed-refs"]),
    ]
    .into_iter()
    .flatten()
    // A missing path would rerun the script (and rebuild the crate) on every build.
    .filter(|p| std::path::Path::new(p).exists())
    {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
