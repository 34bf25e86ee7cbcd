//! Scenario files: cluster + workload + policy + knobs, loaded and validated up front.
//!
//! Loading is the fallible layer: every problem becomes an [`InputError`] naming the file,
//! line and field. Once a [`Scenario`] exists the run itself cannot fail on bad input.

use crate::cluster::{Node, Placement};
use crate::perf::ThroughputParams;
use crate::Resources;
use dlsim_traces::{generate, read_trace, GeneratorConfig, InputError, JobSpec, ModelKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The scenario file as written by a user. Paths are relative to the scenario's folder.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    #[serde(default)]
    pub name: String,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// A native trace file (`dlsim trace gen` or `dlsim trace import` output).
    #[serde(default)]
    pub trace: Option<PathBuf>,
    /// Or: generate the workload in memory with these generator settings.
    #[serde(default)]
    pub generate: Option<GeneratorConfig>,
    pub cluster: ClusterSpec,
    #[serde(default = "default_policy")]
    pub policy: String,
    #[serde(default)]
    pub pods: PodSettings,
    #[serde(default)]
    pub observation: ObservationSettings,
    #[serde(default)]
    pub truth: TruthSettings,
    #[serde(default)]
    pub faults: crate::faults::FaultConfig,
    #[serde(default)]
    pub recovery: crate::faults::RecoveryConfig,
    #[serde(default)]
    pub elasticity: crate::faults::ElasticityConfig,
    /// Sampling interval of `timeline.csv` and of the profiles policies observe.
    #[serde(default = "default_timeline_s")]
    pub timeline_interval_s: u64,
    /// Stop the run at this time; jobs not finished by then count as unfinished.
    #[serde(default)]
    pub horizon_s: Option<u64>,
    /// Online (streaming) jobs, running from time 0 on the same cluster (`crate::online`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub online: Vec<crate::online::OnlineJobFile>,
    /// The share of the trace's jobs the policy under test manages; the others run as
    /// their users configured them, as under `static` (launched with their request, static
    /// data sharding, the scenario's OOM relaunch rule, the trace's recorded scale), and
    /// the policy never sees them: no view, no change, no end, and an action on one is
    /// rejected. They share the cluster, so the policy's free room counts their pods.
    /// Which jobs: one keyed draw per job id (stream `unmanaged`), so every policy and
    /// every arm of a comparison leaves the same jobs alone. Default 1 (every job). A
    /// production cluster is rarely migrated whole: DLRover-RM Fig. 14's caption puts the
    /// jobs that "cannot be migrated due to business reasons" at 5% of its cluster.
    #[serde(
        default = "default_managed_share",
        skip_serializing_if = "is_every_job"
    )]
    pub managed_share: f64,
}

fn default_managed_share() -> f64 {
    1.0
}
fn is_every_job(share: &f64) -> bool {
    *share == 1.0
}

fn default_seed() -> u64 {
    1
}
fn default_policy() -> String {
    "static".into()
}
fn default_timeline_s() -> u64 {
    300
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    #[serde(default)]
    pub groups: Vec<NodeGroup>,
    /// A CSV node list with header `name,cores,mem_gb,gpus,gpu_model`.
    #[serde(default)]
    pub node_list: Option<PathBuf>,
    #[serde(default)]
    pub placement: Placement,
}

/// "20 x 32-core 192 GB" as data.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeGroup {
    pub count: u32,
    pub cores: f64,
    pub mem_gb: f64,
    #[serde(default)]
    pub gpus: u32,
    #[serde(default)]
    pub gpu_model: String,
    #[serde(default)]
    pub name: String,
}

/// Pod start-up latency: `start_base_s + start_per_core_s * cores`. DLRover Fig. 3 shows
/// pending time growing with requested CPU; the slope and base are assumptions sized so a
/// 16-core pod takes ~1.5 min and a 32-core pod ~2.5 min (DLRover-RM: 5-10 min when the
/// image and data must be fetched as well, which the policy-level restart costs add).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PodSettings {
    pub start_base_s: f64,
    pub start_per_core_s: f64,
}

impl Default for PodSettings {
    fn default() -> Self {
        PodSettings {
            start_base_s: 20.0,
            start_per_core_s: 4.0,
        }
    }
}

/// What policies observe: noisy samples of the truth.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ObservationSettings {
    /// Coefficient of variation of multiplicative noise on observed throughput and usage.
    pub noise_cv: f64,
    /// Profile samples kept per job.
    pub history_len: usize,
    /// How long, in seconds, a hot PS or a straggling worker must last without a break to
    /// count as an incident of the job (`jobs.csv`'s `seen_hot_ps`, `seen_straggler`;
    /// DLRover-RM Table 4's rates). Default 900 s, `job::INCIDENT_HOLD`: the stock
    /// Kubernetes alerting rules' `for:`; the papers state no window.
    #[serde(skip_serializing_if = "is_default_hold")]
    pub incident_hold_s: f64,
    /// Whether a pod's request counts as allocated while its container starts (placed on a
    /// node, pulling its image and initialising: `pods.start_base_s` plus
    /// `start_per_core_s` a core), as well as while it runs. The utilisation metrics
    /// (`summary.json`'s `pooled_*`, `jobs.csv`'s `*_util`) divide use by allocation.
    /// Default false: a pod's allocation starts when it runs, so start-up is neither use
    /// nor allocation. The papers do not say which their monitoring counted; true is the
    /// scheduler's view (the node's room is taken from placement on), which charges every
    /// pod start to utilisation, and most to the policies that start pods most often.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub count_starting_pods: bool,
}

