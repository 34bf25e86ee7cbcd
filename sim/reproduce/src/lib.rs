//! `dlsim reproduce`: every published number of the source papers that dlsim can express,
//! next to dlsim's value for it, with a 95% confidence interval over seeds, whether the
//! direction agrees and how far the magnitude is off.
//!
//! The experiments are data, not code: `scenarios/paper/<paper>/paper.json`
//! ([`manifest`]) names each experiment's scenario (built from the paper's stated setup),
//! its arms (policy specs) and seeds, and the rows it reproduces, each a metric expression
//! ([`metric`]) over the run's own outputs. Every arm runs every seed (seeds `1..=n`), so
//! comparisons between arms are paired by seed and face the same faults. Runs go in
//! parallel on rayon; the result is the same on any thread count, since each run is
//! deterministic and rows are assembled in manifest order. [`render`] writes
//! `reproduce.md`, `reproduce.html` and `reproduce.json`, and checks a run against the
//! committed bands (`--check`).
//!
//! Nothing here tunes anything: a scenario's parameters come from the paper's stated setup,
//! the simulated truth is the same for every paper, and a row outside +-25% carries a
//! written diagnosis in its manifest instead of a correction factor.

pub mod manifest;
pub mod metric;
pub mod render;
pub mod sensitivity;
pub mod set;

use manifest::{Compare, Paper, Source};
use metric::RunData;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The folder of the paper manifests (`scenarios/paper`).
    pub root: PathBuf,
    pub papers: Vec<String>,
    pub quick: bool,
    /// Only the experiments holding these row ids (all when empty).
    pub rows: BTreeSet<String>,
    /// `--set` overrides ([`set`]), applied on load.
    pub overrides: Vec<set::Override>,
    /// Keep each simulated run's own outputs in [`Report::runs`] (`--keep-runs`).
    pub keep_runs: bool,
}

/// Whether dlsim moves the same way as the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Agrees,
    Flips,
    /// An absolute level with no "before" to move from, or a paper value of 0.
    NotApplicable,
}

impl Direction {
    /// The name `reproduce.json` gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Agrees => "agrees",
            Direction::Flips => "flips",
            Direction::NotApplicable => "not_applicable",
        }
    }
}

/// One published number and dlsim's.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RowResult {
    pub paper: String,
    pub experiment: String,
    pub id: String,
    #[serde(rename = "where")]
    pub at: String,
    pub claim: String,
    pub unit: String,
    pub paper_value: f64,
    /// A published range the paper value stands for ([`manifest::RowFile::range`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_range: Option<[f64; 2]>,
    /// A published bound the paper value is ([`manifest::RowFile::bound`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_bound: Option<manifest::Bound>,
    /// Mean over seeds; None when the metric could not be computed (`error` says why).
    pub ours: Option<f64>,
    /// Half-width of the 95% Student t interval over seeds (None with one seed).
    pub ci95: Option<f64>,
    pub seeds: usize,
    pub direction: Direction,
    /// (ours - paper) / |paper|; None when the paper's value is 0.
    pub rel_error: Option<f64>,
    /// Within +-25% of the paper (for a paper value of 0: |ours| < 0.5 in its unit).
    pub within_25: bool,
    pub error: Option<String>,
    pub diagnosis: Option<String>,
    /// The command that reproduces this row alone.
    pub command: String,
}

/// A published number dlsim cannot express yet.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Unexpressed {
    pub paper: String,
    pub item: manifest::Unexpressed,
}

/// The whole reproduction.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub format: String,
    pub quick: bool,
    pub papers: Vec<String>,
    pub rows: Vec<RowResult>,
    pub not_expressible: Vec<Unexpressed>,
    /// Figures where the paper has one: drawn from seed 1 of each arm (full runs only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<Figure>,
    /// The `--set` overrides the run was made with ([`set`]): not the manifests' choices.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// The experiments a `--row` run selected (`paper/experiment`); empty when the run
    /// covered every experiment of its papers. `--check` looks for lost rows only there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub experiments: Vec<String>,
    /// With [`Options::keep_runs`]: every simulated run's outputs, in task order (paper,
    /// experiment, arm, seed). Not part of `reproduce.json`: `dlsim reproduce --keep-runs`
    /// writes them as folders beside it.
    #[serde(skip)]
    pub runs: Vec<KeptRun>,
}

