//! Importing public traces from the command line: import a fixture slice, replay it with
//! `static`, inspect it with plots, and get exit code 2 naming the line on a bad row.

use crate::support::*;

fn fixture(name: &str) -> String {
    format!("tests/fixtures/importers/{name}")
}

#[test]
fn imported_openb_slice_replays_with_static() {
    let dir = scratch("import-openb");
    let trace = dir.join("openb.jsonl");
    let nodes = dir.join("nodes.csv");
    let o = dlsim(&[
        "trace",
        "import",
        "--format",
        "openb",
        &fixture("openb_pods.csv"),
        "--nodes",
        &fixture("openb_nodes.csv"),
        "--out",
        path_str(&trace),
        "--cluster-out",
        path_str(&nodes),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report = stdout(&o);
    for needle in [
        "rows read          164",
        "pending: never scheduled",
        "142 jobs, 142 pods",
    ] {
        assert!(
            report.contains(needle),
            "report lacks `{needle}`:\n{report}"
        );
    }
    let scenario = dir.join("scenario.json");
    std::fs::write(
        &scenario,
        r#"{"name":"import-openb","trace":"openb.jsonl","cluster":{"node_list":"nodes.csv"},"policy":"static"}"#,
    )
    .unwrap();
    let out = dir.join("run");
    let o = dlsim(&[
        "replay",
        path_str(&scenario),
        "--policy",
        "static",
        "--quiet",
        "--out",
        path_str(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["jobs_submitted"], 142);
    let done =
        summary["jobs_completed"].as_u64().unwrap() + summary["jobs_failed"].as_u64().unwrap();
    assert_eq!(done, 142, "every imported job is accounted for");
}

#[test]
fn inspect_prints_statistics_and_writes_plots() {
    let dir = scratch("import-inspect");
    let trace = dir.join("swf.jsonl");
    let o = dlsim(&[
        "trace",
        "import",
        "--format",
        "swf",
        &fixture("nasa-ipsc-200.swf.gz"),
        "--out",
        path_str(&trace),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let prefix = dir.join("plots").join("swf");
    let o = dlsim(&[
        "trace",
        "inspect",
        path_str(&trace),
        "--plot-out",
        path_str(&prefix),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for needle in [
        "200 jobs",
        "real duration (s)",
        "arrivals by hour",
        "outcome mix",
        "unknown",
    ] {
        assert!(text.contains(needle), "inspect lacks `{needle}`:\n{text}");
    }
    for chart in ["arrivals", "sizes", "size-duration"] {
        for ext in ["png", "svg"] {
            let p = dir.join("plots").join(format!("swf-{chart}.{ext}"));
            assert!(
                std::fs::metadata(&p)
                    .map(|m| m.len() > 1_000)
                    .unwrap_or(false),
                "{p:?}"
            );
        }
    }
}

#[test]
fn bad_row_exits_2_naming_line_and_skip_bad_counts_it() {
    let dir = scratch("import-bad");
    let src = std::fs::read_to_string(repo().join(fixture("philly.csv"))).unwrap();
    let bad: String = src
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 4 {
                "2017-10-09 07:01:55,66.0,two,66.0,11cb48\n".to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let input = dir.join("philly.csv");
    std::fs::write(&input, bad).unwrap();
    let out = dir.join("out.jsonl");
    let args = [
        "trace",
        "import",
        "--format",
        "philly",
        path_str(&input),
        "--out",
        path_str(&out),
    ];
    let o = dlsim(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("philly.csv:5: field `num_gpus`"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "nothing written on bad input");
    let mut skip = args.to_vec();
    skip.push("--skip-bad");
    let o = dlsim(&skip);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("1  num_gpus: not a number"),
        "{}",
        stdout(&o)
    );
    let o = dlsim(&[
        "trace",
        "import",
        "--format",
        "nope",
        path_str(&input),
        "--out",
        path_str(&out),
    ]);
    assert_eq!(o.status.code(), Some(2));
}
