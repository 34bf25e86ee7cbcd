//! One job as a user submits it: the record of the native trace format.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The model families the papers evaluate. They differ in where an iteration's time goes.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// Wide & Deep: embedding lookups and parameter traffic dominate (I/O-bound).
    WideDeep,
    /// xDeepFM: the compressed interaction network dominates (compute-bound).
    Xdeepfm,
    /// Deep & Cross Network: between the two.
    Dcn,
}

impl ModelKind {
    pub const ALL: [ModelKind; 3] = [ModelKind::WideDeep, ModelKind::Xdeepfm, ModelKind::Dcn];

    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::WideDeep => "wide_deep",
            ModelKind::Xdeepfm => "xdeepfm",
            ModelKind::Dcn => "dcn",
        }
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A submitted parameter-server training job. Resource fields are the user's *request*,
/// which is what the `static` policy runs and what elastic policies start from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    pub id: u64,
    /// Submission time, seconds from the start of the trace.
    pub submit_s: u64,
    #[serde(default)]
    pub user: String,
    pub model: ModelKind,
    /// Samples per step per worker (m).
    pub batch_size: u32,
    /// Total training steps; the job completes after `steps * batch_size` samples.
    pub steps: u64,
    /// Dense (non-embedding) model size M, in MB.
    pub dense_mb: f64,
    /// Embedding dimension D.
    pub emb_dim: u32,
    /// Embedding memory present at start, in MB, summed over all PS.
    #[serde(default)]
    pub emb_mb_initial: f64,
    /// Embedding memory added per million samples seen (new feature IDs), in MB.
    pub emb_mb_per_msample: f64,
    pub workers: u32,
    /// Parameter servers; 0 for jobs without them (all-reduce or single-pod jobs).
    pub ps: u32,
    pub worker_cpu: f64,
    pub worker_mem_mb: u64,
    pub ps_cpu: f64,
    pub ps_mem_mb: u64,
    /// GPUs per worker (0 for CPU-only training).
    #[serde(default)]
    pub worker_gpu: u32,
    /// Larger runs first when pods compete for space.
    #[serde(default)]
    pub priority: i32,
    /// Names of fields that an importer or generator filled by rule rather than copying
    /// from a real source. Empty means every field is real (or the trace is synthetic).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub synthesized: Vec<String>,
    /// What an imported source recorded about the job's real run (absent for synthetic
    /// jobs). Informational: the simulator does not replay outcomes or scale events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<Observed>,
}

/// How a job ended in the source trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Completed,
    Failed,
    /// Cancelled or killed by the user or the system.
    Killed,
    /// Still running when the trace ends: the recorded duration is a lower bound.
    Censored,
    /// Never scheduled in the source.
    Pending,
    /// The source does not say.
    Unknown,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
            Outcome::Killed => "killed",
            Outcome::Censored => "censored",
            Outcome::Pending => "pending",
            Outcome::Unknown => "unknown",
        }
    }
}

/// A job's real run as an imported trace recorded it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observed {
    /// The job's name or id in the source (pod name, app, job number, source line).
    pub name: String,
    pub outcome: Outcome,
    /// Real run time, seconds (a lower bound when `outcome` is `censored`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<u64>,
    /// Real wait from submission to start, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_s: Option<u64>,
    /// Elastic changes of the pod counts over the job's life, in time order. The job's
    /// `ps`/`workers` hold the peak counts; under `static` (the user's own configuration)
    /// the world follows these changes (`dlsim_model` `world/recorded.rs`), and other
    /// policies size the job themselves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scale: Vec<ScaleEvent>,
}

/// From `t_s` (seconds from trace start) the job ran `ps` PS-like and `workers` worker pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScaleEvent {
    pub t_s: u64,
    pub ps: u32,
    pub workers: u32,
}

impl JobSpec {
    pub fn total_samples(&self) -> f64 {
        self.steps as f64 * f64::from(self.batch_size)
    }

    /// Checks value ranges, upper limits included (`crate::limits`). Returns the offending
    /// field and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        use crate::limits::*;
        let check = |field: &'static str, r: Result<(), String>| r.map_err(|m| (field, m));
        let count = |field: &'static str, v: u64, hi: u64| {
            if v == 0 {
                Err((field, "must be at least 1, got 0".to_string()))
            } else {
                check(field, at_most(v, hi))
            }
        };
        check("submit_s", in_range(self.submit_s as f64, 0.0, MAX_TIME_S))?;
        if let Some(o) = &self.observed {
            for (field, t) in [
                ("observed.duration_s", o.duration_s),
                ("observed.wait_s", o.wait_s),
            ] {
                check(field, in_range(t.unwrap_or(0) as f64, 0.0, MAX_TIME_S))?;
            }
            for s in &o.scale {
                check(
                    "observed.scale.t_s",
                    in_range(s.t_s as f64, 0.0, MAX_TIME_S),
                )?;
                check(
                    "observed.scale.ps",
                    at_most(s.ps.into(), MAX_PODS_PER_ROLE.into()),
                )?;
                check(
                    "observed.scale.workers",
                    at_most(s.workers.into(), MAX_PODS_PER_ROLE.into()),
                )?;
            }
        }
        count("batch_size", self.batch_size.into(), MAX_BATCH.into())?;
        count("steps", self.steps, MAX_STEPS)?;
        check(
            "dense_mb",
            in_range(self.dense_mb, f64::MIN_POSITIVE, MAX_MODEL_MB),
        )?;
        count("emb_dim", self.emb_dim.into(), MAX_EMB_DIM.into())?;
        check(
            "emb_mb_initial",
            in_range(self.emb_mb_initial, 0.0, MAX_MODEL_MB),
        )?;
        check(
            "emb_mb_per_msample",
            in_range(self.emb_mb_per_msample, 0.0, MAX_EMB_GROWTH_MB),
        )?;
        count("workers", self.workers.into(), MAX_PODS_PER_ROLE.into())?;
        check(
            "worker_cpu",
            in_range(self.worker_cpu, MIN_POD_CORES, MAX_CORES),
        )?;
        count("worker_mem_mb", self.worker_mem_mb, MAX_POD_MEM_MB)?;
        check(
            "worker_gpu",
            at_most(self.worker_gpu.into(), MAX_GPUS.into()),
        )?;
        check("ps", at_most(self.ps.into(), MAX_PODS_PER_ROLE.into()))?;
        // `ps = 0` is a job without parameter servers (all-reduce or single pod); its PS
        // fields are then ignored.
        if self.ps > 0 {
            check("ps_cpu", in_range(self.ps_cpu, MIN_POD_CORES, MAX_CORES))?;
            count("ps_mem_mb", self.ps_mem_mb, MAX_POD_MEM_MB)?;
        } else {
            check("ps_cpu", in_range(self.ps_cpu, 0.0, MAX_CORES))?;
            check("ps_mem_mb", at_most(self.ps_mem_mb, MAX_POD_MEM_MB))?;
        }
        Ok(())
    }
}
