//! `madu`: forecast-driven provisioning with a fixed capacity per GPU:
//! `workers = ceil(max forecast over the next window / capacity)`. The capacity is a
//! constant samples/s per GPU; by default the lowest per-GPU rate of the offline profile (a
//! conservative constant that holds at every profiled size), or `capacity=` in the spec.
//! No stabilisation; no decision while a rescale is in progress, nor within an optional
//! cooldown after one (`cooldown_min`, `super::Cooldown`, our addition).
//!
//! Backlog headroom (issue #18; our addition, as Kale's, `super::with_drain_headroom`):
//! when the forecast asks for a change, the new level also drains the backlog and the
//! rescale's own outage (`L R` samples) within `drain_min` minutes (default 60). Sized for
//! the load alone, Madu never caught up after a recreate rescale: with a 9-min outage at
//! 110k samples/s and a few percent of rounding headroom each outage's backlog took hours
//! to drain, the next rescale came first, and on Kale's Table 3 setup its lag ran away
//! (43% of minutes over the SLO, 9.9x HPA's lag where the paper's Madu has 0.32x). Kale's
//! paper states no Madu algorithm, only that it over-allocates long into the peaks and does
//! not optimise lag, so Madu's horizon is not the lag SLO (Kale's default) but an hour. The
//! choice moves Table 3's Madu rows a lot (3 seeds, `dlsim reproduce --paper kale --set
//! 'table3:arms.madu=madu[cooldown_min=9,drain_min=N]'`; lag and downtime as multiples of
//! HPA's, paper 0.32x and 1.17x): drain 20 min (the SLO) 0.63x / 0.79x, 30 min 0.42x /
//! 0.87x, 45 min 0.43x / 0.99x, 60 min 0.52x / 1.10x, 70 min 0.58x / 1.16x, 80 min 1.18x /
//! 1.26x, 120 min 1.47x / 1.46x. Both directions agree only from about 55 to 75 min: the
//! hour is the round value inside that range, so this default is fitted to Table 3's
//! directions and says nothing more about Madu than that.

use super::{forecaster, num, Autoscaler, Cooldown, OnlineView};
use crate::{param, PolicyDoc, PolicySpec, SpecError};
use dlsim_engine::SimTime;
use dlsim_model::online::forecast::Forecaster;

pub struct Madu {
    spec: String,
    forecaster: Forecaster,
    capacity: Option<f64>,
    window_min: Option<usize>,
    drain_min: f64,
    cooldown: Cooldown,
}

/// `madu`'s parameters (`dlsim policies`).
pub const DOC: PolicyDoc = PolicyDoc {
    name: "madu",
    summary: "forecast-driven provisioning with a fixed capacity per GPU: ceil(max forecast over a window / capacity)",
    params: &[
        param("forecaster", "oracle|seasonal_naive|holt_winters", "holt_winters", "traffic forecaster (oracle: the true future rate, labelled in outputs)"),
        param("capacity", "number > 0", "-", "samples/s per GPU (default: the lowest per-GPU rate of the offline profile)"),
        param("window_min", "number in [1, 1440]", "-", "forecast window (minutes; default: the time a rescale takes)"),
        param("drain_min", "number in [0, 1440]", "60", "a rescale's new level also drains the backlog and its own outage within this many minutes (0: off)"),
        super::COOLDOWN_PARAM,
    ],
};

/// This policy's registry entry (`crate::autoscale::AUTOSCALERS`): its documentation and its builder.
pub const POLICY: crate::Registered<dyn dlsim_model::policy::Autoscaler> = crate::Registered {
    doc: &DOC,
    build: |spec| Ok(Box::new(Madu::from_spec(spec)?)),
};

impl Madu {
    pub fn from_spec(s: &PolicySpec) -> Result<Self, SpecError> {
        s.only(&DOC.param_names())?;
        let capacity = match s.params.get("capacity") {
            Some(_) => Some(num(s, "capacity", 1.0, 1e-9, 1e15)?),
            None => None,
        };
        let window_min = match s.params.get("window_min") {
            Some(_) => Some(num(s, "window_min", 10.0, 1.0, 1440.0)? as usize),
            None => None,
        };
        Ok(Madu {
            spec: s.canonical(),
            forecaster: Forecaster::new(forecaster(s)?),
            capacity,
            window_min,
            drain_min: num(s, "drain_min", 60.0, 0.0, 1440.0)?,
            cooldown: Cooldown::from_spec(s)?,
        })
    }
}

