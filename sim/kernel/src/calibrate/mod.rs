//! `dlsim calibrate`: measure the kernel on a grid of configurations, fit the simulator's
//! throughput model, validate it on held-out configurations, and write a versioned JSON file.
//!
//! How a measurement becomes a simulator parameter: each grid point trains for a few
//! iterations and records the dedicated-core time of the four parts (see [`crate::cputime`]
//! and [`crate::train`]); [`dlsim_fit::ThroughputParams::fit_parts`] fits each part's
//! `(a, b)` by NNLS minimising RMSLE on the non-held-out points; the held-out points report
//! the MAPE of predicted vs measured throughput. The Optimus speed function is fitted to the
//! same points for comparison. The simulator reads only the written file.

mod grid;
mod plot;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use dlsim_fit::metrics::{mae, mape_pct, rmse, rmsle};
use dlsim_fit::{OptimusObs, OptimusParams, ThroughputParams};
use serde::{Deserialize, Serialize};

pub use grid::{copy_bandwidth_mb_s, measure, GridPoint, Kind, Machine, Measurement, Plan};

/// Format tag of the calibration file.
pub const FORMAT: &str = "dlsim-calibration";
/// Schema version of the calibration file; bump on any incompatible change.
pub const VERSION: u32 = 1;

/// Arguments of `dlsim calibrate`.
#[derive(Debug, Clone, clap::Args)]
pub struct CalibrateArgs {
    /// Small grid and few iterations (a few seconds in release, well under a minute in debug).
    #[arg(long)]
    pub quick: bool,
    /// Largest threads per worker and per PS explored (grid uses 1, 2, 4, 8 up to N).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Output JSON; plots are written next to it as `<stem>_<kind>.png` and `.svg`.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "reports/calibration/default.json"
    )]
    pub out: PathBuf,
}

/// Quality of one kind's fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitReport {
    pub n_fit: usize,
    pub n_heldout: usize,
    /// RMSLE of throughput on the fitted points.
    pub rmsle: f64,
    /// Held-out throughput errors of the per-part fit (the parameters in `kinds`).
    pub heldout_mape: f64,
    pub heldout_mae: f64,
    pub heldout_rmse: f64,
    /// Held-out MAPE when fitting throughput totals only (what an online job master sees).
    pub totals_fit_heldout_mape: f64,
    /// Held-out errors of the Optimus speed function fitted to the same points.
    pub optimus_mape: f64,
    pub optimus_mae: f64,
    pub optimus_rmse: f64,
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
    pub models: BTreeMap<String, Kind>,
    pub grid: Vec<GridPoint>,
    pub measurements: Vec<Measurement>,
    /// The fitted DLRover-RM parameters per kind: what the simulator uses.
    pub kinds: BTreeMap<String, ThroughputParams>,
    pub optimus: BTreeMap<String, OptimusParams>,
    pub fit: BTreeMap<String, FitReport>,
    /// Measurements varying `m` and `D` for the first kind, with the fitted model's prediction.
    pub scan: Vec<ScanRow>,
    /// MAPE of the fitted model on `scan` (it was fitted at one `m` and `D`).
    pub scan_mape: Option<f64>,
}

/// One `m x D` scan measurement and what the fitted parameters predict for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScanRow {
    pub measurement: Measurement,
    pub predicted_parts: dlsim_fit::PartTimes,
    pub predicted_throughput: f64,
}

