//! The unit contract: how a kernel calibration (`dlsim calibrate`, `reports/calibration/`)
//! becomes the simulator's hidden ground truth. Loading a calibration is the fallible layer
//! (every problem is an [`InputError`] naming file, line and field); the contract itself is a
//! pure function of the file.
//!
//! The kernel's fit is written in the model's units (seconds, samples, cores, MB, MB/s,
//! dimensions) but on the kernel's own scale: its `B` is the calibration machine's memory
//! bandwidth, its batch `m` and embedding dimension `D` are the kernel kind's, and its code is
//! a small in-process Rust kernel, not a production TensorFlow job. Three steps map the fitted
//! `(a, b)` of each model kind to the truth:
//!
//! 1. **Units and reference workload** ([`to_reference_units`]).
//!    - `a_sync' = a_sync * B_ref / B_cal`, with `B_cal` the file's `machine.bandwidth_mb_s`
//!      (the `B` its fit used) and `B_ref` = [`REFERENCE_BANDWIDTH_MB_S`], the simulator's
//!      default 10 Gb/s network: the same bytes take the same sync time. (A scenario with
//!      another `truth.bandwidth_mb_s` then scales `T_sync` by `B_ref / B`, as it should.)
//!    - `a_upd' = a_upd * m_ref (D_ref + 1) / (m_cal (D_cal + 1))`: a push carries one row of
//!      `D + 1` floats per ID of the batch (the calibration's `m x D` scan), work the formula
//!      `a_upd w / (p lambda_p)` does not carry. `m_cal`, `D_cal` are the file's
//!      `models.<kind>.batch` and `emb_dim`; `(m_ref, D_ref)` = ([`REFERENCE_BATCH`],
//!      [`REFERENCE_EMB_DIM`]), the anchor jobs' (DLRover: batch 512).
//!    - `T_grad` and `T_emb` carry `m` and `D` themselves; betas are per-iteration constants
//!      and stay as measured.
//! 2. **Production factors** ([`Factors`], [`with_factors`]). Each term is work of the side
//!    the kernel measured it on (`sim/kernel/src/calibrate/shape.rs`), and the dense sync
//!    keeps factor 1 (it is a transfer whose bandwidth the scenario states):
//!    - the gradient's per-sample slope (`a_grad`) takes `k_grad`: the production model's
//!      heavier per-sample compute against the kernel's stand-in (the kernel's kinds are
//!      small MLPs, without xDeepFM's CIN or DCN's cross layers), so it differs by kind;
//!    - the worker's per-step intercepts take `k_rt`: `b_grad` (the gradient's fixed cost a
//!      step: dispatch and reduction), `b_emb` (de-duplicating the batch's `26 m` IDs and
//!      copying the returned rows into the batch) and `b_upd` (packing the sparse
//!      gradients); they are TensorFlow's per-step ops on the same Criteo IDs whatever the
//!      model above them, so one factor serves every kind. None of them is divided by `p`:
//!      the paper's form folds them into intercepts;
//!    - the PS side, `a_upd` (applying w pushes on `lambda_p` threads) and `a_emb` (serving
//!      the rows of a lookup request, `1 / p` of them per PS), takes `k_ps`: a TensorFlow
//!      PS's RPC and hash-table costs against the kernel's in-process ones.
//!
//!    (Until 2026-11-26 `b_emb` and `b_upd` took `k_ps`: the worker's de-duplication then
//!    counted as PS work, a fixed 69 ms per W&D step that no number of workers contended for,
//!    so scaling out cost nothing. Until 2026-11-28 every worker-side term took one factor
//!    per kind: xDeepFM's, 3.3x W&D's, then made its per-step intercepts 3.3x W&D's for the
//!    same IDs, 37 ms of serial work a step against a gradient of 23 ms on its 20-core
//!    workers, so its workers used 6-7 cores where Table 1 measured 18-19 and `dlrover`
//!    split the job into 17-42 small workers to run the serial parts side by side, 92
//!    steps/s against DLRover's 56. `job_perf_detail` counts the same split as each side's
//!    CPU use.)
//! 3. **Anchoring** ([`anchor_factors`]). For a kind with a published anchor ([`ANCHORS`]:
//!    DLRover Table 2's well-tuned configuration and the throughput Table 1 reports for it),
//!    two equations hold at that configuration, with `G`, `R`, `P`, `S` the step-1
//!    gradient slope time, worker intercepts, PS-side time and sync time there:
//!    - *level*: `k_grad G + k_rt R + k_ps P + S = w / R_pub` (`R_pub` steps/s), so the
//!      anchor reaches the published throughput;
//!    - *well-tuned*: moving one core between the worker side and the PS side leaves the
//!      iteration time unchanged (DLRover tuned these configurations "until it almost reaches
//!      the best throughput", both at about C_total = 200 cores):
//!      `k_grad a_grad m / (w lambda_w^2) = k_ps a_upd' w / (p^2 lambda_p^2)`.
//!      If the fit has `a_grad = 0` or `a_upd = 0` this condition is degenerate and one common
//!      factor is used (`k_grad = k_ps`).
//!    - *capacity*: the anchor's PSes cannot work faster than their cores (the truth bounds
//!      the iteration by the busiest PS's round, `super::throughput`). Where the well-tuned
//!      split would have them do more at the published throughput, they are saturated there
//!      instead: `k_ps` is what their cores do at that rate and the worker's factor fills the
//!      serial iteration to the published one, the point where the PS round and the serial
//!      iteration meet. The shipped calibration's anchors are well inside (W&D's PSes at 62%
//!      of their cores); a rough fit (`dlsim calibrate --quick`) can put W&D's past them.
//!
//!    The first anchor the file covers (W&D) has three factors for two equations and takes
//!    `k_grad = k_rt` (one worker factor, as before 2026-11-28); every further anchored kind
//!    (xDeepFM) keeps that `k_rt` and solves its own `k_grad` and `k_ps`. Kinds without a
//!    published anchor (DCN) take `k_rt` and the geometric mean of the anchored kinds'
//!    `k_grad` and `k_ps` (assumption: it sits between W&D and xDeepFM, as the built-in
//!    defaults did).
//!
//!    The anchor's iteration is the truth's, so it includes the worker pod runtime's share
//!    of the anchor's worker cores (`super::WORKER_RUNTIME_CORES`: W&D's 3-core workers
//!    train on 2.0 cores, xDeepFM's 20-core ones on 18.6), and a lookup is served on
//!    `super::lookup_threads` of the anchor's 16-core PSes (4.5).
//!
//! Result: within each term the truth keeps the kernel's measured shape (slope vs intercept,
//! hence its scaling in `w`, `p`, `lambda_w`, `lambda_p`, `m`, `D`), the split between worker
//! and PS work follows from the well-tuned configuration, and the level is DLRover's published
//! throughput, whatever the speed of the machine that ran the kernel. Model kinds that a file
//! does not cover keep [`super::default_params`].

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use dlsim_traces::{InputError, ModelKind};
use serde::Deserialize;

