//! Importing public traces from the command line: every committed slice of a public file
//! imports with no flags (odd rows repaired and counted), `--strict` stops at an odd row,
//! outputs go into folders that did not exist, every imported slice replays under every
//! batch policy with the model's invariants and every job ending, inspect writes plots,
//! and a malformed row gives exit code 2 naming the line.

use crate::support::*;
use dlsim_model::job::FailReason;
use dlsim_model::policy::JobPhase;
use dlsim_model::world::recorded;
use dlsim_model::{Resources, Scenario};
use dlsim_traces::read_trace;
use std::path::{Path, PathBuf};

/// A committed slice of a public file (`tests/fixtures/importers/PROVENANCE.md`) and what
/// its import must report.
struct Slice {
    name: &'static str,
    format: &'static str,
    file: &'static str,
    /// openb takes its node list (the cluster, not a repair flag).
    nodes: Option<&'static str>,
    jobs: u64,
    /// Repaired rows by reason, as the report counts them.
    repaired: &'static [(&'static str, u64)],
}

const MEM0: &str = "memory_mib: 0 = no request, raised to the memory model's need";

const SLICES: &[Slice] = &[
    Slice {
        name: "openb-default",
        format: "openb",
        file: "openb_pods.csv",
        nodes: Some("openb_nodes.csv"),
        jobs: 142,
        repaired: &[],
    },
    Slice {
        name: "openb-cpu050",
        format: "openb",
        file: "openb_cpu050.csv",
        nodes: Some("openb_nodes.csv"),
        jobs: 132,
        repaired: &[(MEM0, 1)],
    },
    Slice {
        name: "openb-gpushare40",
        format: "openb",
        file: "openb_gpushare40.csv",
        nodes: Some("openb_nodes.csv"),
        jobs: 143,
        repaired: &[(MEM0, 1)],
    },
    Slice {
        name: "openb-multigpu50",
        format: "openb",
        file: "openb_multigpu50.csv",
        nodes: Some("openb_nodes.csv"),
        jobs: 183,
        repaired: &[(MEM0, 1)],
    },
    Slice {
        name: "dlrm2025",
        format: "dlrm2025",
        file: "dlrm2025.csv",
        nodes: None,
        jobs: 27,
        repaired: &[],
    },
    Slice {
        name: "philly",
        format: "philly",
        file: "philly.csv",
        nodes: None,
        jobs: 200,
        repaired: &[],
    },
    Slice {
        name: "swf",
        format: "swf",
        file: "nasa-ipsc-202.swf.gz",
        nodes: None,
        jobs: 202,
        repaired: &[("run_time: 0 s, replayed as 1 step", 2)],
    },
];

/// Every batch policy.
const BATCH_POLICIES: &[&str] = dlsim_policies::POLICY_NAMES;

fn slice(name: &str) -> &'static Slice {
    SLICES.iter().find(|s| s.name == name).expect("a slice")
}

/// `dlsim trace import --format F IN [--nodes N] --out OUT --cluster-out NODES` and
/// nothing else; returns the trace, the node list and the command's output.
fn import_slice(s: &Slice, dir: &Path) -> (PathBuf, PathBuf, std::process::Output) {
    let trace = dir.join("out").join(format!("{}.jsonl", s.name));
    let nodes = dir.join("cluster").join(format!("{}-nodes.csv", s.name));
    let input = fixture(s.file);
    let mut args = vec!["trace", "import", "--format", s.format, &input];
    let node_list = s.nodes.map(fixture);
    if let Some(n) = &node_list {
        args.extend(["--nodes", n.as_str()]);
    }
    args.extend(["--out", path_str(&trace), "--cluster-out", path_str(&nodes)]);
    let o = dlsim(&args);
    (trace, nodes, o)
}

#[test]
fn every_slice_imports_without_flags_into_missing_folders_with_repairs_counted() {
    for s in SLICES {
        let dir = scratch(&format!("import-noflags-{}", s.name));
        let (trace, nodes, o) = import_slice(s, &dir);
        assert!(o.status.success(), "{}: {}", s.name, stderr(&o));
        assert!(
            nodes.exists(),
            "{}: the cluster's folder was created",
            s.name
        );
        let t = read_trace(&trace).unwrap();
        let report = &t.header.source["report"];
        assert_eq!(report["jobs"], s.jobs, "{}", s.name);
        assert_eq!(t.jobs.len() as u64, s.jobs);
        let repaired = report["repaired"].as_object().unwrap();
        assert_eq!(repaired.len(), s.repaired.len(), "{}: {repaired:?}", s.name);
        for (why, n) in s.repaired {
            assert_eq!(repaired[*why], *n, "{}: {why}", s.name);
            let line = format!("{n:>8}  {why}");
            assert!(stdout(&o).contains(&line), "{}: {}", s.name, stdout(&o));
        }
    }
}

