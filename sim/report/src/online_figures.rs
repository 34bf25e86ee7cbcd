//! The report's online figures, drawn when a run has online jobs: lag over time, workers
//! against load, and SLO violation minutes, one colour per policy.
//!
//! The first two read `online.csv`. A run with several online jobs is drawn as one stream:
//! at each minute the lag, arrival rate and worker pods of its jobs are summed (the summed
//! lag is what the run's accumulated lag adds up; one panel per job would need panels the
//! plotting crate does not draw). Seeds are bands, as in the batch figures:
//! - **Lag over time**: the highest summed lag of each 10-minute window (so a short spike
//!   over the SLO stays visible), in minutes against hours; line: mean over seeds, band:
//!   lowest to highest seed.
//! - **Workers vs load**: the minutes binned by summed arrival rate (20 equal bins over the
//!   range of every run), and per bin the mean worker pods; line: mean over seeds of each
//!   seed's bin mean, band: lowest to highest seed. This reads better than both over time,
//!   which on a diurnal load is two similar waves whose gap is hard to judge: here a policy
//!   that tracks the load is a rising curve, one that over-provisions sits above the others,
//!   and one that lags in the rise is flat where the load climbs.
//! - **Violation minutes**: bars, minutes with lag over the job's SLO (`violation_rate x
//!   minutes` of `summary.json`, so the same numbers as the Table 3 table), mean per run, one
//!   bar per policy (per policy and job when a run has several jobs).

use crate::aggregate::{floats, policies, Run};
use crate::figures::{chart, mean_band, runs_of, spec, spread, Spec};
use crate::online::job_names;
use dlsim_plot::{Body, Legend, Mark, Series};
use std::collections::BTreeMap;

/// Width of the windows of the lag figure (minutes).
const LAG_WINDOW_MIN: u64 = 10;
/// Bins of arrival rate in the workers-vs-load figure.
const LOAD_BINS: usize = 20;

/// The online figures, in order (none when no run has `online.csv`).
pub fn specs(runs: &[Run]) -> anyhow::Result<Vec<Spec>> {
    if runs.iter().all(|r| r.online.is_none()) {
        return Ok(Vec::new());
    }
    Ok(vec![lag(runs)?, workers(runs)?, violations(runs)])
}

/// One run's online jobs summed per minute.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Minute {
    arrival_sps: f64,
    pods: f64,
    lag_s: f64,
}

/// A run's online jobs summed per minute, by minute.
type Minutes = BTreeMap<u64, Minute>;

/// The minutes of `run`'s `online.csv`, its jobs summed (empty without the file).
fn minutes(run: &Run) -> anyhow::Result<Minutes> {
    let mut out = Minutes::new();
    let Some(df) = &run.online else {
        return Ok(out);
    };
    let minute = floats(df, "minute")?;
    let arrival = floats(df, "arrival_sps")?;
    let pods = floats(df, "pods")?;
    let lag = floats(df, "lag_s")?;
    for i in 0..minute
        .len()
        .min(arrival.len())
        .min(pods.len())
        .min(lag.len())
    {
        let m = out.entry(minute[i] as u64).or_default();
        m.arrival_sps += arrival[i];
        m.pods += pods[i];
        m.lag_s += lag[i];
    }
    Ok(out)
}

/// Per policy, each run's summed minutes.
fn per_policy(runs: &[Run]) -> anyhow::Result<Vec<(String, Vec<Minutes>)>> {
    let mut out = Vec::new();
    for policy in policies(runs) {
        let seeds = runs_of(runs, &policy)
            .filter(|r| r.online.is_some())
            .map(minutes)
            .collect::<anyhow::Result<Vec<_>>>()?;
        out.push((policy, seeds));
    }
    Ok(out)
}

fn several_jobs(runs: &[Run]) -> bool {
    runs.iter().any(|r| r.online_jobs().len() > 1)
}

