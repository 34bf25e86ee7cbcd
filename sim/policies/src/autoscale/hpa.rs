//! `hpa`: the Kubernetes Horizontal Pod Autoscaler as `pkg/controller/podautoscaler`
//! implements it (v1.2x, `autoscaling/v2` with default behaviour).
//!
//! * Replica calculator (`replica_calculator.go`): pods are grouped by `groupPods` (Pending
//!   pods are unready; Running pods without a sample are missing; for the CPU resource
//!   metric, pods inside the 5-min initialisation period count as unready when not Ready or
//!   when their sample window started before the last readiness change, and after it when
//!   they were never Ready within 30 s of start). Unready metrics are dropped; with none left
//!   the sync is an error and nothing changes. Without unready-on-scale-up or missing pods:
//!   inside the tolerance keep the current count, else `ceil(ratio * ready)`. Otherwise
//!   missing pods count as the target (scale-down; CPU: `max(100%, target)`) or 0 (scale-up),
//!   unready pods as 0 on a scale-up, the ratio is recomputed, and a change of direction or a
//!   ratio inside the tolerance keeps the current count; else `ceil(new_ratio * counted)`
//!   unless that count moves the wrong way.
//! * Controller (`horizontal.go`): out-of-range replicas are clamped first; otherwise the
//!   recommendation is stabilised (`stabilizeRecommendationWithBehaviors`: the minimum over
//!   the scale-up window, the maximum over the scale-down window, both including the
//!   current one) and rate-limited (`convertDesiredReplicasWithBehaviorRate`: scale-up
//!   limit = max over policies {+4 pods, +100%} per 15 s from the period-start count;
//!   scale-down limit = min over {-100%} per 15 s), then bounded by min/max replicas.
//!   Scale events are recorded per direction for the rate limits. `selectPolicy` Max
//!   takes the policy allowing the largest change, Min the smallest, Disabled none.
//! * Behaviour from the spec (`HPAScalingRules` per direction): `up_window_s`/
//!   `down_window_s` (stabilisation, 0/300 s), `up_pods`/`up_percent` (4/100) and
//!   `down_pods`/`down_percent` (0/100; 0 leaves that policy out), `up_period_s`/
//!   `down_period_s` (15 s, shared by a direction's policies), `up_select`/`down_select`
//!   (`max`, `min`, `disabled`). `max` defaults to, and is always bounded by, the cluster's
//!   GPUs.
//!
//! In the online world (`pods.rs`) the default metric is GPU utilisation as a per-pod custom
//! metric (`type: Pods`, e.g. from a GPU exporter through an adapter), target 0.7, averaged
//! over the scenario's `metric_window_s`; pods are unready (no metric) until their model is
//! loaded and Ready afterwards, including through stream rebuilds. Each replica change is a
//! rescale of the job, and in `rolling` mode each join or leave pauses the consumer group,
//! which this metric sees as idle GPUs and then as a 100%-busy backlog drain: on `online-7d`
//! the controller oscillates (2,188 replica changes a week: 771 up, 1,417 down, 487 of the
//! downs removing pods still loading, 408 made on the ~0% reading of a rebuild, each of
//! which pauses the group again) instead of reacting late. An operator who knows a rescale
//! costs `R` = 540 s (pull, start, model load, rebuild) sets `up_window_s = R` (a rise must
//! outlast a rescale's own readings: loading pods, the rebuild's idle GPUs, the drain's
//! 100%) and `down_window_s = 2R` (shrink only for a low spell longer than a scale-down
//! plus the scale-up that would undo it); that is the tuned row of Table 3.

use super::{choice, num, Autoscaler, MetricSample, OnlinePodPhase, OnlineView, PodObs};
use crate::{param, PolicyDoc, PolicySpec, SpecError};
use dlsim_engine::SimTime;

/// The metric the HPA scales on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HpaMetric {
    /// GPU utilisation as a per-pod custom metric (`type: Pods`, average value).
    GpuUtil,
    /// CPU utilisation of the request (`type: Resource`), with the CPU readiness rules.
    CpuUtil,
    /// Samples/s per pod (`type: Pods`).
    Sps,
}

/// A scaling policy of an `HPAScalingRules`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RatePolicy {
    Pods { value: u32, period_s: u64 },
    Percent { value: u32, period_s: u64 },
}

