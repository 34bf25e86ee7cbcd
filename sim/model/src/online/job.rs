//! One online job's state in the world: its hidden truth and traffic, its stream and pods,
//! its autoscaler, and its running metrics. The world (`world/online.rs`) drives it from
//! its events and places its pods; everything here is about the job alone.
//!
//! Each of its events first advances the stream to its time, so rates, the consuming set
//! and the pause state are constant over each advanced interval. Only the job's own events
//! (its ticks, its pods loading, its pods lost) advance it: how finely the rest of the
//! world splits time does not change its numbers.

use crate::online::forecast;
use crate::online::metrics::{Accumulator, OnlineSummary};
use crate::online::pods::Pods;
use crate::online::scenario::{OnlineJobFile, TrainMode};
use crate::online::stream::{ShuffleConfig, Stream};
use crate::online::throughput::{fit_and_score, profile, FitForm, ProfilePoint, Truth};
use crate::online::traffic::Traffic;
use crate::policy::{Autoscaler, OnlineView};
use dlsim_engine::{RngStreams, SimRng, SimTime};

/// Where an online job is in its life: it runs from time 0 to its horizon, then ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnlinePhase {
    Running,
    Ended,
}

pub struct OnlineJob {
    /// The job's id in `jobs.csv`.
    pub id: u64,
    pub spec: OnlineJobFile,
    pub phase: OnlinePhase,
    truth: Truth,
    traffic: Traffic,
    pub stream: Stream,
    pub pods: Pods,
    /// `None`: the run's policy has no autoscaler, the job keeps its initial workers.
    autoscaler: Option<Box<dyn Autoscaler>>,
    shuffle: Option<ShuffleConfig>,
    pub target: u32,
    profile: Vec<ProfilePoint>,
    noise: SimRng,
    pub step: SimTime,
    /// When the job starts (its `submit_s`); the job's own clock (its ticks, minutes and
    /// pods' times) counts from here, and the world converts at its boundary.
    pub start: SimTime,
    /// How long it runs, on its own clock.
    pub horizon: SimTime,
    /// When it ended, in run time (its start plus its horizon, or where the run's horizon
    /// cut it); `None` while it runs or if it never started.
    pub ended_at: Option<SimTime>,
    pub policy_every_ms: u64,
    last: SimTime,
    minute_arrivals: f64,
    /// Observed total rate per minute: the history before the run, then the run's minutes.
    observed: Vec<f64>,
    /// How many of `observed`'s minutes came before the run.
    history_min: usize,
    pub acc: Accumulator,
    pub rejected_actions: u64,
    /// The most workers the job may run: its own cap and what the cluster could hold.
    pub max_workers: u32,
    /// Events of this job handled (its ticks and pod loads).
    pub events: u64,
    throughput_fit: serde_json::Value,
}

