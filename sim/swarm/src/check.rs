//! The invariants every swarm run is checked against. Each check returns why it failed,
//! never panics, so the swarm can name the seed and go on.

use dlsim_engine::SimTime;
use dlsim_model::job::FailReason;
use dlsim_model::policy::{JobPhase, PodEventKind};
use dlsim_model::run::RunOutput;
use dlsim_model::{Resources, Scenario};
use serde_json::Value;

/// `Err(why)` unless `cond`.
fn ensure(cond: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(why())
    }
}

/// A batch run: capacity, accounting, every job ended, exactly-once shards, no NaN,
/// monotone time.
pub fn batch(scenario: &Scenario, out: &RunOutput) -> Result<(), String> {
    let w = &out.world;
    // Capacity: the cluster's own bookkeeping, nothing held at the end, and no sample
    // above capacity or with more in use than allocated.
    w.cluster.check_invariants();
    ensure(w.cluster.allocated() == Resources::ZERO, || {
        format!(
            "resources still allocated at the end: {:?}",
            w.cluster.allocated()
        )
    })?;
    let cap = w.cluster.capacity();
    let mut last = 0;
    for row in &w.timeline {
        ensure(row.is_finite(), || {
            format!("timeline row not finite: {row:?}")
        })?;
        ensure(row.time_s >= last, || {
            format!("time went back to {} s", row.time_s)
        })?;
        last = row.time_s;
        ensure(row.cpu_alloc <= cap.cpu_cores() + 1e-9, || {
            format!("{} cores allocated of {}", row.cpu_alloc, cap.cpu_cores())
        })?;
        ensure(row.mem_alloc_mb <= cap.mem_mb as f64 + 1e-6, || {
            format!("{} MB allocated of {}", row.mem_alloc_mb, cap.mem_mb)
        })?;
        ensure(row.cpu_used <= row.cpu_alloc + 1e-6, || {
            format!(
                "{} cores used of {} allocated at {} s",
                row.cpu_used, row.cpu_alloc, row.time_s
            )
        })?;
    }
    // Accounting: every submitted job ended, completed or failed with a reason.
    let s = &out.summary;
    ensure(s.non_finite().is_none(), || {
        format!("summary metric {:?} not finite", s.non_finite())
    })?;
    ensure(s.jobs_submitted == scenario.job_count(), || {
        format!(
            "{} jobs submitted of {}",
            s.jobs_submitted,
            scenario.job_count()
        )
    })?;
    ensure(s.jobs_completed + s.jobs_failed == s.jobs_submitted, || {
        format!(
            "{} completed + {} failed != {} submitted",
            s.jobs_completed, s.jobs_failed, s.jobs_submitted
        )
    })?;
    let online = scenario.online.len();
    ensure(
        out.jobs_csv.lines().count() == s.jobs_submitted + online + 1,
        || "jobs.csv lacks a row per job".into(),
    )?;
    // Online jobs beside the batch ones: each ran its whole span (no horizon cut it),
    // finite, and never trained more than arrived.
    ensure(s.online_jobs.len() == online, || {
        format!("{} online summaries of {online} jobs", s.online_jobs.len())
    })?;
    for j in &s.online_jobs {
        let v = serde_json::to_value(j).map_err(|e| e.to_string())?;
        if let Some(bad) = non_finite(&v, "") {
            return Err(format!("online job {}: {bad}", j.job));
        }
        ensure(
            j.samples_trained <= j.samples_arrived * (1.0 + 1e-9) + 1e-6,
            || {
                format!(
                    "online job {}: trained {} of {} arrived",
                    j.job, j.samples_trained, j.samples_arrived
                )
            },
        )?;
    }
    for job in w.jobs.iter() {
        let id = job.spec().id;
        match job.phase() {
            JobPhase::Completed => {
                ensure(job.steps_done() == job.spec().steps, || {
                    format!(
                        "job {id} completed after {} of {} steps",
                        job.steps_done(),
                        job.spec().steps
                    )
                })?;
                let (start, end) = (
                    job.start().unwrap_or(SimTime::MAX),
                    job.ended_at().unwrap_or(SimTime::ZERO),
                );
                ensure(end >= start && start >= job.request().submit, || {
                    format!(
                        "job {id}: submit {} start {start} end {end}",
                        job.request().submit
                    )
                })?;
            }
            JobPhase::Failed => ensure(job.fail_reason().is_some(), || {
                format!("job {id} failed without a reason")
            })?,
            other => return Err(format!("job {id} left in phase {other:?}")),
        }
        if let (Some(h), Some(FailReason::Unfinished), Some(end)) =
            (scenario.file.horizon_s, job.fail_reason(), job.ended_at())
        {
            ensure(end == SimTime::from_secs(h), || {
                format!("job {id} cut at {end}, not the horizon")
            })?;
        }
        ensure(job.steps_done() <= job.spec().steps, || {
            format!("job {id} trained too many steps")
        })?;
        if let Some(ledger) = job.ledger() {
            ledger
                .check_consistent()
                .map_err(|e| format!("job {id}: {e}"))?;
            if job.phase() == JobPhase::Completed {
                ledger
                    .check_exactly_once()
                    .map_err(|e| format!("job {id}: {e}"))?;
            }
        }
        ensure(
            job.usage().cpu_used_core_s <= job.usage().cpu_alloc_core_s * (1.0 + 1e-9),
            || format!("job {id} used more CPU than it was allocated"),
        )?;
    }
    if scenario.file.horizon_s.is_none() {
        // Without a horizon a job ends, save one that never trained when nothing fails a
        // job for waiting (no pending timeout): pods are placed one by one, so jobs whose
        // placed pods each hold part of the cluster can wait for each other for ever
        // (swarm seed 13056596; ARCHITECTURE.md, "not gang-scheduled"). So does a job that
        // trained and then waits for a pod it lost or a migration asked for (swarm seeds
        // 53008436, 53009902), or that started and never trained: its pods all up for an
        // instant, one of them OOM-killed at once, the relaunch waiting for room (swarm seed
        // 31020200; its pending event may be older than the events a job keeps).
        let may_wait = scenario.file.recovery.pending_timeout_s <= 0.0;
        for job in w.jobs.iter() {
            if job.fail_reason() == Some(FailReason::Unfinished) {
                let never_trained = job.usage().cpu_used_core_s == 0.0;
                ensure(may_wait && (never_trained || waits_for_a_pod(job)), || {
                    format!(
                        "job {} left unfinished without a horizon{}",
                        job.spec().id,
                        if may_wait {
                            " after it trained, with no pod waiting for a node"
                        } else {
                            ""
                        }
                    )
                })?;
            }
        }
    }
    Ok(())
}