fn is_default_hold(v: &f64) -> bool {
    *v == crate::job::INCIDENT_HOLD.as_secs_f64()
}

impl Default for ObservationSettings {
    fn default() -> Self {
        ObservationSettings {
            noise_cv: 0.05,
            history_len: 64,
            incident_hold_s: crate::job::INCIDENT_HOLD.as_secs_f64(),
            count_starting_pods: false,
        }
    }
}

/// Knobs of the hidden ground truth.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TruthSettings {
    /// Each job's alphas are the kind's, times a lognormal factor with this sigma, so no
    /// two jobs perform identically (assumption: 0.15).
    pub job_variation_sigma: f64,
    /// Network bandwidth per pod, MB/s (10 Gb/s Ethernet).
    pub bandwidth_mb_s: f64,
    /// A GPU worker computes gradients as fast as this many CPU cores (assumption).
    pub gpu_core_equiv: f64,
    /// Per-kind throughput parameters; they win over the calibration and the defaults.
    pub params: BTreeMap<ModelKind, ThroughputParams>,
    /// Where the truth of the other kinds comes from: by default the shipped kernel
    /// calibration through the unit contract (`perf::calibration`); `"builtin"` or `null`
    /// for the hand-set `perf::default_params`; or a `dlsim calibrate` file (relative to
    /// the scenario). Kinds a calibration does not cover keep the built-in defaults.
    pub calibration: CalibrationSource,
    /// Multiplies every calibrated alpha and beta after the contract (default 1: the
    /// contract already anchors the level to DLRover's published throughput).
    pub calibration_time_scale: f64,
    /// Cores a worker pod's runtime keeps busy whatever the training does (default 1.5,
    /// `perf::WORKER_RUNTIME_CORES`, from DLRover Table 1's W&D sample stage). A calibrated
    /// truth is re-anchored with it; the built-in parameters are not.
    #[serde(skip_serializing_if = "is_default_runtime")]
    pub worker_runtime_cores: f64,
    /// Threads a PS spreads one lookup request over (default 4.5, `perf::PS_LOOKUP_THREADS`,
    /// from DLRover Table 1's W&D sample stage; 1 is the paper's form). A calibrated truth
    /// is re-anchored with it; the built-in parameters are not.
    #[serde(skip_serializing_if = "is_default_lookup_threads")]
    pub ps_lookup_threads: f64,
}

fn is_default_runtime(v: &f64) -> bool {
    *v == crate::perf::WORKER_RUNTIME_CORES
}

fn is_default_lookup_threads(v: &f64) -> bool {
    *v == crate::perf::PS_LOOKUP_THREADS
}

/// The source of the calibrated truth (`truth.calibration`).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum CalibrationSource {
    /// `"builtin"` or `null`: `perf::default_params` for every kind.
    Builtin,
    /// `"shipped"` (the default): `reports/calibration/default.json`, embedded in the binary.
    #[default]
    Shipped,
    /// A calibration file, relative to the scenario's folder.
    File(PathBuf),
}

impl Serialize for CalibrationSource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            CalibrationSource::Builtin => s.serialize_str("builtin"),
            CalibrationSource::Shipped => s.serialize_str("shipped"),
            CalibrationSource::File(p) => p.serialize(s),
        }
    }
}

impl schemars::JsonSchema for CalibrationSource {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CalibrationSource".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "\"shipped\" (the embedded kernel calibration), \"builtin\" or null (hand-set defaults), or the path of a `dlsim calibrate` output",
            "type": ["string", "null"]
        })
    }
}

impl<'de> Deserialize<'de> for CalibrationSource {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<String>::deserialize(d)?.as_deref() {
            None | Some("builtin") => CalibrationSource::Builtin,
            Some("shipped") => CalibrationSource::Shipped,
            Some(path) => CalibrationSource::File(PathBuf::from(path)),
        })
    }
}

impl Default for TruthSettings {
    fn default() -> Self {
        TruthSettings {
            job_variation_sigma: 0.15,
            bandwidth_mb_s: 1_250.0,
            gpu_core_equiv: 24.0,
            params: BTreeMap::new(),
            calibration: CalibrationSource::Shipped,
            calibration_time_scale: 1.0,
            worker_runtime_cores: crate::perf::WORKER_RUNTIME_CORES,
            ps_lookup_threads: crate::perf::PS_LOOKUP_THREADS,
        }
    }
}

impl TruthSettings {
    /// The pod-level constants of this truth.
    pub fn physics(&self) -> crate::perf::Physics {
        crate::perf::Physics {
            worker_runtime_cores: self.worker_runtime_cores,
            ps_lookup_threads: self.ps_lookup_threads,
        }
    }