/// Lag over time: the highest summed lag of each window, mean and band over seeds.
fn lag(runs: &[Run]) -> anyhow::Result<Spec> {
    let mut series = Vec::new();
    for (i, (policy, seeds)) in per_policy(runs)?.into_iter().enumerate() {
        let windows: Vec<Vec<(u64, f64)>> = seeds
            .iter()
            .map(|minutes| {
                let mut max: BTreeMap<u64, f64> = BTreeMap::new();
                for (m, v) in minutes {
                    let w = max.entry(m / LAG_WINDOW_MIN).or_default();
                    *w = w.max(v.lag_s / 60.0);
                }
                max.into_iter()
                    .map(|(w, lag)| (w * LAG_WINDOW_MIN * 60, lag))
                    .collect()
            })
            .collect();
        let (points, band) = mean_band(&windows);
        series.push(Series {
            name: format!("{policy} ({} seeds)", seeds.len()),
            points,
            band,
            colour: Some(i),
            mark: Mark::Line,
        });
    }
    let summed = if several_jobs(runs) {
        " summed over a run's online jobs"
    } else {
        ""
    };
    Ok(spec(
        "online_lag",
        format!(
            "Online lag over time: the highest lag{summed} in each {LAG_WINDOW_MIN}-minute window (line: mean over seeds, band: lowest to highest seed)"
        ),
        chart("Online lag over time", "time (hours)", "lag (minutes)"),
        Body::Series(series),
    ))
}

/// Workers against load: per arrival-rate bin, the mean worker pods; mean and band over
/// seeds.
fn workers(runs: &[Run]) -> anyhow::Result<Spec> {
    let per_policy = per_policy(runs)?;
    let all = per_policy
        .iter()
        .flat_map(|(_, s)| s.iter().flat_map(|m| m.values().map(|v| v.arrival_sps)));
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
        (l.min(v), h.max(v))
    });
    let width = if hi > lo {
        (hi - lo) / LOAD_BINS as f64
    } else {
        1.0
    };
    let bin = |x: f64| (((x - lo) / width) as usize).min(LOAD_BINS - 1);
    let mut series = Vec::new();
    for (i, (policy, seeds)) in per_policy.iter().enumerate() {
        // Each seed's mean pods per bin (None for an empty bin).
        let means: Vec<Vec<Option<f64>>> = seeds
            .iter()
            .map(|minutes| {
                let mut sums = vec![(0.0, 0usize); LOAD_BINS];
                for v in minutes.values() {
                    let s = &mut sums[bin(v.arrival_sps)];
                    s.0 += v.pods;
                    s.1 += 1;
                }
                sums.iter()
                    .map(|&(sum, n)| (n > 0).then(|| sum / n as f64))
                    .collect()
            })
            .collect();
        let mut s = Series {
            name: format!("{policy} ({} seeds)", seeds.len()),
            colour: Some(i),
            mark: Mark::Line,
            ..Series::default()
        };
        for b in 0..LOAD_BINS {
            let values: Vec<f64> = means.iter().filter_map(|m| m[b]).collect();
            if values.is_empty() {
                continue;
            }
            let x = lo + width * (b as f64 + 0.5);
            let (mean, low, high) = spread(&values);
            s.points.push((x, mean));
            s.band.push((x, low, high));
        }
        series.push(s);
    }
    let summed = if several_jobs(runs) {
        " (a run's online jobs summed per minute)"
    } else {
        ""
    };
    Ok(spec(
        "online_workers",
        format!(
            "Workers vs load{summed}: the minutes binned by arrival rate ({LOAD_BINS} bins), mean worker pods per bin (line: mean over seeds, band: lowest to highest seed)"
        ),
        dlsim_plot::Chart {
            legend: Legend::UpperLeft,
            ..chart(
                "Worker pods against load",
                "arrival rate (samples/s)",
                "worker pods",
            )
        },
        Body::Series(series),
    ))
}

