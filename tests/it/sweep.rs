//! Sweeps and checks: byte-identical results on 1 or 2 threads, resume, shard + merge equal
//! to the full sweep, and `dlsim check` passing on the blessed run and failing on an
//! injected regression. Tiny generated scenarios (a few dozen jobs) keep each test short.

use crate::support::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A generated scenario of about 25 jobs on 32 nodes, and a 2-seed x 2-fault-rate sweep.
pub fn tiny_sweep(dir: &Path, policies: &str) -> PathBuf {
    std::fs::write(
        dir.join("tiny.json"),
        r#"{
  "name": "tiny",
  "generate": { "days": 0.05, "jobs_per_day": 800 },
  "cluster": { "groups": [ { "name": "cpu", "count": 30, "cores": 64, "mem_gb": 256 },
                           { "name": "gpu", "count": 2, "cores": 96, "mem_gb": 512, "gpus": 8 } ] }
}"#,
    )
    .unwrap();
    let sweep = dir.join("sweep.json");
    std::fs::write(
        &sweep,
        format!(
            r#"{{
  "name": "tiny",
  "scenario": "tiny.json",
  "seeds": 2,
  "policies": {policies},
  "scenario_params": {{ "faults.pod_failure_per_day": [0.0, 0.5] }}
}}"#
        ),
    )
    .unwrap();
    sweep
}

/// Every file under `dir`, by relative path, with its bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn assert_same_tree(a: &Path, b: &Path) {
    let (ta, tb) = (tree(a), tree(b));
    assert_eq!(
        ta.keys().collect::<Vec<_>>(),
        tb.keys().collect::<Vec<_>>(),
        "same files"
    );
    for (name, bytes) in &ta {
        assert!(tb[name] == *bytes, "{name} differs between {a:?} and {b:?}");
    }
}

fn sweep(args: &[&str]) {
    let mut all = vec!["sweep"];
    all.extend_from_slice(args);
    all.push("--quiet");
    let o = dlsim(&all);
    assert!(o.status.success(), "{all:?}: {}", stderr(&o));
}