    /// A short digest of what this truth makes of a job: the samples/s the simulator's
    /// throughput function gives, with this truth's parameters, bandwidth and GPU core
    /// equivalent, at fixed probe configurations of every model kind (PS jobs of a few
    /// shapes and a GPU worker). Importers record it in the trace header, since the steps
    /// they synthesise come from this truth (`dlsim_importers::synth`); a replay under a
    /// truth with another digest warns ([`Scenario::warnings`]). It changes with the
    /// parameters and with the throughput code itself (the pod runtime, say), not with
    /// settings the function does not read.
    pub fn fingerprint(&self) -> String {
        const PROBES: [[f64; 8]; 4] = [
            // workers, PS, worker cores, PS cores, batch, dense MB, emb dim, GPUs
            [1.0, 1.0, 32.0, 16.0, 512.0, 20.0, 16.0, 0.0],
            [24.0, 8.0, 3.0, 16.0, 512.0, 20.0, 16.0, 0.0],
            [8.0, 2.0, 20.0, 16.0, 1024.0, 40.0, 32.0, 0.0],
            [4.0, 1.0, 8.0, 8.0, 256.0, 10.0, 8.0, 1.0],
        ];
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for kind in ModelKind::ALL {
            let params = self.params_for(kind);
            for [w, p, lw, lp, m, mb, d, gpu] in PROBES {
                let x = crate::perf::PerfInputs {
                    workers: w,
                    ps: p,
                    worker_cores: lw + gpu * self.gpu_core_equiv,
                    ps_cores: lp,
                    batch: m,
                    dense_mb: mb,
                    bandwidth_mb_s: self.bandwidth_mb_s,
                    emb_dim: d,
                    physics: self.physics(),
                };
                for b in crate::perf::throughput(&params, &x).to_bits().to_le_bytes() {
                    h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                }
            }
        }
        format!("{h:016x}")
    }

    /// The truth of `kind`: explicit `params`, else the calibration's (a file's kinds were
    /// merged into `params` by [`Scenario::load`]), else the built-in defaults.
    pub fn params_for(&self, kind: ModelKind) -> ThroughputParams {
        if let Some(p) = self.params.get(&kind) {
            return *p;
        }
        let physics = self.physics();
        let shipped = match self.calibration {
            CalibrationSource::Shipped if physics == crate::perf::Physics::default() => {
                crate::perf::calibration::shipped_truth()
                    .get(&kind)
                    .copied()
            }
            // Checked when the scenario loaded ([`Scenario::load`]).
            CalibrationSource::Shipped => crate::perf::calibration::shipped_truth_with(physics)
                .expect("the pod constants were checked against the contract at load")
                .get(&kind)
                .copied(),
            CalibrationSource::Builtin | CalibrationSource::File(_) => None,
        };
        match shipped {
            Some(p) => crate::perf::scaled(&p, self.calibration_time_scale),
            None => crate::perf::default_params(kind),
        }
    }
}

/// A validated, ready-to-run scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub path: PathBuf,
    pub file: ScenarioFile,
    pub nodes: Vec<Node>,
    /// The trace, shared with the runs of it (a run builds each job when it arrives).
    pub jobs: std::sync::Arc<Vec<JobSpec>>,
    /// When set, the trace is not held in memory (`jobs` is empty): a run reads it again,
    /// one record at a time, as jobs arrive ([`Scenario::load_streaming`]).
    pub stream: Option<TraceStream>,
    /// Keep ended jobs and their pods in the world after they end (tests inspect them).
    /// Off, a run releases each job as it ends and its memory follows the live jobs: what
    /// `dlsim replay` and `dlsim sweep` do.
    pub keep_ended: bool,
    /// Record what policies observe into `observations.csv` (a run option, not a file
    /// field: `dlsim replay --trace-observations`).
    pub trace_observations: bool,
    /// The online jobs, validated, with the rate series they follow.
    pub online: Vec<crate::online::OnlineInput>,
    /// What the scenario loads but a user should hear about, one line each (the CLI prints
    /// them on stderr): a trace imported under another ground truth (`stale_import`).
    pub warnings: Vec<String>,
}

/// A trace file a run reads as it goes: validated whole when the scenario loaded.
#[derive(Clone, Debug)]
pub struct TraceStream {
    pub path: PathBuf,
    pub jobs: usize,
}

impl Scenario {
    /// Reads, parses and validates a scenario and everything it refers to.
    pub fn load(path: &Path) -> Result<Scenario, InputError> {
        let text = dlsim_fsio::read_to_string_limited(path, dlsim_fsio::MAX_INPUT_BYTES)
            .map_err(|e| InputError::new(path, format!("cannot read scenario: {e}")))?;
        Scenario::from_text(path, &text)
    }

