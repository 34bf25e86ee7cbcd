//! `dlsim calibrate`: measure the kernel on a grid of configurations, fit the simulator's
//! throughput model, validate it on held-out configurations, and write a versioned JSON file.
//!
//! How a measurement becomes a simulator parameter: each grid point (a shape `m x D` and a
//! configuration `w, p, lambda_w, lambda_p`) trains for a few iterations and records the
//! dedicated-core time of the four parts (see [`crate::cputime`] and [`crate::train`]). One
//! shape-aware model per kind ([`shape`]) is fitted part by part (NNLS on RMSLE) over every
//! shape's non-held-out points; held-out configurations and whole held-out shapes report its
//! throughput MAPE. The fit is then written in the paper's form at the reference shape
//! (`kinds`, inside the grid), which the simulator's unit contract reads. The paper's form
//! fitted to totals only and the Optimus speed function are fitted at the reference shape for
//! comparison. The simulator reads only the written file.

mod grid;
mod plot;
pub mod shape;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use dlsim_fit::metrics::{mae, mape_pct, rmse, rmsle};
use dlsim_fit::{OptimusObs, OptimusParams, ThroughputParams};
use serde::{Deserialize, Serialize};

pub use grid::{
    copy_bandwidth_mb_s, kinds, measure, profile_concurrent, ConcurrentProfile, GridPoint, Kind,
    Machine, Measurement, Plan,
};
pub use shape::{ShapeInputs, ShapeParams};

/// Format tag of the calibration file.
pub const FORMAT: &str = "dlsim-calibration";
/// Schema version of the calibration file; bump on any incompatible change.
pub const VERSION: u32 = 2;

/// Arguments of `dlsim calibrate`.
#[derive(Debug, Clone, clap::Args)]
pub struct CalibrateArgs {
    /// Small grid and few iterations (a few seconds in release, well under a minute in debug).
    #[arg(long)]
    pub quick: bool,
    /// Largest threads per worker and per PS explored (grid uses 1, 2, 4, 8 up to N).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Refit the measurements of an earlier calibration file (no new measurements): for
    /// trying a change of the fit on the same data.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["quick", "threads"])]
    pub refit: Option<PathBuf>,
    /// Output JSON; plots are written next to it as `<stem>_<kind>.png` and `.svg`
    /// [default: reports/runs/calibration/calibration.json, an ignored folder].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace the shipped calibration (`reports/calibration/default.json`, embedded in the
    /// binary at the next build) with this one, once it passes the simulator's checks; run
    /// from the repository root, in a release build (a debug build's measurement is refused).
    /// The only way this command writes a tracked file.
    #[arg(long, conflicts_with_all = ["out", "quick"])]
    pub bless: bool,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Where `dlsim calibrate` writes without `--out` or `--bless`: an ignored folder, so a
/// calibration never replaces the shipped one by accident.
pub const DEFAULT_OUT: &str = "reports/runs/calibration/calibration.json";

/// What the simulator says of a calibration, which this crate cannot see: where the
/// shipped calibration lives and the check a blessed one must pass (the unit contract of
/// `dlsim_model`), which also describes what the contract makes of it (one line per kind).
pub struct Simulator<'a> {
    pub shipped: &'a Path,
    pub validate: &'a dyn Fn(&str) -> Result<Vec<String>, String>,
}

/// Held-out error at one shape of the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeReport {
    pub batch: usize,
    pub emb_dim: usize,
    /// The whole shape was held out of the fit.
    pub heldout_shape: bool,
    /// Held-out points at this shape (all of them for a held-out shape).
    pub n: usize,
    /// MAPE of the shape model's throughput on those points.
    pub mape: f64,
}