#[test]
fn strict_stops_at_the_first_odd_row_with_exit_2_and_writes_nothing() {
    for (s, line, field) in [
        (slice("openb-cpu050"), 36, "memory_mib"),
        (slice("swf"), 233, "run_time"),
    ] {
        let dir = scratch(&format!("import-strict-{}", s.name));
        let out = dir.join("new").join("t.jsonl");
        let nodes = dir.join("new").join("n.csv");
        let input = fixture(s.file);
        let mut args = vec!["trace", "import", "--format", s.format, &input, "--strict"];
        let node_list = s.nodes.map(fixture);
        if let Some(n) = &node_list {
            args.extend(["--nodes", n.as_str()]);
        }
        args.extend(["--out", path_str(&out), "--cluster-out", path_str(&nodes)]);
        let o = dlsim(&args);
        assert_eq!(o.status.code(), Some(2), "{}: {}", s.name, stderr(&o));
        let err = stderr(&o);
        let at = format!("{}:{line}: field `{field}`", s.file);
        assert!(err.contains(&at) && err.contains("--strict"), "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(!dir.join("new").exists(), "nothing written: {}", s.name);
    }
}

/// Imports a slice, then replays it in-process under every batch policy and checks the
/// model's invariants, that every job ends (completed, or failed for a reason other than
/// the horizon), and that `static` follows the recorded scale events.
fn replays_under_every_batch_policy(name: &str) {
    let s = slice(name);
    let dir = scratch(&format!("import-replay-{name}"));
    let (trace, nodes, o) = import_slice(s, &dir);
    assert!(o.status.success(), "{name}: {}", stderr(&o));
    let t = read_trace(&trace).unwrap();
    // The failure rate the importer derived from the trace, where it derives one.
    let faults = match t.header.source["report"]["derived"].get("pod_failure_per_day") {
        Some(p) => format!(r#","faults":{{"pod_failure_per_day":{p}}}"#),
        None => String::new(),
    };
    let scenario = dir.join("scenario.json");
    let text = format!(
        r#"{{"name":"{name}","trace":"{}","cluster":{{"node_list":"{}"}},"policy":"static"{faults}}}"#,
        path_str(&trace),
        path_str(&nodes),
    );
    std::fs::write(&scenario, text).unwrap();
    let scenario = Scenario::load(&scenario).unwrap();
    for &policy in BATCH_POLICIES {
        let ctx = format!("{name} under {policy}");
        let out = dlsim_model::run(&scenario, dlsim_policies::build(policy).unwrap());
        // As `dlsim replay` runs it (ended jobs released): the same outputs.
        let released = dlsim_model::run(
            &Scenario {
                keep_ended: false,
                ..scenario.clone()
            },
            dlsim_policies::build(policy).unwrap(),
        );
        assert_eq!(released.summary_json, out.summary_json, "{ctx}");
        assert_eq!(released.jobs_csv, out.jobs_csv, "{ctx}");
        let w = &out.world;
        w.cluster.check_invariants();
        assert_eq!(w.cluster.allocated(), Resources::ZERO, "{ctx}");
        let sum = &out.summary;
        assert_eq!(sum.jobs_submitted as u64, s.jobs, "{ctx}");
        assert_eq!(
            sum.jobs_completed + sum.jobs_failed,
            sum.jobs_submitted,
            "{ctx}"
        );
        for job in w.jobs.iter() {
            match job.phase() {
                JobPhase::Completed => assert_eq!(job.steps_done(), job.spec().steps, "{ctx}"),
                JobPhase::Failed => {
                    let why = job.fail_reason().expect("a failed job has a reason");
                    assert_ne!(why, FailReason::Unfinished, "every job ends; {ctx}");
                }
                other => panic!("job {} left {other:?}; {ctx}", job.spec().id),
            }
            crate::support::check_ledger(job, &ctx);
            let u = job.usage();
            assert!(
                u.cpu_used_core_s <= u.cpu_alloc_core_s * (1.0 + 1e-9),
                "{ctx}"
            );
            if policy == "static" {
                check_follows_recorded_scale(job, &ctx);
            }
            if policy == "dlrover-oss" {
                check_keeps_what_the_user_set(job, &ctx);
            }
        }
        for row in &w.timeline {
            assert!(
                row.cpu_alloc <= w.cluster.capacity().cpu_cores() + 1e-9,
                "{ctx}"
            );
        }
    }
}

/// Under `dlrover-oss`, as the open-source master does: a PS-less (allreduce) job runs as
/// its user asked and is never changed; a PS job keeps the worker and PS counts its user set.
fn check_keeps_what_the_user_set(job: &dlsim_model::job::Job, ctx: &str) {
    let asked = job.request().requested;
    let id = job.spec().id;
    if asked.ps == 0 {
        assert_eq!(
            job.launched(),
            Some(asked),
            "job {id} launched as asked; {ctx}"
        );
        assert_eq!(job.config(), asked, "job {id} unchanged; {ctx}");
        assert_eq!(job.rescales(), 0, "job {id} never rescaled; {ctx}");
    } else {
        let launched = job.launched().expect("an ended job was launched");
        assert_eq!(
            (
                launched.workers,
                launched.ps,
                job.config().workers,
                job.config().ps
            ),
            (asked.workers, asked.ps, asked.workers, asked.ps),
            "job {id} keeps its counts; {ctx}"
        );
    }
}

/// Under `static`, a job with recorded scale events ends with the counts recorded last
/// before its end (clamped as the world clamps them); a job without keeps its request.
fn check_follows_recorded_scale(job: &dlsim_model::job::Job, ctx: &str) {
    let scale = job
        .spec()
        .observed
        .as_ref()
        .map_or(&[][..], |o| &o.scale[..]);
    let end = job.ended_at().expect("an ended job has an end");
    let want = match recorded::last_due(scale, end) {
        Some(k) if job.phase() == JobPhase::Completed => recorded::counts(job.spec(), &scale[k]),
        _ if scale.is_empty() => (job.spec().ps, job.spec().workers),
        _ => return, // A failed job's pods were torn down mid-change.
    };
    assert_eq!(
        (job.config().ps, job.config().workers),
        want,
        "job {}: counts at its end; {ctx}",
        job.spec().id
    );
}

#[test]
fn imported_openb_default_replays_under_every_batch_policy() {
    replays_under_every_batch_policy("openb-default");
}

#[test]
fn imported_openb_cpu050_replays_under_every_batch_policy() {
    replays_under_every_batch_policy("openb-cpu050");
}

#[test]
fn imported_openb_gpushare40_replays_under_every_batch_policy() {
    replays_under_every_batch_policy("openb-gpushare40");
}

#[test]
fn imported_openb_multigpu50_without_times_replays_under_every_batch_policy() {
    replays_under_every_batch_policy("openb-multigpu50");
}

#[test]
fn imported_dlrm2025_replays_under_every_batch_policy() {
    replays_under_every_batch_policy("dlrm2025");
}

#[test]
fn imported_philly_replays_under_every_batch_policy() {
    replays_under_every_batch_policy("philly");
}

#[test]
fn imported_swf_replays_under_every_batch_policy() {
    replays_under_every_batch_policy("swf");
}

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
    assert!(
        !stderr(&o).contains("warning"),
        "replayed under the truth it was imported with: {}",
        stderr(&o)
    );
    // Under another truth the steps synthesised at import no longer match the recorded
    // durations: the replay says so, and still runs.
    std::fs::write(
        &scenario,
        r#"{"name":"import-openb","trace":"openb.jsonl","cluster":{"node_list":"nodes.csv"},"policy":"static","truth":{"bandwidth_mb_s":2500}}"#,
    )
    .unwrap();
    let o = dlsim(&[
        "replay",
        path_str(&scenario),
        "--quiet",
        "--out",
        path_str(&dir.join("run2")),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("warning: ")
            && err.contains("openb.jsonl")
            && err.contains("import the source again"),
        "{err}"
    );
    // A sweep over it warns once, before it runs.
    std::fs::write(
        dir.join("sweep.json"),
        r#"{"name":"w","scenario":"scenario.json","seeds":2,"policies":["static"],"baseline":"static"}"#,
    )
    .unwrap();
    let o = dlsim(&["sweep", path_str(&dir.join("sweep.json")), "--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o).matches("warning: ").count(), 1, "{}", stderr(&o));
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
        &fixture("nasa-ipsc-202.swf.gz"),
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
        "202 jobs",
        "real duration (s)",
        "arrivals by hour",
        "outcome mix",
        "unknown",
    ] {
        assert!(text.contains(needle), "inspect lacks `{needle}`:\n{text}");
    }
    for chart in ["arrivals", "sizes", "size-duration"] {
        for ext in ["png", "svg", "pdf"] {
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

/// The README's synopsis of `trace import` and `--help` name exactly the registry's
/// formats, in its order.
#[test]
fn the_readme_and_help_list_the_registry_formats() {
    let names = dlsim_importers::format_names();
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let synopsis = format!("--format {{{}}}", names.join(","));
    assert!(readme.contains(&synopsis), "README.md lacks `{synopsis}`");
    let o = dlsim(&["trace", "import", "--help"]);
    let help = stdout(&o);
    for f in dlsim_importers::IMPORTERS {
        assert!(
            help.contains(f.name) && help.contains(f.source),
            "{}: {help}",
            f.name
        );
    }
}