    /// [`Scenario::load`], but a trace file is validated record by record (every check
    /// of `load`, each error naming its line) and not kept: the run streams it again,
    /// so memory holds the jobs alive at once, not the trace. A generated workload is
    /// held as with `load`.
    pub fn load_streaming(path: &Path) -> Result<Scenario, InputError> {
        let text = dlsim_fsio::read_to_string_limited(path, dlsim_fsio::MAX_INPUT_BYTES)
            .map_err(|e| InputError::new(path, format!("cannot read scenario: {e}")))?;
        Scenario::parse(path, &text, true)
    }

    /// The number of jobs in the workload.
    pub fn job_count(&self) -> usize {
        self.stream.as_ref().map_or(self.jobs.len(), |s| s.jobs)
    }

    /// Parses and validates scenario `text` as if read from `path` (relative paths inside
    /// resolve against its folder). Sweeps use it to run a scenario with overridden keys.
    pub fn from_text(path: &Path, text: &str) -> Result<Scenario, InputError> {
        Scenario::parse(path, text, false)
    }

    fn parse(path: &Path, text: &str, stream: bool) -> Result<Scenario, InputError> {
        if crate::online::scenario::is_online_text(text) {
            // An online-only file (`"kind": "online"`): validated as written, then loaded
            // as the scenario it stands for.
            let converted = crate::online::scenario::legacy_scenario_text(path, text)?;
            return Scenario::parse_file(path, &converted, stream);
        }
        Scenario::parse_file(path, text, stream)
    }

    fn parse_file(path: &Path, text: &str, stream: bool) -> Result<Scenario, InputError> {
        let file: ScenarioFile = dlsim_traces::error::parse_json_document(path, text, 0)?;
        let base = path.parent().unwrap_or(Path::new("."));
        let at = |key: &str, msg: String| InputError::new(path, msg).field_in(text, key);
        if file.timeline_interval_s == 0 {
            return Err(at("timeline_interval_s", "must be > 0".into()));
        }
        if !(0.0..=1.0).contains(&file.managed_share) {
            return Err(at(
                "managed_share",
                format!("must be in [0, 1], got {}", file.managed_share),
            ));
        }
        if !(file.observation.noise_cv >= 0.0 && file.observation.noise_cv < 1.0) {
            return Err(at("observation.noise_cv", "must be in [0, 1)".into()));
        }
        if file.pods.start_base_s < 0.0 || file.pods.start_per_core_s < 0.0 {
            return Err(at(
                "pods.start_base_s",
                "start latencies must be >= 0".into(),
            ));
        }
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !positive(file.truth.bandwidth_mb_s) || !positive(file.truth.gpu_core_equiv) {
            return Err(at(
                "truth.bandwidth_mb_s",
                "bandwidth and gpu_core_equiv must be > 0".into(),
            ));
        }
        for check in [
            file.faults.validate(),
            file.recovery.validate(),
            file.elasticity.validate(),
        ] {
            if let Err((field, msg)) = check {
                return Err(at(field, msg));
            }
        }
        if let Err((field, msg)) = crate::settings::check(&file) {
            return Err(at(&field, msg));
        }
        let mut file = file;
        let scale = file.truth.calibration_time_scale;
        if !(scale.is_finite() && scale > 0.0) {
            return Err(at("truth.calibration_time_scale", "must be > 0".into()));
        }
        let physics = file.truth.physics();
        if file.truth.calibration == CalibrationSource::Shipped
            && physics != crate::perf::Physics::default()
        {
            if let Err(msg) = crate::perf::calibration::shipped_truth_with(physics) {
                let field = if physics.worker_runtime_cores != crate::perf::WORKER_RUNTIME_CORES {
                    "truth.worker_runtime_cores"
                } else {
                    "truth.ps_lookup_threads"
                };
                return Err(at(
                    field,
                    format!("the shipped calibration cannot be anchored with it: {msg}"),
                ));
            }
        }
        if let CalibrationSource::File(cal) = &file.truth.calibration {
            for (kind, params) in load_calibrated_truth(&base.join(cal), physics)? {
                file.truth
                    .params
                    .entry(kind)
                    .or_insert(crate::perf::scaled(&params, scale));
            }
        }
        let nodes = load_nodes(path, text, base, &file.cluster)?;
        let mut online = load_online(path, text, base, &file.online, &nodes)?;
        let cap = crate::settings::time_cap_s(file.timeline_interval_s);
        let mut warnings = Vec::new();
        let (jobs, trace_path, lines) = match (&file.trace, &file.generate) {
            (Some(_), Some(_)) => {
                return Err(at(
                    "trace",
                    "give either `trace` or `generate`, not both".into(),
                ))
            }
            (None, None) if online.is_empty() => {
                return Err(at(
                    "trace",
                    "missing workload: give `trace` (a file), `generate` or `online` jobs".into(),
                ))
            }
            (None, None) => (Vec::new(), path.to_path_buf(), Vec::new()),
            (Some(t), _) if missing_file(&base.join(t)).is_some() => {
                let why = missing_file(&base.join(t)).unwrap_or_default();
                return Err(at("trace", why));
            }
            (Some(t), None) if stream => {
                let tp = base.join(t);
                let mut count = 0;
                let mut reader = dlsim_traces::TraceReader::open(&tp)?;
                for record in &mut reader {
                    let (line, job) = record?;
                    check_jobs_fit(&nodes, std::slice::from_ref(&job), &tp, &[line], cap)?;
                    check_online_ids(&online, std::slice::from_ref(&job), &tp, &[line])?;
                    count += 1;
                }
                trace_online(&tp, &reader.online, &nodes, &mut online)?;
                let warnings = stale_import(&tp, &reader.header, &file.truth);
                return Ok(Scenario {
                    path: path.to_path_buf(),
                    file,
                    nodes,
                    jobs: std::sync::Arc::new(Vec::new()),
                    stream: Some(TraceStream {
                        path: tp,
                        jobs: count,
                    }),
                    keep_ended: true,
                    trace_observations: false,
                    online,
                    warnings,
                });
            }
            (Some(t), None) => {
                let tp = base.join(t);
                let trace = read_trace(&tp)?;
                trace_online(&tp, &trace.online, &nodes, &mut online)?;
                warnings = stale_import(&tp, &trace.header, &file.truth);
                (trace.jobs, tp, trace.lines)
            }
            (None, Some(g)) => {
                let jobs = generate(g, file.seed);
                let lines = vec![generate_line(text); jobs.len()];
                (jobs, path.to_path_buf(), lines)
            }
        };
        check_jobs_fit(&nodes, &jobs, &trace_path, &lines, cap)?;
        check_online_ids(&online, &jobs, &trace_path, &lines)?;
        Ok(Scenario {
            path: path.to_path_buf(),
            file,
            nodes,
            jobs: std::sync::Arc::new(jobs),
            stream: None,
            keep_ended: true,
            trace_observations: false,
            online,
            warnings,
        })
    }
}

