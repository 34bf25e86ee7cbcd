//! A job's lifecycle as one typed state machine: the [`Phase`] enum, whose variants carry
//! their own data, and every transition between phases, each a named method that checks
//! the phase it starts from. Nothing outside this module can change a job's phase: the
//! world calls these methods as its events arrive, and an illegal transition (a world bug,
//! never an input error) panics with the phase it met.
//!
//! The transition table (from, event, to) is in ARCHITECTURE.md, "The job lifecycle";
//! each method below says which phases it starts from. A transition to `Starting` is
//! followed by `pods_changed` in the same event, which moves
//! the job on to `Training` (or `Reloading`) when its pods allow: one rule decides when a
//! job trains.
//!
//! Policies see the coarser [`JobPhase`] ([`Lifecycle::observed`]): a job trains in
//! `Training` and in a migration before its switch pause; every other launched phase
//! reads as `Starting`.
//!
//! The epoch counts restarts and aborted migrations. Events that these make stale
//! (`Resume`, `StopSaved`, `SwitchDone`) carry the epoch they were queued in, and the
//! world drops them when it has moved on: a `SwitchDone` queued for an aborted pause
//! never ends a later migration.

use super::{FailReason, Job, RunState};
use crate::policy::{JobConfig, JobPhase};
use dlsim_engine::SimTime;

/// Where a job is in its life. Each variant holds what only that phase needs, so leaving a
/// phase drops its data.
#[derive(Clone, Debug, PartialEq)]
pub enum Phase {
    /// Arrived; waiting for the policy to launch it.
    Submitted,
    /// Launched: waiting for every PS and at least one worker to run. `reload`: a restart
    /// left a checkpoint to load before training resumes.
    Starting { reload: bool },
    /// The pods are up; the checkpoint loads until `until` (event `Resume`).
    Reloading { until: SimTime },
    /// Every PS and at least one worker run: the job makes progress.
    Training,
    /// Stop-and-restart: no training while the checkpoint is saved until `until` (event
    /// `StopSaved`); then every pod stops and the job restarts in configuration `then`.
    /// `reload_until`: a checkpoint reload that was under way when the save began; its
    /// `Resume` still arrives (and only refreshes the job).
    Saving {
        until: SimTime,
        then: JobConfig,
        reload_until: Option<SimTime>,
    },
    /// A seamless migration (or a PS replacement): new pods start while the old ones
    /// train, then training pauses while the state moves.
    Migrating(Migration),
    /// Completed or failed; `at` is `None` for a job the run never launched.
    Ended {
        outcome: Outcome,
        at: Option<SimTime>,
    },
}

/// A migration in progress: new pods start while the old ones train, then a pause.
#[derive(Clone, Debug, PartialEq)]
pub struct Migration {
    /// The configuration the job runs once the new pods take over.
    pub config: JobConfig,
    pub new_pods: Vec<usize>,
    pub old_pods: Vec<usize>,
    /// The switch pause (no training), once every new pod is up: until when (event
    /// `SwitchDone`).
    pub switch_until: Option<SimTime>,
}

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Completed,
    Failed(FailReason),
}

impl Outcome {
    /// The phase a policy sees for a job that ended so.
    pub fn observed(self) -> JobPhase {
        match self {
            Outcome::Completed => JobPhase::Completed,
            Outcome::Failed(_) => JobPhase::Failed,
        }
    }
}

/// A job's phase, when it first trained, and its epoch: only this module changes them
/// (no `Default` or `Clone`, so the world cannot overwrite one with another).
#[derive(Debug)]
pub struct Lifecycle {
    phase: Phase,
    epoch: u64,
    start: Option<SimTime>,
}

/// Panics on a transition the world must never ask for.
#[track_caller]
fn illegal(transition: &str, from: &Phase) -> ! {
    unreachable!("illegal job transition `{transition}` from {from:?}")
}

