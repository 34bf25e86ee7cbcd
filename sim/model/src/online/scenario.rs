//! Online jobs in scenario files: an entry of a scenario's `online` list
//! ([`OnlineJobFile`]: the job and its hidden throughput truth, traffic, rescale costs,
//! observation noise, SLO and worker pod request), and the earlier online-only file
//! (`"kind": "online"`, [`OnlineFile`]), which loads as a scenario of one online job on a
//! dedicated pool of GPU nodes ([`legacy_scenario_text`]). Loading validates everything and
//! returns an [`InputError`] naming the file, line and field, so a bad file fails before
//! anything runs.

use dlsim_traces::InputError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The parsed scenario file. Every field except `kind`, `name` and `policy` has a default.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OnlineFile {
    pub kind: String,
    pub name: String,
    #[serde(default = "one")]
    pub seed: u64,
    /// Simulated days.
    #[serde(default = "seven")]
    pub days: f64,
    pub policy: String,
    #[serde(default)]
    pub cluster: ClusterSpec,
    #[serde(default)]
    pub job: JobSpec,
    #[serde(default)]
    pub traffic: TrafficSpec,
    #[serde(default)]
    pub rescale: RescaleSpec,
    #[serde(default)]
    pub observation: ObservationSpec,
    /// Fluid step and metric scrape period (s); must divide 60.
    #[serde(default = "fifteen")]
    pub step_s: u64,
    /// Lag above which a minute counts as an SLO violation (Kale: 20 min).
    #[serde(default = "slo_default")]
    pub slo_lag_s: f64,
}

fn one() -> u64 {
    1
}
fn seven() -> f64 {
    7.0
}
fn fifteen() -> u64 {
    15
}
fn slo_default() -> f64 {
    1200.0
}

/// One online job of a scenario (`"online": [ ... ]`): it runs from time 0 for `days`,
/// its workers are pods of `worker` placed on the scenario's cluster like every pod.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OnlineJobFile {
    pub name: String,
    /// The job's id in `jobs.csv` (default: its index in the `online` list); no trace job
    /// may have it.
    #[serde(default)]
    pub id: Option<u64>,
    /// When the job starts, in seconds from the run's start (a trace record's own
    /// `submit_s`); it then runs for `days`. Its minutes, ticks and `online.csv` rows count
    /// from its start.
    #[serde(default)]
    pub submit_s: u64,
    /// Simulated days the job runs (from `submit_s`).
    #[serde(default = "seven")]
    pub days: f64,
    #[serde(default)]
    pub job: JobSpec,
    /// The request of one worker pod.
    #[serde(default)]
    pub worker: WorkerSpec,
    /// The most workers the job may run (e.g. the room its PS pods have); the world
    /// also never places more than the cluster holds. Default: `job.profile_workers`' max.
    #[serde(default)]
    pub max_workers: Option<u32>,
    #[serde(default)]
    pub traffic: TrafficSpec,
    #[serde(default)]
    pub rescale: RescaleSpec,
    #[serde(default)]
    pub observation: ObservationSpec,
    /// Fluid step and metric scrape period (s); must divide 60.
    #[serde(default = "fifteen")]
    pub step_s: u64,
    /// Lag above which a minute counts as an SLO violation (Kale: 20 min).
    #[serde(default = "slo_default")]
    pub slo_lag_s: f64,
}

/// The request of one online worker pod (its PS pods are not placed: see ARCHITECTURE.md,
/// simplifications).
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct WorkerSpec {
    pub cores: f64,
    pub mem_gb: f64,
    pub gpus: u32,
}

impl Default for WorkerSpec {
    fn default() -> Self {
        // One A10 GPU with the CPU and memory a data-loading worker needs (assumption).
        WorkerSpec {
            cores: 8.0,
            mem_gb: 32.0,
            gpus: 1,
        }
    }
}

impl WorkerSpec {
    pub fn request(&self) -> crate::Resources {
        crate::Resources::new(self.cores, (self.mem_gb * 1024.0).round() as u64, self.gpus)
    }
}

