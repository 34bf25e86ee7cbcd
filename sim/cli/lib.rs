//! The command-line interface: argument parsing and the subcommands. Arguments are turned
//! into validated inputs (a loaded `Scenario`, a built policy) before anything runs, so
//! every bad input fails early with exit code 2 and no output files.

mod check;
mod policies;
mod replay;
mod report;
mod reproduce;
mod schema;
mod sensitivity;
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
    #[command(
        after_help = "Policies and their parameters: `dlsim policies`, or `dlsim replay --help`.",
        after_long_help = policies::text()
    )]
    Replay(replay::ReplayArgs),
    /// List every policy (batch and online) with its parameters, types, defaults and meanings.
    Policies(policies::PoliciesArgs),
    /// Print the JSON Schema of scenario or sweep files.
    Schema(schema::SchemaArgs),
    /// Measure the real PS/worker kernel and fit the simulator's throughput model to it;
    /// ends by printing the production factors the simulator's unit contract derives from
    /// the fit, kind by kind (or why it cannot use it).
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
    /// Measure how much each open choice of the reproduction moves its rows: the
    /// reproduction once as set and once per variant of a choices file.
    Sensitivity(sensitivity::SensitivityArgs),
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
    let (quiet, started) = (cli.command.quiet(), std::time::Instant::now());
    let result = dispatch(cli.command);
    release_hint(quiet, started.elapsed().as_secs_f64());
    result
}

/// A debug build runs the simulator several times slower than a release build: after a
/// command that took over 10 s, say so once (not with `--quiet`, never in release). The
/// environment variable `DLSIM_RELEASE_HINT_AFTER_S` moves the threshold (the tests set 0).
fn release_hint(quiet: bool, wall_s: f64) {
    let after_s = std::env::var("DLSIM_RELEASE_HINT_AFTER_S")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(10.0);
    if cfg!(debug_assertions) && !quiet && wall_s > after_s {
        eprintln!(
            "hint: that took {wall_s:.0} s in a debug build; a release build is several times \
             faster (`cargo run --release -- ...`, or `cargo install --path .`)"
        );
    }
}

impl Command {
    /// Whether `--quiet` was given (every command takes it).
    fn quiet(&self) -> bool {
        match self {
            Command::Replay(a) => a.quiet,
            Command::Policies(a) => a.quiet,
            Command::Schema(a) => a.quiet,
            Command::Calibrate(a) => a.quiet,
            Command::Trace(t) => t.quiet(),
            Command::Sweep(a) => a.quiet,
            Command::Merge(a) => a.quiet,
            Command::Check(a) => a.quiet,
            Command::Report(a) => a.quiet,
            Command::Reproduce(a) => a.quiet,
            Command::Sensitivity(a) => a.quiet,
            Command::Swarm(a) => a.quiet,
        }
    }
}

fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Replay(args) => replay::run(&args),
        Command::Policies(args) => policies::run(&args),
        Command::Schema(args) => schema::run(&args),
        Command::Trace(cmd) => trace::run(cmd),
        Command::Sweep(args) => sweep::run(&args),
        Command::Merge(args) => sweep::merge(&args),
        Command::Check(args) => check::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Reproduce(args) => reproduce::run(&args),
        Command::Sensitivity(args) => sensitivity::run(&args),
        Command::Swarm(args) => swarm::run(&args),
        Command::Calibrate(args) => {
            use dlsim_model::perf::calibration::{load_factors, SHIPPED_PATH};
            let shipped = std::path::Path::new(SHIPPED_PATH);
            let validate = |json: &str| {
                let factors =
                    load_factors(json, shipped, Default::default()).map_err(|e| e.to_string())?;
                Ok(factors
                    .iter()
                    .map(|(kind, f)| {
                        format!(
                            "contract: {kind}: production factors over the kernel: gradient x{:.1}, \
                             worker intercepts x{:.1}, PS work x{:.0}",
                            f.grad, f.runtime, f.ps
                        )
                    })
                    .collect())
            };
            let sim = dlsim_kernel::calibrate::Simulator {
                shipped,
                validate: &validate,
            };
            dlsim_kernel::calibrate::run_cli(&args, Some(sim)).map_err(|e| {
                match e.downcast::<dlsim_kernel::calibrate::BadArgs>() {
                    Ok(bad) => BadInput(bad.0).into(),
                    Err(e) => e,
                }
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
