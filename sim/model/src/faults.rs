//! Fault injection and recovery costs as configuration: the scenario's `faults` and
//! `recovery` sections. Zero turns a fault off. All fault draws come from the named
//! stream `faults`, in event order, so they are reproducible.
//!
//! Sources (MISSION / seed papers): pod daily failure rate 1.5% (DLRover-RM: a 50-pod job
//! then fails with 53% probability a day); stragglers at 25% (or 3%) of configured CPU
//! (DLRover Sec. 6.2, DLRover-RM Sec. 6); hot PS from uneven partitioning (DLRover Fig. 6);
//! restart budget 3 per role, capped at 5 (open-source DLRover); checkpoint/restart
//! 5-10 min each (DLRover-RM Sec. 2).

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FaultConfig {
    /// Probability that a given pod fails within a day of running (exponential lifetimes).
    pub pod_failure_per_day: f64,
    /// Probability that a launched worker is a straggler.
    pub worker_straggler_prob: f64,
    /// Probability that a launched PS is a straggler.
    pub ps_straggler_prob: f64,
    /// A straggler gets this fraction of its requested CPU.
    pub straggler_cpu_ratio: f64,
    /// Probability that a job's parameters are partitioned unevenly (one hot PS).
    pub hot_ps_prob: f64,
    /// The hot PS carries this many times the share of each other PS.
    pub hot_ps_load_factor: f64,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            pod_failure_per_day: 0.015,
            worker_straggler_prob: 0.0,
            ps_straggler_prob: 0.0,
            straggler_cpu_ratio: 0.25,
            hot_ps_prob: 0.0,
            hot_ps_load_factor: 3.0,
        }
    }
}

impl FaultConfig {
    /// Exponential failure rate per second equivalent to `pod_failure_per_day`.
    pub fn pod_failure_rate_per_s(&self) -> f64 {
        if self.pod_failure_per_day <= 0.0 {
            0.0
        } else {
            -(1.0 - self.pod_failure_per_day.min(0.999_999)).ln() / 86_400.0
        }
    }

    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let prob = |f: &'static str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err((f, format!("must be a probability in [0, 1], got {v}")))
            }
        };
        prob("faults.pod_failure_per_day", self.pod_failure_per_day)?;
        prob("faults.worker_straggler_prob", self.worker_straggler_prob)?;
        prob("faults.ps_straggler_prob", self.ps_straggler_prob)?;
        prob("faults.hot_ps_prob", self.hot_ps_prob)?;
        if !(self.straggler_cpu_ratio > 0.0 && self.straggler_cpu_ratio <= 1.0) {
            return Err(("faults.straggler_cpu_ratio", "must be in (0, 1]".into()));
        }
        if !(self.hot_ps_load_factor >= 1.0 && self.hot_ps_load_factor.is_finite()) {
            return Err(("faults.hot_ps_load_factor", "must be >= 1".into()));
        }
        Ok(())
    }
}

/// How failed pods come back, and what checkpoints cost.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecoveryConfig {
    /// Relaunches allowed per role (PS, worker) before the job fails (DLRover: 3, cap 5).
    pub restart_budget: u32,
    /// Memory of a pod relaunched after an OOM, as a multiple of the old limit. 1.0 is what
    /// a plain TFJob restart does (same limits); DLRover doubles it.
    pub oom_memory_factor: f64,
    /// Training time between periodic checkpoints to remote storage; 0 = never.
    pub checkpoint_interval_s: f64,
    /// Time a checkpoint stalls training.
    pub checkpoint_cost_s: f64,
    /// Time to reload the last checkpoint after a restart (DLRover-RM: 5-10 min).
    pub reload_s: f64,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        RecoveryConfig {
            restart_budget: 3,
            oom_memory_factor: 1.0,
            checkpoint_interval_s: 1_800.0,
            checkpoint_cost_s: 30.0,
            reload_s: 420.0,
        }
    }
}

impl RecoveryConfig {
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.restart_budget > 5 {
            return Err((
                "recovery.restart_budget",
                "DLRover caps the budget at 5".into(),
            ));
        }
        if !(self.oom_memory_factor >= 1.0 && self.oom_memory_factor.is_finite()) {
            return Err(("recovery.oom_memory_factor", "must be >= 1".into()));
        }
        for (f, v) in [
            ("recovery.checkpoint_interval_s", self.checkpoint_interval_s),
            ("recovery.checkpoint_cost_s", self.checkpoint_cost_s),
            ("recovery.reload_s", self.reload_s),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err((f, format!("must be >= 0, got {v}")));
            }
        }
        Ok(())
    }

    /// The fraction of wall time a training job makes progress, given checkpoint stalls.
    /// Simplification: the stall is spread evenly instead of modelled as a pause.
    pub fn checkpoint_duty(&self) -> f64 {
        if self.checkpoint_interval_s <= 0.0 {
            1.0
        } else {
            self.checkpoint_interval_s / (self.checkpoint_interval_s + self.checkpoint_cost_s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daily_rate_matches_the_papers_fifty_pod_example() {
        let f = FaultConfig::default();
        let per_pod_day = 1.0 - (-f.pod_failure_rate_per_s() * 86_400.0).exp();
        assert!((per_pod_day - 0.015).abs() < 1e-12);
        let job_day = 1.0 - (1.0 - per_pod_day).powi(50);
        assert!((job_day - 0.53).abs() < 0.005, "{job_day}");
    }
}
