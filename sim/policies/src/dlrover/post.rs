//! Stage 3: DLRover-RM's instability handling for one job, at most one action per tick:
//! after an OOM kill the role's memory doubles; OOM prediction extrapolates the fullest
//! PS's memory and raises it before the limit; a hot PS (CPU at >= 90% of its request and
//! 1.5x the median PS) of the job's full size has its PS set migrated, which re-partitions
//! the parameters evenly (DeepRec), and one cut below the job's PS size is replaced by a
//! PS with twice its CPU, at least the job's (seamless migration).
//! Stragglers need no action here: dynamic sharding already gives them fewer shards.

use super::Tracked;
use dlsim_model::job::Role;
use dlsim_model::policy::{
    Action, JobConfig, JobPhase, JobView, PodEventKind, ProfileSample, RescaleMethod,
};

/// DLRover's hot-PS test on the CPU loads (used / requested) of one role's pods: the most
/// loaded pod, if it runs at >= 90% of its request while the median pod runs below 1/1.5
/// of its load (at least two pods). `static[slow=restart]` applies it to either role.
pub(crate) fn saturated_outlier(loads: &[f64]) -> Option<usize> {
    if loads.len() < 2 {
        return None;
    }
    let mut sorted = loads.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let (hot, &max) = loads
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .expect("non-empty");
    (max >= 0.9 && max >= 1.5 * median).then_some(hot)
}

/// Whether a job profile was taken with a hot PS: the busiest PS at >= 90% of its request
/// and 1.5x the PSes' mean load (the per-pod test, [`saturated_outlier`], on what the
/// job's profile keeps: the mean in place of the median).
pub(super) fn hot_sample(s: &ProfileSample) -> bool {
    let mean = s.ps_cpu_used / s.ps_cpu.max(1e-9);
    s.running_ps >= 2 && s.ps_cpu_load_max >= 0.9 && s.ps_cpu_load_max >= 1.5 * mean
}

/// The job's hot PS as its pods' last profiles show it ([`saturated_outlier`] of the PS
/// CPU loads): its pod id and requested cores.
pub(super) fn hot_ps(job: &JobView<'_>) -> Option<(usize, f64)> {
    let ps: Vec<(usize, f64, f64)> = job
        .pods
        .iter()
        .filter(|p| p.role == Role::Ps)
        .filter_map(|p| p.last.map(|s| (p.id, s.cpu_used, p.request.cpu_cores())))
        .collect();
    let loads: Vec<f64> = ps.iter().map(|&(_, u, r)| u / r).collect();
    saturated_outlier(&loads).map(|hot| (ps[hot].0, ps[hot].2))
}

