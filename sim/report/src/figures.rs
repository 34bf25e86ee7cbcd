//! The report's figures, each a 2x PNG, an SVG and a PDF drawn by `dlsim-plot`: JCT CDF per
//! policy, cluster CPU use and allocation over time, throughput of selected jobs, and the
//! failure breakdown.
//!
//! Seeds are shown as bands, not hidden: the JCT CDF is the mean of each seed's empirical
//! CDF on a log-spaced grid (log x axis, since JCTs span minutes to days), with a band
//! from the lowest to the highest seed; utilisation over time is the mean over seeds with
//! the same min-max band (a run that has ended counts as an empty cluster). Throughput is
//! what the profiler saw (`observations.csv`, replays with `--trace-observations`):
//! samples/s summed over a job's workers at each sampling instant, held until the next
//! (a step function) and 0 from the job's end, one colour per policy. Without traced
//! observations there is no throughput over time to draw, and the figure is left out.
//!
//! A figure the runs hold no data for is left out with a one-line note rather than drawn
//! empty: without batch jobs (an online-only run) the JCT CDF, throughput and failure
//! figures; a utilisation or allocation figure whose timeline column is 0 in every run
//! (online pods allocate CPU but report no CPU use there). The online figures are in
//! `online_figures`.
//!
//! Each figure is built by a pure function of the runs ([`specs`]) and then written, so
//! the tests render exactly what the report writes.

use crate::aggregate::{floats, policies, strings, Run};
use dlsim_plot::{Body, Chart, Legend, Mark, Scale, Series};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A written figure: its file stem, caption, PNG, SVG and PDF paths, and its plot area in
/// SVG units (which `report.html` marks on the inlined SVG, for checks in a browser).
pub struct Figure {
    pub stem: String,
    pub caption: String,
    pub files: [PathBuf; 3],
    pub plot_area: dlsim_plot::PixelRect,
}

/// A figure to draw: stem, caption and what `dlsim-plot` draws.
pub struct Spec {
    pub stem: String,
    pub caption: String,
    pub figure: dlsim_plot::Figure,
}

/// Draws `specs` into `dir`.
pub fn draw_all(specs: Vec<Spec>, dir: &Path) -> anyhow::Result<Vec<Figure>> {
    let mut out = Vec::new();
    for spec in specs {
        let files = spec.figure.write(&dir.join(&spec.stem))?;
        let (_, plot_area) = spec.figure.svg()?;
        out.push(Figure {
            stem: spec.stem,
            caption: spec.caption,
            files,
            plot_area,
        });
    }
    Ok(out)
}

/// Every batch figure of the report, in order, and a one-line note for each one left out
/// because the runs hold nothing for it: without batch jobs (an online-only run) the JCT
/// CDF, throughput and failure figures; a timeline figure whose column is 0 throughout
/// every run; the throughput figure without traced observations.
pub fn specs(runs: &[Run], baseline: &str) -> anyhow::Result<(Vec<Spec>, Vec<String>)> {
    let batch = batch_jobs(runs)?;
    let mut out = Vec::new();
    let mut notes = Vec::new();
    if batch {
        out.push(jct_cdf(runs)?);
    }
    for (stem, column, what) in [
        ("utilisation", "cpu_used", "CPU cores in use"),
        ("allocation", "cpu_alloc", "CPU cores allocated"),
    ] {
        if timeline_is_zero(runs, column)? {
            notes.push(format!(
                "No {stem} figure: `{column}` of `timeline.csv` is 0 throughout every run."
            ));
        } else {
            out.push(timeline_figure(runs, stem, column, what)?);
        }
    }
    if batch {
        match throughput(runs, baseline)? {
            Some(t) => out.push(t),
            None => notes.push(
                "No throughput figure: no run traced what the profiler saw (replay with `--trace-observations`).".into(),
            ),
        }
        out.push(failures(runs)?);
    } else {
        notes.push("No JCT CDF, throughput or failure figure: the runs have no batch jobs.".into());
    }
    Ok((out, notes))
}

