//! Stage 2, cluster level: DLRover-RM's weighted greedy selection (Eq. 11-14). Each job
//! offers candidate plans from its Pareto front; a plan is worth its resource efficiency
//! RE = throughput gain / resource cost, weighted by WG = 1 / (remaining time + eps)^rho so
//! that jobs close to completion go first (rho = 2.5 in the paper). Plans are taken best
//! first, at most one per job, while they fit in the free capacity.

use dlsim_model::policy::JobConfig;
use std::collections::BTreeSet;

/// One job's candidate plan and what it would take from (or give back to) the cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// RE x WG.
    pub score: f64,
    pub job: u64,
    pub config: JobConfig,
    /// Extra cores and memory over the job's current allocation (negative: released).
    pub d_cpu: f64,
    pub d_mem: f64,
}

/// Eq. 13: the weight of a plan that would leave `remaining` samples at `throughput`
/// samples/s.
pub fn weight(remaining: f64, throughput: f64, rho: f64) -> f64 {
    1.0 / (remaining / throughput.max(1e-9) + 1e-6).powf(rho)
}

/// Eq. 11-14: takes candidates by descending score (ties by job id), at most one per job
/// and skipping jobs already in `busy`, while their extra resources fit in the free CPU
/// and memory; returns the chosen plans in the order taken. Freed resources (negative
/// deltas) become available to the plans after them.
pub fn select(
    mut candidates: Vec<Candidate>,
    free_cpu: &mut f64,
    free_mem: &mut f64,
    busy: &mut BTreeSet<u64>,
) -> Vec<Candidate> {
    candidates.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.job.cmp(&b.job)));
    let mut chosen = Vec::new();
    for c in candidates {
        if busy.contains(&c.job) || c.d_cpu > free_cpu.max(0.0) || c.d_mem > free_mem.max(0.0) {
            continue;
        }
        *free_cpu -= c.d_cpu;
        *free_mem -= c.d_mem;
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
        }
    }

    #[test]
    fn rho_puts_the_job_nearest_completion_first_even_at_lower_efficiency() {
        // Job 1: 1 h left, RE 1. Job 2: 4 h left, RE 10. With rho = 2.5 the weights
        // differ by 4^2.5 = 32, so job 1 wins although its plan is 10x less efficient.
        let near = cand(1, 4, 1.0, 3_600.0, 2.5, 8.0);
        let far = cand(2, 4, 10.0, 4.0 * 3_600.0, 2.5, 8.0);
        assert!((near.score / far.score - 32.0 / 10.0).abs() < 1e-6);
        let (mut cpu, mut mem) = (8.0, 8.0 * 1_024.0);
        let chosen = select(vec![far, near], &mut cpu, &mut mem, &mut BTreeSet::new());
        assert_eq!(chosen.iter().map(|c| c.job).collect::<Vec<_>>(), vec![1]);
        assert_eq!((cpu, mem), (0.0, 0.0));
        // With rho = 0 only efficiency counts, and job 2 goes first.
        let (mut cpu, mut mem) = (8.0, 8.0 * 1_024.0);
        let near = cand(1, 4, 1.0, 3_600.0, 0.0, 8.0);
        let far = cand(2, 4, 10.0, 4.0 * 3_600.0, 0.0, 8.0);
        let chosen = select(vec![near, far], &mut cpu, &mut mem, &mut BTreeSet::new());
        assert_eq!(chosen.iter().map(|c| c.job).collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn never_exceeds_free_capacity_and_takes_one_plan_per_job() {
        let (mut cpu, mut mem) = (10.0, 10.0 * 1_024.0);
        let cands = vec![
            cand(1, 8, 5.0, 3_600.0, 2.5, 6.0),
            cand(1, 6, 4.0, 3_600.0, 2.5, 4.0), // job 1 again: skipped
            cand(2, 8, 3.0, 3_600.0, 2.5, 6.0), // does not fit after job 1's 6
            cand(3, 4, 2.0, 3_600.0, 2.5, 4.0), // fits exactly
            cand(4, 2, 1.0, 3_600.0, 2.5, 1.0), // nothing left
        ];
        let chosen = select(cands, &mut cpu, &mut mem, &mut BTreeSet::new());
        assert_eq!(chosen.iter().map(|c| c.job).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(chosen[0].config.workers, 8);
        assert!(cpu >= 0.0 && mem >= 0.0);
        assert_eq!(cpu, 0.0);
    }

    #[test]
    fn a_shrinking_plan_frees_capacity_for_the_plans_after_it() {
        let (mut cpu, mut mem) = (0.0, 0.0);
        let shrink = cand(1, 2, 9.0, 3_600.0, 2.5, -4.0);
        let grow = cand(2, 6, 1.0, 3_600.0, 2.5, 4.0);
        let mut busy = BTreeSet::from([7]);
        let skipped = cand(7, 2, 100.0, 3_600.0, 2.5, -1.0);
        let chosen = select(vec![grow, shrink, skipped], &mut cpu, &mut mem, &mut busy);
        assert_eq!(chosen.iter().map(|c| c.job).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(cpu, 0.0);
        assert_eq!(busy, BTreeSet::from([1, 2, 7]));
    }
}
