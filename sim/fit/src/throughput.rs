//! The DLRover-RM throughput model (Section 4.1, Eq. 1-6), shared by the kernel and simulator.
//!
//! ```text
//! T_grad = a_grad * m / lambda_w            + b_grad
//! T_upd  = a_upd  * w / (p * lambda_p)      + b_upd
//! T_sync = a_sync * (M / p) / (B / w)       + b_sync
//! T_emb  = a_emb  * m * D / p               + b_emb
//! throughput = w * m / (T_grad + T_upd + T_sync + T_emb)   [samples/s]
//! ```
//! Units (the contract with the simulator): times in seconds, `m` in samples, `lambda` in CPU
//! cores, `M` in MB, `B` in MB/s, `D` in dimensions. Hence `a_grad` is core-seconds per sample,
//! `a_upd` core-seconds per pushed gradient copy, `a_sync` is dimensionless (seconds per
//! second of transfer), `a_emb` seconds per (sample x dimension) served by one PS.

use serde::{Deserialize, Serialize};

use crate::rmsle::{check_targets, fit_rmsle_cols};
use crate::{fit_rmsle, FitError};

/// One resource configuration of a training job (the model's inputs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// Number of workers `w`.
    pub workers: u32,
    /// Number of parameter servers `p`.
    pub ps: u32,
    /// CPU cores per worker `lambda_w` (fractional for throttled or straggling pods).
    pub worker_cores: f64,
    /// CPU cores per PS `lambda_p`.
    pub ps_cores: f64,
    /// Batch size `m` in samples.
    pub batch: u32,
    /// Dense model size `M` in MB.
    pub model_mb: f64,
    /// Worker-PS bandwidth `B` in MB/s.
    pub bandwidth_mb_s: f64,
    /// Embedding dimension `D`.
    pub emb_dim: u32,
}

impl Config {
    /// The four slope features `[m/lambda_w, w/(p lambda_p), (M/p)/(B/w), m D / p]`.
    pub fn features(&self) -> [f64; 4] {
        let (w, p) = (f64::from(self.workers), f64::from(self.ps));
        let m = f64::from(self.batch);
        [
            m / self.worker_cores,
            w / (p * self.ps_cores),
            (self.model_mb / p) / (self.bandwidth_mb_s / w),
            m * f64::from(self.emb_dim) / p,
        ]
    }

    pub(crate) fn validate(&self, row: usize) -> Result<(), FitError> {
        let ok = self.workers > 0
            && self.ps > 0
            && self.batch > 0
            && self.worker_cores > 0.0
            && self.ps_cores > 0.0
            && self.bandwidth_mb_s > 0.0
            && self.model_mb >= 0.0;
        if ok {
            Ok(())
        } else {
            Err(FitError::Invalid {
                row,
                what: format!("invalid config {self:?}"),
            })
        }
    }
}

/// Per-iteration time of each part of the model, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PartTimes {
    /// Gradient computation on the worker.
    pub grad_s: f64,
    /// Parameter update on the PSes.
    pub upd_s: f64,
    /// Dense parameter push/pull.
    pub sync_s: f64,
    /// Embedding lookup.
    pub emb_s: f64,
}

impl PartTimes {
    /// Iteration time: the sum of the parts.
    pub fn total_s(&self) -> f64 {
        self.grad_s + self.upd_s + self.sync_s + self.emb_s
    }

    fn as_array(&self) -> [f64; 4] {
        [self.grad_s, self.upd_s, self.sync_s, self.emb_s]
    }
}

/// Fitted coefficients of the DLRover-RM model; all are `>= 0`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThroughputParams {
    pub a_grad: f64,
    pub b_grad: f64,
    pub a_upd: f64,
    pub b_upd: f64,
    pub a_sync: f64,
    pub b_sync: f64,
    pub a_emb: f64,
    pub b_emb: f64,
}

