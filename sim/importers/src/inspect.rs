//! `dlsim trace inspect`: what a native trace holds, at a glance.
//!
//! Counts; quantiles of job size (pods, GPUs, cores), of the real duration and wait an
//! importer recorded, and of the uncontended duration the simulator will give each job
//! (`steps x batch / throughput` of the requested configuration under the default ground
//! truth, without the hidden per-job variation); arrivals by hour of the trace clock (hour 0
//! is the trace's time 0, not necessarily midnight); the outcome mix (`synthetic` for jobs
//! without an observed record); and how many jobs have each field synthesised. Plots:
//! arrivals over time (step line), requested cores per job (histogram in powers of two),
//! cores vs uncontended duration (scatter on log-log axes, at most 4,000 jobs, evenly
//! strided).

use crate::synth::requested_rate;
use dlsim_model::scenario::TruthSettings;
use dlsim_plot::{Body, Chart, Figure, Mark, PlotError, Scale, Series};
use dlsim_traces::{JobSpec, Trace};
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

/// Summary statistics of one trace.
#[derive(Clone, Debug)]
pub struct Inspection {
    pub source: String,
    pub jobs: usize,
    pub pods: u64,
    pub gpu_jobs: usize,
    pub ps_less_jobs: usize,
    pub span_s: u64,
    /// (name, values) for the quantile table.
    pub distributions: Vec<(&'static str, Vec<f64>)>,
    pub arrivals_by_hour: [u64; 24],
    pub outcomes: BTreeMap<String, u64>,
    pub synthesized: BTreeMap<String, u64>,
}

/// The simulator's uncontended run time of a job at its requested configuration, seconds.
pub fn uncontended_s(job: &JobSpec, truth: &TruthSettings) -> f64 {
    job.total_samples() / requested_rate(job, truth)
}

fn cores(j: &JobSpec) -> f64 {
    f64::from(j.workers) * j.worker_cpu + f64::from(j.ps) * j.ps_cpu
}

fn pods(j: &JobSpec) -> u64 {
    u64::from(j.ps) + u64::from(j.workers)
}

pub fn inspect(trace: &Trace) -> Inspection {
    let jobs = &trace.jobs;
    let truth = TruthSettings::default();
    let src = &trace.header.source;
    let source = match (src.get("format"), src.get("input")) {
        (Some(f), Some(i)) => format!(
            "{} import of {}",
            f.as_str().unwrap_or("?"),
            i.as_str().unwrap_or("?")
        ),
        _ if src.get("generator").is_some() => "generated".to_string(),
        _ => "unknown".to_string(),
    };
    let mut arrivals_by_hour = [0u64; 24];
    let mut outcomes = BTreeMap::new();
    let mut synthesized = BTreeMap::new();
    for j in jobs {
        arrivals_by_hour[(j.submit_s / 3600 % 24) as usize] += 1;
        let o = j
            .observed
            .as_ref()
            .map_or("synthetic", |o| o.outcome.as_str());
        *outcomes.entry(o.to_string()).or_default() += 1;
        for f in &j.synthesized {
            *synthesized.entry(f.clone()).or_default() += 1;
        }
    }
    let observed = |f: fn(&dlsim_traces::Observed) -> Option<u64>| -> Vec<f64> {
        jobs.iter()
            .filter_map(|j| j.observed.as_ref().and_then(f))
            .map(|v| v as f64)
            .collect()
    };
    let distributions = vec![
        (
            "pods per job",
            jobs.iter().map(|j| pods(j) as f64).collect(),
        ),
        (
            "GPUs per job",
            jobs.iter()
                .map(|j| f64::from(j.workers * j.worker_gpu))
                .collect(),
        ),
        ("cores per job", jobs.iter().map(cores).collect()),
        ("real duration (s)", observed(|o| o.duration_s)),
        ("real wait (s)", observed(|o| o.wait_s)),
        (
            "uncontended sim duration (s)",
            jobs.iter().map(|j| uncontended_s(j, &truth)).collect(),
        ),
    ];
    Inspection {
        source,
        jobs: jobs.len(),
        pods: jobs.iter().map(pods).sum(),
        gpu_jobs: jobs.iter().filter(|j| j.worker_gpu > 0).count(),
        ps_less_jobs: jobs.iter().filter(|j| j.ps == 0).count(),
        span_s: jobs.last().map_or(0, |j| j.submit_s) - jobs.first().map_or(0, |j| j.submit_s),
        distributions,
        arrivals_by_hour,
        outcomes,
        synthesized,
    }
}

/// The `q`-quantile (nearest rank) of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2e}", v)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

impl fmt::Display for Inspection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "trace: {}", self.source)?;
        writeln!(
            f,
            "  {} jobs, {} pods; {} with GPUs, {} without PS; arrivals over {:.1} days",
            self.jobs,
            self.pods,
            self.gpu_jobs,
            self.ps_less_jobs,
            self.span_s as f64 / 86_400.0
        )?;
        writeln!(
            f,
            "\n  {:<30} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "distribution", "n", "min", "p10", "p50", "p90", "p99", "max", "mean"
        )?;
        for (name, values) in &self.distributions {
            if values.is_empty() {
                writeln!(f, "  {name:<30} {:>7}", 0)?;
                continue;
            }
            let mut v = values.clone();
            v.sort_by(f64::total_cmp);
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let mut row = format!("  {name:<30} {:>7}", v.len());
            for q in [0.0, 0.1, 0.5, 0.9, 0.99, 1.0] {
                let _ = write!(row, " {:>9}", short(quantile(&v, q)));
            }
            writeln!(f, "{row} {:>9}", short(mean))?;
        }
        writeln!(f, "\n  arrivals by hour of the trace clock (jobs):")?;
        for half in self.arrivals_by_hour.chunks(12).enumerate() {
            let mut row = String::from("   ");
            for (h, n) in half.1.iter().enumerate() {
                let _ = write!(row, " {:02}h:{n:<6}", half.0 * 12 + h);
            }
            writeln!(f, "{}", row.trim_end())?;
        }
        writeln!(f, "\n  outcome mix:")?;
        for (o, n) in &self.outcomes {
            let share = 100.0 * *n as f64 / self.jobs.max(1) as f64;
            writeln!(f, "    {o:<12} {n:>8}  {share:5.1}%")?;
        }
        if !self.synthesized.is_empty() {
            writeln!(f, "\n  synthesised fields (jobs):")?;
            for (name, n) in &self.synthesized {
                writeln!(f, "    {name:<20} {n:>8}")?;
            }
        }
        Ok(())
    }
}