/// Quality of one kind's fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitReport {
    pub n_fit: usize,
    /// Held-out configurations at fitted shapes.
    pub n_heldout: usize,
    /// Points at held-out shapes.
    pub n_heldout_shape: usize,
    /// RMSLE of throughput on the fitted points (shape model).
    pub rmsle: f64,
    /// Held-out throughput errors of the shape model at fitted shapes.
    pub heldout_mape: f64,
    pub heldout_mae: f64,
    pub heldout_rmse: f64,
    /// MAPE of the shape model at the shapes held out whole.
    pub heldout_shape_mape: f64,
    /// MAPE of the paper-form parameters (`kinds`, what the simulator uses) on the held-out
    /// points at the reference shape.
    pub reference_mape: f64,
    /// At the reference shape: held-out MAPE when fitting throughput totals only (what an
    /// online job master sees) with the paper's form.
    pub totals_fit_heldout_mape: f64,
    /// At the reference shape: held-out errors of the Optimus speed function.
    pub optimus_mape: f64,
    pub optimus_mae: f64,
    pub optimus_rmse: f64,
    pub per_shape: Vec<ShapeReport>,
}

/// The shape at which `kinds` is written in the paper's form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    pub batch: usize,
    pub emb_dim: usize,
    /// Mean unique IDs per batch measured at the reference shape (`U` there).
    pub unique_rows: f64,
    /// Whether the reference lies within the grid's range of `m` and `D` (no extrapolation).
    pub inside_grid: bool,
}

/// The calibration file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    pub format: String,
    pub version: u32,
    pub machine: Machine,
    pub command: String,
    /// What time means in `measurements`.
    pub timing: String,
    /// Times the grid was run over; each part is the median over the passes.
    #[serde(default)]
    pub passes: usize,
    /// The kinds; their `batch` and `emb_dim` are the reference shape of `kinds`.
    pub models: BTreeMap<String, Kind>,
    pub grid: Vec<GridPoint>,
    pub measurements: Vec<Measurement>,
    /// The shape-aware fit per kind, over every shape of the grid.
    pub shape_fit: BTreeMap<String, ShapeParams>,
    pub reference: Reference,
    /// The shape fit in the DLRover-RM paper's form at the reference shape: what the
    /// simulator uses (through the unit contract).
    pub kinds: BTreeMap<String, ThroughputParams>,
    pub optimus: BTreeMap<String, OptimusParams>,
    pub fit: BTreeMap<String, FitReport>,
}

/// `(actual, predicted)` throughputs of `set` under `f`.
fn pairs<'a>(
    set: impl Iterator<Item = &'a Measurement>,
    f: impl Fn(&Measurement) -> f64,
) -> (Vec<f64>, Vec<f64>) {
    set.map(|m| (m.throughput, f(m))).unzip()
}

/// Fits the shape model part by part (NNLS on RMSLE of each part's time).
fn fit_shape(fit: &[&Measurement]) -> anyhow::Result<ShapeParams> {
    let mut coef: [Vec<f64>; 4] = Default::default();
    for (part, c) in coef.iter_mut().enumerate() {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for m in fit {
            let t = [m.parts.grad_s, m.parts.emb_s, m.parts.upd_s, m.parts.sync_s][part];
            if t > 0.0 && t.is_finite() {
                x.push(m.shape_inputs().features()[part].clone());
                y.push(t);
            }
        }
        if !y.is_empty() {
            *c = dlsim_fit::fit_rmsle(&x, &y)
                .map_err(|e| anyhow::anyhow!("fitting part {part}: {e}"))?;
        }
    }
    Ok(ShapeParams::from_parts(&coef))
}

/// Everything fitted for one kind.
struct KindFit {
    shape: ShapeParams,
    paper: ThroughputParams,
    optimus: OptimusParams,
    report: FitReport,
}

