//! The Optimus speed function for asynchronous PS training (Peng et al., EuroSys 2018):
//!
//! ```text
//! f(p, w) = w / (t0 + t1 * w / p + t2 * w + t3 * p)
//! ```
//! `f` is a speed (samples/s or steps/s, whatever unit the observations use). Linearisation:
//! `w / f = t0 + t1 w/p + t2 w + t3 p` is linear in `t >= 0`, so it is fitted by NNLS on rows
//! `[1, w/p, w, p]` with target `w / f` (ordinary NNLS, as Optimus does; no log weighting).

use serde::{Deserialize, Serialize};

use crate::{nnls, FitError};

/// One observation: `ps` PS, `workers` workers, measured `speed`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OptimusObs {
    pub ps: f64,
    pub workers: f64,
    pub speed: f64,
}

/// Fitted coefficients `t0..t3 >= 0`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct OptimusParams {
    pub t0: f64,
    pub t1: f64,
    pub t2: f64,
    pub t3: f64,
}

impl OptimusParams {
    fn row(p: f64, w: f64) -> Vec<f64> {
        vec![1.0, w / p, w, p]
    }

    /// Predicted speed for `p` PS and `w` workers; 0 when the denominator is not positive.
    pub fn predict(&self, p: f64, w: f64) -> f64 {
        let d = self.t0 + self.t1 * w / p + self.t2 * w + self.t3 * p;
        if d > 0.0 {
            w / d
        } else {
            0.0
        }
    }

    /// Fits by NNLS on the linearised form.
    pub fn fit(obs: &[OptimusObs]) -> Result<Self, FitError> {
        let mut a = Vec::with_capacity(obs.len());
        let mut b = Vec::with_capacity(obs.len());
        for (i, o) in obs.iter().enumerate() {
            if !(o.ps > 0.0 && o.workers > 0.0 && o.speed > 0.0 && o.speed.is_finite()) {
                return Err(FitError::Invalid {
                    row: i,
                    what: format!("{o:?}"),
                });
            }
            a.push(Self::row(o.ps, o.workers));
            b.push(o.workers / o.speed);
        }
        let t = nnls(&a, &b)?.x;
        Ok(OptimusParams {
            t0: t[0],
            t1: t[1],
            t2: t[2],
            t3: t[3],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_planted_coefficients() {
        let truth = OptimusParams {
            t0: 0.5,
            t1: 0.2,
            t2: 0.01,
            t3: 0.03,
        };
        let mut obs = Vec::new();
        for p in 1..5 {
            for w in 1..9 {
                let (p, w) = (f64::from(p), f64::from(w));
                obs.push(OptimusObs {
                    ps: p,
                    workers: w,
                    speed: truth.predict(p, w),
                });
            }
        }
        let f = OptimusParams::fit(&obs).unwrap();
        assert!(
            (f.t0 - 0.5).abs() < 1e-9 && (f.t1 - 0.2).abs() < 1e-9,
            "{f:?}"
        );
        assert!((f.predict(3.0, 5.0) - truth.predict(3.0, 5.0)).abs() < 1e-9);
    }

    #[test]
    fn speed_grows_then_saturates_in_workers() {
        let f = OptimusParams {
            t0: 1.0,
            t1: 0.5,
            t2: 0.1,
            t3: 0.0,
        };
        assert!(f.predict(2.0, 4.0) > f.predict(2.0, 1.0));
        assert!(f.predict(2.0, 64.0) < 1.0 / 0.1);
    }
}
