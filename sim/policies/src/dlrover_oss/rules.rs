//! The decision rules of open-source DLRover's local optimizer and PS auto-scaler, as pure
//! functions of the profiler window (issue #5, "dlrover-oss"). Each function mirrors one
//! rule of the list; the policy (`super`) only gathers observations and turns
//! the plans into actions.

use dlsim_engine::SimTime;
use dlsim_model::policy::{JobConfig, ProfileSample};

/// Most PS a plan may ask for (`NodeResourceLimit.MAX_PS_NUM`).
pub const MAX_PS: u32 = 15;
/// Profiler snapshots the optimizer looks back over (`_LATEST_SAMPLE_COUNT`).
pub const WINDOW: usize = 5;
/// Max PS CPU utilisation that workers are scaled towards (`ps_cpu_overload_threshold`).
pub const PS_OVERLOAD: f64 = 0.9;
/// Above this PS utilisation the worker count stops growing.
pub const PS_SATURATED: f64 = 0.95;
/// Below this speed ratio (marginal speed per added worker / old speed per worker) the
/// worker count stops growing.
pub const MIN_SPEED_RATIO: f64 = 0.2;
/// A PS is hot when its average used CPU / requested CPU reaches this.
pub const PS_HOT: f64 = 0.9;
/// Most CPU a hot PS is given (`node_max_cpu`).
pub const NODE_MAX_CPU: f64 = 32.0;
/// PS memory margin over the peak used (`ps_memory_margin_percent`).
pub const PS_MEM_MARGIN: f64 = 0.2;
/// Worker memory margin over the peak used (`worker_memory_margin_percent`).
pub const WORKER_MEM_MARGIN: f64 = 0.5;
/// OOM: memory grows by this factor, by at most `OOM_MAX_STEP_MB`, and not at all from
/// `OOM_MAX_MEM_MB` up.
pub const OOM_FACTOR: f64 = 2.0;
pub const OOM_MAX_STEP_MB: u64 = 8_192;
pub const OOM_MAX_MEM_MB: u64 = 65_536;
/// Pending: a pod pending this long is re-requested smaller.
pub const PENDING_TIMEOUT_S: u64 = 900;
pub const PENDING_MIN_CPU: f64 = 4.0;
pub const PENDING_MIN_MEM_MB: u64 = 6_144;
/// Create: initial pods get a fifth of the job's limits, capped.
pub const CREATE_CPU_CAP: f64 = 16.0;
pub const CREATE_MEM_CAP_MB: u64 = 8_192;
/// A user's PS CPU / memory below these is "not set", and the plan's value is used
/// (`NodeResourceLimit.MIN_VALID_CPU`, `MIN_VALID_MEMORY`).
pub const MIN_VALID_CPU: f64 = 2.0;
pub const MIN_VALID_MEM_MB: u64 = 1_024;

/// The job's resource limits (`ResourceLimits`), per job.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    pub cpu: f64,
    pub mem_mb: f64,
}

/// One pod in one profiler snapshot: what it requested and what it used.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PodUse {
    pub pod: usize,
    pub cpu_req: f64,
    pub mem_req_mb: u64,
    pub cpu_used: f64,
    pub mem_used_mb: f64,
}

/// The running pods of a job at one profiler sample (`RuntimeMetric.running_nodes`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub time: SimTime,
    pub ps: Vec<PodUse>,
    pub workers: Vec<PodUse>,
}

/// The create plan: 1 PS and 1 worker with a fifth of the limits each, capped at 16 CPU
/// and 8192 MB.
pub fn create_config(limits: Limits, worker_gpu: u32) -> JobConfig {
    let cpu = (limits.cpu / 5.0).ceil().min(CREATE_CPU_CAP);
    let mem_mb = ((limits.mem_mb / 5.0).ceil() as u64).min(CREATE_MEM_CAP_MB);
    JobConfig {
        workers: 1,
        ps: 1,
        worker_cpu: cpu,
        worker_mem_mb: mem_mb,
        worker_gpu,
        ps_cpu: cpu,
        ps_mem_mb: mem_mb,
    }
}

