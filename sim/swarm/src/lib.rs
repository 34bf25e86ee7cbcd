//! `dlsim swarm`: a simulation swarm in the manner of TigerBeetle's VOPR (issue #21).
//!
//! Each seed draws one random scenario ([`draw`]) and runs it under one policy: seeds
//! take the batch policies in turn (every spec of [`BATCH_POLICIES`], the chaos policy of
//! [`chaos`] among them), and every tenth seed is an online (streaming) scenario under the
//! online policies in turn, so any run of at least 50 consecutive seeds covers every
//! policy. The run is checked against the model's invariants ([`check`]): capacity,
//! accounting, every job ending, exactly-once shards, no NaN, monotone time; every fourth
//! batch seed also replays with ended jobs released and requires identical outputs. A
//! failure or a panic names its seed and the one-line command that reproduces it.

pub mod chaos;
pub mod check;
pub mod draw;

use dlsim_model::policy::{Policy, Sharding};
use dlsim_model::Scenario;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// Batch policies, in the order seeds take them.
pub const BATCH_POLICIES: [&str; 10] = [
    "static",
    "static[sharding=dynamic]",
    "static[slow=restart]",
    "dlrover",
    "dlrover-oss",
    "optimus",
    "es",
    "well-tuned",
    "chaos[sharding=dynamic]",
    "chaos[sharding=static]",
];

/// What seed `seed` runs: `(online, policy spec)`.
pub fn plan(seed: u64) -> (bool, String) {
    if seed % 10 == 9 {
        let p = draw::ONLINE_POLICIES[(seed / 10) as usize % draw::ONLINE_POLICIES.len()];
        (true, p.to_string())
    } else {
        let k = (seed - seed / 10) as usize;
        (false, BATCH_POLICIES[k % BATCH_POLICIES.len()].to_string())
    }
}

/// The command that runs seed `seed` alone.
pub fn reproducer(seed: u64) -> String {
    format!("dlsim swarm --seeds 1 --from {seed}")
}

fn build_batch(spec: &str, seed: u64) -> Result<Box<dyn Policy>, String> {
    match spec {
        "chaos[sharding=dynamic]" => Ok(Box::new(chaos::Chaos::new(seed, Sharding::Dynamic))),
        "chaos[sharding=static]" => Ok(Box::new(chaos::Chaos::new(seed, Sharding::Static))),
        _ => dlsim_policies::build(spec).map_err(|e| e.to_string()),
    }
}

/// Runs the batch scenario of `seed` under `spec` and checks it; says what ran.
pub fn run_batch(seed: u64, spec: &str) -> Result<String, String> {
    let text = draw::batch(seed).to_string();
    let scenario = Scenario::from_text(Path::new("swarm.json"), &text)
        .map_err(|e| format!("the draw was refused on load: {e}"))?;
    // With online jobs beside the batch ones, a registry policy is composed with an
    // autoscaler (the chaos policy leaves them at their initial workers).
    let composed;
    let spec = if scenario.online.is_empty() || spec.starts_with("chaos") {
        spec
    } else {
        let auto = draw::ONLINE_POLICIES[(seed / 7) as usize % draw::ONLINE_POLICIES.len()];
        composed = format!("{spec}+{auto}");
        composed.as_str()
    };
    let out = dlsim_model::run(&scenario, build_batch(spec, seed)?);
    check::batch(&scenario, &out)?;
    if seed.is_multiple_of(4) {
        // Releasing jobs and pods as they end (what the CLI does) changes no output and
        // leaves nothing held.
        let released = Scenario {
            keep_ended: false,
            ..scenario.clone()
        };
        let again = dlsim_model::run(&released, build_batch(spec, seed)?);
        if (&again.summary_json, &again.jobs_csv, &again.timeline_csv)
            != (&out.summary_json, &out.jobs_csv, &out.timeline_csv)
        {
            return Err("releasing ended jobs changed the outputs".into());
        }
        if (again.world.jobs.live(), again.world.pods.live()) != (0, 0) {
            return Err("jobs or pods still held after the run".into());
        }
    }
    let s = &out.summary;
    Ok(format!(
        "{} jobs, {} completed, {} online, {} events, {spec}",
        s.jobs_submitted,
        s.jobs_completed,
        scenario.online.len(),
        s.events
    ))
}

/// Runs the online scenario of `seed` under `spec` and checks it; says what ran.
pub fn run_online(seed: u64, spec: &str) -> Result<String, String> {
    let mut json = draw::online(seed);
    json["policy"] = spec.into();
    let path = Path::new("swarm-online.json");
    let sc = dlsim_model::Scenario::from_text(path, &json.to_string())
        .map_err(|e| format!("the draw was refused on load: {e}"))?;
    let policy = dlsim_policies::build(spec).map_err(|e| e.to_string())?;
    let out = dlsim_model::run(&sc, policy);
    let whole = serde_json::to_value(&out.summary).map_err(|e| e.to_string())?;
    if let Some(bad) = check::non_finite(&whole, "") {
        return Err(format!("summary: {bad}"));
    }
    let summary = whole["online_jobs"][0].clone();
    let job = &out.world.online[0];
    check::online(
        &summary,
        out.online_csv.as_deref().unwrap_or_default(),
        job.spec.horizon_s() / 60,
        job.max_workers,
    )?;
    Ok(format!(
        "{} minutes, {} events",
        summary["minutes"], summary["events"]
    ))
}

/// The lock, even if a thread panicked while holding it (the data is a plain map).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

