//! The hand-over from `dlsim replay` for scenarios with `"kind": "online"`: validate, run
//! one policy or a comma-separated list, write `summary.json`, `timeline.csv` and `run.json`
//! atomically, print a table, and for several policies a comparison in the layout of Kale's
//! Table 3 (also written as `table3.md`).

use crate::metrics::OnlineSummary;
use crate::policy;
use crate::run::{run_with_progress, traffic_for};
use crate::scenario::{is_online_text, load};
use dlsim_engine::RngStreams;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why an online replay failed: bad input (exit 2) or an I/O failure (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Io(String),
}

/// Whether `path` is an online scenario (`"kind": "online"`); unreadable files are not.
pub fn is_online_scenario(path: &Path) -> bool {
    dlsim_fsio::read_to_string_limited(path, dlsim_fsio::MAX_INPUT_BYTES)
        .is_ok_and(|t| is_online_text(&t))
}

/// Kale Table 3: violation rate (%), accumulated lag (min), downtime (min), GPU hours.
pub const PAPER_TABLE3: [(&str, f64, f64, f64, f64); 5] = [
    ("adequate", 0.0, 0.0, 0.0, 672.0),
    ("hpa", 19.57, 7151.0, 163.0, 268.0),
    ("autopilot", 5.49, 4420.0, 269.0, 303.0),
    ("madu", 2.57, 2303.0, 190.0, 455.0),
    ("kale", 2.60, 2204.0, 109.0, 242.0),
];

/// `dlsim replay SCENARIO [--policy P[,P2...]] [--seed S] [--out DIR] [--quiet]`;
/// `progress` hears from each run every 1,024 events (the command line's progress bar).
pub fn replay(
    path: &Path,
    policy_arg: Option<&str>,
    seed: Option<u64>,
    out: Option<&Path>,
    quiet: bool,
    progress: &mut dyn FnMut(dlsim_model::Progress),
) -> Result<(), CliError> {
    let wall = Instant::now();
    let mut sc = load(path).map_err(|e| CliError::Input(e.to_string()))?;
    if let Some(s) = seed {
        sc.file.seed = s;
    }
    let spec_text = policy_arg
        .map(str::to_string)
        .unwrap_or_else(|| sc.file.policy.clone());
    let specs = dlsim_policies::split_list(&spec_text);
    let mut policies = Vec::new();
    for s in &specs {
        let p = policy::build(s).map_err(|e| match policy_arg {
            Some(_) => CliError::Input(format!("--policy: {e}")),
            None => {
                let text = dlsim_fsio::read_to_string_limited(path, dlsim_fsio::MAX_INPUT_BYTES)
                    .unwrap_or_default();
                let e = dlsim_traces::InputError::new(path, e.to_string());
                let e = e.field_in(&text, "policy");
                CliError::Input(e.to_string())
            }
        })?;
        policies.push(p);
    }
    let traffic = traffic_for(&sc, &RngStreams::new(sc.file.seed))
        .map_err(|e| CliError::Input(e.to_string()))?;
    let several = policies.len() > 1;
    let base = out.map(Path::to_path_buf).unwrap_or_else(|| {
        let tag = if several {
            "compare".to_string()
        } else {
            dlsim_policies::folder_name(&policies[0].name())
        };
        PathBuf::from("reports/runs").join(format!("{}-{tag}-s{}", sc.file.name, sc.file.seed))
    });
    let mut summaries = Vec::new();
    for p in policies {
        let dir = if several {
            base.join(dlsim_policies::folder_name(&p.name()))
        } else {
            base.clone()
        };
        let start = Instant::now();
        let output = run_with_progress(&sc, traffic.clone(), p, progress);
        let sim_s = start.elapsed().as_secs_f64();
        write_outputs(
            &dir,
            &output.summary,
            &output.timeline_csv,
            path,
            sim_s,
            wall.elapsed().as_secs_f64(),
        )?;
        if !quiet {
            print!("{}", output.summary.table());
            println!("simulated in {sim_s:.2} s. Outputs: {}\n", dir.display());
        }
        summaries.push(output.summary);
    }
    if several {
        let table = table3(&summaries);
        write_file(&base, "table3.md", table.as_bytes())?;
        if !quiet {
            print!("{table}");
        }
    }
    Ok(())
}

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::create_dir_all(dir)
        .and_then(|()| dlsim_fsio::write_atomic(&dir.join(name), bytes))
        .map_err(|e| CliError::Io(format!("writing {}: {e}", dir.join(name).display())))
}

fn write_outputs(
    dir: &Path,
    s: &OnlineSummary,
    timeline: &str,
    scenario: &Path,
    sim_s: f64,
    wall_s: f64,
) -> Result<(), CliError> {
    let json = serde_json::to_string_pretty(s).expect("summary serialises") + "\n";
    write_file(dir, "summary.json", json.as_bytes())?;
    write_file(dir, "timeline.csv", timeline.as_bytes())?;
    // Wall-clock figures live apart from the reproducible outputs.
    let run_json = serde_json::json!({
        "dlsim_version": env!("CARGO_PKG_VERSION"),
        "scenario_file": scenario,
        "simulate_s": sim_s,
        "wall_s": wall_s,
        "events": s.events,
        "threads": 1,
    });
    write_file(
        dir,
        "run.json",
        (serde_json::to_string_pretty(&run_json).expect("json") + "\n").as_bytes(),
    )
}

/// Our metrics next to Kale's Table 3, one row per policy.
pub fn table3(rows: &[OnlineSummary]) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "| scheme | violation rate (ours / paper) | accumulated lag, min (ours / paper) | downtime, min (ours / paper) | GPU hours (ours / paper) | GPU hours / adequate (ours / paper) | rescales |");
    let _ = writeln!(t, "|---|---|---|---|---|---|---|");
    let ours_adequate = rows
        .iter()
        .find(|s| s.policy.starts_with("adequate"))
        .map(|s| s.gpu_hours);
    for s in rows {
        let name = s.policy.split('[').next().unwrap_or("");
        let paper = PAPER_TABLE3.iter().find(|p| p.0 == name);
        let p = |f: fn(&(&str, f64, f64, f64, f64)) -> String| {
            paper.map(f).unwrap_or_else(|| "-".into())
        };
        let rel = ours_adequate
            .map(|a| format!("{:.2}", s.gpu_hours / a))
            .unwrap_or_else(|| "-".into());
        // A configured variant (e.g. an operator-tuned `hpa[...]`) is compared with the
        // paper's row of its scheme, and says so.
        let label = if paper.is_some() && s.policy != name {
            format!("{} (paper row: {name})", s.policy)
        } else {
            s.policy.clone()
        };
        let _ = writeln!(
            t,
            "| {label} | {:.2}% / {} | {:.0} / {} | {:.0} / {} | {:.1} / {} | {rel} / {} | {} |",
            100.0 * s.violation_rate,
            p(|r| format!("{:.2}%", r.1)),
            s.accumulated_lag_min,
            p(|r| format!("{:.0}", r.2)),
            s.downtime_min,
            p(|r| format!("{:.0}", r.3)),
            s.gpu_hours,
            p(|r| format!("{:.0}", r.4)),
            p(|r| format!("{:.2}", r.4 / 672.0)),
            s.rescales,
        );
    }
    t
}
