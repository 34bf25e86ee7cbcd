//! Same scenario + seed gives byte-identical outputs; a different seed gives different ones.

use crate::support::*;

const FILES: [&str; 3] = ["summary.json", "jobs.csv", "timeline.csv"];

#[test]
fn quickstart_replay_twice_is_byte_identical() {
    let dir = scratch("determinism");
    let (a, b) = (dir.join("a"), dir.join("b"));
    for out in [&a, &b] {
        let o = dlsim(&[
            "replay",
            "scenarios/quickstart.json",
            "--quiet",
            "--out",
            path_str(out),
        ]);
        assert!(o.status.success(), "replay failed: {}", stderr(&o));
    }
    for f in FILES {
        let x = std::fs::read(a.join(f)).unwrap();
        let y = std::fs::read(b.join(f)).unwrap();
        assert!(!x.is_empty(), "{f} is empty");
        assert!(x == y, "{f} differs between two runs with the same seed");
    }
}

#[test]
fn another_seed_changes_the_run() {
    let dir = scratch("determinism-seed");
    let (a, b) = (dir.join("a"), dir.join("b"));
    for (out, seed) in [(&a, "1"), (&b, "2")] {
        let o = dlsim(&[
            "replay",
            "scenarios/quickstart.json",
            "--quiet",
            "--seed",
            seed,
            "--out",
            path_str(out),
        ]);
        assert!(o.status.success(), "replay failed: {}", stderr(&o));
    }
    let x = std::fs::read(a.join("jobs.csv")).unwrap();
    let y = std::fs::read(b.join("jobs.csv")).unwrap();
    assert_ne!(
        x, y,
        "the seed must reach the hidden truth's per-job variation"
    );
}

/// `dlsim replay`'s progress bar reads the world every 1,024 events: the run it watches is
/// byte-identical to an unwatched one, and the reports move forward.
#[test]
fn watching_progress_does_not_change_the_run() {
    let path = repo().join("scenarios/quickstart.json");
    let scenario = dlsim_model::Scenario::load(&path).unwrap();
    let plain = dlsim_model::run(&scenario, dlsim_policies::build("static").unwrap());
    let mut reports = Vec::new();
    let watched = dlsim_model::run_with_progress(
        &scenario,
        dlsim_policies::build("static").unwrap(),
        &mut |p| reports.push(p),
    );
    assert_eq!(plain.summary_json, watched.summary_json);
    assert!(plain.jobs_csv == watched.jobs_csv && plain.timeline_csv == watched.timeline_csv);
    assert_eq!(reports.len() as u64, plain.summary.events / 1024);
    for w in reports.windows(2) {
        assert!(w[0].now <= w[1].now && w[0].jobs_ended <= w[1].jobs_ended);
        assert_eq!(w[1].events - w[0].events, 1024);
    }
    let last = reports.last().unwrap();
    assert_eq!(last.jobs_total, 1974);
    assert!(last.jobs_ended > 1000 && last.jobs_ended <= last.jobs_total);
}

/// `dlrover` plans the jobs of a tick in parallel (`--threads`, all cores by default): one
/// thread and more threads than this machine has cores give byte-identical runs, for the
/// default coordinate search and for NSGA-II, whose one random stream keeps its plans
/// sequential.
#[test]
fn dlrover_plans_the_same_on_any_thread_count() {
    let dir = scratch("determinism-threads");
    let policies = "dlrover,dlrover[search=nsga]";
    for threads in ["1", "3"] {
        let o = dlsim(&[
            "replay",
            "scenarios/quickstart.json",
            "--quiet",
            "--policy",
            policies,
            "--threads",
            threads,
            "--out",
            path_str(&dir.join(threads)),
        ]);
        assert!(o.status.success(), "replay failed: {}", stderr(&o));
    }
    for run in ["dlrover", "dlrover-search-nsga"] {
        for f in FILES {
            let x = std::fs::read(dir.join("1").join(run).join(f)).unwrap();
            let y = std::fs::read(dir.join("3").join(run).join(f)).unwrap();
            assert!(!x.is_empty(), "{run}/{f} is empty");
            assert!(x == y, "{run}/{f} differs between 1 and 3 planning threads");
        }
    }
    let o = dlsim(&["replay", "scenarios/quickstart.json", "--threads", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--threads"), "{}", stderr(&o));
}