/// One simulated run of a reproduction, as `dlsim replay` would have written it.
#[derive(Clone, Debug)]
pub struct KeptRun {
    /// `paper/experiment/arm/seed-N`: where `--keep-runs` writes it under `runs/`.
    pub path: String,
    /// The run's output files (name, contents), those `dlsim_model::RunOutput::files`
    /// gives: `summary.json`, `jobs.csv`, `timeline.csv`, and where the run has them
    /// `observations.csv` (an experiment that traced its profiler) and `online.csv`.
    pub files: Vec<(String, String)>,
}

impl Report {
    /// Whether this run covered `experiment` of `paper` (so a committed row of it that
    /// this run lacks is lost, not merely unselected).
    pub fn covers(&self, paper: &str, experiment: &str) -> bool {
        self.papers.iter().any(|p| p == paper)
            && (self.experiments.is_empty()
                || self
                    .experiments
                    .iter()
                    .any(|e| e.split_once('/') == Some((paper, experiment))))
    }
}

/// One figure: a titled set of lines, one per arm, written as `<name>.png` and `.svg`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Figure {
    pub name: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// (arm, points)
    pub lines: Vec<(String, Vec<(f64, f64)>)>,
}

/// One run to make: an experiment's arm at one seed.
struct Task {
    paper: usize,
    exp: usize,
    arm: String,
    seed: u64,
}