fn fit_kind(
    ms: &[&Measurement],
    at: &ShapeInputs,
    reference: (usize, usize),
) -> anyhow::Result<KindFit> {
    let fit: Vec<&Measurement> = ms.iter().copied().filter(|m| !m.point.heldout).collect();
    let held: Vec<&Measurement> = ms
        .iter()
        .copied()
        .filter(|m| m.point.heldout && !m.point.heldout_shape)
        .collect();
    let held_shape: Vec<&Measurement> = ms
        .iter()
        .copied()
        .filter(|m| m.point.heldout_shape)
        .collect();
    anyhow::ensure!(
        fit.len() >= 6 && !held.is_empty() && !held_shape.is_empty(),
        "need at least 6 fitted points, 1 held-out point and 1 point of a held-out shape, got \
         {}, {} and {}",
        fit.len(),
        held.len(),
        held_shape.len()
    );
    let shape = fit_shape(&fit).context("fitting the shape model")?;
    let paper = shape.paper_form(at);
    let at_ref = |m: &&Measurement| (m.point.batch, m.point.emb_dim) == reference;
    let ref_fit: Vec<&Measurement> = fit.iter().copied().filter(at_ref).collect();
    let ref_held: Vec<&Measurement> = held.iter().copied().filter(at_ref).collect();
    anyhow::ensure!(
        ref_fit.len() >= 5 && !ref_held.is_empty(),
        "the reference shape {reference:?} needs at least 5 fitted and 1 held-out point"
    );
    let totals: Vec<_> = ref_fit.iter().map(|m| (m.config, m.throughput)).collect();
    let totals_params =
        ThroughputParams::fit_throughput(&totals).context("fitting throughput totals")?;
    let obs: Vec<OptimusObs> = ref_fit
        .iter()
        .map(|m| OptimusObs {
            ps: f64::from(m.config.ps),
            workers: f64::from(m.config.workers),
            speed: m.throughput,
        })
        .collect();
    let optimus = OptimusParams::fit(&obs).context("fitting the Optimus function")?;
    let model = |m: &Measurement| shape.throughput(&m.shape_inputs());
    let (fa, fp) = pairs(fit.iter().copied(), model);
    let (ha, hp) = pairs(held.iter().copied(), model);
    let (sa, sp) = pairs(held_shape.iter().copied(), model);
    let (ra, rp) = pairs(ref_held.iter().copied(), |m| paper.throughput(&m.config));
    let (_, tp) = pairs(ref_held.iter().copied(), |m| {
        totals_params.throughput(&m.config)
    });
    let (_, op) = pairs(ref_held.iter().copied(), |m| {
        optimus.predict(f64::from(m.config.ps), f64::from(m.config.workers))
    });
    let mut shapes: Vec<(usize, usize)> = ms
        .iter()
        .map(|m| (m.point.batch, m.point.emb_dim))
        .collect();
    shapes.sort_unstable();
    shapes.dedup();
    let per_shape = shapes
        .into_iter()
        .filter_map(|(batch, emb_dim)| {
            let set: Vec<&Measurement> = ms
                .iter()
                .copied()
                .filter(|m| m.point.heldout && (m.point.batch, m.point.emb_dim) == (batch, emb_dim))
                .collect();
            let (a, p) = pairs(set.iter().copied(), model);
            (!a.is_empty()).then(|| ShapeReport {
                batch,
                emb_dim,
                heldout_shape: set[0].point.heldout_shape,
                n: a.len(),
                mape: mape_pct(&a, &p),
            })
        })
        .collect();
    let report = FitReport {
        n_fit: fit.len(),
        n_heldout: held.len(),
        n_heldout_shape: held_shape.len(),
        rmsle: rmsle(&fa, &fp),
        heldout_mape: mape_pct(&ha, &hp),
        heldout_mae: mae(&ha, &hp),
        heldout_rmse: rmse(&ha, &hp),
        heldout_shape_mape: mape_pct(&sa, &sp),
        reference_mape: mape_pct(&ra, &rp),
        totals_fit_heldout_mape: mape_pct(&ra, &tp),
        optimus_mape: mape_pct(&ra, &op),
        optimus_mae: mae(&ra, &op),
        optimus_rmse: rmse(&ra, &op),
        per_shape,
    };
    Ok(KindFit {
        shape,
        paper,
        optimus,
        report,
    })
}

