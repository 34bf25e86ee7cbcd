//! Lawson–Hanson active-set non-negative least squares: `min ||A x - b||_2` s.t. `x >= 0`.
//!
//! Columns are scaled to unit norm before solving (and the solution unscaled), because the
//! throughput model's features differ by many orders of magnitude (`m / lambda` is ~100, the
//! sync feature ~1e-4); the non-negativity constraint is unchanged by a positive scale.
//! The unconstrained sub-problems use Householder QR, which is stable without forming `AᵀA`.

use crate::FitError;

/// Result of [`nnls`].
#[derive(Debug, Clone, PartialEq)]
pub struct Nnls {
    /// The non-negative solution, one entry per column of `A`.
    pub x: Vec<f64>,
    /// `||A x - b||_2` at the solution.
    pub residual_norm: f64,
    /// Outer iterations taken (columns moved into the passive set).
    pub iterations: usize,
}

/// Solves `min ||A x - b||` subject to `x >= 0`; `a` is row-major (`a[i]` is row `i`).
pub fn nnls(a: &[Vec<f64>], b: &[f64]) -> Result<Nnls, FitError> {
    let n = check_shape(a, b)?;
    let scale: Vec<f64> = (0..n)
        .map(|j| a.iter().map(|r| r[j] * r[j]).sum::<f64>().sqrt())
        .map(|s| if s > 0.0 { s } else { 1.0 })
        .collect();
    let scaled: Vec<Vec<f64>> = a
        .iter()
        .map(|r| r.iter().zip(&scale).map(|(v, s)| v / s).collect())
        .collect();
    let (mut x, iterations) = lawson_hanson(&scaled, b, n);
    for (xj, s) in x.iter_mut().zip(&scale) {
        *xj /= s;
    }
    let residual_norm = residual(a, b, &x).iter().map(|r| r * r).sum::<f64>().sqrt();
    Ok(Nnls {
        x,
        residual_norm,
        iterations,
    })
}

fn check_shape(a: &[Vec<f64>], b: &[f64]) -> Result<usize, FitError> {
    if a.is_empty() {
        return Err(FitError::Empty);
    }
    if a.len() != b.len() {
        return Err(FitError::Shape(format!(
            "{} rows but {} targets",
            a.len(),
            b.len()
        )));
    }
    let n = a[0].len();
    for (i, row) in a.iter().enumerate() {
        if row.len() != n {
            return Err(FitError::Shape(format!(
                "row {i} has {} columns, expected {n}",
                row.len()
            )));
        }
        if row
            .iter()
            .chain(std::iter::once(&b[i]))
            .any(|v| !v.is_finite())
        {
            return Err(FitError::Invalid {
                row: i,
                what: "non-finite value".into(),
            });
        }
    }
    Ok(n)
}

fn residual(a: &[Vec<f64>], b: &[f64], x: &[f64]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(r, bi)| bi - r.iter().zip(x).map(|(v, xj)| v * xj).sum::<f64>())
        .collect()
}

/// Gradient of `-½||Ax-b||²`: `Aᵀ(b - A x)`.
fn dual(a: &[Vec<f64>], b: &[f64], x: &[f64], n: usize) -> Vec<f64> {
    let r = residual(a, b, x);
    (0..n)
        .map(|j| a.iter().zip(&r).map(|(row, ri)| row[j] * ri).sum())
        .collect()
}

fn lawson_hanson(a: &[Vec<f64>], b: &[f64], n: usize) -> (Vec<f64>, usize) {
    let tol = 1e-10 * (1.0 + b.iter().map(|v| v.abs()).fold(0.0, f64::max));
    let mut x = vec![0.0; n];
    let mut passive = vec![false; n];
    let mut iterations = 0;
    while iterations < 3 * n + 3 {
        let w = dual(a, b, &x, n);
        let best = (0..n)
            .filter(|&j| !passive[j])
            .max_by(|&i, &j| w[i].total_cmp(&w[j]));
        let Some(t) = best.filter(|&t| w[t] > tol) else {
            break;
        };
        passive[t] = true;
        iterations += 1;
        // Inner loop: keep the unconstrained passive-set solution feasible.
        for _ in 0..=n {
            let s = solve_passive(a, b, &passive);
            if (0..n).filter(|&j| passive[j]).all(|j| s[j] > 0.0) {
                x = s;
                break;
            }
            let alpha = (0..n)
                .filter(|&j| passive[j] && s[j] <= 0.0)
                .map(|j| x[j] / (x[j] - s[j]))
                .fold(f64::INFINITY, f64::min);
            for j in 0..n {
                x[j] += alpha * (s[j] - x[j]);
                if passive[j] && x[j] <= 1e-15 {
                    passive[j] = false;
                    x[j] = 0.0;
                }
            }
        }
    }
    (x, iterations)
}

/// Unconstrained least squares on the passive columns (others fixed at 0), by Householder QR.
fn solve_passive(a: &[Vec<f64>], b: &[f64], passive: &[bool]) -> Vec<f64> {
    let cols: Vec<usize> = (0..passive.len()).filter(|&j| passive[j]).collect();
    let sub: Vec<Vec<f64>> = a
        .iter()
        .map(|r| cols.iter().map(|&j| r[j]).collect())
        .collect();
    let coef = lstsq(sub, b.to_vec());
    let mut out = vec![0.0; passive.len()];
    for (k, &j) in cols.iter().enumerate() {
        out[j] = coef[k];
    }
    out
}

