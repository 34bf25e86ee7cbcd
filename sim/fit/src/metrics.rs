//! Error metrics between observed (`actual`) and predicted values, used to report fit quality.
//!
//! All functions take equal-length slices and return `NaN` for empty input, so a report shows
//! "no data" rather than a misleading zero.

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
