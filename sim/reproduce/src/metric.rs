//! Metric expressions of the reproduction rows, and their evaluation on one run's outputs.
//!
//! Every number comes from what the run wrote (`summary.json`, `jobs.csv`,
//! `observations.csv`) or, for PICASSO, from the kernel's cache replay:
//!
//! * `summary.<field>`: a field of the run's summary (batch or online);
//! * `jobs.mean(col)`, `jobs.median(col)`, `jobs.p90(col)`, each optionally
//!   `jobs.median(col where filter)`: over the rows of `jobs.csv`;
//! * `jobs.share(filter)`: the share of `jobs.csv` rows passing `filter`;
//! * `obs.steps_per_s(T)`, `obs.worker_cores(T)`, `obs.ps_cores(T)`: a single-job run's global
//!   steps/s, mean used cores per worker and used cores of all PS, as the profiler read them,
//!   averaged over its samples in the [`OBS_WINDOW_S`] ending at `T` seconds (`end` = the
//!   last sample), so that one sample taken during a rescale pause does not decide a row;
//! * `picasso.hit_ratio(MB)`: the hot-ID cache's hit ratio at a cache of `MB` megabytes.
//!
//! A filter is `col OP value` terms joined by `&`, with OP one of `= != < <= > >=`; a value
//! that parses as a number compares as one. `jobs.csv` gains two derived columns here:
//! `samples` (steps x batch size) and `jct_min`.

use std::collections::{BTreeMap, BTreeSet};

