//! Helpers: run the real `dlsim` binary, make scratch folders, and locate bundled files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn dlsim(args: &[&str]) -> Output {
    dlsim_in(&repo(), args)
}

/// Runs `dlsim` with `dir` as its working directory.
pub fn dlsim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dlsim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("dlsim runs")
}

/// Runs `git` in `dir` (identity set, so commits work on any machine); panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args([
            "-c",
            "user.name=dlsim-tests",
            "-c",
            "user.email=tests@dlsim.invalid",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    stdout(&o)
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A fresh empty folder under the target dir, unique per test name.
pub fn scratch(name: &str) -> PathBuf {
    let dir = repo().join("target").join("it-scratch").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Copies every file of folder `from` (not its subfolders) into `to`, created if missing.
pub fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    }
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A job's shard ledger, if it keeps one, is consistent, and a completed job trained
/// every shard exactly once. `ctx` says how to reproduce.
pub fn check_ledger(job: &dlsim_model::job::Job, ctx: &str) {
    if let Some(ledger) = job.ledger() {
        ledger
            .check_consistent()
            .unwrap_or_else(|e| panic!("{e}; {ctx}"));
        if job.phase() == dlsim_model::policy::JobPhase::Completed {
            ledger
                .check_exactly_once()
                .unwrap_or_else(|e| panic!("{e}; {ctx}"));
        }
    }
}