/// `selectPolicy` of an `HPAScalingRules`: which policy's limit applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectPolicy {
    /// The policy allowing the largest change (the default).
    Max,
    /// The policy allowing the smallest change.
    Min,
    /// No scaling in this direction.
    Disabled,
}

/// The replica calculator's constants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CalcConfig {
    pub metric: HpaMetric,
    pub target: f64,
    pub tolerance: f64,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period` (default 5 min).
    pub cpu_init_period: SimTime,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay` (default 30 s).
    pub initial_readiness_delay: SimTime,
}

/// Why a sync could not compute a recommendation (the controller then changes nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CalcError {
    NoPods,
    NoMetrics,
}

fn sample(p: &PodObs, m: HpaMetric) -> Option<MetricSample> {
    match m {
        HpaMetric::GpuUtil => p.gpu_util,
        HpaMetric::CpuUtil => p.cpu_util,
        HpaMetric::Sps => p.sps,
    }
}

/// `groupPods`: returns (ready-with-metric values, unready count, missing count).
fn group(pods: &[PodObs], cfg: &CalcConfig, now: SimTime) -> (Vec<f64>, usize, usize) {
    let (mut ready, mut unready, mut missing) = (Vec::new(), 0, 0);
    for p in pods {
        if p.phase == OnlinePodPhase::Pending {
            unready += 1;
            continue;
        }
        let Some(m) = sample(p, cfg.metric) else {
            missing += 1;
            continue;
        };
        if cfg.metric == HpaMetric::CpuUtil {
            let in_init = p.start_time + cfg.cpu_init_period > now;
            let is_unready = if in_init {
                !p.ready || m.timestamp < p.ready_transition + m.window
            } else {
                !p.ready && p.start_time + cfg.initial_readiness_delay > p.ready_transition
            };
            if is_unready {
                unready += 1;
                continue;
            }
        }
        ready.push(m.value);
    }
    (ready, unready, missing)
}

/// The replica calculator: the desired count for `current` replicas given `pods`.
pub fn replica_calc(
    current: u32,
    pods: &[PodObs],
    cfg: &CalcConfig,
    now: SimTime,
) -> Result<u32, CalcError> {
    if pods.is_empty() {
        return Err(CalcError::NoPods);
    }
    let (mut values, unready, missing) = group(pods, cfg, now);
    if values.is_empty() {
        return Err(CalcError::NoMetrics);
    }
    let ready = values.len();
    let ratio_of = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64 / cfg.target;
    let ratio = ratio_of(&values);
    let scale_up_with_unready = unready > 0 && ratio > 1.0;
    if !scale_up_with_unready && missing == 0 {
        if (1.0 - ratio).abs() <= cfg.tolerance {
            return Ok(current);
        }
        return Ok((ratio * ready as f64).ceil() as u32);
    }
    if missing > 0 {
        if ratio < 1.0 {
            let fallback = match cfg.metric {
                HpaMetric::CpuUtil => cfg.target.max(1.0),
                _ => cfg.target,
            };
            values.extend(std::iter::repeat_n(fallback, missing));
        } else if ratio > 1.0 {
            values.extend(std::iter::repeat_n(0.0, missing));
        }
    }
    if scale_up_with_unready {
        values.extend(std::iter::repeat_n(0.0, unready));
    }
    let new_ratio = ratio_of(&values);
    if (1.0 - new_ratio).abs() <= cfg.tolerance
        || (ratio < 1.0 && new_ratio > 1.0)
        || (ratio > 1.0 && new_ratio < 1.0)
    {
        return Ok(current);
    }
    let new_replicas = (new_ratio * values.len() as f64).ceil() as u32;
    if (new_ratio < 1.0 && new_replicas > current) || (new_ratio > 1.0 && new_replicas < current) {
        return Ok(current);
    }
    Ok(new_replicas)
}

/// The controller's memory: past recommendations and scale events.
#[derive(Clone, Debug)]
pub struct Controller {
    pub min_replicas: u32,
    pub max_replicas: u32,
    pub up_window: SimTime,
    pub down_window: SimTime,
    pub up_policies: Vec<RatePolicy>,
    pub down_policies: Vec<RatePolicy>,
    pub up_select: SelectPolicy,
    pub down_select: SelectPolicy,
    recommendations: Vec<(SimTime, u32)>,
    up_events: Vec<(SimTime, u32)>,
    down_events: Vec<(SimTime, u32)>,
}

