//! `dlsim reproduce`: every paper manifest loads with its scenarios, a row reproduces from
//! its own command, the result is the same on any thread count, a committed reproduction
//! catches a value that leaves its band, and a bad manifest is one readable error.

use crate::support::*;
use dlsim_reproduce::{manifest::PAPERS, Options, Report};

fn read_report(dir: &std::path::Path) -> Report {
    serde_json::from_slice(&std::fs::read(dir.join("reproduce.json")).unwrap()).unwrap()
}

#[test]
fn every_paper_manifest_and_scenario_loads() {
    let opts = Options {
        root: repo().join("scenarios/paper"),
        papers: PAPERS.iter().map(|s| s.to_string()).collect(),
        quick: false,
        rows: Default::default(),
    };
    let papers = dlsim_reproduce::load(&opts).expect("manifests load");
    dlsim_reproduce::validate(&papers, &opts).expect("every scenario and arm loads");
    let quick = Options {
        quick: true,
        ..opts
    };
    dlsim_reproduce::validate(&papers, &quick).expect("every quick scenario loads");
    let rows: usize = papers
        .iter()
        .flat_map(|p| &p.file.experiments)
        .map(|e| e.rows.len())
        .sum();
    assert!(rows >= 70, "{rows} rows");
}

#[test]
fn a_row_reproduces_from_its_command_on_any_thread_count() {
    // Table 1's optimise stage is the calibration's anchor: it must stay within 25%.
    let row = "t1-wd-optimise-steps";
    let mut reports = Vec::new();
    for threads in ["1", "2"] {
        let out = scratch(&format!("reproduce-row-{threads}"));
        let o = dlsim(&[
            "reproduce",
            "--paper",
            "dlrover",
            "--row",
            row,
            "--threads",
            threads,
            "--out",
            path_str(&out),
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains("published numbers with a row"));
        for f in [
            "reproduce.md",
            "reproduce.html",
            // The experiment's throughput over time, as the paper's Fig. 10 draws it.
            "dlrover-table1-wd-optimise-steps.svg",
            "dlrover-table1-wd-optimise-steps.png",
        ] {
            assert!(out.join(f).is_file(), "{f}");
        }
        reports.push(std::fs::read(out.join("reproduce.json")).unwrap());
        let r = read_report(&out);
        let x = r
            .rows
            .iter()
            .find(|x| x.id == row)
            .expect("the row is there");
        let v = x.ours.expect("computed");
        assert!(x.within_25, "{row}: {v} vs paper {}", x.paper_value);
        assert!(x.command.contains(&format!("--row {row}")));
        // Only the experiment holding the row ran: its three rows, no other paper's.
        assert_eq!(
            r.rows.len(),
            3,
            "{:?}",
            r.rows.iter().map(|x| &x.id).collect::<Vec<_>>()
        );
    }
    assert_eq!(reports[0], reports[1], "identical on 1 and 2 threads");
}

#[test]
fn check_fails_when_a_value_leaves_its_committed_band() {
    let out = scratch("reproduce-check");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "reproduce",
            "--paper",
            "dlrover",
            "--row",
            "t1-xdfm-optimise-steps",
            "--quick",
            "--quiet",
            "--out",
            path_str(&out),
        ];
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let run = |extra: &[&str]| {
        let a = args(extra);
        dlsim(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    assert!(run(&[]).status.success());
    let committed = scratch("reproduce-check-committed").join("reproduce.json");
    std::fs::create_dir_all(committed.parent().unwrap()).unwrap();
    std::fs::copy(out.join("reproduce.json"), &committed).unwrap();
    let o = run(&["--check", path_str(&committed)]);
    assert!(o.status.success(), "same run passes: {}", stderr(&o));
    // Doctor the committed value: the same run now sits far outside its band.
    let mut r = read_report(&out);
    for x in &mut r.rows {
        x.ours = x.ours.map(|v| v * 3.0);
        x.ci95 = Some(0.0);
    }
    std::fs::write(&committed, serde_json::to_string(&r).unwrap()).unwrap();
    let o = run(&["--check", path_str(&committed)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("left its band"), "{}", stderr(&o));
}

#[test]
fn a_bad_manifest_is_one_error_naming_file_and_field() {
    let dir = scratch("reproduce-bad");
    let kale = dir.join("kale");
    std::fs::create_dir_all(&kale).unwrap();
    std::fs::copy(
        repo().join("scenarios/paper/kale/kale-table3.json"),
        kale.join("kale-table3.json"),
    )
    .unwrap();
    let text = std::fs::read_to_string(repo().join("scenarios/paper/kale/paper.json")).unwrap();
    std::fs::write(
        kale.join("paper.json"),
        text.replacen(
            "\"metric\": \"summary.violation_rate\"",
            "\"metric\": \"jobs.max(x)\"",
            1,
        ),
    )
    .unwrap();
    let out = scratch("reproduce-bad-out").join("r");
    let o = dlsim(&[
        "reproduce",
        "--paper",
        "kale",
        "--papers-dir",
        path_str(&dir),
        "--out",
        path_str(&out),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("paper.json") && e.contains("metric"), "{e}");
    assert!(!out.exists(), "nothing written");
    let o = dlsim(&["reproduce", "--paper", "nope", "--out", path_str(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown paper"));
}