/// What the user set, as DLRover's `PSJobResourceOptimizer` keeps it
/// (`_check_ignore_original_worker_resource` / `_check_ignore_original_ps_resource`):
/// every plan's counts become the user's counts when the user gave any, the PS CPU and
/// memory become the user's when they are valid (at least `MIN_VALID_*`), and the worker
/// CPU and memory stay the plan's (the user's only where the plan left them 0).
pub fn keep_user(plan: JobConfig, user: &JobConfig) -> JobConfig {
    let mut c = plan;
    if user.workers > 0 {
        c.workers = user.workers;
    }
    if user.ps > 0 {
        c.ps = user.ps;
    }
    if c.worker_cpu == 0.0 {
        c.worker_cpu = user.worker_cpu;
    }
    if c.worker_mem_mb == 0 {
        c.worker_mem_mb = user.worker_mem_mb;
    }
    if user.ps_cpu >= MIN_VALID_CPU {
        c.ps_cpu = user.ps_cpu;
    }
    if user.ps_mem_mb >= MIN_VALID_MEM_MB {
        c.ps_mem_mb = user.ps_mem_mb;
    }
    c
}

/// The snapshots the optimizer trusts (`_extract_node_resource`), newest first: PS lists
/// of snapshots with the latest PS set, and worker lists of snapshots with the latest
/// worker count.
pub fn extract(window: &[Snapshot]) -> (Vec<&[PodUse]>, Vec<&[PodUse]>) {
    let Some(latest) = window.last() else {
        return (Vec::new(), Vec::new());
    };
    let ids = |v: &[PodUse]| {
        let mut ids: Vec<usize> = v.iter().map(|p| p.pod).collect();
        ids.sort_unstable();
        ids
    };
    let latest_ps = ids(&latest.ps);
    let start = window.len().saturating_sub(WINDOW);
    let mut ps = Vec::new();
    let mut workers = Vec::new();
    for s in window[start..].iter().rev() {
        if ids(&s.ps) == latest_ps {
            ps.push(s.ps.as_slice());
        }
        if s.workers.len() == latest.workers.len() {
            workers.push(s.workers.as_slice());
        }
    }
    (ps, workers)
}

/// What one training process needs (`_estimate_process_require_resource`): average CPU
/// per worker, PS CPU per worker (average total PS CPU / workers) and peak worker memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Process {
    pub worker_cpu: f64,
    pub ps_cpu_per_worker: f64,
    pub worker_mem_mb: f64,
}

pub fn estimate(window: &[Snapshot]) -> Option<Process> {
    let (ps, workers) = extract(window);
    let n = window.last()?.workers.len();
    if ps.is_empty() || workers.is_empty() || n == 0 {
        return None;
    }
    let avg_ps_total = ps
        .iter()
        .map(|s| s.iter().map(|p| p.cpu_used).sum::<f64>())
        .sum::<f64>()
        / ps.len() as f64;
    let all: Vec<&PodUse> = workers.iter().flat_map(|s| s.iter()).collect();
    let worker_cpu = all.iter().map(|p| p.cpu_used).sum::<f64>() / all.len() as f64;
    let worker_mem_mb = all.iter().map(|p| p.mem_used_mb).fold(0.0, f64::max);
    Some(Process {
        worker_cpu,
        ps_cpu_per_worker: avg_ps_total / n as f64,
        worker_mem_mb,
    })
}

/// A PS plan: count, CPU and memory per PS.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PsPlan {
    pub ps: u32,
    pub cpu: f64,
    pub mem_mb: u64,
}

/// PS initial (`_generate_ps_initial_resource`): as many PS of the requested CPU as the
/// limit leaves once it holds the most workers it can feed, with 1.2 x the peak PS memory.
pub fn ps_initial(limits: Limits, window: &[Snapshot]) -> Option<PsPlan> {
    let process = estimate(window)?;
    let (ps, _) = extract(window);
    let requested_cpu = ps[0].iter().map(|p| p.cpu_req).fold(0.0, f64::max);
    let max_mem = ps[0].iter().map(|p| p.mem_used_mb).fold(0.0, f64::max);
    let per_process = process.ps_cpu_per_worker + process.worker_cpu;
    if requested_cpu <= 0.0 || per_process <= 0.0 {
        return None;
    }
    let max_workers = limits.cpu / per_process;
    let total_ps_cpu = limits.cpu - max_workers * process.worker_cpu;
    let n = (total_ps_cpu / requested_cpu)
        .ceil()
        .clamp(1.0, f64::from(MAX_PS)) as u32;
    Some(PsPlan {
        ps: n,
        cpu: requested_cpu,
        mem_mb: (max_mem * (1.0 + PS_MEM_MARGIN)) as u64,
    })
}

