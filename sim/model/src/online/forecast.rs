//! Traffic forecasters over the observed per-minute total rate, and their MAPE.
//!
//! * `oracle`: the true future rate (ground truth; labelled `oracle` wherever it is used).
//! * `seasonal_naive`: the value one season (one day) earlier; the last value before a full
//!   season is observed.
//! * `holt_winters`: additive Holt-Winters on `bucket_min`-minute means with a daily season,
//!   initialised from the first full day (the last value before that).
//!
//! Kale uses FEDformer (a Transformer forecaster); it is out of scope here: training a
//! neural forecaster is not part of the simulator, and the forecaster is a pluggable part.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ForecasterKind {
    Oracle,
    SeasonalNaive,
    HoltWinters,
}

impl ForecasterKind {
    pub const ALL: [ForecasterKind; 3] = [
        ForecasterKind::Oracle,
        ForecasterKind::SeasonalNaive,
        ForecasterKind::HoltWinters,
    ];
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "oracle" => Some(ForecasterKind::Oracle),
            "seasonal_naive" => Some(ForecasterKind::SeasonalNaive),
            "holt_winters" => Some(ForecasterKind::HoltWinters),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            ForecasterKind::Oracle => "oracle",
            ForecasterKind::SeasonalNaive => "seasonal_naive",
            ForecasterKind::HoltWinters => "holt_winters",
        }
    }
}

pub const DAY_MIN: usize = 1440;

/// A forecaster of the total rate. `history[i]` is the observed rate of minute `i`; the
/// result holds the forecasts for minutes `history.len() .. history.len() + horizon`.
/// `future` is the true future (used by the oracle only).
pub struct Forecaster {
    kind: ForecasterKind,
    hw: HoltWinters,
}

impl Forecaster {
    pub fn new(kind: ForecasterKind) -> Self {
        Forecaster {
            kind,
            hw: HoltWinters::new(5, 0.3, 0.01, 0.3),
        }
    }

    pub fn kind(&self) -> ForecasterKind {
        self.kind
    }

    pub fn forecast(&mut self, history: &[f64], horizon: usize, future: &[f64]) -> Vec<f64> {
        let last = history.last().copied().unwrap_or(0.0);
        match self.kind {
            ForecasterKind::Oracle => (0..horizon)
                .map(|h| future.get(h).copied().unwrap_or(last))
                .collect(),
            ForecasterKind::SeasonalNaive => {
                let n = history.len();
                (0..horizon)
                    .map(|h| {
                        let t = n + h;
                        if t >= DAY_MIN && t - DAY_MIN < n {
                            history[t - DAY_MIN]
                        } else {
                            last
                        }
                    })
                    .collect()
            }
            ForecasterKind::HoltWinters => {
                self.hw.observe(history);
                self.hw.forecast(history.len(), horizon, last)
            }
        }
    }
}

/// Additive Holt-Winters on bucket means, season = one day of buckets.
struct HoltWinters {
    bucket: usize,
    alpha: f64,
    beta: f64,
    gamma: f64,
    /// Buckets folded into the state so far.
    seen: usize,
    level: f64,
    trend: f64,
    season: Vec<f64>,
    ready: bool,
}

impl HoltWinters {
    fn new(bucket: usize, alpha: f64, beta: f64, gamma: f64) -> Self {
        HoltWinters {
            bucket,
            alpha,
            beta,
            gamma,
            seen: 0,
            level: 0.0,
            trend: 0.0,
            season: Vec::new(),
            ready: false,
        }
    }

    fn period(&self) -> usize {
        DAY_MIN / self.bucket
    }

    fn mean(history: &[f64], b: usize, bucket: usize) -> f64 {
        history[b * bucket..(b + 1) * bucket].iter().sum::<f64>() / bucket as f64
    }

    /// Folds every complete bucket of `history` not seen yet into the state.
    fn observe(&mut self, history: &[f64]) {
        let complete = history.len() / self.bucket;
        let m = self.period();
        if !self.ready {
            if complete < m {
                return;
            }
            let first: Vec<f64> = (0..m)
                .map(|b| Self::mean(history, b, self.bucket))
                .collect();
            self.level = first.iter().sum::<f64>() / m as f64;
            self.season = first.iter().map(|v| v - self.level).collect();
            self.seen = m;
            self.ready = true;
        }
        while self.seen < complete {
            let y = Self::mean(history, self.seen, self.bucket);
            let s = self.season[self.seen % m];
            let prev = self.level;
            self.level = self.alpha * (y - s) + (1.0 - self.alpha) * (prev + self.trend);
            self.trend = self.beta * (self.level - prev) + (1.0 - self.beta) * self.trend;
            self.season[self.seen % m] = self.gamma * (y - self.level) + (1.0 - self.gamma) * s;
            self.seen += 1;
        }
    }

    fn forecast(&self, n_minutes: usize, horizon: usize, last: f64) -> Vec<f64> {
        if !self.ready {
            return vec![last; horizon];
        }
        let m = self.period();
        (0..horizon)
            .map(|h| {
                let b = (n_minutes + h) / self.bucket;
                // Steps ahead of the last folded bucket (at least one).
                let k = (b + 1).saturating_sub(self.seen).max(1) as f64;
                (self.level + k * self.trend + self.season[b % m]).max(0.0)
            })
            .collect()
    }
}

/// MAPE (%) of each forecaster predicting `lead` minutes ahead, scored every `every`
/// minutes from minute `from` on and after the first day. `observed` is the per-minute rate
/// the job saw (history, then the run, which starts at `from`).
pub fn evaluate(
    observed: &[f64],
    from: usize,
    lead: usize,
    every: usize,
) -> Vec<(ForecasterKind, f64)> {
    ForecasterKind::ALL
        .iter()
        .map(|&k| {
            let mut f = Forecaster::new(k);
            let (mut actual, mut pred) = (Vec::new(), Vec::new());
            let mut t = DAY_MIN.max(from);
            while t + lead < observed.len() {
                let fc = f.forecast(&observed[..t], lead + 1, &observed[t..]);
                actual.push(observed[t + lead]);
                pred.push(fc[lead]);
                t += every.max(1);
            }
            let mape = if actual.is_empty() {
                f64::NAN
            } else {
                dlsim_fit::metrics::mape_pct(&actual, &pred)
            };
            (k, mape)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn daily(minutes: usize) -> Vec<f64> {
        (0..minutes)
            .map(|m| {
                let h = (m % DAY_MIN) as f64 / 60.0;
                100.0 + 50.0 * (2.0 * std::f64::consts::PI * h / 24.0).sin()
            })
            .collect()
    }

    #[test]
    fn seasonal_forecasters_learn_a_clean_daily_cycle() {
        let obs = daily(3 * DAY_MIN);
        let scores = evaluate(&obs, 0, 10, 30);
        for (k, mape) in scores {
            match k {
                ForecasterKind::Oracle | ForecasterKind::SeasonalNaive => {
                    assert!(mape < 1e-9, "{k:?} {mape}")
                }
                ForecasterKind::HoltWinters => assert!(mape < 3.0, "{mape}"),
            }
        }
    }

    #[test]
    fn before_a_full_season_the_forecast_is_the_last_value() {
        let obs = daily(100);
        let mut f = Forecaster::new(ForecasterKind::HoltWinters);
        assert_eq!(f.forecast(&obs, 3, &[]), vec![obs[99]; 3]);
        let mut s = Forecaster::new(ForecasterKind::SeasonalNaive);
        assert_eq!(s.forecast(&obs, 2, &[]), vec![obs[99]; 2]);
    }
}
