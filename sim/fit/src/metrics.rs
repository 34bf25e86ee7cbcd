//! Error metrics between observed (`actual`) and predicted values, used to report fit quality.
//!
//! All functions take equal-length slices and return `NaN` for empty input, so a report shows
//! "no data" rather than a misleading zero. [`t975`] and [`mean_ci95`] give the Student t
//! intervals over seeds that sweeps and `dlsim reproduce` report.

fn pairs<'a>(actual: &'a [f64], pred: &'a [f64]) -> impl Iterator<Item = (f64, f64)> + 'a {
    assert_eq!(actual.len(), pred.len(), "metric inputs differ in length");
    actual.iter().copied().zip(pred.iter().copied())
}

fn mean(it: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = it.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        s / n as f64
    }
}

/// Mean absolute percentage error, in percent: `100 * mean(|pred - actual| / |actual|)`.
pub fn mape_pct(actual: &[f64], pred: &[f64]) -> f64 {
    100.0 * mean(pairs(actual, pred).map(|(a, p)| (p - a).abs() / a.abs()))
}

/// Mean absolute error, in the data's unit.
pub fn mae(actual: &[f64], pred: &[f64]) -> f64 {
    mean(pairs(actual, pred).map(|(a, p)| (p - a).abs()))
}

/// Root mean squared error, in the data's unit.
pub fn rmse(actual: &[f64], pred: &[f64]) -> f64 {
    mean(pairs(actual, pred).map(|(a, p)| (p - a) * (p - a))).sqrt()
}

/// Root mean squared logarithmic error: `sqrt(mean((ln(1+pred) - ln(1+actual))^2))`.
/// Negative predictions are clamped to 0 so the log is defined.
pub fn rmsle(actual: &[f64], pred: &[f64]) -> f64 {
    mean(pairs(actual, pred).map(|(a, p)| {
        let d = p.max(0.0).ln_1p() - a.max(0.0).ln_1p();
        d * d
    }))
    .sqrt()
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom (`NaN` for 0).
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => T[df - 1],
        // Cornish-Fisher first term: within 0.003 of the exact value above 30.
        _ => 1.959_964 + 2.372 / df as f64,
    }
}

/// The mean of `xs` and the half-width of its 95% Student t interval (`NaN` with fewer
/// than two values; `(NaN, NaN)` for none).
pub fn mean_ci95(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, f64::NAN);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, t975(n - 1) * (var / n as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let a = [100.0, 200.0];
        let p = [110.0, 180.0];
        assert!((mape_pct(&a, &p) - 10.0).abs() < 1e-12);
        assert!((mae(&a, &p) - 15.0).abs() < 1e-12);
        assert!((rmse(&a, &p) - (250.0f64).sqrt()).abs() < 1e-12);
        assert_eq!(rmsle(&a, &a), 0.0);
        assert!(mape_pct(&[], &[]).is_nan());
    }
}