thread_local! {
    /// The last panic's message and place on this thread, taken by [`run_seed`].
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs seed `seed`: what ran, or why it failed (a panic inside becomes an error naming
/// where it happened).
pub fn run_seed(seed: u64) -> Result<String, String> {
    let (online, spec) = plan(seed);
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        if online {
            run_online(seed, &spec)
        } else {
            run_batch(seed, &spec)
        }
    }));
    let kind = if online { "online" } else { "batch" };
    match result {
        Ok(Ok(what)) => Ok(format!("{kind} under {spec}: {what}")),
        Ok(Err(why)) => Err(format!("{kind} under {spec}: {why}")),
        Err(_) => {
            let what = PANIC.with(|p| p.borrow_mut().take()).unwrap_or_default();
            Err(format!("{kind} under {spec}: panicked: {what}"))
        }
    }
}

/// How many seeds to run, from where, on how many threads, and for how long at most.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub seeds: u64,
    pub from: u64,
    pub minutes: Option<f64>,
    pub threads: usize,
    /// A seed still running after this long is reported as slow (a hang shows up while
    /// it happens, not as a swarm that never ends). Seeds take milliseconds to a few
    /// seconds; wall time depends on the machine, so this is a watch, not an invariant.
    pub slow_after: Duration,
}

/// What a swarm did.
#[derive(Debug, Default)]
pub struct Report {
    pub ran: u64,
    /// `(seed, why)` of every failed seed, in seed order.
    pub failures: Vec<(u64, String)>,
    /// Seeds that ran longer than `Options::slow_after`, in seed order.
    pub slow: Vec<u64>,
    pub elapsed: Duration,
}

/// Runs the seeds of `opts` (each thread takes the next seed not yet taken), stopping
/// early when `minutes` have passed, and calls `each` after every seed as results come
/// in. Each seed's run depends on the seed alone, so the threads change only the order
/// of the lines, never a result. Panics are caught (their message kept for the report,
/// not printed by the default hook). A watch thread calls `slow` once for every seed
/// still running `opts.slow_after` after it started (from that thread, while the seed
/// runs).
pub fn swarm(
    opts: Options,
    mut each: impl FnMut(u64, &Result<String, String>),
    slow: impl Fn(u64, Duration) + Sync,
) -> Report {
    let start = Instant::now();
    let running: Mutex<BTreeMap<u64, (Instant, bool)>> = Mutex::new(BTreeMap::new());
    let slow_seeds: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    let done = AtomicBool::new(false);
    let budget = opts
        .minutes
        .map(|m| Duration::from_secs_f64(m.max(0.0) * 60.0));
    let end = opts.from.saturating_add(opts.seeds);
    let next = AtomicU64::new(opts.from);
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|info| {
        PANIC.with(|p| *p.borrow_mut() = Some(info.to_string()));
    }));
    let mut report = Report::default();
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let (slow, slow_seeds) = (&slow, &slow_seeds);
        // Marks `seed` slow once, from the watch or as it ends (so a seed that ends
        // between two looks of the watch is not missed).
        let mark = move |seed: u64, since: Instant, told: &mut bool| {
            if !*told && since.elapsed() >= opts.slow_after {
                *told = true;
                lock(slow_seeds).push(seed);
                slow(seed, since.elapsed());
            }
        };
        for _ in 0..opts.threads.max(1) {
            let (tx, next, running) = (tx.clone(), &next, &running);
            scope.spawn(move || loop {
                if budget.is_some_and(|b| start.elapsed() >= b) {
                    break;
                }
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= end {
                    break;
                }
                lock(running).insert(seed, (Instant::now(), false));
                let result = run_seed(seed);
                let (since, mut told) = lock(running).remove(&seed).expect("inserted above");
                mark(seed, since, &mut told);
                if tx.send((seed, result)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let (done, running) = (&done, &running);
        scope.spawn(move || {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                for (&seed, (since, told)) in lock(running).iter_mut() {
                    mark(seed, *since, told);
                }
            }
        });
        for (seed, result) in rx {
            report.ran += 1;
            each(seed, &result);
            if let Err(why) = result {
                report.failures.push((seed, why));
            }
        }
        done.store(true, Ordering::Relaxed);
    });
    report.slow = std::mem::take(&mut *lock(&slow_seeds));
    report.slow.sort_unstable();
    panic::set_hook(hook);
    report.failures.sort_by_key(|f| f.0);
    report.elapsed = start.elapsed();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every seed that runs longer than `slow_after` is reported once, in seed order,
    /// whether the watch saw it running or it ended first; a generous limit reports none.
    #[test]
    fn seeds_over_the_slow_limit_are_reported_once() {
        let opts = |slow_after| Options {
            seeds: 4,
            from: 7,
            minutes: None,
            threads: 2,
            slow_after,
        };
        let told = Mutex::new(Vec::new());
        let report = swarm(
            opts(Duration::ZERO),
            |_, _| {},
            |seed, _| lock(&told).push(seed),
        );
        assert_eq!(report.slow, vec![7, 8, 9, 10]);
        let mut told = told.into_inner().unwrap();
        told.sort_unstable();
        assert_eq!(told, report.slow);
        let report = swarm(opts(Duration::from_secs(3600)), |_, _| {}, |_, _| {});
        assert!(report.slow.is_empty() && report.ran == 4);
    }

    #[test]
    fn fifty_seeds_cover_every_policy() {
        let mut seen: Vec<String> = (0..50).map(|s| plan(s).1).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(
            seen.len(),
            BATCH_POLICIES.len() + draw::ONLINE_POLICIES.len()
        );
    }
}
