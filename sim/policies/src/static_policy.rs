//! `static`: every job runs with the configuration in its trace record, unchanged for its
//! whole life. This is the papers' "w/o DLRover" baseline, a user-configured TFJob.

use crate::spec::{PolicySpec, SpecError};
use dlsim_model::policy::{Action, ClusterView, JobView, Policy};

pub struct Static;

impl Static {
    pub fn from_spec(spec: &PolicySpec) -> Result<Self, SpecError> {
        spec.only(&[])?;
        Ok(Static)
    }
}

impl Policy for Static {
    fn spec(&self) -> String {
        "static".into()
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
    fn static_takes_no_parameters() {
        assert!(crate::build("static").is_ok());
        assert!(crate::build("static[x=1]").is_err());
        assert!(matches!(
            crate::build("nope"),
            Err(SpecError::UnknownPolicy { .. })
        ));
    }
}
