//! `dlsim report` on a two-policy run set writes every table (CSV and Parquet), every
//! figure (PNG, SVG and PDF), `report.md` with deltas against the baseline, and a
//! self-contained `report.html`.
//!
//! The second policy is the first one's run relabelled with a longer JCT for every job,
//! so the test does not depend on which policies exist or how well they do.
//!
//! Runs with online jobs get an online section (Table 3 layout, lag over time, workers vs
//! load, violation minutes): an online-only report (two days, `tests/golden/online-2d.json`)
//! has it without the batch tables and figures, a mixed report has both, and a batch-only
//! report has none.

use crate::support::*;
use std::path::{Path, PathBuf};

/// Relabels the run in `dir` as `policy` and makes every completed job 50% slower.
pub(crate) fn relabel_slower(dir: &Path, policy: &str) {
    let path = dir.join("summary.json");
    let mut summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    summary["policy"] = serde_json::json!(policy);
    std::fs::write(&path, serde_json::to_string_pretty(&summary).unwrap()).unwrap();
    let jobs = std::fs::read_to_string(dir.join("jobs.csv")).unwrap();
    let mut lines = jobs.lines();
    let header = lines.next().unwrap();
    let jct = header.split(',').position(|c| c == "jct_s").unwrap();
    let mut out = format!("{header}\n");
    for line in lines {
        let mut cells: Vec<String> = line.split(',').map(str::to_string).collect();
        if let Ok(x) = cells[jct].parse::<f64>() {
            cells[jct] = format!("{:.4}", x * 1.5);
        }
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    std::fs::write(dir.join("jobs.csv"), out).unwrap();
}

/// Two replays of the tiny sweep's scenario into `dir/<names[0]>` and `dir/<names[1]>`
/// (with the profiler's observations when `observations`): the setup of the report tests.
pub(crate) fn two_tiny_runs(dir: &Path, names: [&str; 2], observations: bool) -> [PathBuf; 2] {
    crate::sweep::tiny_sweep(dir, r#"["static"]"#);
    let tiny = dir.join("tiny.json");
    names.map(|name| {
        let out = dir.join(name);
        let mut args = vec![
            "replay",
            path_str(&tiny),
            "--out",
            path_str(&out),
            "--quiet",
        ];
        if observations {
            args.push("--trace-observations");
        }
        let o = dlsim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        out
    })
}

#[test]
fn two_policy_report_has_every_table_and_figure() {
    let dir = scratch("report");
    // The throughput figure draws what the profiler saw.
    let [a, b] = two_tiny_runs(&dir, ["static", "slower"], true);
    relabel_slower(&b, "slower");
    let out = dir.join("report");
    let o = dlsim(&[
        "report",
        path_str(&a),
        path_str(&b),
        "--baseline",
        "static",
        "--out",
        path_str(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("+50% median JCT"), "{}", stdout(&o));
    for table in ["summary", "deltas", "failures"] {
        for ext in ["csv", "parquet"] {
            let f = out.join(format!("{table}.{ext}"));
            assert!(std::fs::metadata(&f).unwrap().len() > 20, "{f:?}");
        }
    }
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    // The names of `results.parquet`, units last; labels only in report.md.
    assert!(
        summary.starts_with("policy,runs,jobs_submitted,jobs_completed,jobs_failed,jcr,jct_mean_s,jct_median_s,jct_p90_s,"),
        "{summary}"
    );
    let deltas = std::fs::read_to_string(out.join("deltas.csv")).unwrap();
    assert!(
        deltas.starts_with(
            "policy,vs,metric,variant_mean,against_mean,delta,ci95_low,ci95_high,delta_pct,seeds\n"
        ),
        "{deltas}"
    );
    let median = deltas
        .lines()
        .find(|l| l.starts_with("slower,static,jct_median_s,"))
        .expect("a median JCT row");
    let pct: f64 = median.split(',').nth(8).unwrap().parse().unwrap();
    assert!((pct - 50.0).abs() < 0.01, "{median}");
    assert_eq!(summary.lines().count(), 3, "a header and two policies");
    let figures = [
        "jct_cdf",
        "utilisation",
        "allocation",
        "throughput",
        "failures",
    ];
    for fig in figures {
        assert!(
            std::fs::metadata(out.join(format!("{fig}.png")))
                .unwrap()
                .len()
                > 1_000
        );
        assert!(std::fs::read_to_string(out.join(format!("{fig}.svg")))
            .unwrap()
            .starts_with("<svg"));
        assert!(std::fs::read(out.join(format!("{fig}.pdf")))
            .unwrap()
            .starts_with(b"%PDF-"));
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("`slower`: +50% median JCT"), "{md}");
    for fig in figures {
        assert!(
            md.contains(&format!("]({fig}.png)")),
            "report.md shows {fig}"
        );
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(
        html.matches("<svg").count(),
        figures.len(),
        "figures inlined"
    );
    assert!(
        !html.contains("src="),
        "nothing outside the file is referenced"
    );
    assert!(html.contains("<table>") && html.ends_with("</html>\n"));
    // Batch only: no online section.
    assert!(!md.contains("## Online jobs") && !html.contains("<h2>Online jobs</h2>"));
    for f in ONLINE_FILES {
        assert!(!out.join(f).exists(), "{f} in a batch-only report");
    }

    // An unknown baseline is refused.
    let o = dlsim(&[
        "report",
        path_str(&a),
        "--baseline",
        "nope",
        "--out",
        path_str(&out),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("nope"), "{}", stderr(&o));
}

/// Runs of two scenarios are not pooled under one policy (issue #19: a quickstart run and
/// an openb run were reported together as "static"): exit 2 naming both scenarios, and no
/// report folder.
#[test]
fn runs_of_different_scenarios_are_not_pooled() {
    let dir = scratch("report-mixed");
    let [a, b] = two_tiny_runs(&dir, ["a", "b"], false);
    let path = b.join("summary.json");
    let mut summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    summary["scenario"] = serde_json::json!("other-scenario");
    std::fs::write(&path, serde_json::to_string_pretty(&summary).unwrap()).unwrap();
    let out = dir.join("report");
    let o = dlsim(&[
        "report",
        path_str(&a),
        path_str(&b),
        "--out",
        path_str(&out),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("2 scenarios") && err.contains("`other-scenario`"),
        "{err}"
    );
    assert!(!out.exists(), "nothing written");
    // Either scenario alone reports.
    let o = dlsim(&["report", path_str(&a), "--out", path_str(&out), "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The online section's tables and figures.
const ONLINE_FILES: [&str; 11] = [
    "table3.csv",
    "table3.parquet",
    "online_lag.png",
    "online_lag.svg",
    "online_lag.pdf",
    "online_workers.png",
    "online_workers.svg",
    "online_workers.pdf",
    "online_violations.png",
    "online_violations.svg",
    "online_violations.pdf",
];

/// `summary.json` of a run folder.
fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

/// `table3.csv` as (policy, job) -> column -> value.
fn table3(out: &Path) -> std::collections::BTreeMap<(String, String), Vec<(String, f64)>> {
    let text = std::fs::read_to_string(out.join("table3.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            let values = header[2..]
                .iter()
                .zip(&cells[2..])
                .map(|(h, c)| (h.to_string(), c.parse::<f64>().unwrap()))
                .collect();
            ((cells[0].to_string(), cells[1].to_string()), values)
        })
        .collect()
}

fn value(row: &[(String, f64)], column: &str) -> f64 {
    row.iter().find(|(c, _)| c == column).unwrap().1
}

fn assert_files(out: &Path, files: &[&str]) {
    for f in files {
        let len = std::fs::metadata(out.join(f))
            .unwrap_or_else(|e| panic!("{f}: {e}"))
            .len();
        assert!(len > 20, "{f}");
    }
}

/// An online-only scenario under two autoscalers and two seeds (two `replay --policy a,b`
/// folders): the Table 3 table pools each policy's seeds with the numbers of the runs'
/// `summary.json`, the three online figures are drawn, and the batch tables and figures,
/// which have no data, are left out with a note.
#[test]
fn online_only_report_has_the_table3_table_and_the_online_figures() {
    let dir = scratch("report-online");
    let scenario = repo().join("tests/golden/online-2d.json");
    let mut folders = Vec::new();
    for seed in ["1", "2"] {
        let out = dir.join(format!("s{seed}"));
        let o = dlsim(&[
            "replay",
            path_str(&scenario),
            "--policy",
            "hpa,kale",
            "--seed",
            seed,
            "--out",
            path_str(&out),
            "-q",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(out.join("table3.md").is_file());
        folders.push(out);
    }
    let out = dir.join("report");
    let o = dlsim(&[
        "report",
        path_str(&folders[0]),
        path_str(&folders[1]),
        "--out",
        path_str(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_files(&out, &ONLINE_FILES);
    let rows = table3(&out);
    assert_eq!(rows.len(), 2, "one job, two policies: {:?}", rows.keys());
    for policy in ["hpa", "kale"] {
        let runs: Vec<serde_json::Value> =
            folders.iter().map(|f| summary(&f.join(policy))).collect();
        let job = runs[0]["online_jobs"][0]["job"]
            .as_str()
            .unwrap()
            .to_string();
        let row = &rows[&(policy.to_string(), job)];
        assert_eq!(value(row, "runs"), 2.0);
        for (column, key, scale) in [
            ("violation_rate", "violation_rate", 100.0),
            ("accumulated_lag", "accumulated_lag_min", 1.0),
            ("downtime", "downtime_min", 1.0),
            ("gpu", "gpu_hours", 1.0),
            ("rescales", "rescales", 1.0),
        ] {
            let seeds: Vec<f64> = runs
                .iter()
                .map(|s| s["online_jobs"][0][key].as_f64().unwrap() * scale)
                .collect();
            let unit = match column {
                "violation_rate" => "_pct",
                "accumulated_lag" | "downtime" => "_min",
                "gpu" => "_hours",
                _ => "",
            };
            let mean = value(row, &format!("{column}{unit}"));
            let (lo, hi) = (
                value(row, &format!("{column}_lo{unit}")),
                value(row, &format!("{column}_hi{unit}")),
            );
            let want = (seeds[0] + seeds[1]) / 2.0;
            assert!(
                (mean - want).abs() <= 1e-9 * want.abs().max(1.0),
                "{policy} {column}: {mean} vs {want}"
            );
            assert_eq!(
                (lo, hi),
                (seeds[0].min(seeds[1]), seeds[0].max(seeds[1])),
                "{policy} {column}"
            );
        }
        // The top-level totals of a one-job run are that job's.
        assert_eq!(
            runs[0]["online_gpu_hours"],
            runs[0]["online_jobs"][0]["gpu_hours"]
        );
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Online jobs"), "{md}");
    assert!(md.contains("layout of Kale's Table 3"), "{md}");
    for fig in ["online_lag", "online_workers", "online_violations"] {
        assert!(
            md.contains(&format!("]({fig}.png)")),
            "report.md shows {fig}"
        );
    }
    // The batch parts have no data: left out, each with a note, not drawn empty.
    for gone in [
        "summary.csv",
        "deltas.csv",
        "failures.csv",
        "jct_cdf.png",
        "throughput.png",
        "failures.png",
    ] {
        assert!(!out.join(gone).exists(), "{gone} in an online-only report");
    }
    assert!(md.contains("No summary, deltas or failures table: the runs have no batch jobs."));
    assert!(!md.contains("Baseline policy"), "no deltas, so no baseline");
    assert!(md.contains("No JCT CDF, throughput or failure figure: the runs have no batch jobs."));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<h2>Online jobs</h2>"));
    let figures = md.matches("](").count() / 3;
    assert_eq!(
        html.matches("<svg").count(),
        figures,
        "every figure inlined"
    );
}

/// The mixed scenario under `static+hpa` and `dlrover+kale` (one `replay --policy a,b`
/// folder): the report has both the batch section and the online section, with a row per
/// policy and online job plus each policy's total.
#[test]
fn mixed_report_has_the_batch_and_the_online_sections() {
    let dir = scratch("report-mixed-scenario");
    let runs = crate::online::mixed_runs();
    let out = dir.join("report");
    let o = dlsim(&["report", path_str(runs), "--out", path_str(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Deltas against the composed spec whose cluster policy is `static`.
    assert!(stdout(&o).contains("vs static+hpa"), "{}", stdout(&o));
    assert_files(
        &out,
        &[
            "summary.csv",
            "deltas.csv",
            "failures.csv",
            "jct_cdf.png",
            "utilisation.png",
            "allocation.png",
            "failures.png",
        ],
    );
    assert_files(&out, &ONLINE_FILES);
    let rows = table3(&out);
    assert_eq!(rows.len(), 2 * 4, "three jobs and a total per policy");
    for policy in ["static+hpa", "dlrover+kale"] {
        let s = summary(&runs.join(policy.replace('+', "-")));
        let total = &rows[&(policy.to_string(), "total".to_string())];
        assert!(
            (value(total, "violation_rate_pct")
                - 100.0 * s["online_violation_rate"].as_f64().unwrap())
            .abs()
                < 1e-9
        );
        assert_eq!(
            value(total, "rescales"),
            s["online_rescales"].as_f64().unwrap()
        );
        for job in s["online_jobs"].as_array().unwrap() {
            let row = &rows[&(policy.to_string(), job["job"].as_str().unwrap().to_string())];
            assert!((value(row, "gpu_hours") - job["gpu_hours"].as_f64().unwrap()).abs() < 1e-9);
        }
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let online = md.find("## Online jobs").expect("an online section");
    assert!(md.find("## JCT, JCR and utilisation").unwrap() < online);
    assert!(md.contains("summed over a run's online jobs"), "{md}");
    assert!(!md.contains("the runs have no batch jobs"), "{md}");
}
