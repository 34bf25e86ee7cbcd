//! `dlsim replay`: load and validate a scenario, run it, print a summary table, and write
//! `summary.json`, `jobs.csv`, `timeline.csv` and `run.json` to the output folder.

use crate::BadInput;
use anyhow::Context;
use clap::Args;
use dlsim_model::metrics::Summary;
use dlsim_model::run::RUN_FILES;
use dlsim_model::Scenario;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
pub struct ReplayArgs {
    /// Scenario file (JSON): cluster, workload trace, policy, knobs.
    pub scenario: PathBuf,
    /// Policy spec overriding the scenario's, e.g. `static` or `dlrover[rho=2.5]` (every
    /// policy and parameter: below, or `dlsim policies`); a list `a,b[x=1],c` replays each
    /// in turn, into `<out>/<policy>/` (folder names from `dlrover[rho=2.5]` ->
    /// `dlrover-rho-2.5`).
    #[arg(long)]
    pub policy: Option<String>,
    /// Seed overriding the scenario's; every random stream derives from it.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Output folder [default: reports/runs/<scenario>-<policy>-s<seed>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also write `observations.csv`: every per-pod profiler sample and pod event the
    /// policy could see (large on long traces).
    #[arg(long)]
    pub trace_observations: bool,
    /// Threads a policy may plan on (`dlrover` plans the jobs of a tick in parallel)
    /// [default: all cores]; the outputs are identical on any count.
    #[arg(long)]
    pub threads: Option<usize>,
}