impl OnlineJobFile {
    /// How long the job runs: over `[submit_s, submit_s + horizon]`.
    pub fn horizon_s(&self) -> u64 {
        (self.days * 86_400.0).round() as u64
    }

    /// The most workers policies may ask for.
    pub fn max_workers(&self) -> u32 {
        self.max_workers
            .unwrap_or_else(|| self.job.profile_workers.iter().copied().max().unwrap_or(1))
    }
}

/// A dedicated cluster: workers on GPU nodes (one GPU each), PS on CPU nodes.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(rename = "OnlineClusterSpec")]
pub struct ClusterSpec {
    pub gpu_nodes: u32,
    pub gpus_per_node: u32,
    pub cpu_nodes: u32,
    pub cores_per_cpu_node: u32,
}

impl Default for ClusterSpec {
    fn default() -> Self {
        // Kale's testbed: 32 NVIDIA A10 GPUs.
        ClusterSpec {
            gpu_nodes: 4,
            gpus_per_node: 8,
            cpu_nodes: 8,
            cores_per_cpu_node: 64,
        }
    }
}

/// Synchronous (Eq. 4) or asynchronous (Eq. 6) PS training.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrainMode {
    Sync,
    Async,
}

/// The online job and its hidden throughput truth.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(rename = "OnlineJobSpec")]
pub struct JobSpec {
    pub mode: TrainMode,
    /// Workers per PS (Kale keeps w/p constant; its experiments use 1).
    pub wp_ratio: f64,
    pub ps_cores: u32,
    pub initial_workers: u32,
    /// Hidden truth: Eq. 4 `theta_0..theta_6` (sync, 7 values) or Eq. 6 `theta_0..theta_2`
    /// (async, 3 values), in seconds per sample.
    pub theta: Vec<f64>,
    /// Sigma of the hidden lognormal factor on each theta (drawn from `job-truth`).
    pub truth_sigma: f64,
    /// Worker counts benchmarked offline before deployment (the profile Kale fits).
    pub profile_workers: Vec<u32>,
    pub profile_repeats: u32,
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            mode: TrainMode::Sync,
            wp_ratio: 1.0,
            ps_cores: 8,
            initial_workers: 8,
            theta: vec![1e-6, 6e-5, 1.5e-5, 5e-7, 5e-6, 1e-8, 2e-8],
            truth_sigma: 0.1,
            profile_workers: vec![1, 2, 4, 6, 8, 12, 16, 24, 32],
            profile_repeats: 2,
        }
    }
}

/// Where the total arrival rate comes from.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TrafficSpec {
    /// `None`: the built-in diurnal generator. `Some(path)`: a rate-series CSV (from
    /// `dlsim trace import --format qps`), relative to the scenario file, whose shape is
    /// mapped affinely onto `[peak/peak_to_trough, peak]` and repeated every `period_s`.
    pub file: Option<PathBuf>,
    pub period_s: f64,
    /// Peak of the smooth daily cycle, samples/s.
    pub peak_sps: f64,
    /// Peak over trough of the daily cycle (Kale Fig. 2a: up to 7.65).
    pub peak_to_trough: f64,
    /// Hour of day of the trough (generator only).
    pub trough_hour: f64,
    /// Rate factor on days 6 and 7 of each week (generator only).
    pub weekend_factor: f64,
    /// Sigma of the AR(1) lognormal per-minute noise.
    pub noise_sigma: f64,
    /// Short bursts per day, their length (min) and gain ranges.
    pub bursts_per_day: f64,
    pub burst_minutes: [f64; 2],
    pub burst_gain: [f64; 2],
    /// Kafka partitions and the sigma of their lognormal rate shares (uneven partitions).
    pub partitions: u32,
    pub partition_skew_sigma: f64,
    /// Bytes per sample, for the network cost of shuffling.
    pub sample_bytes: f64,
    /// Whole days of ingress history before the run (the Kafka topic's per-minute counters
    /// of earlier days, drawn from this same traffic model): what a production operator's
    /// forecasters start from. 0: the run starts with no history, and a forecaster needing
    /// a day of it (Holt-Winters) predicts the last minute's rate until a day has passed.
    pub history_days: u32,
}

