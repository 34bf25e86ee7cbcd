//! The command line as a new user meets it: help, the quickstart replay and its files.

use crate::support::*;

#[test]
fn every_command_has_help() {
    for args in [
        vec!["--help"],
        vec!["replay", "--help"],
        vec!["trace", "--help"],
        vec!["trace", "gen", "--help"],
        vec!["reproduce", "--help"],
        vec!["sensitivity", "--help"],
    ] {
        let o = dlsim(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).contains("Usage"), "{args:?} prints usage");
    }
}

#[test]
fn quickstart_writes_summary_jobs_and_timeline() {
    let out = scratch("cli-quickstart");
    let o = dlsim(&[
        "replay",
        "scenarios/quickstart.json",
        "--out",
        path_str(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("JCT median"), "prints a summary table");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    for key in [
        "jobs_submitted",
        "jobs_completed",
        "jobs_failed",
        "jcr",
        "jct_mean_s",
        "jct_median_s",
        "jct_p90_s",
        "cpu_util_mean",
        "mem_util_mean",
        "gpu_util_mean",
        "pooled_cpu_util",
        "pooled_mem_util",
        "pooled_worker_cpu_util",
        "pooled_ps_cpu_util",
        "pooled_worker_mem_util",
        "pooled_ps_mem_util",
        "makespan_s",
        "events",
    ] {
        assert!(summary.get(key).is_some(), "summary.json lacks {key}");
    }
    for key in ["pooled_worker_cpu_util", "pooled_ps_mem_util"] {
        let u = summary[key].as_f64().unwrap();
        assert!(
            u > 0.0 && u < 1.0,
            "{key} = {u}: a share of what was allocated"
        );
    }
    assert!(stdout(&o).contains("pooled CPU util worker / PS"));
    let submitted = summary["jobs_submitted"].as_u64().unwrap();
    let done =
        summary["jobs_completed"].as_u64().unwrap() + summary["jobs_failed"].as_u64().unwrap();
    assert_eq!(submitted, done, "every job is accounted for");
    assert!(
        submitted > 1_500,
        "the bundled trace is about a day of jobs"
    );
    let jobs = std::fs::read_to_string(out.join("jobs.csv")).unwrap();
    assert_eq!(jobs.lines().count() as u64, submitted + 1);
    let timeline = std::fs::read_to_string(out.join("timeline.csv")).unwrap();
    assert!(
        timeline.lines().count() > 288,
        "at least a day of 5-minute samples"
    );
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    assert!(run["events_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn quickstart_reproduces_the_papers_motivating_picture() {
    // DLRover Sec. 2: users over-provision, so most jobs use under half of what they hold,
    // while at the daily peak new jobs still wait for resources.
    let out = scratch("cli-motivation");
    let o = dlsim(&[
        "replay",
        "scenarios/quickstart.json",
        "--quiet",
        "--out",
        path_str(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let jobs = std::fs::read_to_string(out.join("jobs.csv")).unwrap();
    let mut header = jobs.lines().next().unwrap().split(',');
    let col = |name: &str| {
        jobs.lines()
            .next()
            .unwrap()
            .split(',')
            .position(|c| c == name)
            .unwrap()
    };
    let (cpu, mem, submit, start) = (
        col("cpu_util"),
        col("mem_util"),
        col("submit_s"),
        col("start_s"),
    );
    assert!(header.any(|c| c == "jct_s"));
    let rows: Vec<Vec<&str>> = jobs
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let under_half = rows
        .iter()
        .filter(|r| {
            !r[cpu].is_empty()
                && r[cpu].parse::<f64>().unwrap() < 0.5
                && r[mem].parse::<f64>().unwrap() < 0.5
        })
        .count();
    assert!(
        under_half as f64 > 0.6 * rows.len() as f64,
        "most jobs use under half their CPU and memory: {under_half}/{}",
        rows.len()
    );
    let waited = |lo: u64, hi: u64| {
        let w: Vec<f64> = rows
            .iter()
            .filter(|r| !r[start].is_empty())
            .filter(|r| (lo..hi).contains(&(r[submit].parse::<u64>().unwrap() / 3600)))
            .map(|r| r[start].parse::<f64>().unwrap() - r[submit].parse::<f64>().unwrap())
            .collect();
        w.iter().sum::<f64>() / w.len() as f64
    };
    assert!(
        waited(16, 20) > 3.0 * waited(0, 8),
        "peak-hour jobs queue: {} s vs {} s at night",
        waited(16, 20),
        waited(0, 8)
    );
}

#[test]
fn trace_gen_writes_a_readable_trace() {
    let dir = scratch("cli-gen");
    let path = dir.join("t.jsonl");
    let o = dlsim(&[
        "trace",
        "gen",
        "--days",
        "0.1",
        "--seed",
        "5",
        "--out",
        path_str(&path),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let trace = dlsim_traces::read_trace(&path).unwrap();
    assert!(!trace.jobs.is_empty());
    assert_eq!(trace.header.format, "dlsim-trace");
}

/// `replay --policy a,b[..]` on a batch scenario: every spec is validated before any run,
/// each run lands in its own cleanly named folder under `--out`, and each folder holds what
/// a replay under that policy alone writes.
#[test]
fn replay_of_a_policy_list_writes_one_folder_per_policy() {
    let scenario = repo().join("scenarios/quickstart.json");
    let s = path_str(&scenario);
    let dir = scratch("replay-list");
    let out = dir.join("both");
    let o = dlsim(&[
        "replay",
        s,
        "--policy",
        "static,dlrover[rho=2.5]",
        "--out",
        path_str(&out),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (folder, spec) in [
        ("static", "static"),
        ("dlrover-rho-2.5", "dlrover[rho=2.5]"),
    ] {
        let alone = dir.join(format!("alone-{folder}"));
        let o = dlsim(&[
            "replay",
            s,
            "--policy",
            spec,
            "--out",
            path_str(&alone),
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        for f in ["summary.json", "jobs.csv", "timeline.csv"] {
            let a = std::fs::read(out.join(folder).join(f)).unwrap();
            let b = std::fs::read(alone.join(f)).unwrap();
            assert!(a == b, "{folder}/{f} differs from a replay of {spec} alone");
        }
    }
    // A bad spec anywhere in the list: exit 2 before any run, nothing written.
    let bad = dir.join("bad");
    let o = dlsim(&[
        "replay",
        s,
        "--policy",
        "static,nope",
        "--out",
        path_str(&bad),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nope"), "{}", stderr(&o));
    assert!(!bad.exists(), "nothing written");
    // The same policy twice would write one folder twice: refused the same way.
    let o = dlsim(&[
        "replay",
        s,
        "--policy",
        "static,static",
        "--out",
        path_str(&bad),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("listed twice"), "{}", stderr(&o));
    assert!(!bad.exists(), "nothing written");
}

/// A run without a horizon whose jobs can never start (here co-located services hold 90% of
/// the only node for ever, and the job needs 8 of its 10 cores; no pod failures) ends at
/// its time limit with the job still active; the replay says so on stderr, names the
/// pending timeout that would fail such jobs and the services holding the node (swarm seed
/// 13056596 stalled so, eight jobs holding parts of the cluster).
#[test]
fn a_run_that_stalls_until_the_time_limit_says_why() {
    let dir = scratch("stall");
    let job = r#"{"id":0,"submit_s":0,"user":"u","model":"wide_deep","batch_size":512,"steps":1000,"dense_mb":20,"emb_dim":16,"emb_mb_initial":10,"emb_mb_per_msample":0,"workers":1,"ps":1,"worker_cpu":4,"worker_mem_mb":4096,"ps_cpu":4,"ps_mem_mb":4096,"worker_gpu":0,"priority":0}"#;
    std::fs::write(
        dir.join("trace.jsonl"),
        format!("{{\"format\":\"dlsim-trace\",\"version\":1}}\n{job}\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("stall.json"),
        r#"{"name": "stall", "seed": 1, "trace": "trace.jsonl", "policy": "static",
            "cluster": {"groups": [{"name": "cpu", "count": 1, "cores": 10, "mem_gb": 64}]},
            "timeline_interval_s": 86400,
            "faults": {"pod_failure_per_day": 0, "colocation": {"node_fraction": 1.0,
                "trough": 0.9, "peak": 0.9, "noise_sigma": 0.0, "update_interval_s": 86400}}}"#,
    )
    .unwrap();
    let replay = |scenario: &str, out: &str| {
        let o = dlsim(&[
            "replay",
            path_str(&dir.join(scenario)),
            "--out",
            path_str(&dir.join(out)),
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    let err = replay("stall.json", "out");
    assert!(
        err.contains("1 job(s) never finished") && err.contains("recovery.pending_timeout_s"),
        "{err}"
    );
    // The services that hold the node are named as the other cause.
    assert!(
        err.contains("faults.colocation") && err.contains("about 90% of 100% of the nodes"),
        "{err}"
    );
    // With a pending timeout the job fails as a scheduling failure and nothing is said.
    let mut s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("stall.json")).unwrap()).unwrap();
    s["recovery"] = serde_json::json!({"pending_timeout_s": 600});
    std::fs::write(dir.join("timeout.json"), s.to_string()).unwrap();
    let err = replay("timeout.json", "out2");
    assert!(!err.contains("never finished"), "{err}");
}
