//! Every input that once panicked, hung, ran out of memory or poisoned a result (issue #21)
//! is refused on load: exit 2, one line naming the file, the field and the value, and
//! nothing written. One row per trigger of the issue.

use crate::support::*;
use serde_json::{json, Value};
use std::path::Path;

/// A small batch scenario with a three-job trace, both written into `dir`.
fn batch_files(dir: &Path, scenario: &[(&str, Value)], job: &[(&str, Value)]) {
    let mut jobs: Vec<Value> = std::fs::read_to_string(repo().join("traces/antgroup-sample.jsonl"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        // CPU jobs only: the test's cluster has no GPUs.
        .filter(|j| j["worker_gpu"].as_u64().unwrap_or(0) == 0)
        .take(3)
        .collect();
    for (k, v) in job {
        jobs[2][*k] = v.clone();
    }
    let header = r#"{"format":"dlsim-trace","version":1}"#;
    let body: String = jobs.iter().map(|j| format!("{j}\n")).collect();
    std::fs::write(dir.join("t.jsonl"), format!("{header}\n{body}")).unwrap();
    let mut s = json!({
        "trace": "t.jsonl",
        "cluster": { "groups": [ { "count": 8, "cores": 64, "mem_gb": 256 } ] }
    });
    for (k, v) in scenario {
        if v.is_null() {
            s.as_object_mut().unwrap().remove(*k);
        } else {
            dlsim_model::scenario::set_dotted(&mut s, k, v.clone());
        }
    }
    std::fs::write(
        dir.join("s.json"),
        serde_json::to_string_pretty(&s).unwrap(),
    )
    .unwrap();
}

fn online_file(dir: &Path, key: &str, v: Value) {
    let text = std::fs::read_to_string(repo().join("scenarios/online-7d.json")).unwrap();
    let mut s: Value = serde_json::from_str(&text).unwrap();
    dlsim_model::scenario::set_dotted(&mut s, key, v);
    std::fs::write(
        dir.join("s.json"),
        serde_json::to_string_pretty(&s).unwrap(),
    )
    .unwrap();
}

/// Runs `args` (with `{dir}` replaced) and requires exit 2, one line, each needle, no
/// panic and no `out` folder.
fn refused(name: &str, dir: &Path, args: &[&str], needles: &[&str]) {
    let d = path_str(dir);
    let args: Vec<String> = args.iter().map(|a| a.replace("{dir}", d)).collect();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = dlsim(&argv);
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{name}: exit 2 expected; stderr: {err}"
    );
    assert!(!err.contains("panicked"), "{name}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{name}: one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{name}: should mention `{n}`: {err}");
    }
    assert!(!dir.join("out").exists(), "{name}: nothing written");
}

