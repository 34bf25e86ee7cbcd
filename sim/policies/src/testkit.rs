//! Fixtures shared by the policies' unit tests and their bench (`--features bench`): one
//! job as a policy sees it.

use dlsim_model::policy::{JobConfig, JobPhase, JobRequest, JobView, Sharding};

/// A Wide&Deep job of 100,000 steps (batch 512, 40 MB dense, dim 16) asking for `requested`.
pub fn request(requested: JobConfig) -> JobRequest {
    JobRequest {
        id: 1,
        user: "u".into(),
        model: dlsim_traces::ModelKind::WideDeep,
        batch_size: 512,
        steps: 100_000,
        dense_mb: 40.0,
        emb_dim: 16,
        priority: 0,
        submit: dlsim_engine::SimTime::ZERO,
        requested,
    }
}

/// The job training at its request with dynamic sharding, all pods running, 1,000 steps done.
pub fn view(request: &JobRequest) -> JobView<'_> {
    JobView {
        request,
        phase: JobPhase::Training,
        config: request.requested,
        running_workers: request.requested.workers,
        running_ps: request.requested.ps,
        pending_pods: 0,
        steps_done: 1_000,
        history: &[],
        oom_kills: 0,
        sharding: Sharding::Dynamic,
        pods: Vec::new(),
        events: &[],
        rescaling: false,
        restarts: [0, 0],
    }
}
