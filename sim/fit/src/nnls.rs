//! Lawson–Hanson active-set non-negative least squares: `min ||A x - b||_2` s.t. `x >= 0`.
//!
//! Columns are scaled to unit norm before solving (and the solution unscaled), because the
//! throughput model's features differ by many orders of magnitude (`m / lambda` is ~100, the
//! sync feature ~1e-4); the non-negativity constraint is unchanged by a positive scale.
//! The unconstrained sub-problems use Householder QR, which is stable without forming `AᵀA`.
//!
//! Speed structure (the callers fit thousands of small problems): the matrix is stored
//! column-major in one buffer that the solver ([`Solver`]) reuses for every sub-problem, so
//! an iteration allocates nothing; and the left-to-right sums that dominate the cost (column
//! norms, Householder dot products, the dual `Aᵀr`) are computed several columns at a time
//! in one pass, so their independent dependency chains overlap. Every sum still adds the
//! same terms in the same order as the textbook loop (no reassociation, no fused
//! multiply-add), so results are bit-identical to it; `crate::reference` keeps that
//! textbook version and its tests check the equality on randomized problems.

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
    let rows = a.len();
    let mut solver = Solver::new(rows, n);
    {
        let (m, rhs) = solver.problem_mut();
        for (i, row) in a.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                m[j * rows + i] = v;
            }
        }
        rhs.copy_from_slice(b);
    }
    let iterations = solver.solve();
    let x = solver.x().to_vec();
    let residual_norm = a
        .iter()
        .zip(b)
        .map(|(r, bi)| {
            let ri = bi - r.iter().zip(&x).map(|(v, xj)| v * xj).sum::<f64>();
            ri * ri
        })
        .sum::<f64>()
        .sqrt();
    Ok(Nnls {
        x,
        residual_norm,
        iterations,
    })
}

pub(crate) fn check_shape(a: &[Vec<f64>], b: &[f64]) -> Result<usize, FitError> {
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

/// The value `Iterator::sum` starts its left-to-right fold from (`-0.0` in current Rust,
/// `0.0` in older releases); every hand-written sum here starts from it so that its bits
/// match `.sum::<f64>()`, including the sign of an all-zero sum.
#[inline(always)]
fn sum_start() -> f64 {
    std::iter::empty::<f64>().sum()
}

/// `out_i = Σ_j x_ij θ_j` for column-major `x` (`out.len()` rows), each row summed left to
/// right over `j` from [`sum_start`] (bit-identical to `.sum()` of the row's products).
pub(crate) fn row_dots(x: &[f64], theta: &[f64], out: &mut [f64]) {
    out.fill(sum_start());
    if out.is_empty() {
        return;
    }
    for (col, &t) in x.chunks_exact(out.len()).zip(theta) {
        for (o, v) in out.iter_mut().zip(col) {
            *o += v * t;
        }
    }
}

/// `out[c] = Σ_i term(u[i], col(c)[i])` for `c < K`, each summed left to right from
/// [`sum_start`] (exactly `.map(..).sum()`), in one pass so that the `K` chains overlap.
#[inline(always)]
fn fold_cols<'a, const K: usize>(
    u: &[f64],
    len: usize,
    col: impl Fn(usize) -> &'a [f64],
    term: impl Fn(f64, f64) -> f64,
    out: &mut [f64],
) {
    let u = &u[..len];
    let cols: [&[f64]; K] = std::array::from_fn(|c| &col(c)[..len]);
    let mut acc = [sum_start(); K];
    for (i, &ui) in u.iter().enumerate() {
        for c in 0..K {
            acc[c] += term(ui, cols[c][i]);
        }
    }
    out[..K].copy_from_slice(&acc);
}

/// [`fold_cols`] for any number of columns, up to eight chains per pass.
#[inline(always)]
fn fold_many<'a>(
    count: usize,
    u: &[f64],
    len: usize,
    col: impl Fn(usize) -> &'a [f64],
    term: impl Fn(f64, f64) -> f64 + Copy,
    out: &mut [f64],
) {
    let mut done = 0;
    while count - done >= 8 {
        fold_cols::<8>(u, len, |c| col(done + c), term, &mut out[done..]);
        done += 8;
    }
    let rest = &mut out[done..];
    let col = |c| col(done + c);
    match count - done {
        0 => {}
        1 => fold_cols::<1>(u, len, col, term, rest),
        2 => fold_cols::<2>(u, len, col, term, rest),
        3 => fold_cols::<3>(u, len, col, term, rest),
        4 => fold_cols::<4>(u, len, col, term, rest),
        5 => fold_cols::<5>(u, len, col, term, rest),
        6 => fold_cols::<6>(u, len, col, term, rest),
        _ => fold_cols::<7>(u, len, col, term, rest),
    }
}