use super::{iteration_time, PerfInputs, Physics, ThroughputParams};

/// `B_ref`: the network bandwidth the truth's `a_sync` is expressed against (MB/s; 10 Gb/s
/// Ethernet, the scenario default `truth.bandwidth_mb_s`).
pub const REFERENCE_BANDWIDTH_MB_S: f64 = 1_250.0;
/// `m_ref`: batch size of the anchor jobs (DLRover Table 1, batch 512).
pub const REFERENCE_BATCH: f64 = 512.0;
/// `D_ref`: embedding dimension of the anchor jobs (assumption; the generator's most common).
pub const REFERENCE_EMB_DIM: f64 = 16.0;

/// A published operating point of one model kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anchor {
    pub kind: ModelKind,
    pub workers: f64,
    pub worker_cores: f64,
    pub ps: f64,
    pub ps_cores: f64,
    /// Dense model size `M` in MB (assumption: not published).
    pub dense_mb: f64,
    /// Published throughput in steps/s at [`REFERENCE_BATCH`].
    pub steps_per_s: f64,
}

impl Anchor {
    /// The anchor's configuration as the truth's inputs, under the pod constants `physics`.
    pub fn inputs(&self, physics: Physics) -> PerfInputs {
        PerfInputs {
            workers: self.workers,
            ps: self.ps,
            worker_cores: self.worker_cores,
            ps_cores: self.ps_cores,
            batch: REFERENCE_BATCH,
            dense_mb: self.dense_mb,
            bandwidth_mb_s: REFERENCE_BANDWIDTH_MB_S,
            emb_dim: REFERENCE_EMB_DIM,
            physics,
        }
    }
}