/// Whether any run has a batch job.
pub fn batch_jobs(runs: &[Run]) -> anyhow::Result<bool> {
    for r in runs {
        if r.has_batch_jobs()? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether `column` of every run's timeline is 0 (or the timeline is empty).
fn timeline_is_zero(runs: &[Run], column: &str) -> anyhow::Result<bool> {
    for r in runs {
        if floats(&r.timeline, column)?.iter().any(|v| *v != 0.0) {
            return Ok(false);
        }
    }
    Ok(true)
}

pub(crate) fn chart(title: &str, x: &str, y: &str) -> Chart {
    Chart {
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
        ..Chart::default()
    }
}

pub(crate) fn spec(stem: &str, caption: String, chart: Chart, body: Body) -> Spec {
    Spec {
        stem: stem.into(),
        caption,
        figure: dlsim_plot::Figure { chart, body },
    }
}

/// Runs of `policy`, in input order.
pub(crate) fn runs_of<'a>(runs: &'a [Run], policy: &'a str) -> impl Iterator<Item = &'a Run> + 'a {
    runs.iter().filter(move |r| r.policy == policy)
}

/// Mean and (min, max) over `values` (not empty).
pub(crate) fn spread(values: &[f64]) -> (f64, f64, f64) {
    let n = values.len() as f64;
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    (values.iter().sum::<f64>() / n, lo, hi)
}

/// `n` points from `lo` to `hi`, evenly spaced in log.
fn log_grid(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let (a, b) = (lo.log10(), hi.log10());
    let mut grid: Vec<f64> = (0..n)
        .map(|i| 10f64.powf(a + (b - a) * i as f64 / (n - 1) as f64))
        .collect();
    // Exact ends, so the CDF reaches 1 at the longest job.
    grid[0] = lo;
    grid[n - 1] = hi;
    grid
}

/// Fraction of `sorted` at or below `x`.
fn ecdf(sorted: &[f64], x: f64) -> f64 {
    sorted.partition_point(|&v| v <= x) as f64 / sorted.len().max(1) as f64
}

/// JCT CDF per policy on a log x axis: mean of the seeds' CDFs, band min to max.
fn jct_cdf(runs: &[Run]) -> anyhow::Result<Spec> {
    let mut per_policy = Vec::new();
    for policy in policies(runs) {
        let mut seeds = Vec::new();
        for run in runs_of(runs, &policy) {
            let mut jct: Vec<f64> = completed_hours(run)?;
            jct.sort_by(f64::total_cmp);
            if !jct.is_empty() {
                seeds.push(jct);
            }
        }
        per_policy.push((policy, seeds));
    }
    let all = per_policy.iter().flat_map(|(_, s)| s.iter().flatten());
    let (lo, hi) = all
        .filter(|v| **v > 0.0)
        .fold((f64::INFINITY, 0f64), |(l, h), &v| (l.min(v), h.max(v)));
    let grid = if lo.is_finite() && hi > lo {
        log_grid(lo, hi, 240)
    } else {
        Vec::new()
    };
    let mut series = Vec::new();
    for (i, (policy, seeds)) in per_policy.into_iter().enumerate() {
        let mut s = Series {
            name: format!("{policy} ({} seeds)", seeds.len()),
            colour: Some(i),
            mark: Mark::Step,
            ..Series::default()
        };
        if !seeds.is_empty() {
            for &x in &grid {
                let f: Vec<f64> = seeds.iter().map(|jct| ecdf(jct, x)).collect();
                let (mean, low, high) = spread(&f);
                s.points.push((x, mean));
                s.band.push((x, low, high));
            }
        }
        series.push(s);
    }
    Ok(spec(
        "jct_cdf",
        "JCT CDF per policy (completed jobs; line: mean of the seeds' CDFs, band: lowest to highest seed; log x axis)".into(),
        Chart {
            x_scale: Scale::Log,
            y_range: Some((0.0, 1.0)),
            legend: Legend::UpperLeft,
            ..chart("JCT CDF per policy", "JCT (hours, log scale)", "fraction of completed jobs")
        },
        Body::Series(series),
    ))
}

fn completed_hours(run: &Run) -> anyhow::Result<Vec<f64>> {
    let status = strings(&run.jobs, "status")?;
    let jct = strings(&run.jobs, "jct_s")?;
    Ok(status
        .iter()
        .zip(&jct)
        .filter(|(s, _)| *s == "completed")
        .filter_map(|(_, j)| j.parse::<f64>().ok())
        .map(|s| s / 3600.0)
        .collect())
}

/// One timeline column over time (hours) per policy: mean over seeds, band min to max.
fn timeline_figure(runs: &[Run], stem: &str, column: &str, what: &str) -> anyhow::Result<Spec> {
    let mut series = Vec::new();
    for (i, policy) in policies(runs).into_iter().enumerate() {
        let mut seeds: Vec<Vec<(u64, f64)>> = Vec::new();
        for run in runs_of(runs, &policy) {
            let t = floats(&run.timeline, "time_s")?;
            let y = floats(&run.timeline, column)?;
            seeds.push(t.iter().map(|t| *t as u64).zip(y).collect());
        }
        let (points, band) = mean_band(&seeds);
        series.push(Series {
            name: format!("{policy} ({} seeds)", seeds.len()),
            points,
            band,
            colour: Some(i),
            mark: Mark::Line,
        });
    }
    Ok(spec(
        stem,
        format!("Cluster {what} over time (line: mean over seeds, band: lowest to highest seed)"),
        chart(&format!("{what} over time"), "time (hours)", what),
        Body::Series(series),
    ))
}

/// A line and its band, as [`Series`] holds them.
pub(crate) type LineBand = (Vec<(f64, f64)>, Vec<(f64, f64, f64)>);

/// Mean and min-max band over seeds of sampled series `(time_s, value)`, on the union of
/// their sampling times (hours). A seed holds its last value between its samples, and is 0
/// after its last one (its run had ended: nothing running, nothing allocated).
pub(crate) fn mean_band(seeds: &[Vec<(u64, f64)>]) -> LineBand {
    let mut times: Vec<u64> = seeds.iter().flatten().map(|p| p.0).collect();
    times.sort_unstable();
    times.dedup();
    let mut at = vec![0usize; seeds.len()];
    let (mut points, mut band) = (Vec::new(), Vec::new());
    for t in times {
        let values: Vec<f64> = seeds
            .iter()
            .zip(&mut at)
            .map(|(s, i)| {
                while *i + 1 < s.len() && s[*i + 1].0 <= t {
                    *i += 1;
                }
                match s.get(*i) {
                    Some(&(t0, v)) if t0 <= t && (*i + 1 < s.len() || t0 == t) => v,
                    _ => 0.0,
                }
            })
            .collect();
        let (mean, lo, hi) = spread(&values);
        let h = t as f64 / 3600.0;
        points.push((h, mean));
        band.push((h, lo, hi));
    }
    (points, band)
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

/// Throughput over time of the selected jobs, one step function per job and policy, one
/// colour per policy; `None` when no run traced its observations.
fn throughput(runs: &[Run], baseline: &str) -> anyhow::Result<Option<Spec>> {
    if runs.iter().all(|r| r.observations.is_none()) {
        return Ok(None);
    }
    let jobs = selected_jobs(runs, baseline)?;
    let mut series = Vec::new();
    let mut untraced = Vec::new();
    for (i, policy) in policies(runs).into_iter().enumerate() {
        // The first run of the policy that traced its observations.
        let Some((run, df)) =
            runs_of(runs, &policy).find_map(|r| r.observations.as_ref().map(|df| (r, df)))
        else {
            untraced.push(policy);
            continue;
        };
        let obs = Observations::of(df)?;
        let ends = job_ends(run)?;
        for &job in &jobs {
            let mut points = obs.rate(job);
            if points.is_empty() {
                continue;
            }
            if let Some(&end) = ends.get(&job) {
                points.push((end / 3600.0, 0.0));
            }
            series.push(Series {
                name: policy.clone(),
                points,
                colour: Some(i),
                mark: Mark::Step,
                ..Series::default()
            });
        }
    }
    let mut caption = format!(
        "Throughput of jobs {} (the baseline's 25th, 50th and 90th percentile of JCT): observed samples/s summed over workers, held until the next sample; first traced seed of each policy",
        jobs.iter().map(|j| j.to_string()).collect::<Vec<_>>().join(", ")
    );
    if !untraced.is_empty() {
        caption.push_str(&format!(
            "; not traced (replay with --trace-observations): {}",
            untraced.join(", ")
        ));
    }
    Ok(Some(spec(
        "throughput",
        caption,
        chart("Throughput of selected jobs", "time (hours)", "samples/s"),
        Body::Series(series),
    )))
}

/// End time (s) of every job of `run` that ended.
fn job_ends(run: &Run) -> anyhow::Result<BTreeMap<i64, f64>> {
    let ids = floats(&run.jobs, "id")?;
    let ends = strings(&run.jobs, "end_s")?;
    Ok(ids
        .iter()
        .zip(ends)
        .filter_map(|(id, e)| Some((*id as i64, e.parse::<f64>().ok()?)))
        .collect())
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

fn failures(runs: &[Run]) -> anyhow::Result<Spec> {
    let mut bars = Vec::new();
    for policy in policies(runs) {
        let mut by_reason: BTreeMap<String, f64> = BTreeMap::new();
        let mine: Vec<&Run> = runs_of(runs, &policy).collect();
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
    Ok(spec(
        "failures",
        "Failure breakdown: failed jobs by reason, mean per run".into(),
        chart(
            "Failed jobs by reason",
            "policy: reason",
            "failed jobs per run",
        ),
        Body::Bars(bars),
    ))
}

/// A line figure's series (tests of this module and of `online_figures`).
#[cfg(test)]
pub(crate) fn series(spec: &Spec) -> &[Series] {
    match &spec.figure.body {
        Body::Series(s) => s,
        Body::Bars(_) => panic!("{} has bars", spec.stem),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsim_plot::Series;
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

    /// A run of `policy` and `seed`: 40 jobs whose JCTs span 1 min to ~3 days (scaled by
    /// `slow`), a spiky CPU timeline ending at `end_h`, and traced observations.
    fn run(policy: &str, seed: u64, slow: f64, end_h: u64) -> Run {
        let n = 40;
        let jct: Vec<f64> = (0..n)
            .map(|i| 60.0 * 1.2f64.powi(i) * slow * (1.0 + seed as f64 / 2.0))
            .collect();
        let status: Vec<&str> = (0..n)
            .map(|i| if i % 9 == 4 { "failed" } else { "completed" })
            .collect();
        let reason: Vec<&str> = (0..n)
            .map(|i| if i % 9 == 4 { "oom" } else { "" })
            .collect();
        let start: Vec<f64> = (0..n).map(|i| i as f64 * 600.0).collect();
        let end: Vec<f64> = start.iter().zip(&jct).map(|(s, j)| s + j).collect();
        let jobs = df!(
            "id" => (0..n as i64).collect::<Vec<_>>(),
            "status" => status,
            "fail_reason" => reason,
            "jct_s" => jct,
            "start_s" => start,
            "end_s" => end,
        )
        .unwrap();
        let t: Vec<i64> = (0..=(end_h * 12) as i64).map(|i| i * 300).collect();
        let cpu: Vec<f64> = (0..t.len())
            .map(|i| {
                if i % 5 == 0 {
                    900.0
                } else {
                    (i % 7) as f64 * 40.0
                }
            })
            .collect();
        let timeline =
            df!("time_s" => t.clone(), "cpu_used" => cpu.clone(), "cpu_alloc" => cpu).unwrap();
        let obs_t: Vec<i64> = (0..200).map(|i| i * 300).collect();
        let observations = df!(
            "time_s" => obs_t.clone(),
            "job" => obs_t.iter().map(|t| (t / 300) % n as i64).collect::<Vec<_>>(),
            "role" => vec!["worker"; 200],
            "samples_per_s" => obs_t.iter().map(|t| Some(100.0 + (t % 1700) as f64 * slow)).collect::<Vec<_>>(),
        )
        .unwrap();
        Run {
            dir: PathBuf::from(format!("{policy}-{seed}")),
            policy: policy.into(),
            seed,
            summary: serde_json::json!({}),
            jobs,
            timeline,
            observations: Some(observations),
            online: None,
        }
    }

    fn runs() -> Vec<Run> {
        let mut out = Vec::new();
        for seed in 0..3 {
            out.push(run("static", seed, 1.0, 30 + seed));
            out.push(run("dlrover", seed, 0.3, 20 + 2 * seed));
        }
        out
    }

    #[test]
    fn every_figure_is_drawn_inside_its_axes() {
        let (specs, notes) = specs(&runs(), "static").unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        let stems: Vec<&str> = specs.iter().map(|s| s.stem.as_str()).collect();
        assert_eq!(
            stems,
            [
                "jct_cdf",
                "utilisation",
                "allocation",
                "throughput",
                "failures"
            ]
        );
        for s in &specs {
            let strays = s.figure.stray_pixels().unwrap();
            assert!(strays.inside > 1_000, "{}: {strays:?}", s.stem);
            assert_eq!(strays.outside, 0, "{}: drawn outside its axes", s.stem);
        }
    }

    #[test]
    fn batch_figures_without_data_are_left_out_with_a_note() {
        let mut online_only = runs();
        for r in &mut online_only {
            let n = r.jobs.height();
            r.jobs = df!("id" => vec![900i64; n], "status" => vec!["online"; n]).unwrap();
            let t = r.timeline.height();
            r.timeline
                .with_column(Column::new("cpu_used".into(), vec![0.0; t]))
                .unwrap();
        }
        let (specs, notes) = specs(&online_only, "static").unwrap();
        let stems: Vec<&str> = specs.iter().map(|s| s.stem.as_str()).collect();
        assert_eq!(stems, ["allocation"]);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("No utilisation figure"), "{notes:?}");
        assert!(notes[1].contains("no batch jobs"), "{notes:?}");
    }

    #[test]
    fn jct_cdf_is_on_a_log_axis_with_a_band_across_seeds() {
        let cdf = jct_cdf(&runs()).unwrap();
        assert_eq!(cdf.figure.chart.x_scale, Scale::Log);
        let s = series(&cdf);
        assert_eq!(s.len(), 2);
        for one in s {
            assert_eq!(one.points.len(), one.band.len());
            // A CDF: non-decreasing, ends at 1, band around the mean.
            assert!(one.points.windows(2).all(|w| w[1].1 >= w[0].1));
            assert_eq!(one.points.last().unwrap().1, 1.0);
            assert!(one
                .points
                .iter()
                .zip(&one.band)
                .all(|(p, b)| b.1 <= p.1 && p.1 <= b.2));
            // Seeds differ, so the band is not flat.
            assert!(one.band.iter().any(|b| b.2 - b.1 > 0.05), "{}", one.name);
        }
        // The faster policy's CDF rises first.
        let at = |s: &Series, x: f64| s.points.iter().rev().find(|p| p.0 <= x).unwrap().1;
        assert!(at(&s[1], 1.0) > at(&s[0], 1.0));
    }

    #[test]
    fn utilisation_is_the_mean_over_seeds_with_a_min_max_band() {
        // Seed a: 10 at 0 s, 20 at 300 s (then ended); seed b: 30 at 0, 30 at 300, 30 at 600.
        let (points, band) = mean_band(&[
            vec![(0, 10.0), (300, 20.0)],
            vec![(0, 30.0), (300, 30.0), (600, 30.0)],
        ]);
        assert_eq!(
            points,
            [(0.0, 20.0), (300.0 / 3600.0, 25.0), (600.0 / 3600.0, 15.0)]
        );
        assert_eq!(band[2], (600.0 / 3600.0, 0.0, 30.0));
    }

    #[test]
    fn throughput_is_a_step_function_per_job_with_one_colour_per_policy() {
        let spec = throughput(&runs(), "static").unwrap().unwrap();
        let s = series(&spec);
        assert!(s.len() >= 4, "{}", s.len());
        for one in s {
            assert_eq!(one.mark, Mark::Step);
            assert!(one.points.len() >= 3, "a series over time, not a flat mean");
            assert_eq!(one.points.last().unwrap().1, 0.0, "0 from the job's end");
            let colour = if one.name == "static" { 0 } else { 1 };
            assert_eq!(one.colour, Some(colour), "{}", one.name);
        }
        // Without traced observations there is no figure rather than a made-up one.
        let mut untraced = runs();
        for r in &mut untraced {
            r.observations = None;
        }
        assert!(throughput(&untraced, "static").unwrap().is_none());
    }
}