impl OnlineJob {
    /// Builds the job of `input` (its entry and the rate series its traffic follows) from
    /// its own seeded streams.
    pub fn new(
        input: &crate::online::OnlineInput,
        streams: &RngStreams,
        autoscaler: Option<Box<dyn Autoscaler>>,
        cluster_room: u32,
    ) -> Self {
        let spec = input.file.clone();
        let shape = input.shape.as_ref();
        let horizon = SimTime::from_secs(spec.horizon_s());
        let minutes = (spec.horizon_s() / 60) as usize;
        let traffic = Traffic::build(&spec.traffic, shape, minutes, streams);
        let observed = traffic.history.clone();
        let j = &spec.job;
        let truth = Truth::perturbed(
            j.mode,
            &j.theta,
            j.wp_ratio,
            j.truth_sigma,
            &mut streams.stream("job-truth"),
        );
        let max = spec.max_workers().min(cluster_room).max(1);
        let workers: Vec<u32> = j
            .profile_workers
            .iter()
            .copied()
            .filter(|&w| w <= max)
            .collect();
        let prof = profile(
            &truth,
            &workers,
            j.profile_repeats,
            spec.observation.profile_noise_sigma,
            &mut streams.stream("profile"),
        );
        let throughput_fit = throughput_fit(j.mode, &prof, j.profile_repeats);
        let step = SimTime::from_secs(spec.step_s);
        // The policy runs at the first tick at or after each multiple of its interval.
        let policy_every_ms = autoscaler.as_ref().map_or(u64::MAX, |a| {
            a.interval().as_ms().div_ceil(step.as_ms()).max(1) * step.as_ms()
        });
        OnlineJob {
            id: input.id,
            phase: OnlinePhase::Running,
            stream: Stream::new(traffic.shares.len()),
            shuffle: autoscaler.as_ref().and_then(|a| a.shuffle()),
            target: j.initial_workers,
            pods: Pods::deployed(j.initial_workers, &spec.rescale),
            acc: Accumulator::new(spec.slo_lag_s, &spec.name),
            truth,
            traffic,
            autoscaler,
            profile: prof,
            noise: streams.stream("observation-noise"),
            step,
            start: SimTime::from_secs(spec.submit_s),
            horizon,
            ended_at: None,
            policy_every_ms,
            last: SimTime::ZERO,
            minute_arrivals: 0.0,
            history_min: observed.len(),
            observed,
            rejected_actions: 0,
            max_workers: max,
            events: 0,
            throughput_fit,
            spec,
        }
    }

    /// The autoscaler's canonical spec, or `fixed` without one.
    pub fn policy_name(&self) -> String {
        self.autoscaler
            .as_ref()
            .map_or_else(|| "fixed".to_string(), |a| a.name())
    }

    fn minute(t: SimTime) -> usize {
        (t.as_ms() / 60_000) as usize
    }

    /// Advances the stream over `[last, now)`.
    pub fn advance(&mut self, now: SimTime) {
        let (t0, t1) = (self.last, now);
        if t1 <= t0 {
            return;
        }
        let dt_s = (t1 - t0).as_secs_f64();
        let total = self.traffic.total(Self::minute(t0));
        let rates: Vec<f64> = self.traffic.shares.iter().map(|s| total * s).collect();
        let joined = self.pods.joined();
        let w = joined.len();
        let active_ms = if w == 0 {
            0
        } else {
            t1.as_ms()
                - t0.as_ms()
                    .max(self.pods.paused_until.as_ms())
                    .min(t1.as_ms())
        };
        let per_worker = if w == 0 {
            0.0
        } else {
            self.truth.throughput(w as u32) / w as f64
        };
        let cap = per_worker * active_ms as f64 / 1000.0;
        // Each consuming worker trains at its node's speed (a straggler on a slow or
        // throttled node);
        // in synchronous training every worker waits for the slowest at each step.
        let speeds: Vec<f64> = joined.iter().map(|&i| self.pods.pods[i].speed()).collect();
        let slowest = speeds.iter().copied().fold(1.0, f64::min);
        let caps: Vec<f64> = speeds
            .iter()
            .map(|&v| match self.truth.mode {
                TrainMode::Sync => cap * slowest,
                TrainMode::Async => cap * v,
            })
            .collect();
        let out = self
            .stream
            .advance(t0.as_ms(), t1.as_ms(), &rates, &caps, cap, self.shuffle);
        let window_ms = self.spec.observation.metric_window_s * 1000;
        for (k, &i) in joined.iter().enumerate() {
            self.pods.record(
                i,
                t1.as_ms(),
                out.trained[k],
                per_worker * dt_s,
                dt_s,
                window_ms,
            );
        }
        self.minute_arrivals += total * dt_s;
        let stalled_ms = (t1 - t0).as_ms() - active_ms;
        self.acc.interval(dt_s, stalled_ms, self.pods.held(), &out);
        self.last = now;
    }