/// Whether one of the job's pods, at its latest event the job keeps, was waiting for a node.
fn waits_for_a_pod(job: &dlsim_model::job::Job) -> bool {
    let mut last = std::collections::BTreeMap::new();
    for e in job.pod_events() {
        last.insert(e.pod, e.kind);
    }
    last.values().any(|&k| k == PodEventKind::Pending)
}

/// An online run: a finite summary, no more trained than arrived, a timeline row per
/// step in time order, never more workers than the cluster holds.
pub fn online(
    summary: &Value,
    timeline_csv: &str,
    minutes: u64,
    max_workers: u32,
) -> Result<(), String> {
    if let Some(bad) = non_finite(summary, "") {
        return Err(format!("summary: {bad}"));
    }
    let num = |k: &str| summary[k].as_f64().unwrap_or(f64::NAN);
    ensure(
        num("samples_trained") <= num("samples_arrived") * (1.0 + 1e-9) + 1e-6,
        || {
            format!(
                "trained {} of {} arrived",
                num("samples_trained"),
                num("samples_arrived")
            )
        },
    )?;
    ensure(summary["minutes"].as_u64() == Some(minutes), || {
        format!("{} minutes simulated of {minutes}", summary["minutes"])
    })?;
    ensure(num("peak_workers") <= f64::from(max_workers), || {
        format!(
            "{} workers, the cluster holds {max_workers}",
            num("peak_workers")
        )
    })?;
    let mut last = f64::MIN;
    for line in timeline_csv.lines().skip(1) {
        // `online.csv`: job, minute, ...
        let t: f64 = line
            .split(',')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(f64::NAN);
        ensure(t >= last, || format!("timeline time went back to {t}"))?;
        last = t;
    }
    Ok(())
}