/// Minutes with lag over the SLO, mean per run, per policy (and job, with several).
fn violations(runs: &[Run]) -> Spec {
    let jobs = job_names(runs);
    let mut bars = Vec::new();
    for policy in policies(runs) {
        let mine: Vec<&Run> = runs_of(runs, &policy).collect();
        for job in &jobs {
            let per_run: Vec<f64> = mine
                .iter()
                .filter_map(|r| r.online_jobs().iter().find(|j| j["job"] == **job))
                .map(|j| {
                    j["violation_rate"].as_f64().unwrap_or(f64::NAN)
                        * j["minutes"].as_f64().unwrap_or(f64::NAN)
                })
                .collect();
            if per_run.is_empty() {
                continue;
            }
            let label = if jobs.len() > 1 {
                format!("{policy}: {job}")
            } else {
                policy.clone()
            };
            bars.push((label, spread(&per_run).0));
        }
    }
    spec(
        "online_violations",
        "SLO violation minutes: minutes whose lag exceeded the job's SLO, mean per run".into(),
        chart(
            "Minutes over the lag SLO",
            if jobs.len() > 1 {
                "policy: online job"
            } else {
                "policy"
            },
            "violation minutes per run",
        ),
        Body::Bars(bars),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::series;
    use dlsim_plot::Series;
    use polars::prelude::*;
    use std::path::PathBuf;

    /// A run of `policy` with two online jobs over two days: a diurnal load, workers that
    /// follow it `behind` minutes late, and lag that grows while they are short.
    fn run(policy: &str, seed: u64, behind: usize) -> Run {
        let minutes = 2 * 1440;
        let (mut job, mut minute, mut arrival, mut pods, mut lag) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let load =
            |m: usize| 50_000.0 + 40_000.0 * (m as f64 / 1440.0 * std::f64::consts::TAU).sin();
        for name in ["a", "b"] {
            for m in 0..minutes {
                job.push(name);
                minute.push(m as i64);
                arrival.push(load(m) * (1.0 + seed as f64 / 10.0));
                let seen = load(m.saturating_sub(behind));
                pods.push((seen / 8_000.0).ceil() as i64);
                lag.push(((load(m) - seen).max(0.0) / 20.0).min(3_000.0));
            }
        }
        let online = df!(
            "job" => job, "minute" => minute, "arrival_sps" => arrival,
            "pods" => pods, "lag_s" => lag,
        )
        .unwrap();
        let entries: Vec<serde_json::Value> = ["a", "b"]
            .iter()
            .map(|j| {
                serde_json::json!({"job": j, "minutes": minutes,
                    "violation_rate": behind as f64 / 1000.0 + seed as f64 / 100.0})
            })
            .collect();
        Run {
            dir: PathBuf::from(format!("{policy}-{seed}")),
            policy: policy.into(),
            seed,
            summary: serde_json::json!({ "online_jobs": entries }),
            jobs: DataFrame::empty(),
            timeline: DataFrame::empty(),
            observations: None,
            online: Some(online),
        }
    }

    fn runs() -> Vec<Run> {
        let mut out = Vec::new();
        for seed in 0..3 {
            out.push(run("hpa", seed, 60));
            out.push(run("kale", seed, 10));
        }
        out
    }

    #[test]
    fn every_online_figure_is_drawn_inside_its_axes() {
        let specs = specs(&runs()).unwrap();
        let stems: Vec<&str> = specs.iter().map(|s| s.stem.as_str()).collect();
        assert_eq!(stems, ["online_lag", "online_workers", "online_violations"]);
        for s in &specs {
            let strays = s.figure.stray_pixels().unwrap();
            assert!(strays.inside > 1_000, "{}: {strays:?}", s.stem);
            assert_eq!(strays.outside, 0, "{}: drawn outside its axes", s.stem);
        }
        assert!(specs[0].caption.contains("summed over a run's online jobs"));
    }

    #[test]
    fn lag_is_the_window_peak_of_the_summed_jobs_with_a_band_over_seeds() {
        let runs = runs();
        let spec = lag(&runs).unwrap();
        let s = series(&spec);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].points.len(), 2 * 1440 / LAG_WINDOW_MIN as usize);
        // The first window of hpa, seed 0: the highest of its 10 minutes, two jobs summed.
        let m = minutes(&runs[0]).unwrap();
        let peak = (0..10).map(|i| m[&i].lag_s).fold(0.0, f64::max) / 60.0;
        assert!(peak > 0.0);
        assert!(s[0].band[0].1 <= peak && peak <= s[0].band[0].2);
        // The later policy lags more.
        let total = |s: &Series| s.points.iter().map(|p| p.1).sum::<f64>();
        assert!(total(&s[0]) > total(&s[1]));
    }

    #[test]
    fn workers_rise_with_load_and_violations_come_from_the_summaries() {
        let runs = runs();
        let spec = workers(&runs).unwrap();
        let s = series(&spec);
        for one in s {
            assert!(one.points.len() >= LOAD_BINS / 2, "{}", one.points.len());
            assert!(one.points.first().unwrap().1 < one.points.last().unwrap().1);
            assert!(one
                .points
                .iter()
                .zip(&one.band)
                .all(|(p, b)| b.1 <= p.1 && p.1 <= b.2));
        }
        let Body::Bars(bars) = violations(&runs).figure.body else {
            panic!("bars")
        };
        assert_eq!(bars.len(), 4, "two policies x two jobs");
        assert_eq!(bars[0].0, "hpa: a");
        // hpa: rates 0.06, 0.07, 0.08 of 2880 minutes, mean 0.07 x 2880.
        assert!((bars[0].1 - 0.07 * 2880.0).abs() < 1e-9, "{bars:?}");
    }
}
