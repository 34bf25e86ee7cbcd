//! An error names the line of the offending value itself, found by its full JSON path
//! (`dlsim_traces::locate`), not the first line that mentions its key (issue #21): in
//! each case below the key, or its text, occurs earlier in the file than the bad value.

use crate::support::*;
use std::path::Path;

/// Runs `args`, which must fail with exit 2 naming `file:line` and `field`.
fn assert_at(args: &[&str], file: &Path, line: usize, field: &str) {
    let o = dlsim(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "exit 2 expected: {err}");
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(
        err.contains(&format!("{name}:{line}: field `{field}`")),
        "expected `{name}:{line}: field `{field}``: {err}"
    );
}

/// The line (1-based) of the first line of `text` containing `needle` after `after`.
fn line_of(text: &str, needle: &str, after: usize) -> usize {
    text.lines()
        .enumerate()
        .skip(after)
        .find(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .unwrap_or_else(|| panic!("`{needle}` not in the text"))
}

fn scenario(dir: &Path, cluster: &str, extra: &str) -> std::path::PathBuf {
    let trace = repo().join("traces/antgroup-sample.jsonl");
    let text = format!(
        "{{\n  \"name\": \"count\",\n  \"seed\": 1,\n  \"trace\": \"{}\",\n  \"cluster\": {cluster}{extra}\n}}\n",
        trace.display()
    );
    let path = dir.join("scenario.json");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_scenario_error_names_the_line_of_the_nested_value() {
    let dir = scratch("loc-scenario");
    let cluster = "{\n    \"groups\": [\n      { \"count\": 4, \"cores\": 32, \"mem_gb\": 192 },\n      { \"cores\": 8,\n        \"mem_gb\": 64,\n        \"count\": 0 }\n    ]\n  }";
    let path = scenario(&dir, cluster, "");
    let text = std::fs::read_to_string(&path).unwrap();
    let line = line_of(&text, "\"count\": 0", 0);
    let out = dir.join("out");
    let args = ["replay", path_str(&path), "--out", path_str(&out)];
    assert_at(&args, &path, line, "cluster.groups[1].count");
    assert!(!out.exists());
}

#[test]
fn a_bad_truth_parameter_names_its_kind_not_the_first_kind() {
    let dir = scratch("loc-truth");
    let cluster = r#"{ "groups": [ { "count": 4, "cores": 32, "mem_gb": 192 } ] }"#;
    let p = r#""a_grad": 1e-6, "b_grad": 1e-4, "a_upd": 1e-6, "b_upd": 1e-4, "a_sync": 1e-6, "b_sync": 1e-5, "a_emb": 1e-7, "b_emb": 1e-4"#;
    let bad = p.replace("\"a_grad\": 1e-6", "\"a_grad\": -1");
    let extra = format!(",\n  \"truth\": {{ \"params\": {{\n    \"wide_deep\": {{ {p} }},\n    \"dcn\": {{\n {bad} }}\n  }} }}");
    let path = scenario(&dir, cluster, &extra);
    let text = std::fs::read_to_string(&path).unwrap();
    let line = line_of(&text, "\"a_grad\": -1", 0);
    let out = dir.join("out");
    let args = ["replay", path_str(&path), "--out", path_str(&out)];
    assert_at(&args, &path, line, "truth.params.dcn.a_grad");
}

#[test]
fn a_calibration_error_names_the_line_of_the_kind_at_fault() {
    let dir = scratch("loc-calibration");
    let p = "\"a_grad\": 1e-6, \"b_grad\": 1e-4, \"a_upd\": 1e-6, \"b_upd\": 1e-4, \"a_sync\": 1e-6, \"b_sync\": 1e-5, \"a_emb\": 1e-7, \"b_emb\": 1e-4";
    let bad = p.replace("\"b_emb\": 1e-4", "\"b_emb\": -1");
    let cal = format!(
        "{{\n  \"format\": \"dlsim-calibration\",\n  \"version\": 2,\n  \"kinds\": {{\n    \"wide_deep\": {{ {p} }},\n    \"dcn\": {{\n      {bad}\n    }}\n  }}\n}}\n"
    );
    let cal_path = dir.join("cal.json");
    std::fs::write(&cal_path, &cal).unwrap();
    let cluster = r#"{ "groups": [ { "count": 4, "cores": 32, "mem_gb": 192 } ] }"#;
    let extra = ",\n  \"truth\": { \"calibration\": \"cal.json\" }";
    let path = scenario(&dir, cluster, extra);
    let line = line_of(&cal, "\"b_emb\": -1", 0);
    let out = dir.join("out");
    let args = ["replay", path_str(&path), "--out", path_str(&out)];
    assert_at(&args, &cal_path, line, "kinds.dcn.b_emb");
}

#[test]
fn a_sweep_error_names_the_line_of_the_parameter_or_policy() {
    let dir = scratch("loc-sweep");
    let scenario = repo().join("scenarios/quickstart.json");
    let write = |name: &str, body: &str| {
        let text = format!(
            "{{\n  \"name\": \"scenario_params\",\n  \"scenario\": \"{}\",\n{body}\n}}\n",
            scenario.display()
        );
        let path = dir.join(name);
        std::fs::write(&path, &text).unwrap();
        (path, text)
    };
    let out = dir.join("out");
    let (path, text) = write(
        "empty.json",
        "  \"policies\": [\"static\"],\n  \"scenario_params\": {\n    \"faults.pod_failure_per_day\": [0.0],\n    \"recovery.reload_s\": []\n  }",
    );
    let line = line_of(&text, "reload_s", 0);
    let args = ["sweep", path_str(&path), "--out", path_str(&out)];
    assert_at(&args, &path, line, "scenario_params.recovery.reload_s");

    let (path, text) = write(
        "policy.json",
        "  \"policies\": [\n    \"static\",\n    \"static[nope=1]\"\n  ]",
    );
    let line = line_of(&text, "nope", 0);
    let args = ["sweep", path_str(&path), "--out", path_str(&out)];
    assert_at(&args, &path, line, "policies[1]");
    assert!(!out.exists());
}

#[test]
fn a_baseline_error_names_the_line_of_the_metric_at_fault() {
    let dir = scratch("loc-baseline");
    let text = "{\n  \"format\": \"dlsim-baseline\",\n  \"version\": 1,\n  \"tolerances\": {\n    \"jct_mean_s\": { \"worse\": \"higher\", \"rel\": 0.02 },\n    \"jcr\": {\n      \"worse\": \"lower\",\n      \"rel\": -0.5\n    }\n  },\n  \"runs\": {}\n}\n";
    let path = dir.join("baseline.json");
    std::fs::write(&path, text).unwrap();
    let line = line_of(text, "-0.5", 0);
    let run = repo().join("scenarios");
    let args = ["check", path_str(&run), "--baseline", path_str(&path)];
    assert_at(&args, &path, line, "tolerances.jcr.rel");
}

#[test]
fn an_online_error_names_the_line_of_the_value_not_an_earlier_mention() {
    let dir = scratch("loc-online");
    let text = std::fs::read_to_string(repo().join("scenarios/online-7d.json")).unwrap();
    // The name mentions the key first; the bad value sits in `traffic`, further down.
    let text = text
        .replace("\"name\": \"online-7d\"", "\"name\": \"noise_sigma\"")
        .replace("\"noise_sigma\": 0.03", "\"noise_sigma\": -1");
    let path = dir.join("online.json");
    std::fs::write(&path, &text).unwrap();
    let line = line_of(&text, "\"noise_sigma\": -1", 0);
    assert!(line > line_of(&text, "\"noise_sigma\"", 0));
    let out = dir.join("out");
    let args = ["replay", path_str(&path), "--out", path_str(&out)];
    assert_at(&args, &path, line, "traffic.noise_sigma");
    assert!(!out.exists());
}
