//! Where outputs go: every command creates the missing folders above its outputs (the
//! README's openb import once printed a full report and then failed on a missing folder,
//! issue #20), and nothing writes into tracked files unless asked (see `calibration`).
//! Every command takes `--quiet`, and prints nothing with it when all goes well.

use crate::support::*;
use std::path::Path;
use std::process::Command;

/// Runs `args` with `--quiet` (a test binary is a debug build, and the release hint is
/// due after 0 s): it succeeds and prints nothing to stderr, nor to stdout unless its
/// result is a table (`sweep`'s final table, `reproduce`'s headline, `sensitivity`'s summary).
fn ok(args: &[&str]) {
    let mut args = args.to_vec();
    args.push("--quiet");
    let o = Command::new(env!("CARGO_BIN_EXE_dlsim"))
        .args(&args)
        .current_dir(repo())
        .env("DLSIM_RELEASE_HINT_AFTER_S", "0")
        .output()
        .expect("dlsim runs");
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    if !["sweep", "reproduce", "sensitivity"].contains(&args[0]) {
        assert_eq!(stdout(&o), "", "{args:?} --quiet printed to stdout");
    }
    assert_eq!(stderr(&o), "", "{args:?} --quiet printed to stderr");
}

/// A tiny generated batch scenario in `dir`.
fn tiny_scenario(dir: &Path) -> String {
    let p = dir.join("tiny.json");
    std::fs::write(
        &p,
        r#"{ "name": "tiny", "generate": { "days": 0.02, "jobs_per_day": 500 },
  "cluster": { "groups": [ { "count": 20, "cores": 64, "mem_gb": 256 } ] } }"#,
    )
    .unwrap();
    path_str(&p).to_string()
}

#[test]
fn every_command_creates_the_folders_of_its_outputs_and_is_silent_with_quiet() {
    let dir = scratch("outputs-nested");
    let deep = |rel: &str| path_str(&dir.join("a/b").join(rel)).to_string();
    let sc = tiny_scenario(&dir);

    let run = deep("replay/run");
    ok(&["replay", &sc, "--out", &run]);
    assert!(Path::new(&run).join("summary.json").is_file());

    let online = dir.join("online.json");
    let text = r#"{ "kind": "online", "name": "o", "days": 1, "policy": "hpa",
  "traffic": { "partitions": 16 } }"#;
    std::fs::write(&online, text).unwrap();
    let online_run = deep("online/run");
    ok(&["replay", path_str(&online), "--out", &online_run]);
    assert!(Path::new(&online_run).join("summary.json").is_file());

    let trace = deep("gen/trace.jsonl");
    ok(&["trace", "gen", "--days", "0.01", "--out", &trace]);
    assert!(Path::new(&trace).is_file());

    let (imported, nodes) = (deep("import/openb.jsonl"), deep("nodes/openb.csv"));
    let fixtures = repo().join("tests/fixtures/importers");
    let pods = path_str(&fixtures.join("openb_pods.csv")).to_string();
    let node_list = path_str(&fixtures.join("openb_nodes.csv")).to_string();
    ok(&[
        "trace",
        "import",
        "--format",
        "openb",
        &pods,
        "--nodes",
        &node_list,
        "--out",
        &imported,
        "--cluster-out",
        &nodes,
    ]);
    assert!(Path::new(&imported).is_file() && Path::new(&nodes).is_file());

    let plots = deep("inspect/trace");
    ok(&["trace", "inspect", &trace, "--plot-out", &plots]);
    assert!(dir.join("a/b/inspect/trace-arrivals.svg").is_file());

    let sweep_file = crate::sweep::tiny_sweep(&dir, r#"["static"]"#);
    let (swept, merged) = (deep("sweep/out"), deep("merge/out"));
    ok(&["sweep", path_str(&sweep_file), "--out", &swept]);
    ok(&["merge", &swept, "--out", &merged]);
    assert!(Path::new(&merged).join("results.csv").is_file());

    let report = deep("report/out");
    ok(&["report", &run, "--out", &report]);
    assert!(Path::new(&report).join("report.html").is_file());

    let baseline = deep("check/baseline.json");
    ok(&["check", &run, "--baseline", &baseline, "--bless"]);
    assert!(Path::new(&baseline).is_file());
    ok(&["check", &run, "--baseline", &baseline]);

    let cal = deep("calibrate/cal.json");
    let shipped = path_str(&repo().join("reports/calibration/default.json")).to_string();
    ok(&["calibrate", "--refit", &shipped, "--out", &cal]);
    assert!(Path::new(&cal).is_file());

    let reproduced = deep("reproduce/out");
    ok(&[
        "reproduce",
        "--paper",
        "dlrover",
        "--row",
        "t1-wd-optimise-steps",
        "--quick",
        "--out",
        &reproduced,
    ]);
    assert!(Path::new(&reproduced).join("reproduce.json").is_file());

    let sensitivity = deep("sensitivity/out");
    ok(&[
        "sensitivity",
        "--paper",
        "picasso",
        "--choice",
        "picasso-dims",
        "--out",
        &sensitivity,
    ]);
    assert!(Path::new(&sensitivity).join("sensitivity.md").is_file());
}

/// Without `--quiet`, a debug build's command that ran past the threshold (10 s; 0 here)
/// ends with a one-line hint to build in release; a release build never prints it.
#[test]
fn a_slow_debug_run_hints_at_release_builds_unless_quiet() {
    let dir = scratch("outputs-release-hint");
    let sc = tiny_scenario(&dir);
    let out = path_str(&dir.join("run")).to_string();
    for quiet in [false, true] {
        let mut args = vec!["replay", sc.as_str(), "--out", out.as_str()];
        if quiet {
            args.push("--quiet");
        }
        let o = Command::new(env!("CARGO_BIN_EXE_dlsim"))
            .args(&args)
            .env("DLSIM_RELEASE_HINT_AFTER_S", "0")
            .output()
            .expect("dlsim runs");
        assert!(o.status.success(), "{}", stderr(&o));
        let hints = stderr(&o)
            .lines()
            .filter(|l| l.starts_with("hint: "))
            .count();
        let want = usize::from(cfg!(debug_assertions) && !quiet);
        assert_eq!(hints, want, "quiet={quiet}: {}", stderr(&o));
    }
}
