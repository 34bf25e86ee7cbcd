//! `dlsim swarm`: random scenarios under every policy, checked against the invariants
//! (`dlsim_swarm`). Prints one line per failed seed with its reproducer, and a summary.

use crate::BadInput;
use clap::Args;
use std::process::ExitCode;

#[derive(Args)]
pub struct SwarmArgs {
    /// How many seeds to run.
    #[arg(long)]
    pub seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub from: u64,
    /// Stop starting new seeds after this many minutes of wall time.
    #[arg(long)]
    pub minutes: Option<f64>,
    /// Worker threads [default: all cores]; results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Report a seed still running after this many seconds as slow (a likely hang), while
    /// it runs; slow seeds make the swarm exit 1.
    #[arg(long, default_value_t = 60.0)]
    pub slow_s: f64,
    /// Print a line for every seed, not only failures.
    #[arg(long, short)]
    pub verbose: bool,
    /// Print only failures (and errors).
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(a: &SwarmArgs) -> anyhow::Result<ExitCode> {
    if a.minutes.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
        return Err(BadInput("--minutes: must be a positive number".into()).into());
    }
    if !(a.slow_s.is_finite() && a.slow_s > 0.0) {
        return Err(BadInput("--slow-s: must be a positive number".into()).into());
    }
    let opts = dlsim_swarm::Options {
        seeds: a.seeds,
        from: a.from,
        minutes: a.minutes,
        threads: a.threads.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        }),
        slow_after: std::time::Duration::from_secs_f64(a.slow_s),
    };
    let report = dlsim_swarm::swarm(
        opts,
        |seed, result| match result {
            Err(why) => eprintln!(
                "seed {seed} FAILED: {why}\n  reproduce: {}",
                dlsim_swarm::reproducer(seed)
            ),
            Ok(what) if a.verbose && !a.quiet => println!("seed {seed}: {what}"),
            Ok(_) => {}
        },
        |seed, running| {
            eprintln!(
                "seed {seed} SLOW: running for {:.1} s, over --slow-s {} (a hang?)\n  reproduce: {}",
                running.as_secs_f64(),
                a.slow_s,
                dlsim_swarm::reproducer(seed)
            )
        },
    );
    let mut line = format!(
        "swarm: {} seeds from {} in {:.1} s, {} failed",
        report.ran,
        a.from,
        report.elapsed.as_secs_f64(),
        report.failures.len()
    );
    if !report.slow.is_empty() {
        let seeds: Vec<String> = report.slow.iter().map(u64::to_string).collect();
        line += &format!(
            ", {} slow (over {} s: {})",
            report.slow.len(),
            a.slow_s,
            seeds.join(", ")
        );
    }
    if !a.quiet || !report.failures.is_empty() || !report.slow.is_empty() {
        println!("{line}");
    }
    Ok(if report.failures.is_empty() && report.slow.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
