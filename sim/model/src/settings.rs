//! Range checks of a scenario file's settings against the documented limits
//! (`dlsim_traces::limits`), and the time cap every run keeps.
//!
//! `Scenario::load` calls [`check`] once; afterwards the world may assume every duration
//! it derives is finite and every size fits memory (issue #21).

use crate::scenario::ScenarioFile;
use dlsim_traces::limits::*;

/// The latest simulated time a run of a scenario with this timeline interval reaches, in
/// seconds: [`MAX_TIME_S`], or [`MAX_TIMELINE_SAMPLES`] timeline intervals if sooner. A
/// run still going then ends there as at a horizon; an arrival or a horizon past it is
/// refused on load.
pub fn time_cap_s(timeline_interval_s: u64) -> u64 {
    let by_samples = timeline_interval_s.saturating_mul(MAX_TIMELINE_SAMPLES);
    by_samples.min(MAX_TIME_S as u64)
}

/// Checks every numeric setting of `f` that the scenario loader does not check itself.
/// Returns the dotted field and why it is out of range.
pub fn check(f: &ScenarioFile) -> Result<(), (String, String)> {
    let c = |field: &str, r: Result<(), String>| r.map_err(|m| (field.to_string(), m));
    c(
        "timeline_interval_s",
        in_range(f.timeline_interval_s as f64, 1.0, MAX_TIME_S),
    )?;
    if let Some(h) = f.horizon_s {
        let cap = time_cap_s(f.timeline_interval_s);
        c("horizon_s", at_most(h, cap)).map_err(|(k, m)| {
            (
                k,
                format!("{m} (the run limit: {MAX_TIMELINE_SAMPLES} timeline intervals or {MAX_TIME_S:e} s)"),
            )
        })?;
    }
    c(
        "observation.history_len",
        in_range(
            f.observation.history_len as f64,
            1.0,
            MAX_HISTORY_LEN as f64,
        ),
    )?;
    c(
        "observation.incident_hold_s",
        in_range(f.observation.incident_hold_s, 0.0, MAX_STALL_S),
    )?;
    c(
        "pods.start_base_s",
        in_range(f.pods.start_base_s, 0.0, MAX_STALL_S),
    )?;
    c(
        "pods.start_per_core_s",
        in_range(f.pods.start_per_core_s, 0.0, MAX_STALL_S / 64.0),
    )?;
    let t = &f.truth;
    c(
        "truth.job_variation_sigma",
        in_range(t.job_variation_sigma, 0.0, MAX_SIGMA),
    )?;
    c(
        "truth.bandwidth_mb_s",
        in_range(t.bandwidth_mb_s, MIN_BANDWIDTH_MB_S, MAX_BANDWIDTH_MB_S),
    )?;
    c(
        "truth.gpu_core_equiv",
        in_range(t.gpu_core_equiv, 1e-3, MAX_CORES),
    )?;
    c(
        "truth.calibration_time_scale",
        in_range(t.calibration_time_scale, 1e-6, 1e6),
    )?;
    c(
        "truth.worker_runtime_cores",
        in_range(t.worker_runtime_cores, 0.0, 16.0),
    )?;
    c(
        "truth.ps_lookup_threads",
        in_range(t.ps_lookup_threads, 1.0, MAX_CORES),
    )?;
    for (kind, p) in &t.params {
        for (name, v) in p.named() {
            c(
                &format!("truth.params.{kind}.{name}"),
                in_range(v, 0.0, MAX_COEFFICIENT),
            )?;
        }
        // With no intercept a configuration can have a zero iteration time, hence no
        // throughput at all (`ThroughputParams::throughput`), and its job never ends.
        let beta_sum = p.b_grad + p.b_upd + p.b_sync + p.b_emb;
        if beta_sum.is_nan() || beta_sum <= 0.0 {
            return Err((
                format!("truth.params.{kind}.b_grad"),
                "the intercepts b_grad + b_upd + b_sync + b_emb must be > 0".into(),
            ));
        }
    }
    if let Some(g) = &f.generate {
        g.validate().map_err(|(k, m)| (k.to_string(), m))?;
    }
    Ok(())
}
