//! The stream's arrival rates: a per-minute total rate (the hidden truth) and the uneven
//! shares of the Kafka partitions.
//!
//! The total is a daily cycle mapped onto `[peak / peak_to_trough, peak]`, either the built-in
//! shape (a cosine with its trough at `trough_hour`, a weekend factor) or an imported rate
//! series (`rates.rs`) repeated every `period_s`; then AR(1) lognormal noise per minute and
//! short multiplicative bursts (both from the `traffic` stream). Rates are constant within a
//! minute. `history_days` whole days before the run are drawn the same way, first, as the
//! ingress history the operator's forecasters start from. Partition shares are lognormal
//! (stream `partitions`), normalised, and fixed for the run: Kale Fig. 2b's spatial
//! unevenness, without drift between partitions.

use crate::online::rates::{min_max, RateSeries};
use crate::online::scenario::TrafficSpec;
use dlsim_engine::RngStreams;
use rand::Rng;
use rand_distr::{Distribution, Normal};

/// The hidden per-minute total rate and the partitions' shares.
#[derive(Clone, Debug)]
pub struct Traffic {
    /// Samples/s during minute `i`, for the run plus one day of look-ahead (oracle forecasts).
    pub minute_sps: Vec<f64>,
    /// Samples/s of each minute of the `history_days` before the run, oldest first.
    pub history: Vec<f64>,
    /// Share of the total each partition receives (sums to 1).
    pub shares: Vec<f64>,
}

impl Traffic {
    pub fn build(
        spec: &TrafficSpec,
        shape: Option<&RateSeries>,
        minutes: usize,
        streams: &RngStreams,
    ) -> Self {
        // Minutes from the start of the history (before the run: negative) to a day past it.
        let before = i64::from(spec.history_days) * 1440;
        let span = -before..(minutes + 1440) as i64;
        let trough = spec.peak_sps / spec.peak_to_trough;
        let base: Vec<f64> = match shape {
            None => span.map(|m| diurnal(spec, m)).collect(),
            Some(s) => {
                let (lo, hi) = min_max(&s.rate);
                span.map(|m| {
                    let t = (m as f64 * 60.0).rem_euclid(spec.period_s);
                    if hi > lo {
                        (s.at(t) - lo) / (hi - lo)
                    } else {
                        1.0
                    }
                })
                .collect()
            }
        };
        let mut rng = streams.stream("traffic");
        let noise = Normal::new(0.0, spec.noise_sigma).expect("valid sigma");
        let mut ar = 0.0f64;
        let phi: f64 = 0.9;
        let mut minute_sps: Vec<f64> = base
            .iter()
            .map(|s| {
                ar = phi * ar + (1.0 - phi * phi).sqrt() * noise.sample(&mut rng);
                (trough + (spec.peak_sps - trough) * s) * ar.exp()
            })
            .collect();
        add_bursts(spec, &mut minute_sps, streams);
        let history: Vec<f64> = minute_sps.drain(..before as usize).collect();
        let mut prng = streams.stream("partitions");
        let skew = Normal::new(0.0, spec.partition_skew_sigma).expect("valid sigma");
        let raw: Vec<f64> = (0..spec.partitions)
            .map(|_| skew.sample(&mut prng).exp())
            .collect();
        let sum: f64 = raw.iter().sum();
        Traffic {
            minute_sps,
            history,
            shares: raw.iter().map(|r| r / sum).collect(),
        }
    }

    /// The true total rate during minute `m`.
    pub fn total(&self, m: usize) -> f64 {
        self.minute_sps[m.min(self.minute_sps.len() - 1)]
    }
}

/// The built-in daily shape in [0, 1] times the weekend factor: `(1 - cos)/2` with its
/// trough at `trough_hour`; `minute` counts from the run's start (negative: history), which
/// is midnight of day 0 (a Monday).
fn diurnal(spec: &TrafficSpec, minute: i64) -> f64 {
    let hour = (minute as f64 / 60.0).rem_euclid(24.0);
    let day = minute.div_euclid(1440).rem_euclid(7);
    let phase = 2.0 * std::f64::consts::PI * (hour - spec.trough_hour) / 24.0;
    let s = 0.5 * (1.0 - phase.cos());
    let weekend = if day % 7 >= 5 {
        spec.weekend_factor
    } else {
        1.0
    };
    s * weekend
}