/// DLRover (earlier paper) Table 2 well-tuned configurations with Table 1's throughput:
/// W&D 24 workers x 3 cores, 8 PS x 16 cores, 210 steps/s; xDeepFM 8 x 20, 2 x 16,
/// 47.8 steps/s (batch 512, Criteo). The dense sizes are the assumptions `default_params`
/// was tuned with (W&D 20 MB, xDeepFM 40 MB).
pub const ANCHORS: [Anchor; 2] = [
    Anchor {
        kind: ModelKind::WideDeep,
        workers: 24.0,
        worker_cores: 3.0,
        ps: 8.0,
        ps_cores: 16.0,
        dense_mb: 20.0,
        steps_per_s: 210.0,
    },
    Anchor {
        kind: ModelKind::Xdeepfm,
        workers: 8.0,
        worker_cores: 20.0,
        ps: 2.0,
        ps_cores: 16.0,
        dense_mb: 40.0,
        steps_per_s: 47.8,
    },
];

/// One kind's fit as the calibration file gives it, with the workload it was measured at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelKind {
    pub params: ThroughputParams,
    /// `m_cal`, samples.
    pub batch: f64,
    /// `D_cal`, dimensions.
    pub emb_dim: f64,
}

/// What the contract reads from a calibration file.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelCalibration {
    /// `B_cal`: the bandwidth (MB/s) the fit used, `machine.bandwidth_mb_s`.
    pub bandwidth_mb_s: f64,
    pub kinds: BTreeMap<ModelKind, KernelKind>,
}

/// Step 2's multipliers: `grad` on the gradient's per-sample compute (`a_grad`), `runtime`
/// on the worker's per-step intercepts (`b_grad`, `b_emb`, `b_upd`), `ps` on the PS-side
/// work (`a_upd`, `a_emb`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Factors {
    pub grad: f64,
    pub runtime: f64,
    pub ps: f64,
}

/// Step 1: the fit with `a_sync` against [`REFERENCE_BANDWIDTH_MB_S`] and `a_upd` at the
/// reference batch and embedding dimension.
pub fn to_reference_units(k: &KernelKind, bandwidth_mb_s: f64) -> ThroughputParams {
    let rows = REFERENCE_BATCH * (REFERENCE_EMB_DIM + 1.0) / (k.batch * (k.emb_dim + 1.0));
    ThroughputParams {
        a_sync: k.params.a_sync * REFERENCE_BANDWIDTH_MB_S / bandwidth_mb_s,
        a_upd: k.params.a_upd * rows,
        ..k.params
    }
}

/// Step 2: the gradient's slope times `f.grad`, the worker's intercepts times `f.runtime`,
/// PS-side work times `f.ps`, sync unchanged.
pub fn with_factors(u: &ThroughputParams, f: Factors) -> ThroughputParams {
    ThroughputParams {
        a_grad: u.a_grad * f.grad,
        b_grad: u.b_grad * f.runtime,
        a_upd: u.a_upd * f.ps,
        b_upd: u.b_upd * f.runtime,
        a_emb: u.a_emb * f.ps,
        b_emb: u.b_emb * f.runtime,
        ..*u
    }
}

