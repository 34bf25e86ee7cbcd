//! Scheduling policies, one per file, built from spec strings such as `static`,
//! `dlrover[warm_start=off,rho=2.5]`, or composed with a per-job autoscaler of online jobs
//! (`autoscale/`): `dlrover+kale`.
//!
//! Policies only see `ClusterView`s (autoscalers `OnlineView`s) and return decisions; the
//! world validates and applies them. Adding a policy is one new file (its `DOC` and its
//! registry entry `POLICY`) plus its name in the `registry!` line below (an autoscaler: in
//! `autoscale/mod.rs`'s).

pub use spec::{
    folder_name, param, render_docs, split_composed, split_list, ParamDoc, PolicyDoc, PolicySpec,
    SpecError,
};

use dlsim_model::policy::Policy;

/// A registry entry: a policy's documentation (name, summary, parameters) and its builder.
/// Each policy file defines its own `pub const POLICY`.
pub struct Registered<T: ?Sized + 'static> {
    pub doc: &'static PolicyDoc,
    pub build: fn(&PolicySpec) -> Result<Box<T>, SpecError>,
}

impl<T: ?Sized> Registered<T> {
    /// The entry of `spec`'s policy in `registry`, built from `spec`.
    pub fn build_from(registry: &[&Self], spec: &PolicySpec) -> Option<Result<Box<T>, SpecError>> {
        registry
            .iter()
            .find(|r| r.doc.name == spec.name)
            .map(|r| (r.build)(spec))
    }
}

/// A registry: declares each policy module and lists its `POLICY` as `$all`, with their
/// docs as `$docs` and names as `$names`, in this order (the order of `dlsim policies`,
/// `--help` and error messages). Adding a policy is its file plus its name here.
macro_rules! registry {
    ($ty:ty; $all:ident, $docs:ident, $names:ident; $($module:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every policy of this registry, in order.
        pub const $all: &[&$crate::Registered<$ty>] = &[$(&$module::POLICY),*];
        /// Every policy's documentation, in the registry's order.
        pub const $docs: &[&$crate::PolicyDoc] = &[$($module::POLICY.doc),*];
        /// Every policy's name, in the registry's order.
        pub const $names: &[&str] = &[$($module::POLICY.doc.name),*];
    };
}

pub mod autoscale;
pub mod composed;
pub mod nsga2;
pub mod spec;
#[cfg(any(test, feature = "bench"))]
#[doc(hidden)]
pub mod testkit;

registry!(dyn Policy; POLICIES, POLICY_DOCS, POLICY_NAMES;
    static_policy, dlrover, dlrover_oss, optimus, es, well_tuned);

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
    Registered::build_from(POLICIES, &parsed).unwrap_or_else(|| {
        Err(SpecError::UnknownPolicy {
            name: parsed.name.clone(),
            known: format!(
                "{}; autoscalers: {}",
                POLICY_NAMES.join(", "),
                AUTOSCALER_NAMES.join(", ")
            ),
        })
    })
}