impl Default for TrafficSpec {
    fn default() -> Self {
        TrafficSpec {
            file: None,
            period_s: 86_400.0,
            peak_sps: 120_000.0,
            peak_to_trough: 7.65,
            trough_hour: 4.0,
            weekend_factor: 0.9,
            noise_sigma: 0.03,
            bursts_per_day: 4.0,
            burst_minutes: [2.0, 8.0],
            burst_gain: [0.1, 0.4],
            partitions: 256,
            partition_skew_sigma: 0.3,
            sample_bytes: 2048.0,
            history_days: 0,
        }
    }
}

/// How a change of worker count is carried out, and what each phase costs.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RescaleMode {
    /// Stop and restart: every pod reloads, training stops until all are back (Kale's cost).
    Restart,
    /// New pods load in the background; only the stream rebuild pauses consumption.
    Rolling,
}

#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RescaleSpec {
    pub mode: RescaleMode,
    pub container_start_s: f64,
    pub image_pull_s: f64,
    pub model_load_s: f64,
    pub stream_rebuild_s: f64,
}

impl Default for RescaleSpec {
    fn default() -> Self {
        // Kale's example for a 1B-parameter online job: 30 s + 30 s + 6 min + 2 min.
        RescaleSpec {
            mode: RescaleMode::Rolling,
            container_start_s: 30.0,
            image_pull_s: 30.0,
            model_load_s: 360.0,
            stream_rebuild_s: 120.0,
        }
    }
}

