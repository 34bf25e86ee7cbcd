//! `dlsim trace`: generate native traces, import public ones (`dlsim_importers`), and
//! inspect any native trace (statistics and plots).

use crate::BadInput;
use anyhow::Context;
use clap::{Args, Subcommand};
use dlsim_importers::ImportOptions;
use dlsim_model::online::rates::RateFormat;
use dlsim_traces::{generate, read_trace, write_trace, GeneratorConfig, TraceHeader};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Subcommand)]
pub enum TraceCommand {
    /// Generate an AntGroup-style trace (distributions from the papers' published statistics).
    Gen(GenArgs),
    /// Import a public trace into the native format, or a rate series for online scenarios
    /// (`--format` lists them).
    Import(ImportArgs),
    /// Print counts, distributions, arrivals by hour and outcome mix of a native trace.
    Inspect(InspectArgs),
}

#[derive(Args)]
pub struct ImportArgs {
    /// Source format (listed from the importers' registries).
    #[arg(long, help = format_help(), long_help = format_long_help())]
    pub format: String,
    /// Source file (CSV, or SWF plain or gzip).
    pub input: PathBuf,
    /// Output: the native trace (JSON Lines), or the rate series (CSV) for a rate format.
    #[arg(long)]
    pub out: PathBuf,
    /// The source's node list: openb node list CSV, or PAI machine spec.
    #[arg(long)]
    pub nodes: Option<PathBuf>,
    /// Write the cluster as a dlsim node-list CSV (name,cores,mem_gb,gpus,gpu_model).
    #[arg(long)]
    pub cluster_out: Option<PathBuf>,
    /// Skip malformed rows (each reason counted) instead of stopping at the first.
    #[arg(long)]
    pub skip_bad: bool,
    /// Stop at the first odd row instead of repairing it (e.g. openb memory_mib = 0; the
    /// report lists what is repaired by default).
    #[arg(long)]
    pub strict: bool,
    /// Seed of the `import-<format>` stream that fills fields the source lacks.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args)]
pub struct InspectArgs {
    /// Native trace file.
    pub trace: PathBuf,
    /// Also write plots: PREFIX-arrivals, PREFIX-sizes, PREFIX-size-duration (.png, .svg, .pdf).
    #[arg(long)]
    pub plot_out: Option<PathBuf>,
    /// Print nothing but errors (with --plot-out: only write the plots).
    #[arg(long, short)]
    pub quiet: bool,
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
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

impl TraceCommand {
    pub fn quiet(&self) -> bool {
        match self {
            TraceCommand::Gen(a) => a.quiet,
            TraceCommand::Import(a) => a.quiet,
            TraceCommand::Inspect(a) => a.quiet,
        }
    }
}

pub fn run(cmd: TraceCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TraceCommand::Import(a) => import(&a),
        TraceCommand::Inspect(a) => inspect(&a),
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
            if let Err((field, msg)) = cfg.validate() {
                let flag = field.trim_start_matches("generate.").replace('_', "-");
                return Err(BadInput(format!("--{flag}: {msg}")).into());
            }
            let jobs = generate(&cfg, a.seed);
            let header = TraceHeader::new(serde_json::json!({
                "generator": "dlsim trace gen (AntGroup-style)",
                "seed": a.seed,
                "config": cfg,
            }));
            create_parent(&a.out)?;
            write_trace(&a.out, &header, &jobs)
                .with_context(|| format!("writing {}", a.out.display()))?;
            if !a.quiet {
                println!(
                    "wrote {} jobs over {} days to {}",
                    jobs.len(),
                    a.days,
                    a.out.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `--format`'s short help: the names, job traces then rate series.
fn format_help() -> String {
    format!(
        "Source format: {} (job traces); {} (rate series for online scenarios)",
        dlsim_importers::format_names().join(", "),
        RateFormat::ALL
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `--format`'s long help (`--help`): each name with what it reads.
fn format_long_help() -> String {
    let mut s = String::from("Source format. Job traces (into the native trace format):");
    for f in dlsim_importers::IMPORTERS {
        s.push_str(&format!("\n  {:<20}{}", f.name, f.source));
    }
    s.push_str("\nRate series (CSV, for online scenarios):");
    for f in RateFormat::ALL {
        s.push_str(&format!("\n  {}", f.as_str()));
    }
    s
}

fn import(a: &ImportArgs) -> anyhow::Result<ExitCode> {
    let wall = Instant::now();
    if let Some(f) = RateFormat::parse(&a.format) {
        // Rate series for online scenarios (sim/model/src/online/rates.rs), not job traces.
        create_parent(&a.out)?;
        let report = dlsim_model::online::rates::import_cli(f, &a.input, &a.out, a.skip_bad)
            .map_err(|e| BadInput(e.to_string()))?;
        if !a.quiet {
            print!("{report}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(format) = dlsim_importers::format(&a.format) else {
        let names: Vec<&str> = dlsim_importers::format_names()
            .into_iter()
            .chain(RateFormat::ALL.iter().map(|f| f.as_str()))
            .collect();
        return Err(BadInput(format!(
            "--format: unknown format `{}` (expected one of {})",
            a.format,
            names.join(", ")
        ))
        .into());
    };
    let opts = ImportOptions {
        skip_bad: a.skip_bad,
        strict: a.strict,
        seed: a.seed,
        nodes: a.nodes.clone(),
    };
    let imported =
        dlsim_importers::import(format, &a.input, &opts).map_err(|e| BadInput(e.to_string()))?;
    if !a.quiet {
        print!("{}", imported.report);
    }
    if imported.jobs.is_empty() {
        return Err(BadInput(format!(
            "{}: no job could be imported (see the report above)",
            a.input.display()
        ))
        .into());
    }
    let header = dlsim_importers::header(format, &a.input, &opts, &imported.report);
    for out in std::iter::once(&a.out).chain(&a.cluster_out) {
        dlsim_fsio::check_target(out).map_err(|e| crate::BadInput(e.to_string()))?;
    }
    for out in std::iter::once(&a.out).chain(&a.cluster_out) {
        create_parent(out)?;
    }
    write_trace(&a.out, &header, &imported.jobs)
        .with_context(|| format!("writing {}", a.out.display()))?;
    if let Some(path) = &a.cluster_out {
        let written = dlsim_importers::write_node_list(path, &imported.nodes);
        if let Err(e) = written {
            // Nothing partial: the trace without its cluster goes too.
            let _ = std::fs::remove_file(&a.out);
            return Err(e).with_context(|| format!("writing {}", path.display()));
        }
    }
    if a.quiet {
        return Ok(ExitCode::SUCCESS);
    }
    println!("wrote {} jobs to {}", imported.jobs.len(), a.out.display());
    if let Some(path) = &a.cluster_out {
        println!("wrote {} nodes to {}", imported.nodes.len(), path.display());
    }
    println!("import took {:.2} s", wall.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

/// Creates the folder an output goes to, if missing.
fn create_parent(path: &std::path::Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(())
}

fn inspect(a: &InspectArgs) -> anyhow::Result<ExitCode> {
    let trace = read_trace(&a.trace).map_err(|e| BadInput(e.to_string()))?;
    if !a.quiet {
        print!("{}", dlsim_importers::inspect::inspect(&trace));
    }
    if let Some(prefix) = &a.plot_out {
        // Every figure file is checked before the first is drawn: a target that is not a
        // regular file is the user's error, and none is written.
        for (suffix, _) in dlsim_importers::inspect::figures(&trace) {
            for ext in [".png", ".svg", ".pdf"] {
                let mut p = prefix.as_os_str().to_os_string();
                p.push(suffix);
                p.push(ext);
                dlsim_fsio::check_target(std::path::Path::new(&p))
                    .map_err(|e| BadInput(format!("--plot-out: {e}")))?;
            }
        }
        create_parent(prefix)?;
        let written = dlsim_importers::inspect::plot(&trace, prefix)?;
        for p in written.iter().filter(|_| !a.quiet) {
            println!("wrote {}", p.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