/// The warning for a trace whose header records the truth its steps were synthesised
/// under (`source.truth`, written by `dlsim trace import`) when this scenario's truth has
/// another [`TruthSettings::fingerprint`]: its jobs no longer last their recorded
/// durations under `static`. Nothing for a trace without the record (generated, written
/// by hand, or imported before it existed).
fn stale_import(
    trace: &Path,
    header: &dlsim_traces::TraceHeader,
    truth: &TruthSettings,
) -> Vec<String> {
    let Some(recorded) = header.source.get("truth").and_then(|v| v.as_str()) else {
        return Vec::new();
    };
    let now = truth.fingerprint();
    if recorded == now {
        return Vec::new();
    }
    vec![format!(
        "{}: its steps were synthesised at import under another ground truth (truth {recorded}, \
         this replay's {now}), so its jobs no longer last their recorded durations; import \
         the source again with this build (or keep the old truth in the scenario)",
        trace.display()
    )]
}

/// Refuses a trace job whose id an online job has (`jobs.csv` holds both, by id).
fn check_online_ids(
    online: &[crate::online::OnlineInput],
    jobs: &[JobSpec],
    file: &Path,
    lines: &[usize],
) -> Result<(), InputError> {
    for (job, &line) in jobs.iter().zip(lines) {
        if let Some(o) = online.iter().find(|o| o.id == job.id) {
            return Err(InputError::new(
                file,
                format!(
                    "job id {} is also online job `{}`'s id (give the online job another `id`)",
                    job.id, o.file.name
                ),
            )
            .at_line(line)
            .field("id"));
        }
    }
    Ok(())
}

/// Validates the scenario's online jobs and reads the rate series they follow.
fn load_online(
    path: &Path,
    text: &str,
    base: &Path,
    jobs: &[crate::online::OnlineJobFile],
    nodes: &[Node],
) -> Result<Vec<crate::online::OnlineInput>, InputError> {
    let err = crate::online::scenario::field_error(path, text);
    let mut out = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.iter().enumerate() {
        let input = online_input(
            job,
            i as u64,
            &format!("online[{i}]."),
            &err,
            base,
            nodes,
            &out,
        )?;
        out.push(input);
    }
    Ok(out)
}

/// Adds a trace's online-job records (`"kind": "online"`, each with its `id` and
/// `submit_s`; [`dlsim_traces::Trace::online`]) to `online`, each validated as a
/// scenario's online job, errors naming the trace's file, line and field.
fn trace_online(
    trace: &Path,
    records: &[(usize, serde_json::Value)],
    nodes: &[Node],
    online: &mut Vec<crate::online::OnlineInput>,
) -> Result<(), InputError> {
    let base = trace.parent().unwrap_or(Path::new("."));
    for (line, record) in records {
        let mut record = record.clone();
        if let Some(map) = record.as_object_mut() {
            map.remove("kind");
        }
        let text = serde_json::to_string(&record).expect("a JSON value serialises");
        let job: crate::online::OnlineJobFile =
            dlsim_traces::error::parse_json_document(trace, &text, line - 1)?;
        let err = |field: &str, msg: &str| {
            InputError::new(trace, msg.to_string())
                .at_line(*line)
                .field(field.to_string())
        };
        let id = job
            .id
            .expect("the trace reader requires an online record's id");
        let input = online_input(&job, id, "", &err, base, nodes, online)?;
        online.push(input);
    }
    Ok(())
}

