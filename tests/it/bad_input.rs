//! Bad input gets one readable message naming file, line and field, exit code 2, no panic,
//! and no output files.

use crate::support::*;
use std::path::{Path, PathBuf};

const CLUSTER: &str = r#"{ "groups": [ { "count": 4, "cores": 32, "mem_gb": 192 } ] }"#;

fn good_job() -> serde_json::Value {
    serde_json::json!({
        "id": 1, "submit_s": 0, "model": "wide_deep", "batch_size": 512, "steps": 1000,
        "dense_mb": 20.0, "emb_dim": 16, "emb_mb_per_msample": 1.0,
        "workers": 2, "ps": 1, "worker_cpu": 4.0, "worker_mem_mb": 8192, "ps_cpu": 4.0, "ps_mem_mb": 8192
    })
}

/// A valid second job, as small as the format allows, for tests about the scenario file.
fn tiny_job() -> serde_json::Value {
    serde_json::json!({
        "id": 2, "submit_s": 1, "model": "dcn", "batch_size": 1, "steps": 1,
        "dense_mb": 1.0, "emb_dim": 1, "emb_mb_per_msample": 0.0,
        "workers": 1, "ps": 1, "worker_cpu": 1.0, "worker_mem_mb": 1, "ps_cpu": 1.0, "ps_mem_mb": 1
    })
}

fn write_trace(dir: &Path, job: &serde_json::Value) -> PathBuf {
    let header = r#"{"format":"dlsim-trace","version":1}"#;
    let path = dir.join("trace.jsonl");
    std::fs::write(
        &path,
        format!("{header}\n{}\n", good_job()) + &format!("{job}\n"),
    )
    .unwrap();
    path
}

fn write_scenario(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("scenario.json");
    std::fs::write(&path, body).unwrap();
    path
}

/// Runs a replay that must fail with exit code 2, mention every `needle`, and write nothing.
fn assert_rejected(dir: &Path, scenario: &Path, extra: &[&str], needles: &[&str]) {
    let out = dir.join("out");
    let mut args = vec!["replay", path_str(scenario), "--out", path_str(&out)];
    args.extend_from_slice(extra);
    let o = dlsim(&args);
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "exit code 2 expected; stderr: {err}"
    );
    assert!(!err.contains("panicked"), "no panic: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one message: {err}");
    for n in needles {
        assert!(err.contains(n), "message should mention `{n}`: {err}");
    }
    assert!(
        !out.exists(),
        "no output folder may be created on bad input"
    );
}

fn scenario_with_trace(dir: &Path) -> PathBuf {
    write_scenario(
        dir,
        &format!("{{\n  \"trace\": \"trace.jsonl\",\n  \"cluster\": {CLUSTER}\n}}\n"),
    )
}

#[test]
fn missing_field_in_trace_names_line_and_field() {
    let dir = scratch("bad-missing-field");
    let mut job = good_job();
    job["id"] = 2.into();
    job.as_object_mut().unwrap().remove("steps");
    write_trace(&dir, &job);
    let s = scenario_with_trace(&dir);
    assert_rejected(&dir, &s, &[], &["trace.jsonl:3", "steps", "missing field"]);
}

#[test]
fn wrong_type_names_line_and_field() {
    let dir = scratch("bad-wrong-type");
    let mut job = good_job();
    job["id"] = 2.into();
    job["workers"] = "many".into();
    write_trace(&dir, &job);
    let s = scenario_with_trace(&dir);
    assert_rejected(&dir, &s, &[], &["trace.jsonl:3", "field `workers`"]);
}

#[test]
fn negative_cpu_is_rejected() {
    let dir = scratch("bad-negative-cpu");
    let mut job = good_job();
    job["id"] = 2.into();
    job["ps_cpu"] = (-4.0).into();
    write_trace(&dir, &job);
    let s = scenario_with_trace(&dir);
    assert_rejected(
        &dir,
        &s,
        &[],
        &["trace.jsonl:3", "field `ps_cpu`", "got -4"],
    );
}

#[test]
fn negative_node_cores_in_scenario_is_rejected() {
    let dir = scratch("bad-negative-node");
    write_trace(&dir, &tiny_job());
    let s = write_scenario(
        &dir,
        "{\n  \"trace\": \"trace.jsonl\",\n  \"cluster\": {\n    \"groups\": [ { \"count\": 2,\n      \"cores\": -8, \"mem_gb\": 64 } ]\n  }\n}\n",
    );
    assert_rejected(
        &dir,
        &s,
        &[],
        &["scenario.json:5", "cluster.groups[0].cores"],
    );
}