/// Runs `plan` and fits every kind. `progress` receives one line per grid point.
pub fn run(
    plan: &Plan,
    command: &str,
    mut progress: impl FnMut(&str),
) -> anyhow::Result<Calibration> {
    let machine = Machine::probe();
    // The grid is run `passes` times over, and each part of a point is the median over its
    // passes: interference from other tenants of the machine comes in spells (a whole pass
    // of memory-bound parts can run 2x slow), so repeats spread out in time beat repeats
    // back to back.
    let passes = plan.passes.max(1);
    let mut runs: Vec<Vec<Measurement>> = vec![Vec::with_capacity(passes); plan.points.len()];
    for pass in 0..passes {
        for (i, (ki, pt)) in plan.points.iter().enumerate() {
            let kind = plan
                .kinds
                .get(*ki)
                .context("grid point names an unknown kind")?;
            let m = measure(kind, pt, machine.bandwidth_mb_s, plan.seed)?;
            progress(&format!(
                "[pass {}/{passes}, {}/{}] {} m={} D={} w={} p={} lw={} lp={} -> {:.0} samples/s (wall {:.0})",
                pass + 1,
                i + 1,
                plan.points.len(),
                kind.name,
                pt.batch,
                pt.emb_dim,
                pt.workers,
                pt.ps,
                pt.worker_threads,
                pt.ps_threads,
                m.throughput,
                m.wall_samples_per_s
            ));
            runs[i].push(m);
        }
    }
    let measurements: Vec<Measurement> = runs.into_iter().map(median_of_passes).collect();
    let mut cal = Calibration {
        format: FORMAT.into(),
        version: VERSION,
        machine,
        command: command.into(),
        passes,
        timing: "per-iteration dedicated-core CPU seconds (per part, the median over the passes): each part is the CPU time of the threads doing it (critical path over parallel threads; PS update work divided by lambda_p; dense sync serialised per PS); throughput = w*m/sum(parts)".into(),
        models: plan
            .kinds
            .iter()
            .map(|k| {
                let mut k = k.clone();
                (k.batch, k.emb_dim) = plan.reference;
                (k.name.clone(), k)
            })
            .collect(),
        grid: plan.points.iter().map(|(_, p)| *p).collect(),
        measurements,
        shape_fit: BTreeMap::new(),
        reference: Reference {
            batch: plan.reference.0,
            emb_dim: plan.reference.1,
            unique_rows: 0.0,
            inside_grid: false,
        },
        kinds: BTreeMap::new(),
        optimus: BTreeMap::new(),
        fit: BTreeMap::new(),
    };
    fit_all(&mut cal)?;
    Ok(cal)
}

/// One measurement from a point's passes: each part's median, throughput from those.
fn median_of_passes(mut runs: Vec<Measurement>) -> Measurement {
    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }
    let of = |f: fn(&Measurement) -> f64| median(runs.iter().map(f).collect());
    let parts = dlsim_fit::PartTimes {
        grad_s: of(|m| m.parts.grad_s),
        upd_s: of(|m| m.parts.upd_s),
        sync_s: of(|m| m.parts.sync_s),
        emb_s: of(|m| m.parts.emb_s),
    };
    let wall = of(|m| m.wall_samples_per_s);
    let mut m = runs.swap_remove(0);
    m.throughput =
        f64::from(m.config.workers) * f64::from(m.config.batch) / parts.total_s().max(1e-12);
    m.parts = parts;
    m.wall_samples_per_s = wall;
    m
}