/// One online job, checked: its fields (`err` names them, `prefix` locating the job), a
/// name and an id no job in `before` has (`default_id` when it gives none), a worker pod
/// that fits some node; and the rate series it follows, read relative to `base`.
fn online_input(
    job: &crate::online::OnlineJobFile,
    default_id: u64,
    prefix: &str,
    err: &dyn Fn(&str, &str) -> InputError,
    base: &Path,
    nodes: &[Node],
    before: &[crate::online::OnlineInput],
) -> Result<crate::online::OnlineInput, InputError> {
    crate::online::scenario::validate_job_file(job, prefix, err)?;
    let field = format!("{prefix}name");
    if job.name.is_empty() || job.name.contains([',', '"', '\n', '\r']) {
        return Err(err(
            &field,
            "must be a non-empty name without commas, quotes or line breaks",
        ));
    }
    if before.iter().any(|o| o.file.name == job.name) {
        return Err(err(
            &field,
            &format!("`{}` names two online jobs", job.name),
        ));
    }
    let id = job.id.unwrap_or(default_id);
    if before.iter().any(|o| o.id == id) {
        return Err(err(
            &format!("{prefix}id"),
            &format!("id {id} names two online jobs"),
        ));
    }
    let req = job.worker.request();
    if !nodes.iter().any(|n| req.fits_in(&n.capacity)) {
        return Err(err(
            &format!("{prefix}worker"),
            &format!("a worker pod ({req:?}) fits no node of the cluster"),
        ));
    }
    let shape = match &job.traffic.file {
        Some(p) => Some(crate::online::rates::read_series(&base.join(p))?),
        None => None,
    };
    Ok(crate::online::OnlineInput {
        id,
        file: job.clone(),
        shape,
    })
}

impl Scenario {
    /// Replaces the scenario's seed (`dlsim replay --seed`). A generated workload depends
    /// on the seed, so it is generated again and checked against the cluster like one
    /// loaded from the file.
    pub fn with_seed(&mut self, seed: u64) -> Result<(), InputError> {
        if seed == self.file.seed {
            return Ok(());
        }
        self.file.seed = seed;
        if let Some(g) = &self.file.generate {
            let jobs = generate(g, seed);
            let line = dlsim_fsio::read_to_string_limited(&self.path, dlsim_fsio::MAX_INPUT_BYTES)
                .map_or(0, |text| generate_line(&text));
            let cap = crate::settings::time_cap_s(self.file.timeline_interval_s);
            check_jobs_fit(&self.nodes, &jobs, &self.path, &vec![line; jobs.len()], cap)?;
            self.jobs = std::sync::Arc::new(jobs);
        }
        Ok(())
    }
}

/// Reads the raw fitted per-kind parameters of a `dlsim calibrate` output file (the
/// kernel's scale, before the unit contract).
pub fn load_calibration(path: &Path) -> Result<BTreeMap<ModelKind, ThroughputParams>, InputError> {
    let text = read_calibration(path)?;
    Ok(crate::perf::calibration::parse(&text, path)?.kinds)
}

/// Reads a `dlsim calibrate` output file and applies the unit contract
/// (`perf::calibration`): the simulator truth of every kind it covers.
pub fn load_calibrated_truth(
    path: &Path,
    physics: crate::perf::Physics,
) -> Result<BTreeMap<ModelKind, ThroughputParams>, InputError> {
    let text = read_calibration(path)?;
    crate::perf::calibration::load_truth(&text, path, physics)
}

fn read_calibration(path: &Path) -> Result<String, InputError> {
    dlsim_fsio::read_to_string_limited(path, dlsim_fsio::MAX_INPUT_BYTES)
        .map_err(|e| InputError::new(path, format!("cannot read calibration: {e}")))
}

/// The line of a scenario's `generate` section, which a generated job's errors name.
fn generate_line(text: &str) -> usize {
    dlsim_traces::locate::locate(text, "generate").map_or(0, |p| p.line)
}