/// Short bursts: a Poisson number per day, each a uniform length and gain.
fn add_bursts(spec: &TrafficSpec, sps: &mut [f64], streams: &RngStreams) {
    if spec.bursts_per_day <= 0.0 {
        return;
    }
    let mut rng = streams.stream("bursts");
    let per_minute = spec.bursts_per_day / 1440.0;
    let mut m = 0.0f64;
    loop {
        // Exponential gaps between burst starts.
        let u: f64 = rng.gen_range(f64::EPSILON..1.0);
        m += -u.ln() / per_minute;
        if m as usize >= sps.len() {
            break;
        }
        let len = rng
            .gen_range(spec.burst_minutes[0]..=spec.burst_minutes[1])
            .round() as usize;
        let gain = rng.gen_range(spec.burst_gain[0]..=spec.burst_gain[1]);
        let start = m as usize;
        for v in sps.iter_mut().skip(start).take(len.max(1)) {
            *v *= 1.0 + gain;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daily_cycle_spans_peak_to_trough() {
        let spec = TrafficSpec {
            noise_sigma: 0.0,
            bursts_per_day: 0.0,
            weekend_factor: 1.0,
            ..TrafficSpec::default()
        };
        let t = Traffic::build(&spec, None, 1440, &RngStreams::new(1));
        let (lo, hi) = min_max(&t.minute_sps[..1440]);
        assert!((hi / lo - 7.65).abs() < 0.01, "{}", hi / lo);
        assert!((t.shares.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(t.minute_sps.len(), 2880);
    }

    #[test]
    fn same_seed_same_traffic() {
        let spec = TrafficSpec::default();
        let a = Traffic::build(&spec, None, 600, &RngStreams::new(5));
        let b = Traffic::build(&spec, None, 600, &RngStreams::new(5));
        let c = Traffic::build(&spec, None, 600, &RngStreams::new(6));
        assert_eq!(a.minute_sps, b.minute_sps);
        assert_ne!(a.minute_sps, c.minute_sps);
    }

    /// The history is whole days of the same model before the run: each history day has its
    /// trough and peak at the run's hours, the weekend falls on the days before Monday, and
    /// a forecaster fed the history predicts the run's first hours better than one without.
    #[test]
    fn history_days_precede_the_run_with_the_same_daily_cycle() {
        let quiet = TrafficSpec {
            noise_sigma: 0.0,
            bursts_per_day: 0.0,
            history_days: 3,
            ..TrafficSpec::default()
        };
        let t = Traffic::build(&quiet, None, 600, &RngStreams::new(1));
        assert_eq!(t.history.len(), 3 * 1440);
        assert_eq!(t.minute_sps.len(), 600 + 1440);
        let trough = quiet.peak_sps / quiet.peak_to_trough;
        // Days -2 and -1 are Saturday and Sunday (weekend factor), day -3 a Friday.
        let at = |day: usize, hour: f64| t.history[day * 1440 + (hour * 60.0) as usize];
        assert!(
            (at(0, 16.0) - quiet.peak_sps).abs() < 1.0,
            "{}",
            at(0, 16.0)
        );
        assert!((at(2, 4.0) - trough).abs() < 1.0, "{}", at(2, 4.0));
        let weekend_peak = trough + (quiet.peak_sps - trough) * quiet.weekend_factor;
        assert!((at(2, 16.0) - weekend_peak).abs() < 1.0, "{}", at(2, 16.0));
        // Without history the run's own traffic is what it always was.
        let none = TrafficSpec {
            history_days: 0,
            ..quiet.clone()
        };
        let u = Traffic::build(&none, None, 600, &RngStreams::new(1));
        assert!(u.history.is_empty());
        assert_eq!(
            t.minute_sps, u.minute_sps,
            "noise-free: history does not shift the run"
        );

        // With noise, a Holt-Winters forecast at minute 0 from the history tracks the rise
        // of the first hours; without history it can only repeat the last rate.
        use crate::online::forecast::{Forecaster, ForecasterKind};
        let noisy = TrafficSpec {
            history_days: 3,
            ..TrafficSpec::default()
        };
        let n = Traffic::build(&noisy, None, 600, &RngStreams::new(2));
        let horizon = 480;
        let err = |fc: &[f64]| {
            fc.iter()
                .zip(&n.minute_sps)
                .map(|(f, a)| (f - a).abs() / a)
                .sum::<f64>()
                / fc.len() as f64
        };
        let with =
            err(&Forecaster::new(ForecasterKind::HoltWinters).forecast(&n.history, horizon, &[]));
        let without =
            err(&Forecaster::new(ForecasterKind::HoltWinters).forecast(&[], horizon, &[]));
        assert!(
            with < 0.15 && without > 0.5,
            "MAPE with history {with}, without {without}"
        );
    }
}