impl ThroughputParams {
    /// Every coefficient with its field name, in declaration order (what loaders name in
    /// their errors).
    pub fn named(&self) -> [(&'static str, f64); 8] {
        [
            ("a_grad", self.a_grad),
            ("b_grad", self.b_grad),
            ("a_upd", self.a_upd),
            ("b_upd", self.b_upd),
            ("a_sync", self.a_sync),
            ("b_sync", self.b_sync),
            ("a_emb", self.a_emb),
            ("b_emb", self.b_emb),
        ]
    }

    fn slopes(&self) -> [f64; 4] {
        [self.a_grad, self.a_upd, self.a_sync, self.a_emb]
    }

    fn from_arrays(a: [f64; 4], b: [f64; 4]) -> Self {
        ThroughputParams {
            a_grad: a[0],
            b_grad: b[0],
            a_upd: a[1],
            b_upd: b[1],
            a_sync: a[2],
            b_sync: b[2],
            a_emb: a[3],
            b_emb: b[3],
        }
    }

    /// Predicted per-part times for `c`, in seconds.
    pub fn part_times(&self, c: &Config) -> PartTimes {
        let f = c.features();
        let a = self.slopes();
        PartTimes {
            grad_s: a[0] * f[0] + self.b_grad,
            upd_s: a[1] * f[1] + self.b_upd,
            sync_s: a[2] * f[2] + self.b_sync,
            emb_s: a[3] * f[3] + self.b_emb,
        }
    }

    /// Predicted iteration time `T` in seconds.
    pub fn iteration_time_s(&self, c: &Config) -> f64 {
        self.part_times(c).total_s()
    }

    /// Predicted throughput in samples/s (`w m / T`); 0 if the model predicts `T <= 0`.
    pub fn throughput(&self, c: &Config) -> f64 {
        let t = self.iteration_time_s(c);
        if t > 0.0 {
            f64::from(c.workers) * f64::from(c.batch) / t
        } else {
            0.0
        }
    }

    /// Sum of the intercepts (the only intercept quantity identifiable from total times).
    pub fn beta_sum(&self) -> f64 {
        self.b_grad + self.b_upd + self.b_sync + self.b_emb
    }

    /// Fits each part separately (`T_part = a * feature + b`, RMSLE on that part's time).
    /// Use this when per-part times are measured (the kernel's calibration): every coefficient
    /// is identifiable. A part that is always zero gets `a = b = 0`.
    pub fn fit_parts(obs: &[(Config, PartTimes)]) -> Result<Self, FitError> {
        if obs.is_empty() {
            return Err(FitError::Empty);
        }
        let mut a = [0.0; 4];
        let mut b = [0.0; 4];
        for part in 0..4 {
            let mut x = Vec::new();
            let mut y = Vec::new();
            for (i, (c, t)) in obs.iter().enumerate() {
                c.validate(i)?;
                let v = t.as_array()[part];
                if v > 0.0 && v.is_finite() {
                    x.push(vec![c.features()[part], 1.0]);
                    y.push(v);
                }
            }
            if !y.is_empty() {
                let theta = fit_rmsle(&x, &y)?;
                a[part] = theta[0];
                b[part] = theta[1];
            }
        }
        Ok(Self::from_arrays(a, b))
    }

    /// Fits from observed throughputs only (what a job master sees, e.g. DLRover-RM's online
    /// fit). Minimises the RMSLE of throughput, which equals the log error of `T = w m / thr`.
    /// From totals only the sum of the four intercepts is identifiable, so the fitted
    /// intercept is split equally over `b_grad, b_upd, b_sync, b_emb`.
    pub fn fit_throughput(obs: &[(Config, f64)]) -> Result<Self, FitError> {
        if obs.is_empty() {
            return Err(FitError::Empty);
        }
        // Rows `[f0, f1, f2, f3, 1]`, stored column-major for the RMSLE fit.
        let rows = obs.len();
        let mut x = vec![1.0; rows * 5];
        let mut y = Vec::with_capacity(rows);
        for (i, (c, thr)) in obs.iter().enumerate() {
            c.validate(i)?;
            if !(thr.is_finite() && *thr > 0.0) {
                return Err(FitError::Invalid {
                    row: i,
                    what: format!("throughput {thr}"),
                });
            }
            for (j, f) in c.features().into_iter().enumerate() {
                x[j * rows + i] = f;
            }
            y.push(f64::from(c.workers) * f64::from(c.batch) / thr);
        }
        check_targets(&y)?;
        let t = fit_rmsle_cols(&x, 5, &y)?;
        let b = t[4] / 4.0;
        Ok(Self::from_arrays([t[0], t[1], t[2], t[3]], [b; 4]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn truth() -> ThroughputParams {
        // The paper's reported slopes, scaled into seconds for a small testbed.
        ThroughputParams {
            a_grad: 3.48e-4,
            b_grad: 0.002,
            a_upd: 2.36e-3,
            b_upd: 0.001,
            a_sync: 0.68,
            b_sync: 0.0005,
            a_emb: 2.45e-6,
            b_emb: 0.001,
        }
    }

    fn grid() -> Vec<Config> {
        let mut out = Vec::new();
        for w in [1, 2, 4, 8] {
            for p in [1, 2, 4] {
                for lw in [1.0, 2.0, 4.0] {
                    for lp in [1.0, 4.0] {
                        out.push(Config {
                            workers: w,
                            ps: p,
                            worker_cores: lw,
                            ps_cores: lp,
                            batch: 256 * (1 + (w % 2)),
                            model_mb: 10.0,
                            bandwidth_mb_s: 1000.0,
                            emb_dim: 8 * (1 + p % 2),
                        });
                    }
                }
            }
        }
        out
    }

    #[test]
    fn throughput_is_w_m_over_t() {
        let c = grid()[5];
        let t = truth();
        let thr = t.throughput(&c);
        assert!((thr * t.iteration_time_s(&c) - f64::from(c.workers * c.batch)).abs() < 1e-9);
    }

    #[test]
    fn fit_parts_recovers_truth() {
        let t = truth();
        let obs: Vec<_> = grid().into_iter().map(|c| (c, t.part_times(&c))).collect();
        let f = ThroughputParams::fit_parts(&obs).unwrap();
        for (x, y) in f.slopes().iter().zip(t.slopes()) {
            assert!((x - y).abs() < 1e-6 * y, "{f:?}");
        }
        assert!((f.beta_sum() - t.beta_sum()).abs() < 1e-9);
    }

    #[test]
    fn fit_throughput_predicts_within_one_percent() {
        let t = truth();
        let obs: Vec<_> = grid().into_iter().map(|c| (c, t.throughput(&c))).collect();
        let f = ThroughputParams::fit_throughput(&obs).unwrap();
        let (a, p): (Vec<f64>, Vec<f64>) = obs.iter().map(|(c, y)| (*y, f.throughput(c))).unzip();
        assert!(crate::metrics::mape_pct(&a, &p) < 1.0);
        assert!((f.beta_sum() - t.beta_sum()).abs() < 1e-4);
    }

    #[test]
    fn invalid_config_is_an_error() {
        let mut c = grid()[0];
        c.ps = 0;
        assert!(ThroughputParams::fit_throughput(&[(c, 1.0)]).is_err());
    }

    #[test]
    fn serde_round_trip() {
        let s = serde_json::to_string(&truth()).unwrap();
        let back: ThroughputParams = serde_json::from_str(&s).unwrap();
        assert_eq!(back, truth());
    }
}