/// Loads the manifests of `opts.papers` (errors name file, line and field) and applies
/// the `--set` overrides (errors name the override).
pub fn load(opts: &Options) -> Result<Vec<Paper>, String> {
    let mut papers = opts
        .papers
        .iter()
        .map(|p| Paper::load(&opts.root, p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    set::apply(&mut papers, &opts.overrides)?;
    Ok(papers)
}

/// Every scenario of every selected experiment must load under every arm before anything
/// runs: a bad manifest costs nothing.
pub fn validate(papers: &[Paper], opts: &Options) -> Result<(), String> {
    for p in papers {
        for (ei, e) in p.file.experiments.iter().enumerate() {
            if selected(p, ei, opts) {
                for spec in e.arms.values() {
                    prepare(p, ei, spec, opts.quick, 1)?;
                }
            }
        }
    }
    Ok(())
}

/// One arm's run, loaded and validated: its scenario (overrides and seed applied) and its
/// policy; `None` for a PICASSO experiment, which has no scenario.
struct Prepared(Box<Scenario>, Box<dyn dlsim_model::policy::Policy>);

fn prepare(
    p: &Paper,
    exp: usize,
    spec: &str,
    quick: bool,
    seed: u64,
) -> Result<Option<Prepared>, String> {
    let Source::Scenario(name) = &p.file.experiments[exp].source else {
        return Ok(None);
    };
    let text = scenario_text(p, exp, quick, seed)?;
    let path = p.dir().join(name);
    let arm = |e: &dyn std::fmt::Display| format!("{}: arm `{spec}`: {e}", p.path.display());
    let sc = Scenario::from_text(&path, &text).map_err(|e| e.to_string())?;
    let policy = dlsim_policies::build(spec).map_err(|e| arm(&e))?;
    dlsim_model::scenario::check_policy_pods(&sc.nodes, policy.as_ref()).map_err(|e| arm(&e))?;
    Ok(Some(Prepared(Box::new(sc), policy)))
}

use dlsim_model::Scenario;

fn selected(p: &Paper, exp: usize, opts: &Options) -> bool {
    opts.rows.is_empty()
        || p.file.experiments[exp]
            .rows
            .iter()
            .any(|r| opts.rows.contains(&r.id))
}

/// What decides an experiment's results, as text: its arms, its source (a PICASSO setup
/// or a scenario file) and its scenario with every override applied. Two loads of a
/// manifest give an experiment the same fingerprint exactly when they run it the same way
/// (`sensitivity` re-runs only the experiments a variant changes).
pub fn fingerprint(p: &Paper, exp: usize, quick: bool) -> Result<String, String> {
    let e = &p.file.experiments[exp];
    let scenario = match e.source {
        Source::Scenario(_) => scenario_text(p, exp, quick, 1)?,
        Source::Picasso(_) => String::new(),
    };
    Ok(format!("{:?}\n{:?}\n{scenario}", e.arms, e.source))
}

/// The experiment's scenario text with its overrides (the manifest's, then `--set`'s)
/// and `seed` applied.
fn scenario_text(p: &Paper, exp: usize, quick: bool, seed: u64) -> Result<String, String> {
    let e = &p.file.experiments[exp];
    let text = p.scenario_text[exp].as_deref().unwrap_or("{}");
    let Ok(mut v) = serde_json::from_str::<serde_json::Value>(text) else {
        // Not JSON: hand the text over unchanged so the loader reports where it breaks.
        return Ok(text.to_string());
    };
    let quick_params = quick.then_some(&e.quick).into_iter().flatten();
    for (k, val) in e.params.iter().chain(quick_params) {
        dlsim_model::scenario::set_dotted(&mut v, k, val.clone());
    }
    for (k, val) in &e.overrides {
        set::set_path(&mut v, k, val.clone()).map_err(|why| format!("--set {k}: {why}"))?;
    }
    dlsim_model::scenario::set_dotted(&mut v, "seed", serde_json::Value::from(seed));
    Ok(serde_json::to_string_pretty(&v).expect("JSON values serialise"))
}

/// Makes one run. Errors are input errors found late (validated above, so none expected).
fn run_task(papers: &[Paper], t: &Task, quick: bool, keep: bool) -> Result<RunData, String> {
    let p = &papers[t.paper];
    let e = &p.file.experiments[t.exp];
    match prepare(p, t.exp, &e.arms[&t.arm], quick, t.seed)? {
        None => {
            let Source::Picasso(setup) = &e.source else {
                unreachable!("prepare gives None for PICASSO experiments only")
            };
            let mbs: BTreeSet<String> = p.metrics[t.exp]
                .iter()
                .filter_map(|m| match m {
                    metric::Metric::HitRatio { cache_mb } => Some(cache_mb.to_string()),
                    _ => None,
                })
                .collect();
            Ok(RunData {
                hit_ratios: picasso_hit_ratios(setup, &mbs),
                ..RunData::default()
            })
        }
        Some(Prepared(mut sc, policy)) => {
            sc.trace_observations = p.metrics[t.exp].iter().any(|m| m.needs_observations());
            let out = dlsim_model::run(&sc, policy);
            let kept = keep.then(|| KeptRun {
                path: format!("{}/{}/{}/seed-{}", p.file.paper, e.id, t.arm, t.seed),
                files: out
                    .files()
                    .into_iter()
                    .map(|(name, text)| (name.to_string(), text.to_string()))
                    .collect(),
            });
            Ok(RunData {
                summary: serde_json::to_value(&out.summary).expect("summary serialises"),
                jobs: Some(metric::JobsTable::parse(&out.jobs_csv)),
                observations: out.observations_csv,
                kept,
                ..RunData::default()
            })
        }
    }
}

/// The Criteo Kaggle dataset's 26 embedding table sizes (distinct IDs per categorical
/// column, as DLRM's data loader counts them), sorted: the shape of a production model's
/// table sizes where a paper states only its total parameters.
const CRITEO_TABLE_SIZES: [f64; 26] = [
    3.0,
    4.0,
    10.0,
    15.0,
    18.0,
    24.0,
    27.0,
    105.0,
    305.0,
    583.0,
    633.0,
    1_460.0,
    2_173.0,
    3_194.0,
    5_652.0,
    5_683.0,
    12_517.0,
    14_992.0,
    93_145.0,
    142_572.0,
    286_181.0,
    2_202_608.0,
    5_461_306.0,
    7_046_547.0,
    8_351_593.0,
    10_131_227.0,
];

/// Distinct IDs of each of `n` tables holding `rows` rows in all, smallest first: equal, or
/// the Criteo shape (its sorted sizes interpolated in log at `n` evenly spaced quantiles),
/// scaled to `rows`.
fn table_vocabs(sizes: manifest::TableSizes, n: usize, rows: f64) -> Vec<f64> {
    let shape: Vec<f64> = match sizes {
        manifest::TableSizes::Equal => vec![1.0; n],
        manifest::TableSizes::Criteo => (0..n)
            .map(|i| {
                let q = if n > 1 {
                    i as f64 / (n - 1) as f64 * 25.0
                } else {
                    25.0
                };
                let (lo, f) = ((q.floor() as usize).min(24), q - q.floor().min(24.0));
                let (a, b) = (CRITEO_TABLE_SIZES[lo].ln(), CRITEO_TABLE_SIZES[lo + 1].ln());
                (a + f * (b - a)).exp()
            })
            .collect(),
    };
    let k = rows / shape.iter().sum::<f64>();
    shape.iter().map(|s| (s * k).max(1.0)).collect()
}

/// PICASSO Table VI: the expected hit ratio over the unique IDs of one lookup (`batch`
/// samples: a micro-batch under D-interleaving) of a hot storage of
/// `MB` megabytes once HybridHash has counted `counted_batches` batches (its 100-batch
/// warm-up and the batches since: Algorithm 1 keeps counting and re-flushes the top-k;
/// `dlsim_kernel::cache::HitCurve`), on the
/// paper's stated dataset: `params / emb_dim` rows spread over the tables by
/// `table_sizes` (sequence features take the largest tables: they are behaviour sequences
/// of item IDs), every table's IDs following the Zipf law under which 20% of them cover
/// `top20_coverage` of its draws, a row taking `4 x emb_dim` bytes. Analytic, so the same
/// for every seed.
fn picasso_hit_ratios(
    s: &manifest::PicassoSetup,
    mbs: &BTreeSet<String>,
) -> std::collections::BTreeMap<String, f64> {
    use dlsim_kernel::cache::{zipf_exponent_for_coverage, HitCurve, TableStream};
    let n = (s.tables + s.seq_tables) as usize;
    let vocabs = table_vocabs(s.table_sizes, n, s.params / s.emb_dim);
    // Tables of the same shape form one stream (`TableStream::tables`): with equal sizes
    // the curve then costs two streams instead of one per table.
    let mut streams: Vec<TableStream> = Vec::new();
    for (i, &vocab) in vocabs.iter().enumerate() {
        let seq = i >= s.tables as usize;
        let t = TableStream {
            tables: 1.0,
            vocab,
            zipf_s: zipf_exponent_for_coverage(vocab, 0.2, s.top20_coverage),
            draws_per_batch: s.batch * if seq { f64::from(s.seq_len) } else { 1.0 },
            row_bytes: 4.0 * s.emb_dim,
        };
        // The exponent follows from the vocabulary and the row size is the model's.
        match streams.last_mut() {
            Some(last) if last.vocab == vocab && last.draws_per_batch == t.draws_per_batch => {
                last.tables += 1.0
            }
            _ => streams.push(t),
        }
    }
    let curve = HitCurve::new(&streams, s.counted_batches);
    mbs.iter()
        .map(|mb| {
            let bytes = mb.parse::<f64>().expect("validated") * 1e6;
            (mb.clone(), curve.at(bytes))
        })
        .collect()
}

/// Runs every selected experiment and assembles the rows. `progress` is called once per
/// finished run with (done, total).
pub fn run(
    papers: &[Paper],
    opts: &Options,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Report, String> {
    let mut tasks = Vec::new();
    for (pi, p) in papers.iter().enumerate() {
        for (ei, e) in p.file.experiments.iter().enumerate() {
            if !selected(p, ei, opts) {
                continue;
            }
            let n = if opts.quick { e.quick_seeds } else { e.seeds };
            for arm in e.arms.keys() {
                for seed in 1..=u64::from(n) {
                    tasks.push(Task {
                        paper: pi,
                        exp: ei,
                        arm: arm.clone(),
                        seed,
                    });
                }
            }
        }
    }
    let total = tasks.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Result<RunData, String>> = tasks
        .par_iter()
        .map(|t| {
            let r = run_task(papers, t, opts.quick, opts.keep_runs);
            progress(
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
                total,
            );
            r
        })
        .collect();
    let mut by_key = std::collections::BTreeMap::new();
    let mut runs = Vec::new();
    for (t, r) in tasks.iter().zip(results) {
        let mut r = r?;
        runs.extend(r.kept.take());
        by_key.insert((t.paper, t.exp, t.arm.clone(), t.seed), r);
    }
    let mut rows = Vec::new();
    let mut unexpressed = Vec::new();
    let mut figures = Vec::new();
    let mut experiments = Vec::new();
    for (pi, p) in papers.iter().enumerate() {
        for (ei, e) in p.file.experiments.iter().enumerate() {
            if !selected(p, ei, opts) {
                continue;
            }
            if !opts.rows.is_empty() {
                experiments.push(format!("{}/{}", p.file.paper, e.id));
            }
            let n = if opts.quick { e.quick_seeds } else { e.seeds };
            let seed1: Vec<(&String, &RunData)> = e
                .arms
                .keys()
                .map(|a| (a, &by_key[&(pi, ei, a.clone(), 1)]))
                .collect();
            // The quick run is CI's check: no figures to write or commit.
            if !opts.quick {
                figures.extend(figures_of(&p.file.paper, &e.id, &e.what, &seed1));
            }
            let mut exp_rows: Vec<RowResult> = Vec::new();
            for (ri, r) in e.rows.iter().enumerate() {
                let m = &p.metrics[ei][ri];
                let per_seed: Result<Vec<f64>, String> = (1..=u64::from(n))
                    .map(|seed| {
                        let get = |arm: &str| &by_key[&(pi, ei, arm.to_string(), seed)];
                        let keep = m
                            .subset()
                            .map(|f| {
                                let base = r.base.as_deref().and_then(|b| b.split('|').next());
                                let from: &RunData = get(base.unwrap_or(&r.arm));
                                from.jobs.as_ref().map(|j| j.ids(f)).ok_or("no jobs.csv")
                            })
                            .transpose()?;
                        let a = get(&r.arm).eval(m, keep.as_ref())?;
                        match (r.compare, &r.base) {
                            (Compare::Value, _) => Ok(a * r.scale),
                            (Compare::Change, Some(b)) | (Compare::Ratio, Some(b)) => {
                                let mut best = f64::INFINITY;
                                for arm in b.split('|') {
                                    best = best.min(get(arm).eval(m, keep.as_ref())?);
                                }
                                let b = best;
                                if b == 0.0 {
                                    return Err("the base arm's value is 0".to_string());
                                }
                                Ok(if r.compare == Compare::Change {
                                    100.0 * (a - b) / b
                                } else {
                                    a / b
                                })
                            }
                            _ => unreachable!("validated: change and ratio rows have a base"),
                        }
                    })
                    .collect();
                let (ours, ci95, error) = match per_seed {
                    Ok(xs) if xs.iter().all(|x| x.is_finite()) => {
                        let (m, h) = dlsim_fit::metrics::mean_ci95(&xs);
                        (Some(m), h.is_finite().then_some(h), None)
                    }
                    Ok(_) => (None, None, Some("a seed gave a non-finite value".into())),
                    Err(msg) => (None, None, Some(msg)),
                };
                let before = r.before.as_ref().and_then(|b| {
                    let i = e.rows.iter().position(|o| &o.id == b)?;
                    Some((e.rows[i].paper, exp_rows.get(i).and_then(|x| x.ours)))
                });
                let direction = direction(r.compare, r.paper, ours, before);
                let rel_error = rel_error(r.paper, r.range, r.bound, ours);
                let within_25 = match (ours, rel_error) {
                    (Some(_), Some(e)) => e.abs() <= 0.25,
                    (Some(o), None) => o.abs() < 0.5,
                    _ => false,
                };
                exp_rows.push(RowResult {
                    paper: p.file.paper.clone(),
                    experiment: e.id.clone(),
                    id: r.id.clone(),
                    at: r.at.clone(),
                    claim: r.claim.clone(),
                    unit: r.unit.clone(),
                    paper_value: r.paper,
                    paper_range: r.range,
                    paper_bound: r.bound,
                    ours,
                    ci95,
                    seeds: n as usize,
                    direction,
                    rel_error,
                    within_25,
                    error,
                    diagnosis: r.diagnosis.clone(),
                    command: format!(
                        "dlsim reproduce --paper {} --row {}{}{} --out reports/runs/reproduce",
                        p.file.paper,
                        r.id,
                        if opts.quick { " --quick" } else { "" },
                        opts.overrides
                            .iter()
                            .map(set::Override::shell_arg)
                            .collect::<String>()
                    ),
                });
            }
            rows.extend(exp_rows);
        }
        if opts.rows.is_empty() {
            unexpressed.extend(p.file.not_expressible.iter().map(|u| Unexpressed {
                paper: p.file.paper.clone(),
                item: u.clone(),
            }));
        }
    }
    Ok(Report {
        format: "dlsim-reproduce/1".into(),
        quick: opts.quick,
        papers: opts.papers.clone(),
        rows,
        not_expressible: unexpressed,
        figures,
        overrides: opts.overrides.iter().map(|o| o.text.clone()).collect(),
        experiments,
        runs,
    })
}

/// The paper-style figures of one experiment from seed 1 of each arm: throughput over time
/// for a single-job run that traced its profiler (DLRover-RM Fig. 10), and the JCT CDF for
/// a run of many jobs (DLRover-RM's before/after comparison).
fn figures_of(paper: &str, exp: &str, what: &str, arms: &[(&String, &RunData)]) -> Vec<Figure> {
    let mut out = Vec::new();
    let title = what.split(':').next().unwrap_or(what).to_string();
    let series: Vec<(String, Vec<(f64, f64)>)> = arms
        .iter()
        .filter_map(|(arm, r)| {
            let obs = r.observations.as_deref()?;
            let batch = r.jobs.as_ref()?.batch_size()?;
            Some((arm.to_string(), metric::steps_series(obs, batch)))
        })
        .filter(|(_, pts)| !pts.is_empty())
        .collect();
    let mut push = |kind: &str, what: &str, x: &str, y: &str, lines: Vec<_>| {
        if !lines.is_empty() {
            out.push(Figure {
                name: format!("{paper}-{exp}-{kind}"),
                title: format!("{title}: {what}"),
                x_label: x.into(),
                y_label: y.into(),
                lines,
            });
        }
    };
    push(
        "steps",
        "throughput over time",
        "minutes since submission",
        "steps/s",
        series,
    );
    let cdfs: Vec<(String, Vec<(f64, f64)>)> = arms
        .iter()
        .filter_map(|(arm, r)| {
            let mut jct = r.jobs.as_ref()?.values("jct_min");
            if jct.len() < 20 {
                return None;
            }
            jct.sort_by(f64::total_cmp);
            let n = jct.len() as f64;
            let pts = jct
                .iter()
                .enumerate()
                .map(|(i, &x)| (x.max(1e-3).log10(), (i + 1) as f64 / n))
                .collect();
            Some((arm.to_string(), pts))
        })
        .collect();
    push(
        "jct-cdf",
        "JCT CDF",
        "log10 JCT (min)",
        "share of completed jobs",
        cdfs,
    );
    out
}

/// (ours - paper) / |paper|; for a published range, the distance to its nearer end relative
/// to that end (0 inside); for a published bound, 0 on its stated side and the distance to
/// it beyond. None when the value it is relative to is 0, or not computed.
fn rel_error(
    paper: f64,
    range: Option<[f64; 2]>,
    bound: Option<manifest::Bound>,
    ours: Option<f64>,
) -> Option<f64> {
    let o = ours?;
    match bound {
        Some(manifest::Bound::AtMost) if o <= paper => return Some(0.0),
        Some(manifest::Bound::AtLeast) if o >= paper => return Some(0.0),
        _ => {}
    }
    let to = match range {
        Some([lo, hi]) if (lo..=hi).contains(&o) => return Some(0.0),
        Some([lo, hi]) => {
            if o < lo {
                lo
            } else {
                hi
            }
        }
        None => paper,
    };
    (to != 0.0).then(|| (o - to) / to.abs())
}

/// A change or ratio row agrees when dlsim moves the same way as the paper (a ratio's
/// neutral point is 1); a level with a `before` row agrees when after - before has the
/// paper's sign; any other level has no direction.
fn direction(
    compare: Compare,
    paper: f64,
    ours: Option<f64>,
    before: Option<(f64, Option<f64>)>,
) -> Direction {
    let sign = |x: f64| {
        if x > 0.0 {
            1
        } else if x < 0.0 {
            -1
        } else {
            0
        }
    };
    let (p, o) = match (compare, before) {
        (Compare::Change, _) => (paper, ours),
        (Compare::Ratio, _) => (paper - 1.0, ours.map(|o| o - 1.0)),
        (Compare::Value, Some((pb, ob))) => (paper - pb, ours.zip(ob).map(|(a, b)| a - b)),
        (Compare::Value, None) => return Direction::NotApplicable,
    };
    match o {
        _ if sign(p) == 0 => Direction::NotApplicable,
        Some(o) if sign(o) == sign(p) => Direction::Agrees,
        _ => Direction::Flips,
    }
}

#[cfg(test)]
mod tests {
    use super::rel_error;
    use crate::manifest::Bound;

    #[test]
    fn a_range_is_met_inside_and_missed_by_the_distance_to_its_nearer_end() {
        let r = Some([5.0, 8.0]);
        assert_eq!(rel_error(6.5, r, None, Some(7.9)), Some(0.0));
        assert_eq!(rel_error(6.5, r, None, Some(5.0)), Some(0.0));
        assert!((rel_error(6.5, r, None, Some(4.0)).unwrap() + 0.2).abs() < 1e-12);
        assert!((rel_error(6.5, r, None, Some(10.0)).unwrap() - 0.25).abs() < 1e-12);
        // Without a range: relative to the value, and none for a value of 0.
        assert!((rel_error(6.5, None, None, Some(5.2)).unwrap() + 0.2).abs() < 1e-12);
        assert_eq!(rel_error(0.0, None, None, Some(1.0)), None);
        assert_eq!(rel_error(6.5, r, None, None), None);
    }

    /// "Reduces the JCT by more than 30%": any change of -30% or less meets it, and a
    /// smaller reduction misses it by its distance to -30%. "Over 80%" the same way up.
    #[test]
    fn a_bound_is_met_on_its_side_and_missed_by_the_distance_beyond_it() {
        let most = Some(Bound::AtMost);
        assert_eq!(rel_error(-30.0, None, most, Some(-45.0)), Some(0.0));
        assert_eq!(rel_error(-30.0, None, most, Some(-30.0)), Some(0.0));
        assert!((rel_error(-30.0, None, most, Some(-24.0)).unwrap() - 0.2).abs() < 1e-12);
        assert!((rel_error(-30.0, None, most, Some(6.0)).unwrap() - 1.2).abs() < 1e-12);
        let least = Some(Bound::AtLeast);
        assert_eq!(rel_error(80.0, None, least, Some(93.0)), Some(0.0));
        assert!((rel_error(80.0, None, least, Some(60.0)).unwrap() + 0.25).abs() < 1e-12);
    }
}
