//! The policy interface: what a scheduler sees (observations) and what it may ask for
//! (actions). Policies return decisions as data; the world validates and applies them, so
//! a buggy policy cannot over-allocate a node or see the hidden ground truth.

use dlsim_engine::SimTime;
use dlsim_traces::{JobSpec, ModelKind};
use serde::Serialize;

use crate::Resources;

/// A job's resource configuration: pod counts and per-pod requests.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct JobConfig {
    pub workers: u32,
    pub ps: u32,
    pub worker_cpu: f64,
    pub worker_mem_mb: u64,
    pub worker_gpu: u32,
    pub ps_cpu: f64,
    pub ps_mem_mb: u64,
}

impl JobConfig {
    /// The configuration the user wrote in the trace record.
    pub fn requested(spec: &JobSpec) -> Self {
        JobConfig {
            workers: spec.workers,
            ps: spec.ps,
            worker_cpu: spec.worker_cpu,
            worker_mem_mb: spec.worker_mem_mb,
            worker_gpu: spec.worker_gpu,
            ps_cpu: spec.ps_cpu,
            ps_mem_mb: spec.ps_mem_mb,
        }
    }

    pub fn worker_request(&self) -> Resources {
        Resources::new(self.worker_cpu, self.worker_mem_mb, self.worker_gpu)
    }

    pub fn ps_request(&self) -> Resources {
        Resources::new(self.ps_cpu, self.ps_mem_mb, 0)
    }

    pub fn total(&self) -> Resources {
        self.worker_request().scaled(u64::from(self.workers))
            + self.ps_request().scaled(u64::from(self.ps))
    }
}

/// What the user declared about a job: everything in the trace record except the
/// memory-growth constants, which only the hidden truth knows.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRequest {
    pub id: u64,
    pub user: String,
    pub model: ModelKind,
    pub batch_size: u32,
    pub steps: u64,
    pub dense_mb: f64,
    pub emb_dim: u32,
    pub priority: i32,
    pub submit: SimTime,
    pub requested: JobConfig,
}

impl JobRequest {
    pub fn from_spec(spec: &JobSpec) -> Self {
        JobRequest {
            id: spec.id,
            user: spec.user.clone(),
            model: spec.model,
            batch_size: spec.batch_size,
            steps: spec.steps,
            dense_mb: spec.dense_mb,
            emb_dim: spec.emb_dim,
            priority: spec.priority,
            submit: SimTime::from_secs(spec.submit_s),
            requested: JobConfig::requested(spec),
        }
    }
}

/// Life-cycle phase of a job as its master reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobPhase {
    /// Submitted; no pod requested yet.
    Submitted,
    /// Pods requested; not all PS and at least one worker are up yet.
    Starting,
    Training,
    Completed,
    Failed,
}

/// One profiler sample, as a job master would report it (noisy).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProfileSample {
    pub time: SimTime,
    pub running_workers: u32,
    pub running_ps: u32,
    pub steps_per_s: f64,
    /// Mean CPU cores used per running worker and per PS.
    pub worker_cpu_used: f64,
    pub ps_cpu_used: f64,
    /// Memory used per worker, and by the fullest PS, in MB.
    pub worker_mem_used_mb: f64,
    pub ps_mem_used_mb_max: f64,
}

/// A policy's view of one job.
#[derive(Clone, Debug)]
pub struct JobView<'a> {
    pub request: &'a JobRequest,
    pub phase: JobPhase,
    pub config: JobConfig,
    pub running_workers: u32,
    pub running_ps: u32,
    pub pending_pods: u32,
    /// Steps completed as the job's checkpoints/metrics report them.
    pub steps_done: u64,
    pub history: &'a [ProfileSample],
    pub oom_kills: u32,
}

/// A policy's view of the cluster: aggregate capacity and free space, and active jobs.
#[derive(Clone, Debug)]
pub struct ClusterView<'a> {
    pub now: SimTime,
    pub capacity: Resources,
    pub allocated: Resources,
    /// Every node with its capacity and current allocation, as the cluster API lists them.
    pub nodes: &'a [crate::Node],
    pub jobs: Vec<JobView<'a>>,
}

/// A decision. The world checks each and ignores (and counts) the invalid ones.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Start a submitted job with this configuration.
    Launch { job: u64, config: JobConfig },
}

/// A scheduler. One implementation per file in the policies crate.
pub trait Policy {
    /// The canonical spec string, e.g. `static` or `dlrover[rho=2.5]`.
    fn spec(&self) -> String;

    /// How often `on_tick` runs; `None` for policies that only act on submission.
    fn tick_interval(&self) -> Option<SimTime> {
        None
    }

    /// Called when a job arrives. Usually returns a `Launch` for it.
    fn on_submit(&mut self, job: &JobView<'_>, view: &ClusterView<'_>) -> Vec<Action>;

    /// Called every `tick_interval`.
    fn on_tick(&mut self, _view: &ClusterView<'_>) -> Vec<Action> {
        Vec::new()
    }
}
