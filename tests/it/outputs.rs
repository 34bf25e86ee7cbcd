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
