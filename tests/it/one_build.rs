//! The README's two commands share one build: `cargo run` (the binary alone) and `cargo test
//! --workspace` (every member with its dev-dependencies) must resolve the same crates with
//! the same features, or the second rebuilds dozens of dependency crates (issue #20).

use std::process::Command;

use crate::support::repo;

/// `cargo tree` lines `name version [features]`, sorted and deduplicated.
fn resolved(args: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--offline", "--prefix", "none", "-f", "{p} [{f}]"])
        .args(args)
        .current_dir(repo())
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_end_matches(" (*)").to_string())
        .filter(|l| !l.is_empty())
        .collect();
    lines.sort();
    lines.dedup();
    lines
}

#[test]
fn the_binary_and_the_tests_resolve_the_same_features() {
    let bin = resolved(&["-p", "dlsim", "-e", "normal,build"]);
    let tests = resolved(&["--workspace", "-e", "normal,build,dev"]);
    let only_bin: Vec<_> = bin.iter().filter(|l| !tests.contains(l)).collect();
    let only_tests: Vec<_> = tests.iter().filter(|l| !bin.contains(l)).collect();
    assert!(
        only_bin.is_empty() && only_tests.is_empty(),
        "`cargo run` and `cargo test --workspace` resolve different crates or features, so \
         the second rebuilds them; give the normal dependency the dev-dependency's features \
         (or keep the dev-dependency optional, as criterion is).\nonly for the binary: \
         {only_bin:#?}\nonly for the tests: {only_tests:#?}"
    );
    assert!(
        bin.len() > 100,
        "cargo tree listed only {} crates",
        bin.len()
    );
}