#[test]
fn a_managed_share_outside_zero_to_one_is_rejected() {
    let dir = scratch("bad-managed-share");
    write_trace(&dir, &tiny_job());
    let s = write_scenario(
        &dir,
        &format!("{{\n  \"trace\": \"trace.jsonl\",\n  \"cluster\": {CLUSTER},\n  \"managed_share\": 1.5\n}}\n"),
    );
    assert_rejected(
        &dir,
        &s,
        &[],
        &["scenario.json:4", "managed_share", "[0, 1]"],
    );
}

#[test]
fn pod_larger_than_any_node_is_rejected() {
    let dir = scratch("bad-too-large");
    let mut job = good_job();
    job["id"] = 2.into();
    job["worker_cpu"] = 64.0.into();
    write_trace(&dir, &job);
    let s = scenario_with_trace(&dir);
    assert_rejected(
        &dir,
        &s,
        &[],
        &[
            "trace.jsonl:3",
            "field `worker_cpu`",
            "larger than any node",
        ],
    );
}

#[test]
fn unknown_policy_in_scenario_names_the_line() {
    let dir = scratch("bad-policy-scenario");
    write_trace(&dir, &tiny_job());
    let s = write_scenario(&dir, &format!("{{\n  \"trace\": \"trace.jsonl\",\n  \"policy\": \"magic\",\n  \"cluster\": {CLUSTER}\n}}\n"));
    assert_rejected(
        &dir,
        &s,
        &[],
        &[
            "scenario.json:3",
            "field `policy`",
            "unknown policy `magic`",
        ],
    );
}

#[test]
fn unknown_policy_on_the_command_line() {
    let dir = scratch("bad-policy-cli");
    let s = repo().join("scenarios/quickstart.json");
    assert_rejected(
        &dir,
        &s,
        &["--policy", "dlrover-rm-typo"],
        &["--policy", "unknown policy"],
    );
    assert_rejected(
        &dir,
        &s,
        &["--policy", "static[rho=1]"],
        &["--policy", "no parameter `rho`"],
    );
}

#[test]
fn unknown_file_is_rejected() {
    let dir = scratch("bad-unknown-file");
    assert_rejected(
        &dir,
        &dir.join("nope.json"),
        &[],
        &["nope.json", "cannot read"],
    );
    let s = write_scenario(
        &dir,
        &format!("{{ \"trace\": \"missing.jsonl\", \"cluster\": {CLUSTER} }}"),
    );
    assert_rejected(
        &dir,
        &s,
        &[],
        &[
            "scenario.json",
            "field `trace`",
            "missing.jsonl",
            "does not exist",
        ],
    );
}

#[test]
fn malformed_json_names_the_line() {
    let dir = scratch("bad-json");
    let s = write_scenario(
        &dir,
        "{\n  \"trace\": \"t.jsonl\",\n  \"cluster\": { \"groups\": [ ,] }\n}\n",
    );
    assert_rejected(&dir, &s, &[], &["scenario.json:3"]);
    let s = write_scenario(
        &dir,
        &format!("{{\n  \"trace\": \"t.jsonl\", \"clustr\": {CLUSTER}\n}}\n"),
    );
    assert_rejected(
        &dir,
        &s,
        &[],
        &["scenario.json:2", "unknown field `clustr`"],
    );
}

#[test]
fn malformed_calibration_file_is_rejected() {
    let dir = scratch("bad-calibration");
    write_trace(&dir, &tiny_job());
    std::fs::write(dir.join("cal.json"), r#"{"format":"dlsim-calibration","version":1,"kinds":{"wide_deep":{"a_grad":-1,"b_grad":0,"a_upd":0,"b_upd":0,"a_sync":0,"b_sync":0,"a_emb":0,"b_emb":0}}}"#).unwrap();
    let s = write_scenario(&dir, &format!("{{\n  \"trace\": \"trace.jsonl\",\n  \"truth\": {{ \"calibration\": \"cal.json\" }},\n  \"cluster\": {CLUSTER}\n}}\n"));
    assert_rejected(&dir, &s, &[], &["cal.json", "kinds.wide_deep", ">= 0"]);
}

#[test]
fn a_seed_override_that_generates_an_unplaceable_job_is_rejected() {
    // Seed 5 of this generated workload has no GPU job and loads; seed 2 draws one on a
    // cluster without GPUs, so `--seed 2` must fail like a scenario file with seed 2.
    let dir = scratch("bad-seed-override");
    let scenario = write_scenario(
        &dir,
        r#"{ "seed": 5, "generate": { "days": 0.05, "jobs_per_day": 200, "gpu_job_fraction": 0.2 },
  "cluster": { "groups": [ { "count": 4, "cores": 64, "mem_gb": 256 } ] } }"#,
    );
    assert_rejected(
        &dir,
        &scenario,
        &["--seed", "2"],
        &["scenario.json:1", "worker_gpu", "--seed 2"],
    );
}