impl Controller {
    /// The `autoscaling/v2` default behaviour.
    pub fn default_behaviour(min_replicas: u32, max_replicas: u32) -> Self {
        Controller {
            min_replicas,
            max_replicas,
            up_window: SimTime::ZERO,
            down_window: SimTime::from_secs(300),
            up_policies: vec![
                RatePolicy::Pods {
                    value: 4,
                    period_s: 15,
                },
                RatePolicy::Percent {
                    value: 100,
                    period_s: 15,
                },
            ],
            down_policies: vec![RatePolicy::Percent {
                value: 100,
                period_s: 15,
            }],
            up_select: SelectPolicy::Max,
            down_select: SelectPolicy::Max,
            recommendations: Vec::new(),
            up_events: Vec::new(),
            down_events: Vec::new(),
        }
    }

    /// One `reconcileAutoscaler` pass: returns the new `spec.replicas`.
    pub fn reconcile(&mut self, now: SimTime, current: u32, metric: Result<u32, CalcError>) -> u32 {
        let desired = if current > self.max_replicas {
            self.max_replicas
        } else if current < self.min_replicas {
            self.min_replicas
        } else {
            let Ok(rec) = metric else {
                return current;
            };
            let stabilised = self.stabilise(now, current, rec);
            self.rate_limit(now, current, stabilised)
        };
        if desired > current {
            self.up_events.push((now, desired - current));
        } else if desired < current {
            self.down_events.push((now, current - desired));
        }
        desired
    }

    fn stabilise(&mut self, now: SimTime, current: u32, desired: u32) -> u32 {
        let after = |t: SimTime, w: SimTime| t.as_ms() + w.as_ms() > now.as_ms();
        let mut up = desired;
        let mut down = desired;
        for &(t, r) in &self.recommendations {
            if after(t, self.up_window) {
                up = up.min(r);
            }
            if after(t, self.down_window) {
                down = down.max(r);
            }
        }
        let rec = current.max(up).min(down);
        let keep = self.up_window.max(self.down_window);
        self.recommendations.retain(|&(t, _)| after(t, keep));
        self.recommendations.push((now, desired));
        rec
    }

    fn changed_in(events: &[(SimTime, u32)], now: SimTime, period_s: u64) -> u32 {
        events
            .iter()
            .filter(|(t, _)| t.as_ms() + period_s * 1000 > now.as_ms())
            .map(|(_, n)| n)
            .sum()
    }

    fn rate_limit(&mut self, now: SimTime, current: u32, desired: u32) -> u32 {
        let longest = self
            .up_policies
            .iter()
            .chain(&self.down_policies)
            .map(|p| match p {
                RatePolicy::Pods { period_s, .. } | RatePolicy::Percent { period_s, .. } => {
                    *period_s
                }
            })
            .max()
            .unwrap_or(0);
        let fresh = |e: &(SimTime, u32)| e.0.as_ms() + longest * 1000 > now.as_ms();
        self.up_events.retain(fresh);
        self.down_events.retain(fresh);
        let start = |period_s: u64| {
            i64::from(current) - i64::from(Self::changed_in(&self.up_events, now, period_s))
                + i64::from(Self::changed_in(&self.down_events, now, period_s))
        };
        let cur = i64::from(current);
        if desired > current {
            let proposals = self.up_policies.iter().map(|p| match *p {
                RatePolicy::Pods { value, period_s } => start(period_s) + i64::from(value),
                RatePolicy::Percent { value, period_s } => {
                    (start(period_s) as f64 * (1.0 + f64::from(value) / 100.0)).ceil() as i64
                }
            });
            // `calculateScaleUpLimitWithScalingRules`: Max takes the largest proposal, Min the
            // smallest; with no policy the limit stays at its fold seed and is then floored
            // at the current count.
            let limit = match self.up_select {
                SelectPolicy::Disabled => cur,
                SelectPolicy::Max => proposals.fold(i64::from(i32::MIN), i64::max),
                SelectPolicy::Min => proposals.fold(i64::from(i32::MAX), i64::min),
            }
            .max(cur);
            let allowed = limit.min(i64::from(self.max_replicas));
            desired.min(allowed as u32)
        } else if desired < current {
            let proposals = self.down_policies.iter().map(|p| match *p {
                RatePolicy::Pods { value, period_s } => start(period_s) - i64::from(value),
                RatePolicy::Percent { value, period_s } => {
                    (start(period_s) as f64 * (1.0 - f64::from(value) / 100.0)) as i64
                }
            });
            // `calculateScaleDownLimitWithBehaviors`: Max (largest change) takes the smallest
            // proposal, Min the largest; the limit is capped at the current count.
            let limit = match self.down_select {
                SelectPolicy::Disabled => cur,
                SelectPolicy::Max => proposals.fold(i64::from(i32::MAX), i64::min),
                SelectPolicy::Min => proposals.fold(i64::from(i32::MIN), i64::max),
            }
            .min(cur);
            let allowed = limit.max(i64::from(self.min_replicas));
            desired.max(allowed as u32)
        } else {
            desired
        }
    }
}