#[test]
fn sweep_is_byte_identical_on_one_and_two_threads_and_resumes() {
    let dir = scratch("sweep-threads");
    let file = tiny_sweep(&dir, r#"["static"]"#);
    let (one, two) = (dir.join("one"), dir.join("two"));
    sweep(&[path_str(&file), "--out", path_str(&one), "--threads", "1"]);
    sweep(&[path_str(&file), "--out", path_str(&two), "--threads", "2"]);
    assert_same_tree(&one, &two);
    let files = tree(&one);
    assert_eq!(
        files.keys().filter(|k| k.ends_with("summary.json")).count(),
        4,
        "2 seeds x 2 fault rates"
    );
    // Every job of every run in one file, for notebooks (same bytes on 1 and 2 threads).
    assert!(files.contains_key("jobs.parquet"));
    for table in ["results", "ablation"] {
        assert!(files.contains_key(&format!("{table}.csv")), "{table}.csv");
        assert!(
            files.contains_key(&format!("{table}.parquet")),
            "{table}.parquet"
        );
    }
    let ablation = String::from_utf8(files["ablation.md"].clone()).unwrap();
    assert!(
        ablation.contains("faults.pod_failure_per_day=0.5"),
        "{ablation}"
    );

    // Resume: nothing is re-run, and the outputs do not change.
    let o = dlsim(&["sweep", path_str(&file), "--out", path_str(&one)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("0 runs in"), "{}", stdout(&o));
    assert_same_tree(&one, &two);
}

#[test]
fn shards_merged_equal_the_full_sweep() {
    let dir = scratch("sweep-shards");
    let file = tiny_sweep(&dir, r#"["static"]"#);
    let full = dir.join("full");
    sweep(&[path_str(&file), "--out", path_str(&full), "--threads", "2"]);
    let shards: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("shard-{i}"))).collect();
    for (i, s) in shards.iter().enumerate() {
        let spec = format!("{i}/3");
        sweep(&[
            path_str(&file),
            "--out",
            path_str(s),
            "--shard",
            &spec,
            "--threads",
            "1",
        ]);
    }
    // A merge with a shard missing names what is missing and fails.
    let o = dlsim(&[
        "merge",
        path_str(&shards[0]),
        "--out",
        path_str(&dir.join("partial")),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("not finished"), "{}", stderr(&o));
    let merged = dir.join("merged");
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(|s| path_str(s)));
    args.extend(["--out", path_str(&merged)]);
    let o = dlsim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_same_tree(&full, &merged);
}

#[test]
fn bad_sweep_file_names_file_and_field() {
    let dir = scratch("sweep-bad");
    let file = tiny_sweep(&dir, r#"["static[nope=1]"]"#);
    let o = dlsim(&["sweep", path_str(&file), "--out", path_str(&dir.join("o"))]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("sweep.json") && err.contains("policies"),
        "{err}"
    );
    assert!(!dir.join("o").exists(), "nothing written on bad input");
}

#[test]
fn check_passes_on_the_blessed_run_and_fails_on_a_regression() {
    let dir = scratch("check");
    tiny_sweep(&dir, r#"["static"]"#);
    let run = dir.join("run");
    let o = dlsim(&[
        "replay",
        path_str(&dir.join("tiny.json")),
        "--out",
        path_str(&run),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let baseline = dir.join("baselines").join("tiny.json");
    let check = |extra: &[&str]| {
        let mut args = vec!["check", path_str(&run), "--baseline", path_str(&baseline)];
        args.extend_from_slice(extra);
        dlsim(&args)
    };
    let o = check(&[]);
    assert_eq!(o.status.code(), Some(2), "no baseline yet is bad input");
    assert!(stderr(&o).contains("--bless"), "{}", stderr(&o));
    assert!(check(&["--bless"]).status.success());
    let o = check(&[]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("| static | jct_median_s |"),
        "{}",
        stdout(&o)
    );

    // Inject a regression: a 50% slower median JCT.
    let path = run.join("summary.json");
    let mut summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let jct = summary["jct_median_s"].as_f64().unwrap();
    summary["jct_median_s"] = serde_json::json!(jct * 1.5);
    std::fs::write(&path, serde_json::to_string_pretty(&summary).unwrap()).unwrap();
    let o = check(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("REGRESSED"), "{}", stdout(&o));

    // A check that compares no metric fails (issue #19): here the tolerances of every
    // blessed metric are gone from the file, so nothing would be compared.
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&baseline).unwrap()).unwrap();
    file["tolerances"] = serde_json::json!({"some_other_metric": {"worse": "higher", "rel": 0.1}});
    std::fs::write(&baseline, serde_json::to_string_pretty(&file).unwrap()).unwrap();
    let o = check(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("`static` compared no metric"),
        "{}",
        stderr(&o)
    );
    // And nothing is blessed from a run without any of the baseline's metrics.
    let before = std::fs::read(&baseline).unwrap();
    let o = check(&["--bless"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing blessed"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&baseline).unwrap(),
        before,
        "the file is untouched"
    );
}

/// A sweep is checked per policy (and scenario parameters) on its scenario, pooled over
/// its seeds, against pooled golden values; a single-run baseline does not cover it.
#[test]
fn check_of_a_sweep_pools_each_policy_over_its_seeds() {
    let dir = scratch("check-sweep");
    let file = tiny_sweep(&dir, r#"["static"]"#);
    let out = dir.join("out");
    sweep(&[path_str(&file), "--out", path_str(&out)]);
    let baseline = dir.join("pooled.json");
    let check = |extra: &[&str]| {
        let mut args = vec!["check", path_str(&out), "--baseline", path_str(&baseline)];
        args.extend_from_slice(extra);
        dlsim(&args)
    };
    let o = check(&["--bless"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&baseline).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    let pooled = file["pooled"]["tiny"]
        .as_object()
        .expect("keyed by scenario");
    assert_eq!(pooled.len(), 2, "one entry per fault rate: {text}");
    for entry in pooled.values() {
        assert_eq!(entry["seeds"].as_array().unwrap().len(), 2);
    }
    let o = check(&[]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("(tiny, 2 seeds) | jct_median_s |"),
        "{}",
        stdout(&o)
    );

    // One seed's median JCT doubles: the pooled value regresses.
    let run = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    let path = run.join("summary.json");
    let mut summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let jct = summary["jct_median_s"].as_f64().unwrap();
    summary["jct_median_s"] = serde_json::json!(jct * 2.0);
    std::fs::write(&path, serde_json::to_string_pretty(&summary).unwrap()).unwrap();
    let o = check(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("REGRESSED"), "{}", stdout(&o));

    // A baseline of single runs has nothing pooled for the sweep: it says so, by name.
    let mut single: serde_json::Value = file.clone();
    single.as_object_mut().unwrap().remove("pooled");
    std::fs::write(&baseline, single.to_string()).unwrap();
    let o = check(&[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no baseline for `static @ faults.pod_failure_per_day="),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).contains("2 run(s) without a baseline"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn sweep_merge_and_check_have_help() {
    for cmd in ["sweep", "merge", "check"] {
        let o = dlsim(&[cmd, "--help"]);
        assert!(o.status.success(), "{cmd}: {}", stderr(&o));
        assert!(stdout(&o).contains("Usage"), "{cmd} prints usage");
    }
}

/// `sweep --dry-run` lists the runs a sweep would do (the ids of the folders it writes) and
/// writes nothing; after the sweep, the same command shows them done.
#[test]
fn dry_run_lists_the_runs_and_writes_nothing() {
    let dir = scratch("sweep-dry-run");
    let file = tiny_sweep(&dir, r#"["static", "es"]"#);
    let out = dir.join("out");
    let dry = |extra: &[&str]| {
        let mut args = vec!["sweep", path_str(&file), "--dry-run"];
        args.extend_from_slice(extra);
        let o = dlsim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let listed = dry(&["--out", path_str(&out)]);
    assert!(!out.exists(), "a dry run writes nothing");
    let rows: Vec<Vec<&str>> = listed
        .lines()
        .skip(2)
        .map(|l| l.split('\t').collect())
        .collect();
    assert_eq!(
        rows.len(),
        8,
        "2 policies x 2 fault rates x 2 seeds:\n{listed}"
    );
    assert!(
        rows.iter().all(|r| r.len() == 5 && r[4] == "todo"),
        "{listed}"
    );
    assert!(rows
        .iter()
        .any(|r| r[1] == "es" && r[2] == "faults.pod_failure_per_day=0.5"));
    assert_eq!(
        dry(&[]),
        listed.replace(&format!(" in {}", path_str(&out)), "")
    );

    sweep(&[path_str(&file), "--out", path_str(&out)]);
    let mut ids: Vec<String> = rows.iter().map(|r| r[0].to_string()).collect();
    let mut written: Vec<String> = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    written.sort();
    assert_eq!(ids, written, "the ids listed are the run folders written");
    let again = dry(&["--out", path_str(&out)]);
    assert!(again.contains("8 already done"), "{again}");
    assert!(
        again.lines().skip(2).all(|l| l.ends_with("\tdone")),
        "{again}"
    );
}