/// The profiler readings a row averages: one adjustment interval of DLRover-RM (every three
/// minutes, Sec. 6.2), i.e. the last three one-minute samples of the paper experiments.
pub const OBS_WINDOW_S: f64 = 180.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agg {
    Mean,
    Median,
    P90,
    Share,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObsWhat {
    StepsPerS,
    WorkerCores,
    PsCores,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Metric {
    Summary(String),
    Jobs {
        agg: Agg,
        column: String,
        filter: Option<Filter>,
        subset: Option<Filter>,
    },
    /// `at_s` None = the last sample.
    Obs {
        what: ObsWhat,
        at_s: Option<f64>,
    },
    HitRatio {
        cache_mb: f64,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Filter(Vec<(String, Op, String)>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Filter {
    pub fn parse(s: &str) -> Result<Filter, String> {
        let mut terms = Vec::new();
        for t in s.split('&') {
            let t = t.trim();
            let ops = [
                (">=", Op::Ge),
                ("<=", Op::Le),
                ("!=", Op::Ne),
                ("=", Op::Eq),
                ("<", Op::Lt),
                (">", Op::Gt),
            ];
            let Some((i, sym, op)) = ops
                .iter()
                .filter_map(|&(sym, op)| t.find(sym).map(|i| (i, sym, op)))
                .min_by_key(|&(i, sym, _)| (i, std::cmp::Reverse(sym.len())))
            else {
                return Err(format!(
                    "filter term `{t}` has no comparison (= != < <= > >=)"
                ));
            };
            let (col, val) = (t[..i].trim(), t[i + sym.len()..].trim());
            if col.is_empty() || val.is_empty() {
                return Err(format!("filter term `{t}` needs a column and a value"));
            }
            terms.push((col.to_string(), op, val.to_string()));
        }
        Ok(Filter(terms))
    }

    fn columns(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(c, _, _)| c.as_str())
    }

    fn passes(&self, t: &JobsTable, row: usize) -> bool {
        self.0.iter().all(|(col, op, val)| {
            let cell = t.cell(row, col).unwrap_or("");
            let ord = match (cell.parse::<f64>(), val.parse::<f64>()) {
                (Ok(a), Ok(b)) => a.partial_cmp(&b),
                _ => Some(cell.cmp(val.as_str())),
            };
            let Some(o) = ord else { return false };
            use std::cmp::Ordering::*;
            match op {
                Op::Eq => o == Equal,
                Op::Ne => o != Equal,
                Op::Lt => o == Less,
                Op::Le => o != Greater,
                Op::Gt => o == Greater,
                Op::Ge => o != Less,
            }
        })
    }
}

fn call<'a>(s: &'a str, name: &str) -> Option<&'a str> {
    s.strip_prefix(name)?.strip_prefix('(')?.strip_suffix(')')
}

impl Metric {
    /// Parses a metric expression; `subset` is the row's job filter (jobs metrics only).
    pub fn parse(s: &str, subset: Option<&str>) -> Result<Metric, String> {
        let s = s.trim();
        let subset = subset.map(Filter::parse).transpose()?;
        if let Some(f) = s.strip_prefix("summary.") {
            if subset.is_some() {
                return Err("`subset` applies to jobs metrics only".into());
            }
            return Ok(Metric::Summary(f.to_string()));
        }
        if let Some(rest) = s.strip_prefix("jobs.") {
            if let Some(f) = call(rest, "share") {
                return Ok(Metric::Jobs {
                    agg: Agg::Share,
                    column: String::new(),
                    filter: Some(Filter::parse(f)?),
                    subset,
                });
            }
            for (name, agg) in [
                ("mean", Agg::Mean),
                ("median", Agg::Median),
                ("p90", Agg::P90),
            ] {
                if let Some(arg) = call(rest, name) {
                    let (col, filter) = match arg.split_once(" where ") {
                        Some((c, f)) => (c.trim(), Some(Filter::parse(f)?)),
                        None => (arg.trim(), None),
                    };
                    return Ok(Metric::Jobs {
                        agg,
                        column: col.to_string(),
                        filter,
                        subset,
                    });
                }
            }
            return Err(format!(
                "`{s}`: jobs metrics are mean(col), median(col), p90(col) or share(filter)"
            ));
        }
        if subset.is_some() {
            return Err("`subset` applies to jobs metrics only".into());
        }
        if let Some(rest) = s.strip_prefix("obs.") {
            for (name, what) in [
                ("steps_per_s", ObsWhat::StepsPerS),
                ("worker_cores", ObsWhat::WorkerCores),
                ("ps_cores", ObsWhat::PsCores),
            ] {
                if let Some(arg) = call(rest, name) {
                    let at_s = match arg.trim() {
                        "end" => None,
                        t => Some(
                            t.parse::<f64>()
                                .ok()
                                .filter(|x| x.is_finite() && *x >= 0.0)
                                .ok_or_else(|| {
                                    format!("`{s}`: the time must be seconds or `end`")
                                })?,
                        ),
                    };
                    return Ok(Metric::Obs { what, at_s });
                }
            }
        }
        if let Some(arg) = s
            .strip_prefix("picasso.")
            .and_then(|r| call(r, "hit_ratio"))
        {
            let cache_mb = arg
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| format!("`{s}`: the cache size must be megabytes > 0"))?;
            return Ok(Metric::HitRatio { cache_mb });
        }
        Err(format!(
            "unknown metric `{s}` (summary.F, jobs.AGG(...), obs.steps_per_s|worker_cores|ps_cores(T), picasso.hit_ratio(MB))"
        ))
    }

    /// Whether the runs need `observations.csv`.
    pub fn needs_observations(&self) -> bool {
        matches!(self, Metric::Obs { .. })
    }

    /// The job filter that restricts the jobs a row reads, if any.
    pub fn subset(&self) -> Option<&Filter> {
        match self {
            Metric::Jobs { subset, .. } => subset.as_ref(),
            _ => None,
        }
    }
}

/// `jobs.csv` as read back: a header and string cells.
#[derive(Clone, Debug, Default)]
pub struct JobsTable {
    cols: BTreeMap<String, usize>,
    rows: Vec<Vec<String>>,
}

impl JobsTable {
    pub fn parse(csv: &str) -> JobsTable {
        let mut lines = csv.lines();
        let mut cols: BTreeMap<String, usize> = lines
            .next()
            .unwrap_or("")
            .split(',')
            .enumerate()
            .map(|(i, c)| (c.to_string(), i))
            .collect();
        let mut rows: Vec<Vec<String>> = lines
            .filter(|l| !l.is_empty())
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect();
        let n = cols.len();
        let get = |r: &Vec<String>, c: &str| -> Option<f64> {
            cols.get(c)
                .and_then(|&i| r.get(i))
                .and_then(|x| x.parse().ok())
        };
        let accuracy = |r: &Vec<String>, init: &str, fin: &str| {
            get(r, init)
                .zip(get(r, fin))
                .filter(|&(_, f)| f > 0.0)
                .map(|(i, f)| (1.0 - (i - f).abs() / f).max(0.0))
        };
        let derived: Vec<[Option<f64>; 4]> = rows
            .iter()
            .map(|r| {
                [
                    get(r, "steps")
                        .zip(get(r, "batch_size"))
                        .map(|(a, b)| a * b),
                    get(r, "jct_s").map(|s| s / 60.0),
                    accuracy(r, "init_workers", "workers"),
                    accuracy(r, "init_ps", "ps"),
                ]
            })
            .collect();
        for (r, d) in rows.iter_mut().zip(derived) {
            r.extend(
                d.iter()
                    .map(|x| x.map(|x| x.to_string()).unwrap_or_default()),
            );
        }
        for (k, name) in [
            "samples",
            "jct_min",
            "worker_init_accuracy",
            "ps_init_accuracy",
        ]
        .iter()
        .enumerate()
        {
            cols.insert(name.to_string(), n + k);
        }
        JobsTable { cols, rows }
    }

    fn cell(&self, row: usize, col: &str) -> Option<&str> {
        self.cols
            .get(col)
            .and_then(|&i| self.rows[row].get(i))
            .map(String::as_str)
    }

    /// The first row's batch size.
    pub fn batch_size(&self) -> Option<f64> {
        self.cell(0, "batch_size").and_then(|b| b.parse().ok())
    }

    /// The finite values of `col`, in row order.
    pub fn values(&self, col: &str) -> Vec<f64> {
        (0..self.rows.len())
            .filter_map(|r| self.cell(r, col).and_then(|x| x.parse::<f64>().ok()))
            .filter(|x| x.is_finite())
            .collect()
    }

    pub fn has(&self, col: &str) -> bool {
        self.cols.contains_key(col)
    }

    /// The ids of the jobs passing `f`.
    pub fn ids(&self, f: &Filter) -> BTreeSet<String> {
        (0..self.rows.len())
            .filter(|&r| f.passes(self, r))
            .filter_map(|r| self.cell(r, "id").map(str::to_string))
            .collect()
    }

    fn aggregate(
        &self,
        agg: Agg,
        column: &str,
        filter: Option<&Filter>,
        keep: Option<&BTreeSet<String>>,
    ) -> Result<f64, String> {
        for c in filter
            .into_iter()
            .flat_map(Filter::columns)
            .chain((agg != Agg::Share).then_some(column))
        {
            if !self.has(c) {
                return Err(format!("jobs.csv has no column `{c}`"));
            }
        }
        let rows = (0..self.rows.len())
            .filter(|&r| keep.is_none_or(|k| self.cell(r, "id").is_some_and(|id| k.contains(id))));
        if agg == Agg::Share {
            let f = filter.expect("share has a filter");
            let (n, pass) = rows.fold((0usize, 0usize), |(n, p), r| {
                (n + 1, p + usize::from(f.passes(self, r)))
            });
            return if n == 0 {
                Err("no jobs to take a share of".into())
            } else {
                Ok(pass as f64 / n as f64)
            };
        }
        let mut xs: Vec<f64> = rows
            .filter(|&r| filter.is_none_or(|f| f.passes(self, r)))
            .filter_map(|r| self.cell(r, column).and_then(|x| x.parse::<f64>().ok()))
            .filter(|x| x.is_finite())
            .collect();
        if xs.is_empty() {
            return Err(format!("no job has a value of `{column}`"));
        }
        xs.sort_by(f64::total_cmp);
        Ok(match agg {
            Agg::Mean => xs.iter().sum::<f64>() / xs.len() as f64,
            Agg::Median => dlsim_model::metrics::quantile(&xs, 0.5),
            Agg::P90 => dlsim_model::metrics::quantile(&xs, 0.9),
            Agg::Share => unreachable!("handled above"),
        })
    }
}

/// What one run left behind, as the rows read it.
#[derive(Clone, Debug, Default)]
pub struct RunData {
    pub summary: serde_json::Value,
    pub jobs: Option<JobsTable>,
    /// `observations.csv` text (single-job experiments).
    pub observations: Option<String>,
    /// PICASSO: hit ratio by cache size in MB (as text, for exact keys).
    pub hit_ratios: BTreeMap<String, f64>,
    /// The run's own outputs, with `--keep-runs` (taken out before the rows are read).
    pub kept: Option<crate::KeptRun>,
}

impl RunData {
    /// Evaluates `m` on this run, restricted to the job ids `keep` where given.
    pub fn eval(&self, m: &Metric, keep: Option<&BTreeSet<String>>) -> Result<f64, String> {
        match m {
            Metric::Summary(field) => {
                let mut v = &self.summary;
                for part in field.split('.') {
                    v = v
                        .get(part)
                        .ok_or_else(|| format!("the summary has no field `{field}`"))?;
                }
                v.as_f64()
                    .ok_or_else(|| format!("summary field `{field}` is not a number"))
            }
            Metric::Jobs {
                agg,
                column,
                filter,
                ..
            } => self
                .jobs
                .as_ref()
                .ok_or("this run has no jobs.csv")?
                .aggregate(*agg, column, filter.as_ref(), keep),
            Metric::Obs { what, at_s } => {
                let obs = self
                    .observations
                    .as_deref()
                    .ok_or("this run traced no observations")?;
                let batch = self
                    .jobs
                    .as_ref()
                    .and_then(|j| j.cell(0, "batch_size"))
                    .and_then(|b| b.parse::<f64>().ok())
                    .ok_or("no job's batch size")?;
                obs_at(obs, *what, *at_s, batch)
            }
            Metric::HitRatio { cache_mb } => self
                .hit_ratios
                .get(&cache_mb.to_string())
                .copied()
                .ok_or_else(|| format!("no hit ratio for {cache_mb} MB")),
        }
    }
}

/// Global steps/s at every profiler sample instant: (minutes, steps/s).
pub fn steps_series(obs: &str, batch: f64) -> Vec<(f64, f64)> {
    let mut by_t: BTreeMap<u64, f64> = BTreeMap::new();
    for l in obs.lines().skip(1) {
        let c: Vec<&str> = l.split(',').collect();
        if c.len() >= 8 && c[4] == "sample" && c[3] == "worker" {
            if let (Ok(t), Ok(r)) = (c[0].parse::<u64>(), c[7].parse::<f64>()) {
                *by_t.entry(t).or_insert(0.0) += r / batch;
            }
        }
    }
    by_t.into_iter()
        .map(|(t, r)| (t as f64 / 60.0, r))
        .collect()
}

/// The profiler's reading averaged over the sample instants in the [`OBS_WINDOW_S`] ending
/// at `at_s` (at the last sample when `at_s` is None).
fn obs_at(obs: &str, what: ObsWhat, at_s: Option<f64>, batch: f64) -> Result<f64, String> {
    // time_s,job,pod,role,kind,cpu_used,mem_used_mb,samples_per_s,step_time_s,samples_done,slot,incarnation
    let samples: Vec<(f64, &str, f64, f64)> = obs
        .lines()
        .skip(1)
        .filter_map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (c.len() >= 8 && c[4] == "sample").then_some(())?;
            Some((
                c[0].parse().ok()?,
                c[3],
                c[5].parse().ok()?,
                c[7].parse().unwrap_or(0.0),
            ))
        })
        .collect();
    let end = samples
        .iter()
        .map(|s| s.0)
        .filter(|&t| at_s.is_none_or(|a| t <= a))
        .fold(f64::NAN, f64::max);
    if end.is_nan() {
        return Err("no profiler sample by then".into());
    }
    let instants: BTreeSet<u64> = samples
        .iter()
        .map(|s| s.0)
        .filter(|&t| t <= end && t > end - OBS_WINDOW_S)
        .map(|t| t as u64)
        .collect();
    let at_instant = |t: u64| {
        let at: Vec<_> = samples.iter().filter(|s| s.0 as u64 == t).collect();
        let workers: Vec<_> = at.iter().filter(|s| s.1 == "worker").collect();
        match what {
            ObsWhat::StepsPerS => workers.iter().map(|s| s.3).sum::<f64>() / batch,
            ObsWhat::WorkerCores => {
                workers.iter().map(|s| s.2).sum::<f64>() / workers.len().max(1) as f64
            }
            ObsWhat::PsCores => at.iter().filter(|s| s.1 == "ps").map(|s| s.2).sum(),
        }
    };
    Ok(instants.iter().map(|&t| at_instant(t)).sum::<f64>() / instants.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_and_refuses_junk() {
        assert_eq!(
            Metric::parse("summary.jct_median_s", None).unwrap(),
            Metric::Summary("jct_median_s".into())
        );
        let m = Metric::parse(
            "jobs.median(jct_s where status=completed)",
            Some("req_cores<100"),
        )
        .unwrap();
        assert!(matches!(
            m,
            Metric::Jobs {
                agg: Agg::Median,
                ..
            }
        ));
        assert!(Metric::parse("jobs.share(cpu_util<0.5&mem_util<0.5)", None).is_ok());
        assert_eq!(
            Metric::parse("obs.steps_per_s(720)", None).unwrap(),
            Metric::Obs {
                what: ObsWhat::StepsPerS,
                at_s: Some(720.0)
            }
        );
        assert!(Metric::parse("picasso.hit_ratio(256)", None).is_ok());
        assert!(Metric::parse("jobs.max(jct_s)", None).is_err());
        assert!(Metric::parse("summary.jcr", Some("a=1")).is_err());
        assert!(Metric::parse("picasso.hit_ratio(-1)", None).is_err());
        assert!(Filter::parse("status").is_err());
    }

    #[test]
    fn aggregates_filter_and_subset_jobs() {
        let t = JobsTable::parse(
            "id,status,jct_s,cpu_util,steps,batch_size\n\
             1,completed,100,0.2,10,2\n2,completed,300,0.6,10,2\n3,failed,,0.4,10,2\n",
        );
        let run = RunData {
            jobs: Some(t.clone()),
            ..RunData::default()
        };
        let m = |s: &str| Metric::parse(s, None).unwrap();
        assert_eq!(run.eval(&m("jobs.median(jct_s)"), None).unwrap(), 200.0);
        assert_eq!(run.eval(&m("jobs.mean(samples)"), None).unwrap(), 20.0);
        assert_eq!(
            run.eval(&m("jobs.share(status=completed)"), None).unwrap(),
            2.0 / 3.0
        );
        assert_eq!(
            run.eval(&m("jobs.mean(cpu_util where cpu_util>=0.4)"), None)
                .unwrap(),
            0.5
        );
        let keep = t.ids(&Filter::parse("cpu_util<0.5").unwrap());
        assert_eq!(
            run.eval(&m("jobs.share(status=completed)"), Some(&keep))
                .unwrap(),
            0.5
        );
        assert!(run.eval(&m("jobs.mean(nope)"), None).is_err());
    }

    #[test]
    fn derives_the_launch_accuracy_of_each_count() {
        let t = JobsTable::parse(
            "id,workers,ps,init_workers,init_ps\n1,10,4,8,4\n2,10,2,30,1\n3,5,0,5,0\n",
        );
        let run = RunData {
            jobs: Some(t),
            ..RunData::default()
        };
        let m = |s: &str| Metric::parse(s, None).unwrap();
        // Workers: 1 - 2/10 = 0.8, 1 - 20/10 -> 0, 1: mean 0.6.
        let w = run
            .eval(&m("jobs.mean(worker_init_accuracy)"), None)
            .unwrap();
        assert!((w - 0.6).abs() < 1e-12, "{w}");
        // PS: 1 and 0.5; a job without PS has no PS accuracy.
        assert_eq!(
            run.eval(&m("jobs.mean(ps_init_accuracy)"), None).unwrap(),
            0.75
        );
    }

    #[test]
    fn reads_the_profiler_at_an_instant() {
        let obs = "time_s,job,pod,role,kind,cpu_used,mem_used_mb,samples_per_s,step_time_s,samples_done\n\
                   60,0,0,ps,sample,3,100,,,\n60,0,1,worker,sample,2,100,1000,,\n60,0,2,worker,sample,4,100,1000,,\n\
                   120,0,0,ps,sample,5,100,,,\n120,0,1,worker,sample,6,100,3000,,\n";
        assert_eq!(
            obs_at(obs, ObsWhat::StepsPerS, Some(100.0), 500.0).unwrap(),
            4.0
        );
        assert_eq!(
            obs_at(obs, ObsWhat::WorkerCores, Some(100.0), 500.0).unwrap(),
            3.0
        );
        // Both instants fall in the window ending at the last sample: (3 + 5) / 2.
        assert_eq!(obs_at(obs, ObsWhat::PsCores, None, 500.0).unwrap(), 4.0);
        assert_eq!(obs_at(obs, ObsWhat::StepsPerS, None, 500.0).unwrap(), 5.0);
        assert!(obs_at(obs, ObsWhat::PsCores, Some(10.0), 500.0).is_err());
    }
}
