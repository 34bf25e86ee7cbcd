//! `static`: every job runs with the configuration in its trace record, unchanged for its
//! whole life (or, for a job whose trace recorded scale events, the counts it recorded
//! at each time: `dlsim_model::world::recorded`). This is the papers' "w/o DLRover"
//! baseline, a user-configured TFJob.
//! `static[sharding=dynamic]` keeps the configuration but feeds data through DLRover's
//! dynamic shard queues, which isolates what dynamic sharding alone buys under faults.
//! `static[slow=restart]` is the stop-and-restart handling of a slow pod that DLRover-RM
//! Figs. 12-13 compare against: every `interval_s` (180 s, DLRover-RM's adjustment
//! interval) it looks at each job's pods, and when one pod is saturated (CPU use at >= 90%
//! of its request) while the median pod of its role uses less than 1/1.5 of that share
//! (the hot-PS rule of DLRover's adjust stage, applied to either role), it stops the job,
//! saves a checkpoint and restarts it with the same configuration on fresh pods. Once per
//! job: a restart that did not help is not repeated.

use crate::spec::{param, PolicyDoc, PolicySpec, SpecError};
use dlsim_engine::SimTime;
use dlsim_model::job::Role;
use dlsim_model::policy::{
    Action, ClusterView, JobPhase, JobView, Policy, RescaleMethod, Sharding,
};
use std::collections::BTreeMap;

pub struct Static {
    sharding: Sharding,
    /// `slow=restart`: the handler's interval, and the jobs it watches (true once
    /// restarted).
    restart: Option<SimTime>,
    watched: BTreeMap<u64, bool>,
}

/// `static`'s parameters (`dlsim policies`).
pub const DOC: PolicyDoc = PolicyDoc {
    name: "static",
    summary: "the user's own configuration for the job's whole life (the papers' \"w/o DLRover\" baseline)",
    params: &[
        param("sharding", "static|dynamic", "static", "dynamic: feed data through DLRover's dynamic shard queues (what dynamic sharding alone buys)"),
        param("slow", "ignore|restart", "ignore", "restart: stop a job and restart it on fresh pods once one of its pods is saturated (DLRover-RM Figs. 12-13), once per job"),
        param("interval_s", "number 1..=86400", "180", "how often slow=restart looks at each job's pods (s)"),
    ],
};

/// This policy's registry entry (`crate::POLICIES`): its documentation and its builder.
pub const POLICY: crate::Registered<dyn dlsim_model::policy::Policy> = crate::Registered {
    doc: &DOC,
    build: |spec| Ok(Box::new(Static::from_spec(spec)?)),
};

impl Static {
    pub fn from_spec(spec: &PolicySpec) -> Result<Self, SpecError> {
        spec.only(&DOC.param_names())?;
        let sharding = match spec.params.get("sharding").map(String::as_str) {
            None | Some("static") => Sharding::Static,
            Some("dynamic") => Sharding::Dynamic,
            Some(_) => return Err(spec.bad_value("sharding", "expected static or dynamic")),
        };
        let interval_s = spec.f64_or("interval_s", 180.0)?;
        if !(1.0..=86_400.0).contains(&interval_s) {
            return Err(spec.bad_value("interval_s", "1 <= interval_s <= 86400"));
        }
        let restart = match spec.params.get("slow").map(String::as_str) {
            None | Some("ignore") => None,
            Some("restart") => Some(SimTime::from_secs_f64_ceil(interval_s)),
            Some(_) => return Err(spec.bad_value("slow", "expected ignore or restart")),
        };
        Ok(Static {
            sharding,
            restart,
            watched: BTreeMap::new(),
        })
    }

    /// A pod saturated at its request while its role's median pod is well below.
    fn slow_pod(job: &JobView<'_>) -> bool {
        [Role::Ps, Role::Worker].into_iter().any(|role| {
            let loads: Vec<f64> = job
                .pods
                .iter()
                .filter(|p| p.role == role)
                .filter_map(|p| p.last.map(|s| s.cpu_used / p.request.cpu_cores().max(1e-9)))
                .collect();
            crate::dlrover::post::saturated_outlier(&loads).is_some()
        })
    }
}

impl Policy for Static {
    fn spec(&self) -> String {
        let mut params = Vec::new();
        if self.sharding == Sharding::Dynamic {
            params.push("sharding=dynamic".to_string());
        }
        if let Some(i) = self.restart {
            params.push("slow=restart".into());
            if i != SimTime::from_secs(180) {
                params.push(format!("interval_s={}", i.as_secs_f64()));
            }
        }
        if params.is_empty() {
            "static".into()
        } else {
            format!("static[{}]", params.join(","))
        }
    }

    fn sharding(&self) -> Sharding {
        self.sharding
    }

    /// The user's own configuration includes their recorded scaling (dlrm2025 apps).
    fn follows_recorded_scale(&self) -> bool {
        true
    }

    fn observes_pods(&self) -> bool {
        self.restart.is_some()
    }

    fn tick_interval(&self) -> Option<SimTime> {
        self.restart
    }

    fn on_submit(&mut self, job: &JobView<'_>, _view: &ClusterView<'_>) -> Vec<Action> {
        if self.restart.is_some() {
            self.watched.insert(job.request.id, false);
        }
        vec![Action::Launch {
            job: job.request.id,
            config: job.request.requested,
        }]
    }

    fn on_tick(&mut self, view: &ClusterView<'_>) -> Vec<Action> {
        view.forget_ended(&mut self.watched);
        let mut actions = Vec::new();
        for (&id, restarted) in self.watched.iter_mut().filter(|(_, r)| !**r) {
            let Some(job) = view.jobs.get(id) else {
                continue;
            };
            if job.phase == JobPhase::Training && !job.rescaling && Self::slow_pod(&job) {
                *restarted = true;
                actions.push(Action::Rescale {
                    job: id,
                    config: job.config,
                    method: RescaleMethod::StopRestart,
                });
            }
        }
        actions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_takes_a_sharding_mode_and_a_slow_pod_handler() {
        assert!(crate::build("static").is_ok());
        assert_eq!(
            crate::build("static[sharding=dynamic]").unwrap().sharding(),
            Sharding::Dynamic
        );
        let r = crate::build("static[slow=restart]").unwrap();
        assert_eq!(r.spec(), "static[slow=restart]");
        assert!(r.observes_pods());
        assert_eq!(r.tick_interval(), Some(SimTime::from_secs(180)));
        assert!(crate::build("static").unwrap().tick_interval().is_none());
        assert!(crate::build("static[sharding=x]").is_err());
        assert!(crate::build("static[slow=x]").is_err());
        assert!(crate::build("static[x=1]").is_err());
        assert!(matches!(
            crate::build("nope"),
            Err(SpecError::UnknownPolicy { .. })
        ));
    }
}