/// A worker plan: count, CPU and memory per worker.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkerPlan {
    pub workers: u32,
    pub cpu: f64,
    pub mem_mb: u64,
}

/// The highest used / requested CPU of any PS in the trusted snapshots.
pub fn max_ps_util(window: &[Snapshot]) -> f64 {
    let (ps, _) = extract(window);
    ps.iter()
        .flat_map(|s| s.iter())
        .filter(|p| p.cpu_req > 0.0)
        .map(|p| p.cpu_used / p.cpu_req)
        .fold(0.0, f64::max)
}

/// Workers (`_generate_worker_resoruce` plus the auto-scaler's stop rules): none if a PS
/// is saturated (> 0.95) or the last added workers sped the job up by less than 0.2 of a
/// worker's speed; else `n x 0.9 / max PS util` when that grows `n`, each worker with
/// its average used CPU (>= 1) and 1.5 x the peak used memory (>= 1024 MB), bounded by
/// the CPU and memory the limits leave beside the PS.
pub fn worker_plan(
    limits: Limits,
    window: &[Snapshot],
    ps_total: (f64, u64),
    speed_ratio: Option<f64>,
) -> Option<WorkerPlan> {
    let util = max_ps_util(window);
    let (_, workers) = extract(window);
    if util <= 0.0 || workers.is_empty() || util > PS_SATURATED {
        return None;
    }
    if speed_ratio.is_some_and(|r| r < MIN_SPEED_RATIO) {
        return None;
    }
    let mut n = workers[0].len() as f64;
    let factor = PS_OVERLOAD / util;
    if factor > 1.0 {
        n = (n * factor).floor();
    }
    let all: Vec<&PodUse> = workers.iter().flat_map(|s| s.iter()).collect();
    let avg_cpu = all.iter().map(|p| p.cpu_used).sum::<f64>() / all.len() as f64;
    let cpu = round1(avg_cpu).max(1.0);
    let peak_mem = all.iter().map(|p| p.mem_used_mb).fold(0.0, f64::max);
    let mem_mb = ((1.0 + WORKER_MEM_MARGIN) * peak_mem).max(1024.0) as u64;
    let remaining_cpu = limits.cpu - ps_total.0;
    let remaining_mem = limits.mem_mb - ps_total.1 as f64;
    let max_n = (remaining_cpu / cpu).min(remaining_mem / mem_mb as f64);
    let workers = n.min(max_n).floor().max(1.0) as u32;
    Some(WorkerPlan {
        workers,
        cpu,
        mem_mb,
    })
}

/// Speed ratio of the last worker change: (speed gained per added worker) / (speed per
/// worker before), from the job's step-speed history; `None` unless the latest run of
/// samples has more workers than the run before it.
pub fn speed_ratio(history: &[ProfileSample]) -> Option<f64> {
    let (n_cur, len, v_cur) = last_run(history)?;
    let (n_prev, _, v_prev) = last_run(&history[..history.len() - len])?;
    if n_cur <= n_prev || n_prev == 0 {
        return None;
    }
    if v_prev <= 0.0 {
        return None;
    }
    let marginal = (v_cur - v_prev) / f64::from(n_cur - n_prev);
    Some(marginal / (v_prev / f64::from(n_prev)))
}

/// The run of samples at the end of `history` with one worker count: (that count, the
/// run's length, its mean steps/s); `None` for an empty history.
fn last_run(history: &[ProfileSample]) -> Option<(u32, usize, f64)> {
    let n = history.last()?.running_workers;
    let run: Vec<f64> = history
        .iter()
        .rev()
        .take_while(|s| s.running_workers == n)
        .map(|s| s.steps_per_s)
        .collect();
    Some((n, run.len(), run.iter().sum::<f64>() / run.len() as f64))
}