fn load_nodes(
    path: &Path,
    text: &str,
    base: &Path,
    spec: &ClusterSpec,
) -> Result<Vec<Node>, InputError> {
    use dlsim_traces::limits::{in_range, MAX_CORES, MAX_GPUS, MAX_NODES, MAX_NODE_MEM_GB};
    let total: u64 = spec.groups.iter().map(|g| u64::from(g.count)).sum();
    if total > MAX_NODES {
        return Err(InputError::new(
            path,
            format!("{total} nodes in all (the sum of `count`), over the limit of {MAX_NODES}"),
        )
        .field_in(text, "cluster.groups"));
    }
    let mut nodes = Vec::new();
    for (gi, g) in spec.groups.iter().enumerate() {
        let field = |f: &str| format!("cluster.groups[{gi}].{f}");
        let err =
            |f: &str, msg: &str| InputError::new(path, msg.to_string()).field_in(text, field(f));
        if !(g.cores.is_finite() && g.cores > 0.0) {
            return Err(err("cores", "must be a positive number of cores"));
        }
        if !(g.mem_gb.is_finite() && g.mem_gb > 0.0) {
            return Err(err("mem_gb", "must be a positive number of GB"));
        }
        if g.count == 0 {
            return Err(err("count", "must be at least 1"));
        }
        for (f, r) in [
            ("cores", in_range(g.cores, 0.0, MAX_CORES)),
            ("mem_gb", in_range(g.mem_gb, 0.0, MAX_NODE_MEM_GB)),
            ("gpus", in_range(g.gpus.into(), 0.0, MAX_GPUS.into())),
        ] {
            if let Err(m) = r {
                return Err(err(f, &m));
            }
        }
        let prefix = if g.name.is_empty() {
            format!("g{gi}")
        } else {
            g.name.clone()
        };
        for i in 0..g.count {
            nodes.push(Node::new(
                format!("{prefix}-{i}"),
                Resources::new(g.cores, (g.mem_gb * 1024.0).round() as u64, g.gpus),
                g.gpu_model.clone(),
            ));
        }
    }
    if let Some(list) = &spec.node_list {
        if let Some(why) = missing_file(&base.join(list)) {
            return Err(InputError::new(path, why).field_in(text, "cluster.node_list"));
        }
        let listed = read_node_list(&base.join(list))?;
        if nodes.len() + listed.len() > MAX_NODES as usize {
            return Err(InputError::new(
                path,
                format!(
                    "{} nodes in all, over the limit of {MAX_NODES}",
                    nodes.len() + listed.len()
                ),
            )
            .field_in(text, "cluster.node_list"));
        }
        nodes.extend(listed);
    }
    if nodes.is_empty() {
        return Err(InputError::new(
            path,
            "the cluster has no nodes: give `groups` or `node_list`",
        )
        .field_in(text, "cluster"));
    }
    Ok(nodes)
}

/// Why a file a scenario names cannot be read, when it does not exist or is a folder, so
/// the error names the scenario's field rather than only the path.
fn missing_file(p: &Path) -> Option<String> {
    if p.is_dir() {
        Some(format!("{} is a folder, not a file", p.display()))
    } else if !p.exists() {
        Some(format!("{} does not exist", p.display()))
    } else {
        None
    }
}

/// Reads `name,cores,mem_gb,gpus,gpu_model` (header required; gpus and gpu_model optional).
pub fn read_node_list(path: &Path) -> Result<Vec<Node>, InputError> {
    let text = dlsim_fsio::read_to_string_limited(path, dlsim_fsio::MAX_INPUT_BYTES)
        .map_err(|e| InputError::new(path, format!("cannot read node list: {e}")))?;
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, l)| l.trim()).unwrap_or("");
    if !header.starts_with("name,cores,mem_gb") {
        return Err(
            InputError::new(path, "expected header `name,cores,mem_gb,gpus,gpu_model`").at_line(1),
        );
    }
    let mut nodes = Vec::new();
    for (i, line) in lines {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        let num = |idx: usize, field: &str| -> Result<f64, InputError> {
            let raw = cols.get(idx).copied().unwrap_or("");
            match raw.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                _ => Err(InputError::new(
                    path,
                    format!("expected a non-negative number, got `{raw}`"),
                )
                .at_line(line_no)
                .field(field)),
            }
        };
        use dlsim_traces::limits::{in_range, MAX_CORES, MAX_GPUS, MAX_NODES, MAX_NODE_MEM_GB};
        if nodes.len() as u64 >= MAX_NODES {
            return Err(
                InputError::new(path, format!("more than {MAX_NODES} nodes, the limit"))
                    .at_line(line_no),
            );
        }
        let bounded = |idx: usize, field: &str, hi: f64| -> Result<f64, InputError> {
            let v = num(idx, field)?;
            in_range(v, 0.0, hi)
                .map_err(|m| InputError::new(path, m).at_line(line_no).field(field))?;
            Ok(v)
        };
        let cores = bounded(1, "cores", MAX_CORES)?;
        let mem_gb = bounded(2, "mem_gb", MAX_NODE_MEM_GB)?;
        if cores == 0.0 || mem_gb == 0.0 {
            return Err(InputError::new(path, "a node needs cores and memory")
                .at_line(line_no)
                .field("cores"));
        }
        let gpus = if cols.len() > 3 && !cols[3].is_empty() {
            bounded(3, "gpus", MAX_GPUS.into())? as u32
        } else {
            0
        };
        nodes.push(Node::new(
            cols[0].to_string(),
            Resources::new(cores, (mem_gb * 1024.0).round() as u64, gpus),
            cols.get(4).map(|s| s.to_string()).unwrap_or_default(),
        ));
    }
    Ok(nodes)
}

