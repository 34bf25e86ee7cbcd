//! Test-only oracle: verbatim copies of the textbook (allocation-heavy) implementations of
//! [`crate::nnls`], [`crate::fit_rmsle`], [`crate::log_sq_error`] and
//! [`crate::ThroughputParams::fit_throughput`] as they were before the buffer-reusing
//! rewrite. The `tests` below run both on many randomized problems and require every output
//! to be bit-identical (`f64::to_bits`), and every error to be equal.

use crate::{Config, FitError, ThroughputParams};

pub mod nnls {
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
    pub fn lstsq(mut m: Vec<Vec<f64>>, mut y: Vec<f64>) -> Vec<f64> {
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
}

pub mod rmsle {
    use super::nnls::nnls;
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
}

/// [`ThroughputParams::fit_throughput`] as it was (rows as `Vec<Vec<f64>>`, reference RMSLE).
pub fn fit_throughput(obs: &[(Config, f64)]) -> Result<ThroughputParams, FitError> {
    if obs.is_empty() {
        return Err(FitError::Empty);
    }
    let mut x = Vec::with_capacity(obs.len());
    let mut y = Vec::with_capacity(obs.len());
    for (i, (c, thr)) in obs.iter().enumerate() {
        c.validate(i)?;
        if !(thr.is_finite() && *thr > 0.0) {
            return Err(FitError::Invalid {
                row: i,
                what: format!("throughput {thr}"),
            });
        }
        let f = c.features();
        x.push(vec![f[0], f[1], f[2], f[3], 1.0]);
        y.push(f64::from(c.workers) * f64::from(c.batch) / thr);
    }
    let t = rmsle::fit_rmsle(&x, &y)?;
    let b = t[4] / 4.0;
    Ok(ThroughputParams {
        a_grad: t[0],
        b_grad: b,
        a_upd: t[1],
        b_upd: b,
        a_sync: t[2],
        b_sync: b,
        a_emb: t[3],
        b_emb: b,
    })
}

mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    fn assert_nnls_same(
        fast: &Result<crate::Nnls, FitError>,
        slow: &Result<nnls::Nnls, FitError>,
        case: &str,
    ) {
        match (fast, slow) {
            (Ok(f), Ok(s)) => {
                assert_eq!(bits(&f.x), bits(&s.x), "{case}: x {:?} vs {:?}", f.x, s.x);
                assert_eq!(
                    f.residual_norm.to_bits(),
                    s.residual_norm.to_bits(),
                    "{case}: residual {} vs {}",
                    f.residual_norm,
                    s.residual_norm
                );
                assert_eq!(f.iterations, s.iterations, "{case}: iterations");
            }
            (Err(f), Err(s)) => assert_eq!(f, s, "{case}: errors"),
            _ => panic!("{case}: fast {fast:?} vs reference {slow:?}"),
        }
    }

    fn assert_vec_same(
        fast: &Result<Vec<f64>, FitError>,
        slow: &Result<Vec<f64>, FitError>,
        case: &str,
    ) {
        match (fast, slow) {
            (Ok(f), Ok(s)) => assert_eq!(bits(f), bits(s), "{case}: {f:?} vs {s:?}"),
            (Err(f), Err(s)) => assert_eq!(f, s, "{case}: errors"),
            _ => panic!("{case}: fast {fast:?} vs reference {slow:?}"),
        }
    }

    /// A value of `10^u`, `u` uniform in `lo..hi` (targets and features spanning decades).
    fn decades(rng: &mut ChaCha8Rng, lo: f64, hi: f64) -> f64 {
        10f64.powf(rng.gen_range(lo..hi))
    }

