//! `dlsim reproduce`: runs the paper experiments of `scenarios/paper/<paper>/paper.json`
//! (seeds paired across arms, in parallel, with a progress bar) and writes `reproduce.md`,
//! `reproduce.html` and `reproduce.json` into `--out`, all at once (a temporary folder
//! renamed into place); `--keep-runs` adds each simulated run's own outputs under
//! `runs/PAPER/EXPERIMENT/ARM/seed-N/`. `--check FILE` compares the run with a committed reproduction: it
//! prints what moved (the counts within ±25% and agreeing before and after, and each row
//! that crossed the band or changed direction) and exits 1 when a row's direction flips or
//! its value leaves its band (see `dlsim_reproduce::render`). `--set` changes one of the
//! manifests' choices for the run (`dlsim_reproduce::set`), so a diagnosis's "this choice
//! moves the row by so much" is a command.

use crate::BadInput;
use clap::Args;
use dlsim_reproduce::{manifest::PAPERS, render, Options, Report};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
pub struct ReproduceArgs {
    /// Which paper's numbers: dlrover-rm, dlrover, kale, picasso or all.
    #[arg(long, default_value = "all")]
    pub paper: String,
    /// Fewer seeds and smaller runs of the same shapes (what CI runs, a few minutes).
    #[arg(long)]
    pub quick: bool,
    /// Only the experiments holding these row ids (repeatable, or comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub row: Vec<String>,
    /// Worker threads [default: all cores]; results are identical on any count.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output folder for reproduce.{md,html,json}.
    #[arg(long, default_value = "reports/runs/reproduce")]
    pub out: PathBuf,
    /// Folder of the paper manifests.
    #[arg(long, default_value = "scenarios/paper")]
    pub papers_dir: PathBuf,
    /// Change one choice of the manifests for this run, EXPERIMENT:KEY=VALUE (repeatable):
    /// `table3:arms.madu=madu[drain_min=20]` (an arm's policy), `*:picasso.counted_batches=100`
    /// (a PICASSO setup field), `production-day:cluster.groups.0.count=300` (a dotted path
    /// into the experiment's scenario). EXPERIMENT is an id (every paper's experiment of that
    /// id), PAPER/ID (`dlrover/production-day`: that paper's only) or `*` (every experiment
    /// the key fits). The report lists the overrides and every row's command carries them.
    #[arg(long = "set", value_name = "EXPERIMENT:KEY=VALUE")]
    pub set: Vec<String>,
    /// A committed reproduce.json to compare this run with: prints the rows that crossed
    /// the ±25% band or changed direction, and exits 1 on a flipped direction or a value
    /// out of its band.
    #[arg(long)]
    pub check: Option<PathBuf>,
    /// Also write every simulated run's own outputs (summary.json, jobs.csv, timeline.csv,
    /// and observations.csv or online.csv where the run has them), as `dlsim replay` would,
    /// under OUT/runs/PAPER/EXPERIMENT/ARM/seed-N/: what a row's number was computed from.
    #[arg(long)]
    pub keep_runs: bool,
    /// Print nothing but errors and the headline.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: &ReproduceArgs) -> anyhow::Result<ExitCode> {
    let papers = papers_and_threads(&args.paper, args.threads)?;
    let committed = args.check.as_ref().map(|p| read_report(p)).transpose()?;
    let overrides = args
        .set
        .iter()
        .map(|s| dlsim_reproduce::set::Override::parse(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(BadInput)?;
    let opts = Options {
        root: args.papers_dir.clone(),
        papers,
        quick: args.quick,
        rows: args.row.iter().cloned().collect(),
        overrides,
        keep_runs: args.keep_runs,
    };
    let manifests = dlsim_reproduce::load(&opts).map_err(BadInput)?;
    if !opts.rows.is_empty() {
        let known: Vec<&str> = manifests
            .iter()
            .flat_map(|p| p.file.experiments.iter())
            .flat_map(|e| e.rows.iter().map(|r| r.id.as_str()))
            .collect();
        if let Some(bad) = opts.rows.iter().find(|r| !known.contains(&r.as_str())) {
            return Err(BadInput(format!("--row: no row `{bad}` in the selected papers")).into());
        }
    }
    dlsim_reproduce::validate(&manifests, &opts).map_err(BadInput)?;
    // A bad --out fails now, not after the runs (what it may hold is checked on writing).
    dlsim_fsio::check_folder_target(&args.out).map_err(|e| BadInput(format!("--out: {e}")))?;
    let bar = progress_bar(args.quiet, "{pos}/{len} runs, eta {eta}");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()?;
    let start = Instant::now();
    let report = pool
        .install(|| {
            dlsim_reproduce::run(&manifests, &opts, &|done, total| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            })
        })
        .map_err(BadInput)?;
    bar.finish_and_clear();
    write_outputs(&args.out, &report)?;
    println!("{}.", render::headline(&report));
    if !args.quiet {
        println!(
            "{} runs in {:.1} s. Outputs: {}",
            report.rows.len(),
            start.elapsed().as_secs_f64(),
            args.out.join("reproduce.md").display()
        );
    }
    if let Some(c) = committed {
        for line in render::movement(&report, &c) {
            println!(
                "against {}: {line}",
                args.check.as_ref().expect("checked").display()
            );
        }
        let problems = render::check(&report, &c);
        if !problems.is_empty() {
            for p in &problems {
                eprintln!("reproduce check: {p}");
            }
            eprintln!(
                "reproduce check: {} problem(s) against {}",
                problems.len(),
                args.check.as_ref().expect("checked").display()
            );
            return Ok(ExitCode::from(1));
        }
        println!(
            "reproduce check: every row within its band of {}",
            args.check.as_ref().expect("checked").display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The papers `--paper` selects (`all`, or one of [`PAPERS`]), after checking `--threads`:
/// what `reproduce` and `sensitivity` take alike.
pub(crate) fn papers_and_threads(
    paper: &str,
    threads: Option<usize>,
) -> anyhow::Result<Vec<String>> {
    if threads == Some(0) {
        return Err(BadInput("--threads: must be at least 1".into()).into());
    }
    if paper == "all" {
        Ok(PAPERS.iter().map(|s| s.to_string()).collect())
    } else if PAPERS.contains(&paper) {
        Ok(vec![paper.to_string()])
    } else {
        Err(BadInput(format!(
            "--paper: unknown paper `{paper}` (known: {}, all)",
            PAPERS.join(", ")
        ))
        .into())
    }
}

/// A progress bar of unknown length (the run sets it) showing the elapsed time, a bar and
/// `tail`; hidden with `--quiet`. `reproduce` and `sensitivity` draw theirs alike.
pub(crate) fn progress_bar(quiet: bool, tail: &str) -> ProgressBar {
    let bar = ProgressBar::new(0);
    if quiet {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template(&format!("{{elapsed_precise}} [{{bar:40}}] {tail}"))
            .expect("valid template"),
    );
    bar
}

fn read_report(p: &Path) -> anyhow::Result<Report> {
    let text = dlsim_fsio::read_to_string_limited(p, dlsim_fsio::MAX_INPUT_BYTES)
        .map_err(|e| BadInput(format!("{}: cannot read: {e}", p.display())))?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        BadInput(format!(
            "{}: field `{}`: {}",
            p.display(),
            e.path(),
            e.inner()
        ))
        .into()
    })
}

/// Writes the three files and the figures into a staging folder beside `out`, then
/// renames it into place whole (`dlsim_fsio`); `out` may hold only what this writes.
fn write_outputs(out: &Path, r: &Report) -> anyhow::Result<()> {
    let mut expected = vec![
        "reproduce.json".to_string(),
        "reproduce.md".into(),
        "reproduce.html".into(),
    ];
    for f in &r.figures {
        expected.extend(["png", "svg", "pdf"].map(|ext| format!("{}.{ext}", f.name)));
    }
    // Always named, so a folder an earlier `--keep-runs` filled is replaced whole.
    expected.push("runs".into());
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    let staged =
        dlsim_fsio::stage_dir(out, &expected).map_err(|e| BadInput(format!("--out: {e}")))?;
    if let Err(e) = fill(&staged, r) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(e);
    }
    Ok(dlsim_fsio::commit_dir(&staged, out)?)
}

/// Writes the report's files into `dir`.
fn fill(dir: &Path, r: &Report) -> anyhow::Result<()> {
    use dlsim_fsio::write_atomic;
    let json = serde_json::to_string_pretty(r).expect("report serialises") + "\n";
    write_atomic(&dir.join("reproduce.json"), json.as_bytes())?;
    write_atomic(&dir.join("reproduce.md"), render::markdown(r).as_bytes())?;
    write_atomic(&dir.join("reproduce.html"), render::html(r).as_bytes())?;
    for run in &r.runs {
        let files = run.files.iter().map(|(n, t)| (n.as_str(), t.as_str()));
        dlsim_model::write_files(&dir.join("runs").join(&run.path), files)?;
    }
    for f in &r.figures {
        let chart = dlsim_plot::Chart {
            title: f.title.clone(),
            x_label: f.x_label.clone(),
            y_label: f.y_label.clone(),
            ..dlsim_plot::Chart::default()
        };
        let series: Vec<dlsim_plot::Series> = f
            .lines
            .iter()
            .map(|(name, points)| dlsim_plot::Series {
                name: name.clone(),
                points: points.clone(),
                ..dlsim_plot::Series::default()
            })
            .collect();
        dlsim_plot::line_chart(&dir.join(&f.name), &chart, &series)
            .map_err(|e| anyhow::anyhow!("drawing {}: {e}", f.name))?;
    }
    Ok(())
}