/// Hot PS (`_optimize_hot_ps_cpu`): when some PS uses >= 0.9 of its CPU, every PS whose
/// average use x tune exceeds its request gets that CPU, where tune = max(1, most workers
/// the limit could feed / current workers), capped so a hot PS gets at most 32 CPU.
/// Returns (pod, new CPU) pairs.
pub fn hot_ps_plan(limits: Limits, window: &[Snapshot]) -> Vec<(usize, f64)> {
    let (ps, workers) = extract(window);
    let Some(process) = estimate(window) else {
        return Vec::new();
    };
    let latest = ps[0];
    let avg = |pod: usize| {
        let used: Vec<f64> = ps
            .iter()
            .filter_map(|s| s.iter().find(|p| p.pod == pod).map(|p| p.cpu_used))
            .collect();
        used.iter().sum::<f64>() / used.len() as f64
    };
    let avgs: Vec<(PodUse, f64)> = latest.iter().map(|p| (*p, avg(p.pod))).collect();
    let hot: Vec<f64> = avgs
        .iter()
        .filter(|(p, a)| p.cpu_req > 0.0 && a / p.cpu_req >= PS_HOT)
        .map(|&(_, a)| a)
        .collect();
    if hot.is_empty() {
        return Vec::new();
    }
    let max_workers = (limits.cpu / (process.ps_cpu_per_worker + process.worker_cpu)).floor();
    let mut tune = (max_workers / workers[0].len() as f64).max(1.0);
    for a in hot {
        tune = tune.min(NODE_MAX_CPU / a);
    }
    avgs.iter()
        .map(|(p, a)| (p, round1(a * tune)))
        .filter(|(p, cpu)| p.cpu_req < *cpu)
        .map(|(p, cpu)| (p.pod, cpu))
        .collect()
}

/// OOM: the memory of a relaunched pod, or `None` when DLRover would not relaunch it
/// (its memory was already >= 65536 MB).
pub fn oom_memory(mem_mb: u64) -> Option<u64> {
    if mem_mb >= OOM_MAX_MEM_MB {
        return None;
    }
    let doubled = (mem_mb as f64 * OOM_FACTOR) as u64;
    Some(doubled.min(mem_mb + OOM_MAX_STEP_MB))
}

/// Pending: a pod pending over 900 s is re-requested with half its CPU (if that is still
/// > 4) and half its memory (if that is still > 6144 MB); `None` when neither halves.
pub fn pending_shrink(cpu: f64, mem_mb: u64) -> Option<(f64, u64)> {
    let half_cpu = cpu / 2.0;
    let half_mem = mem_mb / 2;
    let new_cpu = if half_cpu > PENDING_MIN_CPU {
        half_cpu
    } else {
        cpu
    };
    let new_mem = if half_mem > PENDING_MIN_MEM_MB {
        half_mem
    } else {
        mem_mb
    };
    (new_cpu != cpu || new_mem != mem_mb).then_some((new_cpu, new_mem))
}