    /// Random design matrix with the awkward cases mixed in: columns spanning decades,
    /// all-zero, duplicated, scaled or negated copies (rank-deficient), intercepts, small
    /// integers (exact ties), sparse columns; some rows duplicated.
    fn matrix(rng: &mut ChaCha8Rng, rows: usize, n: usize, positive: bool) -> Vec<Vec<f64>> {
        let mut cols: Vec<Vec<f64>> = Vec::with_capacity(n);
        for j in 0..n {
            let kind = rng.gen_range(0..11);
            let col: Vec<f64> = match kind {
                0 if !positive => (0..rows).map(|_| rng.gen_range(-2.0..2.0)).collect(),
                1 | 0 => {
                    let s = decades(rng, -6.0, 6.0);
                    (0..rows).map(|_| s * rng.gen_range(0.0..1.0)).collect()
                }
                2 => vec![0.0; rows],
                3 if j > 0 => {
                    let src = rng.gen_range(0..j);
                    let f =
                        [1.0, 2.5, 1e-3, if positive { 7.0 } else { -1.0 }][rng.gen_range(0..4)];
                    cols[src].iter().map(|v| v * f).collect()
                }
                10 if j > 0 => {
                    // Nearly collinear with an earlier column: straddles the QR's 1e-12
                    // rank threshold.
                    let src = rng.gen_range(0..j);
                    let eps = decades(rng, -16.0, -8.0);
                    cols[src]
                        .iter()
                        .map(|v| v * (1.0 + eps * rng.gen_range(0.0..1.0)))
                        .collect()
                }
                3 | 4 | 10 => vec![1.0; rows],
                5 => (0..rows).map(|_| f64::from(rng.gen_range(0..4))).collect(),
                6 => (0..rows).map(|_| decades(rng, -4.0, 4.0)).collect(),
                7 => (0..rows)
                    .map(|_| {
                        if rng.gen_bool(0.2) {
                            rng.gen_range(0.0..3.0)
                        } else {
                            0.0
                        }
                    })
                    .collect(),
                _ => {
                    // Throughput-like feature: ratios of small integers.
                    (0..rows)
                        .map(|_| f64::from(rng.gen_range(1..65)) / f64::from(rng.gen_range(1..17)))
                        .collect()
                }
            };
            cols.push(col);
        }
        let mut a: Vec<Vec<f64>> = (0..rows)
            .map(|i| cols.iter().map(|c| c[i]).collect())
            .collect();
        if rows > 1 && rng.gen_bool(0.3) {
            for _ in 0..rng.gen_range(1..=rows / 2 + 1) {
                let (src, dst) = (rng.gen_range(0..rows), rng.gen_range(0..rows));
                a[dst] = a[src].clone();
            }
        }
        a
    }

    /// Strongly correlated columns (two latent factors plus small noise): the unconstrained
    /// passive-set solutions often go negative, exercising the inner (step-back) loop.
    fn correlated(rng: &mut ChaCha8Rng, rows: usize, n: usize, positive: bool) -> Vec<Vec<f64>> {
        let lo = if positive { 0.0 } else { -1.0 };
        let f: Vec<[f64; 2]> = (0..rows)
            .map(|_| [rng.gen_range(lo..1.0), rng.gen_range(lo..1.0)])
            .collect();
        let coef: Vec<[f64; 3]> = (0..n)
            .map(|_| {
                [
                    rng.gen_range(lo..1.0),
                    rng.gen_range(lo..1.0),
                    decades(rng, -6.0, -1.0),
                ]
            })
            .collect();
        f.iter()
            .map(|fi| {
                coef.iter()
                    .map(|c| fi[0] * c[0] + fi[1] * c[1] + c[2] * rng.gen_range(0.0..1.0))
                    .collect()
            })
            .collect()
    }

    fn matvec(a: &[Vec<f64>], t: &[f64]) -> Vec<f64> {
        a.iter()
            .map(|r| r.iter().zip(t).map(|(v, x)| v * x).sum())
            .collect()
    }

