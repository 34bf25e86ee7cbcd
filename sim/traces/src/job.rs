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

    /// Checks value ranges. Returns the offending field and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        fn positive(field: &'static str, v: f64) -> Result<(), (&'static str, String)> {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err((field, format!("must be a positive number, got {v}")))
            }
        }
        fn non_negative(field: &'static str, v: f64) -> Result<(), (&'static str, String)> {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err((field, format!("must be >= 0, got {v}")))
            }
        }
        positive("batch_size", f64::from(self.batch_size))?;
        positive("steps", self.steps as f64)?;
        positive("dense_mb", self.dense_mb)?;
        positive("emb_dim", f64::from(self.emb_dim))?;
        non_negative("emb_mb_initial", self.emb_mb_initial)?;
        non_negative("emb_mb_per_msample", self.emb_mb_per_msample)?;
        positive("workers", f64::from(self.workers))?;
        positive("worker_cpu", self.worker_cpu)?;
        positive("worker_mem_mb", self.worker_mem_mb as f64)?;
        // `ps = 0` is a job without parameter servers (all-reduce or single pod); its PS
        // fields are then ignored.
        if self.ps > 0 {
            positive("ps_cpu", self.ps_cpu)?;
            positive("ps_mem_mb", self.ps_mem_mb as f64)?;
        } else {
            non_negative("ps_cpu", self.ps_cpu)?;
        }
        Ok(())
    }
}