/// Step 3: the factors that put `u` (step-1 parameters) at the anchor's published
/// throughput with its core split well tuned. With `runtime` `None` (the first anchor) the
/// worker's two factors are one (`grad` = `runtime`); with `Some(k)` the intercepts take
/// `k` (the first anchor's) and `grad` and `ps` solve the two equations. Errs when no
/// positive factors can.
pub fn anchor_factors(
    u: &ThroughputParams,
    a: &Anchor,
    runtime: Option<f64>,
    physics: Physics,
) -> Result<Factors, String> {
    let x = a.inputs(physics);
    let t = iteration_time(u, &x);
    // At the anchor, split as `with_factors` scales them: the gradient's slope, the
    // worker's intercepts, the PS side and the sync.
    let intercepts = u.b_grad + u.b_emb + u.b_upd;
    let (g, p, s) = (
        t.grad_s - u.b_grad,
        t.upd_s + t.emb_s - u.b_emb - u.b_upd,
        t.sync_s,
    );
    let target_s = a.workers / a.steps_per_s;
    if s >= target_s {
        return Err(format!(
            "the dense sync alone ({s:.4} s) exceeds the published iteration ({target_s:.4} s)"
        ));
    }
    let ratio = if u.a_grad > 0.0 && u.a_upd > 0.0 {
        let worker_side = u.a_grad * x.batch / (x.workers * x.worker_cores.powi(2));
        let ps_side = u.a_upd * x.workers / (x.ps * x.ps_cores).powi(2);
        ps_side / worker_side
    } else {
        1.0
    };
    let (rest, per_ps) = match runtime {
        None => (target_s - s, ratio * (g + intercepts) + p),
        Some(k) => (target_s - s - k * intercepts, ratio * g + p),
    };
    if per_ps.is_nan() || per_ps <= 0.0 {
        return Err("the fit has no worker or PS time to scale".into());
    }
    if rest <= 0.0 {
        return Err(format!(
            "the worker's intercepts at the first anchor's runtime factor fill the published \
             iteration ({target_s:.4} s)"
        ));
    }
    let ps = rest / per_ps;
    // The PSes cannot work faster than their cores (`super::throughput`): if the split would
    // have them do more than that at the published throughput, they are saturated there,
    // the PS factor is what their cores do at that rate, and the worker's factor fills the
    // serial iteration to the published one (where the PS round and the serial iteration
    // meet: in a truth bounded by both, a well-tuned configuration sits at that meeting).
    let step_work = super::ps_step_work(u, &x);
    let capacity = a.ps * a.ps_cores;
    if a.steps_per_s * ps * step_work <= capacity {
        return Ok(Factors {
            grad: ratio * ps,
            runtime: runtime.unwrap_or(ratio * ps),
            ps,
        });
    }
    let ps = capacity / (a.steps_per_s * step_work);
    let worker = match runtime {
        None => (target_s - s - ps * p) / (g + intercepts),
        Some(k) => (target_s - s - k * intercepts - ps * p) / g,
    };
    if !(worker > 0.0 && worker.is_finite()) {
        return Err(format!(
            "its PSes ({} x {} cores) saturated at the published {} steps/s leave the worker \
             no time in the iteration ({target_s:.4} s)",
            a.ps, a.ps_cores, a.steps_per_s
        ));
    }
    Ok(Factors {
        grad: worker,
        runtime: runtime.unwrap_or(worker),
        ps,
    })
}

/// Steps 2-3 of the contract: the factors of every kind the calibration covers, over its
/// step-1 parameters ([`to_reference_units`]), anchored under the pod constants `physics`.
pub fn factors(
    cal: &KernelCalibration,
    physics: Physics,
) -> Result<BTreeMap<ModelKind, Factors>, String> {
    factors_of(&reference_units(cal), physics)
}

/// The whole contract: the truth of every kind the calibration covers, under the pod
/// constants `physics` (a scenario's `truth.worker_runtime_cores` and
/// `truth.ps_lookup_threads`: the anchors are re-solved with them, so each anchor keeps its
/// published throughput whatever they are).
pub fn truth(
    cal: &KernelCalibration,
    physics: Physics,
) -> Result<BTreeMap<ModelKind, ThroughputParams>, String> {
    let units = reference_units(cal);
    Ok(factors_of(&units, physics)?
        .into_iter()
        .map(|(kind, f)| (kind, with_factors(&units[&kind], f)))
        .collect())
}

fn reference_units(cal: &KernelCalibration) -> BTreeMap<ModelKind, ThroughputParams> {
    cal.kinds
        .iter()
        .map(|(&kind, k)| (kind, to_reference_units(k, cal.bandwidth_mb_s)))
        .collect()
}