/// Refuses a policy that gives every pod of a role more cores than any of a cluster's
/// `nodes` has ([`crate::policy::Policy::pod_cores`]): every launch would be rejected and
/// the run would end with no job trained. The error names the spec key; the caller adds
/// where the spec came from. No nodes (an online scenario): nothing to check.
pub fn check_policy_pods(nodes: &[Node], policy: &dyn crate::policy::Policy) -> Result<(), String> {
    if nodes.is_empty() {
        return Ok(());
    }
    let largest = nodes
        .iter()
        .map(|n| n.capacity.cpu_cores())
        .fold(0.0, f64::max);
    match policy.pod_cores().into_iter().find(|&(_, c)| c > largest) {
        Some((key, cores)) => Err(format!(
            "{}: {key}={cores}: a pod of {cores} cores is larger than any node of the \
             cluster (largest: {largest} cores)",
            policy.spec()
        )),
        None => Ok(()),
    }
}

/// Rejects jobs whose pods could never be placed, naming the trace line and field.
/// Also refuses a job that arrives after the run's time cap (`settings::time_cap_s`).
fn check_jobs_fit(
    nodes: &[Node],
    jobs: &[JobSpec],
    file: &Path,
    lines: &[usize],
    cap_s: u64,
) -> Result<(), InputError> {
    let max = nodes.iter().fold(Resources::ZERO, |m, n| Resources {
        cpu_milli: m.cpu_milli.max(n.capacity.cpu_milli),
        mem_mb: m.mem_mb.max(n.capacity.mem_mb),
        gpu: m.gpu.max(n.capacity.gpu),
    });
    let fits = |r: &Resources| nodes.iter().any(|n| r.fits_in(&n.capacity));
    for (job, &line) in jobs.iter().zip(lines) {
        if job.submit_s >= cap_s {
            return Err(InputError::new(
                file,
                format!(
                    "job {} arrives at {} s, at or after the run limit of {cap_s} s ({} timeline intervals or {:e} s; a longer timeline_interval_s raises it)",
                    job.id,
                    job.submit_s,
                    dlsim_traces::limits::MAX_TIMELINE_SAMPLES,
                    dlsim_traces::limits::MAX_TIME_S
                ),
            )
            .at_line(line)
            .field("submit_s"));
        }
        let worker = Resources::new(job.worker_cpu, job.worker_mem_mb, job.worker_gpu);
        let ps = Resources::new(job.ps_cpu, job.ps_mem_mb, 0);
        for (role, req, prefix) in [("worker", worker, "worker"), ("PS", ps, "ps")] {
            if fits(&req) || (prefix == "ps" && job.ps == 0) {
                continue;
            }
            let field = if req.cpu_milli > max.cpu_milli {
                format!("{prefix}_cpu")
            } else if req.mem_mb > max.mem_mb {
                format!("{prefix}_mem_mb")
            } else if req.gpu > max.gpu {
                format!("{prefix}_gpu")
            } else {
                format!("{prefix}_cpu")
            };
            return Err(InputError::new(
                file,
                format!(
                    "job {}: a {role} pod ({} cores, {} MB, {} GPU) is larger than any node (largest: {} cores, {} MB, {} GPU)",
                    job.id,
                    req.cpu_cores(),
                    req.mem_mb,
                    req.gpu,
                    max.cpu_cores(),
                    max.mem_mb,
                    max.gpu
                ),
            )
            .at_line(line)
            .field(field));
        }
    }
    Ok(())
}

/// Whether a scenario file of the kind `doc` is (batch, or online with `"kind":
/// "online"`) has a top-level field named `field`: what `dlsim reproduce --set '*:KEY=V'`
/// asks before it sets a key in every experiment's scenario, so that a batch key such as
/// `elasticity.storage_mb_s` skips the online ones. Read from the files' schemas, which
/// derive from the same serde types the loaders use.
pub fn has_top_level_field(doc: &serde_json::Value, field: &str) -> bool {
    use std::collections::BTreeSet;
    use std::sync::OnceLock;
    // Each kind's field names, from its schema built once, not once per experiment.
    fn names(schema: schemars::Schema) -> BTreeSet<String> {
        schema
            .get("properties")
            .and_then(|p| p.as_object())
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }
    static BATCH: OnceLock<BTreeSet<String>> = OnceLock::new();
    static ONLINE: OnceLock<BTreeSet<String>> = OnceLock::new();
    let fields = if crate::online::scenario::is_online_value(doc) {
        ONLINE.get_or_init(|| names(schemars::schema_for!(crate::online::scenario::OnlineFile)))
    } else {
        BATCH.get_or_init(|| names(schemars::schema_for!(ScenarioFile)))
    };
    fields.contains(field)
}

/// Sets the dotted `key` (for example `faults.pod_failure_per_day`) of a JSON document to
/// `value`, creating objects on the way: how sweeps and `dlsim reproduce` apply their
/// scenario overrides before the scenario is validated.
pub fn set_dotted(root: &mut serde_json::Value, key: &str, value: serde_json::Value) {
    let mut cur = root;
    let parts: Vec<&str> = key.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = serde_json::Value::Object(Default::default());
        }
        let obj = cur.as_object_mut().expect("made an object above");
        if i + 1 == parts.len() {
            obj.insert(part.to_string(), value);
            return;
        }
        cur = obj
            .entry(part.to_string())
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
    }
}
