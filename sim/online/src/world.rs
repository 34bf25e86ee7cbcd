//! The online world: one streaming job on a dedicated GPU cluster, driven by
//! `dlsim_engine`.
//!
//! Events (a closed enum, handled in [`OnlineWorld::handle`]):
//! * `Tick` every `step_s`: advance the fluid stream, scrape pod metrics; at each minute
//!   boundary record the observed rate, sample the lag and write a timeline row, then switch
//!   to the next minute's arrival rate; at each policy interval ask the policy.
//! * `PodLoaded` at the exact time a pod finishes loading its model.
//!
//! Every event first advances the stream to its time, so rates, the consuming set and the
//! pause state are constant over each advanced interval.

use crate::metrics::Accumulator;
use crate::pods::Pods;
use crate::policy::{OnlinePolicy, OnlineView};
use crate::scenario::OnlineScenario;
use crate::stream::{ShuffleConfig, Stream};
use crate::throughput::{ProfilePoint, Truth};
use crate::traffic::Traffic;
use dlsim_engine::{EventQueue, SimRng, SimTime, World};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Tick,
    PodLoaded { pod: u64 },
}

pub struct OnlineWorld {
    sc: OnlineScenario,
    pub truth: Truth,
    pub traffic: Traffic,
    pub stream: Stream,
    pub pods: Pods,
    policy: Box<dyn OnlinePolicy>,
    shuffle: Option<ShuffleConfig>,
    pub target: u32,
    pub profile: Vec<ProfilePoint>,
    noise: SimRng,
    step: SimTime,
    horizon: SimTime,
    policy_every_ms: u64,
    last: SimTime,
    minute_arrivals: f64,
    pub observed: Vec<f64>,
    pub acc: Accumulator,
    pub rejected_actions: u64,
    /// Pods to wake when loaded, from the last decision.
    pending_wakes: Vec<(u64, SimTime)>,
}

impl OnlineWorld {
    pub fn new(
        sc: OnlineScenario,
        traffic: Traffic,
        truth: Truth,
        profile: Vec<ProfilePoint>,
        policy: Box<dyn OnlinePolicy>,
        noise: SimRng,
    ) -> Self {
        let f = &sc.file;
        let step = SimTime::from_secs(f.step_s);
        let interval = policy.interval().as_ms();
        // The policy runs at the first tick at or after each multiple of its interval.
        let policy_every_ms = interval.div_ceil(step.as_ms()).max(1) * step.as_ms();
        let horizon = SimTime::from_secs(sc.horizon_s());
        let pods = Pods::deployed(f.job.initial_workers, &f.rescale);
        OnlineWorld {
            stream: Stream::new(traffic.shares.len()),
            shuffle: policy.shuffle(),
            target: f.job.initial_workers,
            acc: Accumulator::new(f.slo_lag_s),
            sc,
            truth,
            traffic,
            pods,
            policy,
            profile,
            noise,
            step,
            horizon,
            policy_every_ms,
            last: SimTime::ZERO,
            minute_arrivals: 0.0,
            observed: Vec::new(),
            rejected_actions: 0,
            pending_wakes: Vec::new(),
        }
    }

    pub fn policy(&self) -> &dyn OnlinePolicy {
        self.policy.as_ref()
    }

    fn minute(t: SimTime) -> usize {
        (t.as_ms() / 60_000) as usize
    }

    /// Advances the stream over `[last, now)`.
    fn advance(&mut self, now: SimTime) {
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
        let out = self
            .stream
            .advance(t0.as_ms(), t1.as_ms(), &rates, w, cap, self.shuffle);
        let window_ms = self.sc.file.observation.metric_window_s * 1000;
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
        self.acc.interval(dt_s, stalled_ms, self.pods.count(), &out);
        self.last = now;
    }

    fn view_and_decide(&mut self, now: SimTime) {
        let window = SimTime::from_secs(self.sc.file.observation.metric_window_s);
        let sigma = self.sc.file.observation.metric_noise_sigma;
        let pods = self.pods.observe(now, window, sigma, &mut self.noise);
        let view = OnlineView {
            now,
            target: self.target,
            pods: &pods,
            minute_rates: &self.observed,
            backlog_samples: self.stream.backlog(),
            lag_s: self.stream.max_lag_ms(now.as_ms()) / 1000.0,
            rescaling: self.pods.rescaling(now),
            mode: self.sc.file.job.mode,
            profile: &self.profile,
            profile_repeats: self.sc.file.job.profile_repeats,
            max_workers: self.sc.max_workers(),
            run_minutes: (self.horizon.as_ms() / 60_000) as usize,
            rescale_s: self.sc.file.rescale.total_s(),
            slo_lag_s: self.sc.file.slo_lag_s,
            oracle: &self.traffic.minute_sps,
        };
        let Some(want) = self.policy.decide(&view) else {
            return;
        };
        let max = self.sc.max_workers();
        let desired = want.clamp(1, max);
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
        self.pending_wakes = self.pods.rescale(now, desired);
    }
}

impl World for OnlineWorld {
    type Event = Event;

    fn handle(&mut self, now: SimTime, event: Event, queue: &mut EventQueue<Event>) {
        self.advance(now);
        match event {
            Event::PodLoaded { pod } => self.pods.loaded(now, pod),
            Event::Tick => {
                if now.as_ms().is_multiple_of(60_000) && now > SimTime::ZERO {
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
                if now.as_ms().is_multiple_of(self.policy_every_ms) {
                    self.view_and_decide(now);
                    for (pod, at) in std::mem::take(&mut self.pending_wakes) {
                        queue.push(at, Event::PodLoaded { pod });
                    }
                }
                let next = now + self.step;
                if next <= self.horizon {
                    queue.push(next, Event::Tick);
                }
            }
        }
    }

    fn done(&self, now: SimTime) -> bool {
        now > self.horizon
    }
}
