//! One online replay end to end: build the hidden truth and traffic from the scenario seed,
//! profile the job offline, run the world under a policy, and assemble the summary.

use crate::forecast;
use crate::metrics::OnlineSummary;
use crate::policy::OnlinePolicy;
use crate::rates::read_series;
use crate::scenario::{OnlineScenario, TrainMode};
use crate::throughput::{fit_and_score, profile, FitForm, Truth};
use crate::traffic::Traffic;
use crate::world::{Event, OnlineWorld};
use dlsim_engine::{EventQueue, RngStreams, SimTime};
use dlsim_traces::InputError;

/// Outputs of one replay.
pub struct OnlineOutput {
    pub summary: OnlineSummary,
    pub timeline_csv: String,
}

/// Reads the traffic shape file, if the scenario names one.
pub fn traffic_for(sc: &OnlineScenario, streams: &RngStreams) -> Result<Traffic, InputError> {
    let t = &sc.file.traffic;
    let shape = match &t.file {
        Some(p) => Some(read_series(&sc.resolve(p))?),
        None => None,
    };
    let minutes = (sc.horizon_s() / 60) as usize;
    Ok(Traffic::build(t, shape.as_ref(), minutes, streams))
}

/// Runs `sc` under `policy`; `traffic` comes from [`traffic_for`] with the same seed.
pub fn run(sc: &OnlineScenario, traffic: Traffic, policy: Box<dyn OnlinePolicy>) -> OnlineOutput {
    run_with_progress(sc, traffic, policy, &mut |_| {})
}

/// Events between two progress reports (a day of 15 s steps is ~6k events).
const PROGRESS_EVERY: u64 = 1 << 10;

/// [`run`], reporting progress (simulated time out of the horizon) every 1,024 events; the
/// report only reads the clock, so outputs are the same as [`run`]'s.
pub fn run_with_progress(
    sc: &OnlineScenario,
    traffic: Traffic,
    policy: Box<dyn OnlinePolicy>,
    progress: &mut dyn FnMut(dlsim_model::Progress),
) -> OnlineOutput {
    let f = &sc.file;
    let streams = RngStreams::new(f.seed);
    let truth = Truth::perturbed(
        f.job.mode,
        &f.job.theta,
        f.job.wp_ratio,
        f.job.truth_sigma,
        &mut streams.stream("job-truth"),
    );
    let workers: Vec<u32> = f
        .job
        .profile_workers
        .iter()
        .copied()
        .filter(|&w| w <= sc.max_workers())
        .collect();
    let prof = profile(
        &truth,
        &workers,
        f.job.profile_repeats,
        f.observation.profile_noise_sigma,
        &mut streams.stream("profile"),
    );
    let fit = throughput_fit(f.job.mode, &prof, f.job.profile_repeats);
    let mut world = OnlineWorld::new(
        sc.clone(),
        traffic,
        truth,
        prof,
        policy,
        streams.stream("observation-noise"),
    );
    let mut queue = EventQueue::new();
    queue.push(SimTime::ZERO, Event::Tick);
    let horizon = Some(SimTime::from_secs(sc.horizon_s()));
    let (events, _) =
        dlsim_engine::run_observed(&mut world, &mut queue, PROGRESS_EVERY, |_, now, events| {
            progress(dlsim_model::Progress {
                now,
                events,
                jobs_ended: 0,
                jobs_total: 1,
                horizon,
            })
        });
    let lead = (f.rescale.total_s() / 60.0).ceil() as usize;
    let mape: serde_json::Map<String, serde_json::Value> =
        forecast::evaluate(&world.observed, lead, 5)
            .into_iter()
            // A run too short to evaluate a forecaster (one day of history) leaves it out
            // rather than writing a null (issue #21: no null in a result).
            .filter(|(_, v)| v.is_finite())
            .map(|(k, v)| (k.as_str().to_string(), finite(v)))
            .collect();
    let a = &world.acc;
    let minutes = a.minutes.max(1) as f64;
    let arrived: f64 = world.stream.parts.iter().map(|p| p.arrived).sum();
    let summary = OnlineSummary {
        kind: "online",
        scenario: f.name.clone(),
        policy: world.policy().name(),
        seed: f.seed,
        days: f.days,
        minutes: a.minutes,
        violation_rate: a.violations as f64 / minutes,
        accumulated_lag_min: a.lag_sum_min,
        downtime_min: a.downtime_ms as f64 / 60_000.0,
        gpu_hours: a.gpu_seconds / 3600.0,
        rescales: a.rescales,
        mean_lag_s: a.lag_sum_min * 60.0 / minutes,
        mean_partition_lag_s: a.mean_lag_sum_s / minutes,
        max_lag_s: a.max_lag_s,
        mean_workers: a.workers_sum / minutes,
        peak_workers: a.peak_workers,
        samples_arrived: arrived,
        samples_trained: a.trained,
        shuffled_samples: a.forwarded,
        shuffle_traffic_mb: a.forwarded * f.traffic.sample_bytes / 1e6,
        rejected_actions: world.rejected_actions,
        forecast_lead_min: lead,
        forecast_mape_pct: serde_json::Value::Object(mape),
        throughput_fit: fit,
        policy_report: world.policy().report(),
        events,
    };
    OnlineOutput {
        summary,
        timeline_csv: world.acc.timeline.clone(),
    }
}

fn finite(v: f64) -> serde_json::Value {
    if v.is_finite() {
        serde_json::json!(v)
    } else {
        serde_json::Value::Null
    }
}

/// Held-out errors of Kale's model (Eq. 5 or 6) and Ernest's on the offline profile.
fn throughput_fit(
    mode: TrainMode,
    prof: &[crate::throughput::ProfilePoint],
    repeats: u32,
) -> serde_json::Value {
    let (_, kale) = fit_and_score(FitForm::kale(mode), prof, repeats);
    let (_, ernest) = fit_and_score(FitForm::Ernest, prof, repeats);
    serde_json::json!({ "kale": kale, "ernest": ernest })
}
