//! The online policy interface and the spec-string factory.
//!
//! A policy sees an [`OnlineView`]: what a real autoscaler can observe (pod phases,
//! readiness and noisy scraped metrics, the observed per-minute arrival rate, the Kafka
//! backlog and lag, an offline throughput profile, platform constants). It never sees the
//! hidden throughput function. It returns a desired worker count; the world clamps and
//! applies it. The one exception is the oracle forecaster, which reads future rates through
//! [`OnlineView::oracle_future`] and labels itself `oracle` in every output.

pub mod adequate;
pub mod autopilot;
pub mod hpa;
pub mod kale;
pub mod madu;

use crate::forecast::ForecasterKind;
use crate::scenario::TrainMode;
use crate::stream::ShuffleConfig;
use crate::throughput::ProfilePoint;
use dlsim_engine::SimTime;
use dlsim_policies::{PolicySpec, SpecError};

/// A pod's phase as the Kubernetes API reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodPhase {
    Pending,
    Running,
}

/// One scraped metric sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetricSample {
    /// GPU utilisation (0..1), CPU utilisation of the request (0..1), or samples/s.
    pub value: f64,
    /// When the sample's window ended.
    pub timestamp: SimTime,
    /// The window the sample averages over.
    pub window: SimTime,
}

/// What the API server and the metrics pipeline say about one worker pod.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PodObs {
    pub phase: PodPhase,
    /// The Ready condition, with the time it last changed.
    pub ready: bool,
    pub ready_transition: SimTime,
    /// `status.startTime` (set once the pod is scheduled).
    pub start_time: SimTime,
    pub gpu_util: Option<MetricSample>,
    pub cpu_util: Option<MetricSample>,
    pub sps: Option<MetricSample>,
}

/// Everything a policy may observe at a decision.
pub struct OnlineView<'a> {
    pub now: SimTime,
    /// The replica count last asked for (Kubernetes `spec.replicas`).
    pub target: u32,
    pub pods: &'a [PodObs],
    /// Observed total arrival rate per completed minute (Kafka ingress counters).
    pub minute_rates: &'a [f64],
    /// Untrained samples in the topic and the age of the oldest (Kafka consumer lag).
    pub backlog_samples: f64,
    pub lag_s: f64,
    /// Whether pods are starting or the stream is being rebuilt (a rescale in progress).
    pub rescaling: bool,
    /// Synchronous or asynchronous training (the operator knows which).
    pub mode: TrainMode,
    /// The offline throughput benchmark (repeat-major).
    pub profile: &'a [ProfilePoint],
    pub profile_repeats: u32,
    pub max_workers: u32,
    /// Minutes the run lasts.
    pub run_minutes: usize,
    /// Seconds a rescale takes end to end (platform constant, known to operators).
    pub rescale_s: f64,
    /// The job's lag SLO in seconds (the operator's own target).
    pub slo_lag_s: f64,
    /// Future true rates, for the labelled oracle forecaster only.
    pub(crate) oracle: &'a [f64],
}

impl OnlineView<'_> {
    /// The true total rate for minutes `from..to` (oracle only: this is ground truth).
    pub fn oracle_future(&self, from: usize, to: usize) -> &[f64] {
        let end = to.min(self.oracle.len());
        &self.oracle[from.min(end)..end]
    }

    pub fn now_minute(&self) -> usize {
        (self.now.as_ms() / 60_000) as usize
    }
}

/// An online autoscaling policy.
pub trait OnlinePolicy {
    /// Canonical spec string (used in outputs).
    fn name(&self) -> String;
    /// How often `decide` is called; a multiple of the scenario's step.
    fn interval(&self) -> SimTime;
    /// The data-plane shuffling this policy turns on, if any.
    fn shuffle(&self) -> Option<ShuffleConfig> {
        None
    }
    /// The desired worker count, or `None` to leave the target alone.
    fn decide(&mut self, view: &OnlineView) -> Option<u32>;
    /// Policy-specific figures for `summary.json` (fit errors, forecaster, ...).
    fn report(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

pub const KNOWN: &str = "hpa, kale, autopilot, madu, adequate";

/// Every online policy's parameters, in [`KNOWN`] order (`dlsim policies`).
pub const DOCS: &[&dlsim_policies::PolicyDoc] = &[
    &hpa::DOC,
    &kale::DOC,
    &autopilot::DOC,
    &madu::DOC,
    &adequate::DOC,
];

/// Builds a policy from its spec string, e.g. `hpa[metric=gpu_util,target=0.7]`.
pub fn build(spec: &str) -> Result<Box<dyn OnlinePolicy>, SpecError> {
    let s = PolicySpec::parse(spec)?;
    match s.name.as_str() {
        "hpa" => Ok(Box::new(hpa::Hpa::from_spec(&s)?)),
        "kale" => Ok(Box::new(kale::Kale::from_spec(&s)?)),
        "autopilot" => Ok(Box::new(autopilot::Autopilot::from_spec(&s)?)),
        "madu" => Ok(Box::new(madu::Madu::from_spec(&s)?)),
        "adequate" => Ok(Box::new(adequate::Adequate::from_spec(&s)?)),
        _ => Err(SpecError::UnknownPolicy {
            name: s.name.clone(),
            known: KNOWN.into(),
        }),
    }
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
