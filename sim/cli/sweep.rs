//! `dlsim sweep` and `dlsim merge`: run a grid of replays in parallel (rayon, with an
//! indicatif progress bar), resumably and optionally as one deterministic shard of many,
//! then write the results and ablation tables; `merge` combines shard folders.
//!
//! The grid and seeds come from `dlsim_report::sweep`, the files from
//! `dlsim_report::exec`; this module only validates arguments, schedules and reports.

use crate::BadInput;
use clap::Args;
use dlsim_report::exec;
use dlsim_report::sweep::{Plan, Point, Shard, Sweep};
use dlsim_report::table::Table;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
pub struct SweepArgs {
    /// Sweep file (JSON): scenario, policies, policy and scenario parameters, seeds.
    pub sweep: PathBuf,
    /// Output folder; runs already finished there are skipped (resume).
    #[arg(long, required_unless_present = "dry_run")]
    pub out: Option<PathBuf>,
    /// Worker threads [default: all cores].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Run only shard i of n (0-based): the points whose grid index is i mod n.
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// Print nothing but errors and the final table.
    #[arg(long, short)]
    pub quiet: bool,
    /// Validate the sweep and print the runs it would do (id, policy, scenario
    /// parameters, seed; `done` for runs already in --out), then stop: nothing is written.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args)]
pub struct MergeArgs {
    /// Shard output folders of one sweep (each holds the same sweep.json).
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// Output folder for the combined sweep (may be one of the shard folders).
    #[arg(long)]
    pub out: PathBuf,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

fn parse_shard(s: &str) -> Result<Shard, String> {
    Shard::parse(s)
}

pub fn run(args: &SweepArgs) -> anyhow::Result<ExitCode> {
    let sweep = Sweep::load(&args.sweep).map_err(|e| BadInput(e.to_string()))?;
    for w in exec::validate(&sweep).map_err(|e| BadInput(e.to_string()))? {
        eprintln!("warning: {w}");
    }
    if args.threads == Some(0) {
        return Err(BadInput("--threads: must be at least 1".into()).into());
    }
    let shard = args.shard.unwrap_or(Shard::ALL);
    let plan = sweep.plan();
    let Some(out) = args.out.as_deref().filter(|_| !args.dry_run) else {
        print_plan(&sweep, &plan, shard, args.out.as_deref());
        return Ok(ExitCode::SUCCESS);
    };
    exec::check_out(out, &plan).map_err(|e| BadInput(format!("{e:#}")))?;
    exec::write_plan(out, &plan)?;
    let mine = shard_points(&plan, shard);
    let todo: Vec<_> = mine
        .iter()
        .filter(|p| !exec::is_done(out, p))
        .copied()
        .collect();
    let skipped = mine.len() - todo.len();
    let bar = progress_bar(todo.len() as u64, args.quiet);
    if skipped > 0 {
        bar.println(format!(
            "{skipped} finished runs found in {}: skipped",
            out.display()
        ));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()?;
    let threads = pool.current_num_threads();
    let start = Instant::now();
    pool.install(|| {
        todo.par_iter().try_for_each(|p| {
            exec::run_point(&sweep, p, out)?;
            bar.inc(1);
            anyhow::Ok(())
        })
    })?;
    bar.finish_and_clear();
    let wall_s = start.elapsed().as_secs_f64();
    if !args.quiet {
        println!(
            "{} runs in {wall_s:.2} s on {threads} threads ({:.2} runs/s); {skipped} skipped",
            todo.len(),
            todo.len() as f64 / wall_s.max(1e-9)
        );
    }
    if shard != Shard::ALL {
        if !args.quiet {
            println!(
                "shard {}/{} done in {}; combine the shards with `dlsim merge`",
                shard.index,
                shard.count,
                out.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let view = exec::finish(out, &plan)?;
    print_view(&view, out);
    Ok(ExitCode::SUCCESS)
}

pub fn merge(args: &MergeArgs) -> anyhow::Result<ExitCode> {
    let plan = exec::merge_plan(&args.shards, &args.out).map_err(|e| BadInput(format!("{e:#}")))?;
    let view = exec::merge(&plan, &args.out)?;
    if !args.quiet {
        print_view(&view, &args.out);
    }
    Ok(ExitCode::SUCCESS)
}

/// The runs of `plan` that fall to this shard, in plan order.
fn shard_points(plan: &Plan, shard: Shard) -> Vec<&Point> {
    plan.points
        .iter()
        .enumerate()
        .filter(|(j, _)| shard.contains(*j))
        .map(|(_, p)| p)
        .collect()
}

/// `--dry-run`: one line per run of this shard, as a tab-separated table.
fn print_plan(sweep: &Sweep, plan: &Plan, shard: Shard, out: Option<&Path>) {
    let mine = shard_points(plan, shard);
    let done = |p: &Point| out.is_some_and(|o| exec::is_done(o, p));
    let n_done = mine.iter().filter(|p| done(p)).count();
    let place = out.map_or(String::new(), |o| format!(" in {}", o.display()));
    println!(
        "sweep `{}`: {} runs of {} (scenario {}; baseline {}), {n_done} already done{place}",
        plan.name,
        mine.len(),
        plan.points.len(),
        sweep.scenario_path.display(),
        plan.baseline,
    );
    println!("id\tpolicy\tscenario_params\tseed\tstatus");
    for p in mine {
        let status = if done(p) { "done" } else { "todo" };
        println!(
            "{}\t{}\t{}\t{}\t{status}",
            p.id,
            p.policy,
            p.group(),
            p.seed
        );
    }
}

fn progress_bar(len: u64, quiet: bool) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if quiet {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} runs, eta {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}

fn print_view(view: &Table, out: &std::path::Path) {
    if view.rows.is_empty() {
        println!("(no comparisons: the sweep has one policy configuration)");
    } else {
        print!("{}", view.markdown());
    }
    println!(
        "\nResults: {0}/results.csv, ablation: {0}/ablation.md (also CSV and Parquet)",
        out.display()
    );
}