/// Stage 3 for one job: OOM follow-up, OOM prediction, hot PS. At most one action.
pub(super) fn post_scale(
    t: &mut Tracked,
    job: &JobView<'_>,
    interval_s: u64,
    max_cpu: f64,
    max_mem: u64,
) -> Option<Action> {
    if job.rescaling || !matches!(job.phase, JobPhase::Training | JobPhase::Starting) {
        return None;
    }
    let id = job.request.id;
    // The latest OOM kill in the job's recent events, if the policy has not reacted to it
    // yet (by time: the event list is a window, so counting kills would miss some).
    let oom = job
        .events
        .iter()
        .rev()
        .find(|e| e.kind == PodEventKind::FailedOom)
        .filter(|e| t.last_oom.is_none_or(|l| e.time > l));
    if let Some(e) = oom {
        let role = e.role;
        t.last_oom = Some(e.time);
        let mut c = job.config;
        match role {
            Role::Ps => c.ps_mem_mb = (c.ps_mem_mb * 2).min(max_mem),
            Role::Worker => c.worker_mem_mb = (c.worker_mem_mb * 2).min(max_mem),
        }
        return (c != job.config).then_some(Action::Rescale {
            job: id,
            config: c,
            method: RescaleMethod::Migrate,
        });
    }
    if job.phase != JobPhase::Training {
        return None;
    }
    // OOM prediction: extrapolate the fullest PS's memory over the next intervals.
    let h = job.history;
    if h.len() >= 3 && job.config.ps > 0 {
        let (a, b) = (&h[h.len() - 3], &h[h.len() - 1]);
        let dt = (b.time - a.time).as_secs_f64();
        if dt > 0.0 {
            let slope = (b.ps_mem_used_mb_max - a.ps_mem_used_mb_max) / dt;
            let horizon = 3.0 * interval_s as f64 + 300.0;
            let limit = job.config.ps_mem_mb as f64;
            if slope > 0.0 && b.ps_mem_used_mb_max + slope * horizon > 0.9 * limit {
                let thr = b.steps_per_s.max(1e-9);
                let left_s = job.request.steps.saturating_sub(job.steps_done) as f64 / thr;
                let target = (b.ps_mem_used_mb_max + slope * left_s) * 1.15;
                let mem = (target.max(limit * 1.25).ceil() as u64).min(max_mem);
                if mem > job.config.ps_mem_mb {
                    return Some(Action::Rescale {
                        job: id,
                        config: JobConfig {
                            ps_mem_mb: mem,
                            ..job.config
                        },
                        method: RescaleMethod::Migrate,
                    });
                }
            }
        }
    }
    // Hot PS: one PS busy at its limit while the others idle.
    if let Some((pod, req)) = hot_ps(job) {
        if req >= job.config.ps_cpu {
            // A PS of the job's full size that carries more than the rest: a partition
            // uneven by tensor (or a PS on a slow node). DLRover-RM migrates the PS set,
            // and DeepRec spreads the parameters evenly over the new one (Sec. 3, "PS
            // Stragglers"; `Partitioning::Balanced`): the same configuration on new PSes.
            return Some(Action::Rescale {
                job: id,
                config: job.config,
                method: RescaleMethod::Migrate,
            });
        }
        // A PS cut below its configuration comes back at its full size (twice its cores
        // at least).
        let cpu = (req * 2.0).max(job.config.ps_cpu);
        if cpu <= max_cpu {
            let mem = job
                .pods
                .iter()
                .find(|p| p.id == pod)
                .map_or(job.config.ps_mem_mb, |p| p.request.mem_mb);
            return Some(Action::ReplacePod {
                job: id,
                pod,
                cpu,
                mem_mb: mem,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A profile with one PS at its limit while the PSes average far below is a hot-PS
    /// profile; an evenly busy job, or one PS, is not.
    #[test]
    fn hot_sample_needs_one_saturated_ps_above_the_rest() {
        let s = |running_ps: u32, mean_used: f64, max_load: f64| ProfileSample {
            running_ps,
            ps_cpu: 16.0,
            ps_cpu_used: mean_used,
            ps_cpu_load_max: max_load,
            steps_per_s: 10.0,
            ..ProfileSample::default()
        };
        // 8 PS, one at 3% of its CPU and saturated (load 1.0 of its cut request), the mean
        // 0.2 of the configured 16 cores.
        assert!(hot_sample(&s(8, 3.2, 1.0)));
        // Every PS busy: saturated, but no outlier.
        assert!(!hot_sample(&s(8, 15.0, 1.0)));
        // An outlier below 90%.
        assert!(!hot_sample(&s(8, 3.2, 0.8)));
        // One PS cannot be an outlier.
        assert!(!hot_sample(&s(1, 3.2, 1.0)));
    }

    /// A hot PS of the job's full size carries more than its share: the PS set is migrated
    /// to the same configuration, which DeepRec re-partitions evenly. A PS cut below the
    /// job's size is replaced by one of the job's size.
    #[test]
    fn a_hot_ps_is_re_partitioned_or_replaced_by_its_size() {
        use dlsim_model::policy::{PodPhase, PodSample, PodView};
        use dlsim_model::Resources;
        let requested = JobConfig {
            workers: 8,
            worker_cpu: 4.0,
            worker_mem_mb: 8_192,
            worker_gpu: 0,
            ps: 4,
            ps_cpu: 8.0,
            ps_mem_mb: 8_192,
        };
        let request = crate::testkit::request(requested);
        let pod = |id: usize, cpu: f64, used: f64| PodView {
            id,
            role: Role::Ps,
            phase: PodPhase::Running,
            request: Resources::new(cpu, 8_192, 0),
            created: dlsim_engine::SimTime::ZERO,
            running_since: Some(dlsim_engine::SimTime::ZERO),
            last: Some(PodSample {
                time: dlsim_engine::SimTime::from_secs(600),
                cpu_used: used,
                mem_used_mb: 3_000.0,
                samples_per_s: 0.0,
                step_time_s: 0.0,
                samples_done: 0.0,
            }),
            ewma_samples_per_s: 0.0,
        };
        let act = |hot: PodView| {
            let mut job = crate::testkit::view(&request);
            job.pods = vec![hot, pod(1, 8.0, 2.0), pod(2, 8.0, 2.0), pod(3, 8.0, 2.0)];
            post_scale(&mut Tracked::default(), &job, 180, 64.0, 262_144)
        };
        assert_eq!(
            act(pod(0, 8.0, 7.6)),
            Some(Action::Rescale {
                job: 1,
                config: requested,
                method: RescaleMethod::Migrate,
            })
        );
        assert_eq!(
            act(pod(0, 0.24, 0.24)),
            Some(Action::ReplacePod {
                job: 1,
                pod: 0,
                cpu: 8.0,
                mem_mb: 8_192,
            })
        );
        // Evenly busy PSes are not hot.
        let mut job = crate::testkit::view(&request);
        job.pods = (0..4).map(|k| pod(k, 8.0, 7.6)).collect();
        assert_eq!(post_scale(&mut Tracked::default(), &job, 180, 64.0, 262_144), None);
    }
}