/// (Re)computes every fit of `cal` from its measurements, grid and reference shape.
pub fn fit_all(cal: &mut Calibration) -> anyhow::Result<()> {
    let reference = (cal.reference.batch, cal.reference.emb_dim);
    let (ref_m, ref_d) = reference;
    let at_ref: Vec<&Measurement> = cal
        .measurements
        .iter()
        .filter(|m| (m.point.batch, m.point.emb_dim) == reference)
        .collect();
    anyhow::ensure!(
        !at_ref.is_empty(),
        "nothing is measured at the reference shape {reference:?}"
    );
    let unique_rows = at_ref.iter().map(|m| m.unique_rows).sum::<f64>() / at_ref.len() as f64;
    let range = |f: fn(&GridPoint) -> usize| {
        let v = cal.grid.iter().map(f);
        (v.clone().min().unwrap_or(0), v.max().unwrap_or(0))
    };
    let (bm, dm) = (range(|p| p.batch), range(|p| p.emb_dim));
    cal.reference.unique_rows = unique_rows;
    cal.reference.inside_grid = (bm.0..=bm.1).contains(&ref_m) && (dm.0..=dm.1).contains(&ref_d);
    let kinds: Vec<Kind> = cal.models.values().cloned().collect();
    for kind in &kinds {
        let ms: Vec<&Measurement> = cal
            .measurements
            .iter()
            .filter(|m| m.kind == kind.name)
            .collect();
        let spec = kind.spec(ref_d);
        let c = &ms.first().context("a kind without measurements")?.config;
        let at = ShapeInputs {
            workers: 1.0,
            ps: 1.0,
            worker_cores: 1.0,
            ps_cores: 1.0,
            batch: ref_m as f64,
            emb_dim: ref_d as f64,
            unique_rows,
            mlp_macs: spec.mlp_macs() as f64,
            model_mb: spec.model_mb(),
            bandwidth_mb_s: c.bandwidth_mb_s,
        };
        let f = fit_kind(&ms, &at, reference).with_context(|| format!("kind {}", kind.name))?;
        cal.shape_fit.insert(kind.name.clone(), f.shape);
        cal.kinds.insert(kind.name.clone(), f.paper);
        cal.optimus.insert(kind.name.clone(), f.optimus);
        cal.fit.insert(kind.name.clone(), f.report);
    }
    Ok(())
}

/// Reads and checks a calibration file written by [`run_cli`].
pub fn read(path: &Path) -> anyhow::Result<Calibration> {
    let text = dlsim_fsio::read_to_string_limited(path, dlsim_fsio::MAX_INPUT_BYTES)
        .with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    anyhow::ensure!(
        v["format"] == FORMAT,
        "{}: format is {}, expected {FORMAT:?}",
        path.display(),
        v["format"]
    );
    anyhow::ensure!(
        v["version"] == VERSION,
        "{}: version {} is not supported (expected {VERSION})",
        path.display(),
        v["version"]
    );
    let cal: Calibration =
        serde_json::from_value(v).with_context(|| format!("parsing {}", path.display()))?;
    Ok(cal)
}

/// Writes the JSON and the plots of `cal` to `out` (plots next to it).
pub fn write_outputs(cal: &Calibration, out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let json = serde_json::to_string_pretty(cal)?;
    dlsim_fsio::write_atomic(out, format!("{json}\n").as_bytes())?;
    let mut written = vec![out.to_path_buf()];
    written.extend(plot::write_plots(cal, out)?);
    Ok(written)
}

/// A problem with what the user gave `dlsim calibrate` (a flag out of range, a `--refit` file
/// that cannot be read or refitted), as opposed to a failure while measuring: the command
/// line maps it to exit code 2.
#[derive(Debug)]
pub struct BadArgs(pub String);

impl std::fmt::Display for BadArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadArgs {}

