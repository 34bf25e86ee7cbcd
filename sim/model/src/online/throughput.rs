//! Kale's resource-throughput models (seed 003, Eq. 4-6): the hidden truth the world runs,
//! the offline profile a policy may see, and the NNLS fits policies use.
//!
//! * Truth, sync (Eq. 4): `f(w, p) = 1 / (t0 + t1/w + t2/p + t3 w/p + t4/(w p) + t5 p + t6 w)`
//!   with `p = ceil(w / wp_ratio)` (Kale keeps w/p constant while scaling).
//! * Truth, async (Eq. 6): `f(w) = w / (t0 + t1/w + t2 w)`.
//! * Fits: Eq. 5 `1/f = a0 + a1/w + a2/w^2 + a3 w` (sync) or Eq. 6 `w/f = a0 + a1/w + a2 w`
//!   (async), non-negative coefficients by `dlsim_fit::fit_rmsle` (NNLS steps, RMSLE
//!   objective). Ernest (`1/f = a0 + a1/w + a2 ln w + a3 w`) is fitted on the same points as
//!   the baseline of Kale's Fig. 7.

use crate::online::scenario::TrainMode;
use dlsim_engine::SimRng;
use rand_distr::{Distribution, Normal};
use serde::Serialize;

/// The hidden throughput function of the job (samples/s as a function of workers).
#[derive(Clone, Debug)]
pub struct Truth {
    pub mode: TrainMode,
    pub theta: Vec<f64>,
    pub wp_ratio: f64,
}

impl Truth {
    /// The scenario's thetas, each times a hidden lognormal factor from `rng` (`job-truth`).
    pub fn perturbed(
        mode: TrainMode,
        theta: &[f64],
        wp_ratio: f64,
        sigma: f64,
        rng: &mut SimRng,
    ) -> Self {
        let noise = Normal::new(0.0, sigma.max(0.0)).expect("valid sigma");
        let theta = theta
            .iter()
            .map(|t| t * (noise.sample(rng)).exp())
            .collect();
        Truth {
            mode,
            theta,
            wp_ratio,
        }
    }

    pub fn ps_for(&self, w: u32) -> u32 {
        ((f64::from(w) / self.wp_ratio).ceil() as u32).max(1)
    }

    /// Job throughput (samples/s) with `w` workers; 0 for no workers.
    pub fn throughput(&self, w: u32) -> f64 {
        if w == 0 {
            return 0.0;
        }
        let wf = f64::from(w);
        let t = &self.theta;
        match self.mode {
            TrainMode::Sync => {
                let p = f64::from(self.ps_for(w));
                let denom = t[0]
                    + t[1] / wf
                    + t[2] / p
                    + t[3] * wf / p
                    + t[4] / (wf * p)
                    + t[5] * p
                    + t[6] * wf;
                1.0 / denom
            }
            TrainMode::Async => wf / (t[0] + t[1] / wf + t[2] * wf),
        }
    }
}

/// One offline benchmark: `w` workers measured at `sps` samples/s.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ProfilePoint {
    pub workers: u32,
    pub sps: f64,
}

/// Offline profiling before deployment: each count in `workers` measured `repeats` times with
/// lognormal noise. Points come in repeat-major order (all counts of repeat 0 first).
pub fn profile(
    truth: &Truth,
    workers: &[u32],
    repeats: u32,
    sigma: f64,
    rng: &mut SimRng,
) -> Vec<ProfilePoint> {
    let noise = Normal::new(0.0, sigma.max(0.0)).expect("valid sigma");
    let mut out = Vec::new();
    for _ in 0..repeats {
        for &w in workers {
            out.push(ProfilePoint {
                workers: w,
                sps: truth.throughput(w) * noise.sample(rng).exp(),
            });
        }
    }
    out
}

/// Which functional form a fitted model uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FitForm {
    /// Kale Eq. 5 (sync, fixed w/p).
    KaleSync,
    /// Kale Eq. 6 (async).
    KaleAsync,
    /// Ernest (Venkataraman et al. 2016), the baseline of Kale's Fig. 7.
    Ernest,
}

impl FitForm {
    /// Kale's form for a training mode (Eq. 5 for sync, Eq. 6 for async).
    pub fn kale(mode: TrainMode) -> Self {
        match mode {
            TrainMode::Sync => FitForm::KaleSync,
            TrainMode::Async => FitForm::KaleAsync,
        }
    }
}

/// A throughput model fitted to profile points.
#[derive(Clone, Debug, Serialize)]
pub struct FittedModel {
    pub form: FitForm,
    pub coef: Vec<f64>,
}

