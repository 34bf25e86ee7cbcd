//! The command-line interface: argument parsing and the subcommands. Arguments are turned
//! into validated inputs (a loaded `Scenario`, a built policy) before anything runs, so
//! every bad input fails early with exit code 2 and no output files.

mod check;
mod replay;
mod report;
mod reproduce;
mod swarm;
mod sweep;
mod trace;

use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::fmt;
use std::process::ExitCode;

/// Bad user input: a malformed file, an unknown policy, an impossible resource request.
/// The CLI exits with code 2 for these, 1 for anything else.
#[derive(Debug)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// The exit code for an error returned by [`run`].
pub fn exit_code(err: &anyhow::Error) -> u8 {
    if err.downcast_ref::<BadInput>().is_some() {
        2
    } else {
        1
    }
}

#[derive(Parser)]
#[command(name = "dlsim", version, about = "Deterministic discrete-event simulator for elastic DLRM training clusters", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay a scenario (cluster + trace) under a scheduling policy and write its metrics.
    Replay(replay::ReplayArgs),
    /// Measure the real PS/worker kernel and fit the simulator's throughput model to it.
    Calibrate(dlsim_kernel::calibrate::CalibrateArgs),
    /// Generate, inspect or convert job traces.
    #[command(subcommand)]
    Trace(trace::TraceCommand),
    /// Run a grid of replays (policies x parameters x seeds) in parallel, resumably.
    Sweep(sweep::SweepArgs),
    /// Combine the shard folders of one sweep and write its tables.
    Merge(sweep::MergeArgs),
    /// Compare runs or sweeps with golden metrics; exit 1 on a regression (--bless records).
    Check(check::CheckArgs),
    /// Aggregate runs or sweeps into report.md, a self-contained report.html, tables and figures.
    Report(report::ReportArgs),
    /// Run the papers' experiments and put every published number next to dlsim's.
    Reproduce(reproduce::ReproduceArgs),
    /// Draw random scenarios under every policy and check the invariants (a VOPR-style swarm).
    Swarm(swarm::SwarmArgs),
}

/// Parses `args` and runs the chosen subcommand.
pub fn run<I, T>(args: I) -> anyhow::Result<ExitCode>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are successes; usage errors exit 2 as clap's do.
            let code = if e.use_stderr() { 2 } else { 0 };
            e.print()?;
            return Ok(ExitCode::from(code));
        }
    };
    match cli.command {
        Command::Replay(args) => replay::run(&args),
        Command::Trace(cmd) => trace::run(cmd),
        Command::Sweep(args) => sweep::run(&args),
        Command::Merge(args) => sweep::merge(&args),
        Command::Check(args) => check::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Reproduce(args) => reproduce::run(&args),
        Command::Swarm(args) => swarm::run(&args),
        Command::Calibrate(args) => {
            dlsim_kernel::calibrate::run_cli(&args).map_err(|e| {
                match e.downcast::<dlsim_kernel::calibrate::BadArgs>() {
                    Ok(bad) => BadInput(bad.0).into(),
                    Err(e) => e,
                }
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