/// A reusable Lawson–Hanson solver for `rows x n` problems: fill [`Solver::problem_mut`],
/// call [`Solver::solve`], read [`Solver::x`]; repeat with new values without allocating.
pub(crate) struct Solver {
    rows: usize,
    n: usize,
    /// `A`, column-major (`a[j * rows + i]`); scaled in place by [`Solver::solve`].
    a: Vec<f64>,
    b: Vec<f64>,
    scale: Vec<f64>,
    x: Vec<f64>,
    s: Vec<f64>,
    w: Vec<f64>,
    r: Vec<f64>,
    passive: Vec<bool>,
    /// Column indices (passive columns for the QR, free columns for the dual).
    idx: Vec<usize>,
    /// Passive columns then `b`, column-major: the augmented matrix the QR works on.
    qr: Vec<f64>,
    v: Vec<f64>,
    dots: Vec<f64>,
    coef: Vec<f64>,
}

impl Solver {
    pub(crate) fn new(rows: usize, n: usize) -> Self {
        Solver {
            rows,
            n,
            a: vec![0.0; rows * n],
            b: vec![0.0; rows],
            scale: vec![0.0; n],
            x: vec![0.0; n],
            s: vec![0.0; n],
            w: vec![0.0; n],
            r: vec![0.0; rows],
            passive: vec![false; n],
            idx: Vec::with_capacity(n),
            qr: vec![0.0; rows * (n + 1)],
            v: vec![0.0; rows],
            dots: vec![0.0; n + 2],
            coef: vec![0.0; n],
        }
    }

    /// The matrix (column-major, `rows * n`) and right-hand side of the next solve.
    pub(crate) fn problem_mut(&mut self) -> (&mut [f64], &mut [f64]) {
        (&mut self.a, &mut self.b)
    }

    /// The first row holding a non-finite value of `A` or `b` (the check of [`nnls`]).
    pub(crate) fn first_non_finite_row(&self) -> Option<usize> {
        // Branch-free scan first (vectorises); locate the row only when something is off.
        let finite = |s: &[f64]| s.iter().fold(true, |ok, v| ok & v.is_finite());
        if finite(&self.a) && finite(&self.b) {
            return None;
        }
        (0..self.rows).find(|&i| {
            !self.b[i].is_finite() || (0..self.n).any(|j| !self.a[j * self.rows + i].is_finite())
        })
    }

    /// The solution of the last [`Solver::solve`].
    pub(crate) fn x(&self) -> &[f64] {
        &self.x
    }

    /// Solves the current problem (values must be finite); returns the outer iterations.
    /// Scales the columns of `A` in place, so refill it before the next solve.
    pub(crate) fn solve(&mut self) -> usize {
        let (rows, n) = (self.rows, self.n);
        let a = &mut self.a;
        // (`b` only supplies the length here: a column's norm uses the column alone.)
        fold_many(
            n,
            &self.b,
            rows,
            |c| &a[c * rows..],
            |_, v| v * v,
            &mut self.scale,
        );
        for s in &mut self.scale {
            let norm = s.sqrt();
            *s = if norm > 0.0 { norm } else { 1.0 };
        }
        for (col, s) in a.chunks_exact_mut(rows).zip(&self.scale) {
            for v in col {
                *v /= s;
            }
        }
        let iterations = self.lawson_hanson();
        for (xj, s) in self.x.iter_mut().zip(&self.scale) {
            *xj /= s;
        }
        iterations
    }

