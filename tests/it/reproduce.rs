//! `dlsim reproduce`: every paper manifest loads with its scenarios, a row reproduces from
//! its own command, the result is the same on any thread count, a committed reproduction
//! catches a value that leaves its band, a bad manifest is one readable error, the
//! PICASSO hit ratio follows the shape of Table VI, and `--set` changes one choice for a
//! run and says so.

use crate::support::*;
use dlsim_reproduce::{manifest::PAPERS, Options, Report};

fn read_report(dir: &std::path::Path) -> Report {
    serde_json::from_slice(&std::fs::read(dir.join("reproduce.json")).unwrap()).unwrap()
}

/// `dlsim reproduce --paper picasso --quiet` with `extra` flags into scratch folder `name`:
/// its output and the `--out` it was given.
fn picasso(name: &str, extra: &[&str]) -> (std::process::Output, std::path::PathBuf) {
    let out = scratch(name).join("r");
    let mut args = vec![
        "reproduce",
        "--paper",
        "picasso",
        "--quiet",
        "--out",
        path_str(&out),
    ];
    args.extend_from_slice(extra);
    (dlsim(&args), out)
}

#[test]
fn every_paper_manifest_and_scenario_loads() {
    let opts = Options {
        root: repo().join("scenarios/paper"),
        papers: PAPERS.iter().map(|s| s.to_string()).collect(),
        quick: false,
        rows: Default::default(),
        overrides: vec![],
        keep_runs: false,
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

/// `--keep-runs` writes every simulated run a reproduction made, as `dlsim replay` would,
/// and a row's number is computed from exactly those runs: DLRover-RM Fig. 12's change in
/// JCT against the job left alone, recomputed here from the kept `jobs.csv` of each arm
/// and seed. Without the flag no `runs/` folder is written.
#[test]
fn kept_runs_are_what_a_row_was_computed_from() {
    let out = scratch("reproduce-keep-runs").join("r");
    let run = |keep: bool| {
        let mut args = vec![
            "reproduce",
            "--paper",
            "dlrover-rm",
            "--row",
            "rm-fig12-vs-none",
            "--quick",
            "--quiet",
            "--out",
            path_str(&out),
        ];
        if keep {
            args.push("--keep-runs");
        }
        let o = dlsim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    run(true);
    let r = read_report(&out);
    let row = r.rows.iter().find(|x| x.id == "rm-fig12-vs-none").unwrap();
    let jct = |arm: &str, seed: u32| -> f64 {
        let dir = out.join(format!("runs/dlrover-rm/fig12-hot-ps/{arm}/seed-{seed}"));
        for f in ["summary.json", "timeline.csv"] {
            assert!(dir.join(f).is_file(), "{}", dir.join(f).display());
        }
        let jobs = std::fs::read_to_string(dir.join("jobs.csv")).unwrap();
        let mut lines = jobs.lines();
        let head: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = head.iter().position(|c| *c == "jct_s").unwrap();
        let cells: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert!(lines.next().is_none(), "one job");
        cells[col].parse().unwrap()
    };
    assert_eq!(row.seeds, 2, "the quick run's seeds");
    let changes: Vec<f64> = (1..=2)
        .map(|seed| (jct("dlrover", seed) / jct("none", seed) - 1.0) * 100.0)
        .collect();
    let mean = changes.iter().sum::<f64>() / 2.0;
    let ours = row.ours.unwrap();
    assert!((ours - mean).abs() < 1e-6 * mean.abs(), "{ours} vs {mean}");
    // The third arm's runs are kept too.
    assert!(jct("restart", 1) > 0.0);
    // Rerun without the flag into the same folder: replaced whole, no runs left behind.
    run(false);
    assert!(!out.join("runs").exists());
    assert!(out.join("reproduce.json").is_file());
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
    // The experiment's three rows (steps, worker and PS cores), the same in both.
    let within = read_report(&out)
        .rows
        .iter()
        .filter(|r| r.within_25)
        .count();
    let said = stdout(&o);
    assert!(
        said.contains(&format!("within ±25%: {within} -> {within} of 3")),
        "{said}"
    );
    // Doctor the committed value: the same run now sits far outside its band, and the
    // committed row was outside the paper's ±25%.
    let mut r = read_report(&out);
    for x in &mut r.rows {
        x.ours = x.ours.map(|v| v * 3.0);
        x.ci95 = Some(0.0);
        x.within_25 = false;
    }
    std::fs::write(&committed, serde_json::to_string(&r).unwrap()).unwrap();
    let o = run(&["--check", path_str(&committed)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("left its band"), "{}", stderr(&o));
    // What moved is printed too: the rows within the paper's band came into it (the
    // steps are the calibration's anchor, always within).
    let said = stdout(&o);
    assert!(
        said.contains(&format!("within ±25%: 0 -> {within} of 3")),
        "{said}"
    );
    assert!(
        said.contains("t1-xdfm-optimise-steps: into the ±25% band"),
        "{said}"
    );
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
    let out = scratch("reproduce-bad-out").join("r");
    // (the first match replaced, the field the error must name): a metric that does not
    // parse, a published range that does not hold the row's paper value, a bound that is
    // neither `at_most` nor `at_least`, and a range and a bound on one row.
    for (from, to, field) in [
        (
            "\"metric\": \"summary.online_violation_rate\"",
            "\"metric\": \"jobs.max(x)\"",
            "metric",
        ),
        ("\"unit\":", "\"range\": [30, 40], \"unit\":", "range"),
        ("\"unit\":", "\"bound\": \"below\", \"unit\":", "bound"),
        (
            "\"unit\":",
            "\"range\": [0, 100], \"bound\": \"at_most\", \"unit\":",
            "bound",
        ),
    ] {
        std::fs::write(kale.join("paper.json"), text.replacen(from, to, 1)).unwrap();
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
        assert!(e.contains("paper.json") && e.contains(field), "{e}");
        assert!(!out.exists(), "nothing written");
    }
    let o = dlsim(&["reproduce", "--paper", "nope", "--out", path_str(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown paper"));
}

#[test]
fn an_arm_whose_pods_no_node_holds_is_refused_before_anything_runs() {
    // The DLRover manifest and its scenarios at the depth their trace paths expect
    // (`../../../traces/paper/`), with one arm sized past the small cluster's 32-core nodes.
    let root = scratch("reproduce-big-arm");
    let papers = root.join("a").join("b");
    let dlrover = papers.join("dlrover");
    copy_files(&repo().join("scenarios/paper/dlrover"), &dlrover);
    copy_files(
        &repo().join("traces/paper"),
        &root.join("traces").join("paper"),
    );
    let text = std::fs::read_to_string(dlrover.join("paper.json")).unwrap();
    assert!(text.contains("\"es\": \"es\","), "the Fig. 9 arms changed");
    std::fs::write(
        dlrover.join("paper.json"),
        text.replacen("\"es\": \"es\",", "\"es\": \"es[worker_cpu=33]\",", 1),
    )
    .unwrap();
    let out = root.join("out");
    let o = dlsim(&[
        "reproduce",
        "--paper",
        "dlrover",
        "--papers-dir",
        path_str(&papers),
        "--out",
        path_str(&out),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("paper.json")
            && e.contains("worker_cpu=33")
            && e.contains("larger than any node"),
        "{e}"
    );
    assert!(!out.exists(), "nothing written");
}

/// PICASSO Table VI from the stated setup: each model's hit ratio rises with the hot
/// storage and saturates (the last doubling adds less than the first); a setup out of range
/// is refused before anything runs, naming the field.
#[test]
fn picasso_hit_ratio_rises_and_saturates_and_a_bad_setup_names_its_field() {
    let (o, out) = picasso("reproduce-picasso", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report = read_report(&out);
    for model in ["wd", "can", "mmoe"] {
        let v: Vec<f64> = [256, 512, 1024, 2048, 4096]
            .iter()
            .map(|mb| {
                let id = format!("pic-t6-{model}-{mb}mb");
                let row = report.rows.iter().find(|r| r.id == id).expect("a row");
                row.ours.expect("computed")
            })
            .collect();
        assert!(v.windows(2).all(|w| w[1] > w[0]), "{model}: {v:?}");
        let first = v[1] / v[0];
        let last = v[4] / v[3];
        assert!(last < first, "{model} saturates: {v:?}");
    }
    let dir = scratch("reproduce-picasso-bad");
    let pic = dir.join("picasso");
    std::fs::create_dir_all(&pic).unwrap();
    let text = std::fs::read_to_string(repo().join("scenarios/paper/picasso/paper.json")).unwrap();
    std::fs::write(
        pic.join("paper.json"),
        text.replacen("\"top20_coverage\": 0.7", "\"top20_coverage\": 1.5", 1),
    )
    .unwrap();
    let bad = scratch("reproduce-picasso-bad-out").join("r");
    let o = dlsim(&[
        "reproduce",
        "--paper",
        "picasso",
        "--papers-dir",
        path_str(&dir),
        "--out",
        path_str(&bad),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("picasso.top20_coverage"),
        "{}",
        stderr(&o)
    );
    assert!(!bad.exists(), "nothing written");
}

/// `--set` changes one of the manifests' choices for a run: counting only the 100 warm-up
/// batches lowers every PICASSO hit ratio at 4 GB (fewer counts tell the hot IDs apart
/// less well), the report and each row's command carry the override, and an override that
/// fits nothing, or a value out of range, is refused before anything runs.
#[test]
fn set_overrides_a_choice_for_one_run_and_says_so() {
    let (o, plain) = picasso("reproduce-set-plain", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let set = "*:picasso.counted_batches=100";
    let (o, warm_dir) = picasso("reproduce-set-warmup", &["--set", set]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (plain, warm) = (read_report(&plain), read_report(&warm_dir));
    assert_eq!(warm.overrides, vec![set.to_string()]);
    assert!(plain.overrides.is_empty());
    for model in ["wd", "can", "mmoe"] {
        let id = format!("pic-t6-{model}-4096mb");
        let at = |r: &dlsim_reproduce::Report| {
            let row = r.rows.iter().find(|x| x.id == id).expect("a row").clone();
            (row.ours.expect("computed"), row.command)
        };
        let ((p, _), (w, cmd)) = (at(&plain), at(&warm));
        assert!(w < p, "{id}: 100 counted batches {w} vs 1,000 {p}");
        assert!(cmd.contains(&format!("--set '{set}'")), "{cmd}");
    }
    let md = std::fs::read_to_string(warm_dir.join("reproduce.md")).unwrap();
    assert!(md.contains("Run with overrides"), "{md}");
    for bad in [
        "table6-wd:arms.none=static",
        "nosuch:picasso.batch=1",
        "*:picasso.counted_batches=0",
        "table6-wd:cluster.groups.0.count=3",
    ] {
        let (o, out) = picasso("reproduce-set-bad", &["--set", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains(bad), "{bad}: {}", stderr(&o));
        assert!(!out.exists(), "{bad}: nothing written");
    }
}

/// `dlsim sensitivity` runs the reproduction once as set and once per variant of a choices
/// file, re-running only the experiments a variant changes: a variant of W&D's embedding
/// dimension moves W&D's PICASSO rows and leaves CAN's and MMoE's at their baseline values,
/// the counts match a `--set` reproduction of the same variant, and the report names the
/// rows that crossed the band. A malformed choices file, an unknown `--choice` and a
/// variant that changes nothing are refused with exit 2 before anything is written.
#[test]
fn sensitivity_reruns_what_a_variant_changes_and_counts_the_rows_it_moves() {
    let dir = scratch("sensitivity");
    let choices = dir.join("choices.json");
    std::fs::write(
        &choices,
        r#"{ "choices": [ { "id": "wd-dim", "what": "W&D's dim", "default": "16",
             "source": "test", "variants": [
               { "name": "8", "set": ["table6-wd:picasso.emb_dim=8"] },
               { "name": "64", "set": ["table6-wd:picasso.emb_dim=64"] } ] } ] }"#,
    )
    .unwrap();
    let out = dir.join("out");
    let o = dlsim(&[
        "sensitivity",
        "--paper",
        "picasso",
        "--quiet",
        "--choices",
        path_str(&choices),
        "--out",
        path_str(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: dlsim_reproduce::sensitivity::Sensitivity =
        serde_json::from_slice(&std::fs::read(out.join("sensitivity.json")).unwrap()).unwrap();
    let (plain, plain_dir) = picasso("sensitivity-plain", &[]);
    assert!(plain.status.success(), "{}", stderr(&plain));
    let plain = read_report(&plain_dir);
    assert_eq!(s.rows, plain.rows.len());
    assert_eq!(
        s.within_25,
        plain.rows.iter().filter(|r| r.within_25).count()
    );
    assert_eq!(s.choices.len(), 1);
    for (v, dim) in s.choices[0].variants.iter().zip(["8", "64"]) {
        assert_eq!(
            v.experiments,
            vec!["picasso/table6-wd".to_string()],
            "{}",
            v.name
        );
        assert_eq!(v.changed_rows, 5, "only W&D's five rows change");
        let set = format!("table6-wd:picasso.emb_dim={dim}");
        let (o, vdir) = picasso(&format!("sensitivity-set-{dim}"), &["--set", &set]);
        assert!(o.status.success(), "{}", stderr(&o));
        let r = read_report(&vdir);
        assert_eq!(
            v.within_25,
            r.rows.iter().filter(|x| x.within_25).count(),
            "{dim}"
        );
        for m in &v.moved {
            let row = r.rows.iter().find(|x| x.id == m.id).expect("a row");
            assert_eq!(m.ours, row.ours);
            assert_eq!(m.within_25, row.within_25);
            assert!(m.id.starts_with("pic-t6-wd-"), "{}", m.id);
        }
    }
    let md = std::fs::read_to_string(out.join("sensitivity.md")).unwrap();
    assert!(md.contains("| 1 | wd-dim | 8 |"), "{md}");
    for m in s.choices[0].variants.iter().flat_map(|v| &v.moved) {
        if m.within_25 != m.baseline_within_25 {
            assert!(md.contains(&format!("| `{}` |", m.id)), "by row: {md}");
        }
    }
    assert!(out.join("sensitivity.png").is_file() && out.join("sensitivity.svg").is_file());
    // Refused before anything runs or is written.
    let refused = |name: &str, text: &str, extra: &[&str], wants: &str| {
        let d = scratch(&format!("sensitivity-bad-{name}"));
        let f = d.join("choices.json");
        std::fs::write(&f, text).unwrap();
        let out = d.join("out");
        let mut args = vec![
            "sensitivity",
            "--paper",
            "picasso",
            "--choices",
            path_str(&f),
            "--out",
            path_str(&out),
        ];
        args.extend_from_slice(extra);
        let o = dlsim(&args);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(wants), "{name}: {}", stderr(&o));
        assert!(!out.exists(), "{name}: nothing written");
    };
    let good = std::fs::read_to_string(&choices).unwrap();
    refused("json", "{ \"choices\": [ {", &[], "choices.json");
    refused(
        "field",
        &good.replace("\"source\"", "\"sauce\""),
        &[],
        "sauce",
    );
    refused(
        "set",
        &good.replace("table6-wd:picasso.emb_dim=8", "no-colon"),
        &[],
        "choices[0].variants[0].set[0]",
    );
    refused(
        "choice",
        &good,
        &["--choice", "nosuch"],
        "no choice `nosuch`",
    );
    refused(
        "noop",
        &good.replace("emb_dim=8", "emb_dim=16"),
        &[],
        "changes no experiment",
    );
}

/// The committed choices file stays usable as the manifests change: every variant parses,
/// applies, changes at least one experiment and leaves its scenarios and arms loadable,
/// for a full and a quick reproduction (with one paper selected, the other papers'
/// variants are left out); and the committed sensitivity report covers
/// exactly its choices and variants (re-run `dlsim sensitivity --out reports/reproduce`
/// after editing it).
#[test]
fn the_committed_choices_plan_and_match_the_committed_sensitivity_report() {
    use dlsim_reproduce::sensitivity::{self, ChoicesFile, Sensitivity};
    let file = ChoicesFile::load(&repo().join("scenarios/paper/choices.json")).expect("loads");
    for quick in [false, true] {
        let opts = Options {
            root: repo().join("scenarios/paper"),
            papers: PAPERS.iter().map(|s| s.to_string()).collect(),
            quick,
            rows: Default::default(),
            overrides: vec![],
            keep_runs: false,
        };
        let base = dlsim_reproduce::load(&opts).expect("manifests load");
        let plans = sensitivity::plan(&opts, &base, &file.choices).expect("every variant plans");
        let variants: usize = file.choices.iter().map(|c| c.variants.len()).sum();
        assert_eq!(plans.run.len(), variants);
        assert!(plans.skipped.is_empty());
        // With one paper selected, the variants of the others are left out, not errors.
        let picasso = Options {
            papers: vec!["picasso".into()],
            ..opts
        };
        let base = dlsim_reproduce::load(&picasso).expect("manifest loads");
        let plans = sensitivity::plan(&picasso, &base, &file.choices).expect("plans");
        assert!(!plans.run.is_empty());
        assert!(plans
            .run
            .iter()
            .all(|p| p.choice.id.starts_with("picasso-")));
        assert_eq!(plans.run.len() + plans.skipped.len(), variants);
    }
    let committed: Sensitivity = serde_json::from_slice(
        &std::fs::read(repo().join("reports/reproduce/sensitivity.json")).unwrap(),
    )
    .unwrap();
    type Listed = Vec<(String, Vec<(String, Vec<String>)>)>;
    let listed: Listed = committed
        .choices
        .iter()
        .map(|c| {
            let vs = c.variants.iter().map(|v| (v.name.clone(), v.set.clone()));
            (c.choice.id.clone(), vs.collect())
        })
        .collect();
    let wanted: Listed = file
        .choices
        .iter()
        .map(|c| {
            let vs = c.variants.iter().map(|v| (v.name.clone(), v.set.clone()));
            (c.id.clone(), vs.collect())
        })
        .collect();
    assert_eq!(
        listed, wanted,
        "reports/reproduce/sensitivity.json is stale against scenarios/paper/choices.json"
    );
}

/// The bundled AntGroup-style trace is exactly what the generator draws from seed 1 with
/// its defaults, so a choice of the generator (`generate` with `"seed": 1` and one knob
/// changed, as `scenarios/paper/choices.json` varies it) differs from the committed
/// reproduction by that knob alone.
#[test]
fn the_bundled_trace_is_the_generators_seed_1() {
    let cfg = dlsim_traces::GeneratorConfig {
        seed: Some(1),
        ..Default::default()
    };
    let drawn = dlsim_traces::generate(&cfg, 99);
    let bundled = dlsim_traces::read_trace(&repo().join("traces/antgroup-sample.jsonl"))
        .expect("the bundled trace reads");
    assert_eq!(drawn, bundled.jobs);
}