impl Autoscaler for Madu {
    fn name(&self) -> String {
        self.spec.clone()
    }
    fn interval(&self) -> SimTime {
        SimTime::from_secs(60)
    }
    fn decide(&mut self, view: &OnlineView) -> Option<u32> {
        if self.capacity.is_none() {
            let per_gpu = view
                .profile
                .iter()
                .map(|p| p.sps / f64::from(p.workers))
                .fold(f64::INFINITY, f64::min);
            self.capacity = Some(per_gpu);
        }
        if !self.cooldown.may_act(view) {
            return None;
        }
        let window = self
            .window_min
            .unwrap_or((view.rescale_s / 60.0).ceil() as usize)
            + 1;
        let now = view.now_minute();
        let future = view.oracle_future(now, now + window);
        let fc = self.forecaster.forecast(view.minute_rates, window, future);
        let peak = fc.iter().copied().fold(0.0, f64::max);
        let cap = self.capacity.expect("set above");
        let workers_for = |rate: f64| ((rate / cap).ceil() as u32).clamp(1, view.max_workers);
        let now_rate = fc.first().copied().unwrap_or(0.0);
        Some(super::with_drain_headroom(
            view,
            workers_for(peak),
            now_rate,
            self.drain_min * 60.0,
            |extra| workers_for(peak + extra),
        ))
    }
    fn report(&self) -> serde_json::Value {
        let mut r = serde_json::json!({
            "forecaster": self.forecaster.kind(),
            "drain_min": self.drain_min,
        });
        // The capacity is known from the first decision on (or the spec); a job that ended
        // before any (its pods never came up) has none to report, rather than a null.
        if let Some(c) = self.capacity {
            r["capacity_sps_per_gpu"] = c.into();
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsim_model::online::scenario::TrainMode;

    /// Minute `now_min` of a 300-minute run at a flat 10k samples/s, with or without a
    /// rescale in progress.
    fn view<'a>(now_min: u64, rescaling: bool, rates: &'a [f64]) -> OnlineView<'a> {
        OnlineView {
            now: SimTime::from_secs(now_min * 60),
            target: 3,
            pods: &[],
            minute_rates: &rates[..now_min as usize],
            backlog_samples: 0.0,
            lag_s: 0.0,
            rescaling,
            mode: TrainMode::Sync,
            profile: &[],
            profile_repeats: 1,
            max_workers: 32,
            run_minutes: 300,
            rescale_s: 540.0,
            slo_lag_s: 1_200.0,
            oracle: rates,
        }
    }

    #[test]
    fn a_cooldown_holds_decisions_after_a_rescale_and_none_is_the_default() {
        let rates = vec![10_000.0; 300];
        let spec = |s: &str| PolicySpec::parse(s).unwrap();
        let mut cool = Madu::from_spec(&spec(
            "madu[forecaster=oracle,capacity=2000,cooldown_min=9,drain_min=0]",
        ))
        .unwrap();
        let mut plain =
            Madu::from_spec(&spec("madu[forecaster=oracle,capacity=2000,drain_min=0]")).unwrap();
        for m in [&mut cool, &mut plain] {
            assert_eq!(m.decide(&view(60, false, &rates)), Some(5), "10k / 2k per GPU");
            assert_eq!(m.decide(&view(61, true, &rates)), None, "never during a rescale");
        }
        // The rescale was last seen at minute 61: 9 minutes of cooldown end at minute 70.
        assert_eq!(plain.decide(&view(62, false, &rates)), Some(5));
        assert_eq!(cool.decide(&view(62, false, &rates)), None);
        assert_eq!(cool.decide(&view(69, false, &rates)), None);
        assert_eq!(cool.decide(&view(70, false, &rates)), Some(5));
    }

    #[test]
    fn a_rescale_is_sized_to_drain_its_backlog_and_outage_but_never_reverses() {
        let rates = vec![10_000.0; 300];
        let decide = |spec: &str, target: u32, backlog_samples: f64| {
            let mut m = Madu::from_spec(&PolicySpec::parse(spec).unwrap()).unwrap();
            m.decide(&OnlineView {
                target,
                backlog_samples,
                ..view(60, false, &rates)
            })
        };
        let hour = "madu[forecaster=oracle,capacity=2000]";
        // Load alone: 10k / 2k = 5 workers, up from 3.
        let bare = "madu[forecaster=oracle,capacity=2000,drain_min=0]";
        assert_eq!(decide(bare, 3, 0.0), Some(5));
        // With the default hour: the 9-min outage's 5.4M samples over 3,600 s add
        // 1,500 samples/s, so 11.5k / 2k -> 6 workers.
        assert_eq!(decide(hour, 3, 0.0), Some(6));
        // A backlog of its own is drained as well: + 36M / 3,600 s = 10k/s more -> 11.
        assert_eq!(decide(hour, 3, 3.6e7), Some(11));
        // No change asked for, no headroom: a backlog alone never triggers a rescale.
        assert_eq!(decide(hour, 5, 3.6e7), Some(5));
        // A scale-down (8 -> 5) the headroom would undo is held at the current level,
        // never turned into a scale-up.
        assert_eq!(decide(hour, 8, 3.6e7), Some(8));
    }
}
