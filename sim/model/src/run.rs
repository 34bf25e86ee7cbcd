//! One replay from a loaded scenario to its outputs: build the world, run the engine,
//! summarise, and write the files.

use crate::metrics::{self, Summary, SummaryInputs};
use crate::policy::Policy;
use crate::world::{Event, World};
use crate::Scenario;
use dlsim_engine::{EventQueue, SimTime};
use std::path::Path;

/// Everything a replay produces.
pub struct RunOutput {
    pub summary: Summary,
    pub summary_json: String,
    pub jobs_csv: String,
    pub timeline_csv: String,
    /// `observations.csv`, when the scenario traces observations.
    pub observations_csv: Option<String>,
    /// `online.csv`, when the scenario has online jobs.
    pub online_csv: Option<String>,
    pub world: World,
}

/// Where a replay stands, for progress reports ([`run_with_progress`]).
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub now: SimTime,
    pub events: u64,
    pub jobs_ended: usize,
    pub jobs_total: usize,
    pub horizon: Option<SimTime>,
}

/// Events between two progress reports: rare enough to cost nothing, frequent enough
/// (well under a second of a debug build) for a live progress bar.
const PROGRESS_EVERY: u64 = 1 << 10;

/// Replays `scenario` under `policy`. Cannot fail: the scenario was validated on load.
pub fn run(scenario: &Scenario, policy: Box<dyn Policy>) -> RunOutput {
    run_with_progress(scenario, policy, &mut |_| {})
}

/// [`run`], reporting [`Progress`] every few thousand events. The report only reads the
/// world: outputs are the same as [`run`]'s.
pub fn run_with_progress(
    scenario: &Scenario,
    policy: Box<dyn Policy>,
    progress: &mut dyn FnMut(Progress),
) -> RunOutput {
    let mut queue: EventQueue<Event> = EventQueue::with_capacity(1 << 16);
    let mut world = World::new(scenario, policy, &mut queue);
    let jobs_total = scenario.job_count();
    let horizon = scenario.file.horizon_s.map(SimTime::from_secs);
    let (events, last) =
        dlsim_engine::run_observed(&mut world, &mut queue, PROGRESS_EVERY, |w, now, events| {
            progress(Progress {
                now,
                events,
                jobs_ended: w.tally.ended(),
                jobs_total,
                horizon,
            })
        });
    world.finish(last, !queue.is_empty());
    let name = if scenario.file.name.is_empty() {
        scenario
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    } else {
        scenario.file.name.clone()
    };
    let policy = world.policy_spec();
    let online = world.online_summaries(&name, scenario.file.seed);
    let summary = metrics::summarize(&SummaryInputs {
        scenario: &name,
        policy: &policy,
        seed: scenario.file.seed,
        jobs: &world.tally,
        timeline: &world.timeline,
        capacity: world.cluster.capacity(),
        events,
        rejected_actions: world.rejected_actions,
        online: &online,
    });
    let summary_json = serde_json::to_string_pretty(&summary).expect("summary serialises") + "\n";
    RunOutput {
        jobs_csv: std::mem::take(&mut world.tally.csv) + &world.online_jobs_rows(),
        timeline_csv: metrics::timeline_csv(&world.timeline),
        observations_csv: world.observations.take(),
        online_csv: world.online_csv(),
        summary,
        summary_json,
        world,
    }
}

/// Every file a batch replay may write into its folder (`run.json` is the CLI's).
pub const RUN_FILES: [&str; 6] = [
    "summary.json",
    "jobs.csv",
    "timeline.csv",
    "observations.csv",
    "online.csv",
    "run.json",
];

impl RunOutput {
    /// The reproducible files of the run, (name, contents), in the order [`write`](Self::write)
    /// writes them: `summary.json`, `jobs.csv`, `observations.csv` and `online.csv` where the
    /// run has them, `timeline.csv`.
    pub fn files(&self) -> Vec<(&'static str, &str)> {
        let mut files = vec![
            ("summary.json", self.summary_json.as_str()),
            ("jobs.csv", self.jobs_csv.as_str()),
        ];
        if let Some(obs) = &self.observations_csv {
            files.push(("observations.csv", obs));
        }
        if let Some(online) = &self.online_csv {
            files.push(("online.csv", online));
        }
        files.push(("timeline.csv", &self.timeline_csv));
        files
    }

    /// Writes the reproducible files ([`files`](Self::files)) into `dir` ([`write_files`]).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        write_files(dir, self.files())
    }
}

/// Writes a run's files, (name, contents) as [`RunOutput::files`] gives them, into `dir`
/// (created if needed), atomically each: one way for a replay and for the runs
/// `dlsim reproduce --keep-runs` keeps.
pub fn write_files<'a>(
    dir: &Path,
    files: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in files {
        dlsim_fsio::write_atomic(&dir.join(name), text.as_bytes())?;
    }
    Ok(())
}
