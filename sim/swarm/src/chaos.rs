//! The chaos policy: launches every job as requested, then fires random elastic actions
//! at random jobs (worker scaling, rescales by either method, pod replacements), some of
//! them invalid, so the world's validation and every elastic path are exercised.

use dlsim_engine::{RngStreams, SimRng, SimTime};
use dlsim_model::policy::{
    Action, ClusterView, JobView, PodPhase, Policy, RescaleMethod, Sharding,
};
use rand::Rng;

/// Fires random elastic actions at random jobs: worker scaling, rescales by either
/// method, and pod replacements, including invalid ones the world must refuse.
pub struct Chaos {
    rng: SimRng,
    sharding: Sharding,
    interval: SimTime,
}

impl Chaos {
    pub fn new(seed: u64, sharding: Sharding) -> Self {
        let rng = RngStreams::new(seed).stream("chaos");
        // Drawn from a copy, so the action stream starts where it always did.
        let interval = SimTime::from_secs(rng.clone().gen_range(60..1_800));
        Chaos {
            rng,
            sharding,
            interval,
        }
    }
}

impl Policy for Chaos {
    fn spec(&self) -> String {
        "chaos".into()
    }
    fn sharding(&self) -> Sharding {
        self.sharding
    }
    fn observes_pods(&self) -> bool {
        true
    }
    fn tick_interval(&self) -> Option<SimTime> {
        Some(self.interval)
    }
    fn on_submit(&mut self, job: &JobView<'_>, _view: &ClusterView<'_>) -> Vec<Action> {
        vec![Action::Launch {
            job: job.request.id,
            config: job.request.requested,
        }]
    }
    fn on_tick(&mut self, view: &ClusterView<'_>) -> Vec<Action> {
        let mut actions = Vec::new();
        for job in view.jobs.iter() {
            if !self.rng.gen_bool(0.15) {
                continue;
            }
            let id = job.request.id;
            let mut config = job.config;
            match self.rng.gen_range(0..5) {
                0 => actions.push(Action::ScaleWorkers {
                    job: id,
                    workers: self.rng.gen_range(0..2 * config.workers + 2),
                }),
                1 | 2 => {
                    if self.rng.gen_bool(0.5) {
                        config.ps = self.rng.gen_range(0..config.ps + 3).max(config.ps.min(1));
                    }
                    config.ps_cpu = (config.ps_cpu * self.rng.gen_range(0.5..2.0)).max(1.0);
                    config.ps_mem_mb =
                        (config.ps_mem_mb as f64 * self.rng.gen_range(0.7..2.0)) as u64;
                    config.worker_cpu = (config.worker_cpu * self.rng.gen_range(0.5..2.0)).max(1.0);
                    let method = if self.rng.gen_bool(0.5) {
                        RescaleMethod::Migrate
                    } else {
                        RescaleMethod::StopRestart
                    };
                    actions.push(Action::Rescale {
                        job: id,
                        config,
                        method,
                    });
                }
                _ => {
                    let pods: Vec<_> = job.pods.iter().collect();
                    if pods.is_empty() {
                        continue;
                    }
                    let pod = pods[self.rng.gen_range(0..pods.len())];
                    let scale = if pod.phase == PodPhase::Pending {
                        0.5
                    } else {
                        1.5
                    };
                    actions.push(Action::ReplacePod {
                        job: id,
                        pod: pod.id,
                        cpu: (pod.request.cpu_cores() * scale).max(1.0),
                        mem_mb: pod.request.mem_mb,
                    });
                }
            }
        }
        // Now and then an action for a job that does not exist.
        if self.rng.gen_bool(0.05) {
            actions.push(Action::ScaleWorkers {
                job: u64::MAX,
                workers: 3,
            });
        }
        actions
    }
}
