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
    let opts = dlsim_swarm::Options {
        seeds: a.seeds,
        from: a.from,
        minutes: a.minutes,
        threads: a.threads.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        }),
    };
    let report = dlsim_swarm::swarm(opts, |seed, result| match result {
        Err(why) => eprintln!(
            "seed {seed} FAILED: {why}\n  reproduce: {}",
            dlsim_swarm::reproducer(seed)
        ),
        Ok(what) if a.verbose && !a.quiet => println!("seed {seed}: {what}"),
        Ok(_) => {}
    });
    let line = format!(
        "swarm: {} seeds from {} in {:.1} s, {} failed",
        report.ran,
        a.from,
        report.elapsed.as_secs_f64(),
        report.failures.len()
    );
    if !a.quiet || !report.failures.is_empty() {
        println!("{line}");
    }
    Ok(if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