fn factors_of(
    units: &BTreeMap<ModelKind, ThroughputParams>,
    physics: Physics,
) -> Result<BTreeMap<ModelKind, Factors>, String> {
    // The first anchor the file covers sets the runtime factor of the worker's intercepts;
    // every further anchored kind takes it and solves its own gradient and PS factors.
    let mut anchored: BTreeMap<ModelKind, Factors> = BTreeMap::new();
    let mut runtime = None;
    for a in &ANCHORS {
        if let Some(u) = units.get(&a.kind) {
            let f = anchor_factors(u, a, runtime, physics)
                .map_err(|e| format!("kinds.{}: {e}", a.kind))?;
            runtime.get_or_insert(f.runtime);
            anchored.insert(a.kind, f);
        }
    }
    let Some(runtime) = runtime else {
        return Err(
            "kinds: covers no kind with a published anchor (wide_deep, xdeepfm), so the \
             truth's level cannot be set"
                .into(),
        );
    };
    let n = anchored.len() as f64;
    let geo =
        |get: fn(&Factors) -> f64| (anchored.values().map(|f| get(f).ln()).sum::<f64>() / n).exp();
    let between = Factors {
        grad: geo(|f| f.grad),
        runtime,
        ps: geo(|f| f.ps),
    };
    Ok(units
        .keys()
        .map(|kind| (*kind, anchored.get(kind).copied().unwrap_or(between)))
        .collect())
}

/// A parsed calibration file: what `dlsim calibrate` wrote, as far as the simulator reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationFile {
    /// The raw fitted parameters per kind (kernel scale, before the contract).
    pub kinds: BTreeMap<ModelKind, ThroughputParams>,
    bandwidth_mb_s: Option<f64>,
    models: BTreeMap<ModelKind, ModelDesc>,
}

#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
struct ModelDesc {
    batch: f64,
    emb_dim: f64,
}

/// Checks format, version and parameter signs; the contract's inputs are checked by
/// [`load_truth`].
pub fn parse(text: &str, path: &Path) -> Result<CalibrationFile, InputError> {
    #[derive(Deserialize)]
    struct Machine {
        #[serde(default)]
        bandwidth_mb_s: Option<f64>,
    }
    #[derive(Deserialize)]
    struct Raw {
        format: String,
        version: u32,
        #[serde(default)]
        machine: Option<Machine>,
        #[serde(default)]
        models: BTreeMap<ModelKind, ModelDesc>,
        kinds: BTreeMap<ModelKind, ThroughputParams>,
    }
    let raw: Raw = dlsim_traces::error::parse_json_document(path, text, 0)?;
    let err = |field: String, msg: String| InputError::new(path, msg).field_in(text, field);
    // v2 (shape grid) adds the shape-aware fit; `kinds` and `models.<kind>.batch/emb_dim`
    // mean the same in both: the paper-form parameters and the shape they hold at.
    if raw.format != "dlsim-calibration" || !(1..=2).contains(&raw.version) {
        let msg = format!(
            "expected a dlsim-calibration v1 or v2 file, got `{}` v{}",
            raw.format, raw.version
        );
        return Err(err("format".into(), msg));
    }
    for (kind, p) in &raw.kinds {
        let all = p.named();
        if let Some((name, _)) = all.iter().find(|(_, x)| !x.is_finite() || *x < 0.0) {
            let msg = "alphas and betas must be finite and >= 0".to_string();
            return Err(err(format!("kinds.{kind}.{name}"), msg));
        }
    }
    Ok(CalibrationFile {
        kinds: raw.kinds,
        bandwidth_mb_s: raw.machine.and_then(|m| m.bandwidth_mb_s),
        models: raw.models,
    })
}

/// Parses a calibration and applies the contract: the truth of every kind it covers.
pub fn load_truth(
    text: &str,
    path: &Path,
    physics: Physics,
) -> Result<BTreeMap<ModelKind, ThroughputParams>, InputError> {
    let cal = load_kernel(text, path)?;
    truth(&cal, physics).map_err(|msg| contract_error(text, path, msg))
}

/// Parses a calibration and applies steps 2-3 of the contract: the factors of every kind
/// it covers (what `dlsim calibrate` prints).
pub fn load_factors(
    text: &str,
    path: &Path,
    physics: Physics,
) -> Result<BTreeMap<ModelKind, Factors>, InputError> {
    let cal = load_kernel(text, path)?;
    factors(&cal, physics).map_err(|msg| contract_error(text, path, msg))
}

/// A contract error names the field its message starts with (`kinds.<kind>: ...`).
fn contract_error(text: &str, path: &Path, msg: String) -> InputError {
    let field = msg.split(':').next().unwrap_or("kinds").to_string();
    InputError::new(path, msg).field_in(text, field)
}