/// The `hpa` policy: replica calculator plus controller, synced every `sync_s`.
pub struct Hpa {
    spec: String,
    calc: CalcConfig,
    ctl: Controller,
    /// `maxReplicas` as specified; the controller's is this bounded by the cluster.
    max_replicas: u32,
    sync: SimTime,
    errors: u64,
}

/// One direction's `HPAScalingRules` from the spec keys `{dir}_window_s`, `{dir}_pods`,
/// `{dir}_percent`, `{dir}_period_s` (shared by both policies) and `{dir}_select`; a
/// policy value of 0 leaves that policy out. Defaults are the `autoscaling/v2` ones, and
/// the bounds those of its validation (window <= 3600 s, period 1..=1800 s).
fn scaling_rules(
    s: &PolicySpec,
    dir: &str,
    window_s: u64,
    pods: u32,
) -> Result<(SimTime, Vec<RatePolicy>, SelectPolicy), SpecError> {
    let key = |k: &str| format!("{dir}_{k}");
    let window = num(s, &key("window_s"), window_s as f64, 0.0, 3600.0)? as u64;
    let period_s = num(s, &key("period_s"), 15.0, 1.0, 1800.0)? as u64;
    let pods = num(s, &key("pods"), f64::from(pods), 0.0, 10_000.0)? as u32;
    let percent = num(s, &key("percent"), 100.0, 0.0, 10_000.0)? as u32;
    let mut policies = Vec::new();
    if pods > 0 {
        policies.push(RatePolicy::Pods {
            value: pods,
            period_s,
        });
    }
    if percent > 0 {
        policies.push(RatePolicy::Percent {
            value: percent,
            period_s,
        });
    }
    let select = match choice(s, &key("select"), "max", &["max", "min", "disabled"])? {
        "min" => SelectPolicy::Min,
        "disabled" => SelectPolicy::Disabled,
        _ => SelectPolicy::Max,
    };
    Ok((SimTime::from_secs(window), policies, select))
}

