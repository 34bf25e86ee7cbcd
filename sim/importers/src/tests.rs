//! Importer tests on the fixture slices in `tests/fixtures/importers/` (real rows, see the
//! PROVENANCE.md there; the PAI task table is hand-written): mapping, round trip through
//! the native format, determinism, and malformed rows.

use super::*;
use dlsim_traces::{read_trace, write_trace, Outcome};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/importers")
        .join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dlsim-importers-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// (format, input, nodes) for every fixture.
fn cases() -> Vec<(Format, PathBuf, Option<PathBuf>)> {
    vec![
        (
            &openb::IMPORTER,
            fixture("openb_pods.csv"),
            Some(fixture("openb_nodes.csv")),
        ),
        (&dlrm2025::IMPORTER, fixture("dlrm2025.csv"), None),
        (
            &pai2020::IMPORTER,
            fixture("pai_task_table.csv"),
            Some(fixture("pai_machine_spec.csv")),
        ),
        (&philly::IMPORTER, fixture("philly.csv"), None),
        (&swf::IMPORTER, fixture("nasa-ipsc-202.swf.gz"), None),
    ]
}

fn run(format: Format, input: &Path, nodes: Option<PathBuf>, seed: u64) -> Imported {
    let opts = ImportOptions {
        skip_bad: false,
        strict: false,
        seed,
        nodes,
    };
    import(format, input, &opts).unwrap_or_else(|e| panic!("{}: {e}", format.name))
}

#[test]
fn every_fixture_imports_valid_sorted_jobs_that_fit_the_cluster() {
    for (format, input, nodes) in cases() {
        let out = run(format, &input, nodes, 1);
        let name = format.name;
        assert!(out.jobs.len() >= 8, "{name}: {} jobs", out.jobs.len());
        assert_eq!(out.report.jobs, out.jobs.len() as u64);
        for (i, j) in out.jobs.iter().enumerate() {
            assert_eq!(j.id, i as u64);
            assert!(j.validate().is_ok(), "{name}: {j:?}");
            assert!(j.synthesized.iter().any(|f| f == "steps"));
            assert!(j.observed.is_some());
            assert!(cluster::check_fits(&out.nodes, j).is_ok(), "{name}: {j:?}");
        }
        assert!(out.jobs.windows(2).all(|w| w[0].submit_s <= w[1].submit_s));
    }
}