    fn truth(rng: &mut ChaCha8Rng, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| {
                if rng.gen_bool(0.25) {
                    0.0
                } else {
                    decades(rng, -5.0, 2.0)
                }
            })
            .collect()
    }

    fn rows_for(rng: &mut ChaCha8Rng, case: usize) -> usize {
        match case % 4 {
            0 => rng.gen_range(1..12),
            1 => rng.gen_range(5..70),
            2 => rng.gen_range(5..301),
            _ => rng.gen_range(60..270),
        }
    }

    #[test]
    fn nnls_is_bit_identical_to_reference() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0001);
        for case in 0..2500 {
            let rows = rows_for(&mut rng, case);
            let (n, a) = if rng.gen_bool(0.4) {
                // Up to 16 correlated columns: several blocking steps per inner loop.
                let n = rng.gen_range(2..17);
                (n, correlated(&mut rng, rows, n, false))
            } else {
                let n = rng.gen_range(0..10);
                (n, matrix(&mut rng, rows, n, false))
            };
            let b: Vec<f64> = match rng.gen_range(0..6) {
                0 => (0..rows).map(|_| rng.gen_range(-3.0..3.0)).collect(),
                1 => (0..rows).map(|_| -rng.gen_range(0.0..3.0)).collect(),
                2 => vec![if rng.gen_bool(0.5) { 0.0 } else { -0.0 }; rows],
                3 => matvec(&a, &truth(&mut rng, n)),
                _ => {
                    let sigma = [0.0, 0.03, 0.3, 1.5][rng.gen_range(0..4)];
                    matvec(&a, &truth(&mut rng, n))
                        .into_iter()
                        .map(|v| {
                            v * (sigma * rng.gen_range(-1.0..1.0f64)).exp()
                                + 1e-9 * rng.gen_range(-1.0..1.0)
                        })
                        .collect()
                }
            };
            let tag = format!("case {case} ({rows}x{n})");
            assert_nnls_same(&crate::nnls(&a, &b), &nnls::nnls(&a, &b), &tag);
        }
    }

    #[test]
    fn lstsq_is_bit_identical_to_reference() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0002);
        for case in 0..1500 {
            let rows = rows_for(&mut rng, case);
            let k = rng.gen_range(0..8);
            let m = matrix(&mut rng, rows, k, false);
            let y: Vec<f64> = (0..rows).map(|_| rng.gen_range(-3.0..3.0)).collect();
            let fast = crate::nnls::lstsq(m.clone(), y.clone());
            let slow = nnls::lstsq(m, y);
            assert_eq!(
                bits(&fast),
                bits(&slow),
                "case {case}: {fast:?} vs {slow:?}"
            );
        }
    }

    #[test]
    fn nnls_errors_match_reference() {
        let good = vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 7.0]];
        let b = vec![1.0, 2.0, 3.0];
        let mut cases: Vec<(Vec<Vec<f64>>, Vec<f64>)> = vec![
            (vec![], vec![]),
            (vec![], vec![1.0]),
            (good.clone(), vec![1.0]),
            (good.clone(), vec![1.0, 2.0, 3.0, 4.0]),
            (vec![vec![1.0], vec![1.0, 2.0]], vec![1.0, 2.0]),
            (vec![vec![1.0, 2.0], vec![1.0]], vec![1.0, 2.0]),
            (vec![vec![], vec![]], vec![1.0, -2.0]),
        ];
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for i in 0..3 {
                for j in 0..3 {
                    let (mut a, mut bb) = (good.clone(), b.clone());
                    if j < 2 {
                        a[i][j] = bad;
                    } else {
                        bb[i] = bad;
                    }
                    cases.push((a, bb));
                }
            }
            // A non-finite value before a ragged row, and after it.
            cases.push((vec![vec![bad, 1.0], vec![1.0]], vec![1.0, 1.0]));
            cases.push((vec![vec![1.0, 1.0], vec![bad]], vec![1.0, 1.0]));
        }
        for (k, (a, b)) in cases.iter().enumerate() {
            assert_nnls_same(
                &crate::nnls(a, b),
                &nnls::nnls(a, b),
                &format!("error case {k}"),
            );
        }
    }

    #[test]
    fn fit_rmsle_is_bit_identical_to_reference() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0003);
        for case in 0..1200 {
            let rows = rows_for(&mut rng, case);
            let n = rng.gen_range(1..7);
            let positive = rng.gen_bool(0.85);
            let x = if rng.gen_bool(0.3) {
                correlated(&mut rng, rows, n, positive)
            } else {
                matrix(&mut rng, rows, n, positive)
            };
            let y: Vec<f64> = match rng.gen_range(0..4) {
                0 => (0..rows).map(|_| decades(&mut rng, -3.0, 3.0)).collect(),
                _ => {
                    let sigma = [0.0, 0.03, 0.3, 1.0][rng.gen_range(0..4)];
                    matvec(&x, &truth(&mut rng, n))
                        .into_iter()
                        .map(|v| {
                            let v = if v > 0.0 {
                                v
                            } else {
                                decades(&mut rng, -3.0, 0.0)
                            };
                            v * (sigma * rng.gen_range(-1.0..1.0f64)).exp()
                        })
                        .collect()
                }
            };
            let tag = format!("case {case} ({rows}x{n})");
            assert_vec_same(&crate::fit_rmsle(&x, &y), &rmsle::fit_rmsle(&x, &y), &tag);
            let theta = truth(&mut rng, n);
            assert_eq!(
                crate::log_sq_error(&x, &y, &theta).to_bits(),
                rmsle::log_sq_error(&x, &y, &theta).to_bits(),
                "{tag}: log_sq_error"
            );
        }
    }

    #[test]
    fn fit_rmsle_errors_match_reference() {
        let x = vec![
            vec![1.0, 2.0],
            vec![3.0, 1.0],
            vec![5.0, 7.0],
            vec![2.0, 2.0],
        ];
        let y = vec![3.0, 4.0, 12.0, 4.5];
        let mut cases: Vec<(Vec<Vec<f64>>, Vec<f64>)> = vec![
            (vec![], vec![]),
            (vec![], vec![1.0]),
            (x.clone(), vec![]),
            (x.clone(), vec![3.0]),
            (x.clone(), vec![3.0, 4.0]),
            (x.clone(), vec![3.0, 4.0, 12.0, 4.5, 1.0]),
            (x[..1].to_vec(), y.clone()),
            (vec![vec![1.0], vec![1.0, 2.0]], vec![1.0, 2.0]),
            (vec![vec![1.0, 2.0], vec![1.0]], vec![1.0, 2.0]),
            (vec![vec![1.0, 2.0], vec![1.0]], vec![1.0, 2.0, 3.0]),
            (vec![vec![1.0, 2.0], vec![1.0]], vec![1.0]),
            (vec![vec![], vec![]], vec![1.0, 2.0]),
            (vec![vec![]], vec![1.0]),
            (vec![vec![0.0, 0.0]; 3], vec![1.0, 2.0, 3.0]),
            (vec![vec![-1.0, -2.0]; 3], vec![1.0, 2.0, 3.0]),
            (
                vec![vec![1e300, 1.0], vec![1.0, 1e300]],
                vec![1e-300, 1e-300],
            ),
            (
                vec![vec![1e-300, 1e-300], vec![1e-300, 0.0]],
                vec![1e300, 1e300],
            ),
        ];
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for i in 0..4 {
                let mut yy = y.clone();
                yy[i] = bad;
                cases.push((x.clone(), yy));
                let mut xx = x.clone();
                xx[i][i % 2] = if bad == 0.0 || bad == -1.0 {
                    f64::MAX
                } else {
                    bad
                };
                cases.push((xx.clone(), y.clone()));
                cases.push((xx.clone(), y[..3].to_vec()));
                cases.push((xx[..3].to_vec(), y.clone()));
            }
        }
        for (k, (x, y)) in cases.iter().enumerate() {
            let tag = format!("error case {k}");
            assert_vec_same(&crate::fit_rmsle(x, y), &rmsle::fit_rmsle(x, y), &tag);
            if let Some(theta) = x.iter().map(Vec::len).max().map(|n| vec![0.5; n]) {
                assert_eq!(
                    crate::log_sq_error(x, y, &theta).to_bits(),
                    rmsle::log_sq_error(x, y, &theta).to_bits(),
                    "{tag}: log_sq_error"
                );
            }
        }
    }

    fn config(rng: &mut ChaCha8Rng) -> Config {
        Config {
            workers: rng.gen_range(1..65),
            ps: rng.gen_range(1..17),
            worker_cores: [0.5, 1.0, 2.0, 4.0, 8.0, rng.gen_range(0.1..16.0)][rng.gen_range(0..6)],
            ps_cores: [1.0, 2.0, 8.0, rng.gen_range(0.1..16.0)][rng.gen_range(0..4)],
            batch: [64, 256, 512, 1024][rng.gen_range(0..4)],
            model_mb: [0.0, 10.0, 40.0, rng.gen_range(0.0..2000.0)][rng.gen_range(0..4)],
            bandwidth_mb_s: [100.0, 1000.0, rng.gen_range(10.0..10_000.0)][rng.gen_range(0..3)],
            emb_dim: [0, 8, 16, 64][rng.gen_range(0..4)],
        }
    }

    fn assert_params_same(
        fast: &Result<ThroughputParams, FitError>,
        slow: &Result<ThroughputParams, FitError>,
        case: &str,
    ) {
        let arr = |p: &ThroughputParams| {
            bits(&[
                p.a_grad, p.b_grad, p.a_upd, p.b_upd, p.a_sync, p.b_sync, p.a_emb, p.b_emb,
            ])
        };
        match (fast, slow) {
            (Ok(f), Ok(s)) => assert_eq!(arr(f), arr(s), "{case}: {f:?} vs {s:?}"),
            (Err(f), Err(s)) => assert_eq!(f, s, "{case}: errors"),
            _ => panic!("{case}: fast {fast:?} vs reference {slow:?}"),
        }
    }

    #[test]
    fn fit_throughput_is_bit_identical_to_reference() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0004);
        for case in 0..400 {
            let rows = rows_for(&mut rng, case);
            let t = ThroughputParams {
                a_grad: decades(&mut rng, -5.0, -2.0),
                b_grad: decades(&mut rng, -4.0, -1.0),
                a_upd: decades(&mut rng, -4.0, 0.0),
                b_upd: decades(&mut rng, -4.0, -1.0),
                a_sync: if rng.gen_bool(0.2) {
                    0.0
                } else {
                    decades(&mut rng, -2.0, 0.0)
                },
                b_sync: decades(&mut rng, -4.0, -1.0),
                a_emb: decades(&mut rng, -7.0, -4.0),
                b_emb: decades(&mut rng, -4.0, -1.0),
            };
            let sigma = [0.0, 0.03, 0.3][rng.gen_range(0..3)];
            // Few distinct configurations, as a job revisits its sizes: duplicate rows.
            let pool: Vec<Config> = (0..rng.gen_range(1..12))
                .map(|_| config(&mut rng))
                .collect();
            let mut obs: Vec<(Config, f64)> = (0..rows)
                .map(|_| {
                    let c = pool[rng.gen_range(0..pool.len())];
                    (
                        c,
                        t.throughput(&c) * (sigma * rng.gen_range(-1.0..1.0f64)).exp(),
                    )
                })
                .collect();
            match case % 50 {
                7 => obs[rows / 2].0.ps = 0,
                8 => obs[rows - 1].1 = 0.0,
                9 => obs[0].1 = f64::NAN,
                10 => obs[rows / 3].0.bandwidth_mb_s = -1.0,
                11 => obs.clear(),
                _ => {}
            }
            let tag = format!("case {case} ({rows} rows)");
            assert_params_same(
                &ThroughputParams::fit_throughput(&obs),
                &fit_throughput(&obs),
                &tag,
            );
        }
    }
}