impl Lifecycle {
    /// A submitted job's: only a new job gets one.
    pub(super) fn new() -> Self {
        Lifecycle {
            phase: Phase::Submitted,
            epoch: 0,
            start: None,
        }
    }

    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// Bumped by every restart and aborted migration: events queued before are stale.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// When the job first trained.
    pub fn start(&self) -> Option<SimTime> {
        self.start
    }

    /// When the job ended (`None` while active, or if it was never launched).
    pub fn ended_at(&self) -> Option<SimTime> {
        match self.phase {
            Phase::Ended { at, .. } => at,
            _ => None,
        }
    }

    pub fn outcome(&self) -> Option<Outcome> {
        match self.phase {
            Phase::Ended { outcome, .. } => Some(outcome),
            _ => None,
        }
    }

    pub fn fail_reason(&self) -> Option<FailReason> {
        match self.outcome() {
            Some(Outcome::Failed(r)) => Some(r),
            _ => None,
        }
    }

    pub fn is_active(&self) -> bool {
        !matches!(self.phase, Phase::Ended { .. })
    }

    /// The phase as the job's master reports it to policies.
    pub fn observed(&self) -> JobPhase {
        match &self.phase {
            Phase::Submitted => JobPhase::Submitted,
            Phase::Training
            | Phase::Migrating(Migration {
                switch_until: None, ..
            }) => JobPhase::Training,
            Phase::Starting { .. }
            | Phase::Reloading { .. }
            | Phase::Saving { .. }
            | Phase::Migrating(_) => JobPhase::Starting,
            Phase::Ended { outcome, .. } => outcome.observed(),
        }
    }

    /// Launched and not rescaling: a job an elasticity action may change.
    pub fn is_steady(&self) -> bool {
        matches!(
            self.phase,
            Phase::Starting { .. } | Phase::Reloading { .. } | Phase::Training
        )
    }

    /// A stop-and-restart or a migration is under way.
    pub fn is_rescaling(&self) -> bool {
        matches!(self.phase, Phase::Saving { .. } | Phase::Migrating(_))
    }

    /// The configuration a stop-and-restart in progress will restart in.
    pub fn saving(&self) -> Option<JobConfig> {
        match self.phase {
            Phase::Saving { then, .. } => Some(then),
            _ => None,
        }
    }

    pub fn migration(&self) -> Option<&Migration> {
        match &self.phase {
            Phase::Migrating(m) => Some(m),
            _ => None,
        }
    }

    /// A checkpoint reload is under way (its `Resume` is due).
    pub fn is_reloading(&self) -> bool {
        matches!(
            self.phase,
            Phase::Reloading { .. }
                | Phase::Saving {
                    reload_until: Some(_),
                    ..
                }
        )
    }

    /// The policy launched the job.
    pub(crate) fn launch(&mut self) {
        match self.phase {
            Phase::Submitted => self.phase = Phase::Starting { reload: false },
            ref other => illegal("launch", other),
        }
    }

    /// The job's running pods changed; `pods_up`: every PS and at least one worker run.
    /// A starting job whose pods are up trains, or first reloads its checkpoint for
    /// `reload` (then returns when the reload is done: the world queues `Resume`); a
    /// training job that lost a PS or its last worker waits for them again. Phases that
    /// do not train on their pods (reloading, saving, switching) stay as they are.
    pub(crate) fn pods_changed(
        &mut self,
        now: SimTime,
        pods_up: bool,
        reload: SimTime,
    ) -> Option<SimTime> {
        match self.phase {
            Phase::Training if !pods_up => self.phase = Phase::Starting { reload: false },
            Phase::Starting { reload: true } if pods_up => {
                let until = now.saturating_add(reload);
                self.phase = Phase::Reloading { until };
                return Some(until);
            }
            Phase::Starting { reload: false } if pods_up => {
                self.phase = Phase::Training;
                self.start.get_or_insert(now);
            }
            Phase::Migrating(Migration {
                switch_until: None, ..
            }) if !pods_up => {
                // Every pod loss aborts a migration first (`World::pod_failed`), and no
                // other change reaches a migrating job's pods.
                illegal("pods_changed (pods lost)", &self.phase)
            }
            Phase::Submitted | Phase::Ended { .. } => illegal("pods_changed", &self.phase),
            _ => {}
        }
        None
    }