    fn lawson_hanson(&mut self) -> usize {
        let n = self.n;
        let tol = 1e-10 * (1.0 + self.b.iter().map(|v| v.abs()).fold(0.0, f64::max));
        self.x.fill(0.0);
        self.passive.fill(false);
        let mut iterations = 0;
        while iterations < 3 * n + 3 {
            self.dual();
            let (w, passive) = (&self.w, &self.passive);
            let best = (0..n)
                .filter(|&j| !passive[j])
                .max_by(|&i, &j| w[i].total_cmp(&w[j]));
            let Some(t) = best.filter(|&t| w[t] > tol) else {
                break;
            };
            self.passive[t] = true;
            iterations += 1;
            // Inner loop: keep the unconstrained passive-set solution feasible.
            for _ in 0..=n {
                self.solve_passive();
                let (x, s, passive) = (&mut self.x, &self.s, &mut self.passive);
                if (0..n).filter(|&j| passive[j]).all(|j| s[j] > 0.0) {
                    x.copy_from_slice(s);
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
        iterations
    }

    /// Gradient of `-½||Ax-b||²`, `w = Aᵀ(b - A x)`, for the columns not in the passive set
    /// (the only entries read).
    fn dual(&mut self) {
        let rows = self.rows;
        // r_i = b_i - Σ_j a_ij x_j, the row sums formed column by column (same order).
        row_dots(&self.a, &self.x, &mut self.r);
        for (ri, bi) in self.r.iter_mut().zip(&self.b) {
            *ri = bi - *ri;
        }
        self.idx.clear();
        self.idx.extend((0..self.n).filter(|&j| !self.passive[j]));
        let (a, idx, r) = (&self.a, &self.idx, &self.r);
        fold_many(
            idx.len(),
            r,
            rows,
            |c| &a[idx[c] * rows..],
            |ri, v| v * ri,
            &mut self.dots,
        );
        for (c, &j) in idx.iter().enumerate() {
            self.w[j] = self.dots[c];
        }
    }

    /// Unconstrained least squares on the passive columns (others fixed at 0), into `s`.
    fn solve_passive(&mut self) {
        let rows = self.rows;
        self.idx.clear();
        self.idx.extend((0..self.n).filter(|&j| self.passive[j]));
        let k = self.idx.len();
        for (dst, &j) in self.qr.chunks_exact_mut(rows).zip(&self.idx) {
            dst.copy_from_slice(&self.a[j * rows..(j + 1) * rows]);
        }
        self.qr[k * rows..(k + 1) * rows].copy_from_slice(&self.b);
        householder(
            &mut self.qr[..(k + 1) * rows],
            rows,
            k,
            &mut self.v,
            &mut self.dots,
            &mut self.coef[..k],
        );
        self.s.fill(0.0);
        for (&j, &c) in self.idx.iter().zip(&self.coef) {
            self.s[j] = c;
        }
    }
}

/// Least squares `min ||M c - y||` by Householder QR; rank-deficient directions get 0.
/// `qr` holds `M`'s `k` columns then `y`, column-major with `rows` rows, and is overwritten.
/// Scratch: `v` (`rows`), `dots` (`k + 2`). The arithmetic is the textbook loop's, term for
/// term: for each reflector, `v·v` and `v·column` for every later column and `y` are
/// independent sums, computed in one pass; of the reflected column itself only the
/// diagonal is kept (the rest is never read).
fn householder(
    qr: &mut [f64],
    rows: usize,
    k: usize,
    v: &mut [f64],
    dots: &mut [f64],
    coef: &mut [f64],
) {
    let kr = k.min(rows);
    for col in 0..kr {
        let len = rows - col;
        let norm = qr[col * rows + col..(col + 1) * rows]
            .iter()
            .map(|t| t * t)
            .sum::<f64>()
            .sqrt();
        if norm == 0.0 {
            continue;
        }
        let diag = qr[col * rows + col];
        let alpha = if diag > 0.0 { -norm } else { norm };
        let v = &mut v[..len];
        v.copy_from_slice(&qr[col * rows + col..(col + 1) * rows]);
        v[0] -= alpha;
        let (v, m) = (&*v, &*qr);
        // dots[0] = v·v; dots[1 + c - col] = v·column c for c in col..=k (k is y).
        fold_many(
            k - col + 2,
            v,
            len,
            |c| {
                if c == 0 {
                    v
                } else {
                    &m[(col + c - 1) * rows + col..]
                }
            },
            |vi, t| vi * t,
            dots,
        );
        let vnorm2 = dots[0];
        if vnorm2 == 0.0 {
            continue;
        }
        let f = 2.0 * dots[1] / vnorm2;
        qr[col * rows + col] -= f * v[0];
        for c in col + 1..=k {
            let f = 2.0 * dots[1 + c - col] / vnorm2;
            for (t, vi) in qr[c * rows + col..(c + 1) * rows].iter_mut().zip(v) {
                *t -= f * vi;
            }
        }
    }
    coef.fill(0.0);
    let diag_max = (0..kr).map(|i| qr[i * rows + i].abs()).fold(0.0, f64::max);
    let y = &qr[k * rows..];
    for i in (0..kr).rev() {
        let mii = qr[i * rows + i];
        if mii.abs() <= 1e-12 * diag_max.max(1e-300) {
            continue; // dependent column: leave its coefficient at zero
        }
        let s: f64 = (i + 1..k).map(|j| qr[j * rows + i] * coef[j]).sum();
        coef[i] = (y[i] - s) / mii;
    }
}

/// Least squares `min ||M c - y||` by Householder QR (`m` row-major, rectangular);
/// rank-deficient directions get 0.
#[cfg(test)]
pub(crate) fn lstsq(m: Vec<Vec<f64>>, y: Vec<f64>) -> Vec<f64> {
    let rows = m.len();
    let k = m.first().map_or(0, Vec::len);
    let mut qr = vec![0.0; rows * (k + 1)];
    for (i, row) in m.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            qr[j * rows + i] = v;
        }
    }
    qr[k * rows..].copy_from_slice(&y);
    let mut coef = vec![0.0; k];
    let (mut v, mut dots) = (vec![0.0; rows], vec![0.0; k + 2]);
    householder(&mut qr, rows, k, &mut v, &mut dots, &mut coef);
    coef
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

    fn residual(a: &[Vec<f64>], b: &[f64], x: &[f64]) -> Vec<f64> {
        a.iter()
            .zip(b)
            .map(|(r, bi)| bi - r.iter().zip(x).map(|(v, xj)| v * xj).sum::<f64>())
            .collect()
    }

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

    #[test]
    fn sum_start_is_the_empty_sum() {
        assert_eq!(
            sum_start().to_bits(),
            std::iter::empty::<f64>().sum::<f64>().to_bits()
        );
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
