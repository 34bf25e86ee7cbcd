//! Outputs appear whole and only where they may (issue #21): a run folder is renamed into
//! place complete; `--out` onto a device, a FIFO or a folder holding other files is
//! refused with exit 2 and nothing written; endless inputs and trailing content after a
//! JSON document are errors naming file and line.

use crate::support::*;
use std::path::Path;

/// The one-line exit-2 error of `args`, which must mention every needle.
fn refused(args: &[&str], needles: &[&str]) -> String {
    let o = dlsim(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "exit 2 expected: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one message: {err}");
    for n in needles {
        assert!(err.contains(n), "message should mention `{n}`: {err}");
    }
    err
}

fn quickstart_with(dir: &Path, tail: &str) -> String {
    let text = std::fs::read_to_string(repo().join("scenarios/faults-none.json")).unwrap();
    let trace = repo().join("traces/antgroup-sample.jsonl");
    let text = text.replace("../traces/antgroup-sample.jsonl", path_str(&trace));
    let path = dir.join("scenario.json");
    std::fs::write(&path, text.trim_end().to_string() + tail).unwrap();
    path_str(&path).to_string()
}

#[test]
fn a_replay_folder_appears_whole_and_a_rerun_replaces_it_whole() {
    let dir = scratch("outputs-whole");
    let out = dir.join("run");
    let scenario = "scenarios/faults-none.json";
    for extra in [&["--trace-observations"][..], &[]] {
        let mut args = vec!["replay", scenario, "--quiet", "--out", path_str(&out)];
        args.extend_from_slice(extra);
        let o = dlsim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    // The second run wrote no observations.csv, and the first one's is gone with its folder.
    assert_eq!(
        names,
        ["jobs.csv", "run.json", "summary.json", "timeline.csv"]
    );
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 1, "no staging folder left beside the run");
}

