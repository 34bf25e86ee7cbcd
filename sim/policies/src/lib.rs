//! Scheduling policies, one per file, built from spec strings such as `static`,
//! `dlrover[warm_start=off,rho=2.5]`, or composed with a per-job autoscaler of online jobs
//! (`autoscale/`): `dlrover+kale`.
//!
//! Policies only see `ClusterView`s (autoscalers `OnlineView`s) and return decisions; the
//! world validates and applies them. Adding a policy means one new file and one line in
//! [`build`] (an autoscaler: one line in `autoscale::build`) and its `DOC` in the registry.

pub mod autoscale;
pub mod composed;
pub mod dlrover;
pub mod dlrover_oss;
pub mod es;
pub mod nsga2;
pub mod optimus;
pub mod spec;
pub mod static_policy;
pub mod well_tuned;

pub use spec::{
    folder_name, param, render_docs, split_composed, split_list, ParamDoc, PolicyDoc, PolicySpec,
    SpecError,
};

use dlsim_model::policy::Policy;

/// Every policy name `build` accepts, for help texts and error messages.
pub const POLICY_NAMES: &[&str] = &[
    "static",
    "dlrover",
    "dlrover-oss",
    "optimus",
    "es",
    "well-tuned",
];

/// Every policy's parameters, in [`POLICY_NAMES`] order (`dlsim policies`).
pub const POLICY_DOCS: &[&PolicyDoc] = &[
    &static_policy::DOC,
    &dlrover::DOC,
    &dlrover_oss::DOC,
    &optimus::DOC,
    &es::DOC,
    &well_tuned::DOC,
];

/// Every autoscaler name (per-job policies of online jobs), for help texts and errors.
pub const AUTOSCALER_NAMES: &[&str] = autoscale::NAMES;

/// Builds a policy from its spec string: a cluster-level policy (`dlrover[rho=2.5]`), an
/// autoscaler alone (`kale`: batch jobs under `static`), or both (`dlrover+kale`).
pub fn build(spec: &str) -> Result<Box<dyn Policy>, SpecError> {
    let parts = split_composed(spec)?;
    let is_autoscaler =
        |s: &str| PolicySpec::parse(s).is_ok_and(|p| AUTOSCALER_NAMES.contains(&p.name.as_str()));
    match parts[..] {
        [one] if is_autoscaler(one) => {
            let a = autoscale::build(one)?;
            let batch = build_batch("static")?;
            Ok(Box::new(composed::Composed::new(batch, a.name(), true)))
        }
        [one] => build_batch(one),
        [batch, auto] => {
            if is_autoscaler(batch) {
                return Err(SpecError::Malformed {
                    spec: spec.to_string(),
                    why: format!(
                        "`{batch}` is an autoscaler: the cluster policy comes first ({})",
                        POLICY_NAMES.join(", ")
                    ),
                });
            }
            let named = |e: SpecError| SpecError::InComposed {
                spec: spec.to_string(),
                inner: Box::new(e),
            };
            let batch = build_batch(batch).map_err(named)?;
            let a = autoscale::build(auto).map_err(named)?;
            Ok(Box::new(composed::Composed::new(batch, a.name(), false)))
        }
        _ => unreachable!("split_composed gives one or two parts"),
    }
}

/// Builds a cluster-level policy from its spec string.
fn build_batch(spec: &str) -> Result<Box<dyn Policy>, SpecError> {
    let parsed = PolicySpec::parse(spec)?;
    match parsed.name.as_str() {
        "static" => Ok(Box::new(static_policy::Static::from_spec(&parsed)?)),
        "dlrover" => Ok(Box::new(dlrover::Dlrover::from_spec(&parsed)?)),
        "dlrover-oss" => Ok(Box::new(dlrover_oss::DlroverOss::from_spec(&parsed)?)),
        "optimus" => Ok(Box::new(optimus::Optimus::from_spec(&parsed)?)),
        "es" => Ok(Box::new(es::Es::from_spec(&parsed)?)),
        // ORACLE: sees the hidden truth (see `well_tuned`).
        "well-tuned" => Ok(Box::new(well_tuned::WellTuned::from_spec(&parsed)?)),
        other => Err(SpecError::UnknownPolicy {
            name: other.to_string(),
            known: format!(
                "{}; autoscalers: {}",
                POLICY_NAMES.join(", "),
                AUTOSCALER_NAMES.join(", ")
            ),
        }),
    }
}