/// Rounds to one decimal, as the optimizer's `round(x, 1)`.
pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        cpu: 100.0,
        mem_mb: 102_400.0,
    };

    /// (pod, requested CPU, used CPU, used memory MB); requested memory 8192 MB.
    type P = (usize, f64, f64, f64);

    fn pods(v: &[P]) -> Vec<PodUse> {
        v.iter()
            .map(|&(pod, cpu_req, cpu_used, mem_used_mb)| PodUse {
                pod,
                cpu_req,
                mem_req_mb: 8_192,
                cpu_used,
                mem_used_mb,
            })
            .collect()
    }

    fn snap(t: u64, ps: &[P], workers: &[P]) -> Snapshot {
        Snapshot {
            time: SimTime::from_secs(t),
            ps: pods(ps),
            workers: pods(workers),
        }
    }

    /// One PS of 16 CPU using 4 then 6 (5 on average), two workers using 3 and 5 CPU.
    fn two_workers(ps_used: (f64, f64)) -> Vec<Snapshot> {
        vec![
            snap(
                300,
                &[(0, 16.0, ps_used.0, 4_000.0)],
                &[(1, 8.0, 3.0, 2_000.0), (2, 8.0, 5.0, 2_500.0)],
            ),
            snap(
                600,
                &[(0, 16.0, ps_used.1, 5_000.0)],
                &[(1, 8.0, 3.0, 2_000.0), (2, 8.0, 5.0, 3_000.0)],
            ),
        ]
    }

    #[test]
    fn create_gives_a_fifth_of_the_limits_capped() {
        let c = create_config(LIMITS, 0);
        assert_eq!((c.ps, c.workers), (1, 1));
        // min(ceil(100 / 5), 16) = 16; min(ceil(102400 / 5), 8192) = 8192.
        assert_eq!(
            (c.worker_cpu, c.worker_mem_mb, c.ps_cpu, c.ps_mem_mb),
            (16.0, 8_192, 16.0, 8_192)
        );
        let small = create_config(
            Limits {
                cpu: 28.0,
                mem_mb: 20_001.0,
            },
            1,
        );
        // ceil(5.6) = 6; ceil(4000.2) = 4001.
        assert_eq!(
            (small.worker_cpu, small.ps_mem_mb, small.worker_gpu),
            (6.0, 4_001, 1)
        );
    }

    #[test]
    fn the_users_counts_and_valid_ps_resources_override_a_plan() {
        let user = JobConfig {
            workers: 6,
            ps: 3,
            worker_cpu: 4.0,
            worker_mem_mb: 12_000,
            worker_gpu: 0,
            ps_cpu: 8.0,
            ps_mem_mb: 20_000,
        };
        let kept = keep_user(create_config(LIMITS, 0), &user);
        // Counts and PS resources are the user's; worker resources the create plan's.
        assert_eq!((kept.workers, kept.ps), (6, 3));
        assert_eq!((kept.ps_cpu, kept.ps_mem_mb), (8.0, 20_000));
        assert_eq!((kept.worker_cpu, kept.worker_mem_mb), (16.0, 8_192));
        // A PS request below the valid minimum is "not set": the plan's value stays.
        let unset = JobConfig {
            ps_cpu: 1.0,
            ps_mem_mb: 512,
            ..user
        };
        let kept = keep_user(create_config(LIMITS, 0), &unset);
        assert_eq!((kept.ps_cpu, kept.ps_mem_mb), (16.0, 8_192));
        // A plan that leaves a worker resource at 0 takes the user's.
        let partial = JobConfig {
            worker_cpu: 0.0,
            worker_mem_mb: 0,
            ..create_config(LIMITS, 0)
        };
        let kept = keep_user(partial, &user);
        assert_eq!((kept.worker_cpu, kept.worker_mem_mb), (4.0, 12_000));
    }

    #[test]
    fn extract_keeps_snapshots_of_the_latest_ps_set_and_worker_count() {
        let mut w = two_workers((4.0, 6.0));
        w.insert(0, snap(0, &[(9, 16.0, 1.0, 1.0)], &[(1, 8.0, 1.0, 1.0)]));
        let (ps, workers) = extract(&w);
        assert_eq!((ps.len(), workers.len()), (2, 2));
        assert_eq!(ps[0][0].cpu_used, 6.0, "newest first");
    }

    #[test]
    fn ps_initial_feeds_the_most_workers_the_limit_allows() {
        let plan = ps_initial(LIMITS, &two_workers((4.0, 6.0))).unwrap();
        // psCpuPerWorker = 5 / 2 = 2.5; workerCpu = 4; maxWorkers = 100 / 6.5 = 15.38;
        // psNum = ceil((100 - 15.38 * 4) / 16) = ceil(2.40) = 3; psMem = 5000 * 1.2.
        assert_eq!(
            plan,
            PsPlan {
                ps: 3,
                cpu: 16.0,
                mem_mb: 6_000
            }
        );
        // A PS using everything asks for at most 15.
        let hungry = two_workers((1_000.0, 1_000.0));
        assert_eq!(
            ps_initial(
                Limits {
                    cpu: 10_000.0,
                    ..LIMITS
                },
                &hungry
            )
            .unwrap()
            .ps,
            MAX_PS
        );
    }

    #[test]
    fn workers_grow_by_point_nine_over_the_ps_utilisation_within_the_limits() {
        // Max PS utilisation 4.8 / 16 = 0.3: n = int(2 * 0.9 / 0.3) = 6; CPU = avg 4.0;
        // memory = 1.5 x 3000; room: (100 - 16) / 4 = 21 workers.
        let w = two_workers((4.8, 4.0));
        let plan = worker_plan(LIMITS, &w, (16.0, 8_192), None).unwrap();
        assert_eq!(
            plan,
            WorkerPlan {
                workers: 6,
                cpu: 4.0,
                mem_mb: 4_500
            }
        );
        // Bounded by the CPU left under a 30-CPU limit: (30 - 16) / 4 = 3.5 -> 3.
        let tight = Limits {
            cpu: 30.0,
            ..LIMITS
        };
        assert_eq!(
            worker_plan(tight, &w, (16.0, 8_192), None).unwrap().workers,
            3
        );
        // Utilisation 14.72 / 16 = 0.92: factor < 1, the count stays.
        let busy = two_workers((14.72, 14.0));
        assert_eq!(
            worker_plan(LIMITS, &busy, (16.0, 8_192), None)
                .unwrap()
                .workers,
            2
        );
    }

    #[test]
    fn workers_stop_on_a_saturated_ps_or_a_low_speed_ratio() {
        let saturated = two_workers((15.4, 10.0)); // 0.9625 > 0.95
        assert_eq!(worker_plan(LIMITS, &saturated, (16.0, 8_192), None), None);
        let w = two_workers((4.8, 4.0));
        assert_eq!(worker_plan(LIMITS, &w, (16.0, 8_192), Some(0.19)), None);
        assert!(worker_plan(LIMITS, &w, (16.0, 8_192), Some(0.2)).is_some());
        // Memory and CPU floors: 1 CPU, 1024 MB.
        let idle = vec![snap(300, &[(0, 16.0, 1.0, 1.0)], &[(1, 8.0, 0.2, 100.0)])];
        let plan = worker_plan(LIMITS, &idle, (16.0, 8_192), None).unwrap();
        assert_eq!((plan.cpu, plan.mem_mb), (1.0, 1_024));
    }

    #[test]
    fn speed_ratio_is_marginal_speed_per_added_worker_over_old_speed_per_worker() {
        let s = |workers: u32, steps_per_s: f64| ProfileSample {
            running_workers: workers,
            running_ps: 1,
            steps_per_s,
            ..Default::default()
        };
        // 2 workers at 10 steps/s, then 4 at 15: (15 - 10) / 2 / (10 / 2) = 0.5.
        let h = [s(1, 3.0), s(2, 9.0), s(2, 11.0), s(4, 14.0), s(4, 16.0)];
        assert!((speed_ratio(&h).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(
            speed_ratio(&[s(4, 10.0), s(2, 9.0)]),
            None,
            "not after a decrease"
        );
        assert_eq!(speed_ratio(&[s(2, 9.0)]), None);
    }

    #[test]
    fn hot_ps_gets_cpu_tuned_by_the_workers_the_limit_could_feed() {
        // PS 0 uses 7.6 of 8 (0.95: hot), PS 1 uses 4; workers use 4 each.
        // psCpuPerWorker = 11.6 / 2 = 5.8; maxWorkers = int(100 / 9.8) = 10;
        // tune = max(1, 10 / 2) = 5, capped at 32 / 7.6 = 4.2105;
        // PS 0: round(7.6 * 4.2105, 1) = 32.0; PS 1: round(4 * 4.2105, 1) = 16.8.
        let w = vec![snap(
            300,
            &[(0, 8.0, 7.6, 1.0), (1, 8.0, 4.0, 1.0)],
            &[(2, 8.0, 4.0, 1.0), (3, 8.0, 4.0, 1.0)],
        )];
        assert_eq!(hot_ps_plan(LIMITS, &w), vec![(0, 32.0), (1, 16.8)]);
        // No PS at 0.9 of its request: nothing.
        let cool = vec![snap(300, &[(0, 8.0, 7.1, 1.0)], &[(2, 8.0, 4.0, 1.0)])];
        assert!(hot_ps_plan(LIMITS, &cool).is_empty());
    }

    #[test]
    fn oom_doubles_memory_by_at_most_8192_and_stops_at_64_gib() {
        assert_eq!(oom_memory(4_096), Some(8_192));
        assert_eq!(oom_memory(16_384), Some(24_576));
        assert_eq!(oom_memory(65_535), Some(73_727));
        assert_eq!(oom_memory(65_536), None);
    }

    #[test]
    fn pending_halves_cpu_above_4_and_memory_above_6144() {
        assert_eq!(pending_shrink(16.0, 16_384), Some((8.0, 8_192)));
        assert_eq!(pending_shrink(10.0, 8_192), Some((5.0, 8_192)));
        assert_eq!(pending_shrink(8.0, 14_000), Some((8.0, 7_000)));
        assert_eq!(pending_shrink(8.0, 8_192), None);
    }
}