#[test]
fn out_onto_a_device_a_fifo_or_a_foreign_folder_is_refused_and_left_alone() {
    let dir = scratch("outputs-special");
    let scenario = "scenarios/faults-none.json";
    refused(
        &["replay", scenario, "--quiet", "--out", "/dev/null"],
        &["--out", "/dev/null is a device", "refusing"],
    );
    assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        refused(
            &["replay", scenario, "--quiet", "--out", path_str(&fifo)],
            &["is a FIFO", "refusing"],
        );
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }
    let mine = dir.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "keep me").unwrap();
    refused(
        &["replay", scenario, "--quiet", "--out", path_str(&mine)],
        &["notes.txt", "refusing to replace the folder"],
    );
    assert_eq!(
        std::fs::read_dir(&mine).unwrap().count(),
        1,
        "nothing written"
    );
    // A trace import onto a folder is refused too, and leaves no temporary file.
    let trace_out = dir.join("imported");
    std::fs::create_dir_all(&trace_out).unwrap();
    let o = dlsim(&[
        "trace",
        "import",
        "--format",
        "philly",
        "tests/fixtures/importers/philly.csv",
        "--out",
        path_str(&trace_out),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("a folder"), "{}", stderr(&o));
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn endless_input_is_a_clear_error_not_an_abort() {
    refused(
        &["replay", "/dev/zero", "--quiet"],
        &["/dev/zero", "input limit"],
    );
    let dir = scratch("outputs-endless-trace");
    let scenario = dir.join("s.json");
    std::fs::write(
        &scenario,
        r#"{"trace": "/dev/zero", "cluster": {"groups": [{"count": 1, "cores": 8, "mem_gb": 32}]}}"#,
    )
    .unwrap();
    refused(
        &["replay", path_str(&scenario), "--quiet"],
        &["/dev/zero", "limit"],
    );
}

#[test]
fn trailing_content_after_a_json_document_names_file_and_line() {
    let dir = scratch("outputs-trailing");
    let s = quickstart_with(&dir, "\n}garbage\n");
    let lines = std::fs::read_to_string(&s).unwrap().lines().count();
    refused(
        &["replay", &s, "--quiet", "--out", path_str(&dir.join("o"))],
        &[&format!("scenario.json:{}", lines), "trailing content"],
    );
    let s = quickstart_with(&dir, "\n{\"seed\": 2}\n");
    refused(
        &["replay", &s, "--quiet", "--out", path_str(&dir.join("o"))],
        &["scenario.json:", "trailing content"],
    );
    assert!(!dir.join("o").exists());
    // A trace line holding two job objects.
    let src = std::fs::read_to_string(repo().join("traces/antgroup-sample.jsonl")).unwrap();
    let mut lines = src.lines();
    let (header, job) = (lines.next().unwrap(), lines.next().unwrap());
    let trace = dir.join("two.jsonl");
    std::fs::write(&trace, format!("{header}\n{job}{job}\n")).unwrap();
    refused(
        &["trace", "inspect", path_str(&trace)],
        &["two.jsonl:2", "trailing content"],
    );
}

/// The names in `dir` (none when it is missing), sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn merge_report_and_sweep_failures_leave_nothing_behind() {
    let dir = scratch("outputs-merge");
    let file = crate::sweep::tiny_sweep(&dir, r#"["static"]"#);
    let shard = dir.join("shard-0");
    let o = dlsim(&[
        "sweep",
        path_str(&file),
        "--out",
        path_str(&shard),
        "--shard",
        "0/2",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let merged = dir.join("merged");
    // Missing shards: the runs of shard 1/2 are nowhere.
    refused(
        &["merge", path_str(&shard), "--out", path_str(&merged)],
        &["not finished in any of the shards"],
    );
    assert!(!merged.exists());
    // Mixed shards: a shard of another sweep (another seed list).
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let plan = std::fs::read_to_string(shard.join("sweep.json")).unwrap();
    let seed = plan.split("\"seed\": ").nth(1).unwrap();
    let seed: String = seed.chars().take_while(char::is_ascii_digit).collect();
    let changed = plan.replacen(&format!("\"seed\": {seed}"), "\"seed\": 424242", 1);
    assert_ne!(plan, changed);
    std::fs::write(other.join("sweep.json"), changed).unwrap();
    let before = names_in(&dir);
    refused(
        &[
            "merge",
            path_str(&shard),
            path_str(&other),
            "--out",
            path_str(&merged),
        ],
        &["hold different sweeps"],
    );
    // An --out that is not a folder.
    refused(
        &["merge", path_str(&shard), "--out", "/dev/null"],
        &["/dev/null"],
    );
    assert_eq!(names_in(&dir), before, "merge wrote nothing");

    // A report over a run whose jobs.csv lacks its columns fails whole, with exit 2.
    let runs = shard.join("runs");
    let run = runs.join(&names_in(&runs)[0]);
    let broken = dir.join("broken-run");
    std::fs::create_dir_all(&broken).unwrap();
    for name in names_in(&run) {
        std::fs::copy(run.join(&name), broken.join(&name)).unwrap();
    }
    std::fs::write(broken.join("jobs.csv"), "a,b\n1,2\n").unwrap();
    let before = names_in(&dir);
    let report = dir.join("report");
    refused(
        &[
            "report",
            path_str(&broken),
            "--out",
            path_str(&report),
            "--quiet",
        ],
        &[],
    );
    refused(
        &["report", path_str(&run), "--out", "/dev/null", "--quiet"],
        &["/dev/null"],
    );
    assert_eq!(
        names_in(&dir),
        before,
        "report wrote nothing, left no staging folder"
    );
    // A report folder holding a file a report does not write is refused, kept.
    std::fs::create_dir_all(&report).unwrap();
    std::fs::write(report.join("notes.txt"), "keep me").unwrap();
    refused(
        &[
            "report",
            path_str(&run),
            "--out",
            path_str(&report),
            "--quiet",
        ],
        &["notes.txt", "refusing to replace the folder"],
    );
    assert_eq!(names_in(&report), ["notes.txt"]);
    // An earlier report is replaced whole.
    let again = dir.join("again");
    for _ in 0..2 {
        let args = [
            "report",
            path_str(&run),
            "--out",
            path_str(&again),
            "--quiet",
        ];
        let o = dlsim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert!(again.join("report.html").is_file());
    assert!(
        names_in(&dir).iter().all(|n| !n.starts_with('.')),
        "no staging left"
    );

    // A sweep whose scenario_params name what the sweep sets itself is refused up front.
    for key in ["seed", "policy"] {
        let text = std::fs::read_to_string(&file).unwrap().replace(
            "\"faults.pod_failure_per_day\"",
            &format!("\"{key}\": [1], \"faults.pod_failure_per_day\""),
        );
        let bad = dir.join(format!("sweep-{key}.json"));
        std::fs::write(&bad, text).unwrap();
        let out = dir.join(format!("out-{key}"));
        refused(
            &["sweep", path_str(&bad), "--out", path_str(&out)],
            &[&format!("scenario_params.{key}"), "per run"],
        );
        assert!(!out.exists());
    }
    refused(
        &["sweep", path_str(&file), "--out", "/dev/null"],
        &["--out", "/dev/null"],
    );
}

#[test]
fn reproduce_calibrate_and_inspect_refuse_targets_that_are_not_theirs() {
    let dir = scratch("outputs-reproduce");
    let file = dir.join("file");
    std::fs::write(&file, "keep").unwrap();
    refused(
        &["reproduce", "--quick", "--quiet", "--out", path_str(&file)],
        &["--out", "not a folder"],
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
    // A calibration (minutes) checks its --out before it starts.
    refused(
        &["calibrate", "--quick", "--quiet", "--out", path_str(&dir)],
        &["--out", "a folder"],
    );
    // trace inspect --plot-out: one of its figure files is a folder.
    std::fs::create_dir_all(dir.join("fig-sizes.svg")).unwrap();
    refused(
        &[
            "trace",
            "inspect",
            "traces/antgroup-sample.jsonl",
            "--quiet",
            "--plot-out",
            path_str(&dir.join("fig")),
        ],
        &["--plot-out", "fig-sizes.svg", "a folder"],
    );
    assert_eq!(
        names_in(&dir),
        ["fig-sizes.svg", "file"],
        "no figure written"
    );
}