    /// The checkpoint reload finished (`Resume`): the job trains once its pods allow. A
    /// reload that a stop-and-restart overtook only ends.
    pub(crate) fn reload_done(&mut self) {
        match &mut self.phase {
            Phase::Reloading { .. } => self.phase = Phase::Starting { reload: false },
            Phase::Saving { reload_until, .. } if reload_until.is_some() => *reload_until = None,
            other => illegal("reload_done", other),
        }
    }

    /// A stop-and-restart begins: training stops while the checkpoint is saved until
    /// `until`, then the job restarts in `then`.
    pub(crate) fn begin_save(&mut self, until: SimTime, then: JobConfig) {
        let reload_until = match self.phase {
            Phase::Starting { .. } | Phase::Training => None,
            Phase::Reloading { until } => Some(until),
            ref other => illegal("begin_save", other),
        };
        self.phase = Phase::Saving {
            until,
            then,
            reload_until,
        };
    }

    /// The job restarts from its last checkpoint (a pod was lost, or a stop-and-restart
    /// saved its checkpoint): it waits for its pods again and, if the checkpoint holds
    /// any progress (`reload`), reloads it before training. A save in progress is
    /// superseded, and every event queued before now goes stale (the epoch moves on).
    pub(crate) fn restart(&mut self, reload: bool) {
        match self.phase {
            Phase::Starting { .. }
            | Phase::Reloading { .. }
            | Phase::Training
            | Phase::Saving { .. } => self.phase = Phase::Starting { reload },
            ref other => illegal("restart", other),
        }
        self.epoch += 1;
    }

    /// A migration begins: its new pods start while the job trains on the old ones.
    pub(crate) fn begin_migration(&mut self, migration: Migration) {
        debug_assert!(
            migration.switch_until.is_none(),
            "a migration starts unswitched"
        );
        match self.phase {
            Phase::Training => self.phase = Phase::Migrating(migration),
            ref other => illegal("begin_migration", other),
        }
    }

    /// Every new pod of the migration is up: training pauses until `until` while the
    /// state moves.
    pub(crate) fn begin_switch(&mut self, until: SimTime) {
        match &mut self.phase {
            Phase::Migrating(m) if m.switch_until.is_none() => m.switch_until = Some(until),
            other => illegal("begin_switch", other),
        }
    }

    /// The switch pause is over (`SwitchDone`): the new pods take over; returns the
    /// migration for the world to retire the old pods and run the new configuration.
    pub(crate) fn finish_switch(&mut self) -> Migration {
        if !matches!(&self.phase, Phase::Migrating(m) if m.switch_until.is_some()) {
            illegal("finish_switch", &self.phase);
        }
        match std::mem::replace(&mut self.phase, Phase::Starting { reload: false }) {
            Phase::Migrating(m) => m,
            _ => unreachable!("checked above"),
        }
    }

    /// A pod loss aborts the migration: the job goes on with its old pods (training again
    /// if it was pausing for the switch, once its pods allow). The epoch moves on, so the
    /// pause's `SwitchDone`, if queued, goes stale. Returns the migration for the world to
    /// give its new pods back.
    pub(crate) fn abort_migration(&mut self) -> Migration {
        let Phase::Migrating(m) = &self.phase else {
            illegal("abort_migration", &self.phase)
        };
        let back = if m.switch_until.is_some() {
            Phase::Starting { reload: false }
        } else {
            Phase::Training
        };
        self.epoch += 1;
        match std::mem::replace(&mut self.phase, back) {
            Phase::Migrating(m) => m,
            _ => unreachable!("checked above"),
        }
    }

