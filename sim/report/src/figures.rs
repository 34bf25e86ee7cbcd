//! The report's figures, each a PNG and an SVG drawn by `dlsim-plot`: JCT CDF per policy,
//! cluster CPU use and allocation over time, throughput of selected jobs, and the failure
//! breakdown.
//!
//! Time series come from the first run of each policy (seeds differ only in noise); the
//! CDF pools every seed. Throughput uses `observations.csv` when a run traced it (samples/s
//! summed over the job's workers at each sampling instant); otherwise each selected job's
//! mean rate over its life (steps done / (end - start)), drawn as a flat segment.

use crate::aggregate::{completed_jobs, floats, policies, strings, Run};
use dlsim_plot::{bar_chart, line_chart, Chart, Series};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A written figure: its file stem, caption, and PNG and SVG paths.
pub struct Figure {
    pub stem: String,
    pub caption: String,
    pub files: [PathBuf; 2],
}

/// Draws every figure into `dir`.
pub fn draw_all(runs: &[Run], baseline: &str, dir: &Path) -> anyhow::Result<Vec<Figure>> {
    let mut out = vec![
        jct_cdf(runs, dir)?,
        timeline_figure(runs, dir, "utilisation", "cpu_used", "CPU cores in use")?,
        timeline_figure(runs, dir, "allocation", "cpu_alloc", "CPU cores allocated")?,
    ];
    out.push(throughput(runs, baseline, dir)?);
    out.push(failures(runs, dir)?);
    Ok(out)
}

fn chart(title: &str, x: &str, y: &str) -> Chart {
    Chart {
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
    }
}

fn figure(stem: &str, caption: String, files: [PathBuf; 2]) -> Figure {
    Figure {
        stem: stem.into(),
        caption,
        files,
    }
}

/// Empirical CDF of JCT (hours) per policy, as a step line. The x axis stops at the
/// largest policy's 99th percentile so a few very long jobs do not squash the body.
fn jct_cdf(runs: &[Run], dir: &Path) -> anyhow::Result<Figure> {
    let mut sorted = Vec::new();
    for policy in policies(runs) {
        let jobs = completed_jobs(runs, &policy)?;
        let mut jct: Vec<f64> = floats(&jobs, "jct_s")?.iter().map(|s| s / 3600.0).collect();
        jct.sort_by(f64::total_cmp);
        sorted.push((policy, jct));
    }
    let x_max = sorted
        .iter()
        .map(|(_, j)| dlsim_model::metrics::quantile(j, 0.99))
        .fold(0.0, f64::max);
    let mut series = Vec::new();
    for (policy, jct) in sorted {
        let n = jct.len() as f64;
        let mut points = vec![(0.0, 0.0)];
        for (i, &x) in jct.iter().enumerate() {
            if x > x_max {
                points.push((x_max, i as f64 / n));
                break;
            }
            points.push((x, i as f64 / n));
            points.push((x, (i + 1) as f64 / n));
        }
        series.push(Series {
            name: policy,
            points,
        });
    }
    let files = line_chart(
        &dir.join("jct_cdf"),
        &chart(
            "JCT CDF per policy (every seed)",
            "JCT (hours)",
            "fraction of completed jobs",
        ),
        &series,
    )?;
    Ok(figure(
        "jct_cdf",
        format!("JCT CDF per policy (completed jobs of every seed; x axis cut at {x_max:.1} h, the largest 99th percentile)"),
        files,
    ))
}

/// The first run of `policy`, one of [`policies`]`(runs)`.
fn first_run<'a>(runs: &'a [Run], policy: &str) -> &'a Run {
    runs.iter()
        .find(|r| r.policy == policy)
        .expect("policy has a run")
}

/// One timeline column over time (hours), first run of each policy.
fn timeline_figure(
    runs: &[Run],
    dir: &Path,
    stem: &str,
    column: &str,
    what: &str,
) -> anyhow::Result<Figure> {
    let mut series = Vec::new();
    for policy in policies(runs) {
        let run = first_run(runs, &policy);
        let t = floats(&run.timeline, "time_s")?;
        let y = floats(&run.timeline, column)?;
        series.push(Series {
            name: format!("{policy} (seed {})", run.seed),
            points: t.iter().map(|t| t / 3600.0).zip(y).collect(),
        });
    }
    let title = format!("{what} over time");
    let files = line_chart(
        &dir.join(stem),
        &chart(&title, "time (hours)", what),
        &series,
    )?;
    Ok(figure(
        stem,
        format!("Cluster {what} over time (first seed of each policy)"),
        files,
    ))
}

/// Up to three completed jobs of the baseline's first run: those at the 25th, 50th and
/// 90th percentile of its JCT, so short, typical and long jobs are shown.
fn selected_jobs(runs: &[Run], baseline: &str) -> anyhow::Result<Vec<i64>> {
    let run = runs
        .iter()
        .find(|r| r.policy == baseline)
        .unwrap_or(&runs[0]);
    let ids = floats(&run.jobs, "id")?;
    let status = strings(&run.jobs, "status")?;
    let jct = strings(&run.jobs, "jct_s")?;
    let mut done: Vec<(f64, i64)> = ids
        .iter()
        .zip(&status)
        .zip(&jct)
        .filter(|((_, s), _)| *s == "completed")
        .filter_map(|((id, _), j)| j.parse::<f64>().ok().map(|j| (j, *id as i64)))
        .collect();
    done.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut out = Vec::new();
    for q in [0.25, 0.5, 0.9] {
        if let Some(&(_, id)) = done.get(((done.len() as f64 - 1.0) * q).round() as usize) {
            if !out.contains(&id) {
                out.push(id);
            }
        }
    }
    Ok(out)
}