/// Entry point of `dlsim calibrate`. `sim` is `None` where the simulator's checks are not
/// at hand (the kernel's own example), and `--bless` is then refused.
pub fn run_cli(args: &CalibrateArgs, sim: Option<Simulator>) -> anyhow::Result<()> {
    let threads = args.threads.unwrap_or(if args.quick { 2 } else { 4 });
    if !(1..=64).contains(&threads) {
        let msg = format!("--threads must be between 1 and 64, got {threads}");
        return Err(BadArgs(msg).into());
    }
    // An unoptimised build times unoptimised code: the kernel runs tens of times slower, and
    // not evenly across its parts (quick runs of both builds on this 2-core machine,
    // 2026-11-28: the gradient about 45x slower, the dense sync 2.3x, the bandwidth probe's
    // copy not at all), so a fit from it has a shape the shipped kernel does not. Such a fit
    // may be tried, never shipped.
    let debug_build = cfg!(debug_assertions) && args.refit.is_none();
    if debug_build && args.bless {
        let msg = "--bless: this is a debug build, whose kernel runs unoptimised code, so its \
                   measurements are not the kernel's; measure with a release build: \
                   `cargo run --release -- calibrate --bless`";
        return Err(BadArgs(msg.into()).into());
    }
    let out = match (&sim, args.bless) {
        (_, false) => args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_OUT)),
        (None, true) => {
            let msg = "--bless: use `dlsim calibrate --bless`, which checks the file first";
            return Err(BadArgs(msg.into()).into());
        }
        (Some(b), true) if !b.shipped.is_file() => {
            let msg = format!(
                "--bless replaces {0}, which is not here: run it from the repository root",
                b.shipped.display()
            );
            return Err(BadArgs(msg).into());
        }
        (Some(b), true) => b.shipped.to_path_buf(),
    };
    // A calibration takes minutes: an --out it may not write fails first.
    dlsim_fsio::check_target(&out).map_err(|e| BadArgs(format!("--out: {e}")))?;
    let plan = if args.quick {
        Plan::quick(threads)
    } else {
        Plan::full(threads)
    };
    let mut command = String::from("dlsim calibrate");
    if args.quick {
        command.push_str(" --quick");
    }
    if let Some(t) = args.threads {
        command.push_str(&format!(" --threads {t}"));
    }
    if args.bless {
        command.push_str(" --bless");
    } else {
        command.push_str(&format!(" --out {}", out.display()));
    }
    let say = |line: &str| {
        if !args.quiet {
            eprintln!("{line}");
        }
    };
    if debug_build {
        say(
            "note: a debug build measures this kernel: its code is unoptimised, tens of times \
             slower and unevenly so across its parts, and the fit's shape is not the shipped \
             kernel's; `cargo run --release -- calibrate` measures the kernel as shipped",
        );
    }
    let cal = match &args.refit {
        Some(path) => {
            let refit = |cal: anyhow::Result<Calibration>| {
                let mut cal = cal?;
                fit_all(&mut cal).with_context(|| format!("refitting {}", path.display()))?;
                anyhow::Ok(cal)
            };
            let mut cal = refit(read(path)).map_err(|e| BadArgs(format!("{e:#}")))?;
            cal.command = format!(
                "{} (refit by: {command} --refit {})",
                cal.command,
                path.display()
            );
            cal
        }
        None => run(&plan, &command, say)?,
    };
    for (kind, r) in &cal.fit {
        say(&format!(
            "{kind}: rmsle {:.3}, held-out MAPE {:.1}% ({} points), held-out shapes {:.1}% ({} points); \
             at the reference shape: paper form {:.1}%, totals fit {:.1}%, Optimus {:.1}%",
            r.rmsle,
            r.heldout_mape,
            r.n_heldout,
            r.heldout_shape_mape,
            r.n_heldout_shape,
            r.reference_mape,
            r.totals_fit_heldout_mape,
            r.optimus_mape
        ));
    }
    if !cal.reference.inside_grid {
        say(&format!(
            "note: the reference shape m={} D={} lies outside this grid; the fit is extrapolated there",
            cal.reference.batch, cal.reference.emb_dim
        ));
    }
    if let Some(b) = sim {
        // The same text that will be written, checked as the simulator will read it (once
        // embedded, for --bless): a calibration it cannot use is never blessed, and without
        // --bless the user learns it before pointing a scenario at the file.
        let json = serde_json::to_string_pretty(&cal)? + "\n";
        match (b.validate)(&json) {
            Ok(lines) => lines.iter().for_each(|l| say(l)),
            Err(e) if args.bless => {
                let msg = format!(
                    "not blessed ({} is unchanged): the new calibration fails the simulator's check: {e}",
                    out.display()
                );
                return Err(BadArgs(msg).into());
            }
            Err(e) => say(&format!(
                "note: the simulator's unit contract cannot use this calibration (a scenario pointing at it is refused): {e}"
            )),
        }
    }
    for p in write_outputs(&cal, &out)? {
        say(&format!("wrote {}", p.display()));
    }
    if args.bless {
        say("blessed: rebuild dlsim to embed it, and commit it with reports/calibration/README.md updated");
    }
    Ok(())
}