pub fn run(args: &ReplayArgs) -> anyhow::Result<ExitCode> {
    let wall = Instant::now();
    let mut scenario =
        Scenario::load_streaming(&args.scenario).map_err(|e| BadInput(e.to_string()))?;
    if let Some(seed) = args.seed {
        scenario
            .with_seed(seed)
            .map_err(|e| BadInput(format!("{e} (with --seed {seed})")))?;
    }
    for w in &scenario.warnings {
        eprintln!("warning: {w}");
    }
    scenario.trace_observations = args.trace_observations;
    // Ended jobs are released as they end: memory follows the live jobs.
    scenario.keep_ended = false;
    let policy_list = args
        .policy
        .clone()
        .unwrap_or_else(|| scenario.file.policy.clone());
    // `a,b,c`: one run per policy, each in its own folder under `--out`; every spec is
    // built (validated) before the first run.
    let specs = dlsim_policies::split_list(&policy_list);
    if specs.len() > 1 && specs.iter().any(String::is_empty) {
        return Err(BadInput(format!(
            "--policy: an empty policy in the list `{policy_list}` (policies are separated \
             by single commas)"
        ))
        .into());
    }
    let mut policies = Vec::with_capacity(specs.len());
    for spec in &specs {
        policies.push(build_policy(args, &scenario, spec)?);
    }
    let several = policies.len() > 1;
    if several {
        let mut seen = std::collections::BTreeSet::new();
        for p in &policies {
            let name = dlsim_policies::folder_name(&p.spec());
            if !seen.insert(name.clone()) {
                return Err(BadInput(format!(
                    "--policy: `{}` is listed twice (both runs would write {name}/)",
                    p.spec()
                ))
                .into());
            }
        }
    }
    let base = args.out.clone();
    if let Some(out) = &base {
        // A bad --out fails before the runs, not after them.
        if several {
            for p in &policies {
                let dir = out.join(dlsim_policies::folder_name(&p.spec()));
                dlsim_fsio::check_dir_target(&dir, &RUN_FILES)
                    .map_err(|e| BadInput(format!("--out: {e}")))?;
            }
        } else {
            dlsim_fsio::check_dir_target(out, &RUN_FILES)
                .map_err(|e| BadInput(format!("--out: {e}")))?;
        }
    }
    plan_on_this_thread(args.threads)?;
    let load_s = wall.elapsed().as_secs_f64();
    let mut first_online = Vec::new();
    for policy in policies {
        let out = match &base {
            Some(b) if several => Some(b.join(dlsim_policies::folder_name(&policy.spec()))),
            other => other.clone(),
        };
        let summary = replay_one(args, &scenario, policy, out, load_s)?;
        if let Some(mut job) = summary.online_jobs.into_iter().next() {
            // The table names each run by its whole spec (`dlrover+kale`).
            job.policy = summary.policy;
            first_online.push(job);
        }
    }
    if several && !first_online.is_empty() {
        // Several autoscalers on online jobs: the first job's metrics next to Kale's
        // Table 3, printed and written as `table3.md`.
        let table = dlsim_model::online::metrics::table3(&first_online);
        let dir = base.unwrap_or_else(|| {
            PathBuf::from("reports/runs").join(format!(
                "{}-compare-s{}",
                first_online[0].scenario, scenario.file.seed
            ))
        });
        std::fs::create_dir_all(&dir)
            .and_then(|()| dlsim_fsio::write_atomic(&dir.join("table3.md"), table.as_bytes()))
            .with_context(|| format!("writing {}", dir.join("table3.md").display()))?;
        if !args.quiet {
            print!("{table}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The policy of `spec`, checked against the scenario's cluster; a bad spec names
/// `--policy` or the scenario's `policy` field.
fn build_policy(
    args: &ReplayArgs,
    scenario: &Scenario,
    spec: &str,
) -> anyhow::Result<Box<dyn dlsim_model::policy::Policy>> {
    let bad = |e: String| match &args.policy {
        Some(_) => BadInput(format!("--policy: {e}")),
        None => {
            let text =
                dlsim_fsio::read_to_string_limited(&args.scenario, dlsim_fsio::MAX_INPUT_BYTES)
                    .unwrap_or_default();
            let e = dlsim_traces::InputError::new(&args.scenario, e);
            BadInput(e.field_in(&text, "policy").to_string())
        }
    };
    let policy = dlsim_policies::build(spec).map_err(|e| bad(e.to_string()))?;
    dlsim_model::scenario::check_policy_pods(&scenario.nodes, policy.as_ref()).map_err(bad)?;
    Ok(policy)
}

/// One replay of `scenario` under `policy`, written to `out` (or the default folder).
fn replay_one(
    args: &ReplayArgs,
    scenario: &Scenario,
    policy: Box<dyn dlsim_model::policy::Policy>,
    out: Option<PathBuf>,
    load_s: f64,
) -> anyhow::Result<Summary> {
    let wall = Instant::now();
    let sim_start = Instant::now();
    let mut bar = Progress::new(args.quiet);
    let output = dlsim_model::run_with_progress(scenario, policy, &mut |p| bar.update(p));
    bar.finish();
    let sim_s = sim_start.elapsed().as_secs_f64();
    let out_dir = out.unwrap_or_else(|| default_out_dir(&output.summary));
    // The run folder appears whole: written into a staging folder, then renamed.
    let staged =
        dlsim_fsio::stage_dir(&out_dir, &RUN_FILES).map_err(|e| BadInput(format!("--out: {e}")))?;
    output
        .write(&staged)
        .with_context(|| format!("writing outputs to {}", out_dir.display()))?;
    let run_json = serde_json::json!({
        "dlsim_version": env!("CARGO_PKG_VERSION"),
        "scenario_file": args.scenario,
        "load_s": load_s,
        "simulate_s": sim_s,
        "wall_s": load_s + wall.elapsed().as_secs_f64(),
        "events": output.summary.events,
        "events_per_s": output.summary.events as f64 / sim_s.max(1e-9),
        "peak_rss_mb": peak_rss_mb(),
        "threads": 1,
    });
    dlsim_fsio::write_atomic(
        &staged.join("run.json"),
        (serde_json::to_string_pretty(&run_json)? + "\n").as_bytes(),
    )?;
    dlsim_fsio::commit_dir(&staged, &out_dir)
        .with_context(|| format!("writing outputs to {}", out_dir.display()))?;
    if let Some(w) = stalled_warning(scenario, &output.summary) {
        eprintln!("warning: {w}");
    }
    if !args.quiet {
        print_summary(&output.summary);
        for job in &output.summary.online_jobs {
            print!("\n{}", job.table());
        }
        println!(
            "\n{} events in {:.2} s ({:.0} events/s). Outputs: {}",
            output.summary.events,
            sim_s,
            output.summary.events as f64 / sim_s.max(1e-9),
            out_dir.display()
        );
    }
    Ok(output.summary)
}

/// What to tell a user whose run without a horizon ended with jobs still active, at the
/// time limit or with nothing left to happen (swarm seed 13056596: eight jobs' pods held
/// 654 of 672 cores and none could start). Such jobs wait for room that never comes: pods
/// are placed one by one, not a job's pods together, so jobs whose placed pods each hold
/// part of the cluster can wait for each other for ever unless the pending timeout fails
/// them. Co-located services, when the scenario has them, are named too: the room they
/// hold is the other way a job waits for ever.
fn stalled_warning(scenario: &Scenario, s: &dlsim_model::metrics::Summary) -> Option<String> {
    let stuck = s.failures_by_reason.get("unfinished").copied().unwrap_or(0);
    if stuck == 0 || scenario.file.horizon_s.is_some() {
        return None;
    }
    let cap = dlsim_model::settings::time_cap_s(scenario.file.timeline_interval_s);
    let timeout = if scenario.file.recovery.pending_timeout_s > 0.0 {
        String::new()
    } else {
        " With `recovery.pending_timeout_s` off, jobs whose placed pods each hold part of the \
         cluster can wait for each other for ever (pods are placed one by one, not a job's \
         pods together); a timeout fails them as scheduling failures instead."
            .into()
    };
    let services = if scenario.file.faults.colocation.node_fraction > 0.0 {
        format!(
            " Co-located services (`faults.colocation`) hold about {:.0}% of {:.0}% of the \
             nodes at their daily peak: room they hold for the whole run never comes.",
            100.0 * scenario.file.faults.colocation.peak,
            100.0 * scenario.file.faults.colocation.node_fraction
        )
    } else {
        String::new()
    };
    Some(format!(
        "{stuck} job(s) never finished: the run ended with them still active, when nothing \
         was left to happen or at its time limit ({cap} s of simulated time).{services}{timeout}"
    ))
}

/// The replay's progress bar on stderr: simulated time out of the horizon (or, without one,
/// jobs ended out of the trace's) and events/s. It appears only once the run has taken a
/// second, and only on a terminal (indicatif draws nothing elsewhere) without `--quiet`.
struct Progress {
    start: Instant,
    quiet: bool,
    bar: Option<ProgressBar>,
}

impl Progress {
    fn new(quiet: bool) -> Self {
        Progress {
            start: Instant::now(),
            quiet,
            bar: None,
        }
    }

    fn update(&mut self, p: dlsim_model::Progress) {
        let wall_s = self.start.elapsed().as_secs_f64();
        if self.quiet || wall_s < 1.0 {
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let (len, unit) = match p.horizon {
                Some(h) => (h.as_ms() / 1000, "s simulated"),
                None => (p.jobs_total as u64, "jobs ended"),
            };
            let template =
                format!("{{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {unit}, {{msg}}");
            let bar = ProgressBar::new(len).with_elapsed(self.start.elapsed());
            bar.set_style(
                ProgressStyle::with_template(&template)
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            bar
        });
        bar.set_position(match p.horizon {
            Some(_) => p.now.as_ms() / 1000,
            None => p.jobs_ended as u64,
        });
        bar.set_message(format!(
            "day {:.2} simulated, {:.0} events/s",
            p.now.as_secs_f64() / 86_400.0,
            p.events as f64 / wall_s
        ));
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn default_out_dir(s: &Summary) -> PathBuf {
    let policy = dlsim_policies::folder_name(&s.policy);
    PathBuf::from("reports/runs").join(format!("{}-{}-s{}", s.scenario, policy, s.seed))
}

/// Peak resident memory of this process, from /proc (Linux); `null` elsewhere.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn print_summary(s: &Summary) {
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    let mins = |x: f64| format!("{:.1} min", x / 60.0);
    let rows: Vec<(&str, String)> = vec![
        ("scenario", s.scenario.clone()),
        ("policy", s.policy.clone()),
        ("seed", s.seed.to_string()),
        ("jobs submitted", s.jobs_submitted.to_string()),
        ("jobs completed", s.jobs_completed.to_string()),
        (
            "jobs failed",
            format!("{} {:?}", s.jobs_failed, s.failures_by_reason),
        ),
        (
            "pod failures / relaunches",
            format!("{} / {}", s.pod_failures, s.relaunches),
        ),
        ("JCR", pct(s.jcr)),
        ("JCT mean", mins(s.jct_mean_s)),
        ("JCT median", mins(s.jct_median_s)),
        ("JCT p90", mins(s.jct_p90_s)),
        ("job CPU util (used/alloc)", pct(s.cpu_util_mean)),
        ("job mem util (used/alloc)", pct(s.mem_util_mean)),
        ("job GPU util (used/alloc)", pct(s.gpu_util_mean)),
        (
            "pooled CPU util worker / PS",
            format!(
                "{} / {}",
                pct(s.pooled_worker_cpu_util),
                pct(s.pooled_ps_cpu_util)
            ),
        ),
        (
            "pooled mem util worker / PS",
            format!(
                "{} / {}",
                pct(s.pooled_worker_mem_util),
                pct(s.pooled_ps_mem_util)
            ),
        ),
        (
            "cluster CPU used / alloc",
            format!("{} / {}", pct(s.cluster_cpu_util), pct(s.cluster_cpu_alloc)),
        ),
        (
            "cluster mem used / alloc",
            format!("{} / {}", pct(s.cluster_mem_util), pct(s.cluster_mem_alloc)),
        ),
        ("cluster GPU used", pct(s.cluster_gpu_util)),
        ("makespan", format!("{:.2} h", s.makespan_s / 3600.0)),
    ];
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    for (k, v) in rows {
        println!("{k:<width$}  {v}");
    }
}

/// Makes the replay's own thread one of rayon's global pool (with `threads` in all), so
/// that a policy's parallel planning (`par_iter` inside `on_tick`) runs on this thread
/// and the others together. Called from outside the pool, `par_iter` would hand the work
/// to sleeping workers and wait: on 2 cores that measured no faster than one thread.
/// A pool already built (a test running several replays in one process) is kept.
fn plan_on_this_thread(threads: Option<usize>) -> anyhow::Result<()> {
    if threads == Some(0) {
        return Err(BadInput("--threads: must be at least 1".into()).into());
    }
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .use_current_thread()
        .build_global();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsim_engine::SimTime;
    use std::time::Duration;

    fn report(now_s: u64, horizon_s: Option<u64>) -> dlsim_model::Progress {
        dlsim_model::Progress {
            now: SimTime::from_secs(now_s),
            events: 50_000,
            jobs_ended: 30,
            jobs_total: 120,
            horizon: horizon_s.map(SimTime::from_secs),
        }
    }

    fn started(ago_s: u64) -> Progress {
        let mut p = Progress::new(false);
        p.start = Instant::now() - Duration::from_secs(ago_s);
        p
    }

    #[test]
    fn the_bar_appears_after_a_second_and_counts_the_horizon_or_the_jobs() {
        let mut fresh = started(0);
        fresh.update(report(600, None));
        assert!(fresh.bar.is_none(), "no bar in the first second");
        let mut quiet = Progress::new(true);
        quiet.start = Instant::now() - Duration::from_secs(5);
        quiet.update(report(600, None));
        assert!(quiet.bar.is_none(), "no bar with --quiet");

        let mut by_jobs = started(5);
        by_jobs.update(report(43_200, None));
        let bar = by_jobs.bar.as_ref().unwrap();
        assert_eq!((bar.position(), bar.length()), (30, Some(120)));
        assert!(
            bar.message().starts_with("day 0.50 simulated, "),
            "{}",
            bar.message()
        );
        assert!(bar.message().ends_with(" events/s"));

        let mut by_time = started(5);
        by_time.update(report(3_600, Some(7_200)));
        let bar = by_time.bar.as_ref().unwrap();
        assert_eq!((bar.position(), bar.length()), (3_600, Some(7_200)));
    }
}