fn throughput(runs: &[Run], baseline: &str, dir: &Path) -> anyhow::Result<Figure> {
    let jobs = selected_jobs(runs, baseline)?;
    let traced = runs.iter().all(|r| r.observations.is_some());
    let mut series = Vec::new();
    for policy in policies(runs) {
        let run = first_run(runs, &policy);
        let obs = match &run.observations {
            Some(df) if traced => Some(Observations::of(df)?),
            _ => None,
        };
        for &job in &jobs {
            let points = if let Some(obs) = &obs {
                obs.rate(job)
            } else {
                mean_rate(run, job)?
            };
            if !points.is_empty() {
                series.push(Series {
                    name: format!("{policy} job {job}"),
                    points,
                });
            }
        }
    }
    let (y, caption) = if traced {
        (
            "samples/s",
            "Throughput of selected jobs (observed samples/s summed over workers)",
        )
    } else {
        (
            "steps/s (mean over the job's life)",
            "Throughput of selected jobs: mean steps/s from start to end (replay with observations traced for the per-interval series)",
        )
    };
    let files = line_chart(
        &dir.join("throughput"),
        &chart("Throughput of selected jobs", "time (hours)", y),
        &series,
    )?;
    Ok(figure("throughput", caption.into(), files))
}

fn mean_rate(run: &Run, job: i64) -> anyhow::Result<Vec<(f64, f64)>> {
    let ids = floats(&run.jobs, "id")?;
    let Some(row) = ids.iter().position(|&id| id as i64 == job) else {
        return Ok(Vec::new());
    };
    let cell = |name: &str| -> anyhow::Result<Option<f64>> {
        Ok(strings(&run.jobs, name)?[row].parse::<f64>().ok())
    };
    let (Some(start), Some(end), Some(steps)) =
        (cell("start_s")?, cell("end_s")?, cell("steps_done")?)
    else {
        return Ok(Vec::new());
    };
    let rate = steps / (end - start).max(1e-9);
    Ok(vec![(start / 3600.0, rate), (end / 3600.0, rate)])
}

/// The columns of `observations.csv` the throughput figure reads, extracted once.
struct Observations {
    job: Vec<f64>,
    time: Vec<f64>,
    role: Vec<String>,
    rate: Vec<String>,
}

impl Observations {
    fn of(df: &polars::prelude::DataFrame) -> anyhow::Result<Observations> {
        Ok(Observations {
            job: floats(df, "job")?,
            time: floats(df, "time_s")?,
            role: strings(df, "role")?,
            rate: strings(df, "samples_per_s")?,
        })
    }

    /// Samples/s of `job` summed over its workers at each sampling instant.
    fn rate(&self, job: i64) -> Vec<(f64, f64)> {
        let mut by_time: BTreeMap<u64, f64> = BTreeMap::new();
        for i in 0..self.job.len() {
            if self.job[i] as i64 == job && self.role[i] == "worker" {
                if let Ok(r) = self.rate[i].parse::<f64>() {
                    *by_time.entry(self.time[i] as u64).or_default() += r;
                }
            }
        }
        by_time
            .into_iter()
            .map(|(t, r)| (t as f64 / 3600.0, r))
            .collect()
    }
}

fn failures(runs: &[Run], dir: &Path) -> anyhow::Result<Figure> {
    let mut bars = Vec::new();
    for policy in policies(runs) {
        let mut by_reason: BTreeMap<String, f64> = BTreeMap::new();
        let mine: Vec<&Run> = runs.iter().filter(|r| r.policy == policy).collect();
        for r in &mine {
            let status = strings(&r.jobs, "status")?;
            let reason = strings(&r.jobs, "fail_reason")?;
            for (s, why) in status.iter().zip(reason) {
                if s == "failed" {
                    *by_reason.entry(why).or_default() += 1.0 / mine.len() as f64;
                }
            }
        }
        if by_reason.is_empty() {
            bars.push((format!("{policy}: none"), 0.0));
        }
        bars.extend(
            by_reason
                .into_iter()
                .map(|(why, n)| (format!("{policy}: {why}"), n)),
        );
    }
    let files = bar_chart(
        &dir.join("failures"),
        &chart(
            "Failed jobs by reason",
            "policy: reason",
            "failed jobs per run",
        ),
        &bars,
    )?;
    Ok(figure(
        "failures",
        "Failure breakdown: failed jobs by reason, mean per run".into(),
        files,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;

    #[test]
    fn observed_throughput_sums_worker_samples_per_instant() {
        let obs = df!(
            "time_s" => [300i64, 300, 300, 600, 600],
            "job" => [5i64, 5, 5, 5, 6],
            "role" => ["worker", "worker", "ps", "worker", "worker"],
            "samples_per_s" => [Some(1.5), Some(2.0), Some(9.0), None, Some(4.0)],
        )
        .unwrap();
        let obs = Observations::of(&obs).unwrap();
        assert_eq!(obs.rate(5), [(300.0 / 3600.0, 3.5)]);
        assert_eq!(obs.rate(6), [(600.0 / 3600.0, 4.0)]);
    }
}