/// The contract's inputs from a calibration file, each problem an [`InputError`].
fn load_kernel(text: &str, path: &Path) -> Result<KernelCalibration, InputError> {
    let file = parse(text, path)?;
    let err = |field: String, msg: String| InputError::new(path, msg).field_in(text, field);
    let bandwidth_mb_s = match file.bandwidth_mb_s {
        Some(b) if b.is_finite() && b > 0.0 => b,
        Some(_) => {
            let msg = "must be a positive bandwidth in MB/s".to_string();
            return Err(err("machine.bandwidth_mb_s".into(), msg));
        }
        None => {
            let msg = "missing: the bandwidth B (MB/s) the fit used is needed to convert a_sync \
                       to the simulator's network"
                .to_string();
            return Err(err("machine.bandwidth_mb_s".into(), msg));
        }
    };
    let mut kinds = BTreeMap::new();
    for (&kind, &params) in &file.kinds {
        let field = format!("models.{kind}");
        let Some(m) = file.models.get(&kind) else {
            let msg = "missing: the batch and emb_dim the kind was measured at".to_string();
            return Err(err(field, msg));
        };
        if !(m.batch.is_finite() && m.batch > 0.0 && m.emb_dim.is_finite() && m.emb_dim > 0.0) {
            let msg = "batch and emb_dim must be > 0".to_string();
            return Err(err(field, msg));
        }
        let (batch, emb_dim) = (m.batch, m.emb_dim);
        kinds.insert(
            kind,
            KernelKind {
                params,
                batch,
                emb_dim,
            },
        );
    }
    Ok(KernelCalibration {
        bandwidth_mb_s,
        kinds,
    })
}

/// Where the shipped calibration lives in the repository (it is embedded in the binary).
pub const SHIPPED_PATH: &str = "reports/calibration/default.json";

/// The shipped calibration, embedded so `dlsim` finds it from any working directory.
pub const SHIPPED_JSON: &str = include_str!("../../../../reports/calibration/default.json");

/// The contract applied to the shipped calibration: the default truth of the kinds it covers.
pub fn shipped_truth() -> &'static BTreeMap<ModelKind, ThroughputParams> {
    static TRUTH: OnceLock<BTreeMap<ModelKind, ThroughputParams>> = OnceLock::new();
    TRUTH.get_or_init(|| {
        load_truth(SHIPPED_JSON, Path::new(SHIPPED_PATH), Physics::default())
            .unwrap_or_else(|e| panic!("the embedded shipped calibration is invalid: {e}"))
    })
}