    /// The per-minute sample at a minute boundary (the job already advanced to `now`).
    pub fn minute_sample(&mut self, now: SimTime) {
        if !(now.as_ms().is_multiple_of(60_000) && now > SimTime::ZERO) {
            return;
        }
        self.observed.push(self.minute_arrivals / 60.0);
        self.minute_arrivals = 0.0;
        let lag = self.stream.max_lag_ms(now.as_ms()) / 1000.0;
        let mean = self.stream.mean_lag_ms(now.as_ms()) / 1000.0;
        let m = Self::minute(now) - 1;
        self.acc.minute(
            m,
            self.traffic.total(m),
            self.target,
            &self.pods,
            lag,
            mean,
            self.stream.backlog(),
        );
    }

    /// Asks the autoscaler, if one is due at `now`, and applies its answer to the pods
    /// (the world places new pods and releases removed ones).
    pub fn decide(&mut self, now: SimTime) {
        let max_workers = self.max_workers;
        if !now.as_ms().is_multiple_of(self.policy_every_ms) {
            return;
        }
        let Some(autoscaler) = self.autoscaler.as_mut() else {
            return;
        };
        let s = &self.spec;
        let window = SimTime::from_secs(s.observation.metric_window_s);
        let sigma = s.observation.metric_noise_sigma;
        let pods = self.pods.observe(now, window, sigma, &mut self.noise);
        let view = OnlineView {
            now,
            target: self.target,
            pods: &pods,
            minute_rates: &self.observed,
            backlog_samples: self.stream.backlog(),
            lag_s: self.stream.max_lag_ms(now.as_ms()) / 1000.0,
            rescaling: self.pods.rescaling(now),
            mode: s.job.mode,
            profile: &self.profile,
            profile_repeats: s.job.profile_repeats,
            max_workers,
            run_minutes: (self.horizon.as_ms() / 60_000) as usize,
            rescale_s: s.rescale.total_s(),
            slo_lag_s: s.slo_lag_s,
            oracle: &self.traffic.minute_sps,
        };
        let Some(want) = autoscaler.decide(&view) else {
            return;
        };
        let desired = want.clamp(1, max_workers);
        if desired != want {
            self.rejected_actions += 1;
        }
        if desired == self.target {
            return;
        }
        self.target = desired;
        if now == SimTime::ZERO {
            // The initial deployment is sized by the policy's first decision, at no cost.
            self.pods.redeploy(desired);
            return;
        }
        self.acc.rescales += 1;
        self.pods.rescale(now, desired);
    }

    /// The job's pods on `node` are gone (node failure or eviction) at `now`: they are
    /// asked for again, and the job pays their reload.
    pub fn lose_node(&mut self, now: SimTime, node: usize) {
        self.advance(now);
        let lost = self.pods.lose_node(now, node);
        if lost > 0 {
            self.acc.pods_lost += u64::from(lost);
            self.pods.rescale(now, self.target);
        }
    }

    /// Co-located services on `node` left its pods `throttle` of their CPU from `now`.
    pub fn throttle_node(&mut self, now: SimTime, node: usize, throttle: f64) {
        if !self
            .pods
            .pods
            .iter()
            .any(|p| p.node == Some(node) && p.throttle != throttle)
        {
            return;
        }
        self.advance(now);
        for p in &mut self.pods.pods {
            if p.node == Some(node) {
                p.throttle = throttle;
            }
        }
    }

    /// The job's pod `pod` failed at `now`: it is asked for again, and the job pays its
    /// reload, as for a lost node.
    pub fn lose_pod(&mut self, now: SimTime, pod: u64) {
        self.advance(now);
        let lost = self.pods.lose_where(now, |p| p.id == pod);
        if lost > 0 {
            self.acc.pods_lost += u64::from(lost);
            self.pods.rescale(now, self.target);
        }
    }