/// Least squares `min ||M c - y||` by Householder QR; rank-deficient directions get 0.
// Column-oriented Householder updates index rows and columns together; iterators obscure it.
#[allow(clippy::needless_range_loop)]
pub(crate) fn lstsq(mut m: Vec<Vec<f64>>, mut y: Vec<f64>) -> Vec<f64> {
    let rows = m.len();
    let k = m.first().map_or(0, Vec::len);
    for col in 0..k.min(rows) {
        let norm = (col..rows)
            .map(|i| m[i][col] * m[i][col])
            .sum::<f64>()
            .sqrt();
        if norm == 0.0 {
            continue;
        }
        let alpha = if m[col][col] > 0.0 { -norm } else { norm };
        let mut v: Vec<f64> = (col..rows).map(|i| m[i][col]).collect();
        v[0] -= alpha;
        let vnorm2: f64 = v.iter().map(|t| t * t).sum();
        if vnorm2 == 0.0 {
            continue;
        }
        for c in col..k {
            let dot: f64 = (col..rows).map(|i| v[i - col] * m[i][c]).sum();
            let f = 2.0 * dot / vnorm2;
            for i in col..rows {
                m[i][c] -= f * v[i - col];
            }
        }
        let dot: f64 = (col..rows).map(|i| v[i - col] * y[i]).sum();
        let f = 2.0 * dot / vnorm2;
        for i in col..rows {
            y[i] -= f * v[i - col];
        }
    }
    let mut c = vec![0.0; k];
    let diag_max = (0..k.min(rows)).map(|i| m[i][i].abs()).fold(0.0, f64::max);
    for i in (0..k.min(rows)).rev() {
        if m[i][i].abs() <= 1e-12 * diag_max.max(1e-300) {
            continue; // dependent column: leave its coefficient at zero
        }
        let s: f64 = (i + 1..k).map(|j| m[i][j] * c[j]).sum();
        c[i] = (y[i] - s) / m[i][i];
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * (1.0 + b.abs())
    }

    #[test]
    fn recovers_exact_nonnegative_solution() {
        let a = vec![
            vec![1.0, 0.0, 2.0],
            vec![0.0, 1.0, 1.0],
            vec![1.0, 1.0, 0.0],
            vec![2.0, 1.0, 1.0],
        ];
        let truth = [0.5, 2.0, 1.5];
        let b: Vec<f64> = a
            .iter()
            .map(|r| r.iter().zip(&truth).map(|(v, t)| v * t).sum())
            .collect();
        let s = nnls(&a, &b).unwrap();
        for (x, t) in s.x.iter().zip(&truth) {
            assert!(close(*x, *t, 1e-9), "{:?}", s.x);
        }
        assert!(s.residual_norm < 1e-9);
    }

    #[test]
    fn constraint_becomes_active() {
        // Unconstrained LS wants x1 < 0; NNLS must clamp it and refit x0 alone.
        let a = vec![vec![1.0, 1.0], vec![1.0, 2.0], vec![1.0, 3.0]];
        let b = vec![3.0, 2.0, 1.0];
        let s = nnls(&a, &b).unwrap();
        assert_eq!(s.x[1], 0.0);
        assert!(close(s.x[0], 2.0, 1e-12), "{:?}", s.x);
    }

    #[test]
    fn all_negative_target_gives_zero() {
        let a = vec![vec![1.0, 2.0], vec![3.0, 1.0]];
        let s = nnls(&a, &[-1.0, -2.0]).unwrap();
        assert_eq!(s.x, vec![0.0, 0.0]);
    }

    #[test]
    fn duplicate_columns_do_not_break() {
        let a = vec![
            vec![1.0, 1.0, 1.0],
            vec![2.0, 1.0, 1.0],
            vec![3.0, 1.0, 1.0],
        ];
        let b = vec![3.0, 5.0, 7.0];
        let s = nnls(&a, &b).unwrap();
        assert!(
            close(s.x[0], 2.0, 1e-9) && close(s.x[1] + s.x[2], 1.0, 1e-9),
            "{:?}",
            s.x
        );
    }

    #[test]
    fn rejects_bad_shapes() {
        assert_eq!(nnls(&[], &[]), Err(FitError::Empty));
        assert!(matches!(
            nnls(&[vec![1.0], vec![1.0, 2.0]], &[1.0, 2.0]),
            Err(FitError::Shape(_))
        ));
        assert!(matches!(
            nnls(&[vec![f64::NAN]], &[1.0]),
            Err(FitError::Invalid { .. })
        ));
    }

    /// Brute force: the NNLS optimum is the best feasible unconstrained fit over all subsets.
    fn brute_force(a: &[Vec<f64>], b: &[f64]) -> f64 {
        let n = a[0].len();
        let mut best = b.iter().map(|v| v * v).sum::<f64>();
        for mask in 1u32..(1 << n) {
            let passive: Vec<bool> = (0..n).map(|j| mask & (1 << j) != 0).collect();
            let x = solve_passive(a, b, &passive);
            if x.iter().all(|&v| v >= -1e-12) {
                best = best.min(residual(a, b, &x).iter().map(|r| r * r).sum());
            }
        }
        best.sqrt()
    }

    #[test]
    fn random_problems_match_brute_force() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for case in 0..200 {
            let rows = rng.gen_range(2..9);
            let n = rng.gen_range(1..5);
            let a: Vec<Vec<f64>> = (0..rows)
                .map(|_| (0..n).map(|_| rng.gen_range(-2.0..2.0)).collect())
                .collect();
            let b: Vec<f64> = (0..rows).map(|_| rng.gen_range(-3.0..3.0)).collect();
            let s = nnls(&a, &b).unwrap();
            assert!(s.x.iter().all(|&v| v >= 0.0), "case {case}: {:?}", s.x);
            let bf = brute_force(&a, &b);
            assert!(
                s.residual_norm <= bf + 1e-7 * (1.0 + bf),
                "case {case}: {} vs {bf}",
                s.residual_norm
            );
        }
    }
}