    fn end(&mut self, outcome: Outcome, at: Option<SimTime>) {
        if !self.is_active() {
            illegal("end", &self.phase);
        }
        self.phase = Phase::Ended { outcome, at };
    }
}

impl Job {
    /// The job ends (`at`: `None` for a job never launched): its phase's data and its
    /// running state (counts, rate, performance) are dropped at once. The world has
    /// returned its pods first.
    pub(crate) fn end(&mut self, outcome: Outcome, at: Option<SimTime>) {
        debug_assert_eq!(self.pending_pods, 0, "an ending job's pods are dequeued");
        self.life.end(outcome, at);
        self.running = RunState::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: u64) -> SimTime {
        SimTime::from_secs(s)
    }

    fn config() -> JobConfig {
        JobConfig {
            workers: 2,
            ps: 1,
            worker_cpu: 4.0,
            worker_mem_mb: 4096,
            worker_gpu: 0,
            ps_cpu: 8.0,
            ps_mem_mb: 8192,
        }
    }

    fn training() -> Lifecycle {
        let mut l = Lifecycle::new();
        l.launch();
        assert_eq!(l.pods_changed(t(5), true, t(30)), None);
        l
    }

    fn migration() -> Migration {
        Migration {
            config: config(),
            new_pods: vec![7],
            old_pods: vec![3],
            switch_until: None,
        }
    }

    #[test]
    fn a_launched_job_trains_once_its_pods_are_up() {
        let mut l = Lifecycle::new();
        assert_eq!(l.observed(), JobPhase::Submitted);
        l.launch();
        assert_eq!(l.pods_changed(t(1), false, t(30)), None);
        assert_eq!(*l.phase(), Phase::Starting { reload: false });
        l.pods_changed(t(5), true, t(30));
        assert_eq!(*l.phase(), Phase::Training);
        assert_eq!(l.start(), Some(t(5)));
        l.pods_changed(t(9), false, t(30));
        assert_eq!(l.observed(), JobPhase::Starting);
        l.pods_changed(t(12), true, t(30));
        assert_eq!(l.start(), Some(t(5)), "the first start is kept");
    }

    #[test]
    fn a_restart_reloads_before_training_and_stales_old_events() {
        let mut l = training();
        l.restart(true);
        assert_eq!(l.epoch(), 1);
        assert_eq!(l.observed(), JobPhase::Starting);
        assert_eq!(l.pods_changed(t(100), true, t(30)), Some(t(130)));
        assert!(l.is_reloading());
        assert_eq!(l.observed(), JobPhase::Starting);
        // More pods coming up does not restart the reload.
        assert_eq!(l.pods_changed(t(110), true, t(30)), None);
        l.reload_done();
        assert_eq!(*l.phase(), Phase::Starting { reload: false });
        l.pods_changed(t(130), true, t(30));
        assert_eq!(*l.phase(), Phase::Training);
        // Nothing saved yet: no reload.
        l.restart(false);
        assert_eq!(l.epoch(), 2);
        l.pods_changed(t(200), true, t(30));
        assert_eq!(*l.phase(), Phase::Training);
    }

    #[test]
    fn a_save_keeps_an_overtaken_reload_and_a_restart_supersedes_it() {
        let mut l = training();
        l.restart(true);
        l.pods_changed(t(100), true, t(30));
        l.begin_save(t(110), config());
        assert!(l.is_rescaling() && !l.is_steady() && l.is_reloading());
        assert_eq!(l.saving(), Some(config()));
        assert_eq!(l.observed(), JobPhase::Starting);
        l.reload_done();
        assert!(!l.is_reloading() && l.saving().is_some());
        l.restart(true);
        assert_eq!(*l.phase(), Phase::Starting { reload: true });
        assert_eq!(l.saving(), None, "the restart drops the save");
    }

