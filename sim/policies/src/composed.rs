//! A composed policy: a cluster-level policy deciding for batch jobs and a per-job
//! autoscaler for each online job, named together as `dlrover+kale` (or an autoscaler alone,
//! `kale`, whose batch part is `static`). Every batch decision is the batch policy's; the
//! world asks [`Policy::new_autoscaler`] once per online job.

use dlsim_engine::SimTime;
use dlsim_model::policy::{
    Autoscaler, ClusterView, JobView, OomRelaunch, Partitioning, Policy, Sharding,
};

pub struct Composed {
    batch: Box<dyn Policy>,
    /// The autoscaler's canonical spec (already built once, so building cannot fail).
    autoscaler: String,
    /// Written as the autoscaler alone: the spec keeps that form in outputs.
    bare: bool,
}

impl Composed {
    pub fn new(batch: Box<dyn Policy>, autoscaler: String, bare: bool) -> Self {
        Composed {
            batch,
            autoscaler,
            bare,
        }
    }
}

impl Policy for Composed {
    fn spec(&self) -> String {
        if self.bare {
            self.autoscaler.clone()
        } else {
            format!("{}+{}", self.batch.spec(), self.autoscaler)
        }
    }
    fn sharding(&self) -> Sharding {
        self.batch.sharding()
    }
    fn partitioning(&self) -> Partitioning {
        self.batch.partitioning()
    }
    fn see_truth(&mut self, truth: &dlsim_model::scenario::TruthSettings) {
        self.batch.see_truth(truth)
    }
    fn on_oom(&mut self, job: u64, role: dlsim_model::job::Role, mem_mb: u64) -> OomRelaunch {
        self.batch.on_oom(job, role, mem_mb)
    }
    fn follows_recorded_scale(&self) -> bool {
        self.batch.follows_recorded_scale()
    }
    fn observes_pods(&self) -> bool {
        self.batch.observes_pods()
    }
    fn tick_interval(&self) -> Option<SimTime> {
        self.batch.tick_interval()
    }
    fn on_submit(
        &mut self,
        job: &JobView<'_>,
        view: &ClusterView<'_>,
    ) -> Vec<dlsim_model::policy::Action> {
        self.batch.on_submit(job, view)
    }
    fn on_tick(&mut self, view: &ClusterView<'_>) -> Vec<dlsim_model::policy::Action> {
        self.batch.on_tick(view)
    }
    fn quiet_until(&self) -> Option<SimTime> {
        self.batch.quiet_until()
    }
    fn new_autoscaler(&self) -> Option<Box<dyn Autoscaler>> {
        Some(crate::autoscale::build(&self.autoscaler).expect("validated when composed"))
    }
}
