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
//!
//! Speed structure: `X` is copied once, column-major, and every Gauss–Newton step reuses one
//! NNLS [`Solver`] and a few scratch buffers (`ln y_i` is computed once); the arithmetic is
//! exactly that of the textbook loop kept in `crate::reference`, so results are bit-identical.

use crate::nnls::{check_shape, row_dots, Solver};
use crate::FitError;

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
    check_targets(y)?;
    let n = x.first().map_or(0, Vec::len);
    if x.is_empty() || x.len() != y.len() || x.iter().any(|r| r.len() != n) {
        return Err(shape_error(x, y));
    }
    let rows = x.len();
    let mut cols = vec![0.0; rows * n];
    for (i, row) in x.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            cols[j * rows + i] = v;
        }
    }
    fit_rmsle_cols(&cols, n, y)
}

/// The targets must be finite and positive (checked before anything else).
pub(crate) fn check_targets(y: &[f64]) -> Result<(), FitError> {
    match y.iter().position(|v| !(v.is_finite() && *v > 0.0)) {
        Some(i) => Err(FitError::Invalid {
            row: i,
            what: format!("target {} must be > 0", y[i]),
        }),
        None => Ok(()),
    }
}

/// The error of a fit whose `x` is empty, ragged or not as long as `y` (valid targets): the
/// error the NNLS calls of the textbook loop report. Its first call sees the rows `x_i / y_i`
/// of the shorter of `x` and `y` against as many ones as `y` has; if that passes (`x` longer
/// than `y`, its first `y.len()` rows regular and finite) its second call sees all of `x`.
fn shape_error(x: &[Vec<f64>], y: &[f64]) -> FitError {
    let rel: Vec<Vec<f64>> = x
        .iter()
        .zip(y)
        .map(|(row, yi)| row.iter().map(|v| v / yi).collect())
        .collect();
    check_shape(&rel, &vec![1.0; y.len()])
        .err()
        .unwrap_or_else(|| FitError::Shape(format!("{} rows but {} targets", x.len(), y.len())))
}

/// [`log_sq_error`] for column-major `x` with `ln y` precomputed; `pred` is scratch.
fn log_sq_error_cols(x: &[f64], ln_y: &[f64], theta: &[f64], pred: &mut [f64]) -> f64 {
    row_dots(x, theta, pred);
    let s: f64 = pred
        .iter()
        .zip(ln_y)
        .map(|(p, ly)| (p.max(1e-300).ln() - ly).powi(2))
        .sum();
    s / ln_y.len() as f64
}

/// [`fit_rmsle`] for a non-empty column-major `x` (`n` columns of `y.len()` rows) and
/// targets already accepted by [`check_targets`].
pub(crate) fn fit_rmsle_cols(x: &[f64], n: usize, y: &[f64]) -> Result<Vec<f64>, FitError> {
    let rows = y.len();
    let mut solver = Solver::new(rows, n);
    let invalid = |row| FitError::Invalid {
        row,
        what: "non-finite value".into(),
    };
    {
        let (a, b) = solver.problem_mut();
        for (dst, src) in a.chunks_exact_mut(rows).zip(x.chunks_exact(rows)) {
            for ((d, v), yi) in dst.iter_mut().zip(src).zip(y) {
                *d = v / yi;
            }
        }
        b.fill(1.0);
    }
    if let Some(row) = solver.first_non_finite_row() {
        return Err(invalid(row));
    }
    solver.solve();
    let mut theta = solver.x().to_vec();
    let ln_y: Vec<f64> = y.iter().map(|v| v.ln()).collect();
    let mut pred = vec![0.0; rows];
    let mut cand = vec![0.0; n];
    let floor = 1e-12 * n as f64;
    let mut loss = log_sq_error_cols(x, &ln_y, &theta, &mut pred);
    // `pred` holds X·theta at the top of each step: the loss of the first theta, then of
    // each accepted candidate, computed it.
    for _ in 0..100 {
        for p in &mut pred {
            *p = p.max(floor);
        }
        {
            let (a, b) = solver.problem_mut();
            for (dst, src) in a.chunks_exact_mut(rows).zip(x.chunks_exact(rows)) {
                for ((d, v), p) in dst.iter_mut().zip(src).zip(&pred) {
                    *d = v / p;
                }
            }
            for ((t, yi), p) in b.iter_mut().zip(y).zip(&pred) {
                *t = 1.0 + (yi / p).ln();
            }
        }
        if let Some(row) = solver.first_non_finite_row() {
            return Err(invalid(row));
        }
        solver.solve();
        let proposal = solver.x();
        let mut step = 1.0;
        let mut improved = false;
        while step > 1e-4 {
            for ((c, t), p) in cand.iter_mut().zip(&theta).zip(proposal) {
                *c = t + step * (p - t);
            }
            let l = log_sq_error_cols(x, &ln_y, &cand, &mut pred);
            if l < loss {
                let gain = loss - l;
                theta.copy_from_slice(&cand);
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
    use crate::nnls;

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
