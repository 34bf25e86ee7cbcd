//! Stage 2, cluster level: DLRover-RM's weighted greedy selection (Eq. 11-14). Each job
//! offers candidate plans from its Pareto front; a plan is worth its resource efficiency
//! RE = throughput gain / resource cost, weighted by WG = 1 / (remaining time + eps)^rho so
//! that jobs close to completion go first (rho = 2.5 in the paper). Plans are taken best
//! first, at most one per job, while they fit in the free capacity ([`Budget`]: CPU, memory
//! and GPUs).

use dlsim_model::policy::JobConfig;
use std::collections::BTreeSet;

/// One job's candidate plan and what it would take from (or give back to) the cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// RE x WG.
    pub score: f64,
    pub job: u64,
    pub config: JobConfig,
    /// Extra cores, memory and GPUs over the job's current allocation (negative: released).
    pub d_cpu: f64,
    pub d_mem: f64,
    pub d_gpu: i64,
}

/// What the greedy may still hand out: cores, MB and GPUs (Eq. 13's `S`). GPUs count
/// since 2026-11-27: before, GPU jobs grew their GPU workers on CPU and memory alone, took
/// the production day's 64 GPUs and left GPU arrivals pending past the scheduling timeout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    pub cpu: f64,
    pub mem: f64,
    pub gpu: i64,
}

impl Budget {
    /// Whether extra cores, MB and GPUs fit what is left (a release always does).
    pub fn admits(&self, d_cpu: f64, d_mem: f64, d_gpu: i64) -> bool {
        d_cpu <= self.cpu.max(0.0) && d_mem <= self.mem.max(0.0) && d_gpu <= self.gpu.max(0)
    }
}

/// Eq. 13: the weight of a plan that would leave `remaining` samples at `throughput`
/// samples/s.
pub fn weight(remaining: f64, throughput: f64, rho: f64) -> f64 {
    1.0 / (remaining / throughput.max(1e-9) + 1e-6).powf(rho)
}

/// Eq. 11-14: takes candidates by descending score (ties by job id), at most one per job
/// and skipping jobs already in `busy`, while their extra resources fit in `free`; returns
/// the chosen plans in the order taken. Freed resources (negative deltas) become available
/// to the plans after them.
pub fn select(
    mut candidates: Vec<Candidate>,
    free: &mut Budget,
    busy: &mut BTreeSet<u64>,
) -> Vec<Candidate> {
    candidates.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.job.cmp(&b.job)));
    let mut chosen = Vec::new();
    for c in candidates {
        if busy.contains(&c.job) || !free.admits(c.d_cpu, c.d_mem, c.d_gpu) {
            continue;
        }
        free.cpu -= c.d_cpu;
        free.mem -= c.d_mem;
        free.gpu -= c.d_gpu;
        busy.insert(c.job);
        chosen.push(c);
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(job: u64, workers: u32, re: f64, remaining: f64, rho: f64, d_cpu: f64) -> Candidate {
        Candidate {
            score: re * weight(remaining, 1.0, rho),
            job,
            config: JobConfig {
                workers,
                ps: 1,
                worker_cpu: 1.0,
                worker_mem_mb: 1_024,
                worker_gpu: 0,
                ps_cpu: 1.0,
                ps_mem_mb: 1_024,
            },
            d_cpu,
            d_mem: d_cpu * 1_024.0,
            d_gpu: 0,
        }
    }

    /// `cpu` cores, as many GB, no GPU.
    fn budget(cpu: f64) -> Budget {
        Budget {
            cpu,
            mem: cpu * 1_024.0,
            gpu: 0,
        }
    }

    #[test]
    fn a_plan_needing_more_gpus_than_are_free_is_not_taken() {
        let gpu = |job, d_gpu| Candidate {
            d_gpu,
            ..cand(job, 4, 1.0, 3_600.0, 2.5, 1.0)
        };
        let mut free = Budget { gpu: 2, ..budget(100.0) };
        let chosen = select(vec![gpu(1, 3), gpu(2, 2), gpu(3, 1)], &mut free, &mut BTreeSet::new());
        // Job 1 would take 3 of the 2 free GPUs; job 2 takes both, job 3 finds none.
        assert_eq!(chosen.iter().map(|c| c.job).collect::<Vec<_>>(), vec![2]);
        assert_eq!(free.gpu, 0);
    }

    #[test]
    fn rho_puts_the_job_nearest_completion_first_even_at_lower_efficiency() {
        // Job 1: 1 h left, RE 1. Job 2: 4 h left, RE 10. With rho = 2.5 the weights
        // differ by 4^2.5 = 32, so job 1 wins although its plan is 10x less efficient.
        let near = cand(1, 4, 1.0, 3_600.0, 2.5, 8.0);
        let far = cand(2, 4, 10.0, 4.0 * 3_600.0, 2.5, 8.0);
        assert!((near.score / far.score - 32.0 / 10.0).abs() < 1e-6);
        let mut free = budget(8.0);
        let chosen = select(vec![far, near], &mut free, &mut BTreeSet::new());
        assert_eq!(chosen.iter().map(|c| c.job).collect::<Vec<_>>(), vec![1]);
        assert_eq!((free.cpu, free.mem), (0.0, 0.0));
        // With rho = 0 only efficiency counts, and job 2 goes first.
        let near = cand(1, 4, 1.0, 3_600.0, 0.0, 8.0);
        let far = cand(2, 4, 10.0, 4.0 * 3_600.0, 0.0, 8.0);
        let chosen = select(vec![near, far], &mut budget(8.0), &mut BTreeSet::new());
        assert_eq!(chosen.iter().map(|c| c.job).collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn never_exceeds_free_capacity_and_takes_one_plan_per_job() {
        let mut free = budget(10.0);
        let cands = vec![
            cand(1, 8, 5.0, 3_600.0, 2.5, 6.0),
            cand(1, 6, 4.0, 3_600.0, 2.5, 4.0), // job 1 again: skipped
            cand(2, 8, 3.0, 3_600.0, 2.5, 6.0), // does not fit after job 1's 6
            cand(3, 4, 2.0, 3_600.0, 2.5, 4.0), // fits exactly
            cand(4, 2, 1.0, 3_600.0, 2.5, 1.0), // nothing left
        ];
        let chosen = select(cands, &mut free, &mut BTreeSet::new());
        assert_eq!(chosen.iter().map(|c| c.job).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(chosen[0].config.workers, 8);
        assert!(free.cpu >= 0.0 && free.mem >= 0.0);
        assert_eq!(free.cpu, 0.0);
    }

    #[test]
    fn a_shrinking_plan_frees_capacity_for_the_plans_after_it() {
        let mut free = budget(0.0);
        let shrink = cand(1, 2, 9.0, 3_600.0, 2.5, -4.0);
        let grow = cand(2, 6, 1.0, 3_600.0, 2.5, 4.0);
        let mut busy = BTreeSet::from([7]);
        let skipped = cand(7, 2, 100.0, 3_600.0, 2.5, -1.0);
        let chosen = select(vec![grow, shrink, skipped], &mut free, &mut busy);
        assert_eq!(chosen.iter().map(|c| c.job).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(free.cpu, 0.0);
        assert_eq!(busy, BTreeSet::from([1, 2, 7]));
    }
}