/// Dotted scenario keys and their values (`null` removes a top-level key).
type Settings = Vec<(&'static str, Value)>;

const REPLAY: &[&str] = &["replay", "{dir}/s.json", "--out", "{dir}/out"];

#[test]
fn scenario_settings_out_of_range_are_refused_on_load() {
    let params = |a_grad: f64, b: f64| {
        json!({"a_grad": a_grad, "b_grad": b, "a_upd": 0.1, "b_upd": b, "a_sync": 0.1,
               "b_sync": b, "a_emb": 0.1, "b_emb": b})
    };
    #[rustfmt::skip]
    let cases: Vec<(&str, Settings, &str)> = vec![
        ("start-base", vec![("pods.start_base_s", json!(1e19))], "pods.start_base_s"),
        ("ckpt-cost", vec![("recovery.checkpoint_cost_s", json!(1e19))], "recovery.checkpoint_cost_s"),
        ("ckpt-stall", vec![("recovery.checkpoint_cost_s", json!(86_400)), ("recovery.checkpoint_interval_s", json!(60))], "recovery.checkpoint_cost_s"),
        ("reload", vec![("recovery.reload_s", json!(1e19))], "recovery.reload_s"),
        ("repair", vec![("faults.node_repair_h", json!(1e19))], "faults.node_repair_h"),
        ("sigma", vec![("truth.job_variation_sigma", json!(1e9))], "truth.job_variation_sigma"),
        ("bandwidth", vec![("truth.bandwidth_mb_s", json!(1e-320))], "truth.bandwidth_mb_s"),
        ("mtbf", vec![("faults.node_mtbf_days", json!(1e308))], "faults.node_mtbf_days"),
        ("ckpt-interval", vec![("recovery.checkpoint_interval_s", json!(1e-320))], "recovery.checkpoint_interval_s"),
        ("a-grad", vec![("truth.params.dcn", params(-1.0, 0.1))], "truth.params.dcn.a_grad"),
        ("no-intercept", vec![("truth.params.dcn", params(0.1, 0.0))], "truth.params.dcn.b_grad"),
        ("history", vec![("observation.history_len", json!(0))], "observation.history_len"),
        ("incident-hold", vec![("observation.incident_hold_s", json!(-1))], "observation.incident_hold_s"),
        ("runtime-cores", vec![("truth.worker_runtime_cores", json!(1e9))], "truth.worker_runtime_cores"),
        ("lookup-threads", vec![("truth.ps_lookup_threads", json!(0))], "truth.ps_lookup_threads"),
        ("count", vec![("cluster.groups", json!([{"count": 100_000_000, "cores": 64, "mem_gb": 256}]))], "count"),
        ("cores", vec![("cluster.groups", json!([{"count": 2, "cores": 1e19, "mem_gb": 256}]))], "cores"),
        ("horizon", vec![("horizon_s", json!(1e17 as u64))], "horizon_s"),
        ("flash", vec![("elasticity.flash_mb_s", json!(1e-9))], "elasticity.flash_mb_s"),
        ("jobs-per-day", vec![("trace", Value::Null), ("generate", json!({"jobs_per_day": 1e12}))], "generate.jobs_per_day"),
        ("mean-steps", vec![("trace", Value::Null), ("generate", json!({"mean_steps": -5}))], "generate.mean_steps"),
        ("gen-total", vec![("trace", Value::Null), ("generate", json!({"days": 3000, "jobs_per_day": 1e6}))], "generate.jobs_per_day"),
    ];
    for (name, sets, field) in cases {
        let dir = scratch(&format!("limits-scenario-{name}"));
        batch_files(&dir, &sets, &[]);
        refused(name, &dir, REPLAY, &["s.json", field]);
    }
}

#[test]
fn trace_records_out_of_range_are_refused_with_their_line() {
    #[rustfmt::skip]
    let cases: Vec<(&str, &str, Value)> = vec![
        ("worker-cpu", "worker_cpu", json!(1e-9)),
        ("submit", "submit_s", json!(10_000_000_000u64)),
        ("workers", "workers", json!(1_000_000_000)),
        ("ps", "ps", json!(4_294_967_295u64)),
        ("steps", "steps", json!(1_000_000_000_000_000u64)),
        ("dense", "dense_mb", json!(1e308)),
        ("emb", "emb_mb_per_msample", json!(1e300)),
    ];
    for (name, field, v) in cases {
        let dir = scratch(&format!("limits-trace-{name}"));
        batch_files(&dir, &[], &[(field, v)]);
        refused(name, &dir, REPLAY, &["t.jsonl:4", field]);
    }
    // An arrival past the run's limit (1e6 timeline intervals) fails on load, not after
    // gigabytes of timeline.
    let dir = scratch("limits-trace-late");
    batch_files(
        &dir,
        &[("timeline_interval_s", json!(1))],
        &[("submit_s", json!(5_000_000))],
    );
    refused(
        "late",
        &dir,
        REPLAY,
        &["t.jsonl:4", "submit_s", "run limit"],
    );
}

#[test]
fn a_policy_whose_pods_no_node_holds_is_refused_before_the_run() {
    // The test cluster's nodes have 64 cores: every launch of these would be rejected.
    let dir = scratch("limits-policy-pods");
    batch_files(&dir, &[], &[]);
    for (spec, key) in [
        ("es[worker_cpu=65]", "worker_cpu=65"),
        ("optimus[ps_cpu=100]", "ps_cpu=100"),
        ("static,es[ps_cpu=80]", "ps_cpu=80"),
    ] {
        let mut args = REPLAY.to_vec();
        args.extend(["--policy", spec]);
        refused(
            spec,
            &dir,
            &args,
            &["--policy", key, "larger than any node", "64 cores"],
        );
    }
    // The same in a sweep, before any point runs.
    let sweep = json!({
        "name": "pods", "scenario": "s.json", "seeds": 1,
        "policies": ["static", "es"], "policy_params": {"es": {"worker_cpu": [8, 96]}},
        "baseline": "static"
    });
    std::fs::write(dir.join("w.json"), sweep.to_string()).unwrap();
    refused(
        "sweep",
        &dir,
        &["sweep", "{dir}/w.json", "--out", "{dir}/out"],
        &[
            "w.json",
            "policies",
            "worker_cpu=96",
            "larger than any node",
        ],
    );
    // A pod that fits runs.
    let o = dlsim(&[
        "replay",
        &format!("{}/s.json", path_str(&dir)),
        "--policy",
        "es[worker_cpu=64]",
        "--out",
        &format!("{}/ok", path_str(&dir)),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn policy_parameters_are_bounded() {
    let dir = scratch("limits-policy");
    batch_files(&dir, &[], &[]);
    for spec in [
        "well-tuned[budget=4294967296]",
        "well-tuned[budget=20000]",
        "dlrover[interval_s=1e300]",
    ] {
        let mut args = REPLAY.to_vec();
        args.extend(["--policy", spec]);
        refused(spec, &dir, &args, &["--policy"]);
    }
}

#[test]
fn online_settings_out_of_range_are_refused_on_load() {
    #[rustfmt::skip]
    let cases: Vec<(&str, &str, Value)> = vec![
        ("model-load", "rescale.model_load_s", json!(1e19)),
        ("image-pull", "rescale.image_pull_s", json!(1e9)),
        ("wp-ratio", "job.wp_ratio", json!(0.01)),
        ("bursts", "traffic.bursts_per_day", json!(1e9)),
        ("peak", "traffic.peak_sps", json!(1e308)),
        ("gpus", "cluster.gpus_per_node", json!(4_000_000_000u64)),

    ];
    for (name, key, v) in cases {
        let dir = scratch(&format!("limits-online-{name}"));
        online_file(&dir, key, v);
        refused(name, &dir, REPLAY, &["s.json", key]);
    }
    // Cross-field: 8 CPU nodes hold 64 PS pods, times wp_ratio 0.1 = 6 workers, fewer
    // than the 8 the job starts with (the swarm saw 14 workers on a 13-worker cluster).
    let dir = scratch("limits-online-initial");
    online_file(&dir, "job.wp_ratio", json!(0.1));
    refused(
        "initial",
        &dir,
        REPLAY,
        &["s.json", "job.initial_workers", "[1, 6]"],
    );
}

#[test]
fn imports_refuse_numbers_that_would_break_the_replay() {
    let fx = repo().join("tests/fixtures/importers");
    let head = |f: &str, n: usize| -> String {
        let text = std::fs::read_to_string(fx.join(f)).unwrap();
        text.lines().take(n).map(|l| format!("{l}\n")).collect()
    };
    let nodes_openb = fx.join("openb_nodes.csv");
    let nodes_pai = fx.join("pai_machine_spec.csv");
    #[rustfmt::skip]
    let cases: Vec<(&str, String, &str, Option<&Path>, &str)> = vec![
        ("openb", head("openb_pods.csv", 1) + "p,8000,30517,0,0,,BE,Running,100,1e20,100\n", "openb", Some(&nodes_openb), "deletion_time"),
        ("pai2020", head("pai_task_table.csv", 2) + "z,worker,8,Terminated,1590000010.0,1e20,600,29.3,,\n", "pai2020", Some(&nodes_pai), "end_time"),
        ("philly", head("philly.csv", 2) + "2017-10-09 07:01:55,1e20,1,66.0,11cb48\n", "philly", None, "duration"),
        ("philly-year", head("philly.csv", 2) + "999999999999999999-10-09 07:01:55,66.0,1,66.0,11cb48\n", "philly", None, "timestamp"),
        ("philly-long", head("philly.csv", 2) + "2017-10-09 07:01:55,1e11,1,66.0,11cb48\n", "philly", None, "observed.duration_s"),
        ("dlrm2025", head("dlrm2025.csv", 2) + "i9,CN,app_9,1e20,64,0,0,1,1,330.0,330.0,240.0,300.0,-1,,,\n", "dlrm2025", None, "cpu_request"),
        ("dlrm2025-cores", head("dlrm2025.csv", 2) + "i9,CN,app_9,1e9,64,0,0,1,1,330.0,330.0,240.0,300.0,-1,,,\n", "dlrm2025", None, "worker_cpu"),
    ];
    for (name, text, format, nodes, field) in cases {
        let dir = scratch(&format!("limits-import-{name}"));
        let input = dir.join("in.csv");
        std::fs::write(&input, text).unwrap();
        let mut args = vec![
            "trace",
            "import",
            "--format",
            format,
            path_str(&input),
            "--out",
            "{dir}/out",
        ];
        if let Some(n) = nodes {
            args.extend(["--nodes", path_str(n)]);
        }
        refused(name, &dir, &args, &["in.csv:", field]);
    }
}

#[test]
fn sweeps_are_bounded_and_validate_every_run_first() {
    let dir = scratch("limits-sweep");
    batch_files(&dir, &[], &[]);
    let write = |v: Value| std::fs::write(dir.join("sweep.json"), v.to_string()).unwrap();
    let sweep = &["sweep", "{dir}/sweep.json", "--out", "{dir}/out", "--quiet"];
    write(json!({"scenario": "s.json", "seeds": 1_000_000_000u64, "policies": ["static"]}));
    refused("seeds", &dir, sweep, &["sweep.json", "seeds"]);
    let params = json!({"observation.history_len": [64, 0]});
    write(json!({"scenario": "s.json", "policies": ["static"], "scenario_params": params}));
    refused(
        "history",
        &dir,
        sweep,
        &["s.json", "observation.history_len"],
    );
    let big: Vec<u32> = (0..1_001).collect();
    let params = json!({"pods.start_base_s": big, "timeline_interval_s": big});
    write(
        json!({"scenario": "s.json", "policies": ["static"], "seeds": 2, "scenario_params": params}),
    );
    refused("grid", &dir, sweep, &["sweep.json", "runs, over the limit"]);
}

#[test]
fn check_refuses_bad_tolerances_and_anonymous_summaries() {
    let dir = scratch("limits-check");
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    let summary = json!({"scenario": "q", "seed": 1, "policy": "static", "jcr": 1.0});
    std::fs::write(run.join("summary.json"), summary.to_string()).unwrap();
    let base = |tol: Value| {
        json!({"format": "dlsim-baseline", "version": 1, "tolerances": {"jcr": tol},
               "runs": {"static": {"scenario": "q", "seed": 1, "metrics": {"jcr": 1.0}}}})
    };
    let check = &["check", "{dir}/run", "--baseline", "{dir}/base.json"];
    for tol in [
        json!({"worse": "lower", "abs": -0.1, "rel": 0.0}),
        json!({"worse": "lower", "abs": 0.0, "rel": 1e308}),
    ] {
        std::fs::write(
            dir.join("base.json"),
            serde_json::to_string_pretty(&base(tol)).unwrap(),
        )
        .unwrap();
        refused("tolerance", &dir, check, &["base.json", "tolerances.jcr"]);
    }
    let good = json!({"worse": "lower", "abs": 0.0, "rel": 0.0});
    std::fs::write(dir.join("base.json"), base(good).to_string()).unwrap();
    assert_eq!(
        dlsim(&[
            "check",
            path_str(&run),
            "--baseline",
            path_str(&dir.join("base.json"))
        ])
        .status
        .code(),
        Some(0)
    );
    for key in ["scenario", "seed"] {
        let mut s = summary.clone();
        s.as_object_mut().unwrap().remove(key);
        std::fs::write(run.join("summary.json"), s.to_string()).unwrap();
        refused(key, &dir, check, &["summary.json", key]);
    }
}

/// An importer's source without line breaks (`/dev/zero`) is refused at the line limit,
/// not read until memory runs out: job traces and rate series alike.
#[test]
fn endless_import_input_is_refused() {
    for format in ["philly", "openb", "qps"] {
        let dir = scratch(&format!("limits-endless-{format}"));
        let args = [
            "trace",
            "import",
            "--format",
            format,
            "/dev/zero",
            "--out",
            "{dir}/out",
        ];
        refused(format, &dir, &args, &["/dev/zero:1"]);
    }
}
