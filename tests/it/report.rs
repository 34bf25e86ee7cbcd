//! `dlsim report` on a two-policy run set writes every table (CSV and Parquet), every
//! figure (PNG, SVG and PDF), `report.md` with deltas against the baseline, and a
//! self-contained `report.html`.
//!
//! The second policy is the first one's run relabelled with a longer JCT for every job,
//! so the test does not depend on which policies exist or how well they do.

use crate::support::*;
use std::path::Path;

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

#[test]
fn two_policy_report_has_every_table_and_figure() {
    let dir = scratch("report");
    crate::sweep::tiny_sweep(&dir, r#"["static"]"#);
    let (a, b) = (dir.join("static"), dir.join("slower"));
    for out in [&a, &b] {
        let o = dlsim(&[
            "replay",
            path_str(&dir.join("tiny.json")),
            "--out",
            path_str(out),
            "--quiet",
            // The throughput figure draws what the profiler saw.
            "--trace-observations",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
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
    crate::sweep::tiny_sweep(&dir, r#"["static"]"#);
    let (a, b) = (dir.join("a"), dir.join("b"));
    for out in [&a, &b] {
        let o = dlsim(&[
            "replay",
            path_str(&dir.join("tiny.json")),
            "--out",
            path_str(out),
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
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
