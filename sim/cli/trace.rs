//! `dlsim trace`: generate native traces (importers and inspection come with issue #8).

use crate::BadInput;
use clap::{Args, Subcommand};
use dlsim_traces::{generate, write_trace, GeneratorConfig, TraceHeader};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum TraceCommand {
    /// Generate an AntGroup-style trace (distributions from the papers' published statistics).
    Gen(GenArgs),
}

#[derive(Args)]
pub struct GenArgs {
    /// Days of arrivals.
    #[arg(long, default_value_t = 1.0)]
    pub days: f64,
    /// Mean job arrivals per day.
    #[arg(long, default_value_t = 2000.0)]
    pub jobs_per_day: f64,
    /// Share of jobs with GPU workers.
    #[arg(long, default_value_t = 0.05)]
    pub gpu_fraction: f64,
    /// Seed of the `trace-gen` stream.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output file (JSON Lines).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(cmd: TraceCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TraceCommand::Gen(a) => {
            if !(a.days > 0.0 && a.jobs_per_day > 0.0 && (0.0..=1.0).contains(&a.gpu_fraction)) {
                return Err(BadInput(
                    "--days and --jobs-per-day must be > 0, --gpu-fraction in [0, 1]".into(),
                )
                .into());
            }
            let cfg = GeneratorConfig {
                days: a.days,
                jobs_per_day: a.jobs_per_day,
                gpu_job_fraction: a.gpu_fraction,
                ..GeneratorConfig::default()
            };
            let jobs = generate(&cfg, a.seed);
            let header = TraceHeader::new(serde_json::json!({
                "generator": "dlsim trace gen (AntGroup-style)",
                "seed": a.seed,
                "config": cfg,
            }));
            write_trace(&a.out, &header, &jobs)?;
            println!(
                "wrote {} jobs over {} days to {}",
                jobs.len(),
                a.days,
                a.out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