fn fit_kind(ms: &[&Measurement]) -> anyhow::Result<(ThroughputParams, OptimusParams, FitReport)> {
    let (fit, held): (Vec<&&Measurement>, Vec<&&Measurement>) =
        ms.iter().partition(|m| !m.point.heldout);
    anyhow::ensure!(
        fit.len() >= 3 && !held.is_empty(),
        "need at least 3 fitted and 1 held-out point, got {} and {}",
        fit.len(),
        held.len()
    );
    let parts: Vec<_> = fit.iter().map(|m| (m.config, m.parts)).collect();
    let params = ThroughputParams::fit_parts(&parts).context("fitting per-part times")?;
    let totals: Vec<_> = fit.iter().map(|m| (m.config, m.throughput)).collect();
    let totals_params =
        ThroughputParams::fit_throughput(&totals).context("fitting throughput totals")?;
    let obs: Vec<OptimusObs> = fit
        .iter()
        .map(|m| OptimusObs {
            ps: f64::from(m.config.ps),
            workers: f64::from(m.config.workers),
            speed: m.throughput,
        })
        .collect();
    let optimus = OptimusParams::fit(&obs).context("fitting the Optimus function")?;
    let actual = |set: &[&&Measurement]| set.iter().map(|m| m.throughput).collect::<Vec<_>>();
    let pred = |set: &[&&Measurement], p: &ThroughputParams| {
        set.iter()
            .map(|m| p.throughput(&m.config))
            .collect::<Vec<_>>()
    };
    let (fa, ha) = (actual(&fit), actual(&held));
    let hp = pred(&held, &params);
    let op: Vec<f64> = held
        .iter()
        .map(|m| optimus.predict(f64::from(m.config.ps), f64::from(m.config.workers)))
        .collect();
    let report = FitReport {
        n_fit: fit.len(),
        n_heldout: held.len(),
        rmsle: rmsle(&fa, &pred(&fit, &params)),
        heldout_mape: mape_pct(&ha, &hp),
        heldout_mae: mae(&ha, &hp),
        heldout_rmse: rmse(&ha, &hp),
        totals_fit_heldout_mape: mape_pct(&ha, &pred(&held, &totals_params)),
        optimus_mape: mape_pct(&ha, &op),
        optimus_mae: mae(&ha, &op),
        optimus_rmse: rmse(&ha, &op),
    };
    Ok((params, optimus, report))
}

/// Runs `plan` and fits every kind. `progress` receives one line per grid point.
pub fn run(
    plan: &Plan,
    command: &str,
    mut progress: impl FnMut(&str),
) -> anyhow::Result<Calibration> {
    let machine = Machine::probe();
    let mut measurements = Vec::with_capacity(plan.points.len());
    for (i, (ki, pt)) in plan.points.iter().enumerate() {
        let kind = plan
            .kinds
            .get(*ki)
            .context("grid point names an unknown kind")?;
        let m = measure(kind, pt, machine.bandwidth_mb_s, plan.seed)?;
        progress(&format!(
            "[{}/{}] {} w={} p={} lw={} lp={} -> {:.0} samples/s (wall {:.0})",
            i + 1,
            plan.points.len(),
            kind.name,
            pt.workers,
            pt.ps,
            pt.worker_threads,
            pt.ps_threads,
            m.throughput,
            m.wall_samples_per_s
        ));
        measurements.push(m);
    }
    let mut cal = Calibration {
        format: FORMAT.into(),
        version: VERSION,
        machine,
        command: command.into(),
        timing: "per-iteration dedicated-core CPU seconds: each part is the CPU time of the threads doing it (critical path over parallel threads; PS update work divided by lambda_p; dense sync serialised per PS); throughput = w*m/sum(parts)".into(),
        models: plan.kinds.iter().map(|k| (k.name.clone(), k.clone())).collect(),
        grid: plan.points.iter().map(|(_, p)| *p).collect(),
        measurements,
        kinds: BTreeMap::new(),
        optimus: BTreeMap::new(),
        fit: BTreeMap::new(),
        scan: Vec::new(),
        scan_mape: None,
    };
    for kind in &plan.kinds {
        let ms: Vec<&Measurement> = cal
            .measurements
            .iter()
            .filter(|m| m.kind == kind.name)
            .collect();
        let (p, o, r) = fit_kind(&ms).with_context(|| format!("kind {}", kind.name))?;
        cal.kinds.insert(kind.name.clone(), p);
        cal.optimus.insert(kind.name.clone(), o);
        cal.fit.insert(kind.name.clone(), r);
    }
    for (ki, pt) in &plan.scan {
        let kind = plan
            .kinds
            .get(*ki)
            .context("scan point names an unknown kind")?;
        let m = measure(kind, pt, cal.machine.bandwidth_mb_s, plan.seed)?;
        let p = cal.kinds[&kind.name];
        progress(&format!(
            "[scan] {} m={} D={} -> {:.0} samples/s, model {:.0}",
            kind.name,
            pt.batch,
            pt.emb_dim,
            m.throughput,
            p.throughput(&m.config)
        ));
        cal.scan.push(ScanRow {
            predicted_parts: p.part_times(&m.config),
            predicted_throughput: p.throughput(&m.config),
            measurement: m,
        });
    }
    let (a, p): (Vec<f64>, Vec<f64>) = cal
        .scan
        .iter()
        .map(|r| (r.measurement.throughput, r.predicted_throughput))
        .unzip();
    cal.scan_mape = (!a.is_empty()).then(|| mape_pct(&a, &p));
    Ok(cal)
}

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, then a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = path
        .file_name()
        .context("output path has no file name")?
        .to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