impl FittedModel {
    fn features(form: FitForm, w: f64) -> Vec<f64> {
        match form {
            FitForm::KaleSync => vec![1.0, 1.0 / w, 1.0 / (w * w), w],
            FitForm::KaleAsync => vec![1.0, 1.0 / w, w],
            FitForm::Ernest => vec![1.0, 1.0 / w, w.ln(), w],
        }
    }

    /// The fitted target: time per sample (1/f), or per-worker time per sample (w/f) for Eq. 6.
    fn target(form: FitForm, w: f64, sps: f64) -> f64 {
        match form {
            FitForm::KaleAsync => w / sps,
            _ => 1.0 / sps,
        }
    }

    /// Fits `form` to `points` (non-negative coefficients, RMSLE objective).
    pub fn fit(form: FitForm, points: &[ProfilePoint]) -> Result<Self, dlsim_fit::FitError> {
        let x: Vec<Vec<f64>> = points
            .iter()
            .map(|p| Self::features(form, f64::from(p.workers)))
            .collect();
        let y: Vec<f64> = points
            .iter()
            .map(|p| Self::target(form, f64::from(p.workers), p.sps))
            .collect();
        let coef = dlsim_fit::fit_rmsle(&x, &y)?;
        Ok(FittedModel { form, coef })
    }

    /// Predicted samples/s with `w` workers.
    pub fn predict(&self, w: u32) -> f64 {
        if w == 0 {
            return 0.0;
        }
        let wf = f64::from(w);
        let t: f64 = Self::features(self.form, wf)
            .iter()
            .zip(&self.coef)
            .map(|(a, b)| a * b)
            .sum();
        if t <= 0.0 {
            return f64::INFINITY;
        }
        match self.form {
            FitForm::KaleAsync => wf / t,
            _ => 1.0 / t,
        }
    }

    /// Kale Eq. 7: the fewest workers in `1..=max` with `F(w) > load`; `max` if none is enough.
    pub fn min_workers_for(&self, load: f64, max: u32) -> u32 {
        (1..=max).find(|&w| self.predict(w) > load).unwrap_or(max)
    }
}

/// Held-out errors of a fit (Kale Fig. 7: MAE, RMSE, MAPE).
#[derive(Clone, Debug, Serialize)]
pub struct FitErrors {
    pub mae_sps: f64,
    pub rmse_sps: f64,
    pub mape_pct: f64,
}

/// Fits on the first half of the repeats and scores on the rest (or on the training points
/// when there is a single repeat).
pub fn fit_and_score(
    form: FitForm,
    points: &[ProfilePoint],
    repeats: u32,
) -> (FittedModel, FitErrors) {
    let per = points.len() / repeats.max(1) as usize;
    let cut = per * (repeats as usize).div_ceil(2);
    let (train, test) = if repeats > 1 {
        points.split_at(cut)
    } else {
        (points, points)
    };
    let model = FittedModel::fit(form, train).unwrap_or(FittedModel {
        form,
        coef: vec![1.0; FittedModel::features(form, 1.0).len()],
    });
    let actual: Vec<f64> = test.iter().map(|p| p.sps).collect();
    let pred: Vec<f64> = test.iter().map(|p| model.predict(p.workers)).collect();
    let errs = FitErrors {
        mae_sps: dlsim_fit::metrics::mae(&actual, &pred),
        rmse_sps: dlsim_fit::metrics::rmse(&actual, &pred),
        mape_pct: dlsim_fit::metrics::mape_pct(&actual, &pred),
    };
    (model, errs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsim_engine::RngStreams;

    fn truth() -> Truth {
        Truth {
            mode: TrainMode::Sync,
            theta: vec![1e-6, 6e-5, 1.5e-5, 5e-7, 5e-6, 1e-8, 2e-8],
            wp_ratio: 1.0,
        }
    }

    #[test]
    fn sync_truth_grows_with_diminishing_returns() {
        let t = truth();
        let f1 = t.throughput(1);
        let f16 = t.throughput(16);
        let f32 = t.throughput(32);
        assert!(f1 > 10_000.0 && f1 < 15_000.0, "{f1}");
        assert!(f16 > f1 && f32 > f16);
        assert!(f32 / 32.0 < f16 / 16.0, "per-worker rate falls with w");
    }

    #[test]
    fn eq5_fit_recovers_noiseless_truth_within_a_few_percent() {
        let t = truth();
        let mut rng = RngStreams::new(1).stream("profile");
        let pts = profile(&t, &[1, 2, 4, 6, 8, 12, 16, 24, 32], 2, 0.0, &mut rng);
        let (m, e) = fit_and_score(FitForm::KaleSync, &pts, 2);
        assert!(e.mape_pct < 3.0, "{e:?}");
        let need = m.min_workers_for(150_000.0, 32);
        assert!(t.throughput(need) > 150_000.0 * 0.97 && need <= 32);
        assert!(m.predict(need - 1) <= 150_000.0);
    }
}