/// Writes `<prefix>-arrivals`, `<prefix>-sizes` and `<prefix>-size-duration` (PNG, SVG
/// and PDF each).
pub fn plot(trace: &Trace, prefix: &Path) -> Result<Vec<PathBuf>, PlotError> {
    let mut written = Vec::new();
    for (suffix, figure) in figures(trace) {
        let mut p = prefix.as_os_str().to_os_string();
        p.push(suffix);
        written.extend(figure.write(&PathBuf::from(p))?);
    }
    Ok(written)
}

/// The three figures of [`plot`], each with its file suffix.
pub fn figures(trace: &Trace) -> Vec<(&'static str, Figure)> {
    let jobs = &trace.jobs;
    let span_s = jobs.last().map_or(0, |j| j.submit_s);
    // Hourly bins for up to two weeks, daily beyond (readable either way).
    let (bin_s, unit) = if span_s <= 14 * 86_400 {
        (3_600, "hour")
    } else {
        (86_400, "day")
    };
    let mut counts = vec![0u64; (span_s / bin_s + 1) as usize];
    for j in jobs {
        counts[(j.submit_s / bin_s) as usize] += 1;
    }
    let mut arrivals: Vec<(f64, f64)> = counts
        .iter()
        .enumerate()
        .map(|(i, &n)| ((i as u64 * bin_s) as f64 / 86_400.0, n as f64))
        .collect();
    // The last bin is drawn to its end.
    arrivals.extend(
        arrivals
            .last()
            .map(|&(x, y)| (x + bin_s as f64 / 86_400.0, y)),
    );
    let chart = |title: String, x: &str, y: &str| Chart {
        title,
        x_label: x.into(),
        y_label: y.into(),
        ..Chart::default()
    };
    let mut out = vec![(
        "-arrivals",
        Figure {
            chart: chart(
                format!("Job arrivals per {unit}"),
                "time (days)",
                &format!("jobs per {unit}"),
            ),
            body: Body::Series(vec![Series {
                points: arrivals,
                mark: Mark::Step,
                ..Series::default()
            }]),
        },
    )];
    // Requested cores per job (all pods) in power-of-two bins: 1, 2-3, 4-7, ...; cores
    // rather than pods, as many imported traces are single-pod.
    let mut bins = vec![0u64; 1];
    for j in jobs {
        let b = (64 - (cores(j).ceil() as u64).max(1).leading_zeros() - 1) as usize;
        if bins.len() <= b {
            bins.resize(b + 1, 0);
        }
        bins[b] += 1;
    }
    let bars: Vec<(String, f64)> = bins
        .iter()
        .enumerate()
        .map(|(b, &n)| {
            let lo = 1u64 << b;
            let label = if lo == 1 {
                "1".into()
            } else {
                format!("{lo}-{}", 2 * lo - 1)
            };
            (label, n as f64)
        })
        .collect();
    out.push((
        "-sizes",
        Figure {
            chart: chart("Job size".into(), "requested cores per job", "jobs"),
            body: Body::Bars(bars),
        },
    ));
    let truth = TruthSettings::default();
    let stride = jobs.len().div_ceil(4_000).max(1);
    let points = jobs
        .iter()
        .step_by(stride)
        .map(|j| (cores(j), uncontended_s(j, &truth) / 3_600.0))
        .collect();
    // Sizes and durations both span decades: on linear axes almost every point sat on 0.
    out.push((
        "-size-duration",
        Figure {
            chart: Chart {
                x_scale: Scale::Log,
                y_scale: Scale::Log,
                ..chart(
                    "Size vs uncontended duration".into(),
                    "requested cores per job",
                    "duration (hours)",
                )
            },
            body: Body::Series(vec![Series {
                points,
                mark: Mark::Dots,
                ..Series::default()
            }]),
        },
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundled() -> Trace {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/antgroup-sample.jsonl");
        dlsim_traces::format::read_trace(&path).unwrap()
    }

    #[test]
    fn every_figure_keeps_to_its_axes() {
        for (suffix, figure) in figures(&bundled()) {
            let strays = figure.stray_pixels().unwrap();
            assert!(strays.inside > 0, "{suffix}: nothing drawn");
            assert_eq!(strays.outside, 0, "{suffix}: drawn outside its axes");
        }
    }

    #[test]
    fn size_vs_duration_is_on_log_axes_spanning_decades() {
        let trace = bundled();
        let (_, fig) = figures(&trace).remove(2);
        assert_eq!(
            (fig.chart.x_scale, fig.chart.y_scale),
            (Scale::Log, Scale::Log)
        );
        let Body::Series(s) = &fig.body else { panic!() };
        let span = |f: fn(&(f64, f64)) -> f64| {
            let v: Vec<f64> = s[0].points.iter().map(f).collect();
            let (lo, hi) = v
                .iter()
                .fold((f64::MAX, 0f64), |(l, h), &x| (l.min(x), h.max(x)));
            (hi / lo).log10()
        };
        // The reason for log axes: the bundled trace spans over a decade in both.
        assert!(span(|p| p.0) > 1.0 && span(|p| p.1) > 1.0);
    }
}