/// Reads and checks a calibration file written by [`run_cli`].
pub fn read(path: &Path) -> anyhow::Result<Calibration> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
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
    write_atomic(out, format!("{json}\n").as_bytes())?;
    let mut written = vec![out.to_path_buf()];
    written.extend(plot::write_plots(cal, out)?);
    Ok(written)
}

/// Entry point of `dlsim calibrate`.
pub fn run_cli(args: &CalibrateArgs) -> anyhow::Result<()> {
    let threads = args.threads.unwrap_or(if args.quick { 2 } else { 4 });
    anyhow::ensure!(
        (1..=64).contains(&threads),
        "--threads must be between 1 and 64, got {threads}"
    );
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
    command.push_str(&format!(" --out {}", args.out.display()));
    let cal = run(&plan, &command, |line| eprintln!("{line}"))?;
    for (kind, r) in &cal.fit {
        eprintln!(
            "{kind}: rmsle {:.3}, held-out MAPE {:.1}% (totals fit {:.1}%), Optimus MAPE {:.1}%",
            r.rmsle, r.heldout_mape, r.totals_fit_heldout_mape, r.optimus_mape
        );
    }
    if let Some(mape) = cal.scan_mape {
        eprintln!("m x D scan (fit at one m, D): MAPE {mape:.1}%");
    }
    for p in write_outputs(&cal, &args.out)? {
        eprintln!("wrote {}", p.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_calibration_fits_writes_and_reads_back() {
        let cal = run(&Plan::tiny(), "test", |_| {}).unwrap();
        assert_eq!(cal.measurements.len(), cal.grid.len());
        let p = cal.kinds["wide_deep"];
        assert!(p.a_grad > 0.0, "{p:?}");
        let f = &cal.fit["wide_deep"];
        assert!(f.heldout_mape.is_finite() && f.n_heldout > 0);
        let dir = std::env::temp_dir().join(format!("dlsim-cal-{}", std::process::id()));
        let out = dir.join("cal.json");
        let written = write_outputs(&cal, &out).unwrap();
        assert!(written.iter().all(|p| p.exists()), "{written:?}");
        let back = read(&out).unwrap();
        // serde_json's default float parsing may differ in the last bit; compare predictions.
        let c = cal.measurements[0].config;
        let (x, y) = (back.kinds["wide_deep"].throughput(&c), p.throughput(&c));
        assert!((x - y).abs() <= 1e-9 * y, "{x} vs {y}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(v["format"], "dlsim-calibration");
        assert_eq!(v["version"], 1);
        assert!(v["kinds"]["wide_deep"]["a_emb"].is_number());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn wrong_version_is_rejected() {
        let dir = std::env::temp_dir().join(format!("dlsim-cal-v-{}", std::process::id()));
        let out = dir.join("bad.json");
        write_atomic(&out, br#"{"format":"dlsim-calibration","version":99}"#).unwrap();
        let e = format!("{:#}", read(&out).unwrap_err());
        assert!(e.contains("version 99"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