impl RescaleSpec {
    /// Seconds from pod creation to a loaded model (Pending, then Running but not Ready).
    pub fn load_s(&self) -> f64 {
        self.container_start_s + self.image_pull_s + self.model_load_s
    }
    pub fn total_s(&self) -> f64 {
        self.load_s() + self.stream_rebuild_s
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ObservationSpec {
    /// Sigma of the multiplicative noise on each scraped pod metric.
    pub metric_noise_sigma: f64,
    /// Sigma of the lognormal noise on each offline profile measurement.
    pub profile_noise_sigma: f64,
    /// Window a scraped pod metric averages over (s).
    pub metric_window_s: u64,
}

impl Default for ObservationSpec {
    fn default() -> Self {
        ObservationSpec {
            metric_noise_sigma: 0.02,
            profile_noise_sigma: 0.03,
            metric_window_s: 60,
        }
    }
}

impl OnlineFile {
    /// The one online job the file describes.
    fn job_file(&self) -> OnlineJobFile {
        OnlineJobFile {
            submit_s: 0,
            name: self.name.clone(),
            id: None,
            days: self.days,
            job: self.job.clone(),
            worker: WorkerSpec::default(),
            max_workers: Some(max_workers(self)),
            traffic: self.traffic.clone(),
            rescale: self.rescale.clone(),
            observation: self.observation.clone(),
            step_s: self.step_s,
            slo_lag_s: self.slo_lag_s,
        }
    }
}

/// The most workers the cluster holds: one GPU each, and their PS pods on the CPU nodes.
fn max_workers(f: &OnlineFile) -> u32 {
    let c = &f.cluster;
    let by_gpu = u64::from(c.gpu_nodes) * u64::from(c.gpus_per_node);
    // PS pods must fit on CPU nodes: p = ceil(w / ratio) pods of ps_cores each.
    let per_node = c.cores_per_cpu_node / f.job.ps_cores.max(1);
    let ps_max = u64::from(per_node) * u64::from(c.cpu_nodes);
    let by_ps = (ps_max as f64 * f.job.wp_ratio).floor() as u64;
    by_gpu.min(by_ps).min(u64::from(u32::MAX)) as u32
}

/// Whether the JSON text declares `"kind": "online"` (an online-only file).
pub fn is_online_text(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| is_online_value(&v))
}

/// Whether a parsed JSON document declares `"kind": "online"`.
pub fn is_online_value(doc: &serde_json::Value) -> bool {
    doc.get("kind").and_then(|k| k.as_str()) == Some("online")
}

/// An online-only file (`"kind": "online"`), validated, as the text of the scenario it
/// stands for: its one job on a dedicated pool (its GPU nodes, with room for a worker per
/// GPU, and its CPU nodes), no batch workload and no random pod failures (the online-only
/// world had none), the run lasting the job's days. The PS
/// nodes' room becomes the job's `max_workers`, so it runs exactly as it did in its own
/// world (same seed, same streams, same numbers).
pub fn legacy_scenario_text(path: &Path, text: &str) -> Result<String, InputError> {
    let f: OnlineFile = dlsim_traces::error::parse_json_document(path, text, 0)?;
    validate(path, text, &f)?;
    let job = f.job_file();
    let w = job.worker.clone();
    let c = &f.cluster;
    let per_node = f64::from(c.gpus_per_node);
    // A relative `traffic.file` resolves against the same folder: the scenario keeps
    // the file's path.
    let scenario = serde_json::json!({
        "name": f.name,
        "seed": f.seed,
        "policy": f.policy,
        "cluster": {
            "groups": [
                {
                    "name": "gpu",
                    "count": c.gpu_nodes,
                    "cores": w.cores * per_node,
                    "mem_gb": w.mem_gb * per_node,
                    "gpus": c.gpus_per_node * w.gpus,
                    "gpu_model": "A10",
                },
                {
                    "name": "cpu",
                    "count": c.cpu_nodes,
                    "cores": c.cores_per_cpu_node,
                    "mem_gb": 4 * c.cores_per_cpu_node,
                },
            ],
            "placement": "first_fit",
        },
        "horizon_s": job.horizon_s(),
        // The online-only world had no random pod failures: the file keeps its numbers.
        "faults": { "pod_failure_per_day": 0.0 },
        "online": [job],
    });
    Ok(serde_json::to_string_pretty(&scenario).expect("a scenario serialises"))
}

/// The error maker of a file's `text`: it names the field (its full path) and the line of
/// its value.
pub fn field_error<'a>(path: &'a Path, text: &'a str) -> impl Fn(&str, &str) -> InputError + 'a {
    move |field: &str, msg: &str| InputError::new(path, msg.to_string()).field_in(text, field)
}

/// Checks an online-only file: its dedicated cluster, then its one job.
fn validate(path: &Path, text: &str, f: &OnlineFile) -> Result<(), InputError> {
    let err = field_error(path, text);
    if f.kind != "online" {
        return Err(err("kind", "must be \"online\""));
    }
    use dlsim_traces::limits::*;
    let limited = |field: &str, r: Result<(), String>| r.map_err(|m| err(field, &m));
    let c = &f.cluster;
    for (name, v, hi) in [
        ("cluster.gpu_nodes", c.gpu_nodes, MAX_NODES),
        ("cluster.gpus_per_node", c.gpus_per_node, MAX_GPUS.into()),
        ("cluster.cpu_nodes", c.cpu_nodes, MAX_NODES),
        (
            "cluster.cores_per_cpu_node",
            c.cores_per_cpu_node,
            MAX_CORES as u64,
        ),
    ] {
        if v == 0 {
            return Err(err(name, "must be at least 1"));
        }
        limited(name, at_most(v.into(), hi))?;
    }
    let j = &f.job;
    if j.ps_cores == 0 || j.ps_cores > f.cluster.cores_per_cpu_node {
        return Err(err(
            "job.ps_cores",
            "must be in [1, cluster.cores_per_cpu_node]",
        ));
    }
    if !(j.wp_ratio.is_finite() && j.wp_ratio > 0.0) {
        return Err(err("job.wp_ratio", "must be > 0"));
    }
    // Cross-field: the PS pods of at least one worker must fit the CPU nodes, and the
    // initial deployment must fit the cluster (one GPU per worker, its PS pods on the
    // CPU nodes): a larger one ran more workers than the cluster holds (issue #21).
    let most = max_workers(f);
    if most == 0 {
        return Err(err(
            "job.wp_ratio",
            &format!(
                "with {} CPU nodes of {} cores and PS pods of {} cores, wp_ratio {} leaves room for no worker",
                f.cluster.cpu_nodes, f.cluster.cores_per_cpu_node, j.ps_cores, j.wp_ratio
            ),
        ));
    }
    if j.initial_workers == 0 || j.initial_workers > most {
        return Err(err(
            "job.initial_workers",
            &format!(
                "must be in [1, {most}], the workers the cluster holds (its GPUs, and room for their PS pods), got {}",
                j.initial_workers
            ),
        ));
    }
    validate_job_file(&f.job_file(), "", &err)
}

/// Checks one online job; `prefix` locates it in the file (`online[0].` or nothing).
pub fn validate_job_file(
    f: &OnlineJobFile,
    prefix: &str,
    err: &dyn Fn(&str, &str) -> InputError,
) -> Result<(), InputError> {
    let err = |field: &str, msg: &str| err(&format!("{prefix}{field}"), msg);
    let pos = |x: f64| x.is_finite() && x > 0.0;
    let nonneg = |x: f64| x.is_finite() && x >= 0.0;
    if !(pos(f.days) && f.days <= 366.0) {
        return Err(err("days", "must be in (0, 366]"));
    }
    if f.step_s == 0 || !60u64.is_multiple_of(f.step_s) {
        return Err(err("step_s", "must divide 60 (e.g. 5, 15, 30, 60)"));
    }
    if !pos(f.slo_lag_s) {
        return Err(err("slo_lag_s", "must be > 0"));
    }
    use dlsim_traces::limits::*;
    let limited = |field: &str, r: Result<(), String>| r.map_err(|m| err(field, &m));
    limited("slo_lag_s", in_range(f.slo_lag_s, 0.0, MAX_TIME_S))?;
    limited("submit_s", at_most(f.submit_s, MAX_TIME_S as u64))?;
    validate_job(&f.job, &err)?;
    let w = &f.worker;
    if !(pos(w.cores) && nonneg(w.mem_gb)) {
        return Err(err(
            "worker.cores",
            "worker cores must be > 0 and mem_gb >= 0",
        ));
    }
    limited("worker.cores", in_range(w.cores, 0.0, MAX_CORES))?;
    limited("worker.mem_gb", in_range(w.mem_gb, 0.0, MAX_NODE_MEM_GB))?;
    limited("worker.gpus", at_most(w.gpus.into(), MAX_GPUS.into()))?;
    let most = f.max_workers();
    limited(
        "max_workers",
        at_most(most.into(), MAX_PODS_PER_ROLE.into()),
    )?;
    if most == 0 {
        return Err(err("max_workers", "must be at least 1"));
    }
    if f.job.initial_workers == 0 || f.job.initial_workers > most {
        return Err(err(
            "job.initial_workers",
            &format!(
                "must be in [1, {most}] (max_workers), got {}",
                f.job.initial_workers
            ),
        ));
    }
    validate_traffic(&f.traffic, &err)?;
    let r = &f.rescale;
    for (name, v) in [
        ("rescale.container_start_s", r.container_start_s),
        ("rescale.image_pull_s", r.image_pull_s),
        ("rescale.model_load_s", r.model_load_s),
        ("rescale.stream_rebuild_s", r.stream_rebuild_s),
        (
            "observation.metric_noise_sigma",
            f.observation.metric_noise_sigma,
        ),
        (
            "observation.profile_noise_sigma",
            f.observation.profile_noise_sigma,
        ),
    ] {
        if !nonneg(v) {
            return Err(err(name, "must be a number >= 0"));
        }
        // A rescale's cost sets how far ahead policies forecast and plan, minute by
        // minute: a day per step bounds that work (and no real step takes longer).
        let hi = if name.starts_with("rescale.") {
            86_400.0
        } else {
            MAX_SIGMA
        };
        limited(name, in_range(v, 0.0, hi))?;
    }
    let w = f.observation.metric_window_s;
    limited(
        "observation.metric_window_s",
        in_range(w as f64, 0.0, MAX_TIME_S),
    )?;
    if w == 0 || !w.is_multiple_of(f.step_s) {
        return Err(err(
            "observation.metric_window_s",
            "must be a positive multiple of step_s",
        ));
    }
    Ok(())
}

fn validate_job(j: &JobSpec, err: &dyn Fn(&str, &str) -> InputError) -> Result<(), InputError> {
    let want = match j.mode {
        TrainMode::Sync => 7,
        TrainMode::Async => 3,
    };
    if j.theta.len() != want {
        return Err(err(
            "job.theta",
            &format!(
                "needs {want} values for mode {:?} (Kale Eq. 4 / Eq. 6)",
                j.mode
            ),
        ));
    }
    if j.theta.iter().any(|t| !(t.is_finite() && *t >= 0.0)) || j.theta.iter().all(|t| *t == 0.0) {
        return Err(err("job.theta", "values must be >= 0 and not all zero"));
    }
    use dlsim_traces::limits::*;
    let limited = |field: &str, r: Result<(), String>| r.map_err(|m| err(field, &m));
    if !(j.wp_ratio.is_finite() && j.wp_ratio > 0.0) {
        return Err(err("job.wp_ratio", "must be > 0"));
    }
    limited("job.wp_ratio", in_range(j.wp_ratio, 0.0, 1e6))?;
    for t in &j.theta {
        limited("job.theta", in_range(*t, 0.0, MAX_COEFFICIENT))?;
    }
    limited(
        "job.profile_workers",
        at_most(j.profile_workers.len() as u64, 1_000),
    )?;
    for w in &j.profile_workers {
        limited(
            "job.profile_workers",
            at_most((*w).into(), MAX_PODS_PER_ROLE.into()),
        )?;
    }
    limited(
        "job.profile_repeats",
        at_most(j.profile_repeats.into(), 1_000),
    )?;
    if !(j.truth_sigma.is_finite() && (0.0..=1.0).contains(&j.truth_sigma)) {
        return Err(err("job.truth_sigma", "must be in [0, 1]"));
    }
    if j.profile_workers.len() < 4 || j.profile_workers.contains(&0) || j.profile_repeats == 0 {
        return Err(err(
            "job.profile_workers",
            "needs at least 4 worker counts >= 1 (and profile_repeats >= 1) to fit the model",
        ));
    }
    Ok(())
}

fn validate_traffic(
    t: &TrafficSpec,
    err: &dyn Fn(&str, &str) -> InputError,
) -> Result<(), InputError> {
    use dlsim_traces::limits::*;
    let limited = |field: &str, r: Result<(), String>| r.map_err(|m| err(field, &m));
    let pos = |x: f64| x.is_finite() && x > 0.0;
    if !pos(t.peak_sps) {
        return Err(err("traffic.peak_sps", "must be > 0"));
    }
    limited("traffic.peak_sps", in_range(t.peak_sps, 0.0, MAX_RATE_SPS))?;
    limited(
        "traffic.peak_to_trough",
        in_range(t.peak_to_trough, 1.0, 1e6),
    )?;
    limited("traffic.period_s", in_range(t.period_s, 60.0, MAX_TIME_S))?;
    limited(
        "traffic.weekend_factor",
        in_range(t.weekend_factor, 0.0, 1e6),
    )?;
    // At most one burst a minute: bursts are drawn minute by minute.
    limited(
        "traffic.bursts_per_day",
        in_range(t.bursts_per_day, 0.0, 1440.0),
    )?;
    limited(
        "traffic.burst_minutes",
        in_range(t.burst_minutes[1], 0.0, 1440.0),
    )?;
    limited("traffic.burst_gain", in_range(t.burst_gain[1], 0.0, 1e6))?;
    limited("traffic.sample_bytes", in_range(t.sample_bytes, 0.0, 1e9))?;
    if !(t.peak_to_trough.is_finite() && t.peak_to_trough >= 1.0) {
        return Err(err("traffic.peak_to_trough", "must be >= 1"));
    }
    if !pos(t.period_s) || t.period_s < 60.0 {
        return Err(err("traffic.period_s", "must be at least 60 s"));
    }
    if !(t.trough_hour.is_finite() && (0.0..24.0).contains(&t.trough_hour)) {
        return Err(err("traffic.trough_hour", "must be in [0, 24)"));
    }
    if !(t.weekend_factor.is_finite() && t.weekend_factor > 0.0) {
        return Err(err("traffic.weekend_factor", "must be > 0"));
    }
    if !(t.noise_sigma.is_finite() && (0.0..1.0).contains(&t.noise_sigma)) {
        return Err(err("traffic.noise_sigma", "must be in [0, 1)"));
    }
    if !(t.bursts_per_day.is_finite() && t.bursts_per_day >= 0.0) {
        return Err(err("traffic.bursts_per_day", "must be >= 0"));
    }
    let ordered = |r: [f64; 2]| r[0].is_finite() && r[1].is_finite() && 0.0 <= r[0] && r[0] <= r[1];
    if !ordered(t.burst_minutes) || t.burst_minutes[1] <= 0.0 {
        return Err(err(
            "traffic.burst_minutes",
            "must be [lo, hi] with 0 <= lo <= hi, hi > 0",
        ));
    }
    if !ordered(t.burst_gain) {
        return Err(err(
            "traffic.burst_gain",
            "must be [lo, hi] with 0 <= lo <= hi",
        ));
    }
    if t.partitions == 0 || t.partitions > 4096 {
        return Err(err("traffic.partitions", "must be in [1, 4096]"));
    }
    if !(t.partition_skew_sigma.is_finite() && (0.0..=3.0).contains(&t.partition_skew_sigma)) {
        return Err(err("traffic.partition_skew_sigma", "must be in [0, 3]"));
    }
    if !pos(t.sample_bytes) {
        return Err(err("traffic.sample_bytes", "must be > 0"));
    }
    if t.history_days > 28 {
        return Err(err("traffic.history_days", "must be in [0, 28]"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join("dlsim-online-scenario-tests");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn minimal_file_gets_defaults() {
        let p = write(
            "min.json",
            r#"{ "kind": "online", "name": "t", "policy": "hpa" }"#,
        );
        let s = crate::Scenario::load(&p).unwrap();
        let job = &s.online[0].file;
        assert_eq!(job.max_workers(), 32);
        assert_eq!(job.rescale.total_s(), 540.0);
        // The dedicated pool: 4 GPU nodes of 8 GPUs, 8 CPU nodes; no batch job.
        assert_eq!(s.nodes.len(), 12);
        assert_eq!(s.job_count(), 0);
        assert_eq!(s.file.horizon_s, Some(7 * 86_400));
    }

    #[test]
    fn errors_name_line_and_field() {
        let p = write(
            "bad.json",
            "{\n \"kind\": \"online\",\n \"name\": \"t\",\n \"policy\": \"hpa\",\n \"step_s\": 7\n}",
        );
        let e = crate::Scenario::load(&p).unwrap_err().to_string();
        assert!(e.contains(":5: field `step_s`"), "{e}");
        let p = write(
            "typo.json",
            "{\n \"kind\": \"online\",\n \"name\": \"t\",\n \"policy\": \"hpa\",\n \"traffic\": { \"peak\": 3 }\n}",
        );
        let e = crate::Scenario::load(&p).unwrap_err().to_string();
        assert!(e.contains(":5") && e.contains("traffic"), "{e}");
    }
}