    #[test]
    fn a_migration_trains_until_its_switch_and_an_abort_goes_back() {
        let mut l = training();
        l.begin_migration(migration());
        assert_eq!(l.observed(), JobPhase::Training);
        assert!(l.is_rescaling());
        l.begin_switch(t(50));
        assert_eq!(l.observed(), JobPhase::Starting, "no training in the pause");
        let epoch = l.epoch();
        assert_eq!(
            l.abort_migration(),
            Migration {
                switch_until: Some(t(50)),
                ..migration()
            }
        );
        assert_eq!(*l.phase(), Phase::Starting { reload: false });
        assert_eq!(
            l.epoch(),
            epoch + 1,
            "the aborted pause's SwitchDone is stale"
        );
        l.pods_changed(t(51), true, t(30));
        l.begin_migration(migration());
        assert_eq!(l.abort_migration(), migration());
        assert_eq!(*l.phase(), Phase::Training, "an unswitched abort trains on");
        l.begin_migration(migration());
        l.begin_switch(t(60));
        let epoch = l.epoch();
        assert_eq!(l.finish_switch().new_pods, [7]);
        assert_eq!(*l.phase(), Phase::Starting { reload: false });
        assert_eq!(l.epoch(), epoch, "a completed migration stales nothing");
    }

    #[test]
    #[should_panic(expected = "illegal job transition `finish_switch` from Migrating")]
    fn a_switch_finishes_only_after_its_pause_began() {
        let mut l = training();
        l.begin_migration(migration());
        l.finish_switch();
    }

    #[test]
    fn ending_drops_the_phase_and_the_running_state() {
        let spec = dlsim_traces::generate(&Default::default(), 1).remove(0);
        let truth = crate::perf::default_params(spec.model);
        let mut job = Job::new(spec, truth);
        job.life.launch();
        job.life.pods_changed(t(5), true, t(30));
        job.life.begin_migration(migration());
        job.running.workers = 2;
        job.running.rate = 100.0;
        job.running.worker_rates.push((7, 50.0));
        job.end(Outcome::Failed(FailReason::NodeFailures), Some(t(90)));
        assert_eq!(
            *job.life.phase(),
            Phase::Ended {
                outcome: Outcome::Failed(FailReason::NodeFailures),
                at: Some(t(90))
            }
        );
        assert_eq!(job.life.migration(), None);
        assert_eq!(job.phase(), JobPhase::Failed);
        assert_eq!(job.fail_reason(), Some(FailReason::NodeFailures));
        assert_eq!(job.ended_at(), Some(t(90)));
        assert_eq!(job.start(), Some(t(5)), "when it trained is kept");
        assert_eq!((job.running.workers, job.running.rate), (0, 0.0));
        assert!(job.running.worker_rates.is_empty());
    }

    #[test]
    #[should_panic(expected = "illegal job transition `end` from Ended")]
    fn a_job_ends_once() {
        let mut l = Lifecycle::new();
        l.end(Outcome::Failed(FailReason::Unfinished), None);
        l.end(Outcome::Completed, Some(t(1)));
    }

    #[test]
    #[should_panic(expected = "illegal job transition `begin_migration` from Starting")]
    fn only_a_training_job_migrates() {
        let mut l = Lifecycle::new();
        l.launch();
        l.begin_migration(migration());
    }

    #[test]
    #[should_panic(expected = "illegal job transition `begin_save` from Migrating")]
    fn a_migrating_job_does_not_also_save() {
        let mut l = training();
        l.begin_migration(migration());
        l.begin_save(t(9), config());
    }

    #[test]
    #[should_panic(expected = "illegal job transition `reload_done` from Training")]
    fn a_reload_ends_only_while_reloading() {
        training().reload_done();
    }

    #[test]
    #[should_panic(expected = "illegal job transition `launch` from Starting")]
    fn a_job_launches_once() {
        let mut l = training();
        l.pods_changed(t(9), false, t(30));
        l.launch();
    }
}
