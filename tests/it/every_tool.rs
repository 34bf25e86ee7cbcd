//! Every tool works on every kind of run (issue #19): `replay --policy a,b`, `report`,
//! `check` (bless, then compare) and `sweep` (then `report` and `check` on the sweep), on a
//! batch scenario, an online-only scenario and a mixed one (batch jobs beside an online
//! job on one cluster), each under two policy specs of its kind.

use crate::support::*;
use std::path::PathBuf;

/// A small batch day: the generator's jobs on a small cluster.
const BATCH: &str = r#"{
  "name": "tool-batch",
  "generate": { "days": 0.05, "jobs_per_day": 800 },
  "cluster": { "groups": [ { "name": "cpu", "count": 30, "cores": 64, "mem_gb": 256 },
                           { "name": "gpu", "count": 2, "cores": 96, "mem_gb": 512, "gpus": 8 } ] }
}"#;

/// A one-day online-only file (one job on its own GPU pool).
const ONLINE: &str = r#"{
  "kind": "online",
  "name": "tool-online",
  "seed": 3,
  "days": 1,
  "policy": "hpa",
  "traffic": { "partitions": 16 }
}"#;

/// The small batch day beside one online job, on one cluster with GPU nodes for it.
const MIXED: &str = r#"{
  "name": "tool-mixed",
  "generate": { "days": 0.05, "jobs_per_day": 800 },
  "cluster": { "groups": [ { "name": "cpu", "count": 30, "cores": 64, "mem_gb": 256 },
                           { "name": "gpu", "count": 4, "cores": 96, "mem_gb": 512, "gpus": 8 } ] },
  "policy": "static+hpa",
  "online": [ { "name": "feed", "id": 900001, "days": 1, "max_workers": 8,
                "job": { "initial_workers": 2, "profile_workers": [1, 2, 4, 8] },
                "traffic": { "peak_sps": 20000, "partitions": 16 } } ]
}"#;

fn run_ok(args: &[&str]) -> String {
    let o = dlsim(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

/// How many metrics `check` compared, from its verdict line `ok: R run(s) ..., M metric(s)`.
fn compared(verdict: &str) -> usize {
    let line = verdict
        .lines()
        .find(|l| l.starts_with("ok: "))
        .unwrap_or_else(|| panic!("no verdict in {verdict}"));
    line.split(", ")
        .nth(1)
        .and_then(|p| p.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"))
}

/// Runs every tool on `scenario` under `specs` (a `replay --policy` list of two) and
/// returns the replay folders, for checks of the kind's own outputs.
fn every_tool(name: &str, scenario: &str, specs: [&str; 2], online: bool) -> [PathBuf; 2] {
    let dir = scratch(&format!("every-tool-{name}"));
    let file = dir.join("scenario.json");
    std::fs::write(&file, scenario).unwrap();
    // replay --policy a,b: one folder per spec.
    let out = dir.join("replays");
    let list = specs.join(",");
    run_ok(&[
        "replay",
        path_str(&file),
        "--policy",
        &list,
        "--out",
        path_str(&out),
        "-q",
    ]);
    let runs = specs.map(|s| out.join(dlsim_policies::folder_name(s)));
    for (run, spec) in runs.iter().zip(specs) {
        let s: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run.join("summary.json")).unwrap()).unwrap();
        assert_eq!(s["policy"], spec, "{name}");
        assert_eq!(s["online_gpu_hours"].is_number(), online, "{name}: {s}");
        assert_eq!(run.join("online.csv").exists(), online, "{name}");
    }
    // report on both runs.
    let report = dir.join("report");
    run_ok(&[
        "report",
        path_str(&runs[0]),
        path_str(&runs[1]),
        "--out",
        path_str(&report),
        "-q",
    ]);
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    for spec in specs {
        assert!(md.contains(spec), "{name}: report.md names {spec}");
    }
    // check: bless both runs, then compare them, on at least the kind's metrics.
    let baseline = dir.join("baseline.json");
    let b = path_str(&baseline);
    run_ok(&[
        "check",
        path_str(&runs[0]),
        path_str(&runs[1]),
        "--baseline",
        b,
        "--bless",
        "-q",
    ]);
    let verdict = run_ok(&[
        "check",
        path_str(&runs[0]),
        path_str(&runs[1]),
        "--baseline",
        b,
    ]);
    assert!(
        compared(&verdict) >= if online { 8 } else { 10 },
        "{name}: {verdict}"
    );
    if online {
        assert!(
            verdict.contains("online_violation_rate"),
            "{name}: {verdict}"
        );
    }
    // sweep: both specs, one seed; then report and check on the sweep folder.
    let sweep = dir.join("sweep.json");
    std::fs::write(
        &sweep,
        format!(
            r#"{{ "name": "{name}-sweep", "scenario": "scenario.json", "seeds": 1,
  "policies": ["{}", "{}"] }}"#,
            specs[0], specs[1]
        ),
    )
    .unwrap();
    let swept = dir.join("swept");
    run_ok(&["sweep", path_str(&sweep), "--out", path_str(&swept), "-q"]);
    let results = std::fs::read_to_string(swept.join("results.csv")).unwrap();
    for spec in specs {
        assert!(results.contains(spec), "{name}: {results}");
    }
    let sweep_report = dir.join("sweep-report");
    run_ok(&[
        "report",
        path_str(&swept),
        "--out",
        path_str(&sweep_report),
        "-q",
    ]);
    let pooled = dir.join("pooled.json");
    let p = path_str(&pooled);
    run_ok(&["check", path_str(&swept), "--baseline", p, "--bless", "-q"]);
    let verdict = run_ok(&["check", path_str(&swept), "--baseline", p]);
    assert!(compared(&verdict) > 0, "{name}: {verdict}");
    runs
}

#[test]
fn every_tool_works_on_a_batch_scenario() {
    let runs = every_tool("batch", BATCH, ["static", "dlrover"], false);
    assert!(runs[0].join("jobs.csv").exists());
}

#[test]
fn every_tool_works_on_an_online_scenario() {
    every_tool("online", ONLINE, ["hpa", "kale"], true);
}

#[test]
fn every_tool_works_on_a_mixed_scenario() {
    let runs = every_tool("mixed", MIXED, ["static+hpa", "dlrover+kale"], true);
    for run in &runs {
        let jobs = std::fs::read_to_string(run.join("jobs.csv")).unwrap();
        assert!(
            jobs.lines().count() > 10,
            "batch rows beside the online one"
        );
        assert_eq!(jobs.lines().filter(|l| l.contains(",online,")).count(), 1);
    }
}