#[test]
fn import_write_read_gives_identical_jobs() {
    let dir = scratch("rt");
    for (format, input, nodes) in cases() {
        let opts = ImportOptions {
            skip_bad: false,
            strict: false,
            seed: 5,
            nodes,
        };
        let out = import(format, &input, &opts).unwrap();
        let path = dir.join(format!("{}.jsonl", format.name));
        write_trace(
            &path,
            &header(format, &input, &opts, &out.report),
            &out.jobs,
        )
        .unwrap();
        let back = read_trace(&path).unwrap();
        assert_eq!(back.jobs, out.jobs, "{}", format.name);
        assert_eq!(back.header.source["report"]["jobs"], out.jobs.len());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn same_seed_same_jobs_other_seed_other_synthesis() {
    let (f, input, nodes) = cases().swap_remove(0);
    let a = run(f, &input, nodes.clone(), 3);
    assert_eq!(a.jobs, run(f, &input, nodes.clone(), 3).jobs);
    let b = run(f, &input, nodes, 4);
    assert_ne!(a.jobs, b.jobs);
    // Only synthesised fields may differ.
    for (x, y) in a.jobs.iter().zip(&b.jobs) {
        assert_eq!(
            (x.submit_s, x.worker_cpu, x.worker_gpu),
            (y.submit_s, y.worker_cpu, y.worker_gpu)
        );
    }
}

#[test]
fn openb_maps_pods_phases_and_gpu_shares() {
    let out = run(
        &openb::IMPORTER,
        &fixture("openb_pods.csv"),
        Some(fixture("openb_nodes.csv")),
        1,
    );
    assert_eq!(out.report.rows_read, 164);
    assert_eq!(
        out.report.skipped_by_rule.values().sum::<u64>(),
        22,
        "Pending pods"
    );
    assert_eq!(out.jobs.len(), 142);
    assert_eq!(out.nodes.len(), 27);
    // openb-pod-0000: 12000 milli-CPU, 16384 MiB, 1 x 1000 milli-GPU, LS, Running.
    let j = &out.jobs[0];
    let o = j.observed.as_ref().unwrap();
    assert_eq!(o.name, "openb-pod-0000");
    assert_eq!(
        (j.worker_cpu, j.worker_mem_mb, j.worker_gpu, j.ps),
        (12.0, 16384, 1, 0)
    );
    assert_eq!(
        (o.outcome, o.duration_s, j.priority),
        (Outcome::Censored, Some(12_537_496), 1)
    );
    // Shared GPUs (e.g. 460 milli) hold a whole GPU.
    assert!(out.report.notes["GPU share rounded up to whole GPUs"] > 0);
    assert!(out
        .jobs
        .iter()
        .any(|j| j.observed.as_ref().unwrap().outcome == Outcome::Failed));
}

#[test]
fn dlrm2025_apps_become_jobs_with_peak_counts_and_scale_events() {
    let out = run(&dlrm2025::IMPORTER, &fixture("dlrm2025.csv"), None, 1);
    assert_eq!(out.report.rows_read, 247);
    assert_eq!(out.jobs.len(), 27, "one job per app");
    for j in &out.jobs {
        let o = j.observed.as_ref().unwrap();
        assert!(j.ps > 0 && j.workers > 0 && j.worker_gpu > 0, "{j:?}");
        let peak_ps = o.scale.iter().map(|e| e.ps).max().unwrap();
        let peak_w = o.scale.iter().map(|e| e.workers).max().unwrap();
        assert_eq!((j.ps, j.workers), (peak_ps, peak_w));
        assert_eq!(o.scale[0].t_s, j.submit_s);
        assert!(o.scale.windows(2).all(|w| w[0].t_s < w[1].t_s));
    }
    assert!(out.report.notes["instance created before the window (counted from 0)"] > 0);
    assert!(out
        .jobs
        .iter()
        .any(|j| j.observed.as_ref().unwrap().outcome == Outcome::Censored));
    assert!(out
        .report
        .cluster
        .as_deref()
        .unwrap()
        .contains("peak-demand"));
}

#[test]
fn dlrm2025_failure_rate_counts_isolated_replacements_per_instance_day() {
    let out = run(&dlrm2025::IMPORTER, &fixture("dlrm2025.csv"), None, 1);
    let d = &out.report.derived;
    // app_120 (8) and app_103 (1) are in the slice for their isolated replacements; a
    // deletion followed within 300 s by a creation of the same app and role, alone.
    assert_eq!(d["isolated_replacements"], 9.0);
    let per_day = 1.0 - (-9.0 / d["instance_days"]).exp();
    assert!((d["pod_failure_per_day"] - per_day).abs() < 1e-6, "{d:?}");
    assert!(d["instance_days"] > 1_000.0 && d["instance_days"] < 10_000.0);
}

#[test]
fn dlrm2025_steps_follow_the_recorded_counts() {
    use dlsim_model::scenario::TruthSettings;
    let out = run(&dlrm2025::IMPORTER, &fixture("dlrm2025.csv"), None, 1);
    let truth = TruthSettings::default();
    let mut below_peak = 0;
    for j in &out.jobs {
        let o = j.observed.as_ref().unwrap();
        let end = j.submit_s + o.duration_s.unwrap();
        // The recorded counts' samples, integrated here independently of `synth`.
        let mut samples = 0.0;
        for (k, e) in o.scale.iter().enumerate() {
            let until = o.scale.get(k + 1).map_or(end, |n| n.t_s).min(end);
            let mut at = j.clone();
            at.ps = e.ps.clamp(1, j.ps);
            at.workers = e.workers.clamp(1, j.workers);
            samples += until.saturating_sub(e.t_s) as f64 * synth::requested_rate(&at, &truth);
        }
        let steps = ((samples / f64::from(j.batch_size)).ceil() as u64).max(1);
        assert_eq!(j.steps, steps, "{}", o.name);
        let peak = o.duration_s.unwrap() as f64 * synth::requested_rate(j, &truth);
        if samples < 0.99 * peak {
            below_peak += 1;
        }
    }
    assert!(
        below_peak > 0,
        "some apps run below their peak for part of their life"
    );
}

#[test]
fn openb_without_times_arrives_at_zero_with_drawn_steps() {
    let out = run(
        &openb::IMPORTER,
        &fixture("openb_multigpu50.csv"),
        Some(fixture("openb_nodes.csv")),
        1,
    );
    assert_eq!(out.report.rows_read, 183);
    assert_eq!(out.jobs.len(), 183, "no phase: nothing left out");
    let (lo, hi) = synth::STEPS_RANGE;
    for j in &out.jobs {
        let o = j.observed.as_ref().unwrap();
        assert_eq!(
            (j.submit_s, o.duration_s, o.outcome),
            (0, None, Outcome::Unknown)
        );
        assert!(j.synthesized.iter().any(|f| f == "submit_s"));
        assert!((lo as u64..=hi as u64).contains(&j.steps), "{}", j.steps);
    }
    let mut steps: Vec<u64> = out.jobs.iter().map(|j| j.steps).collect();
    steps.sort_unstable();
    steps.dedup();
    assert!(steps.len() > 150, "steps are drawn per job");
}

#[test]
fn odd_rows_are_repaired_and_counted_or_stop_a_strict_import() {
    let cases = [
        ("openb_cpu050.csv", &openb::IMPORTER, "memory_mib", 1),
        ("openb_gpushare40.csv", &openb::IMPORTER, "memory_mib", 1),
        ("openb_multigpu50.csv", &openb::IMPORTER, "memory_mib", 1),
        ("nasa-ipsc-202.swf.gz", &swf::IMPORTER, "run_time", 2),
    ];
    for (name, format, field, repaired) in cases {
        let nodes = (format == &openb::IMPORTER).then(|| fixture("openb_nodes.csv"));
        let mut opts = ImportOptions {
            nodes,
            ..ImportOptions::default()
        };
        let out = import(format, &fixture(name), &opts).unwrap();
        let counted: u64 = out
            .report
            .repaired
            .iter()
            .filter(|(k, _)| k.starts_with(field))
            .map(|(_, v)| v)
            .sum();
        assert_eq!(counted, repaired, "{name}: {:?}", out.report.repaired);
        opts.strict = true;
        let err = import(format, &fixture(name), &opts).unwrap_err();
        assert_eq!(err.field.as_deref(), Some(field), "{name}: {err}");
        assert!(
            err.line.is_some() && err.to_string().contains("--strict"),
            "{err}"
        );
    }
    // The openb pod without a memory request gets the memory model's need, marked.
    let out = run(
        &openb::IMPORTER,
        &fixture("openb_cpu050.csv"),
        Some(fixture("openb_nodes.csv")),
        1,
    );
    let j = out
        .jobs
        .iter()
        .find(|j| j.observed.as_ref().unwrap().name == "openb-pod-1693")
        .unwrap();
    assert!(j.worker_mem_mb >= 3_072, "{}", j.worker_mem_mb);
    assert!(j.synthesized.iter().any(|f| f == "worker_mem_mb"));
}

#[test]
fn pai2020_units_roles_and_status() {
    let out = run(
        &pai2020::IMPORTER,
        &fixture("pai_task_table.csv"),
        Some(fixture("pai_machine_spec.csv")),
        1,
    );
    let by = |name: &str| {
        out.jobs
            .iter()
            .find(|j| j.observed.as_ref().unwrap().name == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let a = by("a1b2c3");
    assert_eq!((a.ps, a.ps_cpu, a.workers, a.worker_cpu), (2, 6.0, 8, 6.0));
    assert_eq!(a.submit_s, 0);
    assert_eq!(a.observed.as_ref().unwrap().duration_s, Some(3_600));
    assert_eq!(
        out.report.notes["auxiliary task dropped (evaluator, chief, ...)"],
        1
    );
    let half = by("d4e5f6");
    assert_eq!(
        (half.ps, half.worker_gpu, half.worker_cpu, half.submit_s),
        (0, 1, 4.0, 500)
    );
    assert_eq!(
        by("g7h8i9").observed.as_ref().unwrap().outcome,
        Outcome::Failed
    );
    assert_eq!(by("g7h8i9").worker_gpu, 8);
    let running = by("j1k2l3").observed.as_ref().unwrap();
    assert_eq!(running.outcome, Outcome::Censored);
    assert_eq!(
        running.duration_s,
        Some(10_000 - 2_000),
        "runs until the file's latest time"
    );
    assert_eq!(
        by("v4w5x6").observed.as_ref().unwrap().outcome,
        Outcome::Failed
    );
    assert_eq!(out.report.skipped_by_rule["Waiting task: never started"], 1);
    assert_eq!(out.jobs.len(), 8);
}

#[test]
fn philly_and_swf_keep_real_times() {
    let p = run(&philly::IMPORTER, &fixture("philly.csv"), None, 1);
    assert_eq!(p.jobs.len(), 200);
    assert_eq!(p.jobs[0].submit_s, 0, "relative to the earliest timestamp");
    assert!(p
        .jobs
        .iter()
        .all(|j| j.user.starts_with("vc-") && j.ps == 0));
    let s = run(&swf::IMPORTER, &fixture("nasa-ipsc-202.swf.gz"), None, 1);
    assert_eq!(s.jobs.len(), 202);
    assert_eq!(s.nodes.len(), 1);
    assert_eq!(s.nodes[0].cores, 128.0, "MaxProcs header");
    // Job 1: submit 0, run 1451 s on 128 processors; the NASA log has no status (-1).
    let j = &s.jobs[0];
    let o = j.observed.as_ref().unwrap();
    assert_eq!(
        (j.submit_s, j.worker_cpu, o.duration_s),
        (0, 128.0, Some(1451))
    );
    assert_eq!(o.outcome, Outcome::Unknown);
    assert_eq!(j.user, "u1");
}

/// Copies a fixture's text with line `line` (1-based) replaced.
fn with_bad_line(name: &str, line: usize, text: &str) -> PathBuf {
    let src = std::fs::read_to_string(fixture(name)).unwrap();
    let mut lines: Vec<&str> = src.lines().collect();
    lines[line - 1] = text;
    let path = scratch("bad").join(name);
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

/// (format, fixture, line to replace, its new text, field the error must name, nodes).
type BadCase = (
    Format,
    &'static str,
    usize,
    &'static str,
    &'static str,
    Option<PathBuf>,
);

#[test]
fn malformed_rows_name_line_and_field_or_are_counted() {
    let cases: Vec<BadCase> = vec![
        (
            &openb::IMPORTER,
            "openb_pods.csv",
            3,
            "openb-pod-x,abc,16384,1,1000,,LS,Running,0,10,0",
            "cpu_milli",
            Some(fixture("openb_nodes.csv")),
        ),
        (
            &openb::IMPORTER,
            "openb_pods.csv",
            4,
            "openb-pod-y,1000,1024,1,1000,,LS,Sleeping,0,10,0",
            "pod_phase",
            Some(fixture("openb_nodes.csv")),
        ),
        // 500 cores fit no node of the openb node list.
        (
            &openb::IMPORTER,
            "openb_pods.csv",
            5,
            "openb-pod-z,500000,1024,0,0,,LS,Running,0,10,0",
            "worker_cpu",
            Some(fixture("openb_nodes.csv")),
        ),
        (
            &dlrm2025::IMPORTER,
            "dlrm2025.csv",
            6,
            "i,XN,app_1,8,8,1,1,25,25,40.0,40.0,1,1,2,,,",
            "role",
            None,
        ),
        (
            &pai2020::IMPORTER,
            "pai_task_table.csv",
            2,
            "a1b2c3,worker,8,Terminated,1590000010.0,1590003590.0,600,lots,,",
            "plan_mem",
            None,
        ),
        (
            &philly::IMPORTER,
            "philly.csv",
            7,
            "2017-10-09 07:01:55,66.0,1,66.0",
            "row",
            None,
        ),
        (
            &philly::IMPORTER,
            "philly.csv",
            8,
            "yesterday,66.0,1,66.0,11cb48",
            "timestamp",
            None,
        ),
    ];
    for (format, name, line, text, field, nodes) in cases {
        let path = with_bad_line(name, line, text);
        let mut opts = ImportOptions {
            skip_bad: false,
            strict: false,
            seed: 1,
            nodes,
        };
        let err = import(format, &path, &opts).unwrap_err();
        assert_eq!(
            (err.line, err.field.as_deref()),
            (Some(line), Some(field)),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains(&format!(":{line}: field `{field}`")),
            "{err}"
        );
        opts.skip_bad = true;
        let out = import(format, &path, &opts).unwrap();
        assert_eq!(
            out.report.skipped_bad.values().sum::<u64>(),
            1,
            "{name}: {:?}",
            out.report
        );
        assert!(
            out.report.skipped_bad.keys().all(|k| k.starts_with(field)),
            "{:?}",
            out.report
        );
    }
}

#[test]
fn swf_bad_row_in_gzip_names_its_line() {
    use std::io::{Read, Write};
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(fixture("nasa-ipsc-202.swf.gz")).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let first_job = text.lines().position(|l| !l.starts_with(';')).unwrap() + 1;
    let mut lines: Vec<&str> = text.lines().collect();
    lines[first_job] = "2 1460 -1 3726 128 -1";
    let path = scratch("swf").join("bad.swf.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::fast(),
    );
    gz.write_all(lines.join("\n").as_bytes()).unwrap();
    gz.finish().unwrap();
    let err = import(&swf::IMPORTER, &path, &ImportOptions::default()).unwrap_err();
    assert_eq!(
        (err.line, err.field.as_deref()),
        (Some(first_job + 1), Some("row"))
    );
}

#[test]
fn wrong_file_gives_a_header_error() {
    let err = import(
        &openb::IMPORTER,
        &fixture("philly.csv"),
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.line, Some(1));
    assert!(err.message.contains("expected the header"), "{err}");
}

/// The registry is the one list of formats: names are unique, each names the module that
/// documents its mapping (the trace header's `mapping`), and lookup by name finds it.
#[test]
fn the_registry_lists_each_format_once_with_its_mapping_module() {
    let names = format_names();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    for f in IMPORTERS {
        assert_eq!(format(f.name), Some(*f));
        let module = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src")
            .join(format!("{}.rs", f.name));
        assert!(module.is_file(), "{} has no module {module:?}", f.name);
        assert!(!f.source.is_empty());
    }
    assert_eq!(format("nope"), None);
}
