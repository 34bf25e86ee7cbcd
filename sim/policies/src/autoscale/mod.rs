//! Per-job autoscalers of online jobs, one per file, and their spec-string factory. The
//! interface ([`Autoscaler`], [`OnlineView`]) is the model's (`dlsim_model::policy`).
//!
//! An autoscaler sees an [`OnlineView`]: what a real autoscaler can observe (pod phases,
//! readiness and noisy scraped metrics, the observed per-minute arrival rate, the Kafka
//! backlog and lag, an offline throughput profile, platform constants). It never sees the
//! hidden throughput function. It returns a desired worker count; the world clamps and
//! applies it. The one exception is the oracle forecaster, which reads future rates through
//! [`OnlineView::oracle_future`] and labels itself `oracle` in every output.

use crate::{param, ParamDoc, PolicySpec, SpecError};
use dlsim_model::online::forecast::ForecasterKind;
pub use dlsim_model::policy::{Autoscaler, MetricSample, OnlinePodPhase, OnlineView, PodObs};

registry!(dyn Autoscaler; AUTOSCALERS, DOCS, NAMES; hpa, kale, autopilot, madu, adequate);

/// Builds an autoscaler from its spec string, e.g. `hpa[metric=gpu_util,target=0.7]`.
pub fn build(spec: &str) -> Result<Box<dyn Autoscaler>, SpecError> {
    let s = PolicySpec::parse(spec)?;
    crate::Registered::build_from(AUTOSCALERS, &s).unwrap_or_else(|| {
        Err(SpecError::UnknownPolicy {
            name: s.name.clone(),
            known: NAMES.join(", "),
        })
    })
}

/// A string parameter among `choices`, or `default`.
pub(crate) fn choice<'a>(
    s: &'a PolicySpec,
    key: &str,
    default: &'a str,
    choices: &[&str],
) -> Result<&'a str, SpecError> {
    match s.params.get(key) {
        None => Ok(default),
        Some(v) if choices.contains(&v.as_str()) => Ok(v.as_str()),
        Some(_) => Err(s.bad_value(key, &format!("expected one of {}", choices.join(", ")))),
    }
}

/// A numeric parameter that must lie in `[lo, hi]`.
pub(crate) fn num(
    s: &PolicySpec,
    key: &str,
    default: f64,
    lo: f64,
    hi: f64,
) -> Result<f64, SpecError> {
    let v = s.f64_or(key, default)?;
    if v < lo || v > hi {
        return Err(SpecError::BadValue {
            policy: s.name.clone(),
            key: key.into(),
            value: v.to_string(),
            why: format!("must be in [{lo}, {hi}]"),
        });
    }
    Ok(v)
}

/// The forecaster parameter shared by kale and madu.
pub(crate) fn forecaster(s: &PolicySpec) -> Result<ForecasterKind, SpecError> {
    let name = choice(
        s,
        "forecaster",
        "holt_winters",
        &["oracle", "seasonal_naive", "holt_winters"],
    )?;
    Ok(ForecasterKind::parse(name).expect("checked by choice"))
}

/// A controller's cooldown after its own rescales (`cooldown_min`, taken by `autopilot` and
/// `madu`; off by default): it acts again only once the last rescale has been over for
/// `cooldown_min` minutes, so that its next decision reads pods that train on the new size
/// rather than pods still rebuilding their stream (which read 0% GPU). This is the classic
/// autoscaler cooldown (the Kubernetes HPA's upscale/downscale delays before v1.12, an AWS
/// scaling group's cooldown); the published Autopilot and Madu state none, and the exact
/// `hpa` has none. Kale Table 3's arms (`scenarios/paper/kale/paper.json`) run both
/// baselines with `cooldown_min=9`, the rescale time R (`OnlineView::rescale_s`): without
/// it Autopilot spent 86% of the run's minutes over the SLO, with it 39% (8% with its p95
/// statistic too; measured there, 3 seeds).
#[derive(Clone, Debug)]
pub(crate) struct Cooldown {
    minutes: f64,
    last_rescaling: Option<dlsim_engine::SimTime>,
}

/// The `cooldown_min` parameter as each policy that takes it documents it.
pub(crate) const COOLDOWN_PARAM: ParamDoc = param(
    "cooldown_min",
    "number in [0, 1440]",
    "0",
    "act again only this long after a rescale ended (minutes; 0: no cooldown)",
);

impl Cooldown {
    pub(crate) fn from_spec(s: &PolicySpec) -> Result<Self, SpecError> {
        Ok(Cooldown {
            minutes: num(s, COOLDOWN_PARAM.name, 0.0, 0.0, 1440.0)?,
            last_rescaling: None,
        })
    }

    /// Records the view and says whether the controller may act now. The rescale's end is
    /// the last decision tick that saw it in progress (a minute's resolution for `autopilot`
    /// and `madu`), so the wait after its true end is short of `cooldown_min` by at most a
    /// tick.
    pub(crate) fn may_act(&mut self, view: &OnlineView) -> bool {
        if view.rescaling {
            self.last_rescaling = Some(view.now);
            return false;
        }
        let wait_ms = (self.minutes * 60_000.0).round() as u64;
        self.last_rescaling
            .is_none_or(|t| view.now.as_ms() >= t.as_ms() + wait_ms)
    }
}

/// Backlog headroom for a rescale the policy already decided on (issue #18; `kale`'s and
/// `madu`'s `drain_min`): a recreate rescale stops training for `R` seconds
/// (`OnlineView::rescale_s`), so the new level must carry the load plus the backlog it
/// finds and about `L R` samples of its own outage, drained within `drain_s` seconds.
/// `workers_for(rate)` is the policy's own sizing (its model, its capacity constant);
/// `desired` its load-only answer. The headroom may hold a scale-down back (to no change at
/// most) but never turns it into a scale-up, and it is applied only when `desired` is a
/// change, so it never triggers a rescale by itself.
pub(crate) fn with_drain_headroom(
    view: &OnlineView,
    desired: u32,
    now_rate: f64,
    drain_s: f64,
    workers_for: impl Fn(f64) -> u32,
) -> u32 {
    if desired == view.target || drain_s <= 0.0 {
        return desired;
    }
    let extra = (view.backlog_samples + now_rate * view.rescale_s) / drain_s;
    let sized = workers_for(extra).max(desired);
    if desired < view.target {
        sized.min(view.target)
    } else {
        sized
    }
}