/// `hpa`'s parameters (`dlsim policies`).
pub const DOC: PolicyDoc = PolicyDoc {
    name: "hpa",
    summary:
        "Kubernetes Horizontal Pod Autoscaler (autoscaling/v2 replica calculator and controller)",
    params: &[
        param(
            "metric",
            "gpu_util|cpu_util|sps",
            "gpu_util",
            "per-pod metric it scales on (sps: samples/s)",
        ),
        param(
            "target",
            "number",
            "0.7",
            "target per-pod value of the metric (default 5000 with metric=sps)",
        ),
        param("min", "number in [1, 10000]", "1", "minReplicas"),
        param(
            "max",
            "number in [1, 10000]",
            "10000",
            "maxReplicas (always bounded by the cluster's GPUs)",
        ),
        param(
            "tolerance",
            "number in [0, 1]",
            "0.1",
            "no change while the metric is within target x (1 +- tolerance)",
        ),
        param(
            "sync_s",
            "number in [1, 3600]",
            "15",
            "controller sync period (s)",
        ),
        param(
            "up_window_s",
            "number in [0, 3600]",
            "0",
            "scale-up stabilisation window (s)",
        ),
        param(
            "up_pods",
            "number in [0, 10000]",
            "4",
            "scale-up rate policy: pods per period (0 leaves it out)",
        ),
        param(
            "up_percent",
            "number in [0, 10000]",
            "100",
            "scale-up rate policy: percent per period (0 leaves it out)",
        ),
        param(
            "up_period_s",
            "number in [1, 1800]",
            "15",
            "period of the scale-up rate policies (s)",
        ),
        param(
            "up_select",
            "max|min|disabled",
            "max",
            "which scale-up rate policy applies: the largest change, the smallest, or none",
        ),
        param(
            "down_window_s",
            "number in [0, 3600]",
            "300",
            "scale-down stabilisation window (s)",
        ),
        param(
            "down_pods",
            "number in [0, 10000]",
            "0",
            "scale-down rate policy: pods per period (0 leaves it out)",
        ),
        param(
            "down_percent",
            "number in [0, 10000]",
            "100",
            "scale-down rate policy: percent per period (0 leaves it out)",
        ),
        param(
            "down_period_s",
            "number in [1, 1800]",
            "15",
            "period of the scale-down rate policies (s)",
        ),
        param(
            "down_select",
            "max|min|disabled",
            "max",
            "which scale-down rate policy applies: the largest change, the smallest, or none",
        ),
    ],
};

/// This policy's registry entry (`crate::autoscale::AUTOSCALERS`): its documentation and its builder.
pub const POLICY: crate::Registered<dyn dlsim_model::policy::Autoscaler> = crate::Registered {
    doc: &DOC,
    build: |spec| Ok(Box::new(Hpa::from_spec(spec)?)),
};

impl Hpa {
    pub fn from_spec(s: &PolicySpec) -> Result<Self, SpecError> {
        s.only(&DOC.param_names())?;
        let metric = match choice(s, "metric", "gpu_util", &["gpu_util", "cpu_util", "sps"])? {
            "cpu_util" => HpaMetric::CpuUtil,
            "sps" => HpaMetric::Sps,
            _ => HpaMetric::GpuUtil,
        };
        let default_target = if metric == HpaMetric::Sps {
            5000.0
        } else {
            0.7
        };
        let target = num(s, "target", default_target, 1e-6, 1e12)?;
        let min = num(s, "min", 1.0, 1.0, 10_000.0)? as u32;
        // maxReplicas defaults to the cluster's GPUs (bounded again at each sync), so the
        // controller never records a scale event the cluster cannot carry out.
        let max = num(s, "max", 10_000.0, 1.0, 10_000.0)? as u32;
        if max < min {
            return Err(SpecError::BadValue {
                policy: s.name.clone(),
                key: "max".into(),
                value: max.to_string(),
                why: "must be >= min".into(),
            });
        }
        let mut ctl = Controller::default_behaviour(min, max);
        (ctl.up_window, ctl.up_policies, ctl.up_select) = scaling_rules(s, "up", 0, 4)?;
        (ctl.down_window, ctl.down_policies, ctl.down_select) = scaling_rules(s, "down", 300, 0)?;
        Ok(Hpa {
            spec: s.canonical(),
            calc: CalcConfig {
                metric,
                target,
                tolerance: num(s, "tolerance", 0.1, 0.0, 1.0)?,
                cpu_init_period: SimTime::from_secs(300),
                initial_readiness_delay: SimTime::from_secs(30),
            },
            ctl,
            max_replicas: max,
            sync: SimTime::from_secs(num(s, "sync_s", 15.0, 1.0, 3600.0)? as u64),
            errors: 0,
        })
    }
}

impl Autoscaler for Hpa {
    fn name(&self) -> String {
        self.spec.clone()
    }
    fn interval(&self) -> SimTime {
        self.sync
    }
    fn decide(&mut self, view: &OnlineView) -> Option<u32> {
        self.ctl.max_replicas = self.max_replicas.min(view.max_workers);
        let rec = replica_calc(view.target, view.pods, &self.calc, view.now);
        if rec.is_err() {
            self.errors += 1;
        }
        Some(self.ctl.reconcile(view.now, view.target, rec))
    }
    fn report(&self) -> serde_json::Value {
        serde_json::json!({ "syncs_without_metrics": self.errors })
    }
}

#[cfg(test)]
#[path = "hpa_tests.rs"]
mod tests;