/// The first null or non-finite number in `v`. A null `policy_report` is a policy with
/// nothing to report (the online default), not a metric, and is allowed.
pub fn non_finite(v: &Value, at: &str) -> Option<String> {
    match v {
        Value::Null if at.ends_with(".policy_report") => None,
        Value::Null => Some(format!("{at} is null")),
        Value::Number(n) if !n.as_f64().is_some_and(f64::is_finite) => Some(format!("{at} = {n}")),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, x)| non_finite(x, &format!("{at}[{i}]"))),
        Value::Object(o) => o
            .iter()
            .find_map(|(k, x)| non_finite(x, &format!("{at}.{k}"))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs one static job on one 16-core, 6 GB node: a 3.5 GB worker and a PS asking for
    /// `ps_mem_mb`, whose embeddings grow `emb_mb_per_msample`; an OOM relaunch asks for
    /// twice the memory, which does not fit beside the worker. No pending timeout.
    fn one_job_oom_waits(ps_mem_mb: u64, emb_mb_per_msample: f64) -> (Scenario, RunOutput) {
        let dir = std::env::temp_dir().join(format!(
            "dlsim-swarm-check-{}-{ps_mem_mb}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let job = format!(
            r#"{{"id":0,"submit_s":0,"user":"u","model":"wide_deep","batch_size":512,"steps":100000,"dense_mb":20,"emb_dim":16,"emb_mb_initial":10,"emb_mb_per_msample":{emb_mb_per_msample},"workers":1,"ps":1,"worker_cpu":4,"worker_mem_mb":3500,"ps_cpu":4,"ps_mem_mb":{ps_mem_mb},"worker_gpu":0,"priority":0}}"#
        );
        std::fs::write(
            dir.join("trace.jsonl"),
            format!("{{\"format\":\"dlsim-trace\",\"version\":1}}\n{job}\n"),
        )
        .unwrap();
        let text = r#"{"name": "oom-wait", "seed": 1, "trace": "trace.jsonl", "policy": "static",
            "cluster": {"groups": [{"name": "cpu", "count": 1, "cores": 16, "mem_gb": 6}]},
            "timeline_interval_s": 86400, "faults": {"pod_failure_per_day": 0},
            "recovery": {"oom_memory_factor": 2.0}}"#;
        let scenario = Scenario::from_text(&dir.join("s.json"), text).unwrap();
        let out = dlsim_model::run(&scenario, dlsim_policies::build("static").unwrap());
        std::fs::remove_dir_all(&dir).ok();
        (scenario, out)
    }

    /// Without a pending timeout a job may wait for ever for room, and the check accepts
    /// it whether it never trained or trained first (before swarm seeds 31020200 and
    /// 53008436 it accepted only a job that never started). A PS asking for less than a
    /// PS process holds (1.5 GB of 2 GB) is OOM-killed as the job starts, before any
    /// training; one asking for 2.4 GB is killed once its embeddings have grown, after
    /// some. Either way its relaunch waits beside the worker until the run ends.
    #[test]
    fn a_job_waiting_for_room_may_wait_for_ever() {
        for (ps_mem_mb, emb_growth, trained) in [(1_536, 0.0, false), (2_400, 100.0, true)] {
            let (scenario, out) = one_job_oom_waits(ps_mem_mb, emb_growth);
            let job = out.world.jobs.iter().next().unwrap();
            assert_eq!(job.fail_reason(), Some(FailReason::Unfinished));
            assert!(
                job.start().is_some() && job.oom_kills() == 1,
                "it started, then lost its PS"
            );
            assert_eq!(
                job.usage().cpu_used_core_s > 0.0,
                trained,
                "PS {ps_mem_mb} MB"
            );
            assert!(waits_for_a_pod(job), "its relaunched PS waits for a node");
            assert_eq!(batch(&scenario, &out), Ok(()));
        }
    }
}