/// The contract applied to the shipped calibration under the pod constants `physics`
/// ([`shipped_truth`] for the defaults). Each set of constants is solved once per process;
/// an error says why the anchors cannot be solved with them.
pub fn shipped_truth_with(
    physics: Physics,
) -> Result<std::sync::Arc<BTreeMap<ModelKind, ThroughputParams>>, String> {
    type Solved = std::sync::Arc<BTreeMap<ModelKind, ThroughputParams>>;
    static SOLVED: std::sync::Mutex<Vec<(Physics, Result<Solved, String>)>> =
        std::sync::Mutex::new(Vec::new());
    let mut solved = SOLVED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, r)) = solved.iter().find(|(p, _)| *p == physics) {
        return r.clone();
    }
    let r = load_truth(SHIPPED_JSON, Path::new(SHIPPED_PATH), physics)
        .map(std::sync::Arc::new)
        .map_err(|e| e.message);
    solved.push((physics, r.clone()));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::throughput;

    fn kernel(a_grad: f64, a_upd: f64) -> KernelKind {
        KernelKind {
            params: ThroughputParams {
                a_grad,
                b_grad: 1e-4,
                a_upd,
                b_upd: 1e-4,
                a_sync: 9.0,
                b_sync: 1e-5,
                a_emb: 2e-7,
                b_emb: 4e-4,
            },
            batch: 256.0,
            emb_dim: 8.0,
        }
    }

    #[test]
    fn step_one_keeps_sync_time_at_equal_bytes() {
        let k = kernel(6e-6, 5e-4);
        let u = to_reference_units(&k, 25_000.0);
        let bytes_time = |p: &ThroughputParams, b: f64| p.a_sync * 20.0 / b;
        assert!(
            (bytes_time(&u, REFERENCE_BANDWIDTH_MB_S) - bytes_time(&k.params, 25_000.0)).abs()
                < 1e-12
        );
        assert!((u.a_upd / k.params.a_upd - 512.0 * 17.0 / (256.0 * 9.0)).abs() < 1e-12);
        assert_eq!((u.a_grad, u.b_upd, u.a_emb), (6e-6, 1e-4, 2e-7));
    }

    /// A fit whose well-tuned split would have the anchor's PSes do more than their cores
    /// at the published throughput (a heavy lookup against a light gradient) is anchored
    /// with the PSes saturated: the anchor still reaches its throughput, its PSes then work
    /// exactly their cores, and the serial iteration meets the PS round there.
    #[test]
    fn an_anchor_past_its_ps_cores_is_anchored_saturated() {
        let heavy_lookup = KernelKind {
            params: ThroughputParams {
                a_emb: 2e-5,
                ..kernel(6e-6, 5e-4).params
            },
            ..kernel(6e-6, 5e-4)
        };
        let a = &ANCHORS[0];
        let u = to_reference_units(&heavy_lookup, 25_000.0);
        let x = a.inputs(Physics::default());
        // The well-tuned split alone would overload the PSes.
        let ratio = (u.a_upd * x.workers / (x.ps * x.ps_cores).powi(2))
            / (u.a_grad * x.batch / (x.workers * x.worker_cores.powi(2)));
        let t = iteration_time(&u, &x);
        let (g, pt) = (t.grad_s - u.b_grad, t.upd_s + t.emb_s - u.b_emb - u.b_upd);
        let intercepts = u.b_grad + u.b_emb + u.b_upd;
        let k_ps_tuned = (a.workers / a.steps_per_s - t.sync_s) / (ratio * (g + intercepts) + pt);
        let step_work = u.a_upd + u.a_emb * x.batch * x.emb_dim;
        assert!(a.steps_per_s * k_ps_tuned * step_work > a.ps * a.ps_cores);

        let f = anchor_factors(&u, a, None, Physics::default()).unwrap();
        let p = with_factors(&u, f);
        let steps = throughput(&p, &x) / REFERENCE_BATCH;
        assert!((steps - a.steps_per_s).abs() < 1e-9 * steps, "{steps}");
        let serial = a.workers / iteration_time(&p, &x).total_s();
        assert!((serial - a.steps_per_s).abs() < 1e-9 * serial, "{serial}");
        let ps_busy = a.steps_per_s * f.ps * step_work;
        assert!(
            (ps_busy - a.ps * a.ps_cores).abs() < 1e-9 * ps_busy,
            "{ps_busy}"
        );
    }

    #[test]
    fn anchored_truth_reaches_the_published_throughput_well_tuned() {
        let mut kinds = BTreeMap::new();
        kinds.insert(ModelKind::WideDeep, kernel(6e-6, 5e-4));
        kinds.insert(ModelKind::Xdeepfm, kernel(2e-5, 6e-4));
        kinds.insert(ModelKind::Dcn, kernel(9e-6, 6e-4));
        let cal = KernelCalibration {
            bandwidth_mb_s: 25_000.0,
            kinds,
        };
        // Whatever the pod constants, the re-solved anchors keep their published
        // throughput and their well-tuned split.
        for physics in [
            Physics::default(),
            Physics {
                worker_runtime_cores: 0.0,
                ps_lookup_threads: 1.0,
            },
            Physics {
                worker_runtime_cores: 2.5,
                ps_lookup_threads: 8.0,
            },
        ] {
            let t = truth(&cal, physics).unwrap();
            for a in &ANCHORS {
                let p = &t[&a.kind];
                let x = a.inputs(physics);
                let steps = throughput(p, &x) / REFERENCE_BATCH;
                assert!((steps - a.steps_per_s).abs() < 1e-9 * steps, "{steps}");
                // Well tuned: one core moved from the PS side to the workers changes
                // nothing to first order.
                let dw = p.a_grad * x.batch / (x.workers * x.worker_cores.powi(2));
                let dp = p.a_upd * x.workers / (x.ps * x.ps_cores).powi(2);
                assert!((dw - dp).abs() < 1e-9 * dw, "{dw} vs {dp}");
            }
        }
        let t = truth(&cal, Physics::default()).unwrap();
        // One pod runtime: every kind's per-step intercepts take the first anchor's factor
        // over the kernel's measurement; the gradient's slope does not.
        let factor = |kind: ModelKind, k: KernelKind| {
            let u = to_reference_units(&k, 25_000.0);
            let p = &t[&kind];
            (p.b_emb / u.b_emb, p.b_grad / u.b_grad, p.a_grad / u.a_grad)
        };
        let wd = factor(ModelKind::WideDeep, kernel(6e-6, 5e-4));
        for (kind, k) in [
            (ModelKind::Xdeepfm, kernel(2e-5, 6e-4)),
            (ModelKind::Dcn, kernel(9e-6, 6e-4)),
        ] {
            let f = factor(kind, k);
            assert!((f.0 - wd.0).abs() < 1e-9 * wd.0, "{kind}: {f:?} vs {wd:?}");
            assert!((f.1 - wd.1).abs() < 1e-9 * wd.1, "{kind}: {f:?} vs {wd:?}");
            assert!((f.2 - wd.2).abs() > 1e-3 * wd.2, "{kind}: {f:?} vs {wd:?}");
        }
        // W&D's own two factors are one.
        assert!((wd.0 - wd.2).abs() < 1e-9 * wd.0, "{wd:?}");
    }

    #[test]
    fn the_shipped_factors_share_the_runtime_and_make_the_shipped_truth() {
        let path = Path::new(SHIPPED_PATH);
        let f = load_factors(SHIPPED_JSON, path, Physics::default()).unwrap();
        let wd = f[&ModelKind::WideDeep];
        assert_eq!(wd.grad, wd.runtime);
        for kind in [ModelKind::Xdeepfm, ModelKind::Dcn] {
            assert_eq!(f[&kind].runtime, wd.runtime, "{kind}");
            assert!(
                f[&kind].grad > wd.grad,
                "{kind}: heavier compute than W&D's"
            );
        }
        // The truth is those factors over the file's step-1 parameters.
        let cal = load_kernel(SHIPPED_JSON, path).unwrap();
        for (kind, p) in shipped_truth() {
            let u = to_reference_units(&cal.kinds[kind], cal.bandwidth_mb_s);
            assert_eq!(*p, with_factors(&u, f[kind]), "{kind}");
        }
    }

    #[test]
    fn a_later_anchor_whose_intercepts_fill_its_iteration_is_an_error() {
        let u = to_reference_units(&kernel(2e-5, 6e-4), 25_000.0);
        let e = anchor_factors(&u, &ANCHORS[1], Some(1e6), Physics::default()).unwrap_err();
        assert!(e.contains("fill the published iteration"), "{e}");
    }

    #[test]
    fn worker_side_intercepts_take_the_worker_factor() {
        let k = kernel(6e-6, 5e-4);
        let u = to_reference_units(&k, 25_000.0);
        let t = with_factors(
            &u,
            Factors {
                grad: 3.0,
                runtime: 2.0,
                ps: 50.0,
            },
        );
        // De-duplication and row copies (b_emb), gradient packing (b_upd) and the
        // gradient's per-step intercept (b_grad) run on the worker in the kernel and take
        // the runtime factor; the gradient's per-sample slope takes the model's; serving
        // rows and applying pushes (a_emb, a_upd) scale with the PS; the sync stays a
        // transfer.
        assert_eq!(
            (t.b_emb, t.b_upd, t.b_grad, t.a_grad),
            (u.b_emb * 2.0, u.b_upd * 2.0, u.b_grad * 2.0, u.a_grad * 3.0)
        );
        assert_eq!((t.a_emb, t.a_upd), (u.a_emb * 50.0, u.a_upd * 50.0));
        assert_eq!((t.a_sync, t.b_sync), (u.a_sync, u.b_sync));
        // With more workers only the PS side grows: the anchor's level still holds.
        let f = anchor_factors(&u, &ANCHORS[0], None, Physics::default()).unwrap();
        let a = ANCHORS[0];
        let steps = crate::perf::throughput(&with_factors(&u, f), &a.inputs(Physics::default()))
            / REFERENCE_BATCH;
        assert!((steps - a.steps_per_s).abs() < 1e-9 * steps, "{steps}");
    }

    #[test]
    fn a_sync_bound_beyond_the_anchor_is_an_error() {
        let mut k = kernel(6e-6, 5e-4);
        k.params.a_sync = 1e4;
        let u = to_reference_units(&k, 1_250.0);
        assert!(anchor_factors(&u, &ANCHORS[0], None, Physics::default())
            .unwrap_err()
            .contains("dense sync"));
    }
}
