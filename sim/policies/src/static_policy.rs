//! `static`: every job runs with the configuration in its trace record, unchanged for its
//! whole life (or, for a job whose trace recorded scale events, the counts it recorded
//! at each time: `dlsim_model::world::recorded`). This is the papers' "w/o DLRover"
//! baseline, a user-configured TFJob.
//! `static[sharding=dynamic]` keeps the configuration but feeds data through DLRover's
//! dynamic shard queues, which isolates what dynamic sharding alone buys under faults.

use crate::spec::{PolicySpec, SpecError};
use dlsim_model::policy::{Action, ClusterView, JobView, Policy, Sharding};

pub struct Static {
    sharding: Sharding,
}

impl Static {
    pub fn from_spec(spec: &PolicySpec) -> Result<Self, SpecError> {
        spec.only(&["sharding"])?;
        let sharding = match spec.params.get("sharding").map(String::as_str) {
            None | Some("static") => Sharding::Static,
            Some("dynamic") => Sharding::Dynamic,
            Some(_) => return Err(spec.bad_value("sharding", "expected static or dynamic")),
        };
        Ok(Static { sharding })
    }
}

impl Policy for Static {
    fn spec(&self) -> String {
        match self.sharding {
            Sharding::Static => "static".into(),
            Sharding::Dynamic => "static[sharding=dynamic]".into(),
        }
    }

    fn sharding(&self) -> Sharding {
        self.sharding
    }

    /// The user's own configuration includes their recorded scaling (dlrm2025 apps).
    fn follows_recorded_scale(&self) -> bool {
        true
    }

    fn on_submit(&mut self, job: &JobView<'_>, _view: &ClusterView<'_>) -> Vec<Action> {
        vec![Action::Launch {
            job: job.request.id,
            config: job.request.requested,
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_takes_only_a_sharding_mode() {
        assert!(crate::build("static").is_ok());
        assert_eq!(
            crate::build("static[sharding=dynamic]").unwrap().sharding(),
            Sharding::Dynamic
        );
        assert!(crate::build("static[sharding=x]").is_err());
        assert!(crate::build("static[x=1]").is_err());
        assert!(matches!(
            crate::build("nope"),
            Err(SpecError::UnknownPolicy { .. })
        ));
    }
}
