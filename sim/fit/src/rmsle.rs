//! Fitting non-negative coefficients of `y ≈ X θ` by minimising the squared log error.
//!
//! Objective: `L(θ) = mean_i (ln(x_i·θ) - ln y_i)²`, `θ >= 0`, `y_i > 0`. For large targets
//! (throughputs of hundreds of samples/s, iteration times in seconds) this equals the RMSLE of
//! the paper up to the `+1` inside the log; for a time model `T` and throughput `w m / T`, the
//! log errors of `T` and of throughput are identical, so fitting times fits throughput.
//!
//! Method (projected Gauss–Newton): linearise `ln(x·θ')` around the current prediction
//! `ŷ = x·θ`: `ln(x·θ') ≈ ln ŷ + (x·θ' - ŷ)/ŷ`. Minimising the linearised objective over
//! `θ' >= 0` is an NNLS problem with rows `x_i / ŷ_i` and targets `1 + ln(y_i / ŷ_i)`. Each step
//! is accepted only if it lowers `L` (otherwise it is halved towards the current point), so `L`
//! decreases monotonically. The start point is NNLS on relative errors (rows `x_i / y_i`,
//! target 1), which is already the first-order answer when the fit is good.

use crate::{nnls, FitError};

/// Mean squared log error of `X θ` against `y` (the objective minimised by [`fit_rmsle`]).
pub fn log_sq_error(x: &[Vec<f64>], y: &[f64], theta: &[f64]) -> f64 {
    let s: f64 = x
        .iter()
        .zip(y)
        .map(|(row, yi)| {
            let p = dot(row, theta).max(1e-300);
            (p.ln() - yi.ln()).powi(2)
        })
        .sum();
    s / y.len() as f64
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Fits `θ >= 0` minimising the mean squared log error of `X θ` against positive `y`.
pub fn fit_rmsle(x: &[Vec<f64>], y: &[f64]) -> Result<Vec<f64>, FitError> {
    if let Some(i) = y.iter().position(|v| !(v.is_finite() && *v > 0.0)) {
        return Err(FitError::Invalid {
            row: i,
            what: format!("target {} must be > 0", y[i]),
        });
    }
    let rel: Vec<Vec<f64>> = x
        .iter()
        .zip(y)
        .map(|(r, yi)| r.iter().map(|v| v / yi).collect())
        .collect();
    let mut theta = nnls(&rel, &vec![1.0; y.len()])?.x;
    let mut loss = log_sq_error(x, y, &theta);
    for _ in 0..100 {
        let pred: Vec<f64> = x
            .iter()
            .map(|r| dot(r, &theta).max(1e-12 * r.len() as f64))
            .collect();
        let rows: Vec<Vec<f64>> = x
            .iter()
            .zip(&pred)
            .map(|(r, p)| r.iter().map(|v| v / p).collect())
            .collect();
        let target: Vec<f64> = y
            .iter()
            .zip(&pred)
            .map(|(yi, p)| 1.0 + (yi / p).ln())
            .collect();
        let proposal = nnls(&rows, &target)?.x;
        let mut step = 1.0;
        let mut improved = false;
        while step > 1e-4 {
            let cand: Vec<f64> = theta
                .iter()
                .zip(&proposal)
                .map(|(t, p)| t + step * (p - t))
                .collect();
            let l = log_sq_error(x, y, &cand);
            if l < loss {
                let gain = loss - l;
                theta = cand;
                loss = l;
                improved = gain > 1e-14 * (1.0 + loss);
                break;
            }
            step *= 0.5;
        }
        if !improved {
            break;
        }
    }
    Ok(theta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_noise_free_model() {
        let x: Vec<Vec<f64>> = (1..20).map(|i| vec![i as f64, 1.0]).collect();
        let y: Vec<f64> = x.iter().map(|r| 3.0 * r[0] + 0.5).collect();
        let t = fit_rmsle(&x, &y).unwrap();
        assert!(
            (t[0] - 3.0).abs() < 1e-6 && (t[1] - 0.5).abs() < 1e-6,
            "{t:?}"
        );
    }

    #[test]
    fn beats_plain_nnls_on_log_error() {
        // Multiplicative noise on targets spanning three decades: the log fit must not be
        // worse in log error than ordinary least squares (which chases the large targets).
        let x: Vec<Vec<f64>> = (0..30).map(|i| vec![1.5f64.powi(i), 1.0]).collect();
        let noise = [1.1, 0.92, 1.05, 0.97, 1.08, 0.9];
        let y: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, r)| (2.0 * r[0] + 5.0) * noise[i % 6])
            .collect();
        let t = fit_rmsle(&x, &y).unwrap();
        let ls = nnls(&x, &y).unwrap().x;
        assert!(log_sq_error(&x, &y, &t) <= log_sq_error(&x, &y, &ls) + 1e-12);
        assert!((t[0] - 2.0).abs() < 0.2, "{t:?}");
    }

    #[test]
    fn rejects_non_positive_target() {
        assert!(matches!(
            fit_rmsle(&[vec![1.0]], &[0.0]),
            Err(FitError::Invalid { .. })
        ));
    }
}