    /// The job's line of `summary.json`, at the end of the run; `events` are its own.
    pub fn summary(&self, scenario: &str, seed: u64) -> OnlineSummary {
        let s = &self.spec;
        let lead = (s.rescale.total_s() / 60.0).ceil() as usize;
        let mape: serde_json::Map<String, serde_json::Value> =
            forecast::evaluate(&self.observed, self.history_min, lead, 5)
                .into_iter()
                // A run too short to evaluate a forecaster (one day of history) leaves it
                // out rather than writing a null (issue #21: no null in a result).
                .filter(|(_, v)| v.is_finite())
                .map(|(k, v)| (k.as_str().to_string(), serde_json::json!(v)))
                .collect();
        let a = &self.acc;
        let minutes = a.minutes.max(1) as f64;
        let arrived: f64 = self.stream.parts.iter().map(|p| p.arrived).sum();
        OnlineSummary {
            kind: "online",
            job: s.name.clone(),
            scenario: scenario.to_string(),
            policy: self.policy_name(),
            seed,
            days: s.days,
            minutes: a.minutes,
            violation_rate: a.violations as f64 / minutes,
            accumulated_lag_min: a.lag_sum_min,
            downtime_min: a.downtime_ms as f64 / 60_000.0,
            gpu_hours: a.gpu_seconds / 3600.0,
            rescales: a.rescales,
            pods_lost: a.pods_lost,
            mean_lag_s: a.lag_sum_min * 60.0 / minutes,
            mean_partition_lag_s: a.mean_lag_sum_s / minutes,
            max_lag_s: a.max_lag_s,
            mean_workers: a.workers_sum / minutes,
            peak_workers: a.peak_workers,
            samples_arrived: arrived,
            samples_trained: a.trained,
            shuffled_samples: a.forwarded,
            shuffle_traffic_mb: a.forwarded * s.traffic.sample_bytes / 1e6,
            rejected_actions: self.rejected_actions,
            forecast_lead_min: lead,
            forecast_mape_pct: serde_json::Value::Object(mape),
            throughput_fit: self.throughput_fit.clone(),
            policy_report: self
                .autoscaler
                .as_ref()
                .map_or(serde_json::Value::Null, |a| a.report()),
            events: self.events,
        }
    }
}

impl OnlineJob {
    /// The job's row of `jobs.csv`, in its columns ([`crate::metrics::JOBS_HEADER`]): status
    /// `online`, from its start to its end (empty while it runs), its last target and its pod
    /// request as the configuration, its lost pods and rescales; the batch-only columns
    /// (steps, JCT, utilisation, model sizes, parameters, `managed`) are empty.
    pub fn jobs_row(&self) -> String {
        let end = self
            .ended_at
            .map_or_else(String::new, |t| format!("{:.3}", t.as_secs_f64()));
        let start = self.start.as_secs_f64();
        let w = self.spec.worker.request();
        let initial = self.spec.job.initial_workers;
        let fields: [String; 43] = [
            self.id.to_string(),
            "online".into(),
            "online".into(),
            self.spec.submit_s.to_string(),
            format!("{start:.3}"),
            end,
            "online".into(),
            String::new(),
            self.target.to_string(),
            String::new(),
            w.cpu_cores().to_string(),
            w.mem_mb.to_string(),
            w.gpu.to_string(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            "0".into(),
            self.acc.pods_lost.to_string(),
            "0".into(),
            "0".into(),
            "0".into(),
            self.acc.rescales.to_string(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            (w.cpu_cores() * f64::from(initial)).to_string(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            "0".into(),
            "0".into(),
            initial.to_string(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ];
        fields.join(",") + "\n"
    }
}

/// Held-out errors of Kale's model (Eq. 5 or 6) and Ernest's on the offline profile.
fn throughput_fit(mode: TrainMode, prof: &[ProfilePoint], repeats: u32) -> serde_json::Value {
    let (_, kale) = fit_and_score(FitForm::kale(mode), prof, repeats);
    let (_, ernest) = fit_and_score(FitForm::Ernest, prof, repeats);
    serde_json::json!({ "kale": kale, "ernest": ernest })
}
